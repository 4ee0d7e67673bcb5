//! MCP Streamable HTTP end to end on loopback, with raw HTTP requests (every status and header
//! rule at its edge) and with the Rust client: sessions (create, check, GET stream with
//! resumption, DELETE, 404, bounded number, idle timeout, batches by revision), progress over
//! SSE, the server's requests to the client routed back, cancellation, and the stateless
//! revision (method headers, 405, a closed stream cancels its request).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::rt::TokioExecutor;
use rpcwire::wire::sse::{SseDecoder, SseItem};
use rpcwire_mcp::http::{McpHttpClient, McpHttpServer, McpService, Mode};
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Sets its flag when dropped: shows that a tool's future was dropped (cancelled).
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn tools(dropped: Arc<AtomicBool>) -> McpServer {
    McpServer::new("mcp-http-test", "1.0")
        .tool_with_schema(
            "add",
            "Adds.",
            json!({"type": "object"}),
            |_: ToolContext, v: Value| async move {
                Ok::<_, ToolError>(format!(
                    "{}",
                    v["a"].as_i64().unwrap_or(0) + v["b"].as_i64().unwrap_or(0)
                ))
            },
        )
        .tool_with_schema(
            "grüße",
            "Greets: a name that is not header-safe ASCII.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move { Ok::<_, ToolError>("hallo") },
        )
        .tool_with_schema(
            "count",
            "Progress 1..=3.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                for i in 1..=3 {
                    ctx.progress(f64::from(i), Some(3.0), None).await;
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Ok::<_, ToolError>("counted")
            },
        )
        .tool_with_schema(
            "wait",
            "Sends one progress, then waits until cancelled (or 30 s).",
            json!({"type": "object"}),
            move |ctx: ToolContext, _: Value| {
                let flag = DropFlag(Arc::clone(&dropped));
                async move {
                    let _flag = flag;
                    ctx.progress(1.0, None, None).await;
                    tokio::select! {
                        () = ctx.cancelled() => Err(ToolError::new("cancelled")),
                        () = tokio::time::sleep(Duration::from_secs(30)) => Ok("waited"),
                    }
                }
            },
        )
        .tool_with_schema(
            "poll",
            "Progress 1, closes its stream, progress 2, answers.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                ctx.progress(1.0, None, None).await;
                let _ = ctx
                    .peer()
                    .notify(rpcwire_mcp::http::CLOSE_STREAM, json!({}))
                    .await;
                tokio::time::sleep(Duration::from_millis(50)).await;
                ctx.progress(2.0, None, None).await;
                Ok::<_, ToolError>("polled")
            },
        )
        .tool_with_schema(
            "slow",
            "Progress 1..=3, 100 ms apart.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                for i in 1..=3 {
                    ctx.progress(f64::from(i), None, None).await;
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Ok::<_, ToolError>("slow done")
            },
        )
        .tool_with_schema(
            "logs",
            "Logs at info, then at error.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                ctx.log(rpcwire_mcp::LogLevel::Info, "an info").await;
                ctx.log(rpcwire_mcp::LogLevel::Error, "an error").await;
                Ok::<_, ToolError>("logged")
            },
        )
        .tool_with_schema(
            "ask",
            "Asks the client (sampling/createMessage) and returns its text.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                let answer: Value = ctx
                    .peer()
                    .call(
                        "sampling/createMessage",
                        json!({"messages": [], "maxTokens": 5}),
                    )
                    .await
                    .map_err(|e| ToolError::new(e.to_string()))?;
                Ok::<_, ToolError>(format!("model said {}", answer["content"]["text"]))
            },
        )
}

async fn start(
    config: impl FnOnce(McpHttpServer) -> McpHttpServer,
) -> (String, McpService, Arc<AtomicBool>) {
    let dropped = Arc::new(AtomicBool::new(false));
    let service =
        config(McpHttpServer::new(tools(Arc::clone(&dropped))).session_prefix("node1")).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(rpcwire_mcp::http::serve(listener, service.clone()));
    (url, service, dropped)
}

fn hyper() -> Hyper<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Hyper::builder(TokioExecutor::new()).build_http()
}

/// Sends a request; `headers` as pairs.
async fn send(method: &str, url: &str, headers: &[(&str, &str)], body: &str) -> Response<Incoming> {
    let mut req = Request::builder().method(method).uri(url);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::from(body.to_owned()))).unwrap();
    tokio::time::timeout(WAIT, hyper().request(req))
        .await
        .expect("answer in time")
        .expect("request")
}

async fn text(r: Response<Incoming>) -> String {
    let bytes = tokio::time::timeout(WAIT, r.into_body().collect())
        .await
        .expect("body in time")
        .unwrap()
        .to_bytes();
    String::from_utf8(bytes.to_vec()).unwrap()
}

const POST: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("accept", "application/json, text/event-stream"),
];

fn with<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = POST.to_vec();
    h.extend_from_slice(extra);
    h
}

fn init_body(version: &str) -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string()
}

