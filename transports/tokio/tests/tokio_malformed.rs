//! Malformed input over TCP never stops later valid requests from being answered.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bounded, router};
use rpcwire_tokio::{Builder, Framing};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};

struct Peer {
    lines: tokio::io::Lines<BufReader<OwnedReadHalf>>,
    w: OwnedWriteHalf,
}

impl Peer {
    async fn connect(addr: std::net::SocketAddr) -> Peer {
        let s = TcpStream::connect(addr).await.unwrap();
        s.set_nodelay(true).unwrap();
        let (r, w) = s.into_split();
        Peer {
            lines: BufReader::new(r).lines(),
            w,
        }
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(20), self.lines.next_line())
            .await
            .expect("an answer in time")
            .unwrap()
            .expect("connection open");
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a valid `add` and expects its answer next.
    async fn check_alive(&mut self, id: u64) {
        let req =
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[{id},1],\"id\":{id}}}\n");
        self.w.write_all(req.as_bytes()).await.unwrap();
        let answer = self.next().await;
        assert_eq!(answer["id"], id, "{answer}");
        assert_eq!(answer["result"], id + 1, "{answer}");
    }

    /// Expects no answer within `quiet`.
    async fn expect_silence(&mut self, quiet: Duration) {
        if let Ok(line) = tokio::time::timeout(quiet, self.lines.next_line()).await {
            panic!("expected no answer yet, got {line:?}");
        }
    }

    /// Sends `bytes` and expects one error answer with `code` and id null.
    async fn expect_error(&mut self, bytes: &[u8], code: i64) -> Value {
        self.w.write_all(bytes).await.unwrap();
        let answer = self.next().await;
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["id"], Value::Null, "{answer}");
        answer
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_input_never_stops_later_requests() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(Builder::new().router(router()).serve_tcp(listener));
        let mut p = Peer::connect(addr).await;
        p.check_alive(1).await;

        // Garbage.
        p.expect_error(b"@@@ this is not json @@@\n", -32700).await;
        p.check_alive(2).await;
        // Truncated JSON.
        p.expect_error(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,\n",
            -32700,
        )
        .await;
        p.check_alive(3).await;
        // Invalid UTF-8 inside a string.
        p.expect_error(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"\xff\xfe\",\"id\":9}\n",
            -32700,
        )
        .await;
        p.check_alive(4).await;
        // An 8 MiB line (the default maximum frame is 4 MiB): skipped, and answered once, when
        // its newline arrives (not when the limit is crossed).
        let mut big = b"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"".to_vec();
        big.resize(8 << 20, b'a');
        p.w.write_all(&big).await.unwrap();
        p.expect_silence(Duration::from_millis(300)).await;
        let answer = p.expect_error(b"\"],\"id\":10}\r\n", -32600).await;
        assert_eq!(answer["error"]["data"], "frame too large");
        p.check_alive(5).await;
        // 10 000-deep nesting.
        let mut deep = Vec::new();
        deep.extend(std::iter::repeat_n(b'[', 10_000));
        deep.extend(std::iter::repeat_n(b']', 10_000));
        deep.push(b'\n');
        p.expect_error(&deep, -32700).await;
        p.check_alive(6).await;
        // Byte-by-byte delivery.
        let req = b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[20,22],\"id\":\"slow\"}\n";
        for b in req {
            p.w.write_all(&[*b]).await.unwrap();
            p.w.flush().await.unwrap();
            tokio::task::yield_now().await;
        }
        let answer = p.next().await;
        assert_eq!(
            (answer["id"].as_str(), answer["result"].as_i64()),
            (Some("slow"), Some(42))
        );
        // Many messages in one write, valid and not.
        let mut many = Vec::new();
        for i in 0..500u64 {
            many.extend_from_slice(
                format!(
                    "{{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[{i},0],\"id\":{i}}}\n"
                )
                .as_bytes(),
            );
            if i % 100 == 0 {
                many.extend_from_slice(b"{oops}\r\n\r\n");
            }
        }
        p.w.write_all(&many).await.unwrap();
        let mut results = vec![false; 500];
        let mut parse_errors = 0;
        for _ in 0..505 {
            let answer = p.next().await;
            if answer["error"]["code"] == -32700 {
                parse_errors += 1;
                continue;
            }
            let i = answer["id"].as_u64().unwrap();
            assert_eq!(answer["result"], i);
            assert!(!results[i as usize], "answered twice");
            results[i as usize] = true;
        }
        assert_eq!(parse_errors, 5);
        assert!(results.iter().all(|r| *r));
        p.check_alive(7).await;

        // A new connection is unaffected too.
        let mut q = Peer::connect(addr).await;
        q.check_alive(8).await;
        server.abort();
    })
    .await;
}

