//! MCP authorization against a real authorization server: `mcp-server --http --jwks` as an
//! OAuth 2.1 resource server for tokens npm `oauth2-mock-server` signs
//! (`.ci/install/oauth-interop.sh`).
//!
//! - The matrix over MCP Streamable HTTP (raw HTTP/1.1): no token, 401 with the
//!   `resource_metadata` URL; wrong audience, wrong issuer, expired, `alg: none`, a tampered
//!   signature, 401 `invalid_token`; a token without the scope, 403 `insufficient_scope`; a
//!   token in the query string and a malformed header, 400; a valid token, answered; a
//!   session id presented by another identity, 404; no session for any refused request.
//! - The official Python MCP SDK over HTTPS with a test CA: lists and calls tools with a
//!   bearer token; without one, 401 and the metadata URL; its OAuth client
//!   (`ClientCredentialsOAuthProvider`) discovers the authorization server through the RFC
//!   9728 metadata and gets its own token; a client without the CA fails the handshake.
//!
//! Skips with a visible `SKIPPED:` line when the server or the SDK is missing, unless
//! `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;

use common::{assert_passed, run_bounded, script, HttpServer};
use rpcwire_tests::oauth::Issuer;
use rpcwire_tests::pki::{LoopbackPki, Scratch};
use rpcwire_tests::raw_http::{self, header, status};
use serde_json::json;

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;

fn post(path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

/// Each request on one keep-alive connection: (status, head).
async fn exchange(addr: SocketAddr, requests: &[String]) -> Vec<(u16, String)> {
    let answers = tokio::time::timeout(Duration::from_secs(30), raw_http::exchange(addr, requests))
        .await
        .expect("answers in time");
    answers
        .into_iter()
        .map(|(head, _)| (status(&head), head))
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn mcp_authentication_matrix() {
    let Some(mut issuer) = tokio::task::block_in_place(Issuer::start) else {
        return;
    };
    let server = HttpServer::start(&[
        "--jwks",
        &issuer.jwks,
        "--issuer",
        &issuer.issuer,
        "--scope",
        "mcp",
    ]);
    let url = server.url.clone();
    let addr: SocketAddr = server.addr.parse().unwrap();
    let (valid, bob, no_scope, bad) = tokio::task::block_in_place(|| {
        let valid = issuer.token(json!({"sub": "alice", "aud": url, "scope": "mcp"}), 600);
        let bob = issuer.token(json!({"sub": "bob", "aud": url, "scope": "mcp"}), 600);
        let no_scope = issuer.token(json!({"sub": "carol", "aud": url, "scope": "other"}), 600);
        let bad = issuer.bad_tokens(&url, "mcp", &valid);
        (valid, bob, no_scope, bad)
    });
    let metadata = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");

    let mut requests = vec![
        post("/mcp", "", INIT),
        post("/mcp", &bearer(&no_scope), INIT),
        post(&format!("/mcp?access_token={valid}"), "", INIT),
        post("/mcp", "Authorization: Basic dXNlcjpwYXNz\r\n", INIT),
        post("/mcp", &bearer(&"A".repeat(20_000)), INIT),
    ];
    requests.extend(bad.iter().map(|(_, t)| post("/mcp", &bearer(t), INIT)));
    let answers = exchange(addr, &requests).await;
    assert_eq!(answers[0].0, 401);
    assert_eq!(
        header(&answers[0].1, "www-authenticate"),
        format!("bearer resource_metadata=\"{metadata}\", scope=\"mcp\"")
    );
    assert_eq!(answers[1].0, 403);
    assert!(header(&answers[1].1, "www-authenticate").contains("error=\"insufficient_scope\", "));
    for (status, head) in &answers[2..5] {
        assert_eq!(*status, 400, "{head}");
    }
    for ((name, _), (status, head)) in bad.iter().zip(&answers[5..]) {
        assert_eq!(*status, 401, "{name}");
        assert!(
            header(head, "www-authenticate")
                .starts_with("bearer error=\"invalid_token\", resource_metadata="),
            "{name}: {head}"
        );
    }
    for (_, head) in &answers {
        assert_eq!(
            header(head, "mcp-session-id"),
            "",
            "no session for a refused request"
        );
    }

    // A valid token: a session, which bob cannot use.
    let ok = exchange(addr, &[post("/mcp", &bearer(&valid), INIT)]).await;
    assert_eq!(ok[0].0, 200, "{}", ok[0].1);
    let id = header(&ok[0].1, "mcp-session-id").to_owned();
    assert!(!id.is_empty());
    let with = |t: &str| {
        format!(
            "{}Mcp-Session-Id: {id}\r\nMCP-Protocol-Version: 2025-11-25\r\n",
            bearer(t)
        )
    };
    let next = exchange(
        addr,
        &[
            post("/mcp", &with(&valid), LIST),
            post("/mcp", &with(&bob), LIST),
        ],
    )
    .await;
    assert_eq!(next[0].0, 200, "{}", next[0].1);
    assert_eq!(next[1].0, 404, "another identity's session: {}", next[1].1);
    drop(server);
}

#[test]
fn python_sdk_over_https_with_oauth() {
    let Some(python) = rpcwire_tests::oauth::python() else {
        rpcwire_tests::skip("the Python clients are not installed (.ci/install/oauth-interop.sh)");
        return;
    };
    let Some(mut issuer) = Issuer::start() else {
        return;
    };
    let scratch = Scratch::new("mcp-oauth-python").unwrap();
    let LoopbackPki {
        ca_file, cert, key, ..
    } = LoopbackPki::new(&scratch, "rpcwire MCP OAuth test CA").unwrap();
    let server = HttpServer::start(&[
        "--jwks",
        &issuer.jwks,
        "--issuer",
        &issuer.issuer,
        "--scope",
        "mcp",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(server.url.starts_with("https://"), "{}", server.url);
    let token = issuer.token(json!({"sub": "py", "aud": server.url, "scope": "mcp"}), 600);
    let out = run_bounded(
        Command::new(python)
            .arg(script("python_oauth_client.py"))
            .args([
                &server.url,
                ca_file.to_str().unwrap(),
                &token,
                &issuer.issuer,
            ]),
        Duration::from_secs(90),
    );
    assert_passed(&out, "python-oauth: all checks passed");
}
