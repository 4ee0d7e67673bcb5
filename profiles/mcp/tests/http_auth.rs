//! MCP authorization on the Streamable HTTP server: authentication before any session,
//! RFC 9728 metadata, the challenges (401 with the metadata URL, 403 `insufficient_scope`),
//! sessions bound to the identity that created them, query-string tokens refused, and the
//! caller's identity reaching a tool.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use rpcwire_mcp::http::{McpHttpServer, McpService, ProtectedResource};
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use rpcwire_tests::raw_http::{self, exchange, listen};
use rpcwire_tokio::{AuthError, AuthFuture, Authenticator, Credentials, Identity};

/// Bearer tokens `NAME~SCOPE~SCOPE` (a stand-in for an OAuth server's JWTs, which the CLI's
/// authentication matrix uses): the subject is NAME, the scopes SCOPE...; `bad` is invalid.
struct Names;

impl Authenticator for Names {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = credentials.bearer()?.ok_or(AuthError::Missing)?;
            let (name, scopes) = token.split_once('~').ok_or(AuthError::Invalid("unknown"))?;
            if name == "bad" {
                return Err(AuthError::Invalid("unknown"));
            }
            Ok(Identity::new(name).with_roles(scopes.split('~').filter(|s| !s.is_empty())))
        })
    }
}

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
const WHOAMI: &str =
    r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"whoami","arguments":{}}}"#;

async fn server() -> (McpService, SocketAddr) {
    let tools = McpServer::new("auth", "1.0").tool_with_schema(
        "whoami",
        "The caller's subject.",
        serde_json::json!({"type": "object"}),
        |ctx: ToolContext, _: serde_json::Value| async move {
            Ok::<_, ToolError>(ctx.caller().identity().subject().to_owned())
        },
    );
    let (listener, addr) = listen().await;
    let service = McpHttpServer::new(tools)
        .authenticator(Names)
        .protected_resource(ProtectedResource {
            resource: format!("http://{addr}/mcp"),
            authorization_servers: vec!["https://as.test".into()],
            scopes_supported: vec!["mcp".into(), "mcp.call".into()],
        })
        .required_scopes(&["mcp"])
        .method_scopes("tools/call", &["mcp.call"])
        .build();
    tokio::spawn(rpcwire_mcp::http::serve(listener, service.clone()));
    (service, addr)
}

/// A POST with these extra header lines; JSON answers only.
fn post(path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
}

fn bearer(token: &str) -> String {
    format!("Authorization: Bearer {token}\r\n")
}

fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    Some(raw_http::header(head, name)).filter(|v| !v.is_empty())
}

#[tokio::test]
async fn metadata_is_served_and_named_in_every_challenge() {
    let (service, addr) = server().await;
    let meta_url = format!("http://{addr}/.well-known/oauth-protected-resource/mcp");
    let answers = exchange(
        addr,
        &[
            get("/.well-known/oauth-protected-resource"),
            get("/.well-known/oauth-protected-resource/mcp"),
            post("/mcp", "", INIT),
            post("/mcp", &bearer("bad~mcp"), INIT),
            post("/mcp", &bearer("carol~"), INIT),
            post("/mcp", "Authorization: Basic dXNlcjpwYXNz\r\n", INIT),
            post("/mcp?access_token=alice~mcp", "", INIT),
        ],
    )
    .await;
    for (head, body) in &answers[..2] {
        assert!(head.starts_with("http/1.1 200"), "{head}");
        let doc: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(doc["resource"], format!("http://{addr}/mcp"));
        assert_eq!(doc["authorization_servers"][0], "https://as.test");
        assert_eq!(doc["scopes_supported"][1], "mcp.call");
    }
    // No token: 401 naming the metadata and the scope, no error code.
    let (head, _) = &answers[2];
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert_eq!(
        header(head, "www-authenticate"),
        Some(format!("bearer resource_metadata=\"{meta_url}\", scope=\"mcp\"").as_str())
    );
    // A bad token: invalid_token.
    let (head, _) = &answers[3];
    assert!(head.starts_with("http/1.1 401"), "{head}");
    assert!(header(head, "www-authenticate")
        .unwrap()
        .starts_with("bearer error=\"invalid_token\", resource_metadata="));
    // A token without the required scope: 403 insufficient_scope.
    let (head, _) = &answers[4];
    assert!(head.starts_with("http/1.1 403"), "{head}");
    let challenge = header(head, "www-authenticate").unwrap();
    assert!(
        challenge.contains("error=\"insufficient_scope\""),
        "{challenge}"
    );
    assert!(challenge.ends_with("scope=\"mcp\""), "{challenge}");
    // Another scheme: 400; a token in the query string: 400, not read.
    assert!(answers[5].0.starts_with("http/1.1 400"), "{}", answers[5].0);
    assert!(answers[6].0.starts_with("http/1.1 400"), "{}", answers[6].0);
    assert!(header(&answers[6].0, "www-authenticate")
        .unwrap()
        .contains("invalid_request"));
    assert_eq!(service.session_count(), 0);
}

