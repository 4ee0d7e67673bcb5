//! Where tasks are kept: the [`TaskStore`] trait and [`MemoryTaskStore`], bounded in the
//! number of tasks, with finished tasks evicted past a count or an age.

use std::collections::{HashMap, VecDeque};
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

#[derive(Default)]
struct Inner {
    /// Boxed: the table has room for more entries than it holds, and a task is a few
    /// hundred bytes before its strings.
    tasks: HashMap<String, Box<Task>>,
    /// Insertion order (newest last), for listing.
    order: VecDeque<String>,
    /// Finished tasks and when they finished, oldest first.
    finished: VecDeque<(String, Instant)>,
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
        while let Some((id, at)) = inner.finished.front() {
            let old = now.saturating_duration_since(*at) > self.limits.finished_ttl;
            if !old && inner.finished.len() <= self.limits.max_finished {
                break;
            }
            let id = id.clone();
            inner.finished.pop_front();
            inner.tasks.remove(&id);
            inner.order.retain(|o| *o != id);
        }
    }
}

impl TaskStore for MemoryTaskStore {
    fn put(&self, task: Task) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        self.evict(&mut inner, now);
        let done = task.status.state.is_terminal();
        let id = task.id.clone();
        match inner.tasks.get(&id) {
            Some(old) => {
                let was_done = old.status.state.is_terminal();
                if done && !was_done {
                    inner.finished.push_back((id.clone(), now));
                }
            }
            None => {
                if inner.tasks.len() >= self.limits.max_tasks {
                    // Make room from the oldest finished task, or refuse.
                    let Some((old, _)) = inner.finished.pop_front() else {
                        return Err(StoreError::Full);
                    };
                    inner.tasks.remove(&old);
                    inner.order.retain(|o| *o != old);
                }
                inner.order.push_back(id.clone());
                if done {
                    inner.finished.push_back((id.clone(), now));
                }
            }
        }
        match inner.tasks.get_mut(&id) {
            Some(held) => **held = task,
            None => {
                inner.tasks.insert(id, Box::new(task));
            }
        }
        self.evict(&mut inner, now);
        Ok(())
    }

    fn get(&self, id: &str) -> Option<Task> {
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        inner.tasks.get(id).map(|t| Task::clone(t))
    }

    fn remove(&self, id: &str) {
        let mut inner = self.lock();
        inner.tasks.remove(id);
        inner.order.retain(|o| o != id);
        inner.finished.retain(|(o, _)| o != id);
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
            .iter()
            .rev()
            .filter_map(|id| inner.tasks.get(id).map(|t| &**t))
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
}
