//! [`SqliteTaskStore`]: tasks, their history and artifacts, and their leases in one SQLite
//! file that outlives the process (feature `sqlite`).
//!
//! rusqlite with SQLite compiled in (`bundled`: no system library, one C file that builds in
//! well under a minute on two cores) rather than sqlx: sqlx brings its macros, its own
//! runtime layer and a driver per database, several times the compile time for one embedded
//! file. rusqlite is synchronous, so the connection lives on a thread of its own
//! ([`worker`]) and the runtime's workers never wait on the disk: a call sends its work
//! there and awaits the answer.
//!
//! That thread commits the calls that queued while it was busy in one transaction (each
//! call in a savepoint of its own), then answers them: a commit's cost is shared by the
//! calls of a batch, and no call is answered before its writes are committed.
//!
//! The file is opened in WAL mode with `synchronous = NORMAL`: a write is in the file once
//! its call returns, so a process killed at any point (even with SIGKILL) loses nothing it
//! was told was stored; only a crash of the machine itself may lose the last writes.
//!
//! Finished tasks and old logs are evicted, and the tasks counted, in passes (see
//! [`Passes`]) rather than in every write: a count or an eviction scan is as long as the
//! table.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rusqlite::{params, Connection, OptionalExtension};

use super::events::may_read;
use super::memory::{Cursor, Page};
use super::sql::{self, micros};
use super::sql_passes::Passes;
use super::{
    lapse, leasable, EventLog, EventLogLimits, Lease, LoggedEvent, PushConfigStore, StoreError,
    StoreFuture, StoreLimits, TaskStore,
};
use crate::push::TaskPushNotificationConfig;
use crate::timestamp::parse_micros;
use crate::types::{ListTasksRequest, ListTasksResponse, StreamResponse, Task, TaskState};

/// Why a SQLite store could not be opened or used: the database's error, or a row whose
/// JSON does not decode.
#[derive(Debug, thiserror::Error)]
pub enum SqliteError {
    /// SQLite said no.
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A stored task's JSON does not decode (or a task does not encode).
    #[error("a stored task does not decode: {0}")]
    Json(#[from] serde_json::Error),
    /// The file was written by a newer version of this crate (its schema version).
    #[error("the database's schema version {0} is newer than this crate's")]
    NewerSchema(i64),
    /// The store's connection thread panicked in the call, or could not be started.
    #[error("the store's connection thread did not finish the call")]
    Join,
}

impl From<SqliteError> for StoreError {
    fn from(e: SqliteError) -> Self {
        StoreError::Backend(Arc::new(e))
    }
}

/// The migrations, in order: `PRAGMA user_version` says how many ran.
const MIGRATIONS: &[&str] = &[
    // 1: tasks, with their history and artifacts as JSON, ordered by their status time and
    // insertion; finished ones stamped for eviction; leases of working ones.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY NOT NULL,
        seq INTEGER NOT NULL UNIQUE,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_at INTEGER NOT NULL,
        owner TEXT,
        task TEXT NOT NULL,
        history TEXT NOT NULL,
        artifacts TEXT NOT NULL,
        finished_at INTEGER,
        lease_holder TEXT,
        lease_until INTEGER
    );
    CREATE INDEX tasks_listing ON tasks (status_at DESC, seq DESC);
    CREATE INDEX tasks_finished ON tasks (finished_at, seq) WHERE finished_at IS NOT NULL;
    CREATE INDEX tasks_leased ON tasks (lease_until) WHERE lease_until IS NOT NULL;",
    // 2: the event logs of tasks' streams: one row per log (its owner, the id of its first
    // kept event and of its next), one per event kept.
    "CREATE TABLE event_logs (
        task_id TEXT PRIMARY KEY NOT NULL,
        created INTEGER NOT NULL UNIQUE,
        owner TEXT,
        first_id INTEGER NOT NULL,
        next_id INTEGER NOT NULL
    );
    CREATE TABLE events (
        task_id TEXT NOT NULL,
        id INTEGER NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (task_id, id)
    ) WITHOUT ROWID;",
    // 3: push notification configs, each task's list as JSON; gone with their task.
    "CREATE TABLE push_configs (
        task_id TEXT PRIMARY KEY NOT NULL,
        configs TEXT NOT NULL
    ) WITHOUT ROWID;",
];