/// Initializes a session at `version`; its id.
async fn initialize(url: &str, version: &str) -> String {
    let r = send("POST", url, &POST, &init_body(version)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let id = r.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    let answer: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(answer["result"]["protocolVersion"], version);
    let r = send(
        "POST",
        url,
        &with(&[("mcp-session-id", &id), ("mcp-protocol-version", version)]),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    id
}

/// POSTs `ping` on session `id`.
async fn ping(url: &str, id: &str) -> Response<Incoming> {
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    send("POST", url, &with(&[("mcp-session-id", id)]), ping).await
}

/// The `host:port` of a server's URL.
fn addr_of(url: &str) -> String {
    url.trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .to_owned()
}

/// An `initialize` POST as raw HTTP/1.1 bytes (JSON answers only).
fn raw_initialize() -> String {
    let init = init_body("2025-11-25");
    format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\nContent-Length: {}\r\n\r\n{init}",
        init.len()
    )
}

/// Reads SSE events (their data and id) until `n` have come or the stream ends.
async fn events(body: &mut Incoming, n: usize) -> Vec<(String, String)> {
    let mut decoder = SseDecoder::with_buffer(Vec::new(), 1 << 20);
    let mut out = Vec::new();
    while out.len() < n {
        let Some(frame) = tokio::time::timeout(WAIT, body.frame())
            .await
            .expect("event in time")
        else {
            break;
        };
        let Ok(chunk) = frame.unwrap().into_data() else {
            continue;
        };
        let mut input: &[u8] = &chunk;
        while let Some(item) = decoder.next(&mut input) {
            // Events with no data (the priming event of a request's stream) are skipped.
            if let SseItem::Event(e) = item {
                if !e.data.is_empty() {
                    out.push((e.data.to_owned(), e.id.to_owned()));
                }
            }
        }
    }
    out
}

#[tokio::test]
async fn session_lifecycle_and_header_rules() {
    let (url, service, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    assert!(
        id.starts_with("node1-") && id.len() == "node1-".len() + 32,
        "{id}"
    );
    assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
    // 128 random bits in hex: every new session's differs.
    assert!(
        id["node1-".len()..].bytes().all(|b| b.is_ascii_hexdigit()),
        "{id}"
    );
    let other = initialize(&url, "2025-11-25").await;
    assert_ne!(id, other);
    assert!(service.session_ids().contains(&other));
    let r = send("DELETE", &url, &with(&[("mcp-session-id", &other)]), "").await;
    assert_eq!(r.status(), StatusCode::OK);
    let list = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;

    // In the session: answered, as JSON.
    let r = send(
        "POST",
        &url,
        &with(&[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "2025-11-25"),
        ]),
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(v["result"]["tools"].as_array().unwrap().len(), 8);

    // No revision header: taken (2025-03-26 is assumed). An unknown revision: 400.
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), list).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send(
        "POST",
        &url,
        &with(&[
            ("mcp-session-id", &id),
            ("mcp-protocol-version", "1999-01-01"),
        ]),
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);

    // No session: 400; an unknown one: 404 (a JSON-RPC error body).
    let r = send("POST", &url, &POST, list).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = send(
        "POST",
        &url,
        &with(&[("mcp-session-id", "node1-nope")]),
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    assert_eq!(
        serde_json::from_str::<Value>(&text(r).await).unwrap()["error"]["code"],
        -32001
    );

    // Media types, size, path, method.
    let r = send(
        "POST",
        &url,
        &[("content-type", "text/plain"), ("mcp-session-id", &id)],
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let r = send(
        "POST",
        &url,
        &[
            ("content-type", "application/json"),
            ("accept", "text/html"),
            ("mcp-session-id", &id),
        ],
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"x":"{}"}}}}"#,
        "a".repeat(5 << 20)
    );
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), &big).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
    let r = send(
        "POST",
        &url.replace("/mcp", "/other"),
        &with(&[("mcp-session-id", &id)]),
        list,
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = send("PUT", &url, &with(&[("mcp-session-id", &id)]), list).await;
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), "{not json").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_str::<Value>(&text(r).await).unwrap()["error"]["code"],
        -32700
    );

    // DELETE ends it; then 404 for everything; a second DELETE 404.
    assert_eq!(service.session_count(), 1);
    let r = send("DELETE", &url, &[("mcp-session-id", &id)], "").await;
    assert_eq!(r.status(), StatusCode::OK);
    assert_eq!(service.session_count(), 0);
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), list).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = send(
        "GET",
        &url,
        &[("accept", "text/event-stream"), ("mcp-session-id", &id)],
        "",
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
    let r = send("DELETE", &url, &[("mcp-session-id", &id)], "").await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);

    // An initialize that fails leaves no session.
    let bad = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":"nope"}"#;
    let r = send("POST", &url, &POST, bad).await;
    assert!(r.headers().get("mcp-session-id").is_none());
    assert!(text(r).await.contains("error"));
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn host_and_origin_are_checked() {
    let (url, _, _) = start(|s| s).await;
    let init = init_body("2025-11-25");
    let r = send("POST", &url, &with(&[("host", "evil.example.com")]), &init).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = send(
        "POST",
        &url,
        &with(&[("origin", "http://evil.example.com")]),
        &init,
    )
    .await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = send("POST", &url, &with(&[("origin", "null")]), &init).await;
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = send(
        "POST",
        &url,
        &with(&[
            ("host", "localhost:1234"),
            ("origin", "http://localhost:1234"),
        ]),
        &init,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
}

#[tokio::test]
async fn progress_over_sse_and_json_without_it() {
    let (url, _, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"count","arguments":{},"_meta":{"progressToken":"p"}}}"#;
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), call).await;
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let mut body = r.into_body();
    let ev = events(&mut body, 10).await;
    assert_eq!(ev.len(), 4, "{ev:?}");
    for (i, (data, _)) in ev[..3].iter().enumerate() {
        let v: Value = serde_json::from_str(data).unwrap();
        assert_eq!(v["method"], "notifications/progress");
        assert_eq!(v["params"]["progress"], (i + 1) as f64);
    }
    let last: Value = serde_json::from_str(&ev[3].0).unwrap();
    assert_eq!(last["id"], 7);
    assert_eq!(last["result"]["content"][0]["text"], "counted");
    // A client taking JSON only gets the result alone.
    let r = send(
        "POST",
        &url,
        &[
            ("content-type", "application/json"),
            ("accept", "application/json"),
            ("mcp-session-id", &id),
        ],
        call,
    )
    .await;
    assert_eq!(r.headers()["content-type"], "application/json");
    let v: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(v["result"]["content"][0]["text"], "counted");
}

