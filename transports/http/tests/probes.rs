//! The liveness and readiness probes (`HttpServer::liveness`, `HttpServer::readiness`) of a
//! server whose JWT authenticator takes its keys from a JWKS URL: at start-up (the key set
//! never fetched: not ready), in normal service (fetched: ready), and during the drain (every
//! request, the probes included, answered 503 with `Connection: close`).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_http::jwks::{JwksKeys, JwksUrl};
use rpcwire_http::HttpServer;
use rpcwire_tokio::jwt::JwtAuthenticator;
use rpcwire_tokio::{Builder, Router, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// A JWKS server on 127.0.0.1 answering `status` (with an empty key set when 200).
async fn jwks_server(status: Arc<AtomicU16>) -> Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let url = format!("http://{}/jwks.json", listener.local_addr()?);
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let status = status.load(Ordering::SeqCst);
            tokio::spawn(async move {
                let mut buf = [0u8; 2048];
                let _ = s.read(&mut buf).await;
                let body = r#"{"keys":[]}"#;
                let head = format!(
                    "HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n\
                     Content-Length: {}\r\nConnection: close\r\n\r\n",
                    body.len()
                );
                let _ = s.write_all(head.as_bytes()).await;
                let _ = s.write_all(body.as_bytes()).await;
            });
        }
    });
    Ok(url)
}

/// `GET path` on `stream` (kept alive): the status and the `Connection` header.
async fn get(stream: &mut TcpStream, path: &str) -> Result<(u16, Option<String>)> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    // Heads and short bodies: read until the body its length announces is whole.
    loop {
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await??;
        answer.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&answer).to_string();
        if let Some(end) = text.find("\r\n\r\n") {
            let length: usize = text
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse().unwrap())
                })
                .unwrap_or(0);
            if text.len() >= end + 4 + length || n == 0 {
                let status = text[9..12].parse()?;
                let connection = text.lines().find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("connection:")
                        .map(|v| v.trim().to_owned())
                });
                return Ok((status, connection));
            }
        }
        if n == 0 {
            return Err("closed before an answer".into());
        }
    }
}

#[tokio::test]
async fn probes_at_start_up_in_service_and_during_the_drain() -> Result {
    let status = Arc::new(AtomicU16::new(503));
    let url = jwks_server(Arc::clone(&status)).await?;
    let keys = JwksKeys::builder(JwksUrl::new(&url)?)
        .min_interval(Duration::from_millis(10))
        .build();
    let authenticator = JwtAuthenticator::new(keys)
        .issuer("https://issuer.example")
        .audience("rpcwire");
    let shutdown = Shutdown::new(Duration::from_secs(5));
    let builder = Builder::new()
        .router(Router::new())
        .map_service(|s| s.authenticator(authenticator).shutdown(&shutdown));
    let service = HttpServer::new(builder)
        .path("/rpc")
        .liveness("/healthz")
        .readiness("/readyz")
        .build();
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(rpcwire_http::serve(listener, service));
    let mut probe = TcpStream::connect(addr).await?;

    // Start-up: the key set cannot be fetched yet.
    assert_eq!(get(&mut probe, "/healthz").await?.0, 200);
    assert_eq!(get(&mut probe, "/readyz").await?.0, 503);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(&mut probe, "/readyz").await?.0, 503);
    // The endpoint itself still asks for a token (the probes come before every rule).
    assert_eq!(get(&mut probe, "/rpc").await?.0, 401);

    // Normal service: fetched once (past the least interval between fetches), ready from
    // then on.
    status.store(200, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(get(&mut probe, "/readyz").await?.0, 200);
    status.store(503, Ordering::SeqCst);
    assert_eq!(get(&mut probe, "/readyz").await?.0, 200, "the held key set");
    assert_eq!(get(&mut probe, "/healthz").await?.0, 200);

    // The drain: the listener closes; on the open connection, every request is refused.
    let mut other = TcpStream::connect(addr).await?;
    shutdown.trigger();
    tokio::time::timeout(Duration::from_secs(5), server).await??;
    assert!(TcpStream::connect(addr).await.is_err(), "not accepting");
    assert_eq!(
        get(&mut probe, "/readyz").await.expect("probe"),
        (503, Some("close".to_owned()))
    );
    assert_eq!(get(&mut other, "/healthz").await.expect("other").0, 503);
    Ok(())
}