/// Tasks in a SQLite file, bounded by [`StoreLimits`] as [`MemoryTaskStore`] is (finished
/// tasks evicted past a count or an age, new tasks refused when full).
///
/// The tasks are counted and old ones evicted in passes after every
/// [`evict_every`](Self::evict_every) (E, 64 unless set) writes that create or finish a
/// task, and after any such write once the last pass is 1 s old, as the PostgreSQL store
/// does: a new task is refused when full, exactly (near the bound every insert counts);
/// finished tasks go over `max_finished`, and logs over their number, by fewer than E
/// between passes (none when the bound is at most 4 E). Another process writing the same
/// file is not counted until the next pass.
///
/// [`MemoryTaskStore`]: super::MemoryTaskStore
pub struct SqliteTaskStore {
    /// The calls for the connection's thread ([`worker`]).
    jobs: std::sync::mpsc::Sender<Job>,
    limits: StoreLimits,
    event_limits: EventLogLimits,
    /// When the store counts and evicts (shared with the connection's thread).
    passes: Arc<Passes>,
}

/// A call's work on the connection, run inside the batch's transaction; what it gives back
/// delivers its outcome once the batch is committed (or the commit's error).
type Job = Box<dyn FnOnce(&mut Connection) -> Deliver + Send>;
/// Delivers a call's outcome: the batch's commit, then the call's own result.
type Deliver = Box<dyn FnOnce(Result<(), StoreError>) + Send>;

/// The most calls committed in one transaction.
const MAX_BATCH: usize = 64;

/// The connection's own thread: takes the calls waiting, runs them in one transaction (each
/// in a savepoint of its own where it writes, so that a call that fails undoes only its own
/// writes), commits, then answers them. One commit for the calls that queued while the
/// previous batch ran: under load, a commit's cost (its WAL frames, its locks) is shared by
/// many calls, and a call is answered only once its writes are committed, as before.
fn worker(mut conn: Connection, jobs: std::sync::mpsc::Receiver<Job>) {
    while let Ok(first) = jobs.recv() {
        let begun = conn.execute_batch("BEGIN").map_err(SqliteError::from);
        let mut delivers = Vec::new();
        let mut batch = 0;
        let mut next = Some(first);
        while let Some(job) = next.take() {
            // A call that panics is answered with `Join` (its answer is dropped); the batch
            // and the thread go on.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(&mut conn)));
            if let Ok(deliver) = ran {
                delivers.push(deliver);
            }
            // A statement that failed badly may have rolled the batch back: commit what ran.
            batch += 1;
            if batch < MAX_BATCH && !conn.is_autocommit() {
                next = jobs.try_recv().ok();
            }
        }
        let committed = match begun {
            Ok(()) if !conn.is_autocommit() => conn.execute_batch("COMMIT"),
            Ok(()) => Err(rusqlite::Error::ExecuteReturnedResults),
            Err(e) => Err(match e {
                SqliteError::Sqlite(e) => e,
                _ => rusqlite::Error::ExecuteReturnedResults,
            }),
        };
        let committed = committed.map_err(|e| {
            let _ = conn.execute_batch("ROLLBACK");
            StoreError::from(SqliteError::from(e))
        });
        for deliver in delivers {
            deliver(committed.clone());
        }
    }
}

