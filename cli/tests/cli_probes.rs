//! `rpcwire serve --http --liveness-path --readiness-path`: the probes at start-up (a --jwks
//! key set that cannot be fetched: not ready), in service (no authenticator: ready), and
//! during the drain that SIGTERM starts (503 with `Connection: close`, then exit 0).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bounded, serve_http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// `GET path` on `stream` (kept alive): the status and whether the answer says
/// `Connection: close`.
async fn get(stream: &mut TcpStream, path: &str) -> (u16, bool) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    loop {
        let n = bounded(stream.read(&mut buf)).await.unwrap();
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer).to_ascii_lowercase();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if text.len() >= end + 4 + length {
                let close = text.contains("\r\nconnection: close\r\n");
                return (text[9..12].parse().unwrap(), close);
            }
        }
        assert!(n > 0, "closed before an answer: {text}");
    }
}

fn addr(url: &str) -> String {
    url.trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

const PROBES: [&str; 4] = ["--liveness-path", "/healthz", "--readiness-path", "/readyz"];

#[tokio::test]
async fn probes_in_service_and_during_the_drain() {
    let mut args = PROBES.to_vec();
    args.extend(["--drain-timeout", "5"]);
    let (mut server, url) = serve_http(&args).await;
    let mut conn = TcpStream::connect(addr(&url)).await.unwrap();
    assert_eq!(get(&mut conn, "/healthz").await, (200, false));
    assert_eq!(get(&mut conn, "/readyz").await, (200, false));
    // Any other path is the server's as before.
    assert_eq!(get(&mut conn, "/other").await.0, 404);

    rpcwire_tests::otlp::sigterm(server.id().unwrap());
    // The drain has begun once the listener is closed.
    for _ in 0..100 {
        if TcpStream::connect(addr(&url)).await.is_err() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(get(&mut conn, "/readyz").await, (503, true));
    let status = bounded(server.wait()).await.unwrap();
    assert!(status.success(), "{status}");
}

#[tokio::test]
async fn not_ready_while_the_jwks_was_never_fetched() {
    // A port nothing listens on: the key set cannot be fetched.
    let unused = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let jwks = format!("http://{}/jwks.json", unused.local_addr().unwrap());
    drop(unused);
    let mut args = PROBES.to_vec();
    args.extend([
        "--jwks",
        &jwks,
        "--audience",
        "rpcwire",
        "--issuer",
        "https://i",
    ]);
    let (mut server, url) = serve_http(&args).await;
    let mut conn = TcpStream::connect(addr(&url)).await.unwrap();
    assert_eq!(get(&mut conn, "/healthz").await, (200, false));
    assert_eq!(get(&mut conn, "/readyz").await, (503, false));
    server.kill().await.unwrap();
}
