//! Graceful shutdown of `rpcwire serve --http` under load: wrk (HTTP/1.1 keep-alive), h2load
//! (HTTP/2 with prior knowledge) and WebSocket clients run against the server, slow calls are
//! under way, and SIGTERM arrives. Every request is answered or refused (503 before it ran,
//! `-32042` on a WebSocket), none is cut (wrk reports no socket error, h2load no timeout and
//! no more errored streams than may cross its GOAWAY), the slow calls finish, every WebSocket
//! gets a close frame 1001, and the process exits 0 well within its drain deadline. The server
//! exports its spans over OTLP to a real receiver (`rpcwire_tests::otlp`): the server spans of
//! the slow calls, which end during the drain, have reached it by the time the process has
//! exited.
//!
//! wrk and h2load come from `.ci/install/load-tools.sh`, the receiver's venv from
//! `.ci/install/observability.sh`. Skips with a visible `SKIPPED:` line when they are missing,
//! unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use common::{bounded, serve_http};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::process::Command;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

/// The server's drain deadline in this test (seconds).
const DRAIN: u64 = 10;
/// How long a slow call sleeps; SIGTERM comes in the middle of it.
const SLOW_MS: u64 = 2_000;
/// h2load's connections and streams per connection: at most this many streams can cross the
/// server's GOAWAY (sent before the client saw it, never processed: the protocol's refusal).
const H2_CLIENTS: u64 = 2;
const H2_STREAMS: u64 = 4;

/// wrk's POSTs, one connection per thread: each thread counts answers (200 with the result)
/// and refusals (503), and stops at its first refusal (its connection was closed with it;
/// reconnecting to a server that no longer accepts would be counted as a socket error).
const WRK_SCRIPT: &str = r#"
wrk.method = "POST"
wrk.body = '{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}'
wrk.headers["Content-Type"] = "application/json"
local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; refused = 0; other = 0 end
function response(status, headers, body)
  if status == 200 and string.find(body, '"result":19', 1, true) then ok = ok + 1
  elseif status == 503 and (headers["connection"] or headers["Connection"]) == "close" then
    refused = refused + 1
    wrk.thread:stop()
  else other = other + 1 end
end
function done(summary, latency, requests)
  local o, r, x = 0, 0, 0
  for _, t in ipairs(threads) do o = o + t:get("ok"); r = r + t:get("refused"); x = x + t:get("other") end
  io.write(string.format("STATUS ok=%d refused=%d other=%d\n", o, r, x))
end
"#;

/// OTLP's `SPAN_KIND_SERVER`.
const SERVER: i64 = 2;

/// Nanoseconds since the Unix epoch, as OTLP's span times count.
fn unix_nanos(at: SystemTime) -> u64 {
    u64::try_from(at.duration_since(UNIX_EPOCH).unwrap().as_nanos()).unwrap()
}

fn found(tool: &str) -> bool {
    std::process::Command::new(tool)
        .arg("--version")
        .output()
        .is_ok()
}

/// The numbers after `key` words in `line`: `number(line, "succeeded")` of
/// `... 3570 succeeded, 13 failed ...` is 3570.
fn number(text: &str, key: &str) -> u64 {
    let words: Vec<&str> = text.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_end_matches(',') == key)
        .unwrap_or_else(|| panic!("no `{key}` in {text}"));
    words[at - 1]
        .parse()
        .unwrap_or_else(|_| panic!("{key}: {text}"))
}

/// What a WebSocket client saw: answers, refusals, the close frame, and whether its slow
/// call (if any) was answered.
#[derive(Debug, Default)]
struct WsSeen {
    answered: u64,
    refused: u64,
    close: Option<(u16, String)>,
    slow_answered: bool,
}