impl std::fmt::Debug for SqliteTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTaskStore")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl SqliteTaskStore {
    /// Opens (or creates) the store in file `path` and runs the migrations it has not had.
    /// Blocking: call it before serving, or on a blocking thread.
    pub fn open(path: impl AsRef<Path>, limits: StoreLimits) -> Result<Self, SqliteError> {
        Self::with_connection(Connection::open(path)?, limits)
    }

    /// A store in memory (for tests: gone with the value).
    pub fn open_in_memory(limits: StoreLimits) -> Result<Self, SqliteError> {
        Self::with_connection(Connection::open_in_memory()?, limits)
    }

    fn with_connection(mut conn: Connection, limits: StoreLimits) -> Result<Self, SqliteError> {
        // WAL: readers do not wait for the writer, and a write is durable against a killed
        // process once its transaction commits. Another process on the file waits its turn.
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.busy_timeout(Duration::from_secs(5))?;
        migrate(&mut conn)?;
        let tasks: i64 = conn.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))?;
        let (jobs, queue) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("rpcwire-a2a-sqlite".into())
            .spawn(move || worker(conn, queue))
            .map_err(|_| SqliteError::Join)?;
        Ok(SqliteTaskStore {
            jobs,
            limits,
            event_limits: EventLogLimits::default(),
            passes: Arc::new(Passes::new(
                DEFAULT_EVICT_EVERY,
                DEFAULT_EVICT_INTERVAL,
                usize::try_from(tasks).unwrap_or(0),
            )),
        })
    }

    /// The bounds of its event logs ([`EventLogLimits::default`] unless set).
    pub fn event_limits(mut self, limits: EventLogLimits) -> Self {
        self.event_limits = limits;
        self
    }

    /// How many of its writes that create or finish a task (or create a log) it makes
    /// between two passes that count and evict (64 unless set; 1: every such write), and the
    /// longest between two passes while such writes are made (1 s unless set). Finished
    /// tasks and logs go over their bounds by fewer than `every` between passes; the tasks
    /// never go over `max_tasks` (a store alone on its file).
    pub fn evict_every(mut self, every: usize, interval: Duration) -> Self {
        self.passes = Arc::new(self.passes.reconfigured(every, interval));
        self
    }

    /// Runs `work` on the connection's thread, in the next batch; its result once committed.
    fn call<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&mut Connection, &Ctx) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        let ctx = Ctx {
            limits: self.limits,
            event_limits: self.event_limits,
            passes: Arc::clone(&self.passes),
        };
        let (answer, answered) = tokio::sync::oneshot::channel();
        let job: Job = Box::new(move |conn| {
            let result = work(conn, &ctx);
            Box::new(move |committed: Result<(), StoreError>| {
                let _ = answer.send(committed.and(result));
            })
        });
        let sent = self.jobs.send(job).is_ok();
        Box::pin(async move {
            if !sent {
                return Err(SqliteError::Join.into());
            }
            answered
                .await
                .map_err(|_| StoreError::from(SqliteError::Join))?
        })
    }

    /// [`call`](Self::call) for work that fails with a [`SqliteError`].
    fn run<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&mut Connection, &Ctx) -> Result<T, SqliteError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        self.call(move |conn, ctx| work(conn, ctx).map_err(StoreError::from))
    }
}

/// What a call's work needs of its store.
struct Ctx {
    limits: StoreLimits,
    event_limits: EventLogLimits,
    passes: Arc<Passes>,
}

/// [`SqliteTaskStore::evict_every`]'s defaults.
const DEFAULT_EVICT_EVERY: usize = 64;
const DEFAULT_EVICT_INTERVAL: Duration = Duration::from_secs(1);

fn append(
    conn: &mut Connection,
    limits: EventLogLimits,
    passes: &Passes,
    task_id: &str,
    owner: Option<&str>,
    event: &StreamResponse,
) -> Result<u64, StoreError> {
    let body = serde_json::to_string(event).map_err(SqliteError::from)?;
    let tx = conn.savepoint().map_err(SqliteError::from)?;
    let log: Option<(Option<String>, i64)> = tx
        .query_row(
            "SELECT owner, next_id FROM event_logs WHERE task_id = ?1",
            params![task_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(SqliteError::from)?;
    let id = match log {
        Some((held, _)) if held.as_deref() != owner => return Err(StoreError::NotOwner),
        Some((_, next)) => next,
        None => {
            tx.execute(
                "INSERT INTO event_logs (task_id, created, owner, first_id, next_id)
                 VALUES (?1, (SELECT COALESCE(MAX(created), 0) + 1 FROM event_logs), ?2, 1, 1)",
                params![task_id, owner],
            )
            .map_err(SqliteError::from)?;
            if passes.log_created(limits.max_tasks) {
                // The oldest logs past their number go (see [`Passes`]).
                let keep = i64::try_from(limits.max_tasks.max(1)).unwrap_or(i64::MAX);
                for table in ["events", "event_logs"] {
                    tx.execute(
                        &format!(
                            "DELETE FROM {table} WHERE task_id IN (SELECT task_id FROM event_logs
                                ORDER BY created DESC LIMIT -1 OFFSET ?1)"
                        ),
                        params![keep],
                    )
                    .map_err(SqliteError::from)?;
                }
            }
            1
        }
    };
    tx.execute(
        "INSERT INTO events (task_id, id, event) VALUES (?1, ?2, ?3)",
        params![task_id, id, body],
    )
    .map_err(SqliteError::from)?;
    // Past the bound, the oldest go: the first kept is `max_events` before the next.
    let first = (id + 1 - i64::try_from(limits.max_events.max(1)).unwrap_or(i64::MAX)).max(1);
    tx.execute(
        "DELETE FROM events WHERE task_id = ?1 AND id < ?2",
        params![task_id, first],
    )
    .map_err(SqliteError::from)?;
    tx.execute(
        "UPDATE event_logs SET next_id = ?2, first_id = MAX(first_id, ?3) WHERE task_id = ?1",
        params![task_id, id + 1, first],
    )
    .map_err(SqliteError::from)?;
    tx.commit().map_err(SqliteError::from)?;
    Ok(u64::try_from(id).unwrap_or(0))
}

fn read_after(
    conn: &Connection,
    task_id: &str,
    caller: Option<&str>,
    after: u64,
    max: usize,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let log: Option<(Option<String>, i64)> = conn
        .query_row(
            "SELECT owner, first_id FROM event_logs WHERE task_id = ?1",
            params![task_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(SqliteError::from)?;
    let first = match log {
        Some((owner, first)) if may_read(owner.as_deref(), caller) => first,
        _ => return Err(StoreError::NotFound),
    };
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    if after.saturating_add(1) < first {
        return Err(StoreError::Trimmed);
    }
    let mut stmt = conn
        .prepare("SELECT id, event FROM events WHERE task_id = ?1 AND id > ?2 ORDER BY id LIMIT ?3")
        .map_err(SqliteError::from)?;
    let rows = stmt
        .query_map(
            params![task_id, after, i64::try_from(max).unwrap_or(i64::MAX)],
            |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)),
        )
        .map_err(SqliteError::from)?;
    let mut events = Vec::new();
    for row in rows {
        let (id, body) = row.map_err(SqliteError::from)?;
        events.push(LoggedEvent {
            id: u64::try_from(id).unwrap_or(0),
            event: Arc::new(serde_json::from_str(&body).map_err(SqliteError::from)?),
        });
    }
    Ok(events)
}

/// Runs the migrations the file has not had, in one transaction.
fn migrate(conn: &mut Connection) -> Result<(), SqliteError> {
    let tx = conn.transaction()?;
    let version: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(SqliteError::NewerSchema(version));
    }
    for migration in MIGRATIONS
        .iter()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        tx.execute_batch(migration)?;
    }
    tx.pragma_update(None, "user_version", known)?;
    tx.commit()?;
    Ok(())
}

