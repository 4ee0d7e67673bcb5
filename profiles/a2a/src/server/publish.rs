//! A task's stream events published to its live subscribers, each only once the
//! [`EventLog`] has it and with its id there, without making the agent wait. Events come from
//! synchronous calls ([`TaskContext::complete`] and the like, made wherever the agent is), so
//! an append cannot be awaited where the event is made.
//!
//! An event is appended once the task store has the snapshot written before it (the task as
//! that event left it): whoever saw an event, on a stream or in the log, reads the task from
//! the store (`GetTask` on any replica) at least as new as that event.
//!
//! A log that [answers at once](EventLog::answers_at_once) (the memory log), with a store
//! that has the task's snapshot already (the memory store, which answers at once), has each
//! append polled once in place and the event sent at once: no task, no queue. Any other log's
//! appends are made in order by a task of their own, one per task with a backlog: an event
//! made while its task's earlier ones are not yet logged waits in that task's queue, so that
//! ids follow the order of the agent's calls and a subscriber receives them in that order, each
//! once. The queue is per task, not per turn: the next turn of a task waiting for input
//! queues behind the last events of the one before.
//!
//! The queue is bounded ([`TaskLimits::max_pending_events`]): while a task has that many
//! events not yet logged, a progress event (a status that neither starts nor ends a turn, an
//! artifact) is refused (the agent's call returns false, and the task is left as it was); the
//! task event that starts a turn, a direct message and the status that ends a turn are always
//! queued, so that a turn always starts and ends on its streams: at most the bound plus two
//! events of a task wait (and one more per agent call racing from another thread between
//! the check and the queueing).
//!
//! [`TaskContext::complete`]: crate::TaskContext::complete
//! [`TaskLimits::max_pending_events`]: crate::TaskLimits::max_pending_events

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll, Waker};

use tokio::sync::broadcast;

use crate::store::{EventLog, LoggedEvent, StoreError};

use super::writes::Writes;
use crate::types::StreamResponse;

/// Where a task's events are sent once logged: its live subscribers.
pub(crate) type Subscribers = broadcast::Sender<Arc<LoggedEvent>>;

/// An event waiting for its append.
struct Queued {
    /// The number of the task's snapshot write made before it ([`Writes::made`]).
    write: u64,
    owner: Option<String>,
    event: Arc<StreamResponse>,
    to: Subscribers,
}

/// The events of one server's tasks on their way to the log and then to their subscribers.
pub(crate) struct Publisher {
    /// Where events are appended, each given its id there.
    pub(crate) log: Arc<dyn EventLog>,
    /// The task snapshots' writes: an event is appended once the store has the snapshot
    /// written before it, so that whoever saw the event reads the task at least as new.
    writes: Arc<Writes>,
    /// See [`TaskLimits::max_pending_events`](crate::TaskLimits::max_pending_events).
    max_pending: usize,
    /// Per task with a writer running: the events after the one it is appending. A task has
    /// an entry exactly while its writer runs.
    queues: Mutex<HashMap<String, Queue>>,
}

/// One task's events waiting for the log.
struct Queue {
    /// The events after the one being appended.
    waiting: VecDeque<Queued>,
    /// Where the latest event queued goes: a subscriber that comes while the task's last
    /// events wait (its turn over) gets them there.
    to: Subscribers,
}

impl Publisher {
    pub(crate) fn new(
        log: Arc<dyn EventLog>,
        writes: Arc<Writes>,
        max_pending: usize,
    ) -> Arc<Self> {
        Arc::new(Publisher {
            log,
            writes,
            max_pending: max_pending.max(1),
            queues: Mutex::default(),
        })
    }

    fn queues(&self) -> std::sync::MutexGuard<'_, HashMap<String, Queue>> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many events of task `id` are not yet logged (the one being appended included).
    pub(crate) fn pending(&self, id: &str) -> usize {
        self.queues().get(id).map_or(0, |q| q.waiting.len() + 1)
    }

    /// A receiver of task `id`'s events not yet logged, when it has some: a subscriber to a
    /// task whose turn is over gets there what the log did not have yet when it read it.
    pub(crate) fn subscribe_pending(
        &self,
        id: &str,
    ) -> Option<broadcast::Receiver<Arc<LoggedEvent>>> {
        self.queues().get(id).map(|q| q.to.subscribe())
    }