/// A WebSocket client of `url`: with `slow`, one slow call then waits; otherwise calls
/// `subtract` one after the other. Each answer is checked (the result, or `-32042` refused);
/// it runs until the server's close frame.
async fn ws_client(url: String, slow: bool) -> WsSeen {
    let (mut ws, _) = tokio_tungstenite::connect_async(url)
        .await
        .expect("connect");
    let mut seen = WsSeen::default();
    let mut id = 0u64;
    let send = |id: u64| {
        let (method, params) = if slow {
            ("sleep", json!({ "ms": SLOW_MS }))
        } else {
            ("subtract", json!([5, 2]))
        };
        Message::text(json!({"jsonrpc":"2.0","method":method,"params":params,"id":id}).to_string())
    };
    if slow {
        // Started once the others are going: SIGTERM comes while it sleeps.
        tokio::time::sleep(Duration::from_millis(1_000)).await;
    }
    ws.send(send(id)).await.unwrap();
    while let Some(message) = ws.next().await {
        match message.expect("a clean WebSocket") {
            Message::Text(text) => {
                let answer: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(answer["id"], json!(id), "{answer}");
                if answer["error"]["code"] == json!(-32042) {
                    seen.refused += 1;
                } else if slow {
                    assert_eq!(answer["result"], Value::Null, "{answer}");
                    seen.slow_answered = true;
                } else {
                    assert_eq!(answer["result"], json!(3), "{answer}");
                    seen.answered += 1;
                }
                if !slow {
                    id += 1;
                    // The server may have sent its close meanwhile: a send then fails.
                    if ws.send(send(id)).await.is_err() {
                        break;
                    }
                }
            }
            Message::Close(frame) => {
                let frame = frame.expect("a close frame with a code");
                seen.close = Some((u16::from(frame.code), frame.reason.to_string()));
                break;
            }
            _ => {}
        }
    }
    // A close that arrived while a send failed.
    if seen.close.is_none() {
        while let Some(Ok(message)) = ws.next().await {
            if let Message::Close(Some(frame)) = message {
                seen.close = Some((u16::from(frame.code), frame.reason.to_string()));
            }
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_under_load_drains_every_connection_cleanly() {
    if !found("wrk") || !found("h2load") {
        rpcwire_tests::skip("no wrk or h2load: run .ci/install/load-tools.sh");
        return;
    }
    let dir = std::env::temp_dir().join(format!("rpcwire-drain-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (script, body) = (dir.join("post.lua"), dir.join("body.json"));
    std::fs::write(&script, WRK_SCRIPT).unwrap();
    std::fs::write(
        &body,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
    )
    .unwrap();

    let Some(receiver) = rpcwire_tests::otlp::OtlpReceiver::start() else {
        return;
    };
    let drain = DRAIN.to_string();
    let (mut server, url) = serve_http(&["--drain-timeout", &drain, "--otlp", &receiver.url]).await;
    let load_secs = "6";
    let wrk = Command::new("wrk")
        .args(["-t4", "-c4", "-d", load_secs, "-s"])
        .arg(&script)
        .arg(&url)
        .kill_on_drop(true)
        .output();
    let h2load = Command::new("h2load")
        .arg(format!("-c{H2_CLIENTS}"))
        .arg(format!("-m{H2_STREAMS}"))
        .args([
            "-t1",
            "-D",
            load_secs,
            "-H",
            "content-type: application/json",
            "-d",
        ])
        .arg(&body)
        .arg(&url)
        .kill_on_drop(true)
        .output();
    let (wrk, h2load) = (tokio::spawn(wrk), tokio::spawn(h2load));
    let ws_url = url.replacen("http://", "ws://", 1);
    let sockets: Vec<_> = [false, false, true]
        .into_iter()
        .map(|slow| tokio::spawn(ws_client(ws_url.clone(), slow)))
        .collect();
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    // Slow HTTP calls, under way when SIGTERM comes.
    let slow_calls: Vec<_> = (0..2)
        .map(|_| {
            let client = rpcwire_http::HttpClient::new(&url).unwrap();
            tokio::spawn(async move {
                let answer = client
                    .client()
                    .call::<_, Value>("sleep", json!({ "ms": SLOW_MS }))
                    .await;
                (answer, Instant::now())
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;

    let stopped = Instant::now();
    let stopped_at = unix_nanos(SystemTime::now());
    rpcwire_tests::otlp::sigterm(server.id().expect("running"));
    let status = bounded(server.wait()).await.unwrap();
    let exited = stopped.elapsed();
    assert!(status.success(), "the server exited with {status}");
    assert!(
        exited < Duration::from_secs(DRAIN),
        "exited {exited:?} after SIGTERM, past its drain deadline"
    );
    // The process is gone: whatever the receiver has, it was sent before the exit. Among it,
    // the server spans of the three slow calls (two over HTTP, one over WebSocket), ended
    // after SIGTERM.
    let mut slow = Vec::new();
    let mut spans = 0u64;
    while let Some(span) = receiver.try_next_span(Duration::from_secs(5)) {
        spans += 1;
        if span["name"] == "sleep" && span["kind"] == SERVER {
            slow.push(span);
        }
    }
    println!("{spans} spans received, {} of slow calls", slow.len());
    let protocols = |span: &Value| span["attributes"]["network.protocol.name"].clone();
    let mut by_protocol: Vec<Value> = slow.iter().map(protocols).collect();
    by_protocol.sort_by_key(Value::to_string);
    assert_eq!(
        by_protocol,
        [json!("http"), json!("http"), json!("websocket")],
        "the slow calls' spans: {slow:?}"
    );
    for span in &slow {
        let end = span["end"].as_u64().expect("an end time");
        assert!(
            end > stopped_at,
            "a slow call's span ended before SIGTERM: {span}"
        );
    }

    for call in slow_calls {
        let (answer, at) = bounded(call).await.unwrap();
        assert_eq!(answer.expect("the slow call is answered"), Value::Null);
        assert!(at > stopped, "the slow call ended during the drain");
    }
    for (i, socket) in sockets.into_iter().enumerate() {
        let seen = bounded(socket).await.unwrap();
        println!("WebSocket client {i}: {seen:?}");
        assert_eq!(
            seen.close,
            Some((
                u16::from(CloseCode::Away),
                "server shutting down".to_owned()
            )),
            "client {i}"
        );
        if i == 2 {
            assert!(seen.slow_answered, "the slow WebSocket call is answered");
        } else {
            assert!(seen.answered > 0, "client {i}: {seen:?}");
        }
    }

    let wrk = bounded(wrk).await.unwrap().unwrap();
    let out = String::from_utf8_lossy(&wrk.stdout);
    println!("wrk:\n{out}{}", String::from_utf8_lossy(&wrk.stderr));
    assert!(wrk.status.success());
    assert!(!out.contains("Socket errors"), "wrk saw a cut connection");
    let status = out
        .lines()
        .find(|l| l.starts_with("STATUS"))
        .expect("wrk's counts");
    let count = |key: &str| -> u64 {
        let word = status.split(' ').find(|w| w.starts_with(key)).unwrap();
        word[key.len() + 1..].parse().unwrap()
    };
    assert!(count("ok") > 0, "{status}");
    assert_eq!(
        count("other"),
        0,
        "every answer is the result or 503: {status}"
    );
    assert_eq!(
        count("refused"),
        4,
        "each connection ends at its 503: {status}"
    );
    let requests: u64 = out
        .split_whitespace()
        .zip(out.split_whitespace().skip(1))
        .find(|(_, w)| *w == "requests")
        .map(|(n, _)| n.parse().unwrap())
        .unwrap();
    assert_eq!(requests, count("ok") + count("refused"), "{out}");

    let h2 = bounded(h2load).await.unwrap().unwrap();
    let out = String::from_utf8_lossy(&h2.stdout);
    println!("h2load:\n{out}{}", String::from_utf8_lossy(&h2.stderr));
    assert!(h2.status.success());
    let line = |start: &str| {
        out.lines()
            .find(|l| l.starts_with(start))
            .unwrap_or_else(|| panic!("no `{start}` in h2load's output"))
            .to_owned()
    };
    let (requests, codes) = (line("requests:"), line("status codes:"));
    let (done, succeeded) = (number(&requests, "done"), number(&requests, "succeeded"));
    let (failed, errored) = (number(&requests, "failed"), number(&requests, "errored"));
    assert!(succeeded > 0, "{requests}");
    assert_eq!(number(&requests, "timeout"), 0, "{requests}");
    assert_eq!(number(&codes, "4xx"), 0, "{codes}");
    // Failed: the 503s and the errored streams, nothing else.
    assert_eq!(
        failed,
        number(&codes, "5xx") + errored,
        "{requests} / {codes}"
    );
    assert_eq!(done, succeeded + failed, "{requests}");
    assert!(
        errored <= H2_CLIENTS * H2_STREAMS,
        "only streams that crossed the GOAWAY go unanswered: {requests}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
