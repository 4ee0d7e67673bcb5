//! The quick start of `transports/tokio/README.md`, compiled: a TCP server with a fast
//! handler, a waiting one and one that fails with data, and a client making a call and a
//! batch, then closing. Run with `cargo run -p rpcwire-tokio --example quickstart`.

use rpcwire_tokio::{Builder, ErrorCode, Router, RpcError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = Router::new()
        // Quick work: runs where the request lies, no task, no copy of the params.
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        // Work that waits: its own task, under the per-connection concurrency limit.
        .method("slow", |(ms,): (u64,)| async move {
            tokio::time::sleep(std::time::Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        .method("fail", |_: ()| async {
            Err::<(), _>(RpcError::new(ErrorCode(-32000), "disk full").with_data(&[1, 2]))
        });
    tokio::spawn(
        Builder::new()
            .router(router)
            .max_connections(1000)
            .serve_tcp(listener),
    );

    let session = Builder::new().connect_tcp(addr).await?;
    let client = session.client();
    let diff: i64 = client.call("subtract", [42, 23]).await?;
    assert_eq!(diff, 19);
    if let Err(err) = client.call::<_, ()>("fail", ()).await {
        println!("fail: {err}"); // JSON-RPC error -32000: disk full (data: [1,2])
    }
    let mut batch = client.batch();
    batch.call("subtract", [5, 3])?;
    batch.call("slow", [10])?;
    let results = batch.send().await?; // one JSON array out, results in call order
    assert_eq!(results.len(), 2);
    println!("subtract = {diff}, batch = {results:?}");
    session.close().await?; // end the connection from this side
    Ok(())
}
