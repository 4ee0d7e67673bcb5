//! [`PostgresTaskStore`]: tasks with their history, artifacts and leases, event logs and push
//! configs in PostgreSQL tables that several replicas of an agent share (feature `postgres`).
//!
//! The schema mirrors the SQLite store's (JSON in `TEXT` columns, times as microseconds since
//! the epoch), and so do the bounds ([`StoreLimits`], [`EventLogLimits`]). What differs is that
//! other processes write the same rows at the same time, so every write that reads before it
//! writes is one statement or a transaction that locks what it reads:
//!
//! - a lapsed lease is failed by `UPDATE … WHERE lease_until < now … RETURNING`, which locks
//!   the rows it takes and clears their lease in the same statement: a second replica's sweep
//!   waits for the first's to commit, then finds no lease on them, so a task is failed once;
//! - an event is appended in one statement ([`APPEND`]) that takes the log's `next_id` in an
//!   upsert of its row, which locks it, so two replicas appending to one log never give out
//!   one id twice; a read after an id is one statement (one snapshot), so a trim between its
//!   steps cannot hide a gap;
//! - a task is written in one statement (an upsert) while the store is far from full; near
//!   full, and in the passes that count the tasks and evict old ones (see
//!   [`PostgresTaskStore`]'s bounds), under a transaction-scoped advisory lock, so that two
//!   replicas never both take the last free place, and evictions never deadlock one another.
//!
//! No call takes a lock that other calls share, but the few that count or evict: a lock
//! taken by every create and finish (as this store first did) serialized every `SendMessage`
//! of every replica, each holding it for several round trips. The statements of the hot
//! paths are prepared once per connection ([`Pooled::prepared`]): tokio-postgres prepares a
//! statement given as text on every call, a round trip of its own.
//!
//! tokio-postgres rather than sqlx: it is the asynchronous driver sqlx's is modelled on,
//! without sqlx's macros, its runtime layer and its other databases, a fraction of the
//! compile time on two cores. The pool is the crate's own ([`Pool`], why in its module).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio_postgres::{Client, Config, Row, Transaction};

use super::events::may_read;
use super::memory::{Cursor, Page};
use super::postgres_listen::{listen, Watchers, CANCEL_CHANNEL, CHANNEL};
use super::postgres_pool::{connect, Pool, Pooled, PostgresError};
use super::sql::{self, micros};
use super::sql_passes::Passes;
use super::{
    lapse, leasable, EventLog, EventLogLimits, Lease, LogWatch, LoggedEvent, PushConfigStore,
    StoreError, StoreFuture, StoreLimits, TaskStore,
};
use crate::push::TaskPushNotificationConfig;
use crate::timestamp::parse_micros;
use crate::types::{ListTasksRequest, ListTasksResponse, StreamResponse, Task, TaskState};

/// The migrations, in order; the `rpcwire_a2a_schema` table says how many ran.
const MIGRATIONS: &[&str] = &[
    // 1: tasks, as in the SQLite store; `seq` orders tasks of one status time.
    "CREATE TABLE tasks (
        id TEXT PRIMARY KEY,
        seq BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        context_id TEXT NOT NULL,
        state TEXT NOT NULL,
        status_at BIGINT NOT NULL,
        owner TEXT,
        task TEXT NOT NULL,
        history TEXT NOT NULL,
        artifacts TEXT NOT NULL,
        finished_at BIGINT,
        lease_holder TEXT,
        lease_until BIGINT
    );
    CREATE INDEX tasks_listing ON tasks (status_at DESC, seq DESC);
    CREATE INDEX tasks_finished ON tasks (finished_at, seq) WHERE finished_at IS NOT NULL;
    CREATE INDEX tasks_leased ON tasks (lease_until) WHERE lease_until IS NOT NULL;",
    // 2: the event logs of tasks' streams and their events.
    "CREATE TABLE event_logs (
        task_id TEXT PRIMARY KEY,
        created BIGINT GENERATED ALWAYS AS IDENTITY UNIQUE,
        owner TEXT,
        first_id BIGINT NOT NULL,
        next_id BIGINT NOT NULL
    );
    CREATE TABLE events (
        task_id TEXT NOT NULL,
        id BIGINT NOT NULL,
        event TEXT NOT NULL,
        PRIMARY KEY (task_id, id)
    );",
    // 3: push notification configs, each task's list as JSON.
    "CREATE TABLE push_configs (
        task_id TEXT PRIMARY KEY,
        configs TEXT NOT NULL
    );",
];

