//! The official Python MCP SDK (PyPI `mcp`, installed by `.ci/install/mcp-interop.sh`) calls
//! tools on `mcp-server --http ... --otlp R` over Streamable HTTP with a W3C trace context in
//! each request's `_meta` (`tests/interop/python_traced_client.py`); the spans the server
//! exports over OTLP/HTTP are decoded by a receiver written with PyPI `opentelemetry-proto`
//! (`rpcwire_tests::otlp`, installed by `.ci/install/observability.sh`).
//!
//! Each `tools/call` span has the `_meta.traceparent` as its parent (trace id and parent span
//! id; the `tracestate` kept) and the MCP attributes with their exact values:
//! `mcp.method.name`, `gen_ai.tool.name`, `mcp.session.id` (the session the SDK was given),
//! `mcp.protocol.version`, `server.address`/`server.port` (the server's end of the connection),
//! and `error.type = "tool_error"` for the failing tool.
//!
//! Its metrics go to the same receiver when it stops: the two `tools/call` calls counted in
//! `rpc.server.call.duration`, and the `mcp.server.sessions` gauge.
//!
//! Skips with a visible `SKIPPED:` line when the SDK or the receiver is missing, unless
//! `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_passed, python_with, run_bounded, script, HttpServer};
use rpcwire_tests::otlp::OtlpReceiver;
use serde_json::Value;

const ADD_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";
const ADD_PARENT: &str = "b7ad6b7169203331";
const FAIL_TRACE: &str = "1af7651916cd43dd8448eb211c80319c";
const FAIL_PARENT: &str = "c7ad6b7169203331";

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[test]
fn python_sdk_meta_traceparent_is_the_parent_of_the_tool_call_span() {
    let Some(python) = python_with("mcp.client.streamable_http, httpx2") else {
        return;
    };
    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let mut server = HttpServer::start(&["--otlp", &receiver.url]);
    let port: u16 = server.addr.rsplit(':').next().unwrap().parse().unwrap();
    let out = run_bounded(
        Command::new(&python)
            .arg(script("python_traced_client.py"))
            .arg(&server.url)
            .arg(format!("00-{ADD_TRACE}-{ADD_PARENT}-01"))
            .arg(format!("00-{FAIL_TRACE}-{FAIL_PARENT}-01")),
        Duration::from_secs(60),
    );
    assert_passed(&out, "python-sdk-traced: done");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let session = stdout
        .lines()
        .find_map(|l| l.strip_prefix("session-id: "))
        .expect("the session id")
        .to_owned();

    // Stopped with SIGTERM, the server sends the spans it has not sent yet.
    server.terminate();

    let (mut add, mut fail) = (None, None);
    while add.is_none() || fail.is_none() {
        let span = receiver.next_span(Duration::from_secs(30));
        if attr(&span, "mcp.method.name") != "tools/call" {
            continue;
        }
        match attr(&span, "gen_ai.tool.name").as_str() {
            Some("add") => add = Some(span),
            Some("fail") => fail = Some(span),
            _ => {}
        }
    }
    let (add, fail) = (add.unwrap(), fail.unwrap());
    assert_eq!(add["service"], "rpcwire-example-mcp-server");
    for (span, trace, parent) in [
        (&add, ADD_TRACE, ADD_PARENT),
        (&fail, FAIL_TRACE, FAIL_PARENT),
    ] {
        assert_eq!(span["name"], "tools/call", "{span}");
        assert_eq!(span["kind"], 2, "a server span: {span}");
        assert_eq!(span["trace_id"], trace, "{span}");
        assert_eq!(span["parent_span_id"], parent, "{span}");
        assert_eq!(attr(span, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(span, "rpc.method"), "tools/call");
        assert_eq!(attr(span, "jsonrpc.protocol.version"), "2.0");
        assert_eq!(attr(span, "mcp.method.name"), "tools/call");
        assert_eq!(attr(span, "mcp.session.id"), session.as_str(), "{span}");
        assert_eq!(attr(span, "mcp.protocol.version"), "2025-11-25", "{span}");
        assert_eq!(attr(span, "network.transport"), "tcp");
        assert_eq!(attr(span, "network.peer.address"), "127.0.0.1", "{span}");
        assert_eq!(attr(span, "server.address"), "127.0.0.1", "{span}");
        assert_eq!(attr(span, "server.port"), i64::from(port), "{span}");
    }
    assert_eq!(add["trace_state"], "sdk=1");
    assert!(attr(&add, "error.type").is_null(), "{add}");
    assert_eq!(attr(&fail, "error.type"), "tool_error", "{fail}");

    // The metrics, sent as the server stopped: the two tool calls' durations, the sessions.
    let export = receiver
        .next_metrics(Duration::from_secs(20))
        .expect("the metrics sent as the server stopped");
    let points = export.as_array().unwrap();
    assert!(
        points
            .iter()
            .all(|p| p["service"] == "rpcwire-example-mcp-server"),
        "{export}"
    );
    let tool_calls: u64 = points
        .iter()
        .filter(|p| {
            p["name"] == "rpc.server.call.duration" && attr(p, "rpc.method") == "tools/call"
        })
        .inspect(|p| assert_eq!(p["unit"], "s", "{p}"))
        .map(|p| p["count"].as_u64().unwrap())
        .sum();
    assert_eq!(tool_calls, 2, "{export}");
    let sessions = points
        .iter()
        .find(|p| p["name"] == "mcp.server.sessions")
        .unwrap_or_else(|| panic!("no mcp.server.sessions in {export}"));
    assert_eq!(
        (&sessions["type"], &sessions["unit"]),
        (&"gauge".into(), &"{session}".into())
    );
}
