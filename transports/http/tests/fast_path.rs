//! The HTTP/1.1 fast path of `rpcwire_http::serve`, on raw sockets: its answers equal hyper's,
//! pipelined requests (behind a slow call too), heads and bodies split across reads, each limit
//! at its edge, the hand-over to hyper in the middle of a connection, `Connection: close`,
//! HTTP/1.0, the time limits on a head and a body that come too slowly, a client leaving
//! during its call (cancelled, as on hyper's path), and two property tests: random requests,
//! and random requests changed at random bytes, answered alike with the fast path and without
//! it (hyper for every request), with no panic.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use rpcwire_http::HttpServer;
use rpcwire_tokio::{
    AuthError, AuthFuture, Authenticator, Builder, Context, Credentials, Identity, Router, RpcError,
};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);
const W1: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

fn router() -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method_with_context("count", |cx: Context, (n,): (u64,)| async move {
            for i in 1..=n {
                cx.peer().notify("progress", json!({ "done": i })).await?;
            }
            Ok::<_, RpcError>(n)
        })
        .method("sleep", |(ms,): (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        // Who the caller is, and two of its request's headers, from the caller's metadata.
        .method_with_context("whoami", |cx: Context, _: Value| async move {
            let headers = cx.caller().meta::<http::HeaderMap>();
            let header = |name: &str| {
                headers
                    .and_then(|h| h.get(name))
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned)
            };
            Ok::<_, RpcError>(json!({
                "subject": cx.identity().subject(),
                "trace": header("x-trace"),
                "length": header("content-length"),
            }))
        })
        // Every header field the handler sees, in order (values as bytes, lossily).
        .method_with_context("headers", |cx: Context, _: Value| async move {
            let fields: Vec<(String, String)> = cx
                .caller()
                .meta::<http::HeaderMap>()
                .map(|h| {
                    h.iter()
                        .map(|(n, v)| {
                            let value = String::from_utf8_lossy(v.as_bytes()).into_owned();
                            (n.as_str().to_owned(), value)
                        })
                        .collect()
                })
                .unwrap_or_default();
            Ok::<_, RpcError>(json!(fields))
        })
}

async fn start(server: HttpServer) -> SocketAddr {
    let service = server.build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rpcwire_http::serve(listener, service));
    addr
}

fn server() -> HttpServer {
    HttpServer::new(Builder::new().router(router())).path("/rpc")
}

/// A POST of `body` with these extra header lines (each ending in CRLF).
fn post(body: &str, extra: &str) -> String {
    format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A POST of `body` with a chunked body (which the fast path hands to hyper).
fn chunked(body: &str) -> String {
    format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    )
}

#[derive(Debug, PartialEq)]
struct Answer {
    status: u16,
    /// Lower-case names, in order.
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap()
    }
}

/// Reads one response (a `Content-Length` or chunked body) from `s`, keeping what follows in
/// `rest`.
async fn read_answer(s: &mut TcpStream, rest: &mut Vec<u8>) -> Answer {
    tokio::time::timeout(WAIT, answer_or_end(s, rest))
        .await
        .expect("an answer in time")
        .expect("a whole answer before the connection closed")
}

/// One response, or `None` when the connection ends (closed or reset) before a whole one.
async fn answer_or_end(s: &mut TcpStream, rest: &mut Vec<u8>) -> Option<Answer> {
    let head_end = loop {
        if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        fill(s, rest).await?;
    };
    let head = String::from_utf8(rest[..head_end].to_vec()).unwrap();
    rest.drain(..head_end + 4);
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next().unwrap()[9..12].parse().unwrap();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (n, v) = l.split_once(':').unwrap();
            (n.to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let find = |name: &str| {
        headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    let mut body = Vec::new();
    if let Some(len) = find("content-length") {
        let len: usize = len.parse().unwrap();
        while rest.len() < len {
            fill(s, rest).await?;
        }
        body.extend(rest.drain(..len));
    } else if find("transfer-encoding").as_deref() == Some("chunked") {
        loop {
            let line_end = loop {
                if let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
                    break i;
                }
                fill(s, rest).await?;
            };
            let size =
                usize::from_str_radix(std::str::from_utf8(&rest[..line_end]).unwrap().trim(), 16)
                    .unwrap();
            rest.drain(..line_end + 2);
            while rest.len() < size + 2 {
                fill(s, rest).await?;
            }
            body.extend(rest.drain(..size));
            rest.drain(..2);
            if size == 0 {
                break;
            }
        }
    }
    Some(Answer {
        status,
        headers,
        body: String::from_utf8(body).unwrap(),
    })
}

/// Reads more of the answer into `rest`; `None` once the connection has ended.
async fn fill(s: &mut TcpStream, rest: &mut Vec<u8>) -> Option<()> {
    let mut chunk = [0u8; 4096];
    match s.read(&mut chunk).await {
        Ok(0) | Err(_) => None,
        Ok(n) => {
            rest.extend_from_slice(&chunk[..n]);
            Some(())
        }
    }
}

/// Whether the server closes `s` within `within` (reading nothing more).
async fn closed(s: &mut TcpStream, within: Duration) -> bool {
    let mut chunk = [0u8; 256];
    matches!(
        tokio::time::timeout(within, s.read(&mut chunk)).await,
        Ok(Ok(0)) | Ok(Err(_))
    )
}

async fn connect(addr: SocketAddr) -> TcpStream {
    let s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    s
}

#[tokio::test]
async fn answers_equal_hyper_s() {
    let addr = start(server()).await;
    // The same call, on the fast path and (chunked, so hyper's) on hyper's path.
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    s.write_all(post(W1, "").as_bytes()).await.unwrap();
    let fast = read_answer(&mut s, &mut rest).await;
    let request = chunked(W1);
    let mut h = connect(addr).await;
    let mut hrest = Vec::new();
    h.write_all(request.as_bytes()).await.unwrap();
    let hyper = read_answer(&mut h, &mut hrest).await;
    let names = |a: &Answer| a.headers.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
    assert_eq!(fast.status, 200);
    assert_eq!(fast.status, hyper.status);
    assert_eq!(names(&fast), names(&hyper));
    assert_eq!(fast.header("content-type"), hyper.header("content-type"));
    assert_eq!(fast.body, hyper.body);
    assert_eq!(fast.json(), json!({"jsonrpc":"2.0","result":19,"id":1}));
    assert!(fast.header("date").is_some_and(|d| d.ends_with(" GMT")));

    // A notification: 202, no body, on both paths.
    let note = r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1]}"#;
    s.write_all(post(note, "").as_bytes()).await.unwrap();
    let fast = read_answer(&mut s, &mut rest).await;
    let request = chunked(note);
    h.write_all(request.as_bytes()).await.unwrap();
    let hyper = read_answer(&mut h, &mut hrest).await;
    assert_eq!((fast.status, fast.body.as_str()), (202, ""));
    assert_eq!(names(&fast), names(&hyper));
    assert_eq!(fast.header("content-length"), Some("0"));
}

