//! `rpcwire call --timeout N` exits within N seconds plus one, whatever the peer does: never
//! reads, never answers, floods bytes that are not JSON-RPC, or half-closes. One test per case.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{bounded, rpcwire};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// How a test peer behaves once it accepted the connection.
#[derive(Debug, Clone, Copy)]
enum Peer {
    NeverReads,
    NeverAnswers,
    FloodsGarbage,
    HalfCloses,
}

async fn behave(mut stream: TcpStream, peer: Peer) {
    match peer {
        Peer::NeverReads => tokio::time::sleep(Duration::from_secs(30)).await,
        Peer::NeverAnswers => {
            let mut buf = vec![0u8; 64 << 10];
            while let Ok(n) = stream.read(&mut buf).await {
                if n == 0 {
                    break;
                }
            }
        }
        Peer::FloodsGarbage => {
            let junk = vec![b'x'; 64 << 10];
            let started = Instant::now();
            while started.elapsed() < Duration::from_secs(30) {
                if stream.write_all(&junk).await.is_err() {
                    break;
                }
            }
        }
        Peer::HalfCloses => {
            let _ = stream.shutdown().await;
            tokio::time::sleep(Duration::from_secs(30)).await;
        }
    }
}

/// Runs `rpcwire call --timeout 1` with params too large for any socket buffer against a
/// peer that behaves as `peer`; returns the exit code and how long it took.
async fn call_against(peer: Peer) -> (Option<i32>, Duration, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        behave(stream, peer).await;
    });
    let file = std::env::temp_dir().join(format!(
        "rpcwire-timeout-{peer:?}-{}.json",
        std::process::id()
    ));
    std::fs::write(&file, format!("[\"{}\"]", "p".repeat(8 << 20))).unwrap();
    let at = format!("@{}", file.display());
    let started = Instant::now();
    let o = rpcwire(&[
        "call",
        "--tcp",
        &addr,
        "--max-frame",
        "33554432",
        "--timeout",
        "1",
        "echo",
        &at,
    ])
    .await;
    let took = started.elapsed();
    std::fs::remove_file(&file).unwrap();
    server.abort();
    (o.code, took, o.stderr)
}

async fn check(peer: Peer) {
    bounded(async {
        let (code, took, stderr) = call_against(peer).await;
        assert!(
            took < Duration::from_secs(2),
            "{peer:?}: `call --timeout 1` took {took:?} ({stderr})"
        );
        assert!(
            matches!(code, Some(3 | 4)),
            "{peer:?}: exit code {code:?}, expected 3 (closed) or 4 (timeout): {stderr}"
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_reads() {
    check(Peer::NeverReads).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_never_answers() {
    check(Peer::NeverAnswers).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_floods_bytes_that_are_not_json_rpc() {
    check(Peer::FloodsGarbage).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_half_closes() {
    check(Peer::HalfCloses).await;
}
