//! News of events appended to the PostgreSQL store's logs by any replica: each append sends
//! `NOTIFY` on [`CHANNEL`] with the task's id and the event's id (delivered when its
//! transaction commits, so a reader woken by it finds the event), and one connection per store
//! `LISTEN`s and wakes the streams that follow that task ([`LogWatch`](super::LogWatch)). A notification
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

use std::sync::Weak;
use std::time::Duration;

use tokio_postgres::{AsyncMessage, Config, NoTls};

pub(crate) use super::watchers::Watchers;

/// The channel appends notify on: `<task id> <event id>`.
pub(crate) const CHANNEL: &str = "rpcwire_a2a_events";
/// The channel a cancellation is asked for on, of whichever replica runs the task: its id.
pub(crate) const CANCEL_CHANNEL: &str = "rpcwire_a2a_cancel";

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