#[tokio::test]
async fn pipelined_requests_are_answered_in_order() {
    let addr = start(server()).await;
    let mut s = connect(addr).await;
    let mut all = String::new();
    for id in 1..=20 {
        let body =
            format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{id},1],"id":{id}}}"#);
        all.push_str(&post(&body, ""));
    }
    s.write_all(all.as_bytes()).await.unwrap();
    let mut rest = Vec::new();
    for id in 1..=20 {
        let a = read_answer(&mut s, &mut rest).await;
        assert_eq!(a.status, 200);
        assert_eq!(a.json(), json!({"jsonrpc":"2.0","result":id - 1,"id":id}));
    }
}

#[tokio::test]
async fn requests_pipelined_behind_a_slow_call_wait_for_it() {
    let addr = start(server()).await;
    let mut s = connect(addr).await;
    // A slow call, then more requests than the fast path reads while a call runs (a head's
    // worth): all answered, in order.
    let mut all = post(
        r#"{"jsonrpc":"2.0","method":"sleep","params":[200],"id":0}"#,
        "",
    );
    for id in 1..=150 {
        let body =
            format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{id},1],"id":{id}}}"#);
        all.push_str(&post(&body, ""));
    }
    assert!(all.len() > 2 * 8192, "{}", all.len());
    s.write_all(all.as_bytes()).await.unwrap();
    let mut rest = Vec::new();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!(a.json(), json!({"jsonrpc":"2.0","result":200,"id":0}));
    for id in 1..=150 {
        let a = read_answer(&mut s, &mut rest).await;
        assert_eq!(a.json(), json!({"jsonrpc":"2.0","result":id - 1,"id":id}));
    }
}