/// Advisory lock keys (one namespace per database): migrations, task creation and eviction,
/// log creation and eviction.
const MIGRATE_LOCK: i64 = 0x7270_6377_0001;
const TASKS_LOCK: i64 = 0x7270_6377_0002;
const LOGS_LOCK: i64 = 0x7270_6377_0003;

/// How a [`PostgresTaskStore`] connects, beyond its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostgresOptions {
    /// The most connections it opens (at least 1); calls beyond wait for one. 4 by default.
    pub pool_size: usize,
    /// The schema its tables live in (created when missing), for several agents in one
    /// database; `None`: the connection's default (`public`).
    pub schema: Option<String>,
    /// The longest a statement may run, waits for locks included (the server's
    /// `statement_timeout`), so that a stuck database fails a call rather than hanging it;
    /// 30 s by default. Connecting is bounded too: 10 s unless the URL says otherwise.
    pub statement_timeout: Duration,
    /// How often a stream following a task's log here reads it while the connection that
    /// listens for other replicas' appends is down (and how long that connection waits
    /// before reconnecting); 1 s by default.
    pub poll_interval: Duration,
    /// How many of its writes that create or finish a task (or create a log) a store makes
    /// between two passes that count and evict under the lock (see [the
    /// bounds](PostgresTaskStore#bounds)); 64 by default. 1: every such write counts and
    /// evicts, as a single lock would.
    pub evict_every: usize,
    /// The longest between two passes while tasks are created or finished (so that
    /// finished tasks past their age go even when few writes are made); 1 s by default.
    pub evict_interval: Duration,
}

impl Default for PostgresOptions {
    fn default() -> Self {
        PostgresOptions {
            pool_size: 4,
            schema: None,
            statement_timeout: Duration::from_secs(30),
            poll_interval: Duration::from_secs(1),
            evict_every: 64,
            evict_interval: Duration::from_secs(1),
        }
    }
}

/// Tasks, event logs and push configs in PostgreSQL, bounded by [`StoreLimits`] and
/// [`EventLogLimits`] as the SQLite store is; several stores (replicas) may share one
/// database.
///
/// # Bounds
///
/// So that no lock is shared by every call, a store counts its tasks and evicts in passes,
/// under a lock, after every [`evict_every`](PostgresOptions::evict_every) (E, 64 by default)
/// of its writes that create or finish a task, and after any such write once the last pass
/// is [`evict_interval`](PostgresOptions::evict_interval) old; between passes it knows the
/// tasks it created itself:
///
/// - a new task is inserted in one statement while the store's estimate (the count of its
///   last pass plus the tasks it created since) is more than 4 E below `max_tasks`; closer,
///   or whenever `max_tasks` ≤ 4 E, each insert counts under the lock and is refused when
///   the store is full, exactly. A store alone on its database never holds more than
///   `max_tasks`; R stores, each unaware of the others' inserts since its last pass, hold at
///   most `max_tasks` + R × E (each inserts at most E before its next pass shows it the
///   store full);
/// - finished tasks past their age or past `max_finished` go in the passes: between two,
///   fewer than E more per store are held (after each create or finish when
///   `max_finished` ≤ 4 E: exact);
/// - the oldest logs past [`EventLogLimits::max_tasks`] go in a pass after every E logs a
///   store creates: fewer than E more per store between two (exact when the bound ≤ 4 E).
pub struct PostgresTaskStore {
    pool: Pool,
    /// The streams here following tasks' logs, woken by other replicas' appends.
    watchers: Arc<Watchers>,
    limits: StoreLimits,
    event_limits: EventLogLimits,
    /// When this store counts and evicts.
    passes: Passes,
}

impl std::fmt::Debug for PostgresTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresTaskStore")
            .field("limits", &self.limits)
            .field("event_limits", &self.event_limits)
            .finish_non_exhaustive()
    }
}

