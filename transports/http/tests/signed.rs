//! Signed and replay-proof requests (`HttpServer::signed`) and rate limits
//! (`Service::rate_limit`) on the HTTP server, at their edges: a signed request is answered
//! once and refused when replayed; a wrong signature is refused before the body is parsed;
//! a stale timestamp, a missing or malformed header, refused; a caller's nonce cache full:
//! 429. A rate limit of a burst of 2: the third call at once gets 429 with `Retry-After`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rpcwire_http::HttpServer;
use rpcwire_tests::raw_http::{self, exchange, listen};
use rpcwire_tokio::signing::RequestSigning;
use rpcwire_tokio::{Builder, RateLimiter, Router, RpcError};

const CALL: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

fn router() -> Router {
    Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
}

async fn start(server: HttpServer) -> SocketAddr {
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_http::serve(listener, server.build()));
    addr
}

/// A POST of `body` with these header fields; JSON answers only.
fn post(headers: &[(String, String)], body: &str) -> String {
    raw_http::json_post("/", headers, body)
}

fn status(head: &str) -> String {
    raw_http::status(head).to_string()
}

#[tokio::test]
async fn signed_requests_are_answered_once() {
    let signing = Arc::new(
        RequestSigning::new(b"shared key".to_vec())
            .window(Duration::from_secs(60))
            .max_nonces(100, 3),
    );
    let addr =
        start(HttpServer::new(Builder::new().router(router())).signed(Arc::clone(&signing))).await;
    let now = SystemTime::now();
    let signed = signing.sign(CALL.as_bytes(), now, "n1");
    let other_key = RequestSigning::new(b"another key".to_vec());
    // Not JSON, signed with the wrong key: refused before anything parses it.
    let garbage = "{ not json";
    let mut stale = signing.sign(CALL.as_bytes(), now - Duration::from_secs(61), "n2");
    let mut malformed = signing.sign(CALL.as_bytes(), now, "n3");
    malformed[2].1 = "zz".into();
    let answers = exchange(
        addr,
        &[
            post(&signed, CALL),
            post(&signed, CALL),
            post(&other_key.sign(garbage.as_bytes(), now, "n4"), garbage),
            post(
                &signing.sign(CALL.as_bytes(), now, "n5"),
                r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}"#,
            ),
            post(&[], CALL),
            post(&std::mem::take(&mut stale), CALL),
            post(&malformed, CALL),
        ],
    )
    .await;
    assert_eq!(status(&answers[0].0), "200");
    assert!(answers[0].1.contains(r#""result":19"#));
    for (i, (head, body)) in answers.iter().enumerate().skip(1) {
        assert_eq!(status(head), "401", "request {i}: {body}");
        assert!(
            !body.contains("jsonrpc"),
            "request {i} was not parsed: {body}"
        );
    }
    // The per-caller bound: three nonces held (n1 and two more), the fourth waits.
    let more = exchange(
        addr,
        &[
            post(&signing.sign(CALL.as_bytes(), now, "n6"), CALL),
            post(&signing.sign(CALL.as_bytes(), now, "n7"), CALL),
            post(&signing.sign(CALL.as_bytes(), now, "n8"), CALL),
        ],
    )
    .await;
    assert_eq!(status(&more[0].0), "200");
    assert_eq!(status(&more[1].0), "200");
    assert_eq!(status(&more[2].0), "429");
    assert_eq!(signing.cached_nonces(), 3);
}

#[tokio::test]
async fn a_rate_limit_answers_429_with_retry_after_past_its_burst() {
    let builder = Builder::new()
        .router(router())
        .map_service(|s| s.rate_limit(RateLimiter::new(0.01, 2)));
    let addr = start(HttpServer::new(builder)).await;
    let answers = exchange(addr, &[post(&[], CALL), post(&[], CALL), post(&[], CALL)]).await;
    assert_eq!(status(&answers[0].0), "200");
    assert_eq!(status(&answers[1].0), "200");
    assert_eq!(status(&answers[2].0), "429");
    let retry: u64 = answers[2]
        .0
        .lines()
        .find_map(|l| l.strip_prefix("retry-after:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    assert!((1..=100).contains(&retry), "retry after {retry} s");
    // Anonymous callers are limited by address: another one still has its burst.
    let from = Ipv4Addr::new(127, 0, 0, 2);
    let other = raw_http::exchange_from(from, addr, &[post(&[], CALL)]).await;
    assert_eq!(status(&other[0].0), "200");
    let again = exchange(addr, &[post(&[], CALL)]).await;
    assert_eq!(status(&again[0].0), "429");
}
