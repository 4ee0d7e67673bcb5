//! Call spans of the tokio `McpServer`: a tool call's server span carries the MCP attributes
//! beside the JSON-RPC ones. Alone in its test binary: `tracing` caches per callsite whether
//! anyone listens, and a test elsewhere in the same process creating the same spans with no
//! subscriber while this one installs its own can leave the callsite off for it.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use serde::Deserialize;
use serde_json::{json, Value};

mod tokio_common;
use tokio_common::{raw, INIT};

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

fn server() -> McpServer {
    let object = json!({"type": "object"});
    McpServer::new("test-server", "9.9")
        .tool_with_schema("add", "adds", object.clone(), |_ctx: ToolContext, a: Add| async move {
            Ok::<_, ToolError>((a.a + a.b).to_string())
        })
        .tool_with_schema("fail", "fails", object, |_ctx: ToolContext, _: Value| async move {
            Err::<String, _>(ToolError::new("it broke"))
        })
}

/// A tool call's server span carries the MCP attributes beside the JSON-RPC ones; a tool's
/// failure is `error.type = "tool_error"`.
#[tokio::test(flavor = "current_thread")]
async fn tool_call_spans_carry_the_mcp_attributes() {
    use tracing_subscriber::layer::SubscriberExt;
    let spans = rpcwire_tests::spans::Spans::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let out = raw(
        server(),
        &[
            INIT,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3}}}"#,
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"fail","arguments":{}}}"#,
        ],
        3,
    )
    .await;
    assert_eq!(out[2]["result"]["isError"], true, "{}", out[2]);
    let calls: Vec<_> = spans
        .named("rpc.server.call")
        .into_iter()
        .filter(|s| s.fields.get("rpc.method").map(String::as_str) == Some("tools/call"))
        .collect();
    assert_eq!(calls.len(), 2, "{calls:#?}");
    let add = &calls[0].fields;
    assert_eq!(add["mcp.method.name"], "tools/call");
    assert_eq!(add["gen_ai.tool.name"], "add");
    assert_eq!(add["mcp.protocol.version"], "2025-03-26");
    assert_eq!(add["jsonrpc.request.id"], "5");
    assert!(!add.contains_key("error.type"), "{add:?}");
    let fail = &calls[1].fields;
    assert_eq!(fail["gen_ai.tool.name"], "fail");
    assert_eq!(fail["error.type"], "tool_error");
}
