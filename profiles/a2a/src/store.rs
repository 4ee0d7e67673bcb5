//! Where tasks are kept: the [`TaskStore`] trait and [`MemoryTaskStore`], bounded in the
//! number of tasks, with finished tasks evicted past a count or an age.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::timestamp::parse_micros;
use crate::types::{ListTasksRequest, ListTasksResponse, Task};

/// Why a task could not be stored, or a listing not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
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
}

/// A store of tasks by id. Implement it to keep tasks elsewhere (a database); the server
/// writes a task's snapshot after each of its events.
pub trait TaskStore: Send + Sync + 'static {
    /// Inserts or replaces `task`.
    fn put(&self, task: Task) -> Result<(), StoreError>;
    /// The task of that id.
    fn get(&self, id: &str) -> Option<Task>;
    /// Forgets the task of that id (a turn that answered with a direct message).
    fn remove(&self, id: &str);
    /// A page of the tasks `caller` may see ([`Task::visible_to`]: its own, and those nobody
    /// owns) matching every filter of `query` (context, state, status time), the latest
    /// status first, at most `max_page` of them. Its `nextPageToken` is a cursor, not an
    /// offset: a task created between two pages does not move the next page.
    fn list(
        &self,
        query: &ListTasksRequest,
        caller: Option<&str>,
        max_page: usize,
    ) -> Result<ListTasksResponse, StoreError>;
}

/// The limits of a [`MemoryTaskStore`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// The most tasks held, finished or not; a new task beyond it is refused once no
    /// finished task can be evicted.
    pub max_tasks: usize,
    /// The most finished tasks held; the oldest is evicted first.
    pub max_finished: usize,
    /// How long a finished task is held.
    pub finished_ttl: Duration,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            max_tasks: 10_000,
            max_finished: 1_000,
            finished_ttl: Duration::from_secs(3600),
        }
    }
}

/// A held task, with its place in the insertion order.
struct Held {
    /// Its key in [`Inner::order`].
    seq: u64,
    /// Whether an entry of it is in [`Inner::finished`].
    finished: bool,
    /// Boxed: the table has room for more entries than it holds, and a task is a few
    /// hundred bytes before its strings.
    task: Box<Task>,
}

/// Every operation is at most logarithmic in the number of tasks held: a store at its limit
/// evicts on every `put`, so a scan of all tasks per eviction would make a full store's
/// cost per message grow with its size.
#[derive(Default)]
struct Inner {
    tasks: HashMap<String, Held>,
    /// Ids by insertion sequence (newest last), for listing and eviction.
    order: BTreeMap<u64, String>,
    /// The sequence numbers of finished tasks and when they finished, oldest first. A
    /// finished task removed with [`TaskStore::remove`] leaves its entry behind (`stale`
    /// counts them) until it reaches the front or more than half the entries are stale.
    finished: VecDeque<(u64, Instant)>,
    stale: usize,
    next_seq: u64,
}

impl Inner {
    /// How many finished tasks are held.
    fn finished_held(&self) -> usize {
        self.finished.len() - self.stale
    }

    /// Drops stale entries from the front of `finished`.
    fn skip_stale(&mut self) {
        while let Some((seq, _)) = self.finished.front() {
            if self.order.contains_key(seq) {
                break;
            }
            self.finished.pop_front();
            self.stale -= 1;
        }
    }

    /// Forgets the oldest finished task; false when none is held.
    fn evict_oldest_finished(&mut self) -> bool {
        self.skip_stale();
        let Some((seq, _)) = self.finished.pop_front() else {
            return false;
        };
        if let Some(id) = self.order.remove(&seq) {
            self.tasks.remove(&id);
        }
        true
    }
}

/// Tasks in memory, bounded by [`StoreLimits`].
#[derive(Default)]
pub struct MemoryTaskStore {
    limits: StoreLimits,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for MemoryTaskStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryTaskStore")
            .field("limits", &self.limits)
            .field("held", &self.len())
            .finish()
    }
}

impl MemoryTaskStore {
    /// An empty store with these limits.
    pub fn new(limits: StoreLimits) -> Self {
        MemoryTaskStore {
            limits,
            inner: Mutex::default(),
        }
    }

    /// How many tasks are held.
    pub fn len(&self) -> usize {
        self.lock().tasks.len()
    }