    /// Whether a progress event of task `id` would be queued now: checked before the task
    /// is changed, so that a refused event leaves it as it was.
    pub(crate) fn has_room(&self, id: &str) -> bool {
        let room = self.pending(id) < self.max_pending;
        if !room {
            tracing::warn!(
                task = id,
                "a task's events wait for its event log past the bound; event refused"
            );
        }
        room
    }

    /// Logs `event` of task `task_id` (owned by `owner`), after its events before, then sends
    /// it with its id to `to`. Always queued: a progress event is refused before, by
    /// [`has_room`](Self::has_room), so that the task is not changed for an event never sent.
    ///
    /// An event whose append fails is sent with id 0 (no id to resume after), and so is one
    /// made outside a runtime (a turn ended by the runtime shutting down) to a log that does
    /// not answer at once: live subscribers still get it, and the failure is logged.
    ///
    /// `streamed`: a stream follows the task. When none does and none did (a log that answers
    /// at once, which [holds](EventLog::holds) nothing of the task), the event is sent with
    /// id 0 and not logged: no one holds an id of the task's to resume after, and no other
    /// process reads a log that answers at once. A `SendMessage` answered with the finished
    /// task then costs no appends.
    pub(crate) fn publish(
        self: &Arc<Self>,
        task_id: &str,
        owner: Option<&str>,
        event: StreamResponse,
        to: &Subscribers,
        streamed: bool,
    ) {
        // One copy, shared by the log and the streams.
        let event = Arc::new(event);
        // The snapshot this event goes with was written (or is being) before it was sent.
        let write = self.writes.made(task_id);
        let mut queues = self.queues();
        if let Some(queue) = queues.get_mut(task_id) {
            queue.to.clone_from(to);
            queue.waiting.push_back(Queued {
                write,
                owner: owner.map(str::to_owned),
                event,
                to: to.clone(),
            });
            return;
        }
        // In place only when the store has the task's snapshot already (a memory store).
        if self.log.answers_at_once() && write == 0 {
            if !streamed && !self.log.holds(task_id) {
                send(task_id, Ok(0), event, to);
                return;
            }
            // Under the lock: no other event of this task is logged or sent before this one.
            let mut future = self.log.append(task_id, owner, Arc::clone(&event));
            if let Poll::Ready(appended) = future
                .as_mut()
                .poll(&mut Context::from_waker(Waker::noop()))
            {
                drop(future);
                send(task_id, appended, event, to);
                return;
            }
            // A log that said it answers at once and did not: this append is dropped before
            // it could take an id (a future not polled to its end), and the event is
            // appended again by the task below.
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            drop(queues);
            tracing::warn!(
                task = task_id,
                "a task's event outside a runtime: not logged"
            );
            send(task_id, Ok(0), event, to);
            return;
        };
        queues.insert(
            task_id.to_owned(),
            Queue {
                waiting: VecDeque::new(),
                to: to.clone(),
            },
        );
        drop(queues);
        let first = Queued {
            write,
            owner: owner.map(str::to_owned),
            event,
            to: to.clone(),
        };
        runtime.spawn(Arc::clone(self).drain(task_id.to_owned(), first));
    }

    /// Appends `next` and the events queued after it for task `task_id`, one at a time, each
    /// sent once logged; ends (removing the task's queue) when none is left.
    async fn drain(self: Arc<Self>, task_id: String, mut next: Queued) {
        loop {
            let Queued {
                write,
                owner,
                event,
                to,
            } = next;
            // Not the writes made after it: a busy task's log never waits for its store to
            // be idle.
            self.writes.written(&task_id, write).await;
            let appended = self
                .log
                .append(&task_id, owner.as_deref(), Arc::clone(&event))
                .await;
            send(&task_id, appended, event, &to);
            let mut queues = self.queues();
            match queues.get_mut(&task_id).and_then(|q| q.waiting.pop_front()) {
                Some(queued) => next = queued,
                None => {
                    queues.remove(&task_id);
                    return;
                }
            }
        }
    }
}

/// Sends `event` with its id (0 when its append failed) to `to`.
fn send(
    task_id: &str,
    appended: Result<u64, StoreError>,
    event: Arc<StreamResponse>,
    to: &Subscribers,
) {
    let id = appended.unwrap_or_else(|e| {
        tracing::warn!(task = task_id, error = %e, "a task's event was not logged");
        0
    });
    // No subscriber is fine: the log and the store have it.
    let _ = to.send(Arc::new(LoggedEvent { id, event }));
}
