//! While a subscriber listens to call spans, the HTTP server gives each request's calls the
//! connection's peer and the W3C trace context of its `traceparent` / `tracestate` headers
//! (POSTs, and a WebSocket upgrade's calls); a repeated or malformed `traceparent` is
//! ignored; a batch gets one span with its calls' spans as children.
//!
//! Its own test binary: `tracing` caches callsite interest per process, and this one installs
//! a global subscriber.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use futures_util::{SinkExt, StreamExt};
use rpcwire_http::ws::{WsConfig, WsServer};
use rpcwire_http::HttpServer;
use rpcwire_tests::raw_http::{answer, request};
use rpcwire_tests::spans::Spans;
use rpcwire_tokio::{Builder, Context, Router, RpcError};
use serde_json::{json, Value};
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tracing_subscriber::layer::SubscriberExt;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `whoami`: the trace context and the peer its call was given.
fn router() -> Router {
    Router::new().method_with_context("whoami", |cx: Context, _: Option<Value>| async move {
        let caller = cx.caller();
        Ok::<_, RpcError>(json!({
            "traceparent": caller.trace_context().map(|t| t.traceparent()),
            "tracestate": caller.trace_context().and_then(|t| t.tracestate()),
            "peer": caller.peer_addr().map(|p| p.ip().to_string()),
        }))
    })
}

/// One POST of `body` with extra header lines: the answer's body.
async fn post(addr: std::net::SocketAddr, headers: &str, body: &str) -> Value {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let req =
        request("/rpc", "application/json", body).replacen("\r\n", &format!("\r\n{headers}"), 1);
    stream.write_all(req.as_bytes()).await.unwrap();
    let (head, body) = answer(&mut stream, &mut Vec::new()).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    serde_json::from_str(&body).unwrap()
}

const WHOAMI: &str = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;

#[tokio::test]
async fn trace_headers_peer_and_batch_spans() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();
    let ws = WsServer::new(Builder::new().router(router()), WsConfig::default());
    let service = HttpServer::new(Builder::new().router(router()))
        .path("/rpc")
        .websocket(ws)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rpcwire_http::serve(listener, service));

    // POST: the header's context and the peer.
    let seen = post(
        addr,
        &format!("traceparent: {TP}\r\ntracestate: a=1\r\n"),
        WHOAMI,
    )
    .await;
    assert_eq!(seen["result"]["traceparent"], TP);
    assert_eq!(seen["result"]["tracestate"], "a=1");
    assert_eq!(seen["result"]["peer"], "127.0.0.1");
    let call = spans.named("rpc.server.call").pop().unwrap();
    assert_eq!(call.fields["network.peer.address"], "127.0.0.1");
    assert!(call.fields["network.peer.port"].parse::<u16>().unwrap() > 0);
    // The HTTP connection's span is its parent (held as the parent, not entered, while the
    // connection's task is polled).
    let connection = spans.get(call.parent.expect("a parent"));
    assert_eq!(connection.name, "rpc.connection", "{call:?}");
    assert_eq!(connection.fields["network.peer.address"], "127.0.0.1");

    // Ignored: repeated, malformed, oversized. The calls are answered all the same.
    let twice = format!("traceparent: {TP}\r\ntraceparent: {TP}\r\n");
    let upper = format!("traceparent: {}\r\n", TP.to_uppercase());
    let long = format!("traceparent: {TP}{}\r\n", "-0".repeat(200));
    for headers in [twice, upper, long] {
        let seen = post(addr, &headers, WHOAMI).await;
        assert_eq!(seen["result"]["traceparent"], Value::Null, "{headers}");
        assert_eq!(seen["result"]["peer"], "127.0.0.1");
    }

    // A WebSocket upgrade's traceparent: the parent of the connection's calls.
    let mut upgrade = format!("ws://{addr}/rpc").into_client_request().unwrap();
    upgrade
        .headers_mut()
        .insert("traceparent", TP.parse().unwrap());
    let (mut socket, _) = tokio_tungstenite::connect_async(upgrade).await.unwrap();
    socket.send(Message::text(WHOAMI)).await.unwrap();
    let reply = loop {
        match socket.next().await.unwrap().unwrap() {
            Message::Text(t) => break serde_json::from_str::<Value>(&t).unwrap(),
            _ => continue,
        }
    };
    assert_eq!(reply["result"]["traceparent"], TP);
    assert_eq!(reply["result"]["peer"], "127.0.0.1");

    // A batch: one `rpc.batch` span, above its calls' spans.
    let batch = r#"[{"jsonrpc":"2.0","method":"whoami","id":"x"},{"jsonrpc":"2.0","method":"whoami","id":"y"}]"#;
    let before = spans.named("rpc.batch").len();
    let seen = post(addr, &format!("traceparent: {TP}\r\n"), batch).await;
    assert_eq!(seen.as_array().map(Vec::len), Some(2), "{seen}");
    let batches = spans.named("rpc.batch");
    assert_eq!(batches.len(), before + 1);
    let batch_span = batches.last().unwrap();
    assert_eq!(batch_span.fields["jsonrpc.batch.size"], "2");
    assert_eq!(batch_span.fields["network.peer.address"], "127.0.0.1");
    let all = spans.named("rpc.server.call");
    let children: Vec<_> = all
        .iter()
        .filter(|s| {
            matches!(
                s.fields.get("jsonrpc.request.id").map(String::as_str),
                Some("x" | "y")
            )
        })
        .collect();
    assert_eq!(children.len(), 2);
    let batch_index = (0..)
        .find(|&i| {
            let s = spans.get(i);
            s.name == "rpc.batch" && s.fields == batch_span.fields
        })
        .unwrap();
    // `whoami` reads its context; its calls run through the same dispatcher as any other:
    // their parent is the batch's span, with nothing between.
    for child in children {
        assert_eq!(child.parent, Some(batch_index), "{child:?}");
    }
}
