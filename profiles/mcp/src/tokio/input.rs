//! Multi round-trip requests (2026-07-28): a tool that needs the client's input (an
//! elicitation, a sampling, the roots) answers [`InputRequired`]; the client answers each
//! request and retries the call with `inputResponses` and the sealed `requestState`, which the
//! tool reads back from its [`ToolContext`](super::ToolContext). On a session revision the
//! server asks the client itself (server-to-client requests) and runs the tool again with the
//! answers, so one tool serves both.

use std::prelude::rust_2021::*;

use serde_json::{json, Map, Value};

use rpcwire_tokio::{Context, ErrorCode, RpcError};

use super::request_state::{Binding, RequestStateSeal};
use super::revision;
use crate::methods;

/// The most rounds a call runs on a session revision before it gives up (a tool that asks
/// again and again would otherwise never end).
pub(crate) const MAX_SESSION_ROUNDS: usize = 8;

/// What a tool asks of the client before it can finish: input requests by key (answered in
/// the retry's `inputResponses` under the same key), and state of its own, sealed into
/// `requestState` and handed back on the retry
/// ([`ToolContext::request_state`](super::ToolContext::request_state)).
///
/// ```
/// use rpcwire_mcp::tokio::{InputRequired, ToolContext, ToolError, ToolReply, ToolResult};
///
/// async fn book(ctx: ToolContext, _: serde_json::Value) -> Result<ToolReply, ToolError> {
///     match ctx.input_response("when").and_then(|r| r["content"]["date"].as_str()) {
///         Some(date) => Ok(ToolResult::text(format!("booked for {date}")).into()),
///         None => Ok(InputRequired::new()
///             .elicit("when", "Which date?", serde_json::json!({"type": "object",
///                 "properties": {"date": {"type": "string"}}, "required": ["date"]}))
///             .state(serde_json::json!({"step": 1}))
///             .into()),
///     }
/// }
/// ```
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequired {
    pub(crate) requests: Map<String, Value>,
    pub(crate) state: Option<Value>,
}

impl InputRequired {
    /// No requests yet.
    pub fn new() -> Self {
        InputRequired::default()
    }

    /// Any input request: `method` (`elicitation/create`, `sampling/createMessage`,
    /// `roots/list`) with its params, answered under `key`.
    pub fn request(mut self, key: &str, method: &str, params: Value) -> Self {
        self.requests
            .insert(key.to_owned(), json!({"method": method, "params": params}));
        self
    }

    /// An elicitation (form mode): `message` and the requested schema.
    pub fn elicit(self, key: &str, message: &str, requested_schema: Value) -> Self {
        self.request(
            key,
            "elicitation/create",
            json!({"message": message, "requestedSchema": requested_schema}),
        )
    }

    /// A sampling request (`sampling/createMessage` params).
    pub fn sample(self, key: &str, params: Value) -> Self {
        self.request(key, "sampling/createMessage", params)
    }

    /// The client's roots.
    pub fn list_roots(self, key: &str) -> Self {
        self.request(key, "roots/list", json!({}))
    }

    /// State to get back on the retry (sealed: the client can read it but not change it).
    pub fn state(mut self, state: Value) -> Self {
        self.state = Some(state);
        self
    }

    /// The keys of the requests, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.requests.keys().map(String::as_str)
    }

    /// Keeps only the requests whose capability the client declared (the revision forbids
    /// sending others); the names of the capabilities dropped requests needed.
    pub(crate) fn keep_declared(&mut self, declared: &Map<String, Value>) -> Vec<&'static str> {
        let mut missing = Vec::new();
        self.requests.retain(|_, request| {
            let need = capability_of(request["method"].as_str().unwrap_or(""));
            match need {
                Some(cap) if !declared.contains_key(cap) => {
                    if !missing.contains(&cap) {
                        missing.push(cap);
                    }
                    false
                }
                _ => true,
            }
        });
        missing
    }
}

