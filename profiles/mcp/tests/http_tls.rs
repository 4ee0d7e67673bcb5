//! MCP Streamable HTTP over `https://` (feature `tls`): the MCP client against the MCP server
//! behind rustls on loopback (`serve_connection`), with a certificate made for the test: a
//! session from initialize to DELETE over HTTP/2 (chosen by ALPN), with progress.

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_http::tls::{rustls, tls_with_roots};
use rpcwire_mcp::http::{McpHttpClient, McpHttpServer, Protocol};
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const WAIT: Duration = Duration::from_secs(10);

/// A self-signed certificate for `localhost`, and a server configuration that presents it
/// and offers `alpn`.
struct Cert {
    der: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Cert {
    fn new() -> Self {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        Cert {
            der: made.cert.der().clone(),
            key: made.signing_key.serialize_der(),
        }
    }

    fn acceptor(&self, alpn: &[&[u8]]) -> TlsAcceptor {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![self.der.clone()], key)
        .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsAcceptor::from(Arc::new(config))
    }

    /// Client settings that trust this certificate only.
    fn client_config(&self) -> Arc<rustls::ClientConfig> {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        Arc::new(tls_with_roots(roots).unwrap())
    }
}

/// What the TLS servers saw: the protocol of each connection that completed a handshake.
type Seen = Arc<Mutex<Vec<Protocol>>>;

/// Accepts TLS connections on a loopback port and hands each to `serve`; returns the port.
async fn tls_server<F, Fut>(acceptor: TlsAcceptor, serve: F) -> (u16, Seen)
where
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>, Protocol) -> Fut
        + Send
        + Sync
        + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let s = Arc::clone(&seen);
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen, serve) = (acceptor.clone(), Arc::clone(&s), Arc::clone(&serve));
            tokio::spawn(async move {
                // A handshake the client gives up on (an untrusted certificate) ends here.
                let Ok(Ok(tls)) = tokio::time::timeout(WAIT, acceptor.accept(tcp)).await else {
                    return;
                };
                let protocol = Protocol::from_alpn(tls.get_ref().1.alpn_protocol());
                seen.lock().unwrap().push(protocol);
                serve(tls, protocol).await;
            });
        }
    });
    (port, seen)
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
            .tls_config(cert.client_config())
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