/// The state's wire name, as the `state` column holds it.
fn state_name(state: TaskState) -> Result<String, SqliteError> {
    Ok(sql::state_name(state)?)
}

/// The columns of one task row, read back into the task.
fn decode(
    task: &str,
    history: &str,
    artifacts: &str,
    owner: Option<String>,
) -> Result<Task, SqliteError> {
    Ok(sql::decode(task, history, artifacts, owner)?)
}

const SELECT: &str = "SELECT task, history, artifacts, owner FROM tasks";

fn row_task(row: &rusqlite::Row<'_>) -> rusqlite::Result<(String, String, String, Option<String>)> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?))
}

/// Drops finished tasks past the age and count limits, oldest first, with their push configs.
fn evict(conn: &Connection, limits: StoreLimits, now: i64) -> Result<(), SqliteError> {
    let ttl = i64::try_from(limits.finished_ttl.as_micros()).unwrap_or(i64::MAX);
    let old = "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < ?1";
    let over = "SELECT id FROM tasks WHERE finished_at IS NOT NULL
        ORDER BY finished_at DESC, seq DESC LIMIT -1 OFFSET ?1";
    let aged = params![now.saturating_sub(ttl)];
    let count = params![i64::try_from(limits.max_finished).unwrap_or(i64::MAX)];
    conn.execute(
        &format!("DELETE FROM push_configs WHERE task_id IN ({old})"),
        aged,
    )?;
    conn.execute(&format!("DELETE FROM tasks WHERE id IN ({old})"), aged)?;
    conn.execute(
        &format!("DELETE FROM push_configs WHERE task_id IN ({over})"),
        count,
    )?;
    conn.execute(&format!("DELETE FROM tasks WHERE id IN ({over})"), count)?;
    Ok(())
}

/// Writes `task` (with `lease`), counting only near `max_tasks` (see [`Passes`]), then a
/// pass when one is due.
fn put(
    conn: &mut Connection,
    ctx: &Ctx,
    task: Task,
    lease: Option<Lease>,
) -> Result<(), StoreError> {
    let limits = ctx.limits;
    let finishes = task.status.state.is_terminal();
    let tx = conn.savepoint().map_err(SqliteError::from)?;
    let reserved = ctx.passes.reserve(limits.max_tasks);
    let counting = reserved.is_none();
    let written = write(&tx, limits, counting, task, lease);
    if let Ok((_, Some(held))) = written {
        ctx.passes.counted(held);
    }
    let created = written.as_ref().is_ok_and(|w| w.0);
    let due = ctx.passes.put_done(
        reserved,
        created,
        finishes && written.is_ok(),
        limits.max_finished,
    );
    written?;
    if due {
        let covered = ctx.passes.pass_starts();
        let counted = evict(&tx, limits, micros(SystemTime::now())).and_then(|()| {
            tx.query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get::<_, i64>(0))
                .map_err(SqliteError::from)
        });
        match counted {
            Ok(n) => ctx.passes.passed(covered, usize::try_from(n).unwrap_or(0)),
            Err(e) => {
                ctx.passes.pass_failed(covered);
                return Err(e.into());
            }
        }
    }
    tx.commit().map_err(SqliteError::from)?;
    Ok(())
}

