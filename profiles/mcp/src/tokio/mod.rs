//! MCP over tokio (feature `tokio`): an [`McpServer`] whose tools are async fns with typed
//! arguments, built into an [`rpcwire_tokio::Router`] so that any transport carrying a router
//! serves it (stdio, TCP, a child process, HTTP), and an [`McpClient`].
//!
//! The protocol rules are the no_std part's ([`Handshake`](crate::Handshake),
//! [`ProtocolVersion`](crate::ProtocolVersion), [`LogLevel`](crate::LogLevel), the method
//! names); this module adds the async plumbing and serde_json shapes.
//!
//! ```
//! use rpcwire_mcp::tokio::{McpClient, McpServer, ToolContext, ToolError};
//! use serde::Deserialize;
//!
//! #[derive(Deserialize)]
//! struct Add { a: i64, b: i64 }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = McpServer::new("calc", "1.0").tool_with_schema(
//!     "add",
//!     "Adds two integers.",
//!     serde_json::json!({"type": "object", "required": ["a", "b"],
//!         "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}),
//!     |_ctx: ToolContext, Add { a, b }| async move { Ok::<_, ToolError>(format!("{}", a + b)) },
//! );
//! // Any transport that carries a Router: here an in-memory pipe.
//! let (server_io, client_io) = tokio::io::duplex(64 << 10);
//! let served = server.builder().run_io(server_io);
//! let client = McpClient::connect(|builder| builder.run_io(client_io)).await?;
//! assert_eq!(client.list_tools().await?[0].name, "add");
//! let sum = client.call_tool("add", serde_json::json!({"a": 2, "b": 3})).await?;
//! assert_eq!(sum.joined_text(), "5");
//! client.close().await?;
//! served.join().await?;
//! # Ok(()) }
//! ```
// Indexing here is serde_json's `Value` indexing: a read of a missing member gives `Null`, and
// writes go into objects built right here with `json!({..})`; neither can panic.
#![allow(clippy::indexing_slicing)]

mod client;
mod client_calls;
mod client_config;
mod client_handlers;
mod client_wire;
mod context;
pub(crate) mod header_params;
mod input;
mod listen;
mod request_state;
pub mod revision;
mod server;
mod surface;
mod surface_calls;
mod task_calls;
mod tasks;
mod tool_calls;
mod tool_result;

pub use client::{McpClient, Progress, RunningCall, ServerTool};
pub use client_calls::{
    Completion, PromptMessageReceived, PromptResult, ReadContents, ServerPrompt,
    ServerPromptArgument, ServerResource, ServerResourceTemplate,
};
pub use client_config::{ClientOptions, McpError};
pub use client_handlers::{
    ClientHandlers, ElicitAction, ElicitRequest, ElicitResult, HandlerFuture, Root,
    ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE,
};
pub use context::ToolContext;
pub use header_params::MAX_HEADER_PARAMS;
pub use input::{missing_capability_error, InputRequired};
pub use listen::{Change, Changes, CHANGE_BUFFER, MAX_RESOURCE_SUBSCRIPTIONS};
pub use request_state::{
    Binding, RequestStateSeal, StateError, DEFAULT_MAX_OPENED, DEFAULT_MAX_OPENED_PER_CALLER,
    DEFAULT_MAX_STATE_LEN, DEFAULT_STATE_TTL,
};
#[cfg(not(feature = "schemars"))]
pub use server::SchemarsFeatureRequired;
pub use server::{mcp_builder, McpServer};
pub use surface::{
    Answer, Content, PromptArgument, PromptMessage, ResourceContents, ResourceInfo, TemplateError,
    UriTemplate, MAX_COMPLETION_VALUES,
};
pub use tasks::{TaskSettings, TaskSupport, TASKS_EXTENSION};
pub use tool_result::{IntoToolResult, Json, ToolError, ToolReply, ToolResult};