/// Whether `name` is a schema name this store puts in SQL as is.
fn plain_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    name.len() <= 63
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl PostgresTaskStore {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or `key=value`
    /// pairs) with [`PostgresOptions::default`] and runs the migrations it has not had.
    pub async fn connect(url: &str, limits: StoreLimits) -> Result<Self, PostgresError> {
        Self::connect_with(url, limits, PostgresOptions::default()).await
    }

    /// [`connect`](Self::connect) with these options.
    pub async fn connect_with(
        url: &str,
        limits: StoreLimits,
        options: PostgresOptions,
    ) -> Result<Self, PostgresError> {
        let mut config: Config = url.parse()?;
        // The URL's own server options first, then the store's.
        let mut server_options = config.get_options().unwrap_or_default().to_owned();
        if let Some(schema) = &options.schema {
            if !plain_identifier(schema) {
                return Err(PostgresError::BadSchema(schema.clone()));
            }
            // Quoted: a plain identifier may still be a keyword (`user`, `full`).
            server_options.push_str(&format!(" -c search_path=\"{schema}\""));
        }
        let timeout = options.statement_timeout.as_millis().max(1);
        server_options.push_str(&format!(" -c statement_timeout={timeout}"));
        config.options(server_options.trim_start());
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        let mut client = connect(&config).await?;
        migrate(&mut client, options.schema.as_deref()).await?;
        let tasks: i64 = client
            .query_one("SELECT COUNT(*) FROM tasks", &[])
            .await?
            .try_get(0)?;
        let watchers = Watchers::new(options.poll_interval);
        tokio::spawn(listen(
            config.clone(),
            Arc::downgrade(&watchers),
            options.poll_interval,
        ));
        let store = PostgresTaskStore {
            watchers,
            pool: Pool::new(config, options.pool_size, client),
            limits,
            event_limits: EventLogLimits::default(),
            passes: Passes::new(
                options.evict_every,
                options.evict_interval,
                usize::try_from(tasks).unwrap_or(usize::MAX),
            ),
        };
        Ok(store)
    }

    /// The bounds of its event logs ([`EventLogLimits::default`] unless set).
    pub fn event_limits(mut self, limits: EventLogLimits) -> Self {
        self.event_limits = limits;
        self
    }
}

/// Runs the migrations the database has not had, in one transaction under an advisory lock
/// (replicas starting together migrate once).
async fn migrate(client: &mut Client, schema: Option<&str>) -> Result<(), PostgresError> {
    let tx = client.transaction().await?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])
        .await?;
    if let Some(schema) = schema {
        tx.batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS \"{schema}\""))
            .await?;
    }
    tx.batch_execute("CREATE TABLE IF NOT EXISTS rpcwire_a2a_schema (version BIGINT NOT NULL)")
        .await?;
    let version: i64 = match tx
        .query_opt("SELECT version FROM rpcwire_a2a_schema", &[])
        .await?
    {
        Some(row) => row.try_get(0)?,
        None => {
            tx.execute("INSERT INTO rpcwire_a2a_schema (version) VALUES (0)", &[])
                .await?;
            0
        }
    };
    let known = MIGRATIONS.len() as i64;
    if version > known {
        return Err(PostgresError::NewerSchema(version));
    }
    for migration in MIGRATIONS
        .iter()
        .skip(usize::try_from(version).unwrap_or(0))
    {
        tx.batch_execute(migration).await?;
    }
    tx.execute("UPDATE rpcwire_a2a_schema SET version = $1", &[&known])
        .await?;
    tx.commit().await?;
    Ok(())
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The state's wire name, as the `state` column holds it.
fn state_name(state: TaskState) -> Result<String, PostgresError> {
    Ok(sql::state_name(state)?)
}

/// A task row (`task`, `history`, `artifacts`, `owner` first), read back into the task.
fn decode(row: &Row) -> Result<Task, PostgresError> {
    let (task, history, artifacts) = (row.try_get(0)?, row.try_get(1)?, row.try_get(2)?);
    Ok(sql::decode(task, history, artifacts, row.try_get(3)?)?)
}

/// A task row's columns [`decode`] reads.
macro_rules! select {
    () => {
        "SELECT task, history, artifacts, owner FROM tasks"
    };
}
const GET: &str = concat!(select!(), " WHERE id = $1");