/// Sets its flag when dropped: shows that a handler's future was dropped.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[tokio::test]
async fn a_client_that_leaves_during_its_call_cancels_it() {
    for fast in [true, false] {
        for half_close in [false, true] {
            let started = Arc::new(AtomicBool::new(false));
            let dropped = Arc::new(AtomicBool::new(false));
            let finished = Arc::new(AtomicBool::new(false));
            let (st, dr, fi) = (started.clone(), dropped.clone(), finished.clone());
            let router = Router::new().method("long", move |_: Value| {
                let (flag, fi) = (DropFlag(dr.clone()), fi.clone());
                st.store(true, Ordering::SeqCst);
                async move {
                    let _flag = flag;
                    tokio::time::sleep(WAIT).await;
                    fi.store(true, Ordering::SeqCst);
                    Ok::<_, RpcError>(0)
                }
            });
            let server = HttpServer::new(Builder::new().router(router))
                .path("/rpc")
                .fast_path(fast);
            let mut s = connect(start(server).await).await;
            let call = r#"{"jsonrpc":"2.0","method":"long","id":1}"#;
            s.write_all(post(call, "").as_bytes()).await.unwrap();
            let until = |what: &Arc<AtomicBool>| {
                let what = what.clone();
                async move {
                    let end = tokio::time::Instant::now() + WAIT;
                    while !what.load(Ordering::SeqCst) && tokio::time::Instant::now() < end {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                    what.load(Ordering::SeqCst)
                }
            };
            assert!(
                until(&started).await,
                "fast path {fast}: the call never started"
            );
            if half_close {
                s.shutdown().await.unwrap();
            } else {
                drop(s);
            }
            assert!(
                until(&dropped).await,
                "fast path {fast}, half-close {half_close}: the call was not cancelled"
            );
            assert!(!finished.load(Ordering::SeqCst));
        }
    }
}

#[tokio::test]
async fn heads_and_bodies_split_across_reads() {
    let addr = start(server()).await;
    let mut s = connect(addr).await;
    let request = post(W1, "");
    let mut rest = Vec::new();
    // Cut at every place of the head and the body, a few bytes at a time.
    for step in [1usize, 7, 50] {
        for piece in request.as_bytes().chunks(step) {
            s.write_all(piece).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let a = read_answer(&mut s, &mut rest).await;
        assert_eq!(a.json()["result"], 19, "pieces of {step}");
    }
}

#[tokio::test]
async fn body_limit_at_its_edge_on_one_connection() {
    let addr = start(server().max_body(1024)).await;
    let ok = r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}"#;
    let pad = |n: usize| format!("{ok}{}", " ".repeat(n - ok.len()));
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    s.write_all(post(&pad(1024), "").as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 0);
    // One byte more: hyper's 413, as before the fast path.
    s.write_all(post(&pad(1025), "").as_bytes()).await.unwrap();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!((a.status, a.body.as_str()), (413, "body too large\n"));
}

#[tokio::test]
async fn hyper_takes_over_in_the_middle_of_a_connection() {
    let addr = start(server()).await;
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    // Fast, then PUT (hyper's 405), then POST again (hyper serves the rest), all pipelined.
    let put = "PUT /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n";
    s.write_all(format!("{}{put}{}", post(W1, ""), post(W1, "")).as_bytes())
        .await
        .unwrap();
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!((a.status, a.header("allow")), (405, Some("GET, POST")));
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);

    // A client that accepts event streams gets one from hyper, after a fast call.
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    s.write_all(post(W1, "").as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);
    let count = r#"{"jsonrpc":"2.0","method":"count","params":[3],"id":7}"#;
    s.write_all(post(count, "Accept: application/json, text/event-stream\r\n").as_bytes())
        .await
        .unwrap();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!(a.header("content-type"), Some("text/event-stream"));
    assert_eq!(a.body.matches("event: message").count(), 4, "{}", a.body);
    assert!(a.body.contains(r#""result":3"#));

    // Refused heads: hyper's answers (403, 415, 406, 404), each on a connection of its own.
    for (request, status) in [
        (
            post(W1, "").replace("Host: 127.0.0.1", "Host: evil.example"),
            403,
        ),
        (post(W1, "Origin: http://evil.example\r\n"), 403),
        (post(W1, "").replace("application/json", "text/plain"), 415),
        (post(W1, "Accept: text/html\r\n"), 406),
        (post(W1, "").replace("/rpc", "/other"), 404),
    ] {
        let mut s = connect(addr).await;
        let mut rest = Vec::new();
        s.write_all(request.as_bytes()).await.unwrap();
        assert_eq!(
            read_answer(&mut s, &mut rest).await.status,
            status,
            "{request}"
        );
    }
}

#[tokio::test]
async fn head_limits_hand_over_to_hyper() {
    let addr = start(server()).await;
    // A head longer than the fast path reads, and more headers than it parses: hyper's, 200.
    let long = format!("X-Long: {}\r\n", "a".repeat(10 << 10));
    let many: String = (0..40).map(|i| format!("X-H{i}: {i}\r\n")).collect();
    for extra in [long, many] {
        let mut s = connect(addr).await;
        let mut rest = Vec::new();
        s.write_all(post(W1, &extra).as_bytes()).await.unwrap();
        let a = read_answer(&mut s, &mut rest).await;
        assert_eq!(a.json()["result"], 19);
        // And the connection goes on (with hyper).
        s.write_all(post(W1, "").as_bytes()).await.unwrap();
        assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);
    }
    // A head past hyper's own limit: 431.
    let huge = format!("X-Huge: {}\r\n", "a".repeat(600 << 10));
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    let _ = s.write_all(post(W1, &huge).as_bytes()).await;
    assert_eq!(read_answer(&mut s, &mut rest).await.status, 431);
}

#[tokio::test]
async fn connection_close_and_http_1_0() {
    let addr = start(server()).await;
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    s.write_all(post(W1, "Connection: close\r\n").as_bytes())
        .await
        .unwrap();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!(a.json()["result"], 19);
    assert_eq!(a.header("connection"), Some("close"));
    assert!(closed(&mut s, WAIT).await);

    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    let old = post(W1, "").replace("HTTP/1.1", "HTTP/1.0");
    s.write_all(old.as_bytes()).await.unwrap();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!(a.json()["result"], 19);
    assert!(
        closed(&mut s, WAIT).await,
        "HTTP/1.0 without keep-alive closes"
    );
}

#[tokio::test]
async fn slow_heads_are_closed_and_slow_bodies_get_408() {
    let addr = start(server().timeout(Duration::from_millis(300))).await;
    // An idle keep-alive connection stays open past the limit...
    let mut idle = connect(addr).await;
    let mut rest = Vec::new();
    idle.write_all(post(W1, "").as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut idle, &mut rest).await.json()["result"], 19);
    // ...a head begun and never finished does not.
    let mut slow = connect(addr).await;
    slow.write_all(b"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .await
        .unwrap();
    assert!(closed(&mut slow, Duration::from_secs(5)).await);
    assert!(!closed(&mut idle, Duration::from_millis(100)).await);
    idle.write_all(post(W1, "").as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut idle, &mut rest).await.json()["result"], 19);

    // A body that stops short: 408, then the connection closes.
    let mut s = connect(addr).await;
    let request = post(W1, "");
    s.write_all(&request.as_bytes()[..request.len() - 10])
        .await
        .unwrap();
    let mut rest = Vec::new();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!((a.status, a.body.as_str()), (408, "body too slow\n"));
    assert_eq!(a.header("connection"), Some("close"));
    assert!(closed(&mut s, WAIT).await);
}

