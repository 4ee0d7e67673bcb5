//! Where tasks and their streams' events are kept: the asynchronous [`TaskStore`] and
//! [`EventLog`] traits, the [`Lease`]s that tie a
//! working task to the process running it, [`MemoryTaskStore`] (the default, bounded in the
//! number of tasks, finished tasks evicted past a count or an age) and, with the `sqlite`
//! feature, [`SqliteTaskStore`](crate::SqliteTaskStore) (one file that outlives the process);
//! with the `postgres` feature, [`PostgresTaskStore`](crate::PostgresTaskStore) (tables that
//! several replicas share); with the `redis` feature, [`RedisTaskStore`](crate::RedisTaskStore)
//! (keys in a Redis or Valkey that several replicas share).
//!
//! # Why boxed futures
//!
//! Every method returns a [`StoreFuture`], a pinned, boxed, `Send` future, rather than being
//! an `async fn` in the trait: the server holds its store as `Arc<dyn TaskStore>` (chosen at
//! run time, `--store memory` or `--store sqlite:PATH`), and a trait with `async fn` methods
//! cannot be a trait object; the explicit `Send` bound lets the server await a store from
//! any of tokio's worker threads. A store that talks to a database does its blocking work
//! off the runtime (the SQLite store on a thread of its own), so that a slow disk never
//! stalls other connections. The one allocation per call is small beside a database round
//! trip; the memory store answers with a future that is ready at once, which the server
//! polls in place without a task of its own.

#[cfg(all(test, any(feature = "sqlite", feature = "postgres", feature = "redis")))]
mod bound_checks;
mod events;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_listen;
#[cfg(feature = "postgres")]
mod postgres_pool;
#[cfg(feature = "redis")]
mod redis;
#[cfg(feature = "redis")]
mod redis_events;
#[cfg(feature = "redis")]
mod redis_listen;
#[cfg(feature = "redis")]
mod redis_wire;
#[cfg(any(feature = "sqlite", feature = "postgres", feature = "redis"))]
mod sql;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod sql_passes;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(any(feature = "postgres", feature = "redis"))]
mod watchers;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

pub use events::{EventLog, EventLogLimits, LogWatch, LoggedEvent, MemoryEventLog};
pub use memory::{MemoryTaskStore, StoreLimits};
#[cfg(feature = "postgres")]
pub use postgres::{PostgresOptions, PostgresTaskStore};
#[cfg(feature = "postgres")]
pub use postgres_pool::PostgresError;
#[cfg(feature = "redis")]
pub use redis::{RedisOptions, RedisTaskStore};
#[cfg(feature = "redis")]
pub use redis_wire::RedisError;
#[cfg(feature = "sqlite")]
pub use sqlite::{SqliteError, SqliteTaskStore};

use crate::push::TaskPushNotificationConfig;
use crate::types::{
    ListTasksRequest, ListTasksResponse, Message, Role, Task, TaskState, TaskStatus,
};

/// What a [`TaskStore`] method returns: a boxed future, `Send`, that borrows its arguments.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store could not do what it was asked.
#[derive(Debug, Clone, thiserror::Error)]
pub enum StoreError {
    /// The store holds as many unfinished tasks as it may.
    #[error("the task store is full")]
    Full,
    /// A `ListTasks` page token this store did not give.
    #[error("the page token is not one this server gave")]
    BadPageToken,
    /// A `ListTasks` `statusTimestampAfter` that is not an RFC 3339 date-time.
    #[error("statusTimestampAfter is not an RFC 3339 date-time")]
    BadTimestamp,
    /// No such task (or event log), or none the caller may see.
    #[error("no such task")]
    NotFound,
    /// An event log read after an event id whose next events were trimmed.
    #[error("the events after that id are no longer kept")]
    Trimmed,
    /// An event appended to a task's log by a caller who does not own it.
    #[error("the task's event log has another owner")]
    NotOwner,
    /// The store's backend failed (a database error, a row that does not decode).
    #[error("the task store failed: {0}")]
    Backend(#[source] Arc<dyn std::error::Error + Send + Sync>),
}

impl PartialEq for StoreError {
    /// Backend errors are equal when they are the same error (one `Arc`).
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (StoreError::Backend(a), StoreError::Backend(b)) => Arc::ptr_eq(a, b),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

/// A claim on a working task by the process running its turn: until `until`, `holder`
/// (one id per server, see [`LeaseConfig`]) is working on it. The holder renews its leases
/// while its turns run; a task whose lease lapsed (its process died, or stopped renewing)
/// is failed by [`TaskStore::fail_lapsed`] rather than left `working` forever.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// Who holds it: the id of the server running the turn.
    pub holder: String,
    /// When it lapses unless renewed.
    pub until: SystemTime,
}

/// How long a lease lasts and how often a server renews its own and sweeps for lapsed ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseConfig {
    /// How long a lease lasts from its last renewal: a task of a process that died is failed
    /// between this and this plus `renew_every` after the process's last renewal.
    pub duration: Duration,
    /// How often a server renews the leases of its running turns and fails the tasks whose
    /// lease lapsed. Less than `duration` (the server uses at most half of it), so that a
    /// live server's leases never lapse between two renewals.
    pub renew_every: Duration,
}

impl Default for LeaseConfig {
    /// 30 s leases, renewed every 10 s.
    fn default() -> Self {
        LeaseConfig {
            duration: Duration::from_secs(30),
            renew_every: Duration::from_secs(10),
        }
    }
}

impl LeaseConfig {
    /// The interval the server really renews at: `renew_every`, at most half of `duration`
    /// and at least a millisecond.
    pub fn renew_interval(&self) -> Duration {
        self.renew_every
            .min(self.duration / 2)
            .max(Duration::from_millis(1))
    }
}