/// Drops finished tasks past the age and count limits, oldest first, with their push
/// configs. The caller holds [`TASKS_LOCK`].
async fn evict(tx: &Transaction<'_>, limits: StoreLimits, now: i64) -> Result<(), PostgresError> {
    let ttl = i64::try_from(limits.finished_ttl.as_micros()).unwrap_or(i64::MAX);
    let old = "SELECT id FROM tasks WHERE finished_at IS NOT NULL AND finished_at < $1";
    let over = "SELECT id FROM tasks WHERE finished_at IS NOT NULL
        ORDER BY finished_at DESC, seq DESC OFFSET $1";
    let aged = now.saturating_sub(ttl);
    let count = to_i64(limits.max_finished);
    for (select, param) in [(old, aged), (over, count)] {
        tx.execute(
            &format!("DELETE FROM push_configs WHERE task_id IN ({select})"),
            &[&param],
        )
        .await?;
        tx.execute(
            &format!("DELETE FROM tasks WHERE id IN ({select})"),
            &[&param],
        )
        .await?;
    }
    Ok(())
}

/// The assignments of a task's columns from parameters $2.. (see [`put`]): the first finish
/// time stays, and with `$10` the lease it holds stays. A macro, so that the statements
/// built with it are constants, each prepared once per connection.
macro_rules! assign {
    () => {
        "context_id = $2, state = $3, status_at = $4, owner = $5, task = $6,
        history = $7, artifacts = $8, finished_at = COALESCE(tasks.finished_at, $9),
        lease_holder = CASE WHEN $10 THEN tasks.lease_holder ELSE $11 END,
        lease_until = CASE WHEN $10 THEN tasks.lease_until ELSE $12 END"
    };
}

/// A task written (inserted, or updated with [`assign!`]) in one statement; whether it was
/// inserted (a row no transaction had written before: `xmax` 0).
const UPSERT: &str = concat!(
    "INSERT INTO tasks (id, context_id, state, status_at, owner, task, history, artifacts,
        finished_at, lease_holder, lease_until)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $11, $12)
     ON CONFLICT (id) DO UPDATE SET ",
    assign!(),
    " RETURNING xmax = 0"
);

/// The parameters of [`UPSERT`] and [`assign!`].
type Params<'a> = [&'a (dyn tokio_postgres::types::ToSql + Sync); 12];

/// A put that counts: under the lock, the task updated, or inserted once there is room
/// (the oldest finished tasks evicted for it; refused when none can be, with `creating`
/// inserts of this store under way counted as held); whether it was inserted, and the tasks
/// held after it when it counted them.
async fn put_counting(
    client: &mut Client,
    limits: StoreLimits,
    creating: usize,
    params: &Params<'_>,
    finished: bool,
    now: i64,
) -> Result<(bool, Option<usize>), StoreError> {
    let tx = client.transaction().await?;
    // The lock before any row: every evicting transaction takes them in that order, so
    // that two never wait on each other.
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TASKS_LOCK])
        .await?;
    let updated = tx
        .execute(
            concat!("UPDATE tasks SET ", assign!(), " WHERE id = $1"),
            params,
        )
        .await?;
    let mut held = None;
    if updated == 0 {
        evict(&tx, limits, now).await?;
        let count: i64 = tx
            .query_one("SELECT COUNT(*) FROM tasks", &[])
            .await?
            .try_get(0)?;
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        let over = (count + creating + 1).saturating_sub(limits.max_tasks);
        let mut freed = 0;
        if over > 0 {
            // Room from the oldest finished tasks, or refused.
            let gone: Vec<String> = tx
                .query(
                    "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks
                        WHERE finished_at IS NOT NULL ORDER BY finished_at, seq LIMIT $1)
                     RETURNING id",
                    &[&to_i64(over)],
                )
                .await?
                .iter()
                .map(|r| r.try_get(0))
                .collect::<Result<_, _>>()?;
            if gone.len() < over {
                return Err(StoreError::Full);
            }
            tx.execute("DELETE FROM push_configs WHERE task_id = ANY($1)", &[&gone])
                .await?;
            freed = gone.len();
        }
        tx.execute(UPSERT, params).await?;
        held = Some(count + 1 - freed);
    } else if finished {
        evict(&tx, limits, now).await?;
    }
    tx.commit().await?;
    Ok((updated == 0, held))
}

