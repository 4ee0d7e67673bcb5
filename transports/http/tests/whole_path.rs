//! `profile::serve_profile`'s HTTP/1.1 path (requests read whole, answered without a hyper
//! connection) against `profile::serve_hyper_connection` serving the same service, on raw sockets: the
//! same bytes on the wire (the `date` value aside) for JSON answers, refusals with several
//! header values, a 204, `Connection: close` either way, event streams (chunked), pipelined
//! requests behind a stream, bodies at the limit's edge and past it, a slow body; a client
//! that leaves in the middle of a stream does not stop the work, which is parked and resumed
//! with `Last-Event-ID` with no event lost or repeated; a client that leaves during its
//! request drops the answer, as hyper's path does.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Request, StatusCode};
use rpcwire_http::profile::{
    after_body, event_stream, json, parse_event_id, read_post_body, refuse, serve_hyper_connection,
    serve_profile, status, Body, Endpoint, HandlesIncoming, HandlesWhole, ParkedStreams,
    StreamRelay,
};
use rpcwire_http::{Protocol, ResponseFuture};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const WAIT: Duration = Duration::from_secs(10);
const MAX_BODY: usize = 2048;
/// Events of `/stream`.
const EVENTS: u64 = 6;

#[derive(Clone)]
struct Service {
    endpoint: Endpoint,
    parked: Arc<ParkedStreams>,
    next_stream: Arc<AtomicU64>,
    /// Events the `/stream` work has produced (all streams).
    produced: Arc<AtomicUsize>,
    /// Set when a `/slow` answer was dropped before it finished.
    dropped: Arc<AtomicBool>,
}

impl Service {
    fn new() -> Self {
        let mut endpoint = Endpoint::new(Duration::from_millis(300), 64);
        endpoint.set_max_body(MAX_BODY);
        Service {
            endpoint,
            parked: Arc::new(ParkedStreams::new(8)),
            next_stream: Arc::new(AtomicU64::new(1)),
            produced: Arc::new(AtomicUsize::new(0)),
            dropped: Arc::new(AtomicBool::new(false)),
        }
    }

    fn handle<B>(&self, req: Request<B>) -> ResponseFuture
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let me = self.clone();
        Box::pin(async move { me.answer(req).await })
    }

    async fn answer<B>(self, req: Request<B>) -> http::Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (max, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        if let Some(why) = self.endpoint.refusal(&req) {
            return after_body(req, max, timeout, refuse(StatusCode::FORBIDDEN, why)).await;
        }
        let path = req.uri().path().to_owned();
        if req.method() == http::Method::GET {
            let r = match path.as_str() {
                "/card" => json(Bytes::from_static(br#"{"name":"card"}"#)),
                "/none" => status(StatusCode::NO_CONTENT),
                _ => {
                    let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "POST here\n");
                    let h = r.headers_mut();
                    h.insert(header::ALLOW, HeaderValue::from_static("POST"));
                    h.append("x-two", HeaderValue::from_static("a"));
                    h.append("x-two", HeaderValue::from_static("b"));
                    r
                }
            };
            return after_body(req, max, timeout, r).await;
        }
        let last_event_id = req
            .headers()
            .get("last-event-id")
            .and_then(|v| v.to_str().ok())
            .and_then(parse_event_id);
        let (parts, body) = req.into_parts();
        let (_, body) = match read_post_body(parts, body, true, max, timeout).await {
            Ok(read) => read,
            Err(refusal) => return *refusal,
        };
        match path.as_str() {
            "/echo" => json(body),
            "/bye" => {
                let mut r = json(body);
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                r
            }
            "/slow" => {
                struct Flag(Arc<AtomicBool>, bool);
                impl Drop for Flag {
                    fn drop(&mut self) {
                        if !self.1 {
                            self.0.store(true, Ordering::SeqCst);
                        }
                    }
                }
                let mut flag = Flag(Arc::clone(&self.dropped), false);
                tokio::time::sleep(Duration::from_secs(3)).await;
                flag.1 = true;
                json(body)
            }
            "/stream" => match last_event_id {
                Some((n, seq)) => {
                    let Some(stream) = self.parked.get(&n) else {
                        return refuse(StatusCode::NOT_FOUND, "no such stream\n");
                    };
                    let (tx, rx) = tokio::sync::mpsc::channel(4);
                    let parked = Arc::clone(&self.parked);
                    tokio::spawn(async move {
                        if stream.resume(seq, tx).await {
                            parked.forget(&n);
                        }
                    });
                    event_stream(rx)
                }
                None => self.stream(body),
            },
            _ => refuse(StatusCode::NOT_FOUND, "nothing here\n"),
        }
    }

    /// `EVENTS` events, `gap` ms apart (the body names the gap), kept for resumption.
    fn stream(&self, body: Bytes) -> http::Response<Body> {
        let gap: u64 = std::str::from_utf8(&body)
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or(0);
        let (tx, rx) = tokio::sync::mpsc::channel(4);
        let me = self.clone();
        tokio::spawn(async move {
            let n = me.next_stream.fetch_add(1, Ordering::SeqCst);
            let limits = me.endpoint.streams();
            let mut relay = StreamRelay::start(n, n, &me.parked, tx, limits).await;
            for i in 1..=EVENTS {
                if gap > 0 {
                    let wait = tokio::time::sleep(Duration::from_millis(gap));
                    if relay.unless_gone(wait).await.is_none() && !relay.park() {
                        return;
                    }
                }
                if !relay.send(format!(r#"{{"event":{i}}}"#).as_bytes()).await {
                    return;
                }
                me.produced.fetch_add(1, Ordering::SeqCst);
            }
        });
        event_stream(rx)
    }
}

impl HandlesIncoming for Service {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }
}

