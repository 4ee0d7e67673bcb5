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

use common::{bounded, http, spawn_serve, stop_on_sigterm as stop};
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

/// The call-duration buckets of the OpenTelemetry semantic conventions (seconds).
const DURATION_BOUNDS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];
/// OTLP's `AGGREGATION_TEMPORALITY_CUMULATIVE`.
const CUMULATIVE: i64 = 2;

/// The data points of `name` in a metrics export, each checked for its unit and type.
fn points<'a>(export: &'a Value, name: &str, unit: &str, kind: &str) -> Vec<&'a Value> {
    let found: Vec<&Value> = export
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name)
        .collect();
    assert!(!found.is_empty(), "no {name} in {export}");
    for p in &found {
        assert_eq!(p["unit"], unit, "{p}");
        assert_eq!(p["type"], kind, "{p}");
        assert_eq!(p["service"], "rpcwire", "{p}");
        assert_eq!(p["scope"], "rpcwire", "{p}");
        if kind != "gauge" {
            assert_eq!(p["temporality"], CUMULATIVE, "{p}");
        }
    }
    found
}

/// The one point of `name` whose attributes are exactly `attributes`.
fn point<'a>(all: &[&'a Value], attributes: Value) -> &'a Value {
    let matching: Vec<_> = all
        .iter()
        .filter(|p| p["attributes"] == attributes)
        .collect();
    assert_eq!(matching.len(), 1, "{attributes} in {all:?}");
    matching[0]
}

