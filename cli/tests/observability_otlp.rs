//! Traces across hops, exported over OTLP/HTTP: a receiver written with PyPI
//! `opentelemetry-proto` (`rpcwire_tests::otlp`, installed by `.ci/install/observability.sh`) takes the protobuf exports of two servers,
//! `rpcwire serve --http A --otlp R --upstream B` and `rpcwire serve --http B --otlp R`, while
//! a client POSTs `relay` (which calls `subtract` on B) to A with a `traceparent` header.
//!
//! One trace id across the three spans, each parent as it should be (the client's
//! `traceparent` → A's server span → A's client span → B's server span), the attributes of
//! the OpenTelemetry JSON-RPC conventions with their exact names and values; a malformed and
//! a repeated `traceparent` are ignored (the call is answered, its span starts a trace of its
//! own). The servers are stopped with SIGTERM: their last spans are sent as they exit.
//!
//! Skips with a visible `SKIPPED:` line when the receiver's venv is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{bounded, http, spawn_serve};
use rpcwire_tests::otlp::OtlpReceiver;
use serde_json::Value;
use tokio::process::Child;

/// The client's trace and its span (the remote parent of A's server span).
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
/// The trace of the call with a malformed `traceparent` (upper case is not allowed).
const BAD_TRACE: &str = "AAF92F3577B34DA6A3CE929D0E0E4736";
/// The trace of the batch, and the client span it comes from.
const BATCH_TRACE: &str = "ccf92f3577b34da6a3ce929d0e0e4736";
const BATCH_PARENT: &str = "10f067aa0ba902b7";
/// The trace of the call with two `traceparent` headers.
const TWICE_TRACE: &str = "bbf92f3577b34da6a3ce929d0e0e4736";

/// `rpcwire serve --http 127.0.0.1:0 ARGS...` and its URL.
async fn serve(args: &[&str]) -> (Child, String) {
    let mut all = vec!["--http", "127.0.0.1:0"];
    all.extend_from_slice(args);
    let (child, mut lines) = spawn_serve(&all);
    let url = loop {
        let line = lines.next_line().await.unwrap().expect("a line on stderr");
        let last = line.rsplit(' ').next().unwrap_or_default();
        if last.starts_with("http://") {
            break last.to_owned();
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, url)
}

/// Stops a server with SIGTERM (it sends its last spans as it exits).
async fn stop(mut child: Child) {
    rpcwire_tests::otlp::sigterm(child.id().expect("running"));
    let status = child.wait().await.unwrap();
    assert!(status.success(), "the server exited with {status}");
}

fn attr<'a>(span: &'a Value, key: &str) -> &'a Value {
    &span["attributes"][key]
}

/// Span kinds of OTLP.
const SERVER: i64 = 2;
const CLIENT: i64 = 3;

