//! The quick start of `transports/tokio/README.md`, compiled: a TCP server with shared state,
//! typed params, a custom error with data and a notification it pushes to its client outside
//! any handler; a client making a call, a typed batch and a call it gives up on.
//! Run with `cargo run -p rpcwire-tokio --example quickstart`.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use rpcwire_tokio::{Builder, CallError, ErrorCode, Router, RpcError};
use serde::Deserialize;
use tokio::sync::mpsc;

/// Shared by every handler, on every connection.
struct Stats {
    calls: AtomicU64,
}

#[derive(Deserialize)]
struct Transfer {
    from: String,
    amount: u64,
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // The server.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = Router::new()
        .with_state(Stats {
            calls: AtomicU64::new(0),
        })
        // Quick work: runs where the request lies, no task, no copy of the params.
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        // Typed params, shared state, and an error with data.
        .method_with_context("transfer", |ctx, t: Transfer| async move {
            if let Some(stats) = ctx.state::<Stats>() {
                stats.calls.fetch_add(1, Ordering::Relaxed);
            }
            if t.amount > 100 {
                let data = serde_json::json!({"from": t.from, "limit": 100});
                return Err(RpcError::new(ErrorCode(-32010), "over the limit").with_data(&data));
            }
            Ok(t.amount)
        })
        // Work that waits: its own task, under the per-connection concurrency limit.
        .method("slow", |(ms,): (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        });
    let (connected_tx, mut connected) = mpsc::unbounded_channel();
    tokio::spawn(
        Builder::new()
            .router(router)
            .max_connections(1000)
            .on_connect(move |client, _peer| {
                let _ = connected_tx.send(client);
            })
            .serve_tcp(listener),
    );

    // The client, which also listens for the server's notifications.
    let (ticks_tx, mut ticks) = mpsc::unbounded_channel();
    let client_router = Router::new().notification("tick", move |(n,): (u64,)| {
        let ticks = ticks_tx.clone();
        async move {
            let _ = ticks.send(n);
        }
    });
    let session = Builder::new()
        .router(client_router)
        .connect_tcp(addr)
        .await?;
    let client = session.client();

    // A call.
    let diff: i64 = client.call("subtract", [42, 23]).await?;
    println!("subtract = {diff}");

    // A custom error with data.
    let refused = client
        .call::<_, u64>(
            "transfer",
            serde_json::json!({"from": "ann", "amount": 500}),
        )
        .await;
    if let Err(CallError::Rpc(e)) = &refused {
        println!("transfer refused: {} {} {:?}", e.code, e.message, e.data);
    }

    // A typed batch: one JSON array out, each result decoded by the index its call returned.
    let mut batch = client.batch();
    let a = batch.call("subtract", [5, 3])?;
    let b = batch.call("transfer", serde_json::json!({"from": "bob", "amount": 7}))?;
    let results = batch.send().await?;
    let (two, seven): (i64, u64) = (results.get(a)?, results.get(b)?);
    println!("batch: {two}, {seven}");

    // A call given up on: its deadline passes (and dropping a call's future cancels it too).
    let late = client
        .call_with_timeout::<_, u64>("slow", [5_000], Duration::from_millis(100))
        .await;
    println!("slow call: {late:?}");

    // The server pushes a notification to this client, outside any handler.
    if let Some(server_side) = connected.recv().await {
        server_side.notify("tick", [1]).await?;
    }
    println!("tick from the server: {:?}", ticks.recv().await);

    session.close().await?; // end the connection from this side
    Ok(())
}
