//! The event streams of `SendStreamingMessage` and `SubscribeToTask`: each event a JSON-RPC
//! response with the request's id (written by the core's encoder), sent as Server-Sent
//! Events whose id is the event's id in its task's [`EventLog`](crate::EventLog). A client
//! that goes away does not stop the task, and nothing of its stream is kept here: the log
//! holds the task's events, and the client comes back with `SubscribeToTask` and
//! `Last-Event-ID` to get those after the last it had, from the log, then the live ones.
//! An open stream thus holds only its receiver of the task's events and its request's id.

use std::sync::Arc;

use bytes::Bytes;
use http::Response;
use rpcwire::wire::encode;
use rpcwire::wire::sse;
use rpcwire::ErrorCode;
use rpcwire_http::profile::{event_stream, Body, StreamLimits, VecSink};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use crate::compat::{result_to_v03, Dialect};
use crate::error::{A2aError, ErrorKind};
use crate::store::{LogWatch, LoggedEvent, StoreError};
use crate::types::{StreamResponse, TaskState};
use rpcwire_service::Identity;

use super::tasks::Tasks;

/// The streams of one server: their `retry:` time.
pub(crate) struct Streams {
    /// Each stream's `retry:`.
    limits: StreamLimits,
}

impl Streams {
    pub(crate) fn new(limits: StreamLimits) -> Self {
        Streams { limits }
    }

    /// The event stream answering a POST whose method handed `handover` over.
    pub(crate) fn answer(self: &Arc<Self>, handover: Handover) -> Response<Body> {
        let (tx, rx) = mpsc::channel(16);
        let Handover::Open(opened) = handover;
        let Opened {
            id,
            first,
            replay,
            events,
            follow,
            dialect,
            until_terminal,
        } = *opened;
        let stream = Stream {
            id,
            dialect,
            until_terminal,
        };
        // Encoded now: a stream's task keeps what it holds for as long as it runs.
        let first = first.map(|f| {
            (
                ends_with(until_terminal, &f),
                event(&stream.id, &f, dialect),
            )
        });
        let retry = u64::try_from(self.limits.retry.as_millis()).unwrap_or(u64::MAX);
        tokio::spawn(relay(stream, retry, first, replay, (events, follow), tx));
        event_stream(rx)
    }
}

