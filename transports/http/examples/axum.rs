//! The JSON-RPC service mounted in an axum application beside other routes, then called once:
//! `cargo run -p rpcwire-http --example axum` (prints the answer and exits; with `--serve`
//! it keeps serving on 127.0.0.1:3000).

use rpcwire_http::{HttpClient, HttpServer};
use rpcwire_tokio::{Builder, Router, RpcError};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let router =
        Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
    // Every path reaching the service is served (axum does the routing), so no `.path()`.
    let rpc = HttpServer::new(Builder::new().router(router)).build();
    let app = axum::Router::new()
        .route("/health", axum::routing::get(|| async { "ok" }))
        .route_service("/rpc", rpc);

    let serve_forever = std::env::args().any(|a| a == "--serve");
    let addr = if serve_forever {
        "127.0.0.1:3000"
    } else {
        "127.0.0.1:0"
    };
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let url = format!("http://{}/rpc", listener.local_addr()?);
    let server = tokio::spawn(async move { axum::serve(listener, app).await });
    if serve_forever {
        eprintln!("serving JSON-RPC on {url}");
        server.await??;
        return Ok(());
    }
    let client = HttpClient::new(&url)?;
    let diff: i64 = client.client().call("subtract", [42, 23]).await?;
    println!("subtract(42, 23) = {diff} via axum at {url}");
    assert_eq!(diff, 19);
    Ok(())
}