#[tokio::test]
async fn server_requests_are_answered_by_post() {
    let (url, _, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let call =
        r#"{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"ask","arguments":{}}}"#;
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), call).await;
    let mut body = r.into_body();
    let ev = events(&mut body, 1).await;
    let ask: Value = serde_json::from_str(&ev[0].0).unwrap();
    assert_eq!(ask["method"], "sampling/createMessage");
    let wire_id = ask["id"].as_str().expect("a string id").to_owned();
    assert!(wire_id.starts_with("node1-"), "{wire_id}");
    // The answer from another session goes nowhere; the right one reaches the tool.
    let answer = json!({"jsonrpc": "2.0", "id": wire_id, "result": {"role": "assistant",
        "content": {"type": "text", "text": "hi"}, "model": "m"}})
    .to_string();
    let other = initialize(&url, "2025-11-25").await;
    let r = send("POST", &url, &with(&[("mcp-session-id", &other)]), &answer).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), &answer).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let ev = events(&mut body, 1).await;
    let result: Value = serde_json::from_str(&ev[0].0).unwrap();
    assert_eq!(result["id"], 9);
    assert_eq!(result["result"]["content"][0]["text"], "model said \"hi\"");
}

#[tokio::test]
async fn cancelled_notification_stops_the_call() {
    let (url, _, dropped) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    // The id is written with an escape, the cancellation names it plainly: the same id.
    let call = r#"{"jsonrpc":"2.0","id":"w\u0031","method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":1}}}"#;
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), call).await;
    let mut body = r.into_body();
    assert_eq!(events(&mut body, 1).await.len(), 1); // the tool is running
    let cancel =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1"}}"#;
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), cancel).await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    // The stream ends long before the tool's 30 s, with no answer: MCP asks a receiver not
    // to answer a request its client cancelled.
    let rest = events(&mut body, 10).await;
    assert!(rest.is_empty(), "{rest:?}");
    let end = std::time::Instant::now() + WAIT;
    while !dropped.load(Ordering::SeqCst) {
        assert!(std::time::Instant::now() < end, "the tool did not stop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A server with a session, its GET stream open: (URL, session id, the stream, a client
/// that sends on it).
async fn get_stream() -> (String, String, Incoming, rpcwire_tokio::Client) {
    let (url, service, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let get = [
        ("accept", "text/event-stream"),
        ("mcp-session-id", id.as_str()),
    ];
    let r = send("GET", &url, &get, "").await;
    assert_eq!(r.status(), StatusCode::OK);
    let client = service.session_client(&id).expect("session");
    (url, id, r.into_body(), client)
}

#[tokio::test]
async fn get_stream_resumes_after_last_event_id() {
    let (url, id, mut body, client) = get_stream().await;
    for i in 1..=3 {
        client
            .notify("notifications/message", json!({"level": "info", "data": i}))
            .await
            .unwrap();
    }
    let ev = events(&mut body, 3).await;
    assert_eq!(ev.len(), 3);
    assert!(ev.iter().all(|(_, id)| !id.is_empty()));
    drop(body);
    // Reconnect after the first: the second and third again, nothing else.
    let last = ev[0].1.clone();
    let r = send(
        "GET",
        &url,
        &[
            ("accept", "text/event-stream"),
            ("mcp-session-id", &id),
            ("last-event-id", &last),
        ],
        "",
    )
    .await;
    let mut body = r.into_body();
    let again = events(&mut body, 2).await;
    assert_eq!(again, ev[1..].to_vec());
    // The GET stream needs a session, and an event-stream Accept.
    let r = send("GET", &url, &[("accept", "text/event-stream")], "").await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let r = send(
        "GET",
        &url,
        &[("accept", "application/json"), ("mcp-session-id", &id)],
        "",
    )
    .await;
    assert_eq!(r.status(), StatusCode::NOT_ACCEPTABLE);
}

/// A request the server sends on a session's GET stream (`McpService::session_client`) is
/// answered by a POST, which reaches the stream's connection and the call waiting for it.
#[tokio::test]
async fn get_stream_requests_are_answered_by_post() {
    let (url, id, mut body, client) = get_stream().await;
    let call = tokio::spawn(async move {
        client
            .call::<_, Value>("roots/list", json!({}))
            .await
            .map_err(|e| e.to_string())
    });
    let ev = events(&mut body, 1).await;
    let request: Value = serde_json::from_str(&ev[0].0).unwrap();
    assert_eq!(request["method"], "roots/list");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"roots": []}});
    let r = send(
        "POST",
        &url,
        &with(&[("mcp-session-id", &id)]),
        &answer.to_string(),
    )
    .await;
    assert_eq!(r.status(), StatusCode::ACCEPTED);
    let result = tokio::time::timeout(WAIT, call).await.unwrap().unwrap();
    assert_eq!(result, Ok(json!({"roots": []})));
}

