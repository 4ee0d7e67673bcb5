//! The connection limit of a TCP server: beyond it, new connections wait (unanswered, in the
//! listener's backlog) while the open ones are served as before; one ending lets the next in.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bounded, router};
use rpcwire_tokio::Builder;

/// Calls `add` on a session and returns the sum.
async fn add(session: &rpcwire_tokio::Session, a: i64, b: i64) -> i64 {
    session.client().call("add", (a, b)).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_beyond_the_limit_wait_while_the_others_are_served() {
    bounded(async {
        const LIMIT: usize = 4;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .router(router())
                .max_connections(LIMIT)
                .serve_tcp(listener),
        );

        let mut open = Vec::new();
        for i in 0..LIMIT {
            let s = Builder::new().connect_tcp(addr).await.unwrap();
            assert_eq!(add(&s, i as i64, 1).await, i as i64 + 1);
            open.push(s);
        }
        // One more: the TCP handshake completes (the kernel's backlog), but the server does
        // not take it: its call gets no answer.
        let extra = Builder::new().connect_tcp(addr).await.unwrap();
        let waiting = tokio::time::timeout(
            Duration::from_millis(500),
            extra.client().call::<_, i64>("add", (40, 2)),
        )
        .await;
        assert!(
            waiting.is_err(),
            "a connection beyond the limit was served: {waiting:?}"
        );
        // The open ones are still answered.
        for (i, s) in open.iter().enumerate() {
            assert_eq!(add(s, i as i64, 10).await, i as i64 + 10);
        }
        // One ends: the waiting one is taken and answered.
        let first = open.remove(0);
        first.client().shutdown();
        first.join().await.unwrap();
        assert_eq!(add(&extra, 40, 2).await, 42);
        for s in open {
            s.client().shutdown();
            s.join().await.unwrap();
        }
        server.abort();
    })
    .await;
}
