//! The server's HTTP answers that carry JSON-RPC: errors with a JSON-RPC error object as
//! their body (what MCP SDKs show), and a body's JSON answer with the status HTTP gives it.
//! Also what a request's `Accept` allows.

use std::prelude::rust_2021::*;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, StatusCode};
use rpcwire::wire::{parse, Id, Message, ParseLimits, Parsed};
use rpcwire::ErrorCode;
use rpcwire_http::profile::{json, AcceptedMedia, Body};
use serde_json::{json, Value};

/// An HTTP error with a JSON-RPC error object as its body, for a body whose id is not known
/// (`null`).
pub(crate) fn rpc_error(code: StatusCode, rpc_code: i32, message: &str) -> Response<Body> {
    rpc_error_to(code, None, ErrorCode(rpc_code), message, None)
}

/// An HTTP error whose body answers the request `id` (`null` for anything but a request) with
/// a JSON-RPC error.
pub(crate) fn rpc_error_to(
    status: StatusCode,
    id: Option<&Id<'_>>,
    code: ErrorCode,
    message: &str,
    data: Option<Value>,
) -> Response<Body> {
    let id = id
        .and_then(|id| serde_json::from_str::<Value>(id.raw()).ok())
        .unwrap_or(Value::Null);
    let mut error = json!({"code": code.0, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    let mut r = json(Bytes::from(body.to_string()));
    *r.status_mut() = status;
    r
}

/// A body's answer as JSON, with the status its one error (if it is one) calls for: 429 with
/// `Retry-After` for a call the rate limit refused; in the stateless revision, 404 for a
/// method the server does not have (its JSON-RPC error tells it from a server with no MCP
/// endpoint). 200 for anything else.
pub(crate) fn json_answer(answer: Bytes, stateless: bool) -> Response<Body> {
    let code = error_code(&answer);
    let mut r = json(answer);
    match code {
        Some(rpcwire_service::RATE_LIMITED) => {
            *r.status_mut() = StatusCode::TOO_MANY_REQUESTS;
            // The bucket refills continuously: one second is the usual wait for one call.
            r.headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        }
        Some(ErrorCode::METHOD_NOT_FOUND) if stateless => *r.status_mut() = StatusCode::NOT_FOUND,
        // 2026-07-28: a request needing a client capability the client did not declare, and
        // headers that disagree with the arguments (the tool's `x-mcp-header` parameters).
        Some(crate::methods::MISSING_REQUIRED_CLIENT_CAPABILITY | super::HEADER_MISMATCH)
            if stateless =>
        {
            *r.status_mut() = StatusCode::BAD_REQUEST
        }
        _ => {}
    }
    r
}

/// A 2026-07-28 answer as the revision wants it: a result with `resultType` (and, for a
/// cacheable method, `ttlMs` and `cacheScope`) whatever handler made it; a `server/discover`
/// result lists the revisions this transport's mode speaks (`versions`: the router's
/// `McpServer` speaks them all, a stateless-mode server only 2026-07-28). Anything that is
/// not a result object is sent as it is.
pub(crate) fn completed_answer(method: &str, answer: Bytes, versions: &[&str]) -> Bytes {
    if !answer.starts_with(br#"{"jsonrpc":"2.0","result":{"#) {
        return answer;
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(&answer) else {
        return answer;
    };
    match message.get_mut("result").and_then(Value::as_object_mut) {
        Some(result) => {
            crate::tokio::revision::complete_result(method, result);
            if method == crate::methods::SERVER_DISCOVER {
                result.insert("supportedVersions".into(), json!(versions));
            }
        }
        None => return answer,
    }
    Bytes::from(message.to_string())
}

/// The code of an error response (not a batch's array); `None` for anything else. Parsed
/// only when the body starts as the core writes an error response: this looks at every JSON
/// answer, tool results included.
fn error_code(answer: &[u8]) -> Option<ErrorCode> {
    if !answer.starts_with(br#"{"jsonrpc":"2.0","error":"#) {
        return None;
    }
    match parse(answer, ParseLimits::default()) {
        Ok(Parsed::Single(Ok(Message::Response(r)))) => r.outcome.err().map(|e| e.code),
        _ => None,
    }
}

/// What the client's `Accept` allows: (JSON, event stream). No header means JSON; `*/*` means
/// both (an MCP client that takes anything takes an event stream too).
pub(crate) fn accepts(headers: &HeaderMap) -> (bool, bool) {
    match AcceptedMedia::of(headers) {
        None => (true, false),
        Some(m) => (m.json || m.any, m.sse || m.any),
    }
}

/// A header's value, when it is visible ASCII.
pub(crate) fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_of_json_answers() {
        let limited =
            br#"{"jsonrpc":"2.0","error":{"code":-32041,"message":"Too many requests"},"id":1}"#;
        let r = json_answer(Bytes::from_static(limited), false);
        assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(r.headers()[header::RETRY_AFTER], "1");
        let missing =
            br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}"#;
        assert_eq!(
            json_answer(Bytes::from_static(missing), true).status(),
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            json_answer(Bytes::from_static(missing), false).status(),
            StatusCode::OK
        );
        // A result that mentions the code is no error; a batch's array keeps 200.
        for body in [
            &br#"{"jsonrpc":"2.0","result":{"error":-32041},"id":1}"#[..],
            &br#"[{"jsonrpc":"2.0","error":{"code":-32041,"message":"m"},"id":1}]"#[..],
        ] {
            assert_eq!(
                json_answer(Bytes::copy_from_slice(body), true).status(),
                StatusCode::OK
            );
        }
    }
}
