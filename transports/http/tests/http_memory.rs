//! What an idle keep-alive connection costs in heap, measured with a counting allocator: 200
//! connections, each after one call (and 50 after a call with a 64 KiB body). `serve`'s HTTP/1.1
//! fast path keeps a 2 KiB read buffer and its task while idle (the bench,
//! `cargo bench -p rpcwire-bench --bench http`, reads about 4.1 KiB resident per connection;
//! through hyper it was about 15 KiB); the bound here is a guard: a connection must hold
//! nothing of ours while idle (a core connection kept per HTTP connection would add about
//! 12 KiB), and a large body's buffer is given back once answered.
//! Also: a call answered at once allocates only its answer's text; the GET stream's
//! resumption buffer keeps its bound, and a client resuming too late gets what is held, and
//! no more.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;
use std::time::Duration;

use cap::Cap;
use rpcwire_http::HttpServer;
use rpcwire_tokio::{Builder, Router, RpcError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// The tests of this file measure the process's heap, so they run one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

const W1: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

async fn call(stream: &mut TcpStream) {
    call_with(stream, W1).await
}

async fn call_with(stream: &mut TcpStream, body: &str) {
    let request = format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !String::from_utf8_lossy(&got).contains(r#""result":19"#) {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed");
        got.extend_from_slice(&buf[..n]);
    }
}

/// Serves `subtract` at `/rpc` on a loopback port.
async fn start_subtract() -> std::net::SocketAddr {
    let router =
        Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
    let service = HttpServer::new(Builder::new().router(router))
        .path("/rpc")
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rpcwire_http::serve(listener, service));
    addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_keep_alive_connections_hold_little_heap() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let addr = start_subtract().await;
    // Warm up (lazily made state of the runtime and the service).
    let mut first = TcpStream::connect(addr).await.unwrap();
    call(&mut first).await;
    tokio::time::sleep(Duration::from_millis(100)).await;

    const CONNS: usize = 200;
    let before = ALLOCATOR.allocated();
    let mut held = Vec::new();
    for _ in 0..CONNS {
        let mut s = TcpStream::connect(addr).await.unwrap();
        call(&mut s).await;
        held.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let after = ALLOCATOR.allocated();
    // The client side's sockets here are tokio TcpStreams too (a few hundred bytes each);
    // they are counted in, so the figure is an upper bound for the server's share.
    let per = after.saturating_sub(before) / CONNS;
    println!("heap per idle keep-alive connection (server and client side): {per} bytes");
    assert!(per < 8 << 10, "{per} bytes per idle connection");

    // After a large body, the buffers it took are given back.
    const LARGE: usize = 50;
    let padded = format!("{W1}{}", " ".repeat(64 << 10));
    let before = ALLOCATOR.allocated();
    let mut large = Vec::new();
    for _ in 0..LARGE {
        let mut s = TcpStream::connect(addr).await.unwrap();
        call_with(&mut s, &padded).await;
        large.push(s);
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let per = ALLOCATOR.allocated().saturating_sub(before) / LARGE;
    println!("heap per idle connection after a 64 KiB body: {per} bytes");
    assert!(
        per < 8 << 10,
        "{per} bytes per idle connection after a large body"
    );
    drop((held, large));
}

/// `n` calls of `request` on `s`, each answer read into `buf` and checked.
async fn calls(s: &mut TcpStream, request: &[u8], buf: &mut [u8], n: usize) {
    for _ in 0..n {
        s.write_all(request).await.unwrap();
        let mut got = 0;
        // The answer ends with its body, which ends with `}`.
        while got == 0 || buf[got - 1] != b'}' {
            let n = s.read(&mut buf[got..]).await.unwrap();
            assert!(n > 0, "closed");
            got += n;
        }
        let text = std::str::from_utf8(&buf[..got]).unwrap();
        assert!(text.ends_with(r#""result":19,"id":1}"#), "{text}");
    }
}

/// A call on the fast path whose handler answers at once allocates its answer's text and
/// nothing else: no future boxed, no deadline watch, no buffer per request (the read buffer
/// carries the answer out).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_answered_at_once_allocates_only_its_answer() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let addr = start_subtract().await;
    // The client allocates nothing per call either: one request text, one read buffer.
    let request = format!(
        "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{W1}",
        W1.len()
    );
    let mut s = TcpStream::connect(addr).await.unwrap();
    let mut buf = [0u8; 1024];
    // Warm up: the responder's pooled connection, the date cache.
    calls(&mut s, request.as_bytes(), &mut buf, 100).await;
    // The allocator counts the whole process: another test's runtime may still be winding
    // down on other threads. What a call allocates shows in every window; a burst from
    // elsewhere only in some, so the least of several windows is taken.
    const CALLS: usize = 500;
    let mut least = usize::MAX;
    for _ in 0..6 {
        let before = ALLOCATOR.total_allocated();
        calls(&mut s, request.as_bytes(), &mut buf, CALLS).await;
        least = least.min((ALLOCATOR.total_allocated() - before) / CALLS);
    }
    println!("bytes allocated per call: {least}");
    // The answer, `{"jsonrpc":"2.0","result":19,"id":1}`, is 36 bytes.
    assert!(least <= 48, "{least} bytes allocated per call");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_resumption_buffer_keeps_its_bound() {
    let _alone = ONE_AT_A_TIME.lock().await;
    let service = HttpServer::new(Builder::new())
        .path("/rpc")
        .stream_buffer(4, 1 << 20)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rpcwire_http::serve(listener, service.clone()));
    let before = ALLOCATOR.allocated();
    for i in 0..10_000 {
        service.stream_client().notify("n", [i]).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let grown = ALLOCATOR.allocated().saturating_sub(before);
    assert!(
        grown < 64 << 10,
        "{grown} bytes after 10 000 events with nobody listening"
    );

    // A client resuming from an id of another epoch gets the 4 events held: 9996..9999.
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\nLast-Event-ID: 0-1\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("[9999]") {
        let n = tokio::time::timeout(Duration::from_secs(10), s.read(&mut buf))
            .await
            .unwrap()
            .unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got);
    let events: Vec<&str> = text.lines().filter(|l| l.starts_with("data: ")).collect();
    assert_eq!(events.len(), 4, "{text}");
    assert!(events[0].contains("[9996]"), "{text}");
}
