//! [`MemoryTaskStore`]: tasks in memory, bounded in the number of tasks, with finished tasks
//! evicted past a count or an age. Every call is answered at once (a ready future).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::{lapse, leasable, ready, Lease, StoreError, StoreFuture, TaskStore};
use crate::timestamp::parse_micros;
use crate::types::{ListTasksRequest, ListTasksResponse, Task};

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
    /// Its lease, while a turn of it runs (boxed: most held tasks have none).
    lease: Option<Box<Lease>>,
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

/// The store's work, done at once; the [`TaskStore`] methods wrap these in ready futures.
impl MemoryTaskStore {
    /// [`TaskStore::put`], at once.
    pub fn put_now(&self, task: Task, lease: Option<Lease>) -> Result<(), StoreError> {
        let now = Instant::now();
        let mut inner = self.lock();
        self.evict(&mut inner, now);
        let done = task.status.state.is_terminal();
        let keeps_lease = leasable(task.status.state);
        let lease = lease.filter(|_| keeps_lease).map(Box::new);
        if let Some(held) = inner.tasks.get_mut(&task.id) {
            let newly_done = done && !held.finished;
            held.finished |= done;
            *held.task = task;
            if lease.is_some() || !keeps_lease {
                held.lease = lease;
            }
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
                    lease,
                },
            );
        }
        self.evict(&mut inner, now);
        Ok(())
    }

    /// [`TaskStore::get`], at once.
    pub fn get_now(&self, id: &str) -> Option<Task> {
        let mut inner = self.lock();
        self.evict(&mut inner, Instant::now());
        inner.tasks.get(id).map(|held| Task::clone(&held.task))
    }

    /// [`TaskStore::remove`], at once.
    pub fn remove_now(&self, id: &str) {
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

    /// [`TaskStore::list`], at once.
    pub fn list_now(
        &self,
        query: &ListTasksRequest,
        caller: Option<&str>,
        max_page: usize,
    ) -> Result<ListTasksResponse, StoreError> {
        let Page {
            size: page_size,
            after,
            cursor,
        } = Page::of(query, max_page)?;
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

impl MemoryTaskStore {
    /// [`TaskStore::renew`], at once.
    pub fn renew_now(&self, lease: &Lease, ids: &[String]) -> usize {
        let mut inner = self.lock();
        let mut renewed = 0;
        for id in ids {
            let held = inner.tasks.get_mut(id).and_then(|h| h.lease.as_deref_mut());
            if let Some(held) = held.filter(|l| l.holder == lease.holder) {
                held.until = lease.until;
                renewed += 1;
            }
        }
        renewed
    }

    /// [`TaskStore::fail_lapsed`], at once. It looks at every task held: a sweep runs once
    /// per renewal interval, not per message, and an index of the leased ones would cost
    /// memory for each running task.
    pub fn fail_lapsed_now(&self, now: SystemTime, holder: &str, reason: &str) -> Vec<Task> {
        let mut inner = self.lock();
        let mut failed = Vec::new();
        let mut done = Vec::new();
        for held in inner.tasks.values_mut() {
            let lapsed = held
                .lease
                .as_ref()
                .is_some_and(|l| l.holder != holder && l.until < now);
            if !lapsed {
                continue;
            }
            held.lease = None;
            lapse(&mut held.task, reason);
            held.finished = true;
            done.push(held.seq);
            failed.push(Task::clone(&held.task));
        }
        let at = Instant::now();
        inner.finished.extend(done.into_iter().map(|seq| (seq, at)));
        failed
    }
}

impl TaskStore for MemoryTaskStore {
    fn answers_at_once(&self) -> bool {
        true
    }

    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()> {
        ready(self.put_now(task, lease))
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>> {
        ready(Ok(self.get_now(id)))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.remove_now(id);
        ready(Ok(()))
    }

    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse> {
        ready(self.list_now(query, caller, max_page))
    }

    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize> {
        ready(Ok(self.renew_now(lease, ids)))
    }

    fn fail_lapsed<'a>(
        &'a self,
        now: SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>> {
        ready(Ok(self.fail_lapsed_now(now, holder, reason)))
    }
}

/// What a `ListTasks` request asks of its page, read and checked once for every store: its
/// size (50 unless asked, at most the store's `max_page`), the status time it starts after
/// (microseconds), and the cursor its page token names.
pub(super) struct Page {
    pub(super) size: usize,
    pub(super) after: Option<i64>,
    pub(super) cursor: Option<Cursor>,
}

impl Page {
    pub(super) fn of(query: &ListTasksRequest, max_page: usize) -> Result<Page, StoreError> {
        let size = query
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
        Ok(Page {
            size,
            after,
            cursor,
        })
    }
}

/// Where a listing page ends: a task's status time (microseconds since the epoch; 0 when
/// it has none) and its place in the insertion order. Ordered as the listing is, so the next
/// page is the tasks before the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Cursor {
    pub(super) at: i64,
    pub(super) seq: u64,
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
    pub(super) fn write(self) -> String {
        format!("{:x}.{:x}", self.at, self.seq)
    }

    pub(super) fn read(token: &str) -> Option<Self> {
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
                store.put_now(task(&format!("t{i}"), TaskState::Completed), None),
                Ok(())
            );
        }
        assert_eq!(store.len(), 2);
        assert!(store.get_now("t0").is_none() && store.get_now("t4").is_some());
    }

    #[test]
    fn finished_tasks_are_evicted_past_the_age() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 100,
            max_finished: 100,
            finished_ttl: Duration::ZERO,
        });
        assert_eq!(
            store.put_now(task("done", TaskState::Completed), None),
            Ok(())
        );
        assert_eq!(
            store.put_now(task("running", TaskState::Working), None),
            Ok(())
        );
        std::thread::sleep(Duration::from_millis(2));
        assert!(store.get_now("done").is_none());
        assert!(store.get_now("running").is_some());
    }

    #[test]
    fn unfinished_tasks_fill_the_store_to_its_limit() {
        let store = MemoryTaskStore::new(StoreLimits {
            max_tasks: 2,
            max_finished: 10,
            finished_ttl: Duration::from_secs(60),
        });
        assert_eq!(store.put_now(task("a", TaskState::Working), None), Ok(()));
        assert_eq!(store.put_now(task("b", TaskState::Completed), None), Ok(()));
        // The finished one makes room.
        assert_eq!(store.put_now(task("c", TaskState::Working), None), Ok(()));
        assert!(store.get_now("b").is_none());
        assert_eq!(
            store.put_now(task("d", TaskState::Working), None),
            Err(StoreError::Full)
        );
        // Updating a held task is always allowed.
        assert_eq!(store.put_now(task("a", TaskState::Completed), None), Ok(()));
    }

    #[test]
    fn listing_pages_newest_first() {
        let store = MemoryTaskStore::default();
        for i in 0..5 {
            assert_eq!(
                store.put_now(task(&format!("t{i}"), TaskState::Working), None),
                Ok(())
            );
        }
        let q = ListTasksRequest {
            page_size: Some(2),
            ..ListTasksRequest::default()
        };
        let p = store.list_now(&q, None, 100).unwrap_or_default();
        assert_eq!(p.total_size, 5);
        assert_eq!(p.tasks[0].id, "t4");
        let q2 = ListTasksRequest {
            page_token: p.next_page_token,
            ..q
        };
        assert_eq!(
            store.list_now(&q2, None, 100).unwrap_or_default().tasks[0].id,
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
            assert_eq!(store.put_now(task(&id, TaskState::Completed), None), Ok(()));
            store.remove_now(&id);
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
            assert_eq!(store.put_now(task(id, TaskState::Completed), None), Ok(()));
        }
        store.remove_now("c");
        assert_eq!(store.put_now(task("e", TaskState::Failed), None), Ok(()));
        let held: Vec<bool> = ["a", "b", "d", "e"]
            .iter()
            .map(|id| store.get_now(id).is_some())
            .collect();
        assert_eq!(held, [false, true, true, true]);
        // A removed id comes back as a new task, newest in the listing.
        assert_eq!(store.put_now(task("a", TaskState::Working), None), Ok(()));
        let all = store
            .list_now(&ListTasksRequest::default(), None, 100)
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
        assert_eq!(store.put_now(task("x", TaskState::Completed), None), Ok(()));
        assert_eq!(store.put_now(task("x", TaskState::Completed), None), Ok(()));
        assert_eq!(store.put_now(task("y", TaskState::Completed), None), Ok(()));
        assert!(store.get_now("x").is_some() && store.get_now("y").is_some());
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
            assert_eq!(
                store.put_now(at(&format!("t{i}"), "c", &time), None),
                Ok(())
            );
        }
        let q = ListTasksRequest {
            page_size: Some(2),
            ..ListTasksRequest::default()
        };
        let first = store.list_now(&q, None, 100).unwrap_or_default();
        assert_eq!(ids(&first), ["t3", "t2"]);
        // A task created between two pages: it is newer than the cursor, not on page 2.
        assert_eq!(
            store.put_now(at("new", "c", "2026-01-01T00:00:09Z"), None),
            Ok(())
        );
        let q2 = ListTasksRequest {
            page_token: first.next_page_token.clone(),
            ..q.clone()
        };
        let second = store.list_now(&q2, None, 100).unwrap_or_default();
        assert_eq!(ids(&second), ["t1", "t0"]);
        assert_eq!(second.next_page_token, "", "the last page");
        let bad = ListTasksRequest {
            page_token: "12".into(),
            ..q
        };
        assert_eq!(
            store.list_now(&bad, None, 100),
            Err(StoreError::BadPageToken)
        );
    }

    #[test]
    fn every_filter_holds() {
        let store = MemoryTaskStore::default();
        assert_eq!(
            store.put_now(at("a", "c1", "2026-01-01T00:00:01Z"), None),
            Ok(())
        );
        assert_eq!(
            store.put_now(at("b", "c2", "2026-01-01T00:00:02Z"), None),
            Ok(())
        );
        assert_eq!(
            store.put_now(at("c", "c1", "2026-01-01T00:00:03Z"), None),
            Ok(())
        );
        let mut done = at("d", "c1", "2026-01-01T00:00:04Z");
        done.status.state = TaskState::Completed;
        assert_eq!(store.put_now(done, None), Ok(()));
        let list = |q: ListTasksRequest| store.list_now(&q, None, 100);
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
            assert_eq!(store.put_now(t, None), Ok(()));
        }
        let seen = |caller| {
            let page = store
                .list_now(&ListTasksRequest::default(), caller, 100)
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
