//! A refused request does not cost the keep-alive connection it came on: its body is read past
//! (also when it comes after the head) and the request sent right behind it on the same
//! connection is answered (the MCP Streamable HTTP server, as `rpcwire-http`'s own
//! `refusals` test does for the JSON-RPC server); a body too large to read past is refused
//! with `connection: close`, so that the client knows not to send more on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_mcp::http::McpHttpServer;
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use rpcwire_tests::raw_http::{listen, refusals_keep_the_connection, request};

#[tokio::test]
async fn mcp_server_reads_past_refused_bodies() {
    let tools = McpServer::new("refusals", "1.0").tool_with_schema(
        "echo",
        "Echoes its arguments.",
        serde_json::json!({"type": "object"}),
        |_: ToolContext, v: serde_json::Value| async move { Ok::<_, ToolError>(v.to_string()) },
    );
    let service = McpHttpServer::new(tools).max_body(2048).build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_mcp::http::serve(listener, service));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let cases = [
        (request("/mcp", "text/plain", init), "415"),
        (request("/elsewhere", "application/json", init), "404"),
        (
            request("/mcp", "application/json", init).replace(
                "Accept: application/json, text/event-stream",
                "Accept: text/html",
            ),
            "406",
        ),
    ];
    refusals_keep_the_connection(
        addr,
        &cases,
        &request("/mcp", "application/json", init),
        |body| body.contains(r#""protocolVersion":"2025-11-25""#),
        &request("/mcp", "application/json", &" ".repeat(2049)),
    )
    .await;
}
