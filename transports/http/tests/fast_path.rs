//! The HTTP/1.1 fast path of `rpcwire_http::serve`, on raw sockets: its answers equal hyper's,
//! pipelined requests, heads and bodies split across reads, each limit at its edge, the hand-over
//! to hyper in the middle of a connection, `Connection: close`, HTTP/1.0, and the time limits
//! on a head and a body that come too slowly.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use rpcwire_http::HttpServer;
use rpcwire_tokio::{Builder, Context, Router, RpcError};
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

#[derive(Debug)]
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
    tokio::time::timeout(WAIT, async {
        let head_end = loop {
            if let Some(i) = rest.windows(4).position(|w| w == b"\r\n\r\n") {
                break i;
            }
            fill(s, rest).await;
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
                fill(s, rest).await;
            }
            body.extend(rest.drain(..len));
        } else if find("transfer-encoding").as_deref() == Some("chunked") {
            loop {
                let line_end = loop {
                    if let Some(i) = rest.windows(2).position(|w| w == b"\r\n") {
                        break i;
                    }
                    fill(s, rest).await;
                };
                let size = usize::from_str_radix(
                    std::str::from_utf8(&rest[..line_end]).unwrap().trim(),
                    16,
                )
                .unwrap();
                rest.drain(..line_end + 2);
                while rest.len() < size + 2 {
                    fill(s, rest).await;
                }
                body.extend(rest.drain(..size));
                rest.drain(..2);
                if size == 0 {
                    break;
                }
            }
        }
        Answer {
            status,
            headers,
            body: String::from_utf8(body).unwrap(),
        }
    })
    .await
    .expect("an answer in time")
}

async fn fill(s: &mut TcpStream, rest: &mut Vec<u8>) {
    let mut chunk = [0u8; 4096];
    let n = s.read(&mut chunk).await.unwrap();
    assert!(n > 0, "closed before a whole answer");
    rest.extend_from_slice(&chunk[..n]);
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
