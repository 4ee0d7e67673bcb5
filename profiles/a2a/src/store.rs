//! Where tasks are kept: the [`TaskStore`] trait and [`MemoryTaskStore`], bounded in the
//! number of tasks, with finished tasks evicted past a count or an age.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::types::{ListTasksRequest, ListTasksResponse, Task};

/// Why a task could not be stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The store holds as many unfinished tasks as it may.
    #[error("the task store is full")]
    Full,
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
    /// A page of tasks matching `query`, newest first, at most `max_page` of them.
    fn list(&self, query: &ListTasksRequest, max_page: usize) -> ListTasksResponse;
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

    fn list(&self, query: &ListTasksRequest, max_page: usize) -> ListTasksResponse {
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        let page_size = query
            .page_size
            .and_then(|n| usize::try_from(n).ok())
            .filter(|n| *n > 0)
            .unwrap_or(50)
            .min(max_page.max(1));
        let skip: usize = query.page_token.parse().unwrap_or(0);
        let matching: Vec<&Task> = inner
            .order
            .values()
            .rev()
            .filter_map(|id| inner.tasks.get(id).map(|held| &*held.task))
            .filter(|t| query.context_id.is_empty() || t.context_id == query.context_id)
            .filter(|t| query.status.is_none_or(|s| t.status.state == s))
            .collect();
        let total = matching.len();
        let tasks: Vec<Task> = matching
            .into_iter()
            .skip(skip)
            .take(page_size)
            .cloned()
            .collect();
        let next = skip + tasks.len();
        ListTasksResponse {
            tasks,
            next_page_token: if next < total {
                next.to_string()
            } else {
                String::new()
            },
            page_size: i32::try_from(page_size).unwrap_or(i32::MAX),
            total_size: i32::try_from(total).unwrap_or(i32::MAX),
        }
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
        let p = store.list(&q, 100);
        assert_eq!(p.total_size, 5);
        assert_eq!(p.tasks[0].id, "t4");
        let q2 = ListTasksRequest {
            page_token: p.next_page_token,
            ..q
        };
        assert_eq!(store.list(&q2, 100).tasks[0].id, "t2");
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
        let all = store.list(&ListTasksRequest::default(), 100);
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
}
