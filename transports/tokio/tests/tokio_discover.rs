//! `rpc.discover` answered over a real connection: the OpenRPC document lists the router's
//! methods.

use rpcwire_tokio::{Builder, Router, RpcError};
use serde_json::Value;

#[tokio::test]
async fn rpc_discover_lists_the_methods() -> Result<(), Box<dyn std::error::Error>> {
    let router = Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method("sum", |p: Vec<i64>| async move {
            Ok::<_, RpcError>(p.iter().sum::<i64>())
        })
        .describe("subtract", "a - b");
    let (server, client) = Builder::new().router(router).duplex(Builder::new(), 4096);
    let doc: Value = client.client().call("rpc.discover", ()).await?;
    let names: Vec<&str> = doc["methods"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(names, ["subtract", "sum"]);
    assert_eq!(doc["methods"][0]["description"], "a - b");
    assert_eq!(doc["openrpc"], "1.3.2");
    client.join().await?;
    server.join().await?;
    Ok(())
}

#[tokio::test]
async fn fallback_notification_takes_the_unnamed_ones() -> Result<(), Box<dyn std::error::Error>> {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let tx2 = tx.clone();
    let router = Router::new()
        .notification("known", move |_: Value| {
            let tx = tx2.clone();
            async move {
                let _ = tx.send("known".to_owned());
            }
        })
        .fallback_notification(move |ctx, params| {
            let tx = tx.clone();
            async move {
                let p = params.map_or("none".to_owned(), |p| p.get().to_owned());
                let _ = tx.send(format!("{} {p}", ctx.method()));
            }
        });
    let (server, client) = Builder::new().router(router).duplex(Builder::new(), 4096);
    client.client().notify("known", [1]).await?;
    client.client().notify("other", [1, 2]).await?;
    assert_eq!(rx.recv().await.as_deref(), Some("known"));
    assert_eq!(rx.recv().await.as_deref(), Some("other [1,2]"));
    client.join().await?;
    server.join().await?;
    Ok(())
}