/// The write of [`put`]: whether it created the task, and (`counting`) the tasks held after
/// it.
fn write(
    tx: &Connection,
    limits: StoreLimits,
    counting: bool,
    mut task: Task,
    lease: Option<Lease>,
) -> Result<(bool, Option<usize>), StoreError> {
    let now = micros(SystemTime::now());
    let state = task.status.state;
    let sql::Columns {
        body,
        history,
        artifacts,
        state: name,
        status_at,
    } = sql::encode(&mut task).map_err(SqliteError::from)?;
    let finished = state.is_terminal().then_some(now);
    let keeps_lease = leasable(state);
    let lease = lease.filter(|_| keeps_lease);
    let held: Option<Option<i64>> = tx
        .prepare_cached("SELECT finished_at FROM tasks WHERE id = ?1")
        .and_then(|mut s| s.query_row(params![task.id], |r| r.get(0)))
        .optional()
        .map_err(SqliteError::from)?;
    match held {
        Some(finished_at) => {
            // The first finish time stays: a task finishing twice is evicted by the first.
            let finished_at = finished_at.or(finished);
            let (holder, until) = match (&lease, keeps_lease) {
                (Some(l), _) => (Some(l.holder.clone()), Some(micros(l.until))),
                (None, true) => tx
                    .query_row(
                        "SELECT lease_holder, lease_until FROM tasks WHERE id = ?1",
                        params![task.id],
                        |r| Ok((r.get(0)?, r.get(1)?)),
                    )
                    .map_err(SqliteError::from)?,
                (None, false) => (None, None),
            };
            tx.prepare_cached(
                "UPDATE tasks SET context_id = ?2, state = ?3, status_at = ?4, owner = ?5,
                    task = ?6, history = ?7, artifacts = ?8, finished_at = ?9,
                    lease_holder = ?10, lease_until = ?11
                 WHERE id = ?1",
            )
            .and_then(|mut s| {
                s.execute(params![
                    task.id,
                    task.context_id,
                    name,
                    status_at,
                    task.owner,
                    body,
                    history,
                    artifacts,
                    finished_at,
                    holder,
                    until
                ])
            })
            .map_err(SqliteError::from)?;
            Ok((false, None))
        }
        None => {
            let mut count = None;
            if counting {
                evict(tx, limits, now)?;
                let n: i64 = tx
                    .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
                    .map_err(SqliteError::from)?;
                count = Some(usize::try_from(n).unwrap_or(usize::MAX));
            }
            if count.is_some_and(|n| n >= limits.max_tasks) {
                // Room from the oldest finished task, or refused.
                let oldest = "SELECT id FROM tasks WHERE finished_at IS NOT NULL
                    ORDER BY finished_at, seq LIMIT 1";
                tx.execute(
                    &format!("DELETE FROM push_configs WHERE task_id IN ({oldest})"),
                    [],
                )
                .map_err(SqliteError::from)?;
                let freed = tx
                    .execute(&format!("DELETE FROM tasks WHERE id IN ({oldest})"), [])
                    .map_err(SqliteError::from)?;
                if freed == 0 {
                    return Err(StoreError::Full);
                }
                count = count.map(|n| n - freed);
            }
            tx.prepare_cached(
                "INSERT INTO tasks (id, seq, context_id, state, status_at, owner, task, history,
                    artifacts, finished_at, lease_holder, lease_until)
                 VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks), ?2, ?3, ?4, ?5, ?6,
                    ?7, ?8, ?9, ?10, ?11)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    task.id,
                    task.context_id,
                    name,
                    status_at,
                    task.owner,
                    body,
                    history,
                    artifacts,
                    finished,
                    lease.as_ref().map(|l| l.holder.clone()),
                    lease.as_ref().map(|l| micros(l.until))
                ])
            })
            .map_err(SqliteError::from)?;
            Ok((true, count.map(|n| n + 1)))
        }
    }
}

