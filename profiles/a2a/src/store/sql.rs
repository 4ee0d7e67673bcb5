//! What the SQL stores (SQLite's and PostgreSQL's) share beyond their SQL: a task row's JSON
//! columns read back into the task, a state's name as stored, and a `ListTasks` page put
//! together from the rows of its query (one row past the page: there are more).

use std::time::{SystemTime, UNIX_EPOCH};

use super::memory::Cursor;
use crate::timestamp::parse_micros;
use crate::types::{Artifact, ListTasksResponse, Message, Task, TaskState};

/// Microseconds since the epoch, as the time columns keep them.
pub(super) fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The columns of one task row that come from the task itself, as both stores write them
/// ([`decode`] reads the JSON ones back).
pub(super) struct Columns {
    /// The task without its history and artifacts, as JSON.
    pub(super) body: String,
    /// Its history, as JSON.
    pub(super) history: String,
    /// Its artifacts, as JSON.
    pub(super) artifacts: String,
    /// Its state's name ([`state_name`]).
    pub(super) state: String,
    /// Its status's time in microseconds since the epoch (0: none, or unreadable).
    pub(super) status_at: i64,
}

/// `task`'s row columns; its history and artifacts are taken out of it (they have columns
/// of their own), the rest of it is left for the row's other columns.
pub(super) fn encode(task: &mut Task) -> Result<Columns, serde_json::Error> {
    let history = serde_json::to_string(&std::mem::take(&mut task.history))?;
    let artifacts = serde_json::to_string(&std::mem::take(&mut task.artifacts))?;
    Ok(Columns {
        body: serde_json::to_string(&*task)?,
        history,
        artifacts,
        state: state_name(task.status.state)?,
        status_at: task
            .status
            .timestamp
            .as_deref()
            .and_then(parse_micros)
            .unwrap_or(0),
    })
}

