//! The reference WebSocket JSON-RPC server of the `ws` benchmark: jsonrpsee serving W1's
//! method (`subtract`, params `[a, b]`, answer `a - b`) over WebSocket, configured for the
//! benchmark's scale (10 000 connections, large buffers). Prints
//! `jsonrpsee: listening on ADDR` on stderr.
//!
//! usage: jsonrpsee-ws ADDR   (e.g. 127.0.0.1:0)

use std::process::ExitCode;

use jsonrpsee::server::{RpcModule, ServerBuilder, ServerConfig};

fn main() -> ExitCode {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("jsonrpsee-ws: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(async move {
        let config = ServerConfig::builder()
            .ws_only()
            .max_connections(20_000)
            .build();
        let server = match ServerBuilder::with_config(config).build(&addr).await {
            Ok(s) => s,
            Err(e) => {
                eprintln!("jsonrpsee-ws: cannot listen on {addr}: {e}");
                return ExitCode::FAILURE;
            }
        };
        let mut module = RpcModule::new(());
        let registered = module.register_method("subtract", |params, _, _| {
            let (a, b): (i64, i64) = params.parse()?;
            Ok::<i64, jsonrpsee::types::ErrorObjectOwned>(a - b)
        });
        if let Err(e) = registered {
            eprintln!("jsonrpsee-ws: {e}");
            return ExitCode::FAILURE;
        }
        match server.local_addr() {
            Ok(local) => eprintln!("jsonrpsee: listening on {local}"),
            Err(_) => eprintln!("jsonrpsee: listening on {addr}"),
        }
        let handle = server.start(module);
        handle.stopped().await;
        ExitCode::SUCCESS
    })
}
