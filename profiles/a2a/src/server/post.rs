//! What passes between the HTTP edge and the methods for one POST, beside its body: the
//! request's A2A headers, read at the edge, and the stream a streaming method hands back.
//!
//! A streaming method (`SendStreamingMessage`, `SubscribeToTask`) is run by the dispatcher
//! like any other: its access rules, its rate limit and its span are the dispatcher's, once
//! per call, and its errors are JSON-RPC answers. When it succeeds, it leaves what the edge
//! is to stream in its request's [`Post`] ([`Post::hand_over`]) and answers `null`; the edge
//! then answers the POST with that event stream instead of the JSON answer. The request's
//! [`Caller`](rpcwire_service::Caller) carries the `Post` (as its transport metadata): one per
//! POST, so a stream reaches only the request that made it.

use std::sync::{Mutex, PoisonError};

use http::HeaderMap;

use super::checks::requested_extensions;
use super::streams::Handover;
use crate::error::{A2aError, ErrorKind};

/// The header naming the protocol version a request speaks.
pub const VERSION_HEADER: &str = "a2a-version";

/// The header naming the extensions a request activates.
pub const EXTENSIONS_HEADER: &str = "a2a-extensions";

/// One POST's A2A headers, and the stream its method hands back (see the module docs).
#[derive(Debug)]
pub(crate) struct Post {
    /// The `A2A-Version` asked for (trimmed; `None` when absent or empty).
    version: Option<Box<str>>,
    /// `Last-Event-ID`, when it names an event of ours: an event id in a task's log.
    pub(crate) last_event: Option<u64>,
    /// The extensions the request activates (`A2A-Extensions`).
    pub(crate) extensions: Vec<String>,
    /// The request's headers, until a method that starts a turn takes them.
    headers: Mutex<Option<HeaderMap>>,
    stream: Mutex<Option<Handover>>,
}

impl Post {
    /// The A2A headers of a POST, and the headers themselves.
    pub(crate) fn new(headers: HeaderMap) -> Self {
        let text = |name| headers.get(name).and_then(|v| v.to_str().ok());
        Post {
            version: text(VERSION_HEADER)
                .map(str::trim)
                .filter(|v| !v.is_empty())
                .map(Box::from),
            last_event: text("last-event-id").and_then(|id| id.trim().parse().ok()),
            extensions: requested_extensions(
                headers
                    .get_all(EXTENSIONS_HEADER)
                    .iter()
                    .filter_map(|v| v.to_str().ok()),
            ),
            headers: Mutex::new(None),
            stream: Mutex::new(None),
        }
        .with_headers(headers)
    }

    fn with_headers(self, headers: HeaderMap) -> Self {
        *self.headers.lock().unwrap_or_else(PoisonError::into_inner) = Some(headers);
        self
    }

    /// The request's headers (empty after the first call).
    pub(crate) fn take_headers(&self) -> HeaderMap {
        self.headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default()
    }

    /// Whether the `A2A-Version` the request names is served: 1.x. None means 0.3, as the
    /// specification says.
    pub(crate) fn version_supported(&self) -> Result<(), A2aError> {
        let asked = self.version.as_deref().unwrap_or("0.3");
        let major = asked.split('.').next().and_then(|m| m.parse::<u32>().ok());
        if major == Some(1) {
            return Ok(());
        }
        Err(A2aError::with_message(
            ErrorKind::VersionNotSupported,
            format!("A2A version '{asked}' is not supported; this server speaks 1.0"),
        ))
    }

    /// Leaves `stream` for the edge to answer with.
    pub(crate) fn hand_over(&self, stream: Handover) {
        *self.stream.lock().unwrap_or_else(PoisonError::into_inner) = Some(stream);
    }

    /// The stream a method handed over, if one did.
    pub(crate) fn take(&self) -> Option<Handover> {
        self.stream
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;

    fn post(version: Option<&'static str>) -> Post {
        let mut h = HeaderMap::new();
        if let Some(v) = version {
            h.insert(VERSION_HEADER, HeaderValue::from_static(v));
        }
        Post::new(h)
    }

    #[test]
    fn versions() {
        assert!(post(None).version_supported().is_err(), "none means 0.3");
        assert!(post(Some(" ")).version_supported().is_err(), "empty too");
        assert!(post(Some("1.0")).version_supported().is_ok());
        assert!(post(Some("1.2.3")).version_supported().is_ok());
        assert_eq!(
            post(Some("2.0")).version_supported().map_err(|e| e.kind),
            Err(ErrorKind::VersionNotSupported)
        );
    }

    #[test]
    fn event_ids_of_ours_are_read() {
        let mut h = HeaderMap::new();
        h.insert("last-event-id", HeaderValue::from_static("7"));
        assert_eq!(Post::new(h.clone()).last_event, Some(7));
        h.insert("last-event-id", HeaderValue::from_static("p3-7"));
        assert_eq!(Post::new(h).last_event, None);
    }
}
