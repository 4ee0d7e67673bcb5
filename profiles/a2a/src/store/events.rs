//! Event logs for resumable streams: the [`EventLog`] trait (append a task's event, read the
//! events after an event id, trim) and [`MemoryEventLog`], bounded in tasks and in events per
//! task. A log belongs to one task and one owner: a read names both, so that an event is
//! never replayed to another task's stream or to a caller who may not see the task.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use super::{ready, StoreError, StoreFuture};
use crate::types::StreamResponse;

/// One event of a task's log, with its id: 1 for the task's first event, one more for each
/// next (ids are never reused, trimmed or not).
#[derive(Debug, Clone, PartialEq)]
pub struct LoggedEvent {
    /// Its id in its task's log.
    pub id: u64,
    /// The event, shared by the log that keeps it and the streams that send it (one copy).
    pub event: Arc<StreamResponse>,
}

/// The event logs of tasks' streams, read back to resume a stream after a given event.
/// Methods return [`StoreFuture`]s for the reasons [`TaskStore`](super::TaskStore)'s do.
pub trait EventLog: Send + Sync + 'static {
    /// Appends `event` to task `task_id`'s log, which `owner` owns (`None`: nobody; the
    /// owner of a task's first event owns its log, and an append naming another is refused
    /// with [`StoreError::NotOwner`]); the event's id. Past the log's bound, its oldest
    /// events are trimmed.
    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64>;
    /// At most `max` events of task `task_id` after event `after` (0: from the first), in
    /// order, to `caller`. [`StoreError::NotFound`] when there is no log of that task that
    /// `caller` may see (its own, or one nobody owns); [`StoreError::Trimmed`] when events
    /// after `after` were trimmed (the reader missed some: it reads the task instead).
    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>>;
    /// Drops the events of task `task_id` up to and including `through`; how many.
    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize>;
    /// Forgets task `task_id`'s log.
    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()>;
    /// Whether every future this log returns is ready at its first poll (it never waits:
    /// memory). The server then appends an agent's event in place and sends it at once;
    /// otherwise a task of the server's appends a task's events in order, and each is sent
    /// to live subscribers once appended. False unless overridden.
    fn answers_at_once(&self) -> bool {
        false
    }
    /// Whether this log has a log of task `task_id` (true, the default, when it cannot tell
    /// at once). With a log that [answers at once](Self::answers_at_once), the server does not
    /// log the events of a task that no stream follows and whose log this is not: no one
    /// holds an id of that task's to resume after.
    fn holds(&self, task_id: &str) -> bool {
        let _ = task_id;
        true
    }
    /// News of events appended to task `task_id`'s log by any process (other replicas
    /// sharing the log included), for a stream here whose task runs elsewhere: `None` (the
    /// default) when this log has no other writer than this process, whose streams get its
    /// events live. A stream that has one reads the log after its last event each time the
    /// watch says so.
    fn watch(&self, task_id: &str) -> Option<LogWatch> {
        let _ = task_id;
        None
    }
    /// The id of the latest event of task `task_id`'s log that `caller` may see (0: none
    /// yet), where a stream that starts with the task as it is follows the log from.
    /// [`StoreError::NotFound`] as [`read_after`](Self::read_after). The default reads the
    /// whole log (and fails with [`StoreError::Trimmed`] once it was trimmed); a log with a
    /// [`watch`](Self::watch) overrides it.
    fn last_id<'a>(&'a self, task_id: &'a str, caller: Option<&'a str>) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let events = self.read_after(task_id, caller, 0, usize::MAX).await?;
            Ok(events.last().map_or(0, |e| e.id))
        })
    }
}

/// What a stream follows a task's log with when the task's events may be appended by another
/// process ([`EventLog::watch`]): woken when the log tells of a new event of the task, and,
/// while the log cannot tell (its listening connection is down), every `poll` instead.
#[derive(Debug, Clone)]
pub struct LogWatch {
    /// Changes when the log hears of a new event of the task (its value: the latest id
    /// heard of, or 0 after the log reconnected and may have missed some).
    pub appended: tokio::sync::watch::Receiver<u64>,
    /// Whether the log hears of new events now; while false, the stream polls.
    pub listening: tokio::sync::watch::Receiver<bool>,
    /// How often a stream reads the log while the log does not listen.
    pub poll: std::time::Duration,
}

impl LogWatch {
    /// Returns once the log may have events not yet read: at the next news of one, or,
    /// while the log does not listen (or once it stopped), after `poll`.
    pub async fn changed(&mut self) {
        let listening = *self.listening.borrow_and_update();
        if !listening {
            tokio::time::sleep(self.poll).await;
            return;
        }
        tokio::select! {
            r = self.appended.changed() => {
                if r.is_err() {
                    // The log is gone: poll from now on.
                    self.listening = tokio::sync::watch::channel(false).1;
                }
            }
            r = self.listening.changed() => {
                if r.is_err() {
                    self.listening = tokio::sync::watch::channel(false).1;
                }
            }
        }
    }
}