/// A store of tasks by id, with their history, artifacts and leases. Implement it to keep
/// tasks elsewhere (a database); the server writes a task's snapshot after each of its
/// events, in order, and reads it for `GetTask`, `ListTasks`, continuations and
/// subscriptions. Every method may be called from any runtime thread at once.
pub trait TaskStore: Send + Sync + 'static {
    /// Inserts or replaces `task`. With `lease`, the task is leased by it (a turn starts);
    /// without, a task in a state that has a turn running (submitted, working) keeps the
    /// lease it has, and one in any other state (finished, or waiting for input or
    /// authorization) holds none.
    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()>;
    /// The task of that id.
    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>>;
    /// Forgets the task of that id (a turn that answered with a direct message).
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()>;
    /// A page of the tasks `caller` may see ([`Task::visible_to`]: its own, and those nobody
    /// owns) matching every filter of `query` (context, state, status time), the latest
    /// status first, at most `max_page` of them. Its `nextPageToken` is a cursor, not an
    /// offset: a task created between two pages does not move the next page.
    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse>;
    /// Extends to `lease.until` the leases `lease.holder` holds on the tasks `ids` (those it
    /// does not hold, or that hold none, are left alone); how many were renewed.
    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize>;
    /// Fails every task in a state with a turn running whose lease lapsed before `now` and is
    /// not `holder`'s own (a server never fails its own turns, which it renews): its status
    /// becomes `failed` with an agent message saying `reason`, its lease is dropped. The
    /// tasks failed, as stored.
    fn fail_lapsed<'a>(
        &'a self,
        now: SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>>;
    /// Whether every future this store returns is ready at its first poll (it never waits:
    /// memory). The server then polls a turn's writes in place, in order, with no task and
    /// no copy of the task; otherwise each write goes to a task of its own, and the server
    /// keeps a copy of the latest not yet done for reads. False unless overridden.
    fn answers_at_once(&self) -> bool {
        false
    }
    /// Asks the process running task `id`'s turn, wherever it is, to cancel it: true when
    /// asked (a store other processes share, which tells them through
    /// [`cancel_requests`](Self::cancel_requests)), false (the default) when this store has
    /// no other process to ask (the server then cancels a task no turn of its own runs in
    /// the store itself).
    fn request_cancel<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let _ = id;
        ready(Ok(false))
    }
    /// The ids of tasks whose cancellation a process asked for with
    /// [`request_cancel`](Self::request_cancel) (this one included): the server cancels those
    /// whose turn it runs. `None` (the default) for a store no other process shares.
    fn cancel_requests(&self) -> Option<tokio::sync::broadcast::Receiver<String>> {
        None
    }
}

/// Where a server's push notification configs are kept beyond its memory
/// ([`A2aServer::push_config_store`](crate::A2aServer::push_config_store)): the server keeps
/// them in memory as it always does (bounded by [`PushLimits`](crate::PushLimits)) and writes
/// each task's list through to this store when it changes, and reads a task's list from it
/// when its memory has none (after a restart, or on another replica).
pub trait PushConfigStore: Send + Sync + 'static {
    /// Replaces task `task_id`'s configs with `configs` (none: the task has none left).
    fn save_configs<'a>(
        &'a self,
        task_id: &'a str,
        configs: Vec<TaskPushNotificationConfig>,
    ) -> StoreFuture<'a, ()>;
    /// Task `task_id`'s configs (none when it has none).
    fn load_configs<'a>(
        &'a self,
        task_id: &'a str,
    ) -> StoreFuture<'a, Vec<TaskPushNotificationConfig>>;
}

/// Whether a task in `state` has a turn running and so may hold a lease.
pub(crate) fn leasable(state: TaskState) -> bool {
    !state.is_terminal() && !state.is_interrupted()
}

/// `task` failed because its lease lapsed: the failed status, with `reason` as an agent
/// message (also added to its history), stamped now.
pub(crate) fn lapse(task: &mut Task, reason: &str) {
    let message = Message::text(
        Role::Agent,
        format!("lease-lapsed-{}", task.id),
        reason.to_owned(),
    );
    task.history.push(message.clone());
    task.status = TaskStatus {
        state: TaskState::Failed,
        message: Some(message),
        timestamp: Some(crate::types::now_rfc3339()),
    };
}

/// A future that is ready at once with `value`: what the memory store answers with.
pub(crate) fn ready<'a, T: Send + 'a>(value: Result<T, StoreError>) -> StoreFuture<'a, T> {
    Box::pin(std::future::ready(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_renew_interval_is_at_most_half_the_lease() {
        let config = |d, r| LeaseConfig {
            duration: Duration::from_millis(d),
            renew_every: Duration::from_millis(r),
        };
        assert_eq!(
            config(1000, 100).renew_interval(),
            Duration::from_millis(100)
        );
        assert_eq!(
            config(1000, 500).renew_interval(),
            Duration::from_millis(500)
        );
        assert_eq!(
            config(1000, 501).renew_interval(),
            Duration::from_millis(500)
        );
        assert_eq!(
            config(1000, 5000).renew_interval(),
            Duration::from_millis(500)
        );
        assert_eq!(config(0, 0).renew_interval(), Duration::from_millis(1));
    }

    #[test]
    fn backend_errors_are_equal_only_to_themselves() {
        let e: Arc<dyn std::error::Error + Send + Sync> = Arc::new(std::fmt::Error);
        let a = StoreError::Backend(Arc::clone(&e));
        assert_eq!(a, StoreError::Backend(e));
        assert_ne!(a, StoreError::Backend(Arc::new(std::fmt::Error)));
        assert_eq!(StoreError::Full, StoreError::Full);
        assert_ne!(StoreError::Full, StoreError::BadPageToken);
    }
}
