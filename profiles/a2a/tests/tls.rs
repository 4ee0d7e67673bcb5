//! `serve_tls` (feature `tls`): the Agent Card and a `SendMessage` over HTTPS on loopback,
//! with a certificate made for the test, and nothing served in clear on the TLS port; with
//! mutual TLS, the client certificate's subject is the caller the agent sees, and a client
//! without one is refused.
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

/// Callers named by their client certificate's subject (mutual TLS); none without one.
struct Certificates;

impl rpcwire_a2a::Authenticator for Certificates {
    fn authenticate<'a>(
        &'a self,
        credentials: rpcwire_service::Credentials<'a>,
    ) -> rpcwire_service::AuthFuture<'a> {
        let subject = credentials.certificate.map(|c| c.subject.clone());
        Box::pin(async move {
            subject
                .map(rpcwire_a2a::Identity::new)
                .ok_or(rpcwire_service::AuthError::Missing)
        })
    }
}

#[tokio::test]
async fn a_client_certificate_names_the_caller() {
    let scratch = Scratch::new("a2a-mtls").unwrap();
    let pki = LoopbackPki::new(&scratch, "a2a mtls CA").unwrap();
    let (client_cert, client_key) = pki
        .ca
        .issue_files(
            &scratch,
            "client",
            "agent-client",
            &["client.example"],
            rpcwire_tests::pki::Usage::Client,
        )
        .unwrap();
    let tls = ServerTls::with_alpn(
        TlsFiles {
            cert: pki.cert.clone(),
            key: pki.key.clone(),
            client_ca: Some(pki.ca_file.clone()),
        },
        &[b"http/1.1"],
    )
    .unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let service = A2aServer::new(AgentCard::default(), |ctx: TaskContext| async move {
        ctx.text_artifact("who", ctx.identity().subject());
        ctx.complete(None);
    })
    .authenticator(Certificates)
    .build();
    tokio::spawn(rpcwire_a2a::serve_tls(
        listener,
        service,
        tls,
        Duration::from_secs(5),
    ));

    let call = r#"{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"who"}]}}}"#;
    let post = format!(
        "POST / HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nA2A-Version: 1.0\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{call}",
        call.len()
    );
    let config = Arc::new(client_config(&pki.ca_file, Some((&client_cert, &client_key))).unwrap());
    let mut stream = connect(addr, "localhost", config).await.unwrap();
    stream.write_all(post.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut answer))
        .await
        .unwrap()
        .unwrap();
    let text = String::from_utf8_lossy(&answer).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let answer: Value = serde_json::from_str(body).unwrap();
    let who = answer["result"]["task"]["artifacts"][0]["parts"][0]["text"]
        .as_str()
        .unwrap();
    assert!(who.contains("agent-client"), "{who}");

    // Without a client certificate the handshake is refused: nothing is answered.
    let config = Arc::new(client_config(&pki.ca_file, None).unwrap());
    let refused = async {
        let mut stream = connect(addr, "localhost", config).await?;
        stream.write_all(post.as_bytes()).await?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).await.map(|_| answer)
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), refused)
        .await
        .unwrap();
    assert!(
        answer.as_ref().map_or(true, Vec::is_empty),
        "answered without a certificate: {answer:?}"
    );
}
