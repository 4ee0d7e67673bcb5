//! What a POST body gets from the service's dispatcher ([`Reply`]), and the HTTP response it
//! becomes: the status a JSON-RPC answer maps to (413 for a batch over the limit, 429 for a
//! call refused by the rate limit alone), or an event stream of what the handlers sent.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use rpcwire_service::{Exchange, Sent};
use tokio::sync::{mpsc, watch};

use crate::body::Body;
use crate::response::{event_stream, json, refuse, sse_event, status};
use rpcwire_service::deadline::before;

/// The body of the 413 answer to a batch longer than the limit.
const BATCH_TOO_LONG: &[u8] = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"batch too large"},"id":null}"#;

/// What a POST body gets, before it is made an HTTP response (by hyper's path or the fast
/// path, the same for both).
pub(super) enum Reply {
    /// 202, no body.
    Accepted,
    /// A status with a short plain-text reason.
    Refused(StatusCode, &'static str),
    /// 200 with this JSON (413 for the core's answer to a batch over the limit, 429 with
    /// `Retry-After` for a call refused by the rate limit alone).
    Json(Bytes),
    /// 200, an event stream of this one message (the client accepts only event streams).
    OneEvent(Bytes),
    /// 200, an event stream: this message, then the exchange's next ones, the answer last,
    /// within the deadline (seen on the ticks of the clock).
    Events(Bytes, Exchange, tokio::time::Instant, watch::Receiver<()>),
}

/// The answer of a single call refused by the rate limit (`-32041`): HTTP says it with 429.
const RATE_LIMITED_ANSWER: &[u8] = br#"{"jsonrpc":"2.0","error":{"code":-32041,"#;

impl Reply {
    /// A request not answered before its deadline: 503.
    pub(super) const TIMED_OUT: Reply =
        Reply::Refused(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n");

    /// The status of a JSON answer: the body's own for the core's answer to a batch over the
    /// limit (413) and for a call refused by the rate limit alone (429), else 200.
    pub(super) fn json_status(message: &[u8]) -> StatusCode {
        if message == BATCH_TOO_LONG {
            StatusCode::PAYLOAD_TOO_LARGE
        } else if message.starts_with(RATE_LIMITED_ANSWER) {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::OK
        }
    }

    pub(super) fn into_response(self) -> Response<Body> {
        match self {
            Reply::Accepted => status(StatusCode::ACCEPTED),
            Reply::Refused(code, why) => refuse(code, why),
            Reply::Json(message) => {
                let code = Reply::json_status(&message);
                let mut r = json(message);
                *r.status_mut() = code;
                if code == StatusCode::TOO_MANY_REQUESTS {
                    r.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                }
                r
            }
            Reply::OneEvent(message) => {
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(sse_event(&message));
                event_stream(rx)
            }
            Reply::Events(first, mut exchange, deadline, clock) => {
                // An event stream: these messages first, the answer last, then the end.
                let (out_tx, out_rx) = mpsc::channel(8);
                tokio::spawn(async move {
                    let mut message = first;
                    loop {
                        if out_tx.send(sse_event(&message)).await.is_err() {
                            return; // the client left: dropping the exchange ends the handlers
                        }
                        match before(&clock, deadline, exchange.next()).await {
                            Ok(Some(Sent::Message(m) | Sent::Answer(m))) => message = m.into(),
                            Ok(None) | Err(()) => return,
                        }
                    }
                });
                event_stream(out_rx)
            }
        }
    }
}
