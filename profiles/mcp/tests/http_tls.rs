//! MCP Streamable HTTP over `https://` (feature `tls`): the MCP client against the MCP server
//! behind rustls on loopback (`serve_connection`), with a certificate made for the test: a
//! session from initialize to DELETE over HTTP/2 (chosen by ALPN), with progress.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_http::tls::{rustls, tls_with_roots};
use rpcwire_mcp::http::{McpHttpClient, McpHttpServer, Protocol};
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use rpcwire_tests::tls::{tls_server, Cert};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Client settings that trust `cert` only.
fn trusting(cert: &Cert) -> Arc<rustls::ClientConfig> {
    Arc::new(tls_with_roots(cert.roots()).unwrap())
}

#[tokio::test]
async fn mcp_session_over_https() {
    let cert = Cert::new();
    let tools = McpServer::new("mcp-tls-test", "1.0").tool_with_schema(
        "count",
        "Progress 1..=3.",
        json!({"type": "object"}),
        |ctx: ToolContext, _: Value| async move {
            for i in 1..=3 {
                ctx.progress(f64::from(i), Some(3.0), None).await;
            }
            Ok::<_, ToolError>("counted")
        },
    );
    let service = McpHttpServer::new(tools).build();
    let s = service.clone();
    let (port, seen) = tls_server(
        cert.acceptor(&[b"h2", b"http/1.1"]),
        Protocol::from_alpn,
        move |tls, protocol| {
            let service = s.clone();
            async move {
                let _ = rpcwire_mcp::http::serve_connection(tls, service, protocol).await;
            }
        },
    )
    .await;
    let url = format!("https://localhost:{port}/mcp");
    let client = tokio::time::timeout(
        WAIT,
        McpHttpClient::builder(&url)
            .tls_config(trusting(&cert))
            .connect(),
    )
    .await
    .unwrap()
    .unwrap();
    assert!(client.session_id().is_some());
    assert_eq!(service.session_count(), 1);
    let tools = client.mcp().list_tools().await.unwrap();
    assert_eq!(tools.len(), 1);
    let progress = Arc::new(Mutex::new(Vec::new()));
    let p = Arc::clone(&progress);
    let r = tokio::time::timeout(
        WAIT,
        client
            .mcp()
            .call_tool_with_progress("count", json!({}), move |e| {
                p.lock().unwrap().push(e.progress)
            }),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(r.joined_text(), "counted");
    assert_eq!(*progress.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    client.close().await.unwrap();
    assert_eq!(service.session_count(), 0, "DELETE ended the session");
    let seen = seen.lock().unwrap().clone();
    assert!(
        !seen.is_empty() && seen.iter().all(|p| *p == Protocol::Http2),
        "{seen:?}"
    );
}
