//! The reference HTTP JSON-RPC server of the `http` bench: jsonrpsee's server, HTTP only, with
//! the W1 method `subtract`. Prints `listening on ADDR` on stderr.
//!
//! `jsonrpsee-http [ADDR]` (default 127.0.0.1:0); worker threads from `RPCWIRE_THREADS`
//! (default: one per core), like `rpcwire serve --http`.

use jsonrpsee::server::{RpcModule, Server, ServerConfig};
use jsonrpsee::types::ErrorObjectOwned;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = std::env::var("RPCWIRE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        rt.worker_threads(n);
    }
    rt.enable_all().build()?.block_on(async move {
        let config = ServerConfig::builder()
            .http_only()
            .max_connections(100_000)
            .build();
        let server = Server::builder().set_config(config).build(addr).await?;
        let mut module = RpcModule::new(());
        module.register_method("subtract", |params, _, _| {
            let (a, b): (i64, i64) = params.parse()?;
            Ok::<_, ErrorObjectOwned>(a - b)
        })?;
        eprintln!("jsonrpsee: listening on {}", server.local_addr()?);
        server.start(module).stopped().await;
        Ok(())
    })
}
