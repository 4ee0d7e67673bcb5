//! `serve_tls` (feature `tls`): the Agent Card and a `SendMessage` over HTTPS on loopback,
//! with a certificate made for the test, and nothing served to a client that does not finish
//! a TLS handshake.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use rpcwire_a2a::{A2aServer, AgentCard, TaskContext};
use rpcwire_tests::pki::{LoopbackPki, Scratch};
use rpcwire_tokio::tls::{client_config, connect, ServerTls, TlsFiles};
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 request over TLS, the connection closed after it: (head, body).
async fn over_tls(
    addr: std::net::SocketAddr,
    ca: &std::path::Path,
    request: String,
) -> (String, String) {
    let config = Arc::new(client_config(ca, None).unwrap());
    let mut stream = connect(addr, "localhost", config).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[tokio::test]
async fn the_card_and_a_message_over_https() {
    let scratch = Scratch::new("a2a-tls").unwrap();
    let pki = LoopbackPki::new(&scratch, "a2a test CA").unwrap();
    let tls = ServerTls::with_alpn(
        TlsFiles {
            cert: pki.cert.clone(),
            key: pki.key.clone(),
            client_ca: None,
        },
        &[b"http/1.1"],
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let card = AgentCard {
        name: "tls".into(),
        ..AgentCard::default()
    };
    let service = A2aServer::new(card, |ctx: TaskContext| async move {
        ctx.text_artifact("echo", ctx.text());
        ctx.complete(None);
    })
    .build();
    tokio::spawn(rpcwire_a2a::serve_tls(
        listener,
        service,
        tls,
        Duration::from_secs(5),
    ));

    let get =
        "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
    let (head, body) = over_tls(addr, &pki.ca_file, get.to_owned()).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let card: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(card["name"], "tls");

    let call = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"over tls"}]}}}"#;
    let post = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    );
    let (head, body) = over_tls(addr, &pki.ca_file, post).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let answer: Value = serde_json::from_str(&body).unwrap();
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "over tls");

    // Plain HTTP on the TLS port gets no answer.
    let mut plain = tokio::net::TcpStream::connect(addr).await.unwrap();
    plain.write_all(get.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut got)).await;
    assert!(
        !String::from_utf8_lossy(&got).contains("\"tls\""),
        "served in clear"
    );
}
