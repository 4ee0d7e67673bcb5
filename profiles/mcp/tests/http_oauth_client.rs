//! The Streamable HTTP client's OAuth at the edges the conformance suite does not reach
//! (`examples/mcp-client/tests/conformance_client.rs` runs the flows against the suite's
//! servers): a metadata document of exactly `OAuthConfig::max_response` bytes is read, one
//! byte more is as good as none; a metadata server that never answers is given up on after
//! `OAuthConfig::timeout`; an `Authorizer` is not called before the metadata checks pass. The
//! server is a few lines of HTTP/1.1 on loopback.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rpcwire_mcp::http::{Authorizer, McpHttpClient, McpHttpError, OAuth, OAuthConfig, OAuthError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// Counts its calls and never authorizes.
struct Counting(Arc<AtomicUsize>);

impl Authorizer for Counting {
    fn authorize(
        &self,
        _: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, OAuthError>> + Send + '_>> {
        self.0.fetch_add(1, Ordering::SeqCst);
        Box::pin(async { Err(OAuthError::Authorizer("no user here".into())) })
    }
}

/// A server whose `/mcp` answers 401 pointing at `/prm`, whose `/prm` is `prm(base URL)`
/// (JSON), and where everything else is 404; its base URL and `/prm`'s length. Stops when
/// the test's runtime ends.
async fn server(prm: impl Fn(&str) -> String) -> (String, usize) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let prm = prm(&base);
    let length = prm.len();
    let hint = format!("{base}/prm");
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            let prm = prm.clone();
            let hint = hint.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 16 << 10 {
                    if stream.read(&mut byte).await.unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                let head = String::from_utf8_lossy(&head).to_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .map(|v| v.trim().parse().unwrap())
                    .unwrap_or(0);
                let mut body = vec![0u8; length];
                stream.read_exact(&mut body).await.unwrap();
                let path = head.split(' ').nth(1).unwrap_or("").to_owned();
                let response = match path.as_str() {
                    "/mcp" => format!(
                        "HTTP/1.1 401 Unauthorized\r\nwww-authenticate: Bearer \
                         resource_metadata=\"{hint}\"\r\ncontent-length: 0\r\n\
                         connection: close\r\n\r\n"
                    ),
                    "/prm" if prm.is_empty() => {
                        // Never answers (until the client gives up and closes).
                        let _ = stream.read(&mut byte).await;
                        return;
                    }
                    "/prm" => format!(
                        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                         content-length: {}\r\nconnection: close\r\n\r\n{prm}",
                        prm.len()
                    ),
                    _ => "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                        .to_owned(),
                };
                let _ = stream.write_all(response.as_bytes()).await;
            });
        }
    });
    (base, length)
}

/// Connects with OAuth limited to `max_response`; the connection's error text.
async fn failure(base: &str, max_response: usize, authorized: &Arc<AtomicUsize>) -> String {
    let mut config = OAuthConfig::new("edge", "http://localhost:1/callback");
    config.max_response = max_response;
    config.timeout = std::time::Duration::from_millis(300);
    let oauth = OAuth::new(config, Counting(Arc::clone(authorized)));
    let e = McpHttpClient::builder(&format!("{base}/mcp"))
        .oauth(oauth)
        .connect()
        .await
        .unwrap_err();
    assert!(matches!(e, McpHttpError::Mcp(_)), "{e}");
    format!("{e:?}")
}

#[tokio::test]
async fn metadata_at_the_size_limit_is_read_and_one_byte_over_is_not() {
    // The resource is the server's; its issuer has no metadata (404).
    let (base, length) = server(|base| {
        let pad = "x".repeat(1000);
        format!(
            r#"{{"resource":"{base}/mcp","authorization_servers":["{base}/as"],"pad":"{pad}"}}"#
        )
    })
    .await;
    let authorized = Arc::new(AtomicUsize::new(0));

    let at_limit = failure(&base, length, &authorized).await;
    assert!(
        at_limit.contains("no authorization server metadata"),
        "{at_limit}"
    );
    let over = failure(&base, length - 1, &authorized).await;
    assert!(over.contains("no protected resource metadata"), "{over}");
    // Neither got as far as asking the user.
    assert_eq!(authorized.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_metadata_server_that_never_answers_is_given_up_on() {
    let (base, _) = server(|_| String::new()).await;
    let authorized = Arc::new(AtomicUsize::new(0));
    let started = std::time::Instant::now();
    let e = failure(&base, 1 << 10, &authorized).await;
    assert!(e.contains("no protected resource metadata"), "{e}");
    // Three candidate URLs at 300 ms each at most (the first never answers; the others 404).
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(authorized.load(Ordering::SeqCst), 0);
}
