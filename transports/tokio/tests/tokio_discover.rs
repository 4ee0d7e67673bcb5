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