#[tokio::test]
async fn sessions_are_bounded_and_end_when_idle() {
    let (url, service, _) = start(|s| s.max_sessions(2)).await;
    let a = initialize(&url, "2025-11-25").await;
    let b = initialize(&url, "2025-11-25").await;
    // A third: the oldest quiet session makes room.
    let c = initialize(&url, "2025-11-25").await;
    assert_eq!(service.session_count(), 2);
    let mut ids = service.session_ids();
    ids.sort();
    let mut want = vec![b.clone(), c.clone()];
    want.sort();
    assert_eq!(ids, want, "{a} went");
    // Both busy (a request running in each): no room, 503.
    let wait = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":1}}}"#;
    let mut streams = Vec::new();
    for s in [&b, &c] {
        let r = send("POST", &url, &with(&[("mcp-session-id", s)]), wait).await;
        let mut body = r.into_body();
        assert_eq!(events(&mut body, 1).await.len(), 1);
        streams.push(body);
    }
    let r = send("POST", &url, &POST, &init_body("2025-11-25")).await;
    assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
    drop(streams);

    // Idle timeout.
    let (url, service, _) = start(|s| s.idle_timeout(Duration::from_millis(200))).await;
    let id = initialize(&url, "2025-11-25").await;
    assert_eq!(service.session_count(), 1);
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert_eq!(service.session_count(), 0);
    let r = ping(&url, &id).await;
    assert_eq!(r.status(), StatusCode::NOT_FOUND);
}

/// A POSTed body is sorted by the core's JSON-RPC rules, as every other transport sorts it:
/// what the specification answers gets its error object, and what it never answers gets 202.
#[tokio::test]
async fn invalid_messages_follow_the_core_rules() {
    let (url, _, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let session = with(&[("mcp-session-id", &id)]);
    // Not JSON-RPC 2.0 (a method but the wrong version): Invalid Request, id null. It is no
    // notification, so it is answered.
    for body in [
        r#"{"jsonrpc":"1.0","method":"notifications/initialized"}"#,
        r#"{"method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized","params":7}"#,
    ] {
        let r = send("POST", &url, &session, body).await;
        assert_eq!(r.status(), StatusCode::OK, "{body}");
        let v: Value = serde_json::from_str(&text(r).await).unwrap();
        assert_eq!(v["error"]["code"], -32600, "{body}: {v}");
        assert_eq!(v["id"], Value::Null, "{body}: {v}");
    }
    // A request that also carries a result: Invalid Request, its id echoed.
    let r = send(
        "POST",
        &url,
        &session,
        r#"{"jsonrpc":"2.0","id":"r","method":"ping","result":1}"#,
    )
    .await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(
        (v["error"]["code"].clone(), v["id"].clone()),
        (json!(-32600), json!("r"))
    );
    // A malformed response is never answered.
    for body in [
        r#"{"id":"x","result":{}}"#,
        r#"{"jsonrpc":"2.0","id":"x","result":1,"error":{"code":1,"message":"m"}}"#,
    ] {
        let r = send("POST", &url, &session, body).await;
        assert_eq!(r.status(), StatusCode::ACCEPTED, "{body}");
        assert_eq!(text(r).await, "", "{body}");
    }
    // Not JSON: Parse error.
    let r = send("POST", &url, &session, r#"{"jsonrpc":"2.0","#).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    let v: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(v["error"]["code"], -32700);
}

#[tokio::test]
async fn batches_follow_the_negotiated_revision() {
    let (url, _, _) = start(|s| s).await;
    let batch = r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"tools/list"}]"#;
    let new = initialize(&url, "2025-06-18").await;
    let r = send("POST", &url, &with(&[("mcp-session-id", &new)]), batch).await;
    assert_eq!(r.status(), StatusCode::BAD_REQUEST);
    assert_eq!(
        serde_json::from_str::<Value>(&text(r).await).unwrap()["error"]["code"],
        -32600
    );
    let old = initialize(&url, "2025-03-26").await;
    let r = send("POST", &url, &with(&[("mcp-session-id", &old)]), batch).await;
    assert_eq!(r.status(), StatusCode::OK);
    let v: Value = serde_json::from_str(&text(r).await).unwrap();
    assert_eq!(v.as_array().map(Vec::len), Some(2), "{v}");
}