#[tokio::test]
async fn batch_limit_and_errors_on_the_fast_path() {
    let addr = start(server().max_batch_len(2)).await;
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    let call = r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":1}"#;
    s.write_all(post(&format!("[{call},{call}]"), "").as_bytes())
        .await
        .unwrap();
    assert_eq!(
        read_answer(&mut s, &mut rest)
            .await
            .json()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    s.write_all(post(&format!("[{call},{call},{call}]"), "").as_bytes())
        .await
        .unwrap();
    let a = read_answer(&mut s, &mut rest).await;
    assert_eq!(a.status, 413);
    assert_eq!(a.header("content-type"), Some("application/json"));
    assert_eq!(a.json()["error"]["code"], -32600);
    s.write_all(post("{nope", "").as_bytes()).await.unwrap();
    assert_eq!(
        read_answer(&mut s, &mut rest).await.json()["error"]["code"],
        -32700
    );
}

/// `idle_connection_timeout`: a connection that sends nothing, and an idle keep-alive
/// connection (on the fast path and on hyper's), are closed once it has passed, so that idle
/// clients cannot hold every connection slot; one whose requests come sooner stays open.
#[tokio::test]
async fn idle_connections_are_closed_after_the_idle_timeout() {
    let idle = Duration::from_millis(400);
    let addr = start(server().idle_connection_timeout(idle).max_connections(2)).await;

    // Requests 150 ms apart: the connection stays open throughout.
    let mut busy = connect(addr).await;
    let mut rest = Vec::new();
    for _ in 0..4 {
        busy.write_all(post(W1, "").as_bytes()).await.unwrap();
        assert_eq!(read_answer(&mut busy, &mut rest).await.json()["result"], 19);
        assert!(!closed(&mut busy, Duration::from_millis(150)).await);
    }
    // Then idle: closed, and not long after the timeout.
    let since = std::time::Instant::now();
    assert!(closed(&mut busy, WAIT).await);
    let waited = since.elapsed();
    assert!(waited < idle + Duration::from_secs(1), "{waited:?}");

    // Two silent connections hold both slots: a third client waits in the backlog until
    // they are closed, then it is answered.
    let mut silent = [connect(addr).await, connect(addr).await];
    let since = std::time::Instant::now();
    let mut third = connect(addr).await;
    third.write_all(post(W1, "").as_bytes()).await.unwrap();
    let mut rest = Vec::new();
    assert_eq!(
        read_answer(&mut third, &mut rest).await.json()["result"],
        19
    );
    assert!(since.elapsed() >= idle - Duration::from_millis(50));
    for s in &mut silent {
        assert!(closed(s, WAIT).await);
    }

    // On hyper's path (a chunked body hands the connection over): closed when idle too.
    let request = chunked(W1);
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    s.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);
    assert!(!closed(&mut s, Duration::from_millis(150)).await);
    s.write_all(request.as_bytes()).await.unwrap();
    assert_eq!(read_answer(&mut s, &mut rest).await.json()["result"], 19);
    assert!(closed(&mut s, WAIT).await);
}

/// A request of the differential test: head fields (name, value) in order, and a body.
#[derive(Debug, Clone)]
struct RandomRequest {
    method: &'static str,
    target: &'static str,
    version: &'static str,
    fields: Vec<(String, String)>,
    body: String,
    /// The next request is written right behind it, before its answer is read.
    pipelined: bool,
}

impl RandomRequest {
    fn bytes(&self) -> Vec<u8> {
        let mut out = format!("{} {} {}\r\n", self.method, self.target, self.version);
        for (name, value) in &self.fields {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        out.push_str("\r\n");
        out.push_str(&self.body);
        out.into_bytes()
    }
}

/// `name` with each letter's case chosen by the bits of `mask`.
fn cased(name: &str, mask: u32) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if mask >> (i % 32) & 1 == 1 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

/// Requests around what the fast path decides on: methods, targets, versions, each header
/// field it reads (absent, repeated, in any case, with values it takes and values it does
/// not), others it ignores or leaves to hyper, and bodies of every kind. Every
/// `Content-Length` that parses as a number is the body's length, so that no request leaves
/// a server waiting for bytes that never come.
fn random_request() -> impl Strategy<Value = RandomRequest> {
    use proptest::sample::select;
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":"{}"}}"#,
        "x".repeat(1100)
    );
    let body = select(vec![
        W1.to_owned(),
        r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1]}"#.to_owned(),
        format!(r#"[{W1},{{"jsonrpc":"2.0","method":"subtract","params":[5,1]}}]"#),
        r#"[{"jsonrpc":"2.0","method":"subtract","params":[5,1]}]"#.to_owned(),
        r#"{"jsonrpc":"2.0","result":1,"id":9}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"nope","id":2}"#.to_owned(),
        r#"{"jsonrpc":"2.0","method":"whoami","id":3}"#.to_owned(),
        "{".to_owned(),
        "[]".to_owned(),
        String::new(),
        big,
    ]);
    // (name, values); a value "LEN" is replaced by the body's length.
    let pool: Vec<(&'static str, Vec<&'static str>)> = vec![
        (
            "host",
            vec![
                "127.0.0.1",
                "127.0.0.1:8080",
                "LOCALHOST",
                "[::1]:80",
                "evil.example",
                "127.0.0.1.evil.example",
                "",
                "é",
            ],
        ),
        (
            "content-type",
            vec![
                "application/json",
                "APPLICATION/JSON",
                "application/json; charset=utf-8",
                "application/json;charset=UTF-8",
                "application/json ; charset=utf-8",
                "\tapplication/json ",
                "text/plain",
                "application/jsonx",
                "",
            ],
        ),
        (
            "content-length",
            vec![
                "LEN", "0LEN", " LEN ", "+LEN", "LEN, LEN", "LEN,LEN", "LENx", "-1",
            ],
        ),
        (
            "accept",
            vec![
                "*/*",
                "application/json",
                "Application/JSON",
                "application/*",
                "text/event-stream",
                "application/json, text/event-stream",
                "text/html",
                "application/json;q=0",
                "text/event-stream;q=0, application/json",
            ],
        ),
        (
            "origin",
            vec![
                "http://127.0.0.1",
                "http://localhost:3000",
                "http://evil.example",
                "null",
            ],
        ),
        (
            "connection",
            vec![
                "keep-alive",
                "close",
                "Close",
                "keep-alive, close",
                "keep-alive,close",
                "upgrade",
                "TE",
            ],
        ),
        ("expect", vec!["100-continue"]),
        ("x-trace", vec!["abc", "é"]),
        ("user-agent", vec!["test/1"]),
    ];
    let usual: Vec<(String, &'static str)> = vec![
        ("host".into(), "127.0.0.1"),
        ("content-type".into(), "application/json"),
        ("content-length".into(), "LEN"),
    ];
    let pool_len = pool.len();
    (
        select(vec!["POST", "POST", "POST", "POST", "POST", "GET", "PUT"]),
        select(vec!["/rpc", "/rpc", "/rpc", "/rpc", "/rpc?x=1", "/other"]),
        select(vec![
            "HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0",
        ]),
        body,
        // Which usual fields are left out (each one time in ten).
        proptest::collection::vec(proptest::bool::weighted(0.1), 3),
        // Extra fields: (pool index, value index, name case, position).
        proptest::collection::vec((0..pool_len, 0usize..16, any::<u32>(), 0usize..4), 0..4),
        any::<bool>(),
    )
        .prop_map(
            move |(method, target, version, body, omit, extra, pipelined)| {
                let mut fields: Vec<(String, String)> = usual
                    .iter()
                    .zip(&omit)
                    .filter(|(_, left_out)| !**left_out)
                    .map(|((name, value), _)| (name.clone(), (*value).to_owned()))
                    .collect();
                for (which, value, case, at) in extra {
                    let (name, values) = &pool[which];
                    let value = values[value % values.len()];
                    let at = at.min(fields.len());
                    fields.insert(at, (cased(name, case), value.to_owned()));
                }
                let len = body.len().to_string();
                for (_, value) in &mut fields {
                    *value = value.replace("LEN", &len);
                }
                RandomRequest {
                    method,
                    target,
                    version,
                    fields,
                    body,
                    pipelined,
                }
            },
        )
}

