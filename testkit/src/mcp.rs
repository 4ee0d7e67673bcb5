//! The MCP server harness (feature `mcp`).

use rpcwire_mcp::tokio::McpServer;
use rpcwire_tokio::Builder;
use serde_json::json;

use crate::case::{Frame, Id, Message};
use crate::model::Limits;
use crate::Harness;

/// The protocol revision the harness's handshake asks for (it refuses batches).
pub const MCP_REVISION: &str = "2025-06-18";

impl Harness<Builder> {
    /// A harness for an MCP server: each case starts with the `initialize` handshake
    /// (revision [`MCP_REVISION`]) and `notifications/initialized`, then the case's frames;
    /// batches are refused whole, as MCP requires since 2025-06-18.
    ///
    /// ```
    /// use rpcwire_mcp::tokio::{McpServer, ToolError};
    /// use rpcwire_testkit::{Case, Frame, Harness, Message};
    /// use serde_json::json;
    ///
    /// let server = McpServer::new("demo", "1.0.0").tool_with_schema(
    ///     "echo", "Echoes.", json!({"type": "object"}),
    ///     |_ctx, args: serde_json::Value| async move { Ok::<_, ToolError>(args.to_string()) },
    /// );
    /// let case = Case::new(vec![Frame::Single(Message::request("tools/list", json!({}), 2))]);
    /// assert_eq!(Harness::mcp(server).check(&case), Ok(()));
    /// ```
    pub fn mcp(server: McpServer) -> Self {
        let initialize = Message::Request {
            method: "initialize".into(),
            params: Some(json!({
                "protocolVersion": MCP_REVISION,
                "capabilities": {},
                "clientInfo": {"name": "rpcwire-testkit", "version": env!("CARGO_PKG_VERSION")}
            })),
            id: Id::Str("rpcwire-testkit-initialize".into()),
        };
        let initialized = Message::Notification {
            method: "notifications/initialized".into(),
            params: None,
        };
        Harness::for_target(server.builder())
            .limits(Limits {
                batches: false,
                ..Limits::default()
            })
            .prelude(vec![Frame::Single(initialize), Frame::Single(initialized)])
    }
}
