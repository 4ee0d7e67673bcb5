//! `rmcp-server ADDR`: rmcp 3.x's Streamable HTTP server (the official Rust MCP SDK) with the
//! same `add` tool as `examples/mcp-server` (`{a, b}` integers, the sum as text), on hyper's
//! HTTP/1.1 server, one task per connection. Prints `rmcp-server: listening on
//! http://ADDR/mcp` on stderr once it accepts, as `mcp-server --http` does.
//!
//! JSON answers (`json_response`) and no legacy sessions: a 2026-07-28 request is served
//! statelessly either way (rmcp's `StreamableHttpServerConfig::legacy_session_mode`), and
//! `mcp-server --http --stateless` answers JSON too.

use std::sync::Arc;

use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_router};
use serde::Deserialize;

#[derive(Clone)]
struct Example;

#[derive(Deserialize, schemars::JsonSchema)]
struct Add {
    a: i64,
    b: i64,
}

#[tool_router(server_handler)]
impl Example {
    #[tool(description = "Adds two integers.")]
    fn add(&self, Parameters(Add { a, b }): Parameters<Add>) -> Result<String, String> {
        a.checked_add(b)
            .map(|sum| sum.to_string())
            .ok_or_else(|| "overflow".to_owned())
    }
}

#[tokio::main]
async fn main() {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".into());
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service = StreamableHttpService::new(
        || Ok(Example),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let listener = tokio::net::TcpListener::bind(&addr)
        .await
        .unwrap_or_else(|e| panic!("cannot listen on {addr}: {e}"));
    let local = listener.local_addr().expect("local address");
    eprintln!("rmcp-server: listening on http://{local}/mcp");
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        let service = TowerToHyperService::new(service.clone());
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
