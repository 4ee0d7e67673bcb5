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
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_that_stops_reading_does_not_grow_our_memory() {
    bounded(async {
        const QUEUE: usize = 1 << 20;
        const CONCURRENCY: usize = 4;
        const MAX_FRAME: usize = 64 << 10;
        let builder = Builder::new()
            .router(router())
            .max_frame(MAX_FRAME)
            .concurrency(CONCURRENCY)
            .queue_bytes(QUEUE);
        let buffers = builder.buffer_bytes();
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
        loop {
            line.clear();
            id += 1;
            line.extend_from_slice(
                format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{pad}\"],\"id\":{id}}}\n")
                    .as_bytes(),
            );
            match tokio::time::timeout(Duration::from_secs(1), stream.write_all(&line)).await {
                Ok(Ok(())) => sent += line.len(),
                Ok(Err(e)) => panic!("write failed: {e}"),
                Err(_) => break, // the server stopped reading: backpressure reached us
            }
            assert!(sent < cap, "the server kept reading {sent} bytes without bound");
        }
        let peak = ALLOCATOR.max_allocated().saturating_sub(baseline);
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