/// Reads one content-length frame's body.
async fn read_cl_frame(r: &mut BufReader<OwnedReadHalf>) -> Value {
    let mut len = None;
    loop {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(20), r.read_line(&mut line))
            .await
            .expect("a frame in time")
            .unwrap();
        assert!(n > 0, "connection closed");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some(v) = line.strip_prefix("Content-Length: ") {
            len = Some(v.parse::<usize>().unwrap());
        }
    }
    let mut body = vec![0; len.expect("a Content-Length header")];
    r.read_exact(&mut body).await.unwrap();
    serde_json::from_slice(&body).unwrap()
}

/// With content-length framing, a header block without a valid length is framing garbage:
/// skipped without an answer (two peers that both lost framing must not trade error frames),
/// and the next frame is answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_length_header_garbage_is_skipped_without_an_answer() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .framing(Framing::ContentLength)
                .router(router())
                .serve_tcp(listener),
        );
        let s = TcpStream::connect(addr).await.unwrap();
        let (r, mut w) = s.into_split();
        let mut r = BufReader::new(r);
        let frame = |id: u64| {
            let body = format!(
                "{{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[{id},1],\"id\":{id}}}"
            );
            format!("Content-Length: {}\r\n\r\n{body}", body.len())
        };
        for garbage in [
            "Content-Length: twelve\r\n\r\n".to_owned(),
            "Content-Type: application/json\r\n\r\n".to_owned(),
            "hello there\r\n\r\n".to_owned(),
        ] {
            w.write_all(garbage.as_bytes()).await.unwrap();
        }
        w.write_all(frame(1).as_bytes()).await.unwrap();
        let answer = read_cl_frame(&mut r).await;
        assert_eq!(
            (answer["id"].as_u64(), answer["result"].as_u64()),
            (Some(1), Some(2)),
            "{answer}"
        );
        // Garbage split across writes, then a frame: still exactly one answer, the frame's.
        w.write_all(b"Content-Len").await.unwrap();
        w.write_all(b"gth: -3\r\n\r\n").await.unwrap();
        w.write_all(frame(2).as_bytes()).await.unwrap();
        let answer = read_cl_frame(&mut r).await;
        assert_eq!(
            (answer["id"].as_u64(), answer["result"].as_u64()),
            (Some(2), Some(3)),
            "{answer}"
        );
        // Nothing else was written: the peer half-closes and the stream ends.
        w.shutdown().await.unwrap();
        let mut rest = Vec::new();
        r.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty(), "{}", String::from_utf8_lossy(&rest));
        server.abort();
    })
    .await;
}

/// An oversize last line without its newline is still answered "frame too large" when the
/// peer half-closes, and the requests before it are answered too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unterminated_oversize_last_line_is_answered_at_end_of_input() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .max_frame(1024)
                .router(router())
                .serve_tcp(listener),
        );
        let mut p = Peer::connect(addr).await;
        p.check_alive(1).await;
        let mut big = b"{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"".to_vec();
        big.resize(64 << 10, b'a');
        p.w.write_all(&big).await.unwrap();
        p.w.shutdown().await.unwrap();
        let answer = p.next().await;
        assert_eq!(answer["error"]["code"], -32600, "{answer}");
        assert_eq!(answer["error"]["data"], "frame too large", "{answer}");
        let end = tokio::time::timeout(Duration::from_secs(20), p.lines.next_line())
            .await
            .expect("the end in time")
            .unwrap();
        assert_eq!(end, None, "nothing else is written");
        server.abort();
    })
    .await;
}
