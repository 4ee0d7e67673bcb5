//! rpcwire's MCP client (`rpcwire_mcp::tokio::McpClient`, built on `rpcwire_mcp::tokio::mcp_builder()`, which
//! sends each call's W3C trace context in `params._meta`) calling two real servers over
//! stdio, with its own spans exported over OTLP/HTTP (`rpcwire_telemetry::otlp`) to a receiver
//! written with PyPI `opentelemetry-proto` (`rpcwire_tests::otlp`):
//!
//! - the official Python MCP SDK (`tests/interop/python_meta_server.py`, PyPI `mcp` and
//!   `opentelemetry-sdk`, installed by `.ci/install/mcp-interop.sh`): its tool answers the
//!   `_meta` it received and the SDK's own span of the call. The `_meta.traceparent` is the
//!   client span's, and the SDK's server span is in the client span's trace with the client
//!   span as its parent;
//! - the example server (`mcp-server --otlp R`): its exported `tools/call` span has the
//!   client span as its parent, with the MCP attributes.
//!
//! Its own test binary: it installs the process's `tracing` subscriber. Skips with a visible
//! `SKIPPED:` line when the SDK or the receiver is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use rpcwire_mcp::tokio::McpClient;
use rpcwire_tests::otlp::OtlpReceiver;
use serde_json::{json, Value};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Span kinds of OTLP.
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_span_is_the_parent_of_the_servers_spans_through_meta() {
    let Some(python) = common::python_with("mcp, opentelemetry.sdk.trace") else {
        return;
    };
    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let export =
        rpcwire_telemetry::otlp::OtlpExport::start(&receiver.url, "client-traces-test").unwrap();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(export.layer()))
        .unwrap();

    let run = async {
        // The official Python SDK's server.
        let mut python_server = tokio::process::Command::new(&python);
        python_server
            .arg(common::script("python_meta_server.py"))
            .stderr(std::process::Stdio::null());
        let (client, mut child) = McpClient::spawn(&mut python_server).await.unwrap();
        let seen = client
            .call_tool("trace_seen", json!({}))
            .instrument(tracing::info_span!("call python"))
            .await
            .unwrap();
        assert!(!seen.is_error, "{seen:?}");
        let seen: Value = serde_json::from_str(&seen.joined_text()).unwrap();
        drop(client);
        child.kill().await.unwrap();

        // The example server, exporting its spans to the same receiver.
        let mut example = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-server"));
        example
            .args(["--otlp", &receiver.url])
            .stderr(std::process::Stdio::null());
        let (client, mut child) = McpClient::spawn(&mut example).await.unwrap();
        let sum = client
            .call_tool("add", json!({"a": 20, "b": 22}))
            .instrument(tracing::info_span!("call rpcwire"))
            .await
            .unwrap();
        assert_eq!(sum.joined_text(), "42");
        // Stopped with SIGTERM, it sends the spans it has not sent yet.
        rpcwire_tests::otlp::sigterm(child.id().expect("running"));
        let status = child.wait().await.unwrap();
        drop(client);
        assert!(status.success(), "{status}");
        seen
    };
    let seen = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the calls within a minute");
    // The client's spans sent.
    drop(export);

    let mut spans = Vec::new();
    let (mut python_parent, mut rpcwire_parent, mut example_call) = (None, None, None);
    while python_parent.is_none() || rpcwire_parent.is_none() || example_call.is_none() {
        let span = receiver.next_span(Duration::from_secs(30));
        match (span["service"].as_str(), span["name"].as_str()) {
            (Some("client-traces-test"), Some("call python")) => python_parent = Some(span),
            (Some("client-traces-test"), Some("call rpcwire")) => rpcwire_parent = Some(span),
            (Some("rpcwire-example-mcp-server"), Some("tools/call")) if span["kind"] == SERVER => {
                example_call = Some(span)
            }
            _ => spans.push(span),
        }
    }
    // Each call's client span: the `tools/call` child of the span the test made around it.
    let mut client_span = |parent: &Value| -> Value {
        let client = loop {
            if let Some(at) = spans
                .iter()
                .position(|s| s["parent_span_id"] == parent["span_id"] && s["name"] == "tools/call")
            {
                break spans.remove(at);
            }
            spans.push(receiver.next_span(Duration::from_secs(30)));
        };
        assert_eq!(client["kind"], CLIENT, "{client}");
        assert_eq!(client["trace_id"], parent["trace_id"]);
        assert_eq!(attr(&client, "rpc.method"), "tools/call");
        client
    };
    let to_python = client_span(&python_parent.unwrap());
    let to_rpcwire = client_span(&rpcwire_parent.unwrap());

    // What the Python SDK received and made of it.
    let (trace, span_id) = (&to_python["trace_id"], &to_python["span_id"]);
    let traceparent = format!(
        "00-{}-{}-01",
        trace.as_str().unwrap(),
        span_id.as_str().unwrap()
    );
    assert_eq!(seen["meta"]["traceparent"], traceparent, "{seen}");
    let server = &seen["span"];
    assert_eq!(server["recording"], true, "{seen}");
    assert_eq!(server["kind"], "SERVER");
    assert_eq!(server["name"], "tools/call trace_seen");
    assert_eq!(&server["trace_id"], trace);
    assert_eq!(&server["parent_trace_id"], trace);
    assert_eq!(&server["parent_span_id"], span_id);
    assert_eq!(server["parent_remote"], true);
    assert_ne!(&server["span_id"], span_id);
    assert_eq!(attr(server, "mcp.method.name"), "tools/call");
    assert_eq!(attr(server, "gen_ai.tool.name"), "trace_seen");

    // The example server's span of the call, across the process boundary.
    let example_call = example_call.unwrap();
    assert_eq!(
        example_call["trace_id"], to_rpcwire["trace_id"],
        "{example_call}"
    );
    assert_eq!(
        example_call["parent_span_id"], to_rpcwire["span_id"],
        "{example_call}"
    );
    assert_eq!(attr(&example_call, "mcp.method.name"), "tools/call");
    assert_eq!(attr(&example_call, "gen_ai.tool.name"), "add");
    assert_eq!(attr(&example_call, "rpc.system.name"), "jsonrpc");
    assert!(
        attr(&example_call, "error.type").is_null(),
        "{example_call}"
    );
}