impl PostgresTaskStore {
    /// Writes `task` (with `lease`): in one statement while the store is far from full,
    /// counting under the lock otherwise; then a pass when one is due.
    async fn write_task(&self, mut task: Task, lease: Option<Lease>) -> Result<(), StoreError> {
        let now = micros(SystemTime::now());
        let state = task.status.state;
        let sql::Columns {
            body,
            history,
            artifacts,
            state: name,
            status_at,
        } = sql::encode(&mut task).map_err(PostgresError::from)?;
        let finished = state.is_terminal().then_some(now);
        let keeps_lease = leasable(state);
        let lease = lease.filter(|_| keeps_lease);
        let keep_held = lease.is_none() && keeps_lease;
        let holder = lease.as_ref().map(|l| l.holder.clone());
        let until = lease.as_ref().map(|l| micros(l.until));
        let params: Params<'_> = [
            &task.id,
            &task.context_id,
            &name,
            &status_at,
            &task.owner,
            &body,
            &history,
            &artifacts,
            &finished,
            &keep_held,
            &holder,
            &until,
        ];
        let limits = self.limits;
        let mut c = self.pool.get().await?;
        let reserved = self.passes.reserve(limits.max_tasks);
        let written = match reserved {
            Some(_) => async {
                let upsert = c.prepared(UPSERT).await?;
                let row = c.client().query_one(&upsert, &params).await?;
                Ok((row.try_get::<_, bool>(0)?, None))
            }
            .await
            .map_err(|e: tokio_postgres::Error| StoreError::from(e)),
            None => {
                let creating = self.passes.creating();
                put_counting(
                    c.client(),
                    limits,
                    creating,
                    &params,
                    finished.is_some(),
                    now,
                )
                .await
            }
        };
        let created = written.as_ref().is_ok_and(|w| w.0);
        if let Ok((_, Some(held))) = written {
            self.passes.counted(held);
        }
        let due = self.passes.put_done(
            reserved,
            created,
            finished.is_some() && written.is_ok(),
            limits.max_finished,
        );
        written?;
        if due {
            // The write is stored: a pass that fails leaves its writes due for the next.
            if let Err(e) = self.pass(&mut c).await {
                tracing::warn!(error = %e, "finished tasks not evicted");
            }
        }
        Ok(())
    }

    /// Under the lock: the finished tasks past their age and count go, the rest are counted.
    async fn pass(&self, c: &mut Pooled<'_>) -> Result<(), PostgresError> {
        let covered = self.passes.pass_starts();
        let counted = async {
            let tx = c.client().transaction().await?;
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&TASKS_LOCK])
                .await?;
            evict(&tx, self.limits, micros(SystemTime::now())).await?;
            let count: i64 = tx
                .query_one("SELECT COUNT(*) FROM tasks", &[])
                .await?
                .try_get(0)?;
            tx.commit().await?;
            Ok::<_, PostgresError>(usize::try_from(count).unwrap_or(usize::MAX))
        }
        .await;
        match counted {
            Ok(tasks) => self.passes.passed(covered, tasks),
            Err(_) => self.passes.pass_failed(covered),
        }
        counted.map(drop)
    }

    /// Under the logs' lock: the oldest logs past their number go, with their events.
    async fn logs_pass(&self, c: &mut Pooled<'_>) -> Result<(), PostgresError> {
        let tx = c.client().transaction().await?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&LOGS_LOCK])
            .await?;
        // Logs before events: the order an appender locks them in.
        let gone: Vec<String> = tx
            .query(
                "DELETE FROM event_logs WHERE task_id IN (SELECT task_id FROM event_logs
                    ORDER BY created DESC OFFSET $1) RETURNING task_id",
                &[&to_i64(self.event_limits.max_tasks.max(1))],
            )
            .await?
            .iter()
            .map(|r| r.try_get(0))
            .collect::<Result<_, _>>()?;
        if !gone.is_empty() {
            tx.execute("DELETE FROM events WHERE task_id = ANY($1)", &[&gone])
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

async fn list(
    client: &Client,
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
    let filter = "(owner IS NULL OR owner = $1::text) AND ($2::text = '' OR context_id = $2)
        AND ($3::text IS NULL OR state = $3) AND ($4::bigint IS NULL OR status_at > $4)";
    let caller = caller.map(str::to_owned);
    let total: i64 = client
        .query_one(
            &format!("SELECT COUNT(*) FROM tasks WHERE {filter}"),
            &[&caller, &query.context_id, &state, &after],
        )
        .await?
        .try_get(0)?;
    let rows = client
        .query(
            &format!(
                "SELECT task, history, artifacts, owner, status_at, seq FROM tasks WHERE {filter}
                 AND ($5::bigint IS NULL OR (status_at, seq) < ($5, $6::bigint))
                 ORDER BY status_at DESC, seq DESC LIMIT $7"
            ),
            &[
                &caller,
                &query.context_id,
                &state,
                &after,
                &cursor.map(|c| c.at),
                &cursor.map(|c| i64::try_from(c.seq).unwrap_or(i64::MAX)),
                &to_i64(page_size + 1),
            ],
        )
        .await?;
    sql::page(rows.iter().map(Ok), page_size, total, |row| {
        let at = row.try_get(4).map_err(PostgresError::from)?;
        let seq = u64::try_from(row.try_get::<_, i64>(5).map_err(PostgresError::from)?);
        let cursor = Cursor {
            at,
            seq: seq.unwrap_or(0),
        };
        Ok((decode(row)?, cursor))
    })
}

async fn fail_lapsed(
    client: &mut Client,
    now: SystemTime,
    holder: &str,
    reason: &str,
) -> Result<Vec<Task>, PostgresError> {
    let tx = client.transaction().await?;
    // Taking the lease off in the statement that finds it: a concurrent sweep waits on
    // these rows' locks, then sees no lease on them and leaves them alone.
    let rows = tx
        .query(
            "UPDATE tasks SET lease_holder = NULL, lease_until = NULL
             WHERE lease_until IS NOT NULL AND lease_until < $1 AND lease_holder <> $2
             RETURNING task, history, artifacts, owner",
            &[&micros(now), &holder],
        )
        .await?;
    let mut lapsed = rows.iter().map(decode).collect::<Result<Vec<_>, _>>()?;
    let stamp = micros(SystemTime::now());
    let failed = state_name(TaskState::Failed)?;
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
            "UPDATE tasks SET state = $2, status_at = $3, task = $4, history = $5,
                finished_at = $6 WHERE id = $1",
            &[
                &task.id,
                &failed,
                &status_at,
                &serde_json::to_string(&bare)?,
                &history,
                &stamp,
            ],
        )
        .await?;
    }
    tx.commit().await?;
    Ok(lapsed)
}

