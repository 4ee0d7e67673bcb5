//! [`SqliteTaskStore`]: tasks, their history and artifacts, and their leases in one SQLite
//! file that outlives the process (feature `sqlite`).
//!
//! rusqlite with SQLite compiled in (`bundled`: no system library, one C file that builds in
//! well under a minute on two cores) rather than sqlx: sqlx brings its macros, its own
//! runtime layer and a driver per database, several times the compile time for one embedded
//! file. rusqlite is synchronous, so every call runs on tokio's blocking threads
//! ([`tokio::task::spawn_blocking`]) and the runtime's workers never wait on the disk.
//!
//! The file is opened in WAL mode with `synchronous = NORMAL`: a write is in the file once
//! its call returns, so a process killed at any point (even with SIGKILL) loses nothing it
//! was told was stored; only a crash of the machine itself may lose the last writes.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use rusqlite::{params, Connection, OptionalExtension};

use super::events::may_read;
use super::memory::{Cursor, Page};
use super::sql::{self, micros};
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
    /// The blocking thread running the call panicked or was cancelled.
    #[error("the store's blocking task did not finish")]
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
/// [`MemoryTaskStore`]: super::MemoryTaskStore
pub struct SqliteTaskStore {
    conn: Arc<Mutex<Connection>>,
    /// One permit: calls wait for the connection here, as futures, rather than each holding
    /// one of tokio's blocking threads while it waits on the connection's lock.
    gate: Arc<tokio::sync::Semaphore>,
    limits: StoreLimits,
    event_limits: EventLogLimits,
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
        Ok(SqliteTaskStore {
            conn: Arc::new(Mutex::new(conn)),
            gate: Arc::new(tokio::sync::Semaphore::new(1)),
            limits,
            event_limits: EventLogLimits::default(),
        })
    }

    /// The bounds of its event logs ([`EventLogLimits::default`] unless set).
    pub fn event_limits(mut self, limits: EventLogLimits) -> Self {
        self.event_limits = limits;
        self
    }

    /// Runs `work` with the connection on a blocking thread, once the gate lets it.
    fn call<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&mut Connection, StoreLimits) -> Result<T, StoreError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        let conn = Arc::clone(&self.conn);
        let gate = Arc::clone(&self.gate);
        let limits = self.limits;
        Box::pin(async move {
            let permit = gate
                .acquire_owned()
                .await
                .map_err(|_| StoreError::from(SqliteError::Join))?;
            tokio::task::spawn_blocking(move || {
                let _permit = permit;
                let mut conn = conn.lock().unwrap_or_else(PoisonError::into_inner);
                work(&mut conn, limits)
            })
            .await
            .map_err(|_| StoreError::from(SqliteError::Join))?
        })
    }

    /// [`call`](Self::call) for work that fails with a [`SqliteError`].
    fn run<'a, T: Send + 'static>(
        &'a self,
        work: impl FnOnce(&mut Connection, StoreLimits) -> Result<T, SqliteError> + Send + 'static,
    ) -> StoreFuture<'a, T> {
        self.call(move |conn, limits| work(conn, limits).map_err(StoreError::from))
    }
}

fn append(
    conn: &mut Connection,
    limits: EventLogLimits,
    task_id: &str,
    owner: Option<&str>,
    event: &StreamResponse,
) -> Result<u64, StoreError> {
    let body = serde_json::to_string(event).map_err(SqliteError::from)?;
    let tx = conn.transaction().map_err(SqliteError::from)?;
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
            // Room for a new log: the oldest ones go.
            tx.execute(
                "DELETE FROM events WHERE task_id IN (SELECT task_id FROM event_logs
                    ORDER BY created DESC LIMIT -1 OFFSET ?1)",
                params![i64::try_from(limits.max_tasks.max(1) - 1).unwrap_or(i64::MAX)],
            )
            .map_err(SqliteError::from)?;
            tx.execute(
                "DELETE FROM event_logs WHERE task_id IN (SELECT task_id FROM event_logs
                    ORDER BY created DESC LIMIT -1 OFFSET ?1)",
                params![i64::try_from(limits.max_tasks.max(1) - 1).unwrap_or(i64::MAX)],
            )
            .map_err(SqliteError::from)?;
            tx.execute(
                "INSERT INTO event_logs (task_id, created, owner, first_id, next_id)
                 VALUES (?1, (SELECT COALESCE(MAX(created), 0) + 1 FROM event_logs), ?2, 1, 1)",
                params![task_id, owner],
            )
            .map_err(SqliteError::from)?;
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

fn put(
    conn: &mut Connection,
    limits: StoreLimits,
    mut task: Task,
    lease: Option<Lease>,
) -> Result<(), StoreError> {
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
    let tx = conn.transaction().map_err(SqliteError::from)?;
    let held: Option<Option<i64>> = tx
        .query_row(
            "SELECT finished_at FROM tasks WHERE id = ?1",
            params![task.id],
            |r| r.get(0),
        )
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
            tx.execute(
                "UPDATE tasks SET context_id = ?2, state = ?3, status_at = ?4, owner = ?5,
                    task = ?6, history = ?7, artifacts = ?8, finished_at = ?9,
                    lease_holder = ?10, lease_until = ?11
                 WHERE id = ?1",
                params![
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
                ],
            )
            .map_err(SqliteError::from)?;
        }
        None => {
            evict(&tx, limits, now)?;
            let count: i64 = tx
                .query_row("SELECT COUNT(*) FROM tasks", [], |r| r.get(0))
                .map_err(SqliteError::from)?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= limits.max_tasks {
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
            }
            tx.execute(
                "INSERT INTO tasks (id, seq, context_id, state, status_at, owner, task, history,
                    artifacts, finished_at, lease_holder, lease_until)
                 VALUES (?1, (SELECT COALESCE(MAX(seq), 0) + 1 FROM tasks), ?2, ?3, ?4, ?5, ?6,
                    ?7, ?8, ?9, ?10, ?11)",
                params![
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
                ],
            )
            .map_err(SqliteError::from)?;
        }
    }
    if finished.is_some() {
        evict(&tx, limits, now)?;
    }
    tx.commit().map_err(SqliteError::from)?;
    Ok(())
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
    let tx = conn.transaction()?;
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
        self.call(move |conn, limits| put(conn, limits, task, lease))
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
            let tx = conn.transaction()?;
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
            let tx = conn.transaction()?;
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
        let limits = self.event_limits;
        let task_id = task_id.to_owned();
        let owner = owner.map(str::to_owned);
        self.call(move |conn, _| append(conn, limits, &task_id, owner.as_deref(), &event))
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
            let tx = conn.transaction()?;
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
            let tx = conn.transaction()?;
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
        let task = |id: &str, state| Task {
            id: id.into(),
            status: crate::types::TaskStatus {
                state,
                ..Default::default()
            },
            ..Task::default()
        };
        assert_eq!(store.put(task("a", TaskState::Working), None).await, Ok(()));
        assert_eq!(
            store.put(task("b", TaskState::Completed), None).await,
            Ok(())
        );
        store
            .save_configs("b", vec![TaskPushNotificationConfig::default()])
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        // The finished one makes room, its push configs with it.
        assert_eq!(store.put(task("c", TaskState::Working), None).await, Ok(()));
        assert_eq!(store.get("b").await, Ok(None));
        assert_eq!(store.load_configs("b").await, Ok(Vec::new()));
        assert_eq!(
            store.put(task("d", TaskState::Working), None).await,
            Err(StoreError::Full)
        );
        // Updating a held task is always allowed.
        assert_eq!(
            store.put(task("a", TaskState::Completed), None).await,
            Ok(())
        );
    }
}
