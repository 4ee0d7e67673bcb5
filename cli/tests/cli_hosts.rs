//! `rpcwire serve --http --allowed-host NAME --allowed-origin ORIGIN`: the names and origins
//! given are accepted beside the loopback ones, every other `Host` or `Origin` is still
//! refused with 403 (DNS-rebinding protection), and a malformed origin is a usage error.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, rpcwire, serve_http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The status of a JSON-RPC POST to `url` with these `Host` and `Origin` headers.
async fn status(url: &str, host: &str, origin: Option<&str>) -> u16 {
    let addr = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let request = format!(
        "POST /rpc HTTP/1.1\r\nHost: {host}\r\n{origin}Content-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    bounded(stream.read_to_string(&mut answer)).await.unwrap();
    answer[9..12].parse().unwrap()
}

#[tokio::test]
async fn named_hosts_and_origins_beside_the_loopback_ones() {
    let (mut server, url) = serve_http(&[
        "--allowed-host",
        "api.example.com",
        "--allowed-origin",
        "https://app.example.com",
        "--allowed-origin",
        "http://dev.example.com:5173",
    ])
    .await;
    let app = Some("https://app.example.com");
    assert_eq!(status(&url, "127.0.0.1", None).await, 200);
    assert_eq!(status(&url, "api.example.com", None).await, 200);
    assert_eq!(status(&url, "API.example.com:8443", app).await, 200);
    assert_eq!(
        status(&url, "api.example.com", Some("http://dev.example.com:5173")).await,
        200
    );
    // An origin on an accepted host name is accepted, as before.
    assert_eq!(
        status(&url, "api.example.com", Some("https://api.example.com")).await,
        200
    );
    // Still refused: other hosts (an accepted origin is not a host), other origins, another
    // scheme or port of the origin.
    assert_eq!(status(&url, "app.example.com", None).await, 403);
    assert_eq!(status(&url, "evil.example", None).await, 403);
    assert_eq!(
        status(&url, "api.example.com", Some("https://evil.example")).await,
        403
    );
    assert_eq!(
        status(&url, "api.example.com", Some("http://app.example.com")).await,
        403
    );
    assert_eq!(
        status(&url, "api.example.com", Some("http://dev.example.com")).await,
        403
    );
    assert_eq!(
        status(
            &url,
            "api.example.com",
            Some("https://app.example.com:8443")
        )
        .await,
        403
    );
    server.kill().await.unwrap();
}

#[tokio::test]
async fn malformed_names_are_usage_errors() {
    for args in [
        ["--allowed-origin", "app.example.com"],
        ["--allowed-host", "https://api.example.com"],
    ] {
        let mut all = vec!["serve", "--http", "127.0.0.1:0"];
        all.extend(args);
        let out = rpcwire(&all).await;
        assert_eq!(out.code, Some(2), "{args:?}: {out:?}");
    }
}

/// The head (lower case) of an answer to `request` (a whole HTTP/1.1 request, `Connection:
/// close`) sent to `url`'s address.
async fn answer(url: &str, request: String) -> String {
    let addr = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = String::new();
    bounded(stream.read_to_string(&mut answer)).await.unwrap();
    answer.to_ascii_lowercase()
}

#[tokio::test]
async fn cors_origin_answers_preflights_and_cross_origin_calls() {
    let (mut server, url) = serve_http(&["--cors-origin", "https://app.example.com"]).await;
    let preflight = answer(
        &url,
        "OPTIONS /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\n\
         Access-Control-Request-Method: POST\r\nAccess-Control-Request-Headers: content-type\r\n\
         Connection: close\r\n\r\n"
            .to_owned(),
    )
    .await;
    assert!(preflight.starts_with("http/1.1 200"), "{preflight}");
    assert!(
        preflight.contains("access-control-allow-origin: https://app.example.com"),
        "{preflight}"
    );
    assert!(
        preflight.contains("access-control-allow-headers:"),
        "{preflight}"
    );
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
    let call = answer(
        &url,
        format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://app.example.com\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(call.starts_with("http/1.1 200"), "{call}");
    assert!(
        call.contains("access-control-allow-origin: https://app.example.com"),
        "{call}"
    );
    assert!(
        call.ends_with(r#"{"jsonrpc":"2.0","result":19,"id":1}"#),
        "{call}"
    );
    // Another origin: no CORS headers, and refused by the Origin check.
    let other = answer(
        &url,
        format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: https://evil.example\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
    .await;
    assert!(other.starts_with("http/1.1 403"), "{other}");
    assert!(!other.contains("access-control-allow-origin"), "{other}");
    server.kill().await.unwrap();
}
