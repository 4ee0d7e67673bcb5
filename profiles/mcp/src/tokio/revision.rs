//! The 2026-07-28 revision's per-request rules, shared by the server's handlers and the
//! Streamable HTTP transport: which requests are of that revision (their `_meta` names it),
//! what their `_meta` must hold, the members every result carries (`resultType`, and the
//! caching hints of the cacheable results), and the methods the revision removed.

use std::prelude::rust_2021::*;

use rpcwire_tokio::{ErrorCode, RpcError};
use serde_json::{Map, Value};

use crate::{methods, MetaProblem};

pub use crate::stateless::{REMOVED_METHODS, STATELESS_VERSION, SUPPORTED_VERSIONS};

/// The revisions a `server/discover` lists and an `UnsupportedProtocolVersionError` names:
/// those a request can name in its `_meta` (the session revisions start with `initialize`
/// instead).
pub const DISCOVERABLE_VERSIONS: [&str; 1] = [STATELESS_VERSION];

/// The results a client may cache (2026-07-28 "Caching"): each carries `ttlMs` and
/// `cacheScope`.
pub const CACHEABLE_METHODS: [&str; 6] = [
    methods::SERVER_DISCOVER,
    methods::TOOLS_LIST,
    "prompts/list",
    "resources/list",
    "resources/templates/list",
    "resources/read",
];

/// The revision a request's params name in `_meta`, if any (as sent, any string).
pub fn requested_version(params: Option<&Value>) -> Option<&str> {
    params?
        .get("_meta")?
        .get(methods::META_PROTOCOL_VERSION)?
        .as_str()
}

/// True when the request's `_meta` names the 2026-07-28 revision.
pub fn is_stateless(params: Option<&Value>) -> bool {
    requested_version(params) == Some(STATELESS_VERSION)
}

/// What is wrong with a 2026-07-28 request's `_meta` (answered Invalid params, -32602):
/// it must be there and hold the protocol version and the client's capabilities (an object);
/// `clientInfo` is recommended, not required.
pub fn meta_problem(params: Option<&Value>) -> Option<&'static str> {
    let problem = match params.and_then(|p| p.get("_meta")) {
        None => MetaProblem::Missing,
        Some(meta) if !meta.is_object() => MetaProblem::NotAnObject,
        Some(meta)
            if !meta
                .get(methods::META_PROTOCOL_VERSION)
                .is_some_and(Value::is_string) =>
        {
            MetaProblem::NoProtocolVersion
        }
        Some(meta)
            if !meta
                .get(methods::META_CLIENT_CAPABILITIES)
                .is_some_and(Value::is_object) =>
        {
            MetaProblem::NoClientCapabilities
        }
        Some(_) => return None,
    };
    Some(problem.message())
}

/// The client capabilities a 2026-07-28 request declares (`None`: not a request of that
/// revision, or none declared).
pub fn client_capabilities(params: Option<&Value>) -> Option<&Map<String, Value>> {
    params?
        .get("_meta")?
        .get(methods::META_CLIENT_CAPABILITIES)?
        .as_object()
}

/// Adds what a 2026-07-28 result of `method` must carry and does not yet: `resultType`
/// (`"complete"`), and for a cacheable result `ttlMs` (0: do not reuse) and `cacheScope`
/// (`"private"`). What the handler set is kept (an `InputRequiredResult`'s `resultType`, its
/// own caching hints).
pub fn complete_result(method: &str, result: &mut Map<String, Value>) {
    result
        .entry("resultType")
        .or_insert_with(|| Value::from("complete"));
    if CACHEABLE_METHODS.contains(&method) {
        result.entry("ttlMs").or_insert_with(|| Value::from(0));
        result
            .entry("cacheScope")
            .or_insert_with(|| Value::from("private"));
    }
}

/// A method 2026-07-28 removed (`initialize`, `ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`), asked for by a request of that revision:
/// Method not found, as over Streamable HTTP (where the transport answers it with 404).
pub(crate) fn removed_in_stateless(params: &Value) -> Result<(), RpcError> {
    if is_stateless(Some(params)) {
        return Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND));
    }
    Ok(())
}

/// A result as the request's revision wants it: on 2026-07-28, with `resultType` (and the
/// caching hints of a cacheable result).
pub(crate) fn completed(method: &str, params: &Value, mut result: Value) -> Value {
    if is_stateless(Some(params)) {
        if let Some(object) = result.as_object_mut() {
            complete_result(method, object);
        }
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_completed_and_what_is_set_is_kept() {
        let mut list = json!({"tools": []})
            .as_object()
            .cloned()
            .unwrap_or_default();
        complete_result("tools/list", &mut list);
        assert_eq!(
            Value::Object(list),
            json!({"tools": [], "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
        );
        let mut call = json!({"resultType": "input_required", "ttlMs": 5})
            .as_object()
            .cloned()
            .unwrap_or_default();
        complete_result("tools/call", &mut call);
        assert_eq!(
            Value::Object(call),
            json!({"resultType": "input_required", "ttlMs": 5})
        );
    }

    #[test]
    fn meta_problems() {
        let caps = json!({});
        let ok = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps}});
        assert_eq!(meta_problem(Some(&ok)), None);
        assert!(is_stateless(Some(&ok)));
        for bad in [
            json!({}),
            json!({"_meta": 1}),
            json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}),
            json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": []}}),
        ] {
            assert!(meta_problem(Some(&bad)).is_some(), "{bad}");
        }
        assert!(meta_problem(None).is_some());
    }
}