/// Sends the `retry:` time, `first` (encoded, without an event id: it is not in the log, and
/// whether it ends the stream), the `replay`ed events of the log, then the task's live
/// `events` (those the replay had skipped) to the client's `tx`, until one ends the stream or
/// the client goes away (the task goes on, and its events stay in the log).
///
/// An `async` block, not an `async fn`: the block uses what it captured where it lies, where
/// an `async fn` keeps its arguments twice for as long as it runs (once as passed, once as
/// its locals), 200 bytes more per open stream.
#[expect(
    clippy::manual_async_fn,
    reason = "an async fn would keep its arguments twice"
)]
fn relay(
    stream: Stream,
    retry: u64,
    first: Option<(bool, Vec<u8>)>,
    replay: Vec<LoggedEvent>,
    (events, follow): (
        Option<broadcast::Receiver<Arc<LoggedEvent>>>,
        Option<Follow>,
    ),
    tx: mpsc::Sender<Bytes>,
) -> impl std::future::Future<Output = ()> + Send {
    async move {
        let id = &*stream.id;
        let mut out = Vec::new();
        sse::write_retry(&mut VecSink(&mut out), retry);
        out.push(b'\n');
        if tx.send(Bytes::from(out)).await.is_err() {
            return;
        }
        if let Some((ends, first)) = first {
            if tx.send(sse_event(0, &first)).await.is_err() || ends {
                return;
            }
        }
        // The last event replayed: the live events up to it were in the replay.
        let mut replayed = 0;
        for e in replay {
            replayed = e.id;
            if !stream.forward(&e, &tx).await {
                return;
            }
        }
        if let Some(follow) = follow {
            // Boxed: a stream of live events (most) does not keep room for a follower's state.
            Box::pin(follow.relay(&stream, &tx)).await;
            return;
        }
        let Some(mut events) = events else {
            return;
        };
        loop {
            let received = tokio::select! {
                r = events.recv() => r,
                () = tx.closed() => return,
            };
            match received {
                Ok(e) if e.id != 0 && e.id <= replayed => {}
                Ok(e) => {
                    if !stream.forward(&e, &tx).await {
                        return;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {
                    let e = A2aError::with_message(
                        ErrorKind::Internal,
                        "the stream fell behind the task's events; resume it with Last-Event-ID",
                    );
                    let _ = tx.send(sse_event(0, &error(id, &e))).await;
                    return;
                }
                Err(broadcast::error::RecvError::Closed) => return,
            }
        }
    }
}

/// What a streaming method hands the edge to stream.
#[derive(Debug)]
pub(crate) enum Handover {
    /// A stream: `first`, the events replayed from the task's log, then the task's live
    /// events, each a JSON-RPC response with the request's id. Boxed: the caller of a POST
    /// (which its turn keeps) holds the room of the largest variant once the stream is taken.
    Open(Box<Opened>),
}

/// A stream's parts ([`Handover::Open`]).
#[derive(Debug)]
pub(crate) struct Opened {
    /// The request's id, as JSON text.
    pub(crate) id: Box<str>,
    /// The event sent before the task's own (the task as it is, for a subscription), with
    /// no event id: it is not in the task's log.
    pub(crate) first: Option<StreamResponse>,
    /// The events of the task's log after the client's `Last-Event-ID` (a resumption).
    pub(crate) replay: Vec<LoggedEvent>,
    /// The task's live events, from the first not yet sent (none: the task is over, the
    /// replay is all there is).
    pub(crate) events: Option<broadcast::Receiver<Arc<LoggedEvent>>>,
    /// Instead of live events: the task's log, read as it tells of new events (a log that
    /// other replicas append to).
    pub(crate) follow: Option<Follow>,
    /// The shapes its events are written in.
    pub(crate) dialect: Dialect,
    /// The stream ends at a terminal state only (a subscription), not at an interrupted one
    /// too (the stream of a message, which ends with its turn).
    pub(crate) until_terminal: bool,
}

/// A stream following a task's log ([`EventLog::watch`](crate::EventLog::watch)): read after
/// its last event each time the log tells of new ones.
pub(crate) struct Follow {
    pub(crate) tasks: Arc<Tasks>,
    pub(crate) task_id: String,
    /// Who reads: the log is read as the subscriber, so it gets only what it may see.
    pub(crate) identity: Identity,
    pub(crate) watch: LogWatch,
    /// The last event sent (0: none yet).
    pub(crate) after: u64,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow")
            .field("task_id", &self.task_id)
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl Follow {
    /// Sends the log's events after `after` to `tx`, each once, in order, as the log tells
    /// of them, until one ends the stream, the client goes away, or the log cannot be read
    /// (an error event then: the client resumes with `Last-Event-ID`).
    async fn relay(mut self, stream: &Stream, tx: &mpsc::Sender<Bytes>) {
        loop {
            match self
                .tasks
                .read_log(&self.task_id, &self.identity, self.after)
                .await
            {
                Ok(events) => {
                    for e in events {
                        self.after = e.id;
                        if !stream.forward(&e, tx).await {
                            return;
                        }
                    }
                }
                // Not logged yet: nothing to send.
                Err(StoreError::NotFound) => {}
                Err(e) => {
                    tracing::warn!(task = self.task_id, error = %e, "a followed event log was not read");
                    let e = A2aError::with_message(
                        ErrorKind::Internal,
                        "the task's event log could not be read; resume it with Last-Event-ID",
                    );
                    let _ = tx.send(sse_event(0, &error(&stream.id, &e))).await;
                    return;
                }
            }
            tokio::select! {
                () = self.watch.changed() => {}
                () = tx.closed() => return,
            }
        }
    }
}

/// One `message` event carrying `message`, with the event id `id` (none for 0: an event not
/// in the log, after which a client cannot resume).
fn sse_event(id: u64, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 40);
    let id = (id != 0).then(|| id.to_string());
    let data = std::str::from_utf8(message).unwrap_or("");
    sse::write_event(&mut VecSink(&mut out), Some("message"), id.as_deref(), data);
    Bytes::from(out)
}

/// What a stream's task keeps of its request.
struct Stream {
    /// The request's id, as JSON text.
    id: Box<str>,
    dialect: Dialect,
    /// See [`Opened::until_terminal`].
    until_terminal: bool,
}

impl Stream {
    /// Sends logged event `e` to the client's `tx`, with its id; false when the stream is
    /// over (the client went away, or `e` ends it).
    async fn forward(&self, e: &LoggedEvent, tx: &mpsc::Sender<Bytes>) -> bool {
        let ends = ends_with(self.until_terminal, &e.event);
        let sent = tx
            .send(sse_event(e.id, &event(&self.id, &e.event, self.dialect)))
            .await
            .is_ok();
        sent && !ends
    }
}

/// Whether a stream ends after `e`: at a terminal state only when `until_terminal` (a
/// subscription), else at an interrupted one too; always after a direct message.
fn ends_with(until_terminal: bool, e: &StreamResponse) -> bool {
    if until_terminal {
        matches!(e, StreamResponse::Message(_)) || e.state().is_some_and(TaskState::is_terminal)
    } else {
        e.ends_stream()
    }
}

/// The JSON-RPC response carrying one event, answering request `id` (JSON text).
fn event(id: &str, event: &StreamResponse, dialect: Dialect) -> Vec<u8> {
    match dialect {
        Dialect::V1 => result(id, event),
        Dialect::V03 => match serde_json::to_value(event) {
            Ok(v) => result(id, &result_to_v03(v)),
            Err(e) => error(
                id,
                &A2aError::with_message(ErrorKind::Internal, e.to_string()),
            ),
        },
    }
}

/// A success response with `value` as its result.
fn result(id: &str, value: &(impl Serialize + ?Sized)) -> Vec<u8> {
    let mut out = Vec::new();
    match encode::result(&mut VecSink(&mut out), id.as_bytes(), value) {
        Ok(()) => out,
        Err(e) => {
            tracing::warn!(error = ?e, "a stream event does not serialize: sent Internal error");
            error(id, &A2aError::new(ErrorKind::Internal))
        }
    }
}

/// An error response for request `id`.
fn error(id: &str, e: &A2aError) -> Vec<u8> {
    let mut out = Vec::new();
    let code = ErrorCode(e.kind.code());
    let details = e.details();
    if encode::error(
        &mut VecSink(&mut out),
        id.as_bytes(),
        code,
        Some(&e.message),
        Some(&details),
    )
    .is_err()
    {
        out.clear();
        encode::standard_error(
            &mut VecSink(&mut out),
            id.as_bytes(),
            ErrorCode::INTERNAL_ERROR,
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{Task, TaskStatus};

    #[test]
    fn events_answer_the_request_in_either_dialect() {
        let task = StreamResponse::Task(Task {
            id: "t".into(),
            status: TaskStatus {
                state: TaskState::Working,
                ..TaskStatus::default()
            },
            ..Task::default()
        });
        let v1: serde_json::Value =
            serde_json::from_slice(&event("\"s\"", &task, Dialect::V1)).unwrap_or_default();
        assert_eq!(v1["id"], "s");
        assert_eq!(
            v1["result"]["task"]["status"]["state"],
            "TASK_STATE_WORKING"
        );
        let v03: serde_json::Value =
            serde_json::from_slice(&event("7", &task, Dialect::V03)).unwrap_or_default();
        assert_eq!(v03["id"], 7);
        assert_eq!(v03["result"]["kind"], "task");
        assert_eq!(v03["result"]["status"]["state"], "working");
    }

    #[test]
    fn errors_carry_their_error_info() {
        let e = A2aError::new(ErrorKind::Internal);
        let v: serde_json::Value = serde_json::from_slice(&error("1", &e)).unwrap_or_default();
        assert_eq!(v["error"]["code"], -32603);
        assert_eq!(v["error"]["data"][0]["reason"], "INTERNAL");
        assert_eq!(v["id"], 1);
    }
}
