//! The MCP harness: a small MCP server keeps every invariant after the handshake, batches
//! refused; a tool that never returns is caught.

use proptest::prelude::*;
use rpcwire_mcp::tokio::{McpServer, ToolError};
use rpcwire_testkit::strategy::{self, method, method_any};
use rpcwire_testkit::{Harness, Violation};
use serde_json::{json, Value};

fn server() -> McpServer {
    McpServer::new("testkit-mcp", "1.0.0").tool_with_schema(
        "echo",
        "Echoes its arguments.",
        json!({"type": "object"}),
        |_ctx, args: Value| async move { Ok::<_, ToolError>(args.to_string()) },
    )
}

fn methods() -> Vec<strategy::Method> {
    vec![
        method_any("ping"),
        method_any("tools/list"),
        method(
            "tools/call",
            prop_oneof![Just("echo"), Just("nope")]
                .prop_map(|name| json!({"name": name, "arguments": {"a": 1}})),
        ),
    ]
}

#[test]
fn an_mcp_server_passes_500_cases() {
    Harness::mcp(server()).proptest(strategy::case(methods()), 500);
}

#[test]
fn a_tool_that_never_returns_is_caught() {
    let server = server().tool_with_schema(
        "hang",
        "Never returns.",
        json!({"type": "object"}),
        |_ctx, _: Value| std::future::pending::<Result<String, ToolError>>(),
    );
    let hang = method("tools/call", Just(json!({"name": "hang", "arguments": {}})));
    let failure = Harness::mcp(server)
        .run_proptest(strategy::valid_case(vec![hang]), 50)
        .unwrap_err();
    assert!(
        matches!(failure.violation, Violation::Missing { .. }),
        "{failure}"
    );
    assert_eq!(failure.case.frames.len(), 1, "{failure}");
}
