//! The stateless revision's request metadata (2026-07-28 Streamable HTTP, "Request Metadata"
//! and "Server Validation"): the headers that mirror a POST's body, the sentinel encoding of
//! their values, and the server's check of them against the body, with the errors it answers
//! when they are missing or disagree with it.

use std::prelude::rust_2021::*;

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use http::header::HeaderMap;
use http::{Response, StatusCode};
use rpcwire::ErrorCode;
use rpcwire_http::profile::Body;
use serde_json::json;

use super::posted::{member, member_str, name_member, Posted};
use super::replies::{rpc_error, rpc_error_to};
use super::wire::{HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, STATELESS_VERSION};
use crate::methods::META_PROTOCOL_VERSION;

/// `HeaderMismatch`: a required header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is
/// missing or malformed, or does not say what the body says. Answered with HTTP 400.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
/// `UnsupportedProtocolVersionError` (the profile's code), answered here with HTTP 400.
pub use crate::methods::UNSUPPORTED_PROTOCOL_VERSION;

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// A header value as the client sends it: `value` itself when it is plain visible ASCII (with
/// inner spaces) that cannot be mistaken for an encoded value, else
/// `=?base64?{Base64 of its UTF-8}?=`.
pub(crate) fn encode_value(value: &str) -> Cow<'_, str> {
    let plain = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..0x7f).contains(&b))
        && value.trim_matches([' ', '\t']) == value
        && !is_sentinel(value);
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value)
        ))
    }
}

/// A header value as the server compares it with the body: decoded when it is in the sentinel
/// form; `None` when the sentinel holds no valid Base64 of UTF-8 (a malformed header).
pub(crate) fn decode_value(value: &str) -> Option<Cow<'_, str>> {
    if !is_sentinel(value) {
        return Some(Cow::Borrowed(value));
    }
    let inner = &value[SENTINEL_START.len()..value.len() - SENTINEL_END.len()];
    let bytes = STANDARD.decode(inner).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// The sentinel form: the markers are case-sensitive and must both be there.
fn is_sentinel(value: &str) -> bool {
    value.len() >= SENTINEL_START.len() + SENTINEL_END.len()
        && value.starts_with(SENTINEL_START)
        && value.ends_with(SENTINEL_END)
}

/// Stateless mode: the headers that mirror the body ("Server Validation" of the 2026-07-28
/// Streamable HTTP transport). A request needs `MCP-Protocol-Version` naming this revision
/// (any other: [`UNSUPPORTED_PROTOCOL_VERSION`]), which `_meta`'s protocol version, when
/// there, must repeat; `Mcp-Method`; and `Mcp-Name` for the methods that name a target,
/// compared after decoding its sentinel form. Every other failure is [`HEADER_MISMATCH`].
/// All are answered 400, with the request's id. The revision defines no header rules for
/// notifications: theirs are checked only when sent.
pub(crate) fn stateless_headers(
    headers: &HeaderMap,
    posted: &Posted<'_>,
) -> Result<(), Box<Response<Body>>> {
    if matches!(posted, Posted::Batch) {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: this MCP revision does not take JSON-RPC batches",
        )));
    }
    let Some(method) = posted.method() else {
        // An answer to a server request, or an invalid message the core answers: no method
        // to name.
        return Ok(());
    };
    let id = match posted {
        Posted::Request { id, .. } => Some(id),
        _ => None,
    };
    let required = id.is_some();
    let refuse = |code, message: &str, data| {
        Box::new(rpc_error_to(
            StatusCode::BAD_REQUEST,
            id,
            code,
            message,
            data,
        ))
    };
    let mismatch = |message: &str| refuse(HEADER_MISMATCH, message, None);
    // `to_str` refuses what is not visible ASCII: such a value is malformed, like a missing one.
    let header = |name| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(v), None) => Some(v.to_str().map_err(|_| ())),
            (Some(_), Some(_)) => Some(Err(())),
            (None, _) => None,
        }
    };

    match header(HEADER_PROTOCOL_VERSION) {
        Some(Ok(v)) if v == STATELESS_VERSION => {}
        Some(Ok(v)) => {
            return Err(refuse(
                UNSUPPORTED_PROTOCOL_VERSION,
                &format!(
                    "Unsupported protocol version {v}: this server speaks {STATELESS_VERSION}"
                ),
                Some(
                    json!({"supported": crate::tokio::revision::DISCOVERABLE_VERSIONS, "requested": v}),
                ),
            ))
        }
        Some(Err(())) => return Err(mismatch("MCP-Protocol-Version header is malformed")),
        None if required => return Err(mismatch("MCP-Protocol-Version header is required")),
        None => {}
    }
    // A request's `_meta` must name the revision and the client's capabilities. (MCP's params
    // are objects: a request with positional params is a method of the application's own,
    // which has no place for `_meta`.)
    if required && !posted.params().is_some_and(|p| p.is_array()) {
        let params = posted
            .params()
            .and_then(|p| serde_json::from_str::<serde_json::Value>(p.as_str()).ok());
        if let Some(problem) = crate::tokio::revision::meta_problem(params.as_ref()) {
            return Err(refuse(ErrorCode::INVALID_PARAMS, problem, None));
        }
    }
    let meta = member(posted.params(), "_meta");
    if let Some(v) = meta.and_then(|m| member_str(Some(m), META_PROTOCOL_VERSION)) {
        if v != STATELESS_VERSION {
            return Err(mismatch(&format!(
                "Header mismatch: MCP-Protocol-Version is {STATELESS_VERSION}, _meta's is {v}"
            )));
        }
    }
    match header(HEADER_METHOD) {
        Some(Ok(h)) if h == method => {}
        Some(Ok(h)) => {
            return Err(mismatch(&format!(
                "Header mismatch: Mcp-Method is '{h}', the body's method '{method}'"
            )))
        }
        Some(Err(())) => return Err(mismatch("Mcp-Method header is malformed")),
        None if required => return Err(mismatch("Mcp-Method header is required")),
        None => {}
    }
    let want = name_member(method).and_then(|key| member_str(posted.params(), key));
    match (want, header(HEADER_NAME)) {
        (None, None) => Ok(()),
        (Some(_), None) if !required => Ok(()),
        (Some(want), Some(Ok(got))) => match decode_value(got) {
            Some(got) if got == want => Ok(()),
            Some(got) => Err(mismatch(&format!(
                "Header mismatch: Mcp-Name is '{got}', the body's target '{want}'"
            ))),
            None => Err(mismatch(
                "Mcp-Name header holds no valid Base64 in its =?base64?...?= form",
            )),
        },
        (Some(_), None) => Err(mismatch("Mcp-Name header is required for this method")),
        (_, Some(Err(()))) => Err(mismatch("Mcp-Name header is malformed")),
        (None, Some(Ok(_))) => Err(mismatch(&format!(
            "Header mismatch: Mcp-Name header sent, but {method} names no target"
        ))),
    }
}