#[tokio::test]
async fn unauthenticated_posts_create_no_session() {
    let (service, addr) = server().await;
    let refused: Vec<String> = (0..2000)
        .map(|i| match i % 4 {
            0 => post("/mcp", "", INIT),
            1 => post("/mcp", &bearer("bad~mcp"), INIT),
            2 => post("/mcp", &bearer("carol~other"), INIT),
            _ => post("/mcp?access_token=alice~mcp", "", INIT),
        })
        .collect();
    for (head, _) in exchange(addr, &refused).await {
        assert!(!head.starts_with("http/1.1 200"), "{head}");
        assert!(header(&head, "mcp-session-id").is_none());
    }
    assert_eq!(
        service.session_count(),
        0,
        "no session for a refused request"
    );
    // The same connection type then works for a token that is good.
    let ok = exchange(addr, &[post("/mcp", &bearer("alice~mcp"), INIT)]).await;
    assert!(ok[0].0.starts_with("http/1.1 200"), "{}", ok[0].0);
    assert_eq!(service.session_count(), 1);
}

#[tokio::test]
async fn a_session_belongs_to_its_identity_and_tools_see_it() {
    let (service, addr) = server().await;
    let alice = bearer("alice~mcp~mcp.call");
    let init = exchange(addr, &[post("/mcp", &alice, INIT)]).await;
    let id = header(&init[0].0, "mcp-session-id")
        .unwrap_or_else(|| panic!("{init:?}"))
        .to_owned();
    let session = |who: &str| format!("{}Mcp-Session-Id: {id}\r\n", bearer(who));
    let answers = exchange(
        addr,
        &[
            post("/mcp", &session("alice~mcp~mcp.call"), WHOAMI),
            // Bob, with every scope, presenting alice's session: unknown to him.
            post("/mcp", &session("bob~mcp~mcp.call"), LIST),
            format!(
                "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n{}\r\n",
                session("bob~mcp~mcp.call")
            ),
            // Alice without `mcp.call`: may list, may not call.
            post("/mcp", &session("alice~mcp"), LIST),
            post("/mcp", &session("alice~mcp"), WHOAMI),
        ],
    )
    .await;
    assert!(answers[0].0.starts_with("http/1.1 200"), "{}", answers[0].0);
    assert!(
        answers[0].1.contains(r#""text":"alice""#),
        "{}",
        answers[0].1
    );
    assert!(answers[1].0.starts_with("http/1.1 404"), "{}", answers[1].0);
    assert!(answers[2].0.starts_with("http/1.1 404"), "{}", answers[2].0);
    assert_eq!(
        service.session_count(),
        1,
        "bob could not end alice's session"
    );
    assert!(answers[3].0.starts_with("http/1.1 200"), "{}", answers[3].0);
    assert!(answers[3].1.contains("whoami"));
    let (head, _) = &answers[4];
    assert!(head.starts_with("http/1.1 403"), "{head}");
    assert!(header(head, "www-authenticate")
        .unwrap()
        .ends_with("scope=\"mcp mcp.call\""));
}
