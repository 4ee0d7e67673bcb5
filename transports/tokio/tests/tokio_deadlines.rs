//! Every call ends by its deadline, counted from the moment it is made: also while it waits
//! for transmit room behind a peer that never reads.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::bounded;
use rpcwire_tokio::{Builder, CallError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_behind_a_peer_that_never_reads_end_at_their_deadline() {
    bounded(async {
        // The peer accepts and then never reads: our writes fill the socket buffers.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (stream, _) = listener.accept().await.unwrap();
            tokio::time::sleep(Duration::from_secs(30)).await;
            drop(stream);
        });
        let session = Builder::new()
            .max_frame(16 << 20)
            .connect_tcp(addr)
            .await
            .unwrap();
        let big = "z".repeat(4 << 20);
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let client = session.client().clone();
            let big = big.clone();
            calls.spawn(async move {
                let started = Instant::now();
                let outcome = client
                    .call_with_timeout::<_, serde_json::Value>(
                        "echo",
                        [big],
                        Duration::from_millis(500),
                    )
                    .await;
                (outcome, started.elapsed())
            });
        }
        while let Some(joined) = calls.join_next().await {
            let (outcome, took) = joined.unwrap();
            assert!(
                matches!(outcome, Err(CallError::Timeout)),
                "expected a timeout, got {outcome:?}"
            );
            // A call that waited for room would end when the peer goes (30 s). The margin over
            // 500 ms is for encoding 4 MiB in a debug build on a loaded machine (1.5 s was
            // exceeded there, with the deadline kept).
            assert!(
                took < Duration::from_secs(5),
                "a 500 ms call ended after {took:?}"
            );
        }
        peer.abort();
    })
    .await;
}