/// An event appended in one statement: the log's row created (`created`) or its next id
/// taken, both only for the log's owner (no row for another); the event inserted, the
/// events before the first kept deleted and the append announced (at commit; with `$5`).
const APPEND: &str = "WITH log AS (
        INSERT INTO event_logs (task_id, owner, first_id, next_id) VALUES ($1, $2, 1, 2)
        ON CONFLICT (task_id) DO UPDATE SET next_id = event_logs.next_id + 1,
            first_id = GREATEST(event_logs.first_id, event_logs.next_id + 1 - $4)
        WHERE event_logs.owner IS NOT DISTINCT FROM EXCLUDED.owner
        RETURNING next_id - 1 AS id, first_id, xmax = 0 AS created
    ), appended AS (
        INSERT INTO events (task_id, id, event) SELECT $1, id, $3 FROM log
    ), trimmed AS (
        DELETE FROM events WHERE task_id = $1 AND id < (SELECT first_id FROM log)
    )
    SELECT id, created, CASE WHEN $5 THEN pg_notify($6, $1 || ' ' || id)::text END FROM log";

impl PostgresTaskStore {
    /// Appends `event` to task `task_id`'s log (see [`APPEND`]), then a pass over the logs
    /// when one is due.
    async fn append_event(
        &self,
        task_id: &str,
        owner: Option<&str>,
        event: &StreamResponse,
    ) -> Result<u64, StoreError> {
        let body = serde_json::to_string(event).map_err(PostgresError::from)?;
        let max_events = to_i64(self.event_limits.max_events.max(1));
        // NOTIFY's payload is at most 8 000 bytes: a task id near that is not announced (its
        // streams elsewhere poll). Delivered at commit: a replica woken by it reads the event.
        let announce = task_id.len() + 21 < 8000;
        let mut c = self.pool.get().await?;
        let append = c.prepared(APPEND).await?;
        let row = c
            .client()
            .query_opt(
                &append,
                &[&task_id, &owner, &body, &max_events, &announce, &CHANNEL],
            )
            .await?;
        let Some(row) = row else {
            return Err(StoreError::NotOwner);
        };
        let id: i64 = row.try_get(0)?;
        let created: bool = row.try_get(1)?;
        if created && self.passes.log_created(self.event_limits.max_tasks) {
            if let Err(e) = self.logs_pass(&mut c).await {
                tracing::warn!(error = %e, "old event logs not evicted");
            }
        }
        Ok(u64::try_from(id).unwrap_or(0))
    }
}