/// A state's name as the `state` column keeps it (its JSON name).
pub(super) fn state_name(state: TaskState) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(state)? {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

/// The columns of one task row (`task`, `history`, `artifacts` as JSON, `owner`), read back
/// into the task.
pub(super) fn decode(
    task: &str,
    history: &str,
    artifacts: &str,
    owner: Option<String>,
) -> Result<Task, serde_json::Error> {
    let mut t: Task = serde_json::from_str(task)?;
    t.history = serde_json::from_str::<Vec<Message>>(history)?;
    t.artifacts = serde_json::from_str::<Vec<Artifact>>(artifacts)?;
    t.owner = owner;
    Ok(t)
}

/// A page of at most `size` tasks from `rows` (the query asked for one more, to know whether
/// more follow), each read by `read` into the task and its cursor; `total` tasks match.
pub(super) fn page<R, E>(
    rows: impl IntoIterator<Item = Result<R, E>>,
    size: usize,
    total: i64,
    read: impl Fn(R) -> Result<(Task, Cursor), E>,
) -> Result<ListTasksResponse, E> {
    let mut tasks = Vec::with_capacity(size);
    let mut last = None;
    let mut more = false;
    for row in rows {
        let row = row?;
        if tasks.len() == size {
            more = true;
            break;
        }
        let (task, cursor) = read(row)?;
        tasks.push(task);
        last = Some(cursor);
    }
    Ok(ListTasksResponse {
        tasks,
        next_page_token: match last {
            Some(c) if more => c.write(),
            _ => String::new(),
        },
        page_size: i32::try_from(size).unwrap_or(i32::MAX),
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}

/// When a SQL store counts its tasks and evicts, so that the bounds of [`StoreLimits`] and
/// [`EventLogLimits`](super::EventLogLimits) hold without a lock and a count in every call
/// (a lock that several replicas share serializes all their calls, and a count or an
/// eviction scan is as long as the table):
///
/// - a new task is inserted without counting while the store's estimate of the tasks held
///   (the count at its last pass, plus the tasks it created since, plus those it is creating)
///   is more than `4 × every` below `max_tasks`; closer, and whenever `max_tasks` itself is
///   at most `4 × every`, each insert counts under the lock and refuses when full, exactly;
/// - a pass (under the lock: drop the finished tasks past their age and past `max_finished`,
///   count what is left) runs after every `every` writes that create or finish a task, and
///   after any such write once the last pass is `interval` old; after every one of them when
///   `max_finished` is at most `4 × every`;
/// - the oldest event logs past their number go in a pass after every `every` new logs
///   (after each when the number is at most `4 × every`).
///
/// So a store alone on its database never holds more than `max_tasks`; finished tasks and
/// logs go over their bounds by fewer than `every` between passes. Several stores (replicas)
/// on one database each count only their own writes between passes: with R of them, the
/// tasks may exceed `max_tasks` by at most R × `every`, and the finished tasks and the logs
/// theirs by at most R × `every`. `every = 1` checks every write, as a single lock would.
///
/// [`StoreLimits`]: super::StoreLimits
#[derive(Debug)]
pub(super) struct Passes {
    every: usize,
    interval: std::time::Duration,
    counts: std::sync::Mutex<Counts>,
}

/// What a store knows of its tables since its last pass.
#[derive(Debug)]
struct Counts {
    /// Tasks held at the last count.
    tasks: usize,
    /// Tasks this store created since.
    created: usize,
    /// Inserts under way that may create a task (reserved before they run).
    creating: usize,
    /// Writes that created or finished a task since the last pass.
    writes: usize,
    /// When the last pass ran.
    last: std::time::Instant,
    /// Logs this store created since the last pass over the logs.
    logs: usize,
}

/// A put let through without counting: settled by [`Passes::put_done`].
#[derive(Debug)]
#[must_use]
pub(super) struct Reserved(());

impl Passes {
    /// Passes every `every` writes (at least 1) or `interval`; `tasks` held now.
    pub(super) fn new(every: usize, interval: std::time::Duration, tasks: usize) -> Self {
        Passes {
            every: every.max(1),
            interval,
            counts: std::sync::Mutex::new(Counts {
                tasks,
                created: 0,
                creating: 0,
                writes: 0,
                last: std::time::Instant::now(),
                logs: 0,
            }),
        }
    }

    /// These counts, passing every `every` writes or `interval`.
    #[cfg(feature = "sqlite")]
    pub(super) fn reconfigured(&self, every: usize, interval: std::time::Duration) -> Self {
        let tasks = {
            let c = self.counts();
            c.tasks + c.created
        };
        Passes::new(every, interval, tasks)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The margin below a bound within which every write is checked.
    fn margin(&self) -> usize {
        self.every.saturating_mul(4)
    }

    /// Whether a put may run without counting (far below `max_tasks`): then reserved until
    /// [`put_done`](Self::put_done).
    pub(super) fn reserve(&self, max_tasks: usize) -> Option<Reserved> {
        let mut c = self.counts();
        let estimate = c.tasks + c.created + c.creating;
        (estimate.saturating_add(self.margin()) < max_tasks).then(|| {
            c.creating += 1;
            Reserved(())
        })
    }

    /// Inserts under way that may create a task (a counting put adds them to its count).
    #[cfg(feature = "postgres")]
    pub(super) fn creating(&self) -> usize {
        self.counts().creating
    }

    /// A put done (`reserved` when it ran without counting): whether it `created` the task
    /// or `finished` it; whether a pass is due.
    pub(super) fn put_done(
        &self,
        reserved: Option<Reserved>,
        created: bool,
        finished: bool,
        max_finished: usize,
    ) -> bool {
        let mut c = self.counts();
        if reserved.is_some() {
            c.creating = c.creating.saturating_sub(1);
        }
        c.created += usize::from(created);
        c.writes += usize::from(created) + usize::from(finished);
        c.writes > 0
            && (c.writes >= self.every
                || max_finished <= self.margin()
                || c.last.elapsed() >= self.interval)
    }

    /// A counting put found `tasks` held, its own insert included.
    pub(super) fn counted(&self, tasks: usize) {
        let mut c = self.counts();
        c.tasks = tasks;
        c.created = 0;
    }

    /// A pass starts: the writes it covers (give them to [`passed`](Self::passed)).
    pub(super) fn pass_starts(&self) -> (usize, usize) {
        let mut c = self.counts();
        c.last = std::time::Instant::now();
        let covered = (c.writes, c.created);
        c.writes = 0;
        covered
    }

    /// A pass that started with `covered` ([`pass_starts`](Self::pass_starts)) left `tasks`.
    pub(super) fn passed(&self, covered: (usize, usize), tasks: usize) {
        let mut c = self.counts();
        c.tasks = tasks;
        // Creates since the pass's count stay counted (some twice: an overestimate, safe).
        c.created = c.created.saturating_sub(covered.1);
    }

    /// A pass failed: its writes are due again.
    pub(super) fn pass_failed(&self, covered: (usize, usize)) {
        self.counts().writes += covered.0;
    }

    /// This store created a log: whether a pass over the logs (at most `max_logs`) is due.
    pub(super) fn log_created(&self, max_logs: usize) -> bool {
        let mut c = self.counts();
        c.logs += 1;
        if c.logs >= self.every || max_logs <= self.margin() {
            c.logs = 0;
            return true;
        }
        false
    }
}
