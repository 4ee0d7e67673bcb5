//! What the request that started a turn said beside its message: its HTTP headers, its
//! `metadata`, its `configuration` and the extensions it activates, as a turn reads them
//! through [`TaskContext`](crate::TaskContext).

use http::HeaderMap;
use serde_json::{Map, Value};

use crate::types::SendMessageConfiguration;

/// Headers never handed to an agent: the caller's credentials (the agent has the identity
/// they established) stay with the server.
const WITHHELD: [&str; 3] = ["authorization", "proxy-authorization", "cookie"];

/// The request behind a turn (see the module docs). Its headers are copied out of the HTTP
/// request (names lowercase, values that are text) into one string of `name: value` lines:
/// a turn that runs for long keeps this, one allocation, not the request's buffers (a few
/// hundred bytes per open stream less than a pair of strings per header).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct TurnRequest {
    headers: Box<str>,
    metadata: Option<Box<Map<String, Value>>>,
    configuration: Option<Box<SendMessageConfiguration>>,
    extensions: Box<[String]>,
}

impl TurnRequest {
    /// The request that sent `headers`, its params' `metadata` and `configuration`, and
    /// activated `extensions` (its `A2A-Extensions`).
    pub fn new(
        headers: &HeaderMap,
        metadata: Option<Map<String, Value>>,
        configuration: Option<SendMessageConfiguration>,
        extensions: Vec<String>,
    ) -> Self {
        let mut text = String::new();
        for (name, value) in headers {
            // A header value holds no line break: each is one line.
            let Ok(value) = value.to_str() else { continue };
            if WITHHELD.contains(&name.as_str()) {
                continue;
            }
            text.push_str(name.as_str());
            text.push_str(": ");
            text.push_str(value);
            text.push('\n');
        }
        TurnRequest {
            headers: text.into_boxed_str(),
            metadata: metadata.map(Box::new),
            configuration: configuration.map(Box::new),
            extensions: extensions.into_boxed_slice(),
        }
    }

    /// The first value of header `name` (any case), if it was sent as text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
    }

    /// Every header (name lowercase, value), in the order sent, but `Authorization`,
    /// `Proxy-Authorization` and `Cookie`.
    pub fn headers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.headers
            .lines()
            .filter_map(|line| line.split_once(": "))
    }

    /// The request's `metadata` (`SendMessageRequest.metadata`).
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.metadata.as_deref()
    }

    /// The request's `configuration`: the output modes the client accepts, the history
    /// length it wants, whether it waits.
    pub fn configuration(&self) -> Option<&SendMessageConfiguration> {
        self.configuration.as_deref()
    }

    /// The extensions the request activates (`A2A-Extensions`).
    pub fn extensions(&self) -> &[String] {
        &self.extensions
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn credentials_are_withheld_and_names_read_in_any_case() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("Bearer secret"));
        h.insert("cookie", HeaderValue::from_static("s=1"));
        h.insert("x-trace", HeaderValue::from_static("abc"));
        h.insert(
            "x-bytes",
            HeaderValue::from_bytes(b"\xff").unwrap_or(HeaderValue::from_static("")),
        );
        let r = TurnRequest::new(&h, None, None, vec!["urn:x".into()]);
        assert_eq!(r.header("X-Trace"), Some("abc"));
        assert_eq!(r.header("authorization"), None);
        let names: Vec<&str> = r.headers().map(|(n, _)| n).collect();
        assert_eq!(names, ["x-trace"]);
        assert_eq!(r.extensions(), ["urn:x"]);
        h.insert("x-empty", HeaderValue::from_static(""));
        let r = TurnRequest::new(&h, None, None, Vec::new());
        assert_eq!(r.header("x-empty"), Some(""));
    }
}