/// What a server did with one request on a fresh connection (after `before`, answered with
/// status 200 first, if given), then with a second on the same connection (written behind it,
/// or after its answer): each answer (`None`: the connection ended first), with `Date` left
/// out.
async fn outcome(
    addr: SocketAddr,
    before: Option<&str>,
    request: &RandomRequest,
    next: &RandomRequest,
) -> (Option<Answer>, Option<Answer>) {
    // A connection both servers leave waiting (they should not) shows as a failed case here.
    let wait = Duration::from_secs(5);
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    if let Some(before) = before {
        s.write_all(before.as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(wait, read_answer(&mut s, &mut rest)).await;
        assert_eq!(answer.expect("an answer in time").status, 200);
    }
    let mut bytes = request.bytes();
    if request.pipelined {
        bytes.extend_from_slice(&next.bytes());
    }
    let _ = s.write_all(&bytes).await;
    let first = tokio::time::timeout(wait, answer_or_end(&mut s, &mut rest))
        .await
        .expect("an answer or the end of the connection in time");
    let second = match first {
        Some(_) => {
            if !request.pipelined {
                let _ = s.write_all(&next.bytes()).await;
            }
            tokio::time::timeout(wait, answer_or_end(&mut s, &mut rest))
                .await
                .expect("an answer or the end of the connection in time")
        }
        None => None,
    };
    let undated = |a: Option<Answer>| {
        a.map(|mut a| {
            a.headers.retain(|(n, _)| n != "date");
            a
        })
    };
    (undated(first), undated(second))
}

/// A runtime and two servers alike but for the fast path (on, off), both with `configure`
/// applied, 1 KiB bodies and no GET event stream (an open one never ends, and the fast path
/// never takes a GET).
fn twin_servers(
    configure: impl Fn(HttpServer) -> HttpServer,
) -> (tokio::runtime::Runtime, SocketAddr, SocketAddr) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let make = |fast: bool| configure(server().get_stream(false).max_body(1024).fast_path(fast));
    let (fast, hyper) = rt.block_on(async { (start(make(true)).await, start(make(false)).await) });
    (rt, fast, hyper)
}

/// The fast path answers as hyper does: random requests, each sent to one server with the
/// fast path and one without, get the same answers (status, header fields in order, body),
/// and their connections go on or end alike, with a second random request pipelined behind
/// or sent after (so the fast path hands over to hyper after a request of its own, or never
/// takes the connection).
#[test]
fn the_fast_path_answers_every_request_as_hyper_does() {
    let (rt, fast, hyper) = twin_servers(|s| s.idle_connection_timeout(Duration::from_secs(3)));
    twins_agree(
        &rt,
        fast,
        hyper,
        None,
        512,
        (random_request(), random_request()),
    );
}

/// `cases` pairs of requests from `pairs`, each sent to both servers (the second written
/// behind the first, or after its answer; on connections that have had `before` answered
/// first): the same answers (status, header fields in order,
/// `Date` left out, body) and the same end of the connection.
fn twins_agree(
    rt: &tokio::runtime::Runtime,
    fast: SocketAddr,
    hyper: SocketAddr,
    before: Option<&str>,
    cases: u32,
    pairs: impl Strategy<Value = (RandomRequest, RandomRequest)>,
) {
    use proptest::test_runner::{Config, TestRunner};
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&pairs, |(request, next)| {
            let (a, b) = rt.block_on(async {
                tokio::join!(
                    outcome(fast, before, &request, &next),
                    outcome(hyper, before, &request, &next)
                )
            });
            prop_assert_eq!(a.0, b.0, "first answer");
            prop_assert_eq!(a.1, b.1, "the second request's answer");
            Ok(())
        })
        .unwrap();
}

/// Panics seen anywhere in this test binary since the hook was set (the server's tasks run
/// in it).
static PANICS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// A byte-level change to a request.
#[derive(Debug, Clone)]
enum Mutation {
    Set(usize, u8),
    Insert(usize, u8),
    Remove(usize),
}

