//! Signed requests and rate limits on the MCP Streamable HTTP server
//! (`McpHttpServer::signed`, `McpHttpServer::rate_limit`): a signed `initialize` is answered
//! once and refused when replayed, a wrong signature is refused before the body is parsed,
//! an unsigned request is refused, and none of the refused ones creates a session; past a
//! rate limit's burst, 429 with `Retry-After` and no session.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rpcwire_mcp::http::McpHttpServer;
use rpcwire_mcp::tokio::McpServer;
use rpcwire_tests::raw_http::{self, exchange, listen};
use rpcwire_tokio::signing::RequestSigning;
use rpcwire_tokio::RateLimiter;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;

/// A POST of `body` with these header fields; JSON answers only.
fn post(headers: &[(String, String)], body: &str) -> String {
    raw_http::json_post("/mcp", headers, body)
}

fn status(head: &str) -> u16 {
    raw_http::status(head)
}

#[tokio::test]
async fn signed_posts_are_answered_once_and_refusals_create_no_session() {
    let signing =
        Arc::new(RequestSigning::new(b"shared key".to_vec()).window(Duration::from_secs(60)));
    let service = McpHttpServer::new(McpServer::new("signed", "1.0"))
        .signed(Arc::clone(&signing))
        .build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_mcp::http::serve(listener, service.clone()));
    let now = SystemTime::now();
    let signed = signing.sign(INIT.as_bytes(), now, "n1");
    let other_key = RequestSigning::new(b"another key".to_vec());
    let garbage = "{ not json";
    let answers = exchange(
        addr,
        &[
            post(&signed, INIT),
            post(&signed, INIT),
            post(&other_key.sign(garbage.as_bytes(), now, "n2"), garbage),
            post(&[], INIT),
            post(
                &signing.sign(INIT.as_bytes(), now - Duration::from_secs(120), "n3"),
                INIT,
            ),
        ],
    )
    .await;
    assert_eq!(status(&answers[0].0), 200, "{}", answers[0].1);
    assert!(answers[0].1.contains("protocolVersion"), "{}", answers[0].1);
    assert!(!raw_http::header(&answers[0].0, "mcp-session-id").is_empty());
    for (i, (head, body)) in answers.iter().enumerate().skip(1) {
        assert_eq!(status(head), 401, "request {i}: {body}");
        assert!(!body.contains("jsonrpc"), "request {i} was parsed: {body}");
    }
    assert_eq!(
        service.session_count(),
        1,
        "only the signed request made a session"
    );
}

#[tokio::test]
async fn a_rate_limit_answers_429_with_retry_after_and_no_session() {
    let service = McpHttpServer::new(McpServer::new("limited", "1.0"))
        .rate_limit(RateLimiter::new(0.01, 2))
        .build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_mcp::http::serve(listener, service.clone()));
    let answers = exchange(addr, &[post(&[], INIT), post(&[], INIT), post(&[], INIT)]).await;
    assert_eq!(status(&answers[0].0), 200);
    assert_eq!(status(&answers[1].0), 200);
    assert_eq!(status(&answers[2].0), 429);
    let retry: u64 = raw_http::header(&answers[2].0, "retry-after")
        .parse()
        .unwrap();
    assert!((1..=100).contains(&retry), "retry after {retry} s");
    assert_eq!(service.session_count(), 2);
    // Anonymous callers are limited by address: another one still has its burst.
    let from = std::net::Ipv4Addr::new(127, 0, 0, 2);
    let other = raw_http::exchange_from(from, addr, &[post(&[], INIT)]).await;
    assert_eq!(status(&other[0].0), 200);
    assert_eq!(service.session_count(), 3);
}