impl HandlesWhole for Service {
    fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture {
        self.handle(req)
    }
}

/// The same service served both ways: (whole path, hyper).
async fn twins() -> ((SocketAddr, Service), (SocketAddr, Service)) {
    let start = |whole: bool| async move {
        let service = Service::new();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let s = service.clone();
        if whole {
            tokio::spawn(serve_profile(listener, s));
        } else {
            // Every connection through hyper alone.
            tokio::spawn(async move {
                while let Ok((tcp, _)) = listener.accept().await {
                    let (s, idle) = (s.clone(), Duration::from_secs(30));
                    tokio::spawn(serve_hyper_connection(tcp, s, Protocol::Http1, idle));
                }
            });
        }
        (addr, service)
    };
    (start(true).await, start(false).await)
}

fn post(path: &str, body: &str, extra: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{extra}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn get(path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{extra}\r\n")
}

/// Reads more of the connection into `buf`; false at its end.
async fn more(s: &mut TcpStream, buf: &mut Vec<u8>) -> bool {
    let mut chunk = [0u8; 4096];
    let n = tokio::time::timeout(WAIT, s.read(&mut chunk))
        .await
        .expect("bytes in time")
        .unwrap_or(0);
    buf.extend_from_slice(&chunk[..n]);
    n > 0
}

/// One whole response as it came on the wire (a chunked body to its last chunk), its `date`
/// value blanked; `None` when the connection ends first.
async fn response(s: &mut TcpStream, buf: &mut Vec<u8>) -> Option<String> {
    let end = loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break end + 4;
        }
        if !more(s, buf).await {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..end]).into_owned();
    let lower = head.to_ascii_lowercase();
    let mut at = end;
    if lower.contains("transfer-encoding: chunked") {
        loop {
            let line = loop {
                if let Some(p) = buf[at..].windows(2).position(|w| w == b"\r\n") {
                    break p;
                }
                if !more(s, buf).await {
                    return None;
                }
            };
            let size = usize::from_str_radix(std::str::from_utf8(&buf[at..at + line]).unwrap(), 16)
                .unwrap();
            let next = at + line + 2 + size + 2;
            while buf.len() < next {
                if !more(s, buf).await {
                    return None;
                }
            }
            at = next;
            if size == 0 {
                break;
            }
        }
    } else {
        let len: usize = lower
            .lines()
            .find_map(|l| l.strip_prefix("content-length: "))
            .map_or(0, |v| v.trim().parse().unwrap());
        while buf.len() < end + len {
            if !more(s, buf).await {
                return None;
            }
        }
        at = end + len;
    }
    let whole = String::from_utf8_lossy(&buf[..at]).into_owned();
    buf.drain(..at);
    let dated = whole
        .split("\r\n")
        .map(|l| {
            if l.starts_with("date: ") {
                assert!(l.ends_with(" GMT"), "{l}");
                "date: -"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n");
    Some(dated)
}

/// Sends `requests` in one write on one connection and reads `n` responses, then whether the
/// server closed the connection (within a moment).
async fn exchange(addr: SocketAddr, requests: &str, n: usize) -> (Vec<String>, bool) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(requests.as_bytes()).await.unwrap();
    let mut buf = Vec::new();
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(response(&mut s, &mut buf).await.expect("a response"));
    }
    let mut rest = [0u8; 16];
    let closed = matches!(
        tokio::time::timeout(Duration::from_millis(300), s.read(&mut rest)).await,
        Ok(Ok(0) | Err(_))
    );
    (out, closed)
}