fn list(
    conn: &Connection,
    query: &ListTasksRequest,
    caller: Option<&str>,
    max_page: usize,
) -> Result<ListTasksResponse, StoreError> {
    let Page {
        size: page_size,
        after,
        cursor,
    } = Page::of(query, max_page)?;
    let state = query.status.map(state_name).transpose()?;
    let filter = "(owner IS NULL OR owner = ?1) AND (?2 = '' OR context_id = ?2)
        AND (?3 IS NULL OR state = ?3) AND (?4 IS NULL OR status_at > ?4)";
    let total: i64 = conn
        .query_row(
            &format!("SELECT COUNT(*) FROM tasks WHERE {filter}"),
            params![caller, query.context_id, state, after],
            |r| r.get(0),
        )
        .map_err(SqliteError::from)?;
    let mut stmt = conn
        .prepare(&format!(
            "SELECT task, history, artifacts, owner, status_at, seq FROM tasks WHERE {filter}
             AND (?5 IS NULL OR (status_at, seq) < (?5, ?6))
             ORDER BY status_at DESC, seq DESC LIMIT ?7"
        ))
        .map_err(SqliteError::from)?;
    let rows = stmt
        .query_map(
            params![
                caller,
                query.context_id,
                state,
                after,
                cursor.map(|c| c.at),
                cursor.map(|c| i64::try_from(c.seq).unwrap_or(i64::MAX)),
                i64::try_from(page_size + 1).unwrap_or(i64::MAX)
            ],
            |r| Ok((row_task(r)?, r.get::<_, i64>(4)?, r.get::<_, i64>(5)?)),
        )
        .map_err(SqliteError::from)?;
    let rows = rows.map(|r| r.map_err(|e| StoreError::from(SqliteError::from(e))));
    sql::page(
        rows,
        page_size,
        total,
        |((task, history, artifacts, owner), at, seq)| {
            let task = decode(&task, &history, &artifacts, owner)?;
            let seq = u64::try_from(seq).unwrap_or(0);
            Ok((task, Cursor { at, seq }))
        },
    )
}

fn fail_lapsed(
    conn: &mut Connection,
    now: SystemTime,
    holder: &str,
    reason: &str,
) -> Result<Vec<Task>, SqliteError> {
    let tx = conn.savepoint()?;
    let mut lapsed = {
        let mut stmt = tx.prepare(&format!(
            "{SELECT} WHERE lease_until IS NOT NULL AND lease_until < ?1 AND lease_holder != ?2"
        ))?;
        let rows = stmt.query_map(params![micros(now), holder], row_task)?;
        let mut lapsed = Vec::new();
        for row in rows {
            let (task, history, artifacts, owner) = row?;
            lapsed.push(decode(&task, &history, &artifacts, owner)?);
        }
        lapsed
    };
    let stamp = micros(SystemTime::now());
    for task in &mut lapsed {
        lapse(task, reason);
        let mut bare = task.clone();
        let history = serde_json::to_string(&std::mem::take(&mut bare.history))?;
        bare.artifacts.clear();
        let status_at = bare
            .status
            .timestamp
            .as_deref()
            .and_then(parse_micros)
            .unwrap_or(stamp);
        tx.execute(
            "UPDATE tasks SET state = ?2, status_at = ?3, task = ?4, history = ?5,
                finished_at = ?6, lease_holder = NULL, lease_until = NULL WHERE id = ?1",
            params![
                task.id,
                state_name(TaskState::Failed)?,
                status_at,
                serde_json::to_string(&bare)?,
                history,
                stamp
            ],
        )?;
    }
    tx.commit()?;
    Ok(lapsed)
}

