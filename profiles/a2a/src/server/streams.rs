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
use crate::store::LoggedEvent;
use crate::types::{StreamResponse, TaskState};

use super::post::{Handover, Opened};

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
        tokio::spawn(relay(stream, retry, first, replay, events, tx));
        event_stream(rx)
    }
}

/// Sends the `retry:` time, `first` (encoded, without an event id: it is not in the log, and
/// whether it ends the stream), the `replay`ed events of the log, then the task's live
/// `events` (those the replay had skipped) to the client's `tx`, until one ends the stream or
/// the client goes away (the task goes on, and its events stay in the log).
async fn relay(
    stream: Stream,
    retry: u64,
    first: Option<(bool, Vec<u8>)>,
    replay: Vec<LoggedEvent>,
    events: Option<broadcast::Receiver<Arc<LoggedEvent>>>,
    tx: mpsc::Sender<Bytes>,
) {
    let Stream {
        id,
        dialect,
        until_terminal,
    } = stream;
    let id = &*id;
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
        let ends = ends_with(until_terminal, &e.event);
        if tx
            .send(sse_event(e.id, &event(id, &e.event, dialect)))
            .await
            .is_err()
            || ends
        {
            return;
        }
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
                let ends = ends_with(until_terminal, &e.event);
                if tx
                    .send(sse_event(e.id, &event(id, &e.event, dialect)))
                    .await
                    .is_err()
                    || ends
                {
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
