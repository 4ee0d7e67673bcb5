//! The event streams of `SendStreamingMessage` and `SubscribeToTask`: each event a JSON-RPC
//! response with the request's id (written by the core's encoder), sent as Server-Sent
//! Events with resumable ids. A client that goes away does not stop the task: its stream is
//! parked (bounded in number, and in events and bytes each) for it to come back with
//! `Last-Event-ID`, and forgotten a while after it ends.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::Response;
use rpcwire::wire::encode;
use rpcwire::ErrorCode;
use rpcwire_http::profile::{
    event_stream, Body, ParkedStreams, StreamLimits, StreamRelay, VecSink,
};
use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use crate::compat::{result_to_v03, Dialect};
use crate::error::{A2aError, ErrorKind};
use crate::types::{StreamResponse, TaskState};

use super::post::{Handover, Opened, StreamKey};

/// The streams of one server: those parked for resumption, and the numbers of new ones.
pub(crate) struct Streams {
    pub(crate) parked: ParkedStreams<StreamKey>,
    /// How long a parked stream is kept after it ends.
    resume_window: Duration,
    /// Each stream's buffer, keep-alive and `retry:`.
    limits: StreamLimits,
    next: AtomicU64,
}

impl Streams {
    pub(crate) fn new(max_parked: usize, resume_window: Duration, limits: StreamLimits) -> Self {
        Streams {
            parked: ParkedStreams::new(max_parked),
            resume_window,
            limits,
            next: AtomicU64::new(1),
        }
    }

    /// The event stream answering a POST whose method handed `handover` over.
    pub(crate) fn answer(self: &Arc<Self>, handover: Handover) -> Response<Body> {
        let (tx, rx) = mpsc::channel(16);
        let streams = Arc::clone(self);
        match handover {
            Handover::Open(opened) => {
                let Opened {
                    id,
                    task_id,
                    first,
                    events,
                    dialect,
                    until_terminal,
                } = *opened;
                let stream = Stream {
                    id,
                    task_id,
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
                tokio::spawn(streams.relay(stream, first, events, tx));
            }
            Handover::Resume { key, stream, after } => {
                tokio::spawn(async move {
                    if stream.resume(after, tx).await {
                        streams.parked.forget(&key);
                    }
                });
            }
        }
        event_stream(rx)
    }

    /// Sends `first` (encoded, and whether it ends the stream), then the task's `events` to
    /// the client's `tx` until one ends the stream. When the client goes away the stream is
    /// parked for resumption and the task goes on.
    async fn relay(
        self: Arc<Self>,
        stream: Stream,
        first: Option<(bool, Vec<u8>)>,
        mut events: broadcast::Receiver<Arc<StreamResponse>>,
        tx: mpsc::Sender<Bytes>,
    ) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let Stream {
            id,
            task_id,
            dialect,
            until_terminal,
        } = stream;
        // The task's id moves into the key: one copy per open stream.
        let key = (task_id, n);
        let id = &*id;
        let mut relay = StreamRelay::start(n, key.clone(), &self.parked, tx, self.limits).await;
        let mut ended = false;
        if let Some((ends, first)) = first {
            ended = !relay.send(&first).await || ends;
        }
        while !ended {
            match relay.unless_gone(events.recv()).await {
                None => ended = !relay.park(),
                Some(Ok(e)) => {
                    ended =
                        !relay.send(&event(id, &e, dialect)).await || ends_with(until_terminal, &e)
                }
                Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                    let e = A2aError::with_message(
                        ErrorKind::Internal,
                        "the stream fell behind the task's events; read the task with GetTask",
                    );
                    let _ = relay.send(&error(id, &e)).await;
                    ended = true;
                }
                Some(Err(broadcast::error::RecvError::Closed)) => ended = true,
            }
        }
        drop(relay);
        if self.parked.get(&key).is_some() {
            // Kept for a returning client for a while, then forgotten.
            tokio::time::sleep(self.resume_window).await;
            self.parked.forget(&key);
        }
    }
}

/// What a stream's task keeps of its request.
struct Stream {
    /// The request's id, as JSON text.
    id: Box<str>,
    task_id: String,
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