impl TaskStore for SqliteTaskStore {
    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()> {
        self.call(move |conn, ctx| put(conn, ctx, task, lease))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>> {
        let id = id.to_owned();
        self.run(move |conn, _| {
            let row = conn
                .query_row(&format!("{SELECT} WHERE id = ?1"), params![id], row_task)
                .optional()?;
            row.map(|(task, history, artifacts, owner)| decode(&task, &history, &artifacts, owner))
                .transpose()
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        let id = id.to_owned();
        self.run(move |conn, _| {
            let tx = conn.savepoint()?;
            tx.execute("DELETE FROM push_configs WHERE task_id = ?1", params![id])?;
            tx.execute("DELETE FROM tasks WHERE id = ?1", params![id])?;
            tx.commit()?;
            Ok(())
        })
    }

    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse> {
        let query = query.clone();
        let caller = caller.map(str::to_owned);
        self.call(move |conn, _| list(conn, &query, caller.as_deref(), max_page))
    }

    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize> {
        let holder = lease.holder.clone();
        let until = micros(lease.until);
        let ids = ids.to_vec();
        self.run(move |conn, _| {
            let tx = conn.savepoint()?;
            let mut renewed = 0;
            {
                let mut stmt = tx.prepare(
                    "UPDATE tasks SET lease_until = ?3 WHERE id = ?1 AND lease_holder = ?2",
                )?;
                for id in &ids {
                    renewed += stmt.execute(params![id, holder, until])?;
                }
            }
            tx.commit()?;
            Ok(renewed)
        })
    }

    fn fail_lapsed<'a>(
        &'a self,
        now: SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>> {
        let holder = holder.to_owned();
        let reason = reason.to_owned();
        self.run(move |conn, _| fail_lapsed(conn, now, &holder, &reason))
    }
}

impl EventLog for SqliteTaskStore {
    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64> {
        let task_id = task_id.to_owned();
        let owner = owner.map(str::to_owned);
        self.call(move |conn, ctx| {
            append(
                conn,
                ctx.event_limits,
                &ctx.passes,
                &task_id,
                owner.as_deref(),
                &event,
            )
        })
    }

    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>> {
        let task_id = task_id.to_owned();
        let caller = caller.map(str::to_owned);
        self.call(move |conn, _| read_after(conn, &task_id, caller.as_deref(), after, max))
    }

    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize> {
        let task_id = task_id.to_owned();
        let through = i64::try_from(through).unwrap_or(i64::MAX);
        self.run(move |conn, _| {
            let tx = conn.savepoint()?;
            let dropped = tx.execute(
                "DELETE FROM events WHERE task_id = ?1 AND id <= ?2",
                params![task_id, through],
            )?;
            tx.execute(
                "UPDATE event_logs SET first_id = MAX(first_id, MIN(?2 + 1, next_id))
                 WHERE task_id = ?1",
                params![task_id, through],
            )?;
            tx.commit()?;
            Ok(dropped)
        })
    }

    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        let task_id = task_id.to_owned();
        self.run(move |conn, _| {
            let tx = conn.savepoint()?;
            tx.execute("DELETE FROM events WHERE task_id = ?1", params![task_id])?;
            tx.execute(
                "DELETE FROM event_logs WHERE task_id = ?1",
                params![task_id],
            )?;
            tx.commit()?;
            Ok(())
        })
    }
}

impl PushConfigStore for SqliteTaskStore {
    fn save_configs<'a>(
        &'a self,
        task_id: &'a str,
        configs: Vec<TaskPushNotificationConfig>,
    ) -> StoreFuture<'a, ()> {
        let task_id = task_id.to_owned();
        self.run(move |conn, _| {
            if configs.is_empty() {
                conn.execute(
                    "DELETE FROM push_configs WHERE task_id = ?1",
                    params![task_id],
                )?;
            } else {
                conn.execute(
                    "INSERT INTO push_configs (task_id, configs) VALUES (?1, ?2)
                     ON CONFLICT (task_id) DO UPDATE SET configs = excluded.configs",
                    params![task_id, serde_json::to_string(&configs)?],
                )?;
            }
            Ok(())
        })
    }

