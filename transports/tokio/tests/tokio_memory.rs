//! A peer that sends requests without ever reading the answers must not make the driver's
//! memory grow without bound: heap use is measured with a counting allocator and asserted
//! against the bound the configuration implies.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::alloc::System;
use std::time::Duration;

use cap::Cap;
use common::{bounded, router};
use rpcwire_tokio::Builder;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

/// The tests of this file measure the process's heap, so they run one at a time.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stops_reading_does_not_grow_our_memory() {
    let _alone = ONE_AT_A_TIME.lock().await;
    bounded(async {
        const QUEUE: usize = 1 << 20;
        const CONCURRENCY: usize = 4;
        const MAX_FRAME: usize = 64 << 10;
        let builder = Builder::new()
            .router(router())
            .max_frame(MAX_FRAME)
            .map_service(|s| s.concurrency(CONCURRENCY))
            .map_service(|s| s.queue_bytes(QUEUE));
        // Growing buffers at their largest: a receive buffer for one frame, a transmit
        // queue of one frame plus the 16 KiB shared by queued frames, a batch reply.
        let buffers = 3 * MAX_FRAME + (64 << 10);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(builder.serve_tcp(listener));

        let baseline = ALLOCATOR.allocated();

        // Echo requests with 1 KiB params, written as fast as the server takes them; the
        // answers are never read.
        let mut stream = TcpStream::connect(addr).await.unwrap();
        let pad = "p".repeat(1000);
        let mut line = Vec::new();
        let mut sent = 0usize;
        let mut id = 0u64;
        let cap = 512usize << 20;
        let mut peak = 0usize;
        loop {
            line.clear();
            id += 1;
            line.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{pad}\"],\"id\":{id}}}\n")
                    .as_bytes(),
            );
            match tokio::time::timeout(Duration::from_secs(1), stream.write_all(&line)).await {
                Ok(Ok(())) => {
                    sent += line.len();
                    // Sampled (the allocator's own maximum covers the whole process life).
                    peak = peak.max(ALLOCATOR.allocated().saturating_sub(baseline));
                }
                Ok(Err(e)) => panic!("write failed: {e}"),
                Err(_) => break, // the server stopped reading: backpressure reached us
            }
            assert!(sent < cap, "the server kept reading {sent} bytes without bound");
        }
        let peak = peak.max(ALLOCATOR.allocated().saturating_sub(baseline));
        // What the configuration allows: the fixed buffers, the request queue, the answers
        // held by busy handler slots, plus allocator and runtime slack.
        let bound = buffers + QUEUE + CONCURRENCY * 2 * MAX_FRAME + (2 << 20);
        println!(
            "peer stopped reading: {sent} bytes ({id} requests) accepted before backpressure; \
             peak heap {peak} bytes, bound {bound} (fixed buffers {buffers}, queue {QUEUE})"
        );
        assert!(peak < bound, "peak heap {peak} exceeds the configured bound {bound}");
        // Keep pushing for a while: memory stays flat.
        let before = ALLOCATOR.allocated();
        for _ in 0..20 {
            let _ = tokio::time::timeout(Duration::from_millis(20), stream.write_all(&line)).await;
        }
        let after = ALLOCATOR.allocated();
        assert!(
            after < before + (1 << 20),
            "memory grew while the peer was not reading: {before} -> {after}"
        );
        drop(stream);
        server.abort();
    })
    .await;
}

/// A server on loopback with `router` and `max_frame` that gives idle memory back after
/// 100 ms, and a raw client socket to it (it allocates only its small read buffer), with the
/// heap baseline taken just before connecting.
async fn server_and_socket(
    router: rpcwire_tokio::Router,
    max_frame: usize,
) -> (
    tokio::task::JoinHandle<()>,
    usize,
    BufReader<tokio::net::tcp::OwnedReadHalf>,
    tokio::net::tcp::OwnedWriteHalf,
) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(
        Builder::new()
            .router(router)
            .max_frame(max_frame)
            .idle_release(Duration::from_millis(100))
            .serve_tcp(listener),
    );
    // Let the accept loop settle, then count from here.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let baseline = ALLOCATOR.allocated();
    let stream = TcpStream::connect(addr).await.unwrap();
    let (read, write) = stream.into_split();
    (server, baseline, BufReader::with_capacity(64, read), write)
}

