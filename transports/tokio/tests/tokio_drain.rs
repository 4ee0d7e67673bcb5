//! Graceful shutdown of `serve_tcp`: once the service's `Shutdown` is triggered the listener
//! closes, a call under way is answered, a call that arrives is refused `-32042` before its
//! handler runs, the connection then closes by itself, and `drained` says it is over.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_tokio::{Builder, CallError, Drained, Router, RpcError, Shutdown, SHUTTING_DOWN};
use serde_json::{json, Value};
use tokio::io::AsyncReadExt;
use tokio::net::{TcpListener, TcpStream};

async fn bounded<F: std::future::Future>(f: F) -> F::Output {
    tokio::time::timeout(Duration::from_secs(20), f)
        .await
        .expect("test exceeded its time limit")
}

#[tokio::test]
async fn a_tcp_server_drains_its_connections() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&ran);
    let router = Router::new()
        .method("slow", |(ms,): (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>("done")
        })
        .method("count", move |_: Value| {
            let counted = Arc::clone(&counted);
            async move { Ok::<_, RpcError>(counted.fetch_add(1, Ordering::SeqCst)) }
        });
    let shutdown = Shutdown::new(Duration::from_secs(10));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = Builder::new()
        .router(router)
        .map_service(|s| s.shutdown(&shutdown))
        .serve_tcp(listener);
    let server = tokio::spawn(server);

    let session = Builder::new().connect_tcp(addr).await.unwrap();
    let client = session.client().clone();
    assert_eq!(
        client.call::<_, usize>("count", json!(null)).await.unwrap(),
        0
    );
    // An idle connection too: it is closed once the drain begins (nothing runs on it).
    let mut idle = TcpStream::connect(addr).await.unwrap();
    let slow = tokio::spawn({
        let client = client.clone();
        async move { client.call::<_, String>("slow", [600]).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;

    shutdown.trigger();
    bounded(server).await.unwrap();
    assert!(
        TcpStream::connect(addr).await.is_err(),
        "the listener is closed"
    );
    // Arrives while the slow call runs: refused, its handler never called.
    match client.call::<_, usize>("count", json!(null)).await {
        Err(CallError::Rpc(e)) => assert_eq!(e.code, SHUTTING_DOWN.0, "{e:?}"),
        other => panic!("not refused: {other:?}"),
    }
    assert_eq!(ran.load(Ordering::SeqCst), 1);
    assert_eq!(bounded(slow).await.unwrap().unwrap(), "done");
    let mut rest = Vec::new();
    assert_eq!(bounded(idle.read_to_end(&mut rest)).await.unwrap(), 0);
    assert_eq!(bounded(shutdown.drained()).await, Drained::Complete);
    // The server closed its side: the client's session ends.
    bounded(session.join()).await.unwrap();
}