/// An `Mcp-Param-*` header of a request (the name lowercased): absent, its value decoded
/// from its `=?base64?...?=` form, or `Err` when it is repeated, not visible ASCII, or holds
/// no valid Base64 of UTF-8.
pub(crate) fn param_header(headers: &HeaderMap, name: &str) -> Result<Option<String>, ()> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(v), None) => {
            let text = v.to_str().map_err(|_| ())?;
            decode_value(text).map(|v| Some(v.into_owned())).ok_or(())
        }
        (Some(_), Some(_)) => Err(()),
    }
}

/// True when a POST with no session id, to a server in session mode, is of the stateless
/// revision: its `MCP-Protocol-Version` names no session revision, or (with no such header)
/// its `_meta` names a revision. A session revision's `initialize` names its revision in
/// `params.protocolVersion` and sends no such header, and its other requests without a
/// session id are refused as before.
pub(crate) fn asks_stateless(headers: &HeaderMap, posted: &Posted<'_>) -> bool {
    let header = headers.get(HEADER_PROTOCOL_VERSION);
    if header.is_some_and(|v| crate::ProtocolVersion::from_bytes(v.as_bytes()).is_none()) {
        return true;
    }
    header.is_none() && member(member(posted.params(), "_meta"), META_PROTOCOL_VERSION).is_some()
}

/// A 2026-07-28 request for a method the revision removed (`initialize`, `ping`,
/// `logging/setLevel`, `resources/subscribe`, `resources/unsubscribe`): 404 with Method not
/// found, whatever the router has (it serves the session revisions too).
pub(crate) fn removed_method(posted: &Posted<'_>) -> Option<Box<Response<Body>>> {
    let Posted::Request { id, method, .. } = posted else {
        return None;
    };
    crate::tokio::revision::REMOVED_METHODS
        .contains(&method.as_ref())
        .then(|| {
            Box::new(rpc_error_to(
                StatusCode::NOT_FOUND,
                Some(id),
                ErrorCode::METHOD_NOT_FOUND,
                &format!("Method not found: {method} is not part of {STATELESS_VERSION}"),
                None,
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_pass_and_others_are_encoded() {
        assert_eq!(encode_value("get_weather"), "get_weather");
        assert_eq!(encode_value("file:///a b.txt"), "file:///a b.txt");
        // The specification's own examples.
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn decoding_undoes_encoding_and_refuses_bad_base64() {
        for v in [
            "get_weather",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?x?=",
        ] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        // Not the sentinel form (wrong case, one marker only): taken literally.
        assert_eq!(
            decode_value("=?BASE64?SGk=?=").as_deref(),
            Some("=?BASE64?SGk=?=")
        );
        assert_eq!(
            decode_value("=?base64?SGk=").as_deref(),
            Some("=?base64?SGk=")
        );
        // The sentinel form around something that is not Base64 of UTF-8.
        assert_eq!(decode_value("=?base64?SGk?="), None);
        assert_eq!(decode_value("=?base64?/w==?="), None);
        assert_eq!(decode_value("=?base64??=").as_deref(), Some(""));
    }
}
