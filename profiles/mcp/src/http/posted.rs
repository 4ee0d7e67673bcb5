//! What a POSTed body is, sorted by the core's parser (the JSON-RPC rules live there, so a
//! body means here what it means on every other transport), and the few members of its
//! `params` the server reads before the body runs: the target the stateless revision's
//! `Mcp-Name` header repeats, a cancellation's `requestId`, a new log level.

use std::prelude::rust_2021::*;

use std::borrow::Cow;

use rpcwire::wire::{parse, Id, Message, ParseLimits, Parsed, RawJson};
use serde_json::Value;

use super::wire::CLOSE_STREAM;

/// A POSTed body, sorted.
pub(crate) enum Posted<'a> {
    /// An array (an empty one included).
    Batch,
    /// A request.
    Request {
        id: Id<'a>,
        method: Cow<'a, str>,
        params: Option<RawJson<'a>>,
    },
    /// A notification.
    Notification {
        method: Cow<'a, str>,
        params: Option<RawJson<'a>>,
    },
    /// A response, or a malformed one: never answered.
    Response,
    /// Not a valid message: the core answers it (Invalid Request).
    Invalid,
}

impl<'a> Posted<'a> {
    /// Sorts `body`; `None` when it is not JSON (a parse error).
    pub(crate) fn of(body: &'a [u8]) -> Option<Self> {
        Some(match parse(body, ParseLimits::default()).ok()? {
            Parsed::Batch(_) | Parsed::EmptyBatch => Posted::Batch,
            Parsed::Single(Ok(Message::Request(r))) => Posted::Request {
                id: r.id,
                method: r.method.to_str(),
                params: r.params,
            },
            Parsed::Single(Ok(Message::Notification(n))) => Posted::Notification {
                method: n.method.to_str(),
                params: n.params,
            },
            Parsed::Single(Ok(Message::Response(_))) => Posted::Response,
            Parsed::Single(Err(invalid)) if !invalid.needs_reply() => Posted::Response,
            Parsed::Single(Err(_)) => Posted::Invalid,
        })
    }

    /// The method, for a request or a notification.
    pub(crate) fn method(&self) -> Option<&str> {
        match self {
            Posted::Request { method, .. } | Posted::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// `params`, for a request or a notification.
    pub(crate) fn params(&self) -> Option<RawJson<'a>> {
        match self {
            Posted::Request { params, .. } | Posted::Notification { params, .. } => *params,
            _ => None,
        }
    }
}

/// The member of `params` that the `Mcp-Name` header must repeat for `method` (stateless
/// mode), if the method has one.
pub(crate) fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        // The tasks extension.
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    }
}

/// One member of a message's `params`.
pub(crate) fn member<'a>(params: Option<RawJson<'a>>, key: &str) -> Option<RawJson<'a>> {
    params?
        .members()
        .find(|(k, _)| k.eq_str(key))
        .map(|(_, v)| v)
}

/// One string member of a message's `params`, unescaped.
pub(crate) fn member_str<'a>(params: Option<RawJson<'a>>, key: &str) -> Option<Cow<'a, str>> {
    member(params, key)?.as_json_str().map(|s| s.to_str())
}

/// True for the [`CLOSE_STREAM`] notification (a message a handler sends).
pub(crate) fn is_close(m: &[u8]) -> bool {
    m.windows(CLOSE_STREAM.len())
        .any(|w| w == CLOSE_STREAM.as_bytes())
        && serde_json::from_slice::<Value>(m)
            .is_ok_and(|v| v["method"] == CLOSE_STREAM && v.get("id").is_none())
}