/// The bounds of a [`MemoryEventLog`] (and of the SQLite store's logs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventLogLimits {
    /// The most tasks with a log; a new one beyond it forgets the oldest log (the first
    /// created).
    pub max_tasks: usize,
    /// The most events kept per task; the oldest are trimmed past it.
    pub max_events: usize,
}

impl Default for EventLogLimits {
    /// 1 024 tasks, 64 events each (as many as a parked stream keeps).
    fn default() -> Self {
        EventLogLimits {
            max_tasks: 1024,
            max_events: 64,
        }
    }
}

/// One task's log.
struct Log {
    owner: Option<String>,
    /// The id of `events[0]` (or the next one, when empty).
    first: u64,
    events: VecDeque<Arc<StreamResponse>>,
}

impl Log {
    fn next(&self) -> u64 {
        self.first + self.events.len() as u64
    }
}

#[derive(Default)]
struct Logs {
    logs: HashMap<String, Log>,
    /// Task ids in the order their logs were created, oldest first, for eviction.
    order: VecDeque<String>,
}

/// Event logs in memory, bounded by [`EventLogLimits`].
#[derive(Default)]
pub struct MemoryEventLog {
    limits: EventLogLimits,
    inner: Mutex<Logs>,
}

impl std::fmt::Debug for MemoryEventLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryEventLog")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// Whether `caller` may read a log `owner` owns.
pub(crate) fn may_read(owner: Option<&str>, caller: Option<&str>) -> bool {
    owner.is_none() || owner == caller
}

impl MemoryEventLog {
    /// Empty logs with these limits.
    pub fn new(limits: EventLogLimits) -> Self {
        MemoryEventLog {
            limits,
            inner: Mutex::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Logs> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// [`EventLog::append`], at once.
    pub fn append_now(
        &self,
        task_id: &str,
        owner: Option<&str>,
        event: Arc<StreamResponse>,
    ) -> Result<u64, StoreError> {
        let mut inner = self.lock();
        if !inner.logs.contains_key(task_id) {
            while inner.logs.len() >= self.limits.max_tasks.max(1) {
                let Some(oldest) = inner.order.pop_front() else {
                    break;
                };
                inner.logs.remove(&oldest);
            }
            inner.order.push_back(task_id.to_owned());
            inner.logs.insert(
                task_id.to_owned(),
                Log {
                    owner: owner.map(str::to_owned),
                    first: 1,
                    events: VecDeque::new(),
                },
            );
        }
        let log = inner.logs.get_mut(task_id).ok_or(StoreError::NotFound)?;
        if log.owner.as_deref() != owner {
            return Err(StoreError::NotOwner);
        }
        let id = log.next();
        log.events.push_back(event);
        while log.events.len() > self.limits.max_events.max(1) {
            log.events.pop_front();
            log.first += 1;
        }
        Ok(id)
    }

    /// [`EventLog::read_after`], at once.
    pub fn read_after_now(
        &self,
        task_id: &str,
        caller: Option<&str>,
        after: u64,
        max: usize,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        let inner = self.lock();
        let log = inner
            .logs
            .get(task_id)
            .filter(|l| may_read(l.owner.as_deref(), caller))
            .ok_or(StoreError::NotFound)?;
        if after.saturating_add(1) < log.first {
            return Err(StoreError::Trimmed);
        }
        let skip = usize::try_from(after.saturating_add(1) - log.first).unwrap_or(usize::MAX);
        Ok(log
            .events
            .iter()
            .enumerate()
            .skip(skip)
            .take(max)
            .map(|(i, e)| LoggedEvent {
                id: log.first + i as u64,
                event: Arc::clone(e),
            })
            .collect())
    }

    /// [`EventLog::trim`], at once.
    pub fn trim_now(&self, task_id: &str, through: u64) -> usize {
        let mut inner = self.lock();
        let Some(log) = inner.logs.get_mut(task_id) else {
            return 0;
        };
        let mut dropped = 0;
        while log.first <= through && log.events.pop_front().is_some() {
            log.first += 1;
            dropped += 1;
        }
        dropped
    }

    /// [`EventLog::forget`], at once.
    pub fn forget_now(&self, task_id: &str) {
        let mut inner = self.lock();
        if inner.logs.remove(task_id).is_some() {
            inner.order.retain(|id| id != task_id);
        }
    }
}

impl EventLog for MemoryEventLog {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn holds(&self, task_id: &str) -> bool {
        self.lock().logs.contains_key(task_id)
    }

    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64> {
        ready(self.append_now(task_id, owner, event))
    }

    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>> {
        ready(self.read_after_now(task_id, caller, after, max))
    }

    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize> {
        ready(Ok(self.trim_now(task_id, through)))
    }

    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        self.forget_now(task_id);
        ready(Ok(()))
    }
}
