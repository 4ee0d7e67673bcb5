//! The streams of this process that follow tasks' logs written by other processes too (the
//! stores several replicas share: PostgreSQL's, Redis's), and the cancellations other
//! replicas asked for. A store's listening connection feeds them: [`Watchers::heard`] for
//! each append it is told of, [`Watchers::set_listening`] as it goes down and comes back
//! (while down, the streams poll the log; once back, each is woken once for what was appended
//! meanwhile), and [`Watchers::cancels`] for each cancellation.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

use super::LogWatch;

/// The cancellations heard and not yet taken by the server, past which the oldest are lost
/// (their canceller's wait then ends without the task canceled).
const CANCELS_HELD: usize = 256;

/// The tasks followed by streams here, and whether the listening connection is up.
pub(crate) struct Watchers {
    tasks: Mutex<HashMap<String, watch::Sender<u64>>>,
    listening: watch::Sender<bool>,
    poll: Duration,
    /// The ids of tasks whose cancellation a replica asked for.
    pub(crate) cancels: tokio::sync::broadcast::Sender<String>,
}

impl Watchers {
    /// Watchers polling every `poll` while not listening; `listen` starts the listening.
    pub(crate) fn new(poll: Duration) -> Arc<Self> {
        Arc::new(Watchers {
            tasks: Mutex::default(),
            listening: watch::channel(false).0,
            poll: poll.max(Duration::from_millis(1)),
            cancels: tokio::sync::broadcast::channel(CANCELS_HELD).0,
        })
    }

    fn tasks(&self) -> std::sync::MutexGuard<'_, HashMap<String, watch::Sender<u64>>> {
        self.tasks.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A watch of task `task_id`'s log.
    pub(crate) fn watch(&self, task_id: &str) -> LogWatch {
        let mut tasks = self.tasks();
        let appended = match tasks.get(task_id) {
            Some(tx) => tx.subscribe(),
            None => {
                // Tasks no stream follows any more go as new ones come: the map holds at
                // most the tasks of the streams open here, plus one.
                tasks.retain(|_, tx| tx.receiver_count() > 0);
                let (tx, rx) = watch::channel(0);
                tasks.insert(task_id.to_owned(), tx);
                rx
            }
        };
        LogWatch {
            appended,
            listening: self.listening.subscribe(),
            poll: self.poll,
        }
    }

    /// A notification's payload: wakes the streams of its task.
    pub(crate) fn heard(&self, payload: &str) {
        let Some((task, id)) = payload.rsplit_once(' ') else {
            return;
        };
        let id = id.parse().unwrap_or(0);
        if let Some(tx) = self.tasks().get(task) {
            tx.send_replace(id);
        }
    }

    /// Every stream woken: what was appended while not listening.
    fn wake_all(&self) {
        for tx in self.tasks().values() {
            tx.send_modify(|_| {});
        }
    }

    pub(crate) fn set_listening(&self, up: bool) {
        self.listening.send_replace(up);
        self.wake_all();
    }
}