    fn load_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> StoreFuture<'a, Vec<TaskPushNotificationConfig>> {
        let task_id = task_id.to_owned();
        self.run(move |conn, _| {
            let configs: Option<String> = conn
                .query_row(
                    "SELECT configs FROM push_configs WHERE task_id = ?1",
                    params![task_id],
                    |r| r.get(0),
                )
                .optional()?;
            Ok(match configs {
                Some(json) => serde_json::from_str(&json)?,
                None => Vec::new(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_run_once_and_a_newer_schema_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap_or_else(|e| panic!("{e}"));
        migrate(&mut conn).unwrap_or_else(|e| panic!("{e}"));
        // A second run finds nothing to do (the tables exist: running them again would fail).
        migrate(&mut conn).unwrap_or_else(|e| panic!("{e}"));
        let version: i64 = conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap_or_default();
        assert_eq!(version, MIGRATIONS.len() as i64);
        conn.pragma_update(None, "user_version", version + 1)
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            migrate(&mut conn),
            Err(SqliteError::NewerSchema(v)) if v == version + 1
        ));
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_full_store_makes_room_from_finished_tasks_only() {
        let store = SqliteTaskStore::open_in_memory(StoreLimits {
            max_tasks: 2,
            max_finished: 10,
            finished_ttl: Duration::from_secs(60),
        })
        .unwrap_or_else(|e| panic!("{e}"));
        super::super::bound_checks::a_full_store_makes_room_from_finished_tasks_only(&store).await;
    }

    /// Between passes ([`SqliteTaskStore::evict_every`]): the tasks never go over
    /// `max_tasks`, the finished ones go over `max_finished` by fewer than `every` and are
    /// back at it after the pass, and the logs over their number by fewer than `every`.
    #[tokio::test(flavor = "current_thread")]
    async fn the_bounds_between_passes_hold_at_their_edges() {
        const EVERY: usize = 2;
        let limits = StoreLimits {
            max_tasks: 20,
            max_finished: 12,
            finished_ttl: Duration::from_secs(3600),
        };
        let store = SqliteTaskStore::open_in_memory(limits)
            .unwrap_or_else(|e| panic!("{e}"))
            .evict_every(EVERY, Duration::from_secs(3600))
            .event_limits(EventLogLimits {
                max_tasks: 10,
                max_events: 3,
            });
        let task = |id: String, state| Task {
            id,
            status: crate::types::TaskStatus {
                state,
                ..Default::default()
            },
            ..Task::default()
        };
        let count = |status: Option<TaskState>| {
            let query = ListTasksRequest {
                status,
                ..ListTasksRequest::default()
            };
            let store = &store;
            async move {
                store
                    .list(&query, None, 100)
                    .await
                    .map_or(-1, |l| l.total_size)
            }
        };
        for i in 0..20 {
            let put = store.put(task(format!("t{i}"), TaskState::Working), None);
            assert_eq!(put.await, Ok(()), "t{i}");
        }
        assert_eq!(
            store
                .put(task("t20".into(), TaskState::Working), None)
                .await,
            Err(StoreError::Full)
        );
        assert_eq!(count(None).await, 20);
        // Finished one by one (a write each): a pass after every second.
        let mut most = 0;
        for i in 0..20 {
            let put = store.put(task(format!("t{i}"), TaskState::Completed), None);
            assert_eq!(put.await, Ok(()));
            most = most.max(count(Some(TaskState::Completed)).await);
        }
        assert_eq!(most, (limits.max_finished + EVERY - 1) as i32);
        assert_eq!(count(None).await, limits.max_finished as i32);
        assert_eq!(store.get("t0").await, Ok(None), "the oldest go first");
        // Logs: 11 made, one over their number until the 12th's pass.
        for i in 0..12 {
            let event = StreamResponse::Message(crate::types::Message::text(
                crate::types::Role::Agent,
                format!("m{i}"),
                "x",
            ));
            let id = format!("l{i}");
            assert_eq!(store.append(&id, None, Arc::new(event)).await, Ok(1));
            let held = store.read_after("l0", None, 0, 10).await.is_ok();
            assert_eq!(held, i < 11, "l0 after l{i}");
        }
        assert!(store.read_after("l1", None, 0, 10).await.is_err());
        assert!(store.read_after("l2", None, 0, 10).await.is_ok());
    }

    /// Calls made at once are committed in batches, each answered as if alone: at the
    /// limit, exactly `max_tasks` of many puts are stored and the rest refused, and a
    /// refused put's batch still stores the others.
    #[tokio::test(flavor = "current_thread")]
    async fn calls_made_at_once_are_answered_as_if_alone() {
        let store = Arc::new(
            SqliteTaskStore::open_in_memory(StoreLimits {
                max_tasks: 10,
                ..StoreLimits::default()
            })
            .unwrap_or_else(|e| panic!("{e}")),
        );
        let puts: Vec<_> = (0..30)
            .map(|i| {
                let store = Arc::clone(&store);
                let task = Task {
                    id: format!("t{i}"),
                    status: crate::types::TaskStatus {
                        state: TaskState::Working,
                        ..Default::default()
                    },
                    ..Task::default()
                };
                tokio::spawn(async move { store.put(task, None).await })
            })
            .collect();
        let (mut stored, mut full) = (0, 0);
        for put in puts {
            match put.await.unwrap_or_else(|e| panic!("{e}")) {
                Ok(()) => stored += 1,
                Err(StoreError::Full) => full += 1,
                Err(e) => panic!("{e}"),
            }
        }
        assert_eq!((stored, full), (10, 20));
        let listed = store.list(&ListTasksRequest::default(), None, 100).await;
        assert_eq!(listed.map(|l| l.total_size), Ok(10));
    }
}