    /// True when none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn evict(&self, inner: &mut Inner, now: Instant) {
        loop {
            inner.skip_stale();
            let Some((_, at)) = inner.finished.front() else {
                return;
            };
            let old = now.saturating_duration_since(*at) > self.limits.finished_ttl;
            if !old && inner.finished_held() <= self.limits.max_finished {
                return;
            }
            inner.evict_oldest_finished();
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn put(&self, task: Task) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        self.evict(&mut inner, now);
        let done = task.status.state.is_terminal();
        if let Some(held) = inner.tasks.get_mut(&task.id) {
            let newly_done = done && !held.finished;
            held.finished |= done;
            *held.task = task;
            let seq = held.seq;
            if newly_done {
                inner.finished.push_back((seq, now));
            }
        } else {
            // Make room from the oldest finished task, or refuse.
            if inner.tasks.len() >= self.limits.max_tasks && !inner.evict_oldest_finished() {
                return Err(StoreError::Full);
            }
            let seq = inner.next_seq;
            inner.next_seq += 1;
            inner.order.insert(seq, task.id.clone());
            if done {
                inner.finished.push_back((seq, now));
            }
            inner.tasks.insert(
                task.id.clone(),
                Held {
                    seq,
                    finished: done,
                    task: Box::new(task),
                },
            );
        }
        self.evict(&mut inner, now);
        Ok(())
    }

    fn get(&self, id: &str) -> Option<Task> {
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        inner.tasks.get(id).map(|held| Task::clone(&held.task))
    }

    fn remove(&self, id: &str) {
        let mut inner = self.lock();
        let Some(held) = inner.tasks.remove(id) else {
            return;
        };
        inner.order.remove(&held.seq);
        if held.finished {
            inner.stale += 1;
            if inner.stale > inner.finished.len() / 2 {
                let Inner {
                    order, finished, ..
                } = &mut *inner;
                finished.retain(|(seq, _)| order.contains_key(seq));
                inner.stale = 0;
            }
        }
    }

    fn list(
        &self,
        query: &ListTasksRequest,
        caller: Option<&str>,
        max_page: usize,
    ) -> Result<ListTasksResponse, StoreError> {
        let page_size = query
            .page_size
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(50)
            .min(max_page.max(1));
        let after = match &query.status_timestamp_after {
            Some(t) => Some(parse_micros(t).ok_or(StoreError::BadTimestamp)?),
            None => None,
        };
        let cursor = match query.page_token.as_str() {
            "" => None,
            token => Some(Cursor::read(token).ok_or(StoreError::BadPageToken)?),
        };
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        let mut matching: Vec<(Cursor, &Task)> = inner
            .tasks
            .values()
            .map(|held| (Cursor::of(held), &*held.task))
            .filter(|(_, t)| t.visible_to(caller))
            .filter(|(_, t)| query.context_id.is_empty() || t.context_id == query.context_id)
            .filter(|(_, t)| query.status.is_none_or(|s| t.status.state == s))
            .filter(|(c, _)| after.is_none_or(|after| c.at > after))
            .collect();
        let total = matching.len();
        // The latest status first; ties by creation, newest first.
        matching.sort_unstable_by_key(|(c, _)| std::cmp::Reverse(*c));
        let rest = matching
            .into_iter()
            .filter(|(c, _)| cursor.is_none_or(|cursor| *c < cursor));
        let mut tasks = Vec::with_capacity(page_size.min(total));
        let mut last = None;
        let mut more = false;
        for (c, t) in rest {
            if tasks.len() == page_size {
                more = true;
                break;
            }
            tasks.push(t.clone());
            last = Some(c);
        }
        Ok(ListTasksResponse {
            tasks,
            next_page_token: match last {
                Some(c) if more => c.write(),
                _ => String::new(),
            },
            page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        })
    }
}

/// Where a listing page ends: a task's status time (microseconds since the epoch; 0 when
/// it has none) and its place in the insertion order. Ordered as the listing is, so the next
/// page is the tasks before the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Cursor {
    at: i64,
    seq: u64,
}

impl Cursor {
    fn of(held: &Held) -> Self {
        Cursor {
            at: held
                .task
                .status
                .timestamp
                .as_deref()
                .and_then(parse_micros)
                .unwrap_or(0),
            seq: held.seq,
        }
    }

    /// The token: both numbers, in hex.
    fn write(self) -> String {
        format!("{:x}.{:x}", self.at, self.seq)
    }