/// `rpcwire serve --tcp 127.0.0.1:0 --otlp R` sends the metrics that `--metrics` serves over
/// OTLP when it is stopped (SIGTERM; the interval is the default minute, so no other export
/// comes first), while a client over TCP makes N = 10 calls (4 that succeed, 2 with invalid
/// params, 1 of a method that does not exist, a batch of 3) of which M = 3 fail, and sends a
/// line that is not JSON: the exact names, units, attributes and values. The batch has a span
/// of its own, the parent of its members' spans (as the HTTP server's batches do). Then a
/// server with `--otlp-interval 0.5` sends its metrics while it runs.
#[tokio::test]
async fn metrics_and_batch_spans_of_a_tcp_server_are_exported_over_otlp() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let collector = receiver.url.clone();
    bounded(async {
        let (server, addr) = common::serve_tcp(&["--otlp", &collector]).await;
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut answers = BufReader::new(read);
        let (mut sent, mut received) = (0usize, 0usize);
        let mut exchange = async |line: &str| {
            let line = format!("{line}\n");
            write.write_all(line.as_bytes()).await.unwrap();
            sent += line.len();
            let mut answer = String::new();
            received += answers.read_line(&mut answer).await.unwrap();
            answer
        };
        for id in 1..=4 {
            let call = format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":{id}}}"#);
            assert!(exchange(&call).await.contains(r#""result":2"#));
        }
        for id in 5..=6 {
            let call = format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":["a"],"id":{id}}}"#);
            assert!(exchange(&call).await.contains("-32602"));
        }
        let unknown = r#"{"jsonrpc":"2.0","method":"nope","id":7}"#;
        assert!(exchange(unknown).await.contains("-32601"));
        let batch = r#"[{"jsonrpc":"2.0","method":"subtract","params":[9,1],"id":"b-1"},{"jsonrpc":"2.0","method":"subtract","params":[9,2],"id":"b-2"},{"jsonrpc":"2.0","method":"subtract","params":[9,3],"id":"b-3"}]"#;
        let answer = exchange(batch).await;
        assert!(answer.contains(r#""result":8"#) && answer.contains(r#""result":6"#), "{answer}");
        assert!(exchange("{not json").await.contains("-32700"));
        // The connection closed (its gauge back to 0) before the server is stopped.
        write.shutdown().await.unwrap();
        let mut rest = String::new();
        assert_eq!(answers.read_line(&mut rest).await.unwrap(), 0, "{rest}");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert!(
            receiver.next_metrics(Duration::ZERO).is_none(),
            "an export before the interval or the stop"
        );
        stop(server).await;
        let export = receiver
            .next_metrics(Duration::from_secs(20))
            .expect("the metrics sent as the server stopped");

        let durations = points(&export, "rpc.server.call.duration", "s", "histogram");
        let labels = |method: &str, error: Option<&str>| {
            let mut a = serde_json::json!({"rpc.system.name": "jsonrpc", "rpc.method": method});
            if let Some(e) = error {
                a["error.type"] = e.into();
            }
            a
        };
        for p in &durations {
            assert_eq!(p["explicit_bounds"], serde_json::json!(DURATION_BOUNDS), "{p}");
            let buckets: u64 = p["bucket_counts"].as_array().unwrap().iter().map(|c| c.as_u64().unwrap()).sum();
            assert_eq!(Some(buckets), p["count"].as_u64(), "{p}");
        }
        assert_eq!(point(&durations, labels("subtract", None))["count"], 7);
        assert_eq!(point(&durations, labels("subtract", Some("-32602")))["count"], 2);
        assert_eq!(point(&durations, labels("_OTHER", Some("-32601")))["count"], 1);
        let count = |errors: bool| -> u64 {
            durations
                .iter()
                .filter(|p| p["attributes"].get("error.type").is_some() == errors)
                .map(|p| p["count"].as_u64().unwrap())
                .sum()
        };
        assert_eq!((count(false) + count(true), count(true)), (10, 3), "N calls, M errors");

        let in_flight = points(&export, "rpc.server.calls_in_flight", "{call}", "gauge");
        assert_eq!(point(&in_flight, serde_json::json!({}))["value"], 0.0);
        let conns = points(&export, "rpc.server.connections", "{connection}", "gauge");
        assert_eq!(point(&conns, serde_json::json!({"network.transport": "tcp"}))["value"], 0.0);
        let batches = points(&export, "rpc.server.batch.size", "{message}", "histogram");
        let batch_sizes = point(&batches, serde_json::json!({}));
        assert_eq!((&batch_sizes["count"], &batch_sizes["sum"]), (&1.into(), &3.0.into()));
        assert_eq!(batch_sizes["bucket_counts"][2], 1, "3 is counted under 4: {batch_sizes}");
        let rejections = points(&export, "rpc.server.rejections", "{message}", "sum");
        assert!(rejections.iter().all(|p| p["monotonic"] == true));
        assert_eq!(point(&rejections, serde_json::json!({"reason": "parse"}))["value"], 1);
        assert_eq!(point(&rejections, serde_json::json!({"reason": "not_found"}))["value"], 1);
        let bytes_in = points(&export, "rpc.bytes_in", "By", "sum");
        assert_eq!(point(&bytes_in, serde_json::json!({}))["value"], sent as u64);
        let bytes_out = points(&export, "rpc.bytes_out", "By", "sum");
        assert_eq!(point(&bytes_out, serde_json::json!({}))["value"], received as u64);

        // The spans: the batch's, a child of the connection's, its members' parent.
        let mut by_id: HashMap<String, Value> = HashMap::new();
        let (mut batch_span, mut connection) = (None, None);
        while batch_span.is_none()
            || connection.is_none()
            || !["1", "b-1", "b-2", "b-3"].iter().all(|id| by_id.contains_key(*id))
        {
            let span = receiver.next_span(Duration::from_secs(20));
            match span["name"].as_str().unwrap() {
                "batch" => batch_span = Some(span),
                "rpc.connection" => connection = Some(span),
                _ => {
                    if let Some(id) = attr(&span, "jsonrpc.request.id").as_str() {
                        by_id.insert(id.to_owned(), span);
                    }
                }
            }
        }
        let (batch_span, connection) = (batch_span.unwrap(), connection.unwrap());
        assert_eq!(attr(&connection, "network.transport"), "tcp");
        assert_eq!(batch_span["kind"], SERVER);
        assert_eq!(attr(&batch_span, "jsonrpc.batch.size"), 3, "{batch_span}");
        assert_eq!(attr(&batch_span, "rpc.system.name"), "jsonrpc");
        assert_eq!(attr(&batch_span, "network.transport"), "tcp");
        assert_eq!(attr(&batch_span, "network.peer.address"), "127.0.0.1");
        assert_eq!(batch_span["trace_id"], connection["trace_id"]);
        assert_eq!(batch_span["parent_span_id"], connection["span_id"]);
        for id in ["b-1", "b-2", "b-3"] {
            let call = &by_id[id];
            assert_eq!(call["name"], "subtract", "{call}");
            assert_eq!(call["trace_id"], batch_span["trace_id"], "{call}");
            assert_eq!(call["parent_span_id"], batch_span["span_id"], "{call}");
        }
        // A call alone is the connection's child, not a batch's.
        assert_eq!(by_id["1"]["parent_span_id"], connection["span_id"]);

        // Sent every interval while the server runs; with --metrics too, the Prometheus
        // endpoint and the OTLP export show the same values (one recorder feeds both).
        let (mut server, mut lines) = spawn_serve(&[
            "--tcp", "127.0.0.1:0", "--otlp", &collector, "--otlp-interval", "0.5",
            "--metrics", "127.0.0.1:0",
        ]);
        let (mut metrics_url, mut addr) = (None, None);
        while metrics_url.is_none() || addr.is_none() {
            let line = lines.next_line().await.unwrap().expect("a line on stderr");
            let last = line.rsplit(' ').next().unwrap_or_default().to_owned();
            if line.contains("metrics on") {
                metrics_url = Some(last);
            } else if line.contains("serving") {
                addr = Some(last.parse::<std::net::SocketAddr>().unwrap());
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let (metrics_url, addr) = (metrics_url.unwrap(), addr.unwrap());
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        let call = "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[5,3],\"id\":1}\n";
        write.write_all(call.as_bytes()).await.unwrap();
        let mut answer = String::new();
        BufReader::new(read).read_line(&mut answer).await.unwrap();
        let export = loop {
            let export = receiver
                .next_metrics(Duration::from_secs(10))
                .expect("an export within the interval");
            let calls = export.as_array().unwrap().iter().any(|p| {
                p["name"] == "rpc.server.call.duration" && p["count"] == 1
            });
            if calls {
                break export;
            }
        };
        assert!(server.try_wait().unwrap().is_none(), "sent while running");
        let conns = points(&export, "rpc.server.connections", "{connection}", "gauge");
        assert_eq!(point(&conns, serde_json::json!({"network.transport": "tcp"}))["value"], 1.0);
        let bytes_in = points(&export, "rpc.bytes_in", "By", "sum");
        assert_eq!(point(&bytes_in, serde_json::json!({}))["value"], call.len() as u64);
        let (status, text) = http("GET", &metrics_url, "", "").await;
        assert_eq!(status, 200, "{text}");
        let scraped = |prefix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(prefix))
                .unwrap_or_else(|| panic!("no {prefix} in {text}"))
                .trim()
                .to_owned()
        };
        assert_eq!(scraped("rpc_received_bytes_total "), call.len().to_string(), "{text}");
        assert_eq!(
            scraped(r#"rpc_server_call_duration_seconds_count{rpc_system_name="jsonrpc",rpc_method="subtract"} "#),
            "1"
        );
        assert_eq!(scraped(r#"rpc_server_connections{network_transport="tcp"} "#), "1");
        stop(server).await;

        // An interval of zero is refused.
        let refused = common::rpcwire(&[
            "serve", "--tcp", "127.0.0.1:0", "--otlp", &collector, "--otlp-interval", "0",
        ])
        .await;
        assert_eq!(refused.code, Some(2), "{}", refused.stderr);
    })
    .await;
}

/// The attributes of both ends on a server span: `server.address` and `server.port` the
/// address the server listens on, `client.address` and `client.port` the client's, the
/// protocol under JSON-RPC as `network.protocol.*`.
fn assert_ends(span: &Value, server: std::net::SocketAddr, protocol: (&str, &str)) {
    assert_eq!(attr(span, "server.address"), "127.0.0.1", "{span}");
    assert_eq!(
        attr(span, "server.port"),
        i64::from(server.port()),
        "{span}"
    );
    assert_eq!(attr(span, "client.address"), "127.0.0.1", "{span}");
    let client_port = attr(span, "client.port").as_i64().unwrap_or(0);
    assert!(
        client_port > 0 && client_port != i64::from(server.port()),
        "{span}"
    );
    assert_eq!(attr(span, "network.peer.port"), client_port, "{span}");
    assert_eq!(attr(span, "network.transport"), "tcp", "{span}");
    assert_eq!(attr(span, "network.protocol.name"), protocol.0, "{span}");
    assert_eq!(attr(span, "network.protocol.version"), protocol.1, "{span}");
}

/// Over HTTP (a POST), WebSocket (the upgrade of the same server) and plain TCP, each call's
/// server span carries both ends of its connection and the protocol it came by.
#[tokio::test]
async fn spans_carry_both_ends_over_http_websocket_and_tcp() {
    use futures_util::{SinkExt, StreamExt};
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    use tokio_tungstenite::tungstenite::Message;

    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let collector = receiver.url.clone();
    bounded(async {
        let call = |id: &str| {
            format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":"{id}"}}"#)
        };
        let (http_server, url) = serve(&["--otlp", &collector]).await;
        let http_addr: std::net::SocketAddr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.split('/').next())
            .unwrap()
            .parse()
            .unwrap();
        let (status, body) = http("POST", &url, "", &call("over-http")).await;
        assert_eq!(
            (status, body.contains(r#""result":2"#)),
            (200, true),
            "{body}"
        );

        let ws_url = url.replacen("http://", "ws://", 1);
        let (mut ws, _) = tokio_tungstenite::connect_async(ws_url.as_str())
            .await
            .unwrap();
        ws.send(Message::text(call("over-ws"))).await.unwrap();
        let reply = ws.next().await.unwrap().unwrap().into_text().unwrap();
        assert!(reply.contains(r#""result":2"#), "{reply}");
        ws.close(None).await.unwrap();

        let (tcp_server, tcp_addr) = common::serve_tcp(&["--otlp", &collector]).await;
        let stream = tokio::net::TcpStream::connect(tcp_addr).await.unwrap();
        let (read, mut write) = stream.into_split();
        write
            .write_all(format!("{}\n", call("over-tcp")).as_bytes())
            .await
            .unwrap();
        let mut line = String::new();
        BufReader::new(read).read_line(&mut line).await.unwrap();
        assert!(line.contains(r#""result":2"#), "{line}");
        drop(write);

        stop(http_server).await;
        stop(tcp_server).await;

        let mut by_id: HashMap<String, Value> = HashMap::new();
        while by_id.len() < 3 {
            let span = receiver.next_span(Duration::from_secs(30));
            if span["kind"] != SERVER || span["name"] != "subtract" {
                continue;
            }
            if let Some(id) = attr(&span, "jsonrpc.request.id").as_str() {
                by_id.insert(id.to_owned(), span.clone());
            }
        }
        assert_ends(&by_id["over-http"], http_addr, ("http", "1.1"));
        assert_ends(&by_id["over-ws"], http_addr, ("websocket", "13"));
        assert_ends(&by_id["over-tcp"], tcp_addr, ("jsonrpc", "2.0"));
    })
    .await;
}