/// The client capability an input request's method needs.
pub(crate) fn capability_of(method: &str) -> Option<&'static str> {
    match method {
        "elicitation/create" => Some("elicitation"),
        "sampling/createMessage" => Some("sampling"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

/// The error a request gets when it needs client capabilities the client did not declare:
/// `data.requiredCapabilities` is a `ClientCapabilities` object naming them.
pub fn missing_capability_error(capabilities: &[&str]) -> rpcwire_tokio::RpcError {
    let required: Map<String, Value> = capabilities
        .iter()
        .map(|c| ((*c).to_owned(), json!({})))
        .collect();
    rpcwire_tokio::RpcError::new(
        methods::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!(
            "Missing required client capability: {}",
            capabilities.join(", ")
        ),
    )
    .with_data(&json!({"requiredCapabilities": required}))
}

/// What a call's request says beyond its name and arguments: its revision's `_meta` and the
/// answers of an earlier round.
#[derive(Debug, Default)]
pub(crate) struct RequestInfo {
    /// A 2026-07-28 request.
    pub(crate) stateless: bool,
    /// The capabilities it declares (2026-07-28).
    pub(crate) capabilities: Option<Map<String, Value>>,
    /// The log level its `_meta` asks for (2026-07-28; none: no log messages).
    pub(crate) log_level: Option<crate::LogLevel>,
    /// `inputResponses`.
    pub(crate) responses: Map<String, Value>,
    /// The opened `requestState`.
    pub(crate) state: Option<Value>,
}

impl RequestInfo {
    /// Reads a request's params; Invalid params when a 2026-07-28 request's `_meta` is
    /// incomplete or `inputResponses` is not an object.
    pub(crate) fn of(params: &Value) -> Result<RequestInfo, rpcwire_tokio::RpcError> {
        let stateless = revision::is_stateless(Some(params));
        if stateless {
            if let Some(problem) = revision::meta_problem(Some(params)) {
                return Err(rpcwire_tokio::RpcError::new(
                    rpcwire_tokio::ErrorCode::INVALID_PARAMS,
                    problem,
                ));
            }
        }
        let responses = match params.get("inputResponses") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(m)) => m.clone(),
            Some(_) => {
                return Err(rpcwire_tokio::RpcError::invalid_params(
                    "inputResponses must be an object",
                ))
            }
        };
        let log_level = params["_meta"][methods::META_LOG_LEVEL]
            .as_str()
            .and_then(|l| crate::LogLevel::from_bytes(l.as_bytes()));
        Ok(RequestInfo {
            stateless,
            capabilities: revision::client_capabilities(Some(params)).cloned(),
            log_level,
            responses,
            state: None,
        })
    }
}

/// A session revision's input round: the server sends the input requests to the client
/// itself; the next round's request info, with the answers and the state.
pub(crate) async fn ask_peer(
    ctx: &Context,
    ask: &mut InputRequired,
) -> Result<RequestInfo, RpcError> {
    let mut next = RequestInfo {
        state: ask.state.take(),
        ..RequestInfo::default()
    };
    for (key, request) in &ask.requests {
        let method = request["method"].as_str().unwrap_or_default();
        let answer: Value = ctx
            .peer()
            .call(method, request["params"].clone())
            .await
            .map_err(|e| RpcError::internal(format!("{method} failed: {e}")))?;
        next.responses.insert(key.clone(), answer);
    }
    Ok(next)
}

/// Opens a request's `requestState` for `binding` into `info` (Invalid params when it does
/// not open: tampered, expired, replayed, sealed for another request, or not a string).
pub(crate) fn open_state(
    seal: Option<&RequestStateSeal>,
    p: &Value,
    binding: &Binding<'_>,
    info: &mut RequestInfo,
) -> Result<(), RpcError> {
    let refused = || {
        RpcError::new(
            ErrorCode::INVALID_PARAMS,
            "Invalid params: invalid requestState",
        )
    };
    let token = match p.get("requestState") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(token)) => token,
        Some(_) => return Err(refused()),
    };
    let seal = seal.ok_or_else(refused)?;
    let state = seal.open(token, binding).map_err(|e| {
        tracing::debug!(error = %e, method = binding.method, target = binding.target, "requestState refused");
        refused()
    })?;
    info.state = Some(state);
    Ok(())
}

/// An `InputRequiredResult`: the requests the client declared the capabilities for, and the
/// state sealed for this tool and caller. Requests the client cannot answer are dropped; when
/// none is left the call needs a capability the client lacks (-32021).
pub(crate) fn input_required(
    seal: Option<&RequestStateSeal>,
    info: &RequestInfo,
    binding: &Binding<'_>,
    ask: &mut InputRequired,
) -> Result<Value, RpcError> {
    let declared = info.capabilities.clone().unwrap_or_default();
    let missing = ask.keep_declared(&declared);
    if ask.requests.is_empty() && !missing.is_empty() {
        return Err(missing_capability_error(&missing));
    }
    let seal = seal.ok_or_else(|| RpcError::internal("no key to seal requestState with"))?;
    let state = seal.seal(binding, ask.state.as_ref().unwrap_or(&Value::Null));
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": ask.requests,
        "requestState": state,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undeclared_requests_are_dropped() {
        let mut ir = InputRequired::new()
            .elicit("a", "?", json!({"type": "object"}))
            .sample("b", json!({"messages": [], "maxTokens": 1}))
            .list_roots("c");
        let declared = json!({"sampling": {}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let missing = ir.keep_declared(&declared);
        assert_eq!(ir.keys().collect::<Vec<_>>(), ["b"]);
        assert_eq!(missing, ["elicitation", "roots"]);
    }

    #[test]
    fn the_missing_capability_error_names_an_object() {
        let e = missing_capability_error(&["sampling"]);
        assert_eq!(e.error_code(), methods::MISSING_REQUIRED_CLIENT_CAPABILITY);
        let data: Value =
            serde_json::from_str(e.data.as_deref().map_or("null", |d| d.get())).unwrap_or_default();
        assert_eq!(data, json!({"requiredCapabilities": {"sampling": {}}}));
    }
}