    fn read(token: &str) -> Option<Self> {
        let (at, seq) = token.split_once('.')?;
        Some(Cursor {
            at: i64::from_str_radix(at, 16).ok()?,
            seq: u64::from_str_radix(seq, 16).ok()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{TaskState, TaskStatus};

    fn task(id: &str, state: TaskState) -> Task {
        Task {
            id: id.into(),
            context_id: "c".into(),
            status: TaskStatus {
                state,
                ..TaskStatus::default()
            },
            ..Task::default()
        }
    }

    #[test]
    fn finished_tasks_are_evicted_past_the_count() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 100,
            max_finished: 2,
            finished_ttl: Duration::from_secs(60),
        });
        for i in 0..5 {
            assert_eq!(
                store.put(task(&format!("t{i}"), TaskState::Completed)),
                Ok(())
            );
        }
        assert_eq!(store.len(), 2);
        assert!(store.get("t0").is_none() && store.get("t4").is_some());
    }

    #[test]
    fn finished_tasks_are_evicted_past_the_age() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 100,
            max_finished: 100,
            finished_ttl: Duration::ZERO,
        });
        assert_eq!(store.put(task("done", TaskState::Completed)), Ok(()));
        assert_eq!(store.put(task("running", TaskState::Working)), Ok(()));
        std::thread::sleep(Duration::from_millis(2));
        assert!(store.get("done").is_none());
        assert!(store.get("running").is_some());
    }

    #[test]
    fn unfinished_tasks_fill_the_store_to_its_limit() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 2,
            max_finished: 10,
            finished_ttl: Duration::from_secs(60),
        });
        assert_eq!(store.put(task("a", TaskState::Working)), Ok(()));
        assert_eq!(store.put(task("b", TaskState::Completed)), Ok(()));
        // The finished one makes room.
        assert_eq!(store.put(task("c", TaskState::Working)), Ok(()));
        assert!(store.get("b").is_none());
        assert_eq!(
            store.put(task("d", TaskState::Working)),
            Err(StoreError::Full)
        );
        // Updating a held task is always allowed.
        assert_eq!(store.put(task("a", TaskState::Completed)), Ok(()));
    }

    #[test]
    fn listing_pages_newest_first() {
        let store = MemoryTaskStore::default();
        for i in 0..5 {
            assert_eq!(
                store.put(task(&format!("t{i}"), TaskState::Working)),
                Ok(())
            );
        }
        let q = ListTasksRequest {
            page_size: Some(2),
            ..ListTasksRequest::default()
        };
        let p = store.list(&q, None, 100).unwrap_or_default();
        assert_eq!(p.total_size, 5);
        assert_eq!(p.tasks[0].id, "t4");
        let q2 = ListTasksRequest {
            page_token: p.next_page_token,
            ..q
        };
        assert_eq!(
            store.list(&q2, None, 100).unwrap_or_default().tasks[0].id,
            "t2"
        );
    }

    #[test]
    fn removed_finished_tasks_leave_the_counts_right_and_the_memory_bounded() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 100,
            max_finished: 3,
            finished_ttl: Duration::from_secs(60),
        });
        for i in 0..10_000 {
            let id = format!("gone{i}");
            assert_eq!(store.put(task(&id, TaskState::Completed)), Ok(()));
            store.remove(&id);
            let inner = store.lock();
            assert!(
                inner.finished.len() <= 8,
                "{} entries",
                inner.finished.len()
            );
            assert_eq!(inner.finished_held(), 0);
        }
        assert!(store.is_empty());
        // Removed ones do not count towards `max_finished`: the three kept are the newest.
        for id in ["a", "b", "c", "d"] {
            assert_eq!(store.put(task(id, TaskState::Completed)), Ok(()));
        }
        store.remove("c");
        assert_eq!(store.put(task("e", TaskState::Failed)), Ok(()));
        let held: Vec<bool> = ["a", "b", "d", "e"]
            .iter()
            .map(|id| store.get(id).is_some())
            .collect();
        assert_eq!(held, [false, true, true, true]);
        // A removed id comes back as a new task, newest in the listing.
        assert_eq!(store.put(task("a", TaskState::Working)), Ok(()));
        let all = store
            .list(&ListTasksRequest::default(), None, 100)
            .unwrap_or_default();
        let ids: Vec<&str> = all.tasks.iter().map(|t| t.id.as_str()).collect();
        assert_eq!(ids, ["a", "e", "d", "b"]);
    }

    #[test]
    fn a_task_finishing_twice_is_counted_once() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 100,
            max_finished: 2,
            finished_ttl: Duration::from_secs(60),
        });
        assert_eq!(store.put(task("x", TaskState::Completed)), Ok(()));
        assert_eq!(store.put(task("x", TaskState::Completed)), Ok(()));
        assert_eq!(store.put(task("y", TaskState::Completed)), Ok(()));
        assert!(store.get("x").is_some() && store.get("y").is_some());
        assert_eq!(store.lock().finished.len(), 2);
    }

    fn at(id: &str, context: &str, time: &str) -> Task {
        Task {
            context_id: context.into(),
            status: TaskStatus {
                state: TaskState::Working,
                message: None,
                timestamp: Some(time.into()),
            },
            ..task(id, TaskState::Working)
        }
    }

    fn ids(page: &ListTasksResponse) -> Vec<&str> {
        page.tasks.iter().map(|t| t.id.as_str()).collect()
    }

    #[test]
    fn pages_are_cursors_stable_under_inserts() {
        let store = MemoryTaskStore::default();
        for i in 0..4 {
            let time = format!("2026-01-01T00:00:0{i}Z");
            assert_eq!(store.put(at(&format!("t{i}"), "c", &time)), Ok(()));
        }
        let q = ListTasksRequest {
            page_size: Some(2),
            ..ListTasksRequest::default()
        };
        let first = store.list(&q, None, 100).unwrap_or_default();
        assert_eq!(ids(&first), ["t3", "t2"]);
        // A task created between two pages: it is newer than the cursor, not on page 2.
        assert_eq!(store.put(at("new", "c", "2026-01-01T00:00:09Z")), Ok(()));
        let q2 = ListTasksRequest {
            page_token: first.next_page_token.clone(),
            ..q.clone()
        };
        let second = store.list(&q2, None, 100).unwrap_or_default();
        assert_eq!(ids(&second), ["t1", "t0"]);
        assert_eq!(second.next_page_token, "", "the last page");
        let bad = ListTasksRequest {
            page_token: "12".into(),
            ..q
        };
        assert_eq!(store.list(&bad, None, 100), Err(StoreError::BadPageToken));
    }

    #[test]
    fn every_filter_holds() {
        let store = MemoryTaskStore::default();
        assert_eq!(store.put(at("a", "c1", "2026-01-01T00:00:01Z")), Ok(()));
        assert_eq!(store.put(at("b", "c2", "2026-01-01T00:00:02Z")), Ok(()));
        assert_eq!(store.put(at("c", "c1", "2026-01-01T00:00:03Z")), Ok(()));
        let mut done = at("d", "c1", "2026-01-01T00:00:04Z");
        done.status.state = TaskState::Completed;
        assert_eq!(store.put(done), Ok(()));
        let list = |q: ListTasksRequest| store.list(&q, None, 100);
        let context = list(ListTasksRequest {
            context_id: "c1".into(),
            ..ListTasksRequest::default()
        })
        .unwrap_or_default();
        assert_eq!(ids(&context), ["d", "c", "a"]);
        let none = list(ListTasksRequest {
            context_id: "no-such-context".into(),
            ..ListTasksRequest::default()
        })
        .unwrap_or_default();
        assert_eq!((none.tasks.len(), none.total_size), (0, 0));
        let state = list(ListTasksRequest {
            status: Some(TaskState::Completed),
            ..ListTasksRequest::default()
        })
        .unwrap_or_default();
        assert_eq!(ids(&state), ["d"]);
        // After 00:00:02 (in another offset): strictly later ones only.
        let after = list(ListTasksRequest {
            status_timestamp_after: Some("2026-01-01T01:00:02+01:00".into()),
            ..ListTasksRequest::default()
        })
        .unwrap_or_default();
        assert_eq!(ids(&after), ["d", "c"]);
        assert_eq!(
            list(ListTasksRequest {
                status_timestamp_after: Some("yesterday".into()),
                ..ListTasksRequest::default()
            }),
            Err(StoreError::BadTimestamp)
        );
    }

    #[test]
    fn a_caller_lists_its_own_tasks_and_the_unowned() {
        let store = MemoryTaskStore::default();
        let owned = |id: &str, owner: Option<&str>| Task {
            owner: owner.map(str::to_owned),
            ..at(id, "c", "2026-01-01T00:00:01Z")
        };
        for t in [
            owned("a1", Some("a")),
            owned("b1", Some("b")),
            owned("n", None),
        ] {
            assert_eq!(store.put(t), Ok(()));
        }
        let seen = |caller| {
            let page = store
                .list(&ListTasksRequest::default(), caller, 100)
                .unwrap_or_default();
            let mut ids: Vec<String> = page.tasks.into_iter().map(|t| t.id).collect();
            ids.sort();
            (ids, page.total_size)
        };
        assert_eq!(seen(Some("a")), (vec!["a1".to_owned(), "n".to_owned()], 2));
        assert_eq!(seen(Some("b")), (vec!["b1".to_owned(), "n".to_owned()], 2));
        assert_eq!(seen(None), (vec!["n".to_owned()], 1));
    }
}
