//! What the client answers when the server asks it something: elicitation, sampling and the
//! roots. The same handlers answer a session revision's server-to-client requests and a
//! 2026-07-28 `InputRequiredResult`'s input requests; the capabilities the client declares
//! follow from which handlers it has.

use std::prelude::rust_2021::*;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use rpcwire_tokio::{ErrorCode, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// `elicitation/create`.
pub const ELICITATION_CREATE: &str = "elicitation/create";
/// `sampling/createMessage`.
pub const SAMPLING_CREATE_MESSAGE: &str = "sampling/createMessage";
/// `roots/list`.
pub const ROOTS_LIST: &str = "roots/list";

/// A handler's future.
pub type HandlerFuture<T> = Pin<Box<dyn Future<Output = Result<T, RpcError>> + Send>>;

/// The server's question: `elicitation/create`'s params (form mode).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct ElicitRequest {
    /// What to show the user.
    #[serde(default)]
    pub message: String,
    /// The JSON Schema of the answer (a flat object of primitive properties).
    #[serde(rename = "requestedSchema", default)]
    pub requested_schema: Value,
    /// Every param as sent (`mode`, `url`, `_meta`, ...).
    #[serde(skip)]
    pub params: Value,
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// Answered (with `content`).
    Accept,
    /// Said no.
    Decline,
    /// Dismissed the question.
    Cancel,
}

/// The answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The answer's values (with `Accept`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    /// Accepted with these values.
    pub fn accept(content: Map<String, Value>) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// Declined.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        }
    }
}

/// One root the client offers (`roots/list`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name for it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

type ElicitFn = Arc<dyn Fn(ElicitRequest) -> HandlerFuture<ElicitResult> + Send + Sync>;
type SampleFn = Arc<dyn Fn(Value) -> HandlerFuture<Value> + Send + Sync>;

/// The client's answers to the server's requests. Each handler present is declared as a
/// capability (`elicitation`, `sampling`, `roots`); a request with no handler is answered
/// Method not found.
///
/// ```
/// use rpcwire_mcp::tokio::{ClientHandlers, ElicitResult, Root};
/// let handlers = ClientHandlers::new()
///     .elicitation(|request| async move {
///         let mut content = serde_json::Map::new();
///         content.insert("confirmed".into(), true.into());
///         Ok(ElicitResult::accept(content))
///     })
///     .roots(vec![Root { uri: "file:///work".into(), name: None }]);
/// assert!(handlers.capabilities()["elicitation"].is_object());
/// assert!(handlers.capabilities().get("sampling").is_none());
/// ```
#[derive(Clone, Default)]
pub struct ClientHandlers {
    elicit: Option<ElicitFn>,
    apply_defaults: bool,
    sample: Option<SampleFn>,
    roots: Option<Vec<Root>>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("elicitation", &self.elicit.is_some())
            .field("apply_defaults", &self.apply_defaults)
            .field("sampling", &self.sample.is_some())
            .field("roots", &self.roots)
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers: the client declares no capabilities.
    pub fn new() -> Self {
        ClientHandlers::default()
    }

    /// Answers `elicitation/create` (form mode). The properties of the requested schema the
    /// answer leaves out get their schema `default` when the answer accepts (the
    /// `elicitation.applyDefaults` capability is declared) unless
    /// [`apply_defaults(false)`](ClientHandlers::apply_defaults).
    pub fn elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ElicitRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, RpcError>> + Send + 'static,
    {
        self.elicit = Some(Arc::new(move |r| Box::pin(handler(r))));
        self.apply_defaults = true;
        self
    }

    /// Whether an accepted elicitation's missing values take their schema defaults.
    pub fn apply_defaults(mut self, on: bool) -> Self {
        self.apply_defaults = on;
        self
    }

    /// Answers `sampling/createMessage`: given its params, the `CreateMessageResult`
    /// (`role`, `content`, `model`, `stopReason`).
    pub fn sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.sample = Some(Arc::new(move |p| Box::pin(handler(p))));
        self
    }

    /// Answers `roots/list` with these roots.
    pub fn roots(mut self, roots: Vec<Root>) -> Self {
        self.roots = Some(roots);
        self
    }

    /// The capabilities these handlers declare.
    pub fn capabilities(&self) -> Value {
        let mut caps = Map::new();
        if self.elicit.is_some() {
            let form = if self.apply_defaults {
                json!({"applyDefaults": true})
            } else {
                json!({})
            };
            caps.insert("elicitation".into(), json!({"form": form}));
        }
        if self.sample.is_some() {
            caps.insert("sampling".into(), json!({}));
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({"listChanged": false}));
        }
        Value::Object(caps)
    }

    /// Answers one request of the server's (`method` with `params`).
    pub async fn answer(&self, method: &str, params: Value) -> Result<Value, RpcError> {
        let not_found = || RpcError::standard(ErrorCode::METHOD_NOT_FOUND);
        match method {
            ELICITATION_CREATE => {
                let handler = self.elicit.as_ref().ok_or_else(not_found)?;
                let mut request: ElicitRequest = serde_json::from_value(params.clone())
                    .map_err(|e| RpcError::invalid_params(e.to_string()))?;
                request.params = params;
                let schema = request.requested_schema.clone();
                let mut result = handler(request).await?;
                if self.apply_defaults && result.action == ElicitAction::Accept {
                    fill_defaults(&schema, result.content.get_or_insert_with(Map::new));
                }
                serde_json::to_value(result).map_err(|e| RpcError::internal(e.to_string()))
            }
            SAMPLING_CREATE_MESSAGE => {
                let handler = self.sample.as_ref().ok_or_else(not_found)?;
                handler(params).await
            }
            ROOTS_LIST => {
                let roots = self.roots.as_ref().ok_or_else(not_found)?;
                Ok(json!({ "roots": roots }))
            }
            _ => Err(not_found()),
        }
    }
}

/// Puts each top-level property's schema `default` into `content` where the answer has none.
fn fill_defaults(schema: &Value, content: &mut Map<String, Value>) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (name, property) in properties {
        if let Some(default) = property.get("default") {
            content
                .entry(name.clone())
                .or_insert_with(|| default.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn accepted_elicitation_takes_schema_defaults_and_keeps_given_values() {
        let handlers = ClientHandlers::new().elicitation(|_| async {
            let mut content = Map::new();
            content.insert("name".into(), json!("Ada"));
            Ok(ElicitResult::accept(content))
        });
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John"},
            "age": {"type": "integer", "default": 30},
            "note": {"type": "string"}}});
        let answer = handlers
            .answer(
                ELICITATION_CREATE,
                json!({"message": "?", "requestedSchema": schema}),
            )
            .await
            .unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {"name": "Ada", "age": 30}})
        );
        let off = handlers.clone().apply_defaults(false);
        let answer = off
            .answer(
                ELICITATION_CREATE,
                json!({"message": "?", "requestedSchema": schema}),
            )
            .await
            .unwrap();
        assert_eq!(answer["content"], json!({"name": "Ada"}));
    }

    #[tokio::test]
    async fn missing_handler_is_method_not_found() {
        let e = ClientHandlers::new()
            .answer(SAMPLING_CREATE_MESSAGE, json!({}))
            .await
            .unwrap_err();
        assert_eq!(e.error_code(), ErrorCode::METHOD_NOT_FOUND);
        assert_eq!(ClientHandlers::new().capabilities(), json!({}));
    }
}
