//! The task snapshots a running turn writes to the store, in order per task, without making
//! the agent wait. A turn's events come from synchronous calls ([`TaskContext::complete`]
//! and the like, made wherever the agent is), so their store writes cannot be awaited there.
//!
//! A store that [answers at once](TaskStore::answers_at_once) (the memory store) has each
//! write's future polled once in place: done at once, with no task and no copy. Any other
//! store's write is driven by a task of its own; a later write of the same task, meanwhile, waits in that
//! task's slot (replacing an earlier waiting one: a snapshot replaces the one before it), so
//! writes reach the store in order, at most two per task are held, and reads see the latest
//! ([`Writes::latest`]) before the store has it.
//!
//! [`TaskContext::complete`]: crate::TaskContext::complete

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use crate::store::{EventLog, StoreError, TaskStore};
use crate::types::{StreamResponse, Task};

/// A write of one task's snapshot.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    /// The task as it is now.
    Put(Box<Task>),
    /// The task is forgotten.
    Remove,
}

/// The writes not yet done: per task, the one in flight and the next.
#[derive(Default)]
struct Slot {
    in_flight: Option<Write>,
    next: Option<Write>,
}

impl Slot {
    fn latest(&self) -> Option<&Write> {
        self.next.as_ref().or(self.in_flight.as_ref())
    }
}

/// The writes of one server's turns to its store.
pub(crate) struct Writes {
    store: Arc<dyn TaskStore>,
    /// Where the tasks' stream events are appended, each given its id there.
    pub(crate) log: Arc<dyn EventLog>,
    slots: Mutex<HashMap<String, Slot>>,
    /// Woken each time a task's writes are all done.
    settled: tokio::sync::Notify,
}

impl Writes {
    pub(crate) fn new(store: Arc<dyn TaskStore>, log: Arc<dyn EventLog>) -> Arc<Self> {
        Arc::new(Writes {
            store,
            log,
            slots: Mutex::default(),
            settled: tokio::sync::Notify::new(),
        })
    }

    fn slots(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The latest write of task `id` the store may not have yet.
    pub(crate) fn latest(&self, id: &str) -> Option<Write> {
        self.slots().get(id).and_then(Slot::latest).cloned()
    }

    /// Returns once the store has every write of task `id` made so far: a write made past
    /// them (a turn's first, with its lease) then lands after them.
    pub(crate) async fn settled(&self, id: &str) {
        loop {
            let notified = self.settled.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if !self.slots().contains_key(id) {
                return;
            }
            notified.await;
        }
    }

    /// Writes `write` of task `id`, after its writes before.
    pub(crate) fn write(self: &Arc<Self>, id: &str, write: Write) {
        let mut slots = self.slots();
        if let Some(slot) = slots.get_mut(id) {
            slot.next = Some(write);
            return;
        }
        if self.store.answers_at_once() {
            // Under the lock: no other write of this task starts before this one is done.
            let mut future = start(Arc::clone(&self.store), id.to_owned(), write);
            match future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                Poll::Ready(result) => log(id, result),
                // A store that said it answers at once and did not: its write still happens.
                Poll::Pending => drop(spawn(id, future)),
            }
            return;
        }
        let future = start(Arc::clone(&self.store), id.to_owned(), write.clone());
        slots.insert(
            id.to_owned(),
            Slot {
                in_flight: Some(write),
                next: None,
            },
        );
        drop(slots);
        let this = Arc::clone(self);
        let owned = id.to_owned();
        let spawned = spawn(id, async move {
            log(&owned, future.await);
            loop {
                let next = {
                    let mut slots = this.slots();
                    let Some(slot) = slots.get_mut(&owned) else {
                        return Ok(());
                    };
                    match slot.next.take() {
                        Some(next) => {
                            slot.in_flight = Some(next.clone());
                            next
                        }
                        None => {
                            slots.remove(&owned);
                            this.settled.notify_waiters();
                            return Ok(());
                        }
                    }
                };
                log(
                    &owned,
                    start(Arc::clone(&this.store), owned.clone(), next).await,
                );
            }
        });
        if !spawned {
            self.slots().remove(id);
            self.settled.notify_waiters();
        }
    }
}

impl Writes {
    /// Appends `event` to task `task_id`'s log (owned by `owner`) and returns its id there,
    /// or 0 when it could not be logged (logged as a warning: the event is still sent live,
    /// without an id to resume after).
    ///
    /// The id is needed before the event is sent, and events come from synchronous calls:
    /// the append is polled in place, which a memory log answers at once; a log that waits
    /// (the SQLite store's, on tokio's blocking threads) is waited for on this thread, so
    /// that ids follow the order of the agent's calls.
    ///
    /// Outside a runtime (a turn ended by the runtime shutting down) nothing is logged: a log
    /// that works on the runtime's threads could not, and the process is going away.
    pub(crate) fn append(&self, task_id: &str, owner: Option<&str>, event: StreamResponse) -> u64 {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                task = task_id,
                "a task's event outside a runtime: not logged"
            );
            return 0;
        };
        let mut future = self.log.append(task_id, owner, event);
        let at_once = future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()));
        let appended = match (at_once, runtime.runtime_flavor()) {
            // A memory log: done.
            (Poll::Ready(out), _) => out,
            // Other tasks of this worker move to another thread while this one waits: one
            // of them may hold what the append waits for (a permit of the store's).
            (Poll::Pending, tokio::runtime::RuntimeFlavor::MultiThread) => {
                tokio::task::block_in_place(|| wait_in_place(future))
            }
            // A current-thread runtime runs nothing else meanwhile: a log whose append waits
            // for another task of it would wait for ever (see `A2aServer::event_log`).
            (Poll::Pending, _) => wait_in_place(future),
        };
        match appended {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(task = task_id, error = %e, "a task's event was not logged");
                0
            }
        }
    }
}

/// Wakes the thread that waits in [`wait_in_place`].
struct ThreadWaker(std::thread::Thread);

impl std::task::Wake for ThreadWaker {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
}

/// `future`'s output, polled on this thread until ready: once for a future ready at once,
/// parking between polls otherwise. Hand-written rather than a runtime's `block_on`, which
/// refuses to run inside a runtime; the futures waited for here do their work elsewhere
/// (tokio's blocking threads), so parking this thread does not stop them.
fn wait_in_place<T>(mut future: crate::store::StoreFuture<'_, T>) -> Result<T, StoreError> {
    let waker = Waker::from(Arc::new(ThreadWaker(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// The store's future for `write` of task `id`, owning what it needs.
fn start(
    store: Arc<dyn TaskStore>,
    id: String,
    write: Write,
) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send>> {
    Box::pin(async move {
        match write {
            Write::Put(task) => store.put(*task, None).await,
            Write::Remove => store.remove(&id).await,
        }
    })
}

/// Runs `future` on the current runtime; false (the write dropped, and logged) outside one:
/// a turn ended by the runtime shutting down.
fn spawn(id: &str, future: impl Future<Output = Result<(), StoreError>> + Send + 'static) -> bool {
    match tokio::runtime::Handle::try_current() {
        Ok(runtime) => {
            runtime.spawn(async move {
                if let Err(e) = future.await {
                    tracing::warn!(error = %e, "a task's snapshot was not stored");
                }
            });
            true
        }
        Err(_) => {
            tracing::warn!(task = id, "a task's store write outside a runtime: dropped");
            false
        }
    }
}

fn log(id: &str, result: Result<(), StoreError>) {
    if let Err(e) = result {
        tracing::warn!(task = id, error = %e, "a task's snapshot was not stored");
    }
}