/// Random requests changed at random bytes (set, inserted, removed) get the same first answer,
/// or the same closed connection, with the fast path and without it, and no task panics on
/// them; the server still answers afterwards. (A change that leaves the body shorter than its
/// `Content-Length` waits out the short time limit set here: 408 on both paths.)
#[test]
fn changed_bytes_are_answered_alike_and_never_panic() {
    use proptest::test_runner::{Config, TestRunner};
    use std::sync::atomic::Ordering;
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        PANICS.fetch_add(1, Ordering::SeqCst);
        default_hook(info);
    }));
    // Short limits, so that a head or body left unfinished by a change ends quickly.
    let (rt, fast, hyper) = twin_servers(|s| {
        s.timeout(Duration::from_millis(300))
            .idle_connection_timeout(Duration::from_millis(600))
    });
    let mutation = prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Set(at, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        any::<usize>().prop_map(Mutation::Remove),
    ];
    let case = (random_request(), proptest::collection::vec(mutation, 1..4));
    let mut runner = TestRunner::new(Config {
        cases: 384,
        failure_persistence: None,
        ..Config::default()
    });
    runner
        .run(&case, |(request, mutations)| {
            let mut bytes = request.bytes();
            for m in &mutations {
                let len = bytes.len().max(1);
                match *m {
                    Mutation::Set(at, b) => {
                        if let Some(x) = bytes.get_mut(at % len) {
                            *x = b;
                        }
                    }
                    Mutation::Insert(at, b) => bytes.insert((at % len).min(bytes.len()), b),
                    Mutation::Remove(at) => {
                        if !bytes.is_empty() {
                            bytes.remove(at % len);
                        }
                    }
                }
            }
            let first = |addr: SocketAddr, bytes: Vec<u8>| async move {
                let mut s = connect(addr).await;
                let _ = s.write_all(&bytes).await;
                let mut rest = Vec::new();
                // Within the limits above, an answer comes or the connection ends.
                let answer =
                    tokio::time::timeout(Duration::from_secs(5), answer_or_end(&mut s, &mut rest))
                        .await
                        .expect("an answer or the end of the connection in time");
                answer.map(|mut a| {
                    a.headers.retain(|(n, _)| n != "date");
                    a
                })
            };
            let (a, b) = rt.block_on(async {
                tokio::join!(first(fast, bytes.clone()), first(hyper, bytes.clone()))
            });
            prop_assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&bytes));
            prop_assert_eq!(PANICS.load(Ordering::SeqCst), 0);
            Ok(())
        })
        .unwrap();
    rt.block_on(async {
        let mut s = connect(fast).await;
        s.write_all(post(W1, "").as_bytes()).await.unwrap();
        assert_eq!(
            read_answer(&mut s, &mut Vec::new()).await.json()["result"],
            19
        );
    });
}

/// Bearer tokens `alice` and `bob` (any other refused), counting how often it is asked; its
/// identities expire `expires_in` after they are made. With `memo`, it says its answer
/// depends on `Authorization` alone (a connection may keep its caller).
#[derive(Clone)]
struct Names {
    asked: Arc<std::sync::atomic::AtomicUsize>,
    expires_in: Option<Duration>,
    memo: bool,
}

impl Names {
    fn new(memo: bool) -> Self {
        Names {
            asked: Arc::default(),
            expires_in: None,
            memo,
        }
    }

    fn asked(&self) -> usize {
        self.asked.load(Ordering::SeqCst)
    }
}

impl Authenticator for Names {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        self.asked.fetch_add(1, Ordering::SeqCst);
        let found = match credentials.bearer() {
            Ok(Some(name @ ("alice" | "bob"))) => {
                let id = Identity::new(name).with_roles(["user"]);
                Ok(match self.expires_in {
                    Some(d) => id.with_expiry(std::time::SystemTime::now() + d),
                    None => id,
                })
            }
            Ok(Some(_)) => Err(AuthError::Invalid("unknown name")),
            Ok(None) => Err(AuthError::Missing),
            Err(e) => Err(e),
        };
        Box::pin(std::future::ready(found))
    }

    fn credential_header(&self) -> Option<&str> {
        self.memo.then_some("authorization")
    }
}

fn auth_server(names: Names) -> HttpServer {
    HttpServer::new(
        Builder::new()
            .router(router())
            .map_service(|s| s.authenticator(names)),
    )
    .path("/rpc")
}

/// A runtime and two authenticating servers alike but for the fast path (on, off), as
/// [`twin_servers`] makes them, with `Names::new(memo)`.
fn auth_twins(memo: bool) -> (tokio::runtime::Runtime, SocketAddr, SocketAddr) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let make = |fast: bool| {
        auth_server(Names::new(memo))
            .get_stream(false)
            .max_body(1024)
            .idle_connection_timeout(Duration::from_secs(3))
            .fast_path(fast)
    };
    let (fast, hyper) = rt.block_on(async { (start(make(true)).await, start(make(false)).await) });
    (rt, fast, hyper)
}

const WHOAMI: &str = r#"{"jsonrpc":"2.0","method":"whoami","id":3}"#;

