//! What a tool answers: a [`ToolResult`] (content, structured content, an error flag), or with
//! [`ToolReply`] a request for the client's input; the [`IntoToolResult`] conversions that let
//! a tool return text, [`Json`] or either of them; and [`ToolError`].

use std::prelude::rust_2021::*;

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::input::InputRequired;

/// The `result` of `tools/call`: content items, optional structured content, and whether the
/// tool failed. Also what [`McpClient::call_tool`](super::McpClient::call_tool) returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolResult {
    /// Content items (`{"type": "text", "text": ...}` and the other MCP content types).
    pub content: Vec<Value>,
    /// `structuredContent`: the result as a JSON object, for tools with an output schema.
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// `isError`: the tool ran and failed (the model sees why).
    #[serde(rename = "isError", default)]
    pub is_error: bool,
}

impl ToolResult {
    /// One text item.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![json!({"type": "text", "text": text.into()})],
            structured_content: None,
            is_error: false,
        }
    }

    /// A result made of these content items (text, image, audio, embedded resource, resource
    /// link).
    pub fn with_content(items: impl IntoIterator<Item = super::surface::Content>) -> Self {
        ToolResult {
            content: items.into_iter().map(|c| c.to_value()).collect(),
            ..ToolResult::default()
        }
    }

    /// A failed tool's result: one text item saying why, `isError: true`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(text)
        }
    }

    /// The text of every text item, joined with newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|c| c["type"] == "text")
            .filter_map(|c| c["text"].as_str())
            .collect();
        texts.join("\n")
    }
}

/// What a tool handler may return: text, a [`ToolResult`], or [`Json`] (structured content).
pub trait IntoToolResult {
    /// The `tools/call` result.
    fn into_tool_result(self) -> ToolResult;

    /// The tool's answer: a result, or (for [`InputRequired`] and [`ToolReply`]) a request
    /// for the client's input.
    fn into_reply(self) -> ToolReply
    where
        Self: Sized,
    {
        ToolReply::Complete(self.into_tool_result())
    }
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

/// A structured result: sent as `structuredContent` and, for older clients, as its JSON text
/// in a text item.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => ToolResult {
                content: vec![json!({"type": "text", "text": value.to_string()})],
                structured_content: Some(value),
                is_error: false,
            },
            Err(e) => ToolResult::error(format!("cannot serialize the result: {e}")),
        }
    }
}

/// A tool's failure: it becomes a result with `isError: true` and this message as text (the
/// model sees it), not a JSON-RPC error. `?` turns any `std::error::Error` into one. A call
/// the tool cannot make for lack of a client capability is a protocol error instead
/// ([`ToolError::missing_capability`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    pub(crate) message: String,
    /// The client capabilities the call needs and the client did not declare.
    pub(crate) missing: Vec<&'static str>,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            missing: Vec::new(),
        }
    }

    /// The call needs client capabilities (`"sampling"`, `"elicitation"`, `"roots"`) the
    /// client did not declare: answered `MissingRequiredClientCapabilityError` (-32021, HTTP
    /// 400), not a tool result.
    pub fn missing_capability(capabilities: &[&'static str]) -> Self {
        ToolError {
            message: format!("missing client capability: {}", capabilities.join(", ")),
            missing: capabilities.to_vec(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError::new(e.to_string())
    }
}

/// What a tool answers: a result, or a request for input ([`InputRequired`]). Tools that
/// never ask return a [`ToolResult`] (or text, or [`Json`](super::Json)) instead.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolReply {
    /// The call is done.
    Complete(ToolResult),
    /// The client must answer these requests and retry.
    InputRequired(InputRequired),
}

impl From<ToolResult> for ToolReply {
    fn from(r: ToolResult) -> Self {
        ToolReply::Complete(r)
    }
}

impl From<InputRequired> for ToolReply {
    fn from(r: InputRequired) -> Self {
        ToolReply::InputRequired(r)
    }
}

impl IntoToolResult for ToolReply {
    fn into_tool_result(self) -> ToolResult {
        match self {
            ToolReply::Complete(r) => r,
            ToolReply::InputRequired(_) => {
                ToolResult::error("this tool needs input from the client to finish")
            }
        }
    }

    fn into_reply(self) -> ToolReply {
        self
    }
}

impl IntoToolResult for InputRequired {
    fn into_tool_result(self) -> ToolResult {
        ToolReply::InputRequired(self).into_tool_result()
    }

    fn into_reply(self) -> ToolReply {
        ToolReply::InputRequired(self)
    }
}
