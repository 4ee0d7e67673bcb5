//! The API a server needs beyond handlers: shared state for a router, and a client handle per
//! accepted connection to call or notify it outside any handler.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::bounded;
use rpcwire_tokio::{Builder, Client, ErrorCode, Router, RpcError};
use tokio::sync::mpsc;

struct Counter(AtomicU64);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_is_shared_and_accepted_connections_can_be_notified() {
    bounded(async {
        let router = Router::new()
            .with_state(Counter(AtomicU64::new(0)))
            .method_with_context("next", |ctx, _: ()| async move {
                let counter = ctx
                    .state::<Counter>()
                    .ok_or_else(|| RpcError::standard(ErrorCode::INTERNAL_ERROR))?;
                Ok::<_, RpcError>(counter.0.fetch_add(1, Ordering::Relaxed))
            });
        let accepted: Arc<Mutex<Vec<Client>>> = Arc::default();
        let keep = Arc::clone(&accepted);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .router(router)
                .on_connect(move |client, _| keep.lock().unwrap().push(client))
                .serve_tcp(listener),
        );

        // Two clients that listen for the server's `tick` notification.
        let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
        let mut sessions = Vec::new();
        for who in 0..2u64 {
            let seen = seen_tx.clone();
            let router = Router::new().notification("tick", move |n: (u64,)| {
                let seen = seen.clone();
                async move {
                    let _ = seen.send((who, n.0));
                }
            });
            sessions.push(
                Builder::new()
                    .router(router)
                    .connect_tcp(addr)
                    .await
                    .unwrap(),
            );
        }
        // The state is one for the router, across connections.
        let a: u64 = sessions[0].client().call("next", ()).await.unwrap();
        let b: u64 = sessions[1].client().call("next", ()).await.unwrap();
        assert_eq!((a, b), (0, 1));

        // Outside any handler, the server notifies every accepted connection.
        let clients: Vec<Client> = accepted.lock().unwrap().clone();
        assert_eq!(clients.len(), 2);
        for client in &clients {
            client.notify("tick", [7]).await.unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(
                tokio::time::timeout(Duration::from_secs(5), seen_rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        got.sort_unstable();
        assert_eq!(got, [(0, 7), (1, 7)]);

        for s in sessions {
            s.close().await.unwrap();
        }
        server.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_results_decode_by_the_index_each_call_returned() {
    bounded(async {
        let router = Router::new()
            .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
            .sync_method("name", |_: ()| Ok::<_, RpcError>("rpcwire"));
        let (server, client) = Builder::new().router(router).duplex(Builder::new(), 4096);
        let mut batch = client.client().batch();
        let sum = batch.call("add", [40, 2]).unwrap();
        batch.notify("ignored", ()).unwrap();
        let name = batch.call("name", ()).unwrap();
        let missing = batch.call("missing", ()).unwrap();
        let results = batch.send().await.unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results.get::<i64>(sum).unwrap(), 42);
        assert_eq!(results.get::<String>(name).unwrap(), "rpcwire");
        let err = results.get::<i64>(missing).unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32601));
        assert!(results.get::<i64>(9).is_err(), "no call number 9");
        assert!(results.get::<String>(sum).is_err(), "42 is no string");
        client.close().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

/// With a cancel profile on both sides, a call that times out (or whose future is dropped)
/// cancels the peer's handler: its `Context::cancelled` completes, and it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_given_up_on_cancels_the_peers_handler() {
    bounded(async {
        let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
        let router = Router::new().method_with_context("work", move |ctx, (tag,): (u64,)| {
            let stopped = stopped_tx.clone();
            async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(30)) => Ok::<_, RpcError>(tag),
                    () = ctx.cancelled() => {
                        assert!(ctx.is_cancelled());
                        let _ = stopped.send(tag);
                        Err(RpcError::new(ErrorCode(-32800), "cancelled"))
                    }
                }
            }
        });
        let lsp = |b: Builder| b.cancel_notification("$/cancelRequest", "id");
        let (server, client) = lsp(Builder::new().router(router)).duplex(lsp(Builder::new()), 4096);
        let c = client.client();

        // A timeout.
        let late = c
            .call_with_timeout::<_, u64>("work", [1], Duration::from_millis(100))
            .await;
        assert!(
            matches!(late, Err(rpcwire_tokio::CallError::Timeout)),
            "{late:?}"
        );
        let tag = tokio::time::timeout(Duration::from_secs(5), stopped.recv()).await;
        assert_eq!(tag.unwrap(), Some(1), "the handler saw the cancellation");

        // A dropped call future.
        let call = c.call::<_, u64>("work", [2]);
        let _ = tokio::time::timeout(Duration::from_millis(100), call).await;
        let tag = tokio::time::timeout(Duration::from_secs(5), stopped.recv()).await;
        assert_eq!(tag.unwrap(), Some(2), "the handler saw the cancellation");

        client.close().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

/// A client that also serves (has a router, so the peer may call it) ends with `join` when it
/// opened the connection itself: its owner is done with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_ends_a_connection_this_side_opened_even_with_a_router() {
    bounded(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .router(Router::new().sync_method("one", |_: ()| Ok::<_, RpcError>(1)))
                .serve_tcp(listener),
        );
        let session = Builder::new()
            .router(Router::new().notification("tick", |_: ()| async {}))
            .connect_tcp(addr)
            .await
            .unwrap();
        let one: i64 = session.client().call("one", ()).await.unwrap();
        assert_eq!(one, 1);
        tokio::time::timeout(Duration::from_secs(5), session.join())
            .await
            .expect("join ended the connection")
            .unwrap();
        server.abort();
    })
    .await;
}