/// One stateless POST's answer: (status, JSON body).
async fn stateless_post(url: &str, headers: &[(&str, &str)], body: &str) -> (StatusCode, Value) {
    let r = send("POST", url, &with(headers), body).await;
    let status = r.status();
    assert!(r.headers().get("mcp-session-id").is_none());
    (
        status,
        serde_json::from_str(&text(r).await).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn stateless_revision_checks_method_headers() {
    let (url, service, dropped) = start(|s| s.mode(Mode::Stateless)).await;
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":3},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");
    let (status, v) = stateless_post(
        &url,
        &[("mcp-method", "tools/call"), ("mcp-name", "add"), V],
        call,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(v["result"]["content"][0]["text"], "5");
    // `Mcp-Name` in its Base64 sentinel form ("add"), header names in any case.
    let (status, v) = stateless_post(
        &url,
        &[
            ("MCP-METHOD", "tools/call"),
            ("Mcp-Name", "=?base64?YWRk?="),
            V,
        ],
        call,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    // Missing, malformed or disagreeing headers: 400 and HeaderMismatch, with the id.
    for headers in [
        vec![("mcp-method", "tools/call"), ("mcp-name", "add")],
        vec![("mcp-name", "add"), V],
        vec![("mcp-method", "tools/list"), ("mcp-name", "add"), V],
        vec![("mcp-method", "TOOLS/CALL"), ("mcp-name", "add"), V],
        vec![("mcp-method", "tools/call"), V],
        vec![("mcp-method", "tools/call"), ("mcp-name", "other"), V],
        vec![("mcp-method", "tools/call"), ("mcp-name", "ADD"), V],
        vec![
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?b3RoZXI=?="),
            V,
        ],
        vec![
            ("mcp-method", "tools/call"),
            ("mcp-name", "=?base64?YWR?="),
            V,
        ],
        vec![
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
            ("mcp-name", "add"),
            V,
        ],
    ] {
        let (status, v) = stateless_post(&url, &headers, call).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{headers:?}");
        assert_eq!(v["error"]["code"], -32020, "{headers:?}: {v}");
        assert_eq!(v["id"], 1, "{headers:?}: {v}");
    }
    // `_meta`'s protocol version, when there, must be the header's.
    let meta = |version: &str| {
        json!({"jsonrpc": "2.0", "id": "m", "method": "tools/list", "params": {
            "_meta": {"io.modelcontextprotocol/protocolVersion": version,
                "io.modelcontextprotocol/clientCapabilities": {}}}})
        .to_string()
    };
    let list_headers = [("mcp-method", "tools/list"), V];
    let (status, v) = stateless_post(&url, &list_headers, &meta("2026-07-28")).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let (status, v) = stateless_post(&url, &list_headers, &meta("2025-11-25")).await;
    assert_eq!(
        (status, &v["error"]["code"], &v["id"]),
        (StatusCode::BAD_REQUEST, &json!(-32020), &json!("m"))
    );
    // A revision this server does not speak: UnsupportedProtocolVersionError.
    let (status, v) = stateless_post(
        &url,
        &[
            ("mcp-method", "tools/call"),
            ("mcp-name", "add"),
            ("mcp-protocol-version", "2025-11-25"),
        ],
        call,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(v["error"]["code"], -32022, "{v}");
    assert_eq!(
        v["error"]["data"],
        json!({"supported": ["2026-07-28"], "requested": "2025-11-25"})
    );
    assert_eq!(v["id"], 1);
    // `Mcp-Name` for a method that names no target.
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (status, v) = stateless_post(
        &url,
        &[("mcp-method", "tools/list"), ("mcp-name", "x"), V],
        list,
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!(-32020))
    );
    let (status, _) = stateless_post(&url, &[("mcp-method", "tools/list"), V], list).await;
    assert_eq!(status, StatusCode::OK);
    // A method the server does not have: 404 with Method not found.
    let unknown = r#"{"jsonrpc":"2.0","id":7,"method":"unknown/method","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let (status, v) = stateless_post(&url, &[("mcp-method", "unknown/method"), V], unknown).await;
    assert_eq!(
        (status, &v["error"]["code"], &v["id"]),
        (StatusCode::NOT_FOUND, &json!(-32601), &json!(7))
    );
    // Notifications: the revision sets no header rules for them, but what is sent must hold.
    let note = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let (status, _) = stateless_post(&url, &[], note).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    let (status, v) = stateless_post(&url, &[("mcp-method", "tools/call")], note).await;
    assert_eq!(
        (status, &v["error"]["code"], &v["id"]),
        (StatusCode::BAD_REQUEST, &json!(-32020), &Value::Null)
    );
    // Batches: not in this revision.
    let batch = format!("[{list}]");
    let (status, _) = stateless_post(&url, &[("mcp-method", "tools/list"), V], &batch).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    // GET and DELETE: 405.
    for m in ["GET", "DELETE"] {
        let r = send(m, &url, &[("accept", "text/event-stream")], "").await;
        assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(r.headers()["allow"], "POST");
    }
    // Closing a request's stream cancels it.
    let wait = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{},"_meta":{"progressToken":1,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    let r = send(
        "POST",
        &url,
        &with(&[("mcp-method", "tools/call"), ("mcp-name", "wait"), V]),
        wait,
    )
    .await;
    let mut body = r.into_body();
    assert_eq!(events(&mut body, 1).await.len(), 1);
    assert!(!dropped.load(Ordering::SeqCst));
    drop(body);
    let end = std::time::Instant::now() + WAIT;
    while !dropped.load(Ordering::SeqCst) {
        assert!(
            std::time::Instant::now() < end,
            "the tool was not cancelled"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn rust_client_in_both_modes() {
    let (url, service, _) = start(|s| s.retry(Duration::from_millis(20))).await;
    let client = McpHttpClient::connect(&url).await.unwrap();
    let id = client.session_id().expect("a session");
    assert!(id.starts_with("node1-"));
    assert_eq!(service.session_ids(), vec![id]);
    assert_eq!(client.mcp().list_tools().await.unwrap().len(), 8);
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let r = client
        .mcp()
        .call_tool_with_progress("count", json!({}), move |p| {
            s.lock().unwrap().push(p.progress)
        })
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "counted");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    // A tool that closes its stream: the client resumes with GET and Last-Event-ID.
    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let s = Arc::clone(&seen);
    let r = client
        .mcp()
        .call_tool_with_progress("poll", json!({}), move |p| {
            s.lock().unwrap().push(p.progress)
        })
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "polled");
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0]);
    client.close().await.unwrap();
    assert_eq!(service.session_count(), 0);

    let (url, service, _) = start(|s| s.mode(Mode::Stateless)).await;
    let client = McpHttpClient::builder(&url)
        .mode(Mode::Stateless)
        .connect()
        .await
        .unwrap();
    assert!(client.session_id().is_none());
    let r = client
        .mcp()
        .call_tool("add", json!({"a": 40, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "42");
    // A tool name that is not header-safe goes in `Mcp-Name` in its Base64 form.
    let r = client.mcp().call_tool("grüße", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), "hallo");
    // A refusal with an error status and a JSON-RPC error body reaches the caller as that
    // error, not as an HTTP failure.
    let e = client
        .mcp()
        .client()
        .call::<_, Value>("unknown/method", json!({}))
        .await
        .unwrap_err();
    assert_eq!(e.rpc().map(|e| e.code), Some(-32601), "{e}");
    client.close().await.unwrap();
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn log_level_holds_for_the_session() {
    let (url, _, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let call =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"logs","arguments":{}}}"#;
    let logged = |ev: &[(String, String)]| -> Vec<String> {
        ev.iter()
            .filter_map(|(d, _)| serde_json::from_str::<Value>(d).ok())
            .filter(|v| v["method"] == "notifications/message")
            .map(|v| v["params"]["level"].as_str().unwrap().to_owned())
            .collect()
    };
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), call).await;
    let mut body = r.into_body();
    assert_eq!(logged(&events(&mut body, 10).await), ["info", "error"]);
    // The level set in one POST holds for the session's later POSTs.
    let set =
        r#"{"jsonrpc":"2.0","id":4,"method":"logging/setLevel","params":{"level":"warning"}}"#;
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), set).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), call).await;
    let mut body = r.into_body();
    assert_eq!(logged(&events(&mut body, 10).await), ["error"]);
    // Another session is not affected.
    let other = initialize(&url, "2025-11-25").await;
    let r = send("POST", &url, &with(&[("mcp-session-id", &other)]), call).await;
    let mut body = r.into_body();
    assert_eq!(logged(&events(&mut body, 10).await), ["info", "error"]);
}

