//! The responses every server of the crate sends: a bare status, a short plain-text refusal,
//! a JSON body, an event stream fed through a channel, and one encoded event.

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use tokio::sync::mpsc;

use crate::body::Body;
use crate::stream::VecSink;

/// A response with a status, no body.
pub fn status(code: StatusCode) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// A response with a status and a short plain-text reason.
pub fn refuse(code: StatusCode, why: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::full(Bytes::from_static(why.as_bytes())));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// 503 with `Connection: close`: a request that arrived while the server drains, refused
/// before it ran.
pub fn shutting_down() -> Response<Body> {
    let mut r = refuse(StatusCode::SERVICE_UNAVAILABLE, "server shutting down\n");
    r.headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    r
}

/// A 200 response with this JSON body (`application/json`).
pub fn json(body: Bytes) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A 200 `text/event-stream` response whose body is the chunks sent on `rx`'s channel
/// (encoded events: [`sse_event`], [`stream_event`](crate::profile::stream_event)), uncached
/// and unbuffered by proxies; it ends when every sender is gone.
pub fn event_stream(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let mut r = Response::new(Body::stream(rx));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // nginx: pass events on as they come.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// One `message` event carrying `message`, with no id, encoded.
pub fn sse_event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    let data = std::str::from_utf8(message).unwrap_or("");
    rpcwire::wire::sse::write_event(&mut VecSink(&mut out), Some("message"), None, data);
    Bytes::from(out)
}
