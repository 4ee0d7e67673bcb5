//! A refused request does not cost the keep-alive connection it came on: its body is read past
//! (also when it comes after the head) and the request sent right behind it on the same
//! connection is answered (the JSON-RPC server; the MCP server's case is in `rpcwire-mcp`); a
//! body too large to read past is refused with `connection: close`, so that the client knows
//! not to send more on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_http::HttpServer;
use rpcwire_tests::raw_http::{listen, refusals_keep_the_connection, request};
use rpcwire_tokio::{Builder, Router, RpcError};

const W1: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

#[tokio::test]
async fn json_rpc_server_reads_past_refused_bodies() {
    let router =
        Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
    let service = HttpServer::new(Builder::new().router(router))
        .path("/rpc")
        .max_body(1024)
        .build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_http::serve(listener, service));
    let cases = [
        (request("/rpc", "text/plain", W1), "415"),
        (request("/elsewhere", "application/json", W1), "404"),
        // A body at the limit, answered (Parse error: it is all spaces), keeps it too.
        (
            request("/rpc", "application/json", &" ".repeat(1024)),
            "200",
        ),
    ];
    refusals_keep_the_connection(
        addr,
        &cases,
        &request("/rpc", "application/json", W1),
        |body| body == r#"{"jsonrpc":"2.0","result":19,"id":1}"#,
        &request("/rpc", "application/json", &" ".repeat(1025)),
    )
    .await;
}