#[tokio::test]
async fn body_limit_at_its_edge() {
    let (url, _, _) = start(|s| s.max_body(2048)).await;
    let id = initialize(&url, "2025-11-25").await;
    // A ping padded to exactly the limit, and one byte over.
    let make = |len: usize| {
        let head = r#"{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":""#;
        let tail = r#""}}"#;
        format!("{head}{}{tail}", "x".repeat(len - head.len() - tail.len()))
    };
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), &make(2048)).await;
    assert_eq!(r.status(), StatusCode::OK);
    let r = send("POST", &url, &with(&[("mcp-session-id", &id)]), &make(2049)).await;
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);
}

#[tokio::test]
async fn connections_are_bounded() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (url, _, _) = start(|s| s.max_connections(1)).await;
    let addr = addr_of(&url);
    let request = raw_initialize();
    let mut a = tokio::net::TcpStream::connect(&addr).await.unwrap();
    a.write_all(request.as_bytes()).await.unwrap();
    let mut buf = [0u8; 4096];
    let n = tokio::time::timeout(WAIT, a.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
    // A second connection waits while the first (kept alive) holds the only slot...
    let mut b = tokio::net::TcpStream::connect(&addr).await.unwrap();
    b.write_all(request.as_bytes()).await.unwrap();
    let waited = tokio::time::timeout(Duration::from_millis(300), b.read(&mut buf)).await;
    assert!(waited.is_err(), "served beyond the limit");
    // ...and is served once it closes.
    drop(a);
    let n = tokio::time::timeout(WAIT, b.read(&mut buf))
        .await
        .unwrap()
        .unwrap();
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));
}