#[tokio::test]
async fn a_trace_crosses_two_servers_and_is_exported_over_otlp() {
    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let collector = receiver.url.clone();
    bounded(async {
        let (b, b_url) = serve(&["--otlp", &collector]).await;
        let (a, a_url) = serve(&["--otlp", &collector, "--upstream", &b_url]).await;

        let relay = r#"{"jsonrpc":"2.0","method":"relay","params":{"method":"subtract","params":[42,23]},"id":"r-1"}"#;
        let header = format!("traceparent: 00-{TRACE}-{PARENT}-01\r\ntracestate: rojo=1\r\n");
        let (status, body) = http("POST", &a_url, &header, relay).await;
        assert_eq!(status, 200, "{body}");
        let answer: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(answer["result"], 19, "{body}");

        // Ignored: malformed (upper case), and repeated. Answered all the same.
        let bad = format!("traceparent: 00-{BAD_TRACE}-{PARENT}-01\r\n");
        let call = |id: &str| format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":"{id}"}}"#);
        let (status, body) = http("POST", &a_url, &bad, &call("bad")).await;
        assert_eq!((status, body.contains(r#""result":2"#)), (200, true), "{body}");
        let twice = format!(
            "traceparent: 00-{TWICE_TRACE}-{PARENT}-01\r\ntraceparent: 00-{TWICE_TRACE}-{PARENT}-01\r\n"
        );
        let (status, body) = http("POST", &a_url, &twice, &call("twice")).await;
        assert_eq!((status, body.contains(r#""result":2"#)), (200, true), "{body}");

        // A batch: one span for it (the traceparent its parent), its calls' spans its children.
        let batch = r#"[{"jsonrpc":"2.0","method":"subtract","params":[9,1],"id":"b-1"},{"jsonrpc":"2.0","method":"subtract","params":[9,2],"id":"b-2"}]"#;
        let header = format!("traceparent: 00-{BATCH_TRACE}-{BATCH_PARENT}-01\r\n");
        let (status, body) = http("POST", &a_url, &header, batch).await;
        assert_eq!(status, 200, "{body}");
        assert!(body.contains(r#""result":8"#) && body.contains(r#""result":7"#), "{body}");

        stop(a).await;
        stop(b).await;

        // The spans of the calls (connection spans may come too): by their request id.
        let mut by_id: HashMap<String, Vec<Value>> = HashMap::new();
        let (mut upstream_server, mut batch_span) = (None, None);
        while by_id.get("r-1").map_or(0, Vec::len) < 2
            || upstream_server.is_none()
            || batch_span.is_none()
            || !["bad", "twice", "b-1", "b-2"].iter().all(|id| by_id.contains_key(*id))
        {
            let span = receiver.next_span(Duration::from_secs(30));
            assert_eq!(span["service"], "rpcwire", "{span}");
            if span["name"] == "batch" {
                batch_span = Some(span);
                continue;
            }
            if span["kind"] == CLIENT {
                by_id.entry("r-1".into()).or_default().push(span);
                continue;
            }
            match attr(&span, "jsonrpc.request.id").as_str() {
                Some(id) if span["name"] == "subtract" && id.parse::<u64>().is_ok() => {
                    upstream_server = Some(span)
                }
                Some(id) => by_id.entry(id.to_owned()).or_default().push(span),
                None => {}
            }
        }
        let r1 = &by_id["r-1"];
        let a_server = r1.iter().find(|s| s["kind"] == SERVER).expect("A's server span");
        let a_client = r1.iter().find(|s| s["kind"] == CLIENT).expect("A's client span");
        let b_server = upstream_server.unwrap();

        // A's server span: the client's traceparent is its parent.
        assert_eq!(a_server["name"], "relay");
        assert_eq!(a_server["trace_id"], TRACE);
        assert_eq!(a_server["parent_span_id"], PARENT);
        assert_eq!(a_server["trace_state"], "rojo=1");
        assert_eq!(attr(a_server, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(a_server, "rpc.method"), "relay");
        assert_eq!(attr(a_server, "jsonrpc.request.id"), "r-1");
        assert_eq!(attr(a_server, "jsonrpc.protocol.version"), "2.0");
        assert_eq!(attr(a_server, "network.transport"), "tcp");
        assert_eq!(attr(a_server, "network.peer.address"), "127.0.0.1");
        assert!(attr(a_server, "network.peer.port").as_i64().is_some_and(|p| p > 0), "{a_server}");
        assert!(attr(a_server, "error.type").is_null(), "{a_server}");

        // A's client span: a child of its server span, in the same trace.
        assert_eq!(a_client["name"], "subtract");
        assert_eq!(a_client["trace_id"], TRACE);
        assert_eq!(a_client["parent_span_id"], a_server["span_id"]);
        assert_eq!(attr(a_client, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(a_client, "rpc.method"), "subtract");
        assert_eq!(attr(a_client, "jsonrpc.protocol.version"), "2.0");

        // B's server span: across the hop, a child of A's client span.
        assert_eq!(b_server["trace_id"], TRACE);
        assert_eq!(b_server["parent_span_id"], a_client["span_id"]);
        assert_eq!(attr(&b_server, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(&b_server, "rpc.method"), "subtract");
        assert_eq!(attr(&b_server, "jsonrpc.protocol.version"), "2.0");
        assert_eq!(attr(&b_server, "network.peer.address"), "127.0.0.1");
        assert_eq!(attr(&b_server, "network.transport"), "tcp");

        // The batch's span and its calls'.
        let batch_span = batch_span.unwrap();
        assert_eq!(batch_span["kind"], SERVER);
        assert_eq!(batch_span["trace_id"], BATCH_TRACE);
        assert_eq!(batch_span["parent_span_id"], BATCH_PARENT);
        assert_eq!(attr(&batch_span, "jsonrpc.batch.size"), 2, "{batch_span}");
        assert_eq!(attr(&batch_span, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(&batch_span, "network.peer.address"), "127.0.0.1");
        for id in ["b-1", "b-2"] {
            let call = &by_id[id][0];
            assert_eq!(call["name"], "subtract");
            assert_eq!(call["trace_id"], BATCH_TRACE, "{call}");
            assert_eq!(call["parent_span_id"], batch_span["span_id"], "{call}");
            assert_eq!(attr(call, "jsonrpc.request.id"), id);
        }

        // Ignored traceparents: the calls' spans start traces of their own.
        for (id, refused) in [("bad", BAD_TRACE), ("twice", TWICE_TRACE)] {
            let span = &by_id[id][0];
            assert_eq!(span["name"], "subtract");
            assert_ne!(span["trace_id"], refused.to_lowercase(), "{span}");
            assert_ne!(span["trace_id"], TRACE);
            assert_ne!(span["parent_span_id"], PARENT, "{span}");
        }
    })
    .await;
}
