//! News of events appended to the PostgreSQL store's logs by any replica: each append sends
//! `NOTIFY` on [`CHANNEL`] with the task's id and the event's id (delivered when its
//! transaction commits, so a reader woken by it finds the event), and one connection per store
//! `LISTEN`s and wakes the streams that follow that task ([`LogWatch`]). A notification
//! carries ids only: a stream reads the events from the log, after its last, with its caller's
//! identity, so nothing it may not see reaches it.
//!
//! The same connection listens on [`CANCEL_CHANNEL`]: `CancelTask` on a replica that does not
//! run the task asks, there, whichever replica does ([`TaskStore::request_cancel`]).
//!
//! [`TaskStore::request_cancel`]: super::TaskStore::request_cancel
//!
//! When the listening connection drops, the streams are told (`listening` false) and read the
//! log every [`PostgresOptions::poll_interval`](super::PostgresOptions::poll_interval) until
//! it is back; once back, every stream is woken once, for what was appended meanwhile.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tokio_postgres::{AsyncMessage, Config, NoTls};

use super::LogWatch;

/// The channel appends notify on: `<task id> <event id>`.
pub(crate) const CHANNEL: &str = "rpcwire_a2a_events";
/// The channel a cancellation is asked for on, of whichever replica runs the task: its id.
pub(crate) const CANCEL_CHANNEL: &str = "rpcwire_a2a_cancel";
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
    fn heard(&self, payload: &str) {
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

    fn set_listening(&self, up: bool) {
        self.listening.send_replace(up);
        self.wake_all();
    }
}

/// Listens on [`CHANNEL`] through a connection of its own, reconnecting after `retry` when it
/// drops, until the store (`watchers`) is gone.
pub(crate) async fn listen(config: Config, watchers: Weak<Watchers>, retry: Duration) {
    let sql = format!("LISTEN {CHANNEL}; LISTEN {CANCEL_CHANNEL}");
    loop {
        if let Ok((client, mut connection)) = config.connect(NoTls).await {
            let subscribe = client.batch_execute(&sql);
            let mut subscribe = std::pin::pin!(subscribe);
            let mut subscribed = false;
            let mut check = tokio::time::interval(retry.max(Duration::from_millis(10)));
            loop {
                tokio::select! {
                    r = &mut subscribe, if !subscribed => {
                        if r.is_err() {
                            break;
                        }
                        subscribed = true;
                        let Some(w) = watchers.upgrade() else { return };
                        w.set_listening(true);
                    }
                    message = std::future::poll_fn(|cx| connection.poll_message(cx)) => {
                        match message {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                let Some(w) = watchers.upgrade() else { return };
                                if n.channel() == CANCEL_CHANNEL {
                                    // No server listening yet: nothing of ours to cancel.
                                    let _ = w.cancels.send(n.payload().to_owned());
                                } else {
                                    w.heard(n.payload());
                                }
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                tracing::warn!(error = %e, "the PostgreSQL event log's listening connection failed");
                                break;
                            }
                            None => break,
                        }
                    }
                    _ = check.tick() => {
                        if watchers.strong_count() == 0 {
                            return;
                        }
                    }
                }
            }
        }
        let Some(w) = watchers.upgrade() else { return };
        w.set_listening(false);
        drop(w);
        tokio::time::sleep(retry).await;
    }
}