/// The same exchange with both servers: equal answers and the same close.
async fn alike(requests: &str, n: usize) -> Vec<String> {
    let ((whole, _), (hyper, _)) = twins().await;
    let a = exchange(whole, requests, n).await;
    let b = exchange(hyper, requests, n).await;
    assert_eq!(a, b, "whole path, then hyper, for {requests:?}");
    a.0
}

#[tokio::test]
async fn answers_are_the_bytes_hyper_writes() {
    let answers = alike(&post("/echo", r#"{"a":1}"#, ""), 1).await;
    assert!(answers[0].starts_with("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 7\r\ndate: -\r\n\r\n"), "{answers:?}");
    // Several values of a field, a reason phrase, an empty body, a refusal of the head.
    let answers = alike(&get("/other", ""), 1).await;
    assert!(
        answers[0].contains("x-two: a\r\nx-two: b\r\n"),
        "{answers:?}"
    );
    alike(&get("/card", ""), 1).await;
    let answers = alike(&get("/none", ""), 1).await;
    assert!(
        answers[0].starts_with("HTTP/1.1 204 No Content\r\n"),
        "{answers:?}"
    );
    alike(&post("/echo", "{}", "Content-Type: text/plain\r\n"), 1).await;
    alike(&post("/echo", "{}", "Origin: http://evil.example\r\n"), 1).await;
    alike(&post("/nowhere", "{}", ""), 1).await;
    // Requests this path does not take are hyper's on both.
    alike(
        "POST /echo HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
        1,
    )
    .await;
    alike("GET /card HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", 1).await;
}

#[tokio::test]
async fn connection_close_either_way() {
    let (answers, closed) = {
        let ((whole, _), (hyper, _)) = twins().await;
        let request = post("/echo", "{}", "Connection: close\r\n");
        let a = exchange(whole, &request, 1).await;
        assert_eq!(a, exchange(hyper, &request, 1).await);
        a
    };
    assert!(
        closed && answers[0].contains("connection: close\r\n"),
        "{answers:?}"
    );
    // The response's own `connection: close` ends the connection too.
    let ((whole, _), (hyper, _)) = twins().await;
    let two = format!("{}{}", post("/bye", "{}", ""), post("/echo", "{}", ""));
    let a = exchange(whole, &two, 1).await;
    assert_eq!(a, exchange(hyper, &two, 1).await);
    assert!(a.1, "closed after the answer that said so");
}

#[tokio::test]
async fn event_streams_are_chunked_as_hyper_chunks_them_and_pipelined_requests_wait() {
    let requests = format!(
        "{}{}",
        post("/stream", "0", ""),
        post("/echo", r#"{"after":"stream"}"#, "")
    );
    let answers = alike(&requests, 2).await;
    let stream = &answers[0];
    assert!(
        stream.starts_with("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\nx-accel-buffering: no\r\ntransfer-encoding: chunked\r\ndate: -\r\n\r\n"),
        "{stream}"
    );
    for i in 1..=EVENTS {
        assert!(
            stream.contains(&format!(r#"data: {{"event":{i}}}"#)),
            "{stream}"
        );
    }
    assert!(stream.ends_with("\r\n0\r\n\r\n"), "{stream}");
    assert!(answers[1].ends_with(r#"{"after":"stream"}"#), "{answers:?}");
    // A stream to a client that asked to close: chunked, then closed.
    let ((whole, _), (hyper, _)) = twins().await;
    let request = post("/stream", "0", "Connection: close\r\n");
    let a = exchange(whole, &request, 1).await;
    assert_eq!(a, exchange(hyper, &request, 1).await);
    assert!(a.1 && a.0[0].contains("connection: close\r\n"), "{a:?}");
}

/// The data lines of the events in `text`, in order.
fn events(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| l.starts_with("data: {"))
        .map(str::to_owned)
        .collect()
}

/// A client that reads two events and leaves, then comes back with `Last-Event-ID`.
async fn leave_and_resume(addr: SocketAddr, service: &Service) -> Vec<String> {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(post("/stream", "40", "").as_bytes())
        .await
        .unwrap();
    let mut seen = Vec::new();
    while events(&String::from_utf8_lossy(&seen)).len() < 2 {
        assert!(more(&mut s, &mut seen).await, "the stream ended early");
    }
    let text = String::from_utf8_lossy(&seen).into_owned();
    let last_id = text
        .lines()
        .filter_map(|l| l.strip_prefix("id: "))
        .rfind(|id| !id.ends_with("-0"))
        .unwrap()
        .to_owned();
    let mut got = events(&text);
    assert_eq!(got.len(), 2, "{text}");
    drop(s);
    // The work goes on without its client: every event is produced, the stream parked.
    tokio::time::timeout(WAIT, async {
        while service.produced.load(Ordering::SeqCst) < EVENTS as usize {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the work finished without its client");
    assert_eq!(service.parked.len(), 1, "parked for resumption");
    let (answers, _) = exchange(
        addr,
        &post("/stream", "", &format!("Last-Event-ID: {last_id}\r\n")),
        1,
    )
    .await;
    got.extend(events(&answers[0]));
    got
}

#[tokio::test]
async fn a_client_that_leaves_mid_stream_does_not_stop_the_work_and_resumes() {
    let ((whole, whole_service), (hyper, hyper_service)) = twins().await;
    let a = leave_and_resume(whole, &whole_service).await;
    let b = leave_and_resume(hyper, &hyper_service).await;
    let all: Vec<String> = (1..=EVENTS)
        .map(|i| format!(r#"data: {{"event":{i}}}"#))
        .collect();
    assert_eq!(a, all, "no event lost or repeated on the whole path");
    assert_eq!(b, all, "nor on hyper's");
    assert_eq!(
        whole_service.parked.len(),
        0,
        "forgotten once resumed whole"
    );
}

#[tokio::test]
async fn a_client_that_leaves_during_its_request_drops_the_answer() {
    let ((whole, whole_service), (hyper, hyper_service)) = twins().await;
    for (addr, service) in [(whole, &whole_service), (hyper, &hyper_service)] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(post("/slow", "{}", "").as_bytes())
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(s);
        tokio::time::timeout(WAIT, async {
            while !service.dropped.load(Ordering::SeqCst) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the answer was dropped when its client left");
    }
}

#[tokio::test]
async fn bodies_at_the_limit_and_past_it() {
    let at = format!("\"{}\"", "x".repeat(MAX_BODY - 2));
    let answers = alike(&post("/echo", &at, ""), 1).await;
    assert!(answers[0].starts_with("HTTP/1.1 200 OK"), "{answers:?}");
    // One byte more: hyper's path, where the service refuses it while reading it.
    let past = format!("\"{}\"", "x".repeat(MAX_BODY - 1));
    let answers = alike(&post("/echo", &past, ""), 1).await;
    assert!(answers[0].starts_with("HTTP/1.1 413 "), "{answers:?}");
    // A head past the whole path's limit goes to hyper too, and is answered.
    let long = format!("X-Pad: {}\r\n", "p".repeat(9 << 10));
    let answers = alike(&post("/echo", "{}", &long), 1).await;
    assert!(answers[0].starts_with("HTTP/1.1 200 OK"), "{answers:?}");
}

#[tokio::test]
async fn a_slow_body_gets_408_and_the_connection_closes() {
    let ((whole, _), (hyper, _)) = twins().await;
    let mut results = Vec::new();
    for addr in [whole, hyper] {
        let mut s = TcpStream::connect(addr).await.unwrap();
        let request = post("/echo", r#"{"slow":true}"#, "");
        s.write_all(&request.as_bytes()[..request.len() - 4])
            .await
            .unwrap();
        let mut buf = Vec::new();
        let answer = response(&mut s, &mut buf).await.expect("an answer");
        let mut rest = [0u8; 8];
        let closed = matches!(
            tokio::time::timeout(WAIT, s.read(&mut rest)).await,
            Ok(Ok(0) | Err(_))
        );
        results.push((answer, closed));
    }
    assert_eq!(results[0], results[1]);
    assert!(results[0].0.starts_with("HTTP/1.1 408 "), "{results:?}");
    assert!(results[0].1, "closed");
}