async fn read_after(
    client: &Client,
    task_id: &str,
    caller: Option<&str>,
    after: u64,
    max: usize,
) -> Result<Vec<LoggedEvent>, StoreError> {
    let after = i64::try_from(after).unwrap_or(i64::MAX);
    // One statement, one snapshot: the log's first kept id and its events agree.
    let rows = client
        .query(
            "SELECT l.owner, l.first_id, e.id, e.event FROM event_logs l
             LEFT JOIN LATERAL (SELECT id, event FROM events
                WHERE task_id = l.task_id AND id > $2 ORDER BY id LIMIT $3) e ON true
             WHERE l.task_id = $1 ORDER BY e.id",
            &[&task_id, &after, &to_i64(max)],
        )
        .await?;
    let Some(head) = rows.first() else {
        return Err(StoreError::NotFound);
    };
    let owner: Option<&str> = head.try_get(0)?;
    if !may_read(owner, caller) {
        return Err(StoreError::NotFound);
    }
    let first: i64 = head.try_get(1)?;
    if after.saturating_add(1) < first {
        return Err(StoreError::Trimmed);
    }
    let mut events = Vec::with_capacity(rows.len());
    for row in &rows {
        let Some(id) = row.try_get::<_, Option<i64>>(2)? else {
            continue;
        };
        let body: &str = row.try_get(3)?;
        events.push(LoggedEvent {
            id: u64::try_from(id).unwrap_or(0),
            event: Arc::new(serde_json::from_str(body).map_err(PostgresError::from)?),
        });
    }
    Ok(events)
}

impl PostgresTaskStore {
    /// Runs `work` with a pooled connection.
    fn with<'a, T, F>(&'a self, work: impl FnOnce(&'a Pool) -> F + Send + 'a) -> StoreFuture<'a, T>
    where
        F: std::future::Future<Output = Result<T, StoreError>> + Send + 'a,
        T: Send + 'a,
    {
        Box::pin(work(&self.pool))
    }
}

impl TaskStore for PostgresTaskStore {
    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        self.with(move |pool| async move {
            // Payloads are at most 8 000 bytes: a longer id is no task of this server's.
            if id.len() >= 8000 {
                return Ok(false);
            }
            pool.get()
                .await?
                .client()
                .execute("SELECT pg_notify($1, $2)", &[&CANCEL_CHANNEL, &id])
                .await?;
            Ok(true)
        })
    }

    fn cancel_requests(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        Some(self.watchers.cancels.subscribe())
    }

    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()> {
        Box::pin(self.write_task(task, lease))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let get = c.prepared(GET).await?;
            let row = c.client().query_opt(&get, &[&id]).await?;
            Ok(row.as_ref().map(decode).transpose()?)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let tx = c.client().transaction().await?;
            tx.execute("DELETE FROM push_configs WHERE task_id = $1", &[&id])
                .await?;
            tx.execute("DELETE FROM tasks WHERE id = $1", &[&id])
                .await?;
            tx.commit().await?;
            Ok(())
        })
    }

    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            // Repeatable read: the total and the page are of one snapshot.
            let tx = c
                .client()
                .build_transaction()
                .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()
                .await?;
            let page = list(tx.client(), query, caller, max_page).await?;
            tx.commit().await?;
            Ok(page)
        })
    }

    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let renewed = c
                .client()
                .execute(
                    "UPDATE tasks SET lease_until = $3 WHERE id = ANY($1) AND lease_holder = $2",
                    &[&ids, &lease.holder, &micros(lease.until)],
                )
                .await?;
            Ok(usize::try_from(renewed).unwrap_or(usize::MAX))
        })
    }

    fn fail_lapsed<'a>(
        &'a self,
        now: SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>> {
        self.with(move |pool| async move {
            Ok(fail_lapsed(pool.get().await?.client(), now, holder, reason).await?)
        })
    }
}

