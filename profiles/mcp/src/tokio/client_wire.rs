//! How the client's requests go out on the revision it speaks: as they are on a session
//! revision (after `initialize`), or as 2026-07-28 has them, each carrying `_meta` (the
//! revision, the client's capabilities and name) and each `InputRequiredResult` answered by
//! the client's handlers and retried with `inputResponses` and the server's `requestState`.

use std::prelude::rust_2021::*;

use rpcwire_tokio::{CallError, Client};
use serde_json::{json, Map, Value};

use super::client_config::McpError;
use super::client_handlers::ClientHandlers;
use crate::methods::{
    META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_PROTOCOL_VERSION, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::STATELESS_VERSION;

/// The result type of a 2026-07-28 result that asks for the client's input.
const INPUT_REQUIRED: &str = "input_required";

/// The revision's request shape and the client's handlers, shared by every call.
#[derive(Debug, Clone)]
pub(crate) struct Wire {
    /// Speaks 2026-07-28 (no handshake, `_meta` on every request).
    pub(crate) stateless: bool,
    /// What each 2026-07-28 request's `_meta` holds.
    meta: Map<String, Value>,
    pub(crate) handlers: ClientHandlers,
    max_rounds: usize,
    max_requests: usize,
}

impl Wire {
    pub(crate) fn new(
        stateless: bool,
        client_info: Value,
        handlers: ClientHandlers,
        max_rounds: usize,
        max_requests: usize,
    ) -> Wire {
        let mut meta = Map::new();
        meta.insert(META_PROTOCOL_VERSION.into(), json!(STATELESS_VERSION));
        meta.insert(META_CLIENT_CAPABILITIES.into(), handlers.capabilities());
        meta.insert(META_CLIENT_INFO.into(), client_info);
        Wire {
            stateless,
            meta,
            handlers,
            max_rounds,
            max_requests,
        }
    }

    /// `params` with this revision's `_meta` members (members the caller put there stay).
    fn with_meta(&self, mut params: Value) -> Value {
        if !self.stateless {
            return params;
        }
        if params.is_null() {
            params = json!({});
        }
        if let Some(object) = params.as_object_mut() {
            let meta = object.entry("_meta").or_insert_with(|| json!({}));
            if let Some(meta) = meta.as_object_mut() {
                for (k, v) in &self.meta {
                    meta.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
        }
        params
    }

    /// One request, through as many input rounds as the server asks (at most the limit).
    pub(crate) async fn request(
        &self,
        client: &Client,
        method: &str,
        params: Value,
    ) -> Result<Value, McpError> {
        let mut params = self.with_meta(params);
        if !self.stateless {
            return Ok(client.call(method, params).await?);
        }
        for _ in 0..=self.max_rounds {
            let result: Value = client.call(method, params.clone()).await?;
            // A result with no `resultType` is complete (the revision's default).
            if result.get("resultType").and_then(Value::as_str) != Some(INPUT_REQUIRED) {
                return Ok(result);
            }
            let requests = result
                .get("inputRequests")
                .and_then(Value::as_object)
                .ok_or(McpError::BadInputRequest("inputRequests is not an object"))?;
            if requests.len() > self.max_requests {
                return Err(McpError::BadInputRequest("too many input requests"));
            }
            let mut responses = Map::new();
            for (key, request) in requests {
                let method = request
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or(McpError::BadInputRequest("an input request has no method"))?;
                let request_params = request.get("params").cloned().unwrap_or(json!({}));
                let answer = self
                    .handlers
                    .answer(method, request_params)
                    .await
                    .map_err(McpError::Input)?;
                responses.insert(key.clone(), answer);
            }
            let Some(object) = params.as_object_mut() else {
                return Err(McpError::BadInputRequest(
                    "the request has no params object",
                ));
            };
            object.insert("inputResponses".into(), Value::Object(responses));
            // The state goes back exactly as it came, and only when it came.
            match result.get("requestState") {
                Some(state) => object.insert("requestState".into(), state.clone()),
                None => object.remove("requestState"),
            };
        }
        Err(McpError::TooManyRounds(self.max_rounds))
    }

    /// `server/discover`, retried once with this revision when the server refuses the first
    /// as an unsupported version but lists 2026-07-28 among those it speaks.
    pub(crate) async fn discover(&self, client: &Client) -> Result<Value, McpError> {
        let params = self.with_meta(json!({}));
        match client
            .call(crate::methods::SERVER_DISCOVER, params.clone())
            .await
        {
            Err(CallError::Rpc(e)) if e.error_code() == UNSUPPORTED_PROTOCOL_VERSION => {
                let data: Value = e
                    .data
                    .as_deref()
                    .and_then(|d| serde_json::from_str(d.get()).ok())
                    .unwrap_or_default();
                let supported = data
                    .get("supported")
                    .and_then(Value::as_array)
                    .is_some_and(|s| s.iter().any(|v| v == STATELESS_VERSION));
                if !supported {
                    return Err(McpError::UnsupportedVersion(data.to_string()));
                }
                Ok(client.call(crate::methods::SERVER_DISCOVER, params).await?)
            }
            other => Ok(other?),
        }
    }
}
