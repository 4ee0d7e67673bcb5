//! `McpHttpClient` in stateless mode (2026-07-28) against the example-grade `McpHttpServer`
//! in stateless mode, whose header validation is the judge: each `x-mcp-header` parameter is
//! mirrored into its `Mcp-Param-*` header (the server refuses a call without it), a tool whose
//! annotation breaks the revision's rules is left out of `tools/list`, and the number of
//! tools whose parameters the client keeps (`max_tools`) holds at its edge.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use rpcwire_mcp::http::{McpHttpClient, McpHttpServer, Mode};
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use serde_json::{json, Value};

async fn start() -> String {
    let mut server = McpServer::new("headers", "1.0");
    for name in ["a", "b", "c"] {
        server = server.tool_with_schema(
            name,
            "Echoes its region.",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"}}}),
            |_: ToolContext, v: Value| async move {
                Ok::<_, ToolError>(format!("{} {}", v["region"], v["n"]))
            },
        );
    }
    // The server keeps it (and warns); the revision tells clients to leave it out.
    server = server.tool_with_schema(
        "bad",
        "A header on a number.",
        json!({"type": "object", "properties": {
            "score": {"type": "number", "x-mcp-header": "Score"}}}),
        |_: ToolContext, _: Value| async move { Ok::<_, ToolError>("bad ran") },
    );
    let service = McpHttpServer::new(server).mode(Mode::Stateless).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(rpcwire_mcp::http::serve(listener, service));
    url
}

#[tokio::test]
async fn header_parameters_are_mirrored_and_invalid_tools_left_out() {
    let url = start().await;
    let client = McpHttpClient::builder(&url)
        .mode(Mode::Stateless)
        .max_tools(3)
        .connect()
        .await
        .unwrap();
    assert_eq!(client.mcp().revision(), "2026-07-28");
    let names: Vec<String> = client
        .mcp()
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names, ["a", "b", "c"]);
    for name in ["a", "b", "c"] {
        let result = client
            .mcp()
            .call_tool(name, json!({"region": " us west 1", "n": 7}))
            .await
            .unwrap();
        assert!(!result.is_error, "{name}: {result:?}");
        assert_eq!(result.joined_text(), "\" us west 1\" 7");
    }
}

#[tokio::test]
async fn past_max_tools_the_earlier_tools_lose_their_headers() {
    let url = start().await;
    let client = McpHttpClient::builder(&url)
        .mode(Mode::Stateless)
        .max_tools(2)
        .connect()
        .await
        .unwrap();
    client.mcp().list_tools().await.unwrap();
    // `c` went past the limit: `a` and `b` were forgotten, `c` kept.
    let c = client
        .mcp()
        .call_tool("c", json!({"region": "eu", "n": 1}))
        .await
        .unwrap();
    assert_eq!(c.joined_text(), "\"eu\" 1");
    let a = client
        .mcp()
        .call_tool("a", json!({"region": "eu", "n": 1}))
        .await;
    assert!(a.is_err(), "a call without its headers was taken: {a:?}");
}