/// The answers with authentication equal hyper's, one request after another on one
/// connection (so the fast path's kept caller is reused, replaced and refused): no token,
/// an unknown one, a malformed header, a valid one twice (each request's own headers seen
/// by the handler), another valid one, none again.
#[tokio::test]
async fn authentication_answers_equal_hyper_s() {
    let fast = start(auth_server(Names::new(true))).await;
    let hyper = start(auth_server(Names::new(true)).fast_path(false)).await;
    let steps: [(&str, &str, u16); 8] = [
        ("", W1, 401),
        ("Authorization: Bearer mallory\r\n", W1, 401),
        ("Authorization: Basic YWxpY2U6eA==\r\n", W1, 400),
        ("Authorization: Bearer\r\n", W1, 400),
        (
            "Authorization: Bearer alice\r\nX-Trace: one\r\n",
            WHOAMI,
            200,
        ),
        (
            "X-Trace: two\r\nauthorization: Bearer alice\r\n",
            WHOAMI,
            200,
        ),
        ("Authorization: Bearer bob\r\n", WHOAMI, 200),
        ("", WHOAMI, 401),
    ];
    let (mut f, mut h) = (connect(fast).await, connect(hyper).await);
    let (mut frest, mut hrest) = (Vec::new(), Vec::new());
    let mut seen = Vec::new();
    for (extra, body, status) in steps {
        let request = post(body, extra);
        f.write_all(request.as_bytes()).await.unwrap();
        h.write_all(request.as_bytes()).await.unwrap();
        let mut a = read_answer(&mut f, &mut frest).await;
        let mut b = read_answer(&mut h, &mut hrest).await;
        a.headers.retain(|(n, _)| n != "date");
        b.headers.retain(|(n, _)| n != "date");
        assert_eq!(a, b, "{extra:?}");
        assert_eq!(a.status, status, "{extra:?}");
        seen.push(a);
    }
    assert_eq!(seen[0].header("www-authenticate"), Some("Bearer"));
    assert_eq!(
        seen[1].header("www-authenticate"),
        Some("Bearer error=\"invalid_token\"")
    );
    assert_eq!(
        seen[2].header("www-authenticate"),
        Some("Bearer error=\"invalid_request\"")
    );
    let len = WHOAMI.len().to_string();
    assert_eq!(
        seen[4].json()["result"],
        json!({"subject": "alice", "trace": "one", "length": len})
    );
    assert_eq!(
        seen[5].json()["result"],
        json!({"subject": "alice", "trace": "two", "length": len})
    );
    assert_eq!(
        seen[6].json()["result"],
        json!({"subject": "bob", "trace": null, "length": len})
    );
}

/// The subject a `whoami` call with this bearer token is answered as, on `s`.
async fn whoami_as(s: &mut TcpStream, rest: &mut Vec<u8>, token: &str) -> String {
    let request = post(WHOAMI, &format!("Authorization: Bearer {token}\r\n"));
    s.write_all(request.as_bytes()).await.unwrap();
    let a = read_answer(s, rest).await;
    assert_eq!(a.status, 200);
    a.json()["result"]["subject"].as_str().unwrap().to_owned()
}

/// A keep-alive connection asks the authenticator once for a credential it keeps presenting,
/// again for another one, and again once the identity has expired; an authenticator that
/// does not name its one credential header is asked for every request.
#[tokio::test]
async fn a_connection_keeps_its_caller_until_it_expires() {
    let names = Names {
        expires_in: Some(Duration::from_millis(400)),
        ..Names::new(true)
    };
    let addr = start(auth_server(names.clone())).await;
    let mut s = connect(addr).await;
    let mut rest = Vec::new();
    for _ in 0..3 {
        assert_eq!(whoami_as(&mut s, &mut rest, "alice").await, "alice");
    }
    assert_eq!(names.asked(), 1, "kept for the connection");
    assert_eq!(whoami_as(&mut s, &mut rest, "bob").await, "bob");
    assert_eq!(whoami_as(&mut s, &mut rest, "bob").await, "bob");
    assert_eq!(whoami_as(&mut s, &mut rest, "alice").await, "alice");
    assert_eq!(
        names.asked(),
        3,
        "the last credential is kept, not every one"
    );
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(whoami_as(&mut s, &mut rest, "alice").await, "alice");
    assert_eq!(names.asked(), 4, "asked again once expired");

    let every = Names::new(false);
    let addr = start(auth_server(every.clone())).await;
    let mut s = connect(addr).await;
    let request = post(WHOAMI, "Authorization: Bearer alice\r\n");
    for _ in 0..3 {
        s.write_all(request.as_bytes()).await.unwrap();
        assert_eq!(read_answer(&mut s, &mut rest).await.status, 200);
    }
    assert_eq!(every.asked(), 3);
}