/// The request heads a [`recording_proxy`] saw, in order.
type Heads = Arc<std::sync::Mutex<Vec<String>>>;

/// Forwards connections on a loopback port to `to`, recording the head of every request
/// clients send.
async fn recording_proxy(to: String) -> (String, Heads) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let heads = Heads::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let record = Arc::clone(&heads);
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            let server = tokio::net::TcpStream::connect(&to).await.unwrap();
            let (mut cr, mut cw) = client.into_split();
            let (mut sr, mut sw) = server.into_split();
            let record = Arc::clone(&record);
            tokio::spawn(async move {
                let mut buf = vec![0u8; 16 << 10];
                while let Ok(n) = cr.read(&mut buf).await {
                    if n == 0 || sw.write_all(&buf[..n]).await.is_err() {
                        break;
                    }
                    // Requests are small: each starts a read of its own here.
                    let text = String::from_utf8_lossy(&buf[..n]);
                    if let Some((head, _)) = text.split_once("\r\n\r\n") {
                        if ["GET ", "POST ", "DELETE "]
                            .iter()
                            .any(|m| head.starts_with(m))
                        {
                            record.lock().unwrap().push(head.to_owned());
                        }
                    }
                }
                let _ = sw.shutdown().await;
            });
            tokio::spawn(async move {
                let _ = tokio::io::copy(&mut sr, &mut cw).await;
                let _ = cw.shutdown().await;
            });
        }
    });
    (url, heads)
}

/// The headers given to the builder go with every request (an `Authorization`); the
/// transport's own are refused.
#[tokio::test]
async fn the_rust_client_sends_its_headers_with_every_request() {
    let (url, service, _) = start(|s| s).await;
    let (proxied, heads) = recording_proxy(addr_of(&url)).await;
    let client = McpHttpClient::builder(&proxied)
        .header("Authorization", "Bearer t0ken")
        .unwrap()
        .connect()
        .await
        .unwrap();
    let r = client
        .mcp()
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "3");
    client.close().await.unwrap();
    assert_eq!(service.session_count(), 0);
    let heads = heads.lock().unwrap().clone();
    // initialize, initialized, the call, DELETE at least.
    assert!(heads.len() >= 4, "{heads:?}");
    assert!(heads.last().unwrap().starts_with("DELETE "));
    for head in &heads {
        assert!(
            head.to_ascii_lowercase()
                .contains("\r\nauthorization: bearer t0ken"),
            "{head}"
        );
    }
    for name in [
        "Mcp-Session-Id",
        "accept",
        "MCP-Protocol-Version",
        "mcp-method",
    ] {
        let refused = McpHttpClient::builder(&url).header(name, "x").unwrap_err();
        assert!(
            matches!(&refused, rpcwire_mcp::http::McpHttpError::BadHeader(n) if n == name),
            "{refused}"
        );
    }
    assert!(McpHttpClient::builder(&url)
        .header("bad name", "x")
        .is_err());
}

/// A call the Rust client cancels: the server stops the tool and ends its stream with no
/// answer (MCP: a cancelled request is not answered), and the client, which knows it
/// cancelled it, does not try to resume that stream with GET.
#[tokio::test]
async fn the_rust_client_does_not_resume_a_call_it_cancelled() {
    let (url, _, dropped) = start(|s| s.retry(Duration::from_millis(20))).await;
    let (proxied, heads) = recording_proxy(addr_of(&url)).await;
    // No GET stream of its own: every GET would be a resumption.
    let client = McpHttpClient::builder(&proxied)
        .listen(false)
        .connect()
        .await
        .unwrap();
    let (tx, mut progressed) = tokio::sync::mpsc::unbounded_channel();
    let running = client
        .mcp()
        .start_tool(
            "wait",
            json!({}),
            Some(Box::new(move |p| {
                let _ = tx.send(p.progress);
            })),
        )
        .unwrap();
    tokio::time::timeout(WAIT, progressed.recv()).await.unwrap();
    running.cancel();
    let end = std::time::Instant::now() + WAIT;
    while !dropped.load(Ordering::SeqCst) {
        assert!(std::time::Instant::now() < end, "the tool did not stop");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Resumption would have come within a few `retry` periods (20 ms).
    tokio::time::sleep(Duration::from_millis(500)).await;
    let gets = heads
        .lock()
        .unwrap()
        .iter()
        .filter(|h| h.starts_with("GET "))
        .count();
    assert_eq!(gets, 0, "GET requests after the cancellation");
    let r = client
        .mcp()
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "3");
    client.close().await.unwrap();
}

