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

use crate::store::{StoreError, TaskStore};
use crate::types::Task;

/// A write of one task's snapshot.
#[derive(Debug, Clone)]
pub(crate) enum Write {
    /// The task as it is now.
    Put(Box<Task>),
    /// The task is forgotten.
    Remove,
}

/// The writes not yet done: per task, the one in flight and the next, each with its number
/// (one sequence for all tasks), and the number of the last done.
#[derive(Default)]
struct Slot {
    in_flight: Option<Write>,
    next: Option<Write>,
    in_flight_seq: u64,
    next_seq: u64,
    /// Every write of the task numbered up to this is in the store (a write replaced by a
    /// later one before it started is in the store once that one is).
    done: u64,
}

impl Slot {
    /// The number of the latest write made.
    fn made(&self) -> u64 {
        self.in_flight_seq.max(self.next_seq)
    }
}

impl Slot {
    fn latest(&self) -> Option<&Write> {
        self.next.as_ref().or(self.in_flight.as_ref())
    }
}

/// The writes of one server's turns to its store.
pub(crate) struct Writes {
    store: Arc<dyn TaskStore>,
    slots: Mutex<HashMap<String, Slot>>,
    /// The number of the next write.
    seq: std::sync::atomic::AtomicU64,
    /// Woken each time a write is done.
    settled: tokio::sync::Notify,
}

impl Writes {
    pub(crate) fn new(store: Arc<dyn TaskStore>) -> Arc<Self> {
        Arc::new(Writes {
            store,
            slots: Mutex::default(),
            seq: std::sync::atomic::AtomicU64::new(1),
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

    /// The number of task `id`'s latest write the store may not have yet; 0 when the store
    /// has them all.
    pub(crate) fn made(&self, id: &str) -> u64 {
        self.slots().get(id).map_or(0, Slot::made)
    }

    /// Returns once the store has every write of task `id` made so far (later ones are not
    /// waited for): a write made past them (a turn's first, with its lease) then lands after
    /// them.
    pub(crate) async fn settled(&self, id: &str) {
        self.written(id, self.made(id)).await;
    }

    /// Returns once the store has task `id`'s write numbered `seq` ([`made`](Self::made)) and
    /// those before it; at once for 0.
    pub(crate) async fn written(&self, id: &str, seq: u64) {
        if seq == 0 {
            return;
        }
        loop {
            let notified = self.settled.notified();
            let mut notified = std::pin::pin!(notified);
            notified.as_mut().enable();
            if self.slots().get(id).is_none_or(|s| s.done >= seq) {
                return;
            }
            notified.await;
        }
    }

    /// Writes `write` of task `id`, after its writes before.
    pub(crate) fn write(self: &Arc<Self>, id: &str, write: Write) {
        let mut slots = self.slots();
        let seq = self.seq.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if let Some(slot) = slots.get_mut(id) {
            slot.next = Some(write);
            slot.next_seq = seq;
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
                in_flight_seq: seq,
                ..Slot::default()
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
                    slot.done = slot.in_flight_seq;
                    this.settled.notify_waiters();
                    match slot.next.take() {
                        Some(next) => {
                            slot.in_flight = Some(next.clone());
                            slot.in_flight_seq = slot.next_seq;
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