/// Requests repeated on one connection, so that the fast path recognises a head it let in
/// (the same bytes) and takes it without parsing or asking again: random sequences from a
/// few requests (two callers, a refused token, none, a malformed header, a body of another
/// length) get hyper's answers at every step, with identities that never expire and with
/// ones that expire at once; a caller kept for its head is asked once per credential change.
#[test]
fn repeated_heads_are_answered_as_hyper_does() {
    use proptest::test_runner::{Config, TestRunner};
    let whoami_10 = r#"{"jsonrpc":"2.0","method":"whoami","id":10}"#;
    let pool = [
        post(W1, "Authorization: Bearer alice\r\n"),
        post(WHOAMI, "Authorization: Bearer alice\r\nX-Trace: one\r\n"),
        post(whoami_10, "Authorization: Bearer alice\r\nX-Trace: one\r\n"),
        post(W1, "Authorization: Bearer mallory\r\n"),
        post(W1, ""),
        post(WHOAMI, "Authorization: Bearer bob\r\n"),
        post(W1, "Authorization: Basic YWxpY2U6eA==\r\n"),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for expires_in in [None, Some(Duration::ZERO)] {
        let names = Names {
            expires_in,
            ..Names::new(true)
        };
        let (fast, hyper) = rt.block_on(async {
            (
                start(auth_server(names.clone())).await,
                start(auth_server(names.clone()).fast_path(false)).await,
            )
        });
        let mut runner = TestRunner::new(Config {
            cases: 48,
            failure_persistence: None,
            ..Config::default()
        });
        let steps = proptest::collection::vec(0..pool.len(), 2..12);
        runner
            .run(&steps, |steps| {
                rt.block_on(async {
                    let (mut f, mut h) = (connect(fast).await, connect(hyper).await);
                    let (mut frest, mut hrest) = (Vec::new(), Vec::new());
                    for &step in &steps {
                        let request = pool[step].as_bytes();
                        f.write_all(request).await.unwrap();
                        h.write_all(request).await.unwrap();
                        let mut a = read_answer(&mut f, &mut frest).await;
                        let mut b = read_answer(&mut h, &mut hrest).await;
                        a.headers.retain(|(n, _)| n != "date");
                        b.headers.retain(|(n, _)| n != "date");
                        prop_assert_eq!(a, b, "step {} of {:?}", step, steps);
                    }
                    Ok(())
                })
            })
            .unwrap();
    }
    // Asked once for a head repeated, again when another credential came between.
    let names = Names::new(true);
    let addr = rt.block_on(start(auth_server(names.clone())));
    rt.block_on(async {
        let mut s = connect(addr).await;
        let mut rest = Vec::new();
        for step in [0, 0, 0, 3, 0, 0, 1, 1, 2, 2] {
            s.write_all(pool[step].as_bytes()).await.unwrap();
            let status = read_answer(&mut s, &mut rest).await.status;
            assert_eq!(status, if step == 3 { 401 } else { 200 }, "{step}");
        }
    });
    // alice, mallory (refused: alice is still kept), then alice's heads: her token's line
    // is found in each other head, so she is not asked about again.
    assert_eq!(names.asked(), 2);
}

/// Random requests, each with an `Authorization` field or none (valid, unknown, malformed,
/// repeated) and a second request behind it on the same connection, get the same answers
/// with the fast path and without it, with an authenticator that lets a connection keep its
/// caller and one that does not.
#[test]
fn the_fast_path_authenticates_every_request_as_hyper_does() {
    use proptest::sample::select;
    let authorization = || {
        (
            select(vec![
                "",
                "Bearer alice",
                "Bearer bob",
                "bearer alice",
                "Bearer  alice",
                " Bearer alice ",
                "Bearer mallory",
                "Basic YWxpY2U6eA==",
                "Bearer",
                "Bearer al ice",
                "Bearer tök",
                "NONE",
            ]),
            any::<u32>(),
            0usize..4,
            proptest::bool::weighted(0.1),
        )
    };
    let with_auth =
        |(mut r, (value, case, at, twice)): (RandomRequest, (&'static str, u32, usize, bool))| {
            if value != "NONE" {
                let at = at.min(r.fields.len());
                let name = cased("authorization", case);
                r.fields.insert(at, (name.clone(), value.to_owned()));
                if twice {
                    r.fields.push((name, "Bearer bob".to_owned()));
                }
            }
            r
        };
    for memo in [true, false] {
        let (rt, fast, hyper) = auth_twins(memo);
        let request = (random_request(), authorization()).prop_map(with_auth);
        let next = (random_request(), authorization()).prop_map(with_auth);
        twins_agree(&rt, fast, hyper, None, 256, (request, next));
    }
}

/// A connection that keeps its caller (the fast path's, for `Bearer alice`) meets, on its
/// next request, random requests whose `Authorization` field is the kept value (in any case,
/// with any spaces, anywhere among the fields, perhaps twice) or nearly it: a byte of it
/// changed, or a control byte, NUL, CR, a bare LF, an obsolete line fold, DEL or a non-ASCII
/// byte put inside it, spaces after it. The fast path, which parses a head without the kept
/// value's line when it finds it, answers each as hyper does (and the handler sees the same
/// header fields in the same order), and the request after it too.
#[test]
fn heads_near_the_kept_credential_are_answered_as_hyper_does() {
    use proptest::sample::select;
    let kept = "Bearer alice";
    let authorization = (
        // The kept value as it is (most often), or changed at `at`: a byte set or put in.
        proptest::option::weighted(
            0.6,
            (
                select(vec![
                    "\0", "\u{1}", "\t", " ", "\r", "\n", "\r\n ", "\n\t", "\u{7f}", "é", "x", "A",
                ]),
                0usize..=12,
                any::<bool>(),
            ),
        ),
        select(vec!["", " ", "\t", "  \t"]),
        any::<u32>(),
        0usize..5,
        proptest::bool::weighted(0.1),
    )
        .prop_map(move |(change, after, case, at, twice)| {
            let mut value = kept.to_owned();
            if let Some((byte, place, set)) = change {
                let place = place.min(value.len());
                if set && place < value.len() {
                    value.replace_range(place..place + 1, byte);
                } else {
                    value.insert_str(place, byte);
                }
            }
            value.push_str(after);
            (cased("authorization", case), value, at, twice)
        });
    let headers = r#"{"jsonrpc":"2.0","method":"headers","id":4}"#;
    let request = (random_request(), authorization, any::<bool>()).prop_map(
        move |(mut r, (name, value, at, twice), fields)| {
            let at = at.min(r.fields.len());
            r.fields.insert(at, (name.clone(), value));
            if twice {
                r.fields.push((name, kept.to_owned()));
            }
            if fields {
                // The fields the handler sees, for this request's own body.
                r.body = headers.to_owned();
                for (n, v) in &mut r.fields {
                    if n.eq_ignore_ascii_case("content-length") {
                        *v = headers.len().to_string();
                    }
                }
            }
            r
        },
    );
    let next = random_request().prop_map(move |mut r| {
        r.fields.push(("Authorization".to_owned(), kept.to_owned()));
        r
    });
    let (rt, fast, hyper) = auth_twins(true);
    let first = post(WHOAMI, &format!("Authorization: {kept}\r\n"));
    twins_agree(&rt, fast, hyper, Some(&first), 384, (request, next));
}