/// `idle_connection_timeout`: a connection that sends nothing and an idle keep-alive one are
/// closed once it has passed (with one connection slot, a silent client no longer locks
/// everyone out); the session itself lives on, on a new connection.
#[tokio::test]
async fn idle_connections_are_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let idle = Duration::from_millis(300);
    let (url, _, _) = start(|s| s.max_connections(1).idle_connection_timeout(idle)).await;
    let addr = addr_of(&url);
    let closed = |mut s: tokio::net::TcpStream| async move {
        let mut buf = [0u8; 4096];
        loop {
            match tokio::time::timeout(WAIT, s.read(&mut buf)).await {
                Ok(Ok(0) | Err(_)) => return true,
                Ok(Ok(_)) => {}
                Err(_) => return false,
            }
        }
    };
    // A silent connection holds the only slot until the timeout...
    let silent = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let since = std::time::Instant::now();
    // ...then a client is served, and its idle keep-alive connection is closed in turn.
    let id = initialize(&url, "2025-11-25").await;
    assert!(since.elapsed() >= idle - Duration::from_millis(50));
    assert!(closed(silent).await);
    let request = raw_initialize();
    let mut a = tokio::net::TcpStream::connect(&addr).await.unwrap();
    a.write_all(request.as_bytes()).await.unwrap();
    let since = std::time::Instant::now();
    assert!(closed(a).await);
    let waited = since.elapsed();
    assert!(waited >= idle - Duration::from_millis(50), "{waited:?}");
    // The first session outlived its connection.
    let r = ping(&url, &id).await;
    assert_eq!(r.status(), StatusCode::OK);
}

/// Reads a whole event stream: (data, id) of every event, the priming one included.
async fn all_events(body: &mut Incoming) -> Vec<(String, String)> {
    let mut decoder = SseDecoder::with_buffer(Vec::new(), 1 << 20);
    let mut out = Vec::new();
    while let Some(frame) = tokio::time::timeout(WAIT, body.frame())
        .await
        .expect("in time")
    {
        let Ok(chunk) = frame.unwrap().into_data() else {
            continue;
        };
        let mut input: &[u8] = &chunk;
        while let Some(item) = decoder.next(&mut input) {
            if let SseItem::Event(e) = item {
                out.push((e.data.to_owned(), e.id.to_owned()));
            }
        }
    }
    out
}

#[tokio::test]
async fn request_streams_resume_with_last_event_id() {
    let (url, _, _) = start(|s| s).await;
    let id = initialize(&url, "2025-11-25").await;
    let post = with(&[("mcp-session-id", &id)]);
    let resume = |last: String| {
        let url = url.clone();
        let id = id.clone();
        async move {
            let headers = [
                ("accept", "text/event-stream"),
                ("mcp-session-id", id.as_str()),
                ("last-event-id", last.as_str()),
            ];
            let r = send("GET", &url, &headers, "").await;
            assert_eq!(r.status(), StatusCode::OK);
            let mut body = r.into_body();
            all_events(&mut body).await
        }
    };

    // The handler closes its stream (SSE polling): a priming event (an id, no data), the
    // first progress, the end; a GET with the last id carries the rest, the answer last.
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"poll","arguments":{},"_meta":{"progressToken":"t"}}}"#;
    let r = send("POST", &url, &post, call).await;
    let mut body = r.into_body();
    let first = all_events(&mut body).await;
    assert_eq!(first.len(), 2, "{first:?}");
    assert_eq!(first[0].0, "");
    assert!(first[0].1.ends_with("-0"));
    assert!(first[1].0.contains("notifications/progress"));
    let rest = resume(first[1].1.clone()).await;
    assert_eq!(rest.len(), 2, "{rest:?}");
    assert!(rest[0].0.contains(r#""progress":2.0"#));
    let answer: Value = serde_json::from_str(&rest[1].0).unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "polled");
    // Resumed whole: forgotten; a second resumption has nothing.
    assert!(resume(first[1].1.clone()).await.is_empty());

    // The client disconnects: the request goes on (session mode), and is resumed.
    let call = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow","arguments":{},"_meta":{"progressToken":"s"}}}"#;
    let r = send("POST", &url, &post, call).await;
    let mut body = r.into_body();
    let got = events(&mut body, 1).await;
    drop(body);
    let rest = resume(got[0].1.clone()).await;
    let texts: Vec<&str> = rest.iter().map(|(d, _)| d.as_str()).collect();
    assert_eq!(rest.len(), 3, "{texts:?}");
    assert!(texts[0].contains(r#""progress":2.0"#) && texts[1].contains(r#""progress":3.0"#));
    assert!(texts[2].contains("slow done"));

    // An id of no stream kept: the stream ends at once.
    assert!(resume("p99-0".into()).await.is_empty());
}