/// Heap the process holds beyond `baseline` once allocations settle (the server's
/// connection finishing its step after the answer was read, then giving back what it no
/// longer needs after its idle time of 100 ms).
async fn settled_heap(baseline: usize) -> usize {
    tokio::time::sleep(Duration::from_millis(300)).await;
    let mut last = usize::MAX;
    for _ in 0..50 {
        tokio::time::sleep(Duration::from_millis(20)).await;
        let now = ALLOCATOR.allocated().saturating_sub(baseline);
        if now == last {
            return now;
        }
        last = now;
    }
    last
}

/// What an idle server connection holds: after one small call at most 6 KiB of heap (its
/// driver, tables, buffers and command channel; 4.5 KiB measured), and after a 4 MiB frame in
/// and out, the same again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_connection_holds_a_few_kib_before_and_after_a_large_frame() {
    let _alone = ONE_AT_A_TIME.lock().await;
    bounded(async {
        let (server, baseline, mut read, mut write) = server_and_socket(router(), 8 << 20).await;
        let mut line = String::new();

        write
            .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":1}\n")
            .await
            .unwrap();
        read.read_line(&mut line).await.unwrap();
        assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}\n");
        let small = settled_heap(baseline).await;
        println!("heap held by an idle connection after one small call: {small} bytes");
        assert!(small <= 6 << 10, "idle connection holds {small} bytes (limit 6 KiB)");

        // A 4 MiB frame in, its echo out.
        let big = "x".repeat(4 << 20);
        let request = format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":2}}\n");
        let writer = tokio::spawn(async move {
            write.write_all(request.as_bytes()).await.unwrap();
            write
        });
        line.clear();
        read.read_line(&mut line).await.unwrap();
        assert!(line.len() > 4 << 20 && line.ends_with("\"id\":2}\n"), "echo of the 4 MiB frame");
        let write = writer.await.unwrap();
        drop(big);
        let line_capacity = line.capacity();
        drop(line);
        let after = settled_heap(baseline).await;
        println!("heap held after a 4 MiB frame went through: {after} bytes (line buffer {line_capacity} freed)");
        assert!(after <= 6 << 10, "after a 4 MiB frame the connection holds {after} bytes");
        drop((read, write));
        server.abort();
    })
    .await;
}

/// A connection configured for frames of up to 256 MiB receives and echoes a 64 MiB frame,
/// and afterwards holds what an idle connection holds (memory is used only while such a frame
/// is held).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_64_mib_frame_is_echoed_under_a_256_mib_limit_and_its_memory_given_back() {
    let _alone = ONE_AT_A_TIME.lock().await;
    bounded(async {
        // Echo without decoding: the params go back as they came (one copy, as raw JSON).
        let echo = rpcwire_tokio::Router::new().raw_method(
            "echo",
            |p: Option<rpcwire::wire::RawJson<'_>>| {
                p.map(|p| serde_json::value::RawValue::from_string(p.as_str().to_owned()))
                    .transpose()
                    .map_err(rpcwire_tokio::RpcError::internal)
            },
        );
        let (server, baseline, mut read, mut write) = server_and_socket(echo, 256 << 20).await;

        let big = "y".repeat(64 << 20);
        let request = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":7}}\n"
        );
        drop(big);
        let writer = tokio::spawn(async move {
            write.write_all(request.as_bytes()).await.unwrap();
            write
        });
        let mut line = Vec::with_capacity(65 << 20);
        read.read_until(b'\n', &mut line).await.unwrap();
        assert!(
            line.len() > 64 << 20,
            "the whole echo came back ({} bytes)",
            line.len()
        );
        assert!(line.starts_with(b"{\"jsonrpc\":\"2.0\",\"result\":[\"yyyy"));
        assert!(line.ends_with(b"\"],\"id\":7}\n"));
        let write = writer.await.unwrap();
        drop(line);
        let after = settled_heap(baseline).await;
        println!("heap held after a 64 MiB frame went through: {after} bytes");
        assert!(
            after <= 8 << 10,
            "after a 64 MiB frame the connection holds {after} bytes"
        );
        drop((read, write));
        server.abort();
    })
    .await;
}