impl EventLog for PostgresTaskStore {
    fn watch(&self, task_id: &str) -> Option<LogWatch> {
        Some(self.watchers.watch(task_id))
    }

    fn last_id<'a>(&'a self, task_id: &'a str, caller: Option<&'a str>) -> StoreFuture<'a, u64> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let row = c
                .client()
                .query_opt(
                    "SELECT owner, next_id FROM event_logs WHERE task_id = $1",
                    &[&task_id],
                )
                .await?;
            let Some(row) = row else {
                return Err(StoreError::NotFound);
            };
            let owner: Option<&str> = row.try_get(0)?;
            if !may_read(owner, caller) {
                return Err(StoreError::NotFound);
            }
            let next: i64 = row.try_get(1)?;
            Ok(u64::try_from(next - 1).unwrap_or(0))
        })
    }

    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move { self.append_event(task_id, owner, &event).await })
    }

    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>> {
        self.with(move |pool| async move {
            read_after(pool.get().await?.client(), task_id, caller, after, max).await
        })
    }

    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize> {
        let through = i64::try_from(through).unwrap_or(i64::MAX);
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let tx = c.client().transaction().await?;
            // The log's row first, then its events: the order an appender locks them in.
            tx.execute(
                "UPDATE event_logs SET first_id = GREATEST(first_id, LEAST($2::bigint + 1, next_id))
                 WHERE task_id = $1",
                &[&task_id, &through],
            )
            .await?;
            let dropped = tx
                .execute(
                    "DELETE FROM events WHERE task_id = $1 AND id <= $2",
                    &[&task_id, &through],
                )
                .await?;
            tx.commit().await?;
            Ok(usize::try_from(dropped).unwrap_or(usize::MAX))
        })
    }

    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let tx = c.client().transaction().await?;
            tx.execute("DELETE FROM event_logs WHERE task_id = $1", &[&task_id])
                .await?;
            tx.execute("DELETE FROM events WHERE task_id = $1", &[&task_id])
                .await?;
            tx.commit().await?;
            Ok(())
        })
    }
}

impl PushConfigStore for PostgresTaskStore {
    fn save_configs<'a>(
        &'a self,
        task_id: &'a str,
        configs: Vec<TaskPushNotificationConfig>,
    ) -> StoreFuture<'a, ()> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            if configs.is_empty() {
                c.client()
                    .execute("DELETE FROM push_configs WHERE task_id = $1", &[&task_id])
                    .await?;
            } else {
                let json = serde_json::to_string(&configs).map_err(PostgresError::from)?;
                c.client()
                    .execute(
                        "INSERT INTO push_configs (task_id, configs) VALUES ($1, $2)
                         ON CONFLICT (task_id) DO UPDATE SET configs = EXCLUDED.configs",
                        &[&task_id, &json],
                    )
                    .await?;
            }
            Ok(())
        })
    }

    fn load_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> StoreFuture<'a, Vec<TaskPushNotificationConfig>> {
        self.with(move |pool| async move {
            let mut c = pool.get().await?;
            let row = c
                .client()
                .query_opt(
                    "SELECT configs FROM push_configs WHERE task_id = $1",
                    &[&task_id],
                )
                .await?;
            Ok(match row {
                Some(row) => serde_json::from_str(row.try_get(0)?).map_err(PostgresError::from)?,
                None => Vec::new(),
            })
        })
    }
}

#[cfg(test)]
#[path = "postgres_tests.rs"]
mod tests;
