//! A refused request does not cost the keep-alive connection it came on: its body is read past
//! (also when it comes after the head) and the request sent right behind it on the same
//! connection is answered (the MCP Streamable HTTP server, as `rpcwire-http`'s own
//! `refusals` test does for the JSON-RPC server); a body too large to read past is refused
//! with `connection: close`, so that the client knows not to send more on it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::time::Duration;

use rpcwire_mcp::http::McpHttpServer;
use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const WAIT: Duration = Duration::from_secs(10);

fn request(path: &str, content_type: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: {content_type}\r\nAccept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// One answer: (head, body), read as its `content-length` says.
async fn answer(stream: &mut tokio::net::TcpStream, buf: &mut Vec<u8>) -> (String, String) {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |v| v.trim().parse().unwrap());
            if buf.len() >= end + 4 + len {
                let body = String::from_utf8_lossy(&buf[end + 4..end + 4 + len]).into_owned();
                buf.drain(..end + 4 + len);
                return (head, body);
            }
        }
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(WAIT, stream.read(&mut chunk))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(n > 0, "the connection closed; read so far: {buf:?}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Sends `refused` and `good` on one connection, the refused request's body only a moment
/// after its head (as a client's body often comes), then `good` at once; returns both answers.
async fn back_to_back(addr: SocketAddr, refused: &str, good: &str) -> [(String, String); 2] {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let split = refused.find("\r\n\r\n").unwrap() + 4;
    stream
        .write_all(&refused.as_bytes()[..split])
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    stream
        .write_all(format!("{}{good}", &refused[split..]).as_bytes())
        .await
        .unwrap();
    let mut buf = Vec::new();
    let first = answer(&mut stream, &mut buf).await;
    let second = answer(&mut stream, &mut buf).await;
    [first, second]
}

async fn listen() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// Each refused request (with its status), then `good`, on one connection: the refusal keeps
/// the connection (no `connection: close`) and `good` is answered 200 with a body `answered`
/// accepts. Then `over`, a body over the limit by its declared length: 413, not read, and the
/// client told to close.
async fn refusals_keep_the_connection(
    addr: SocketAddr,
    cases: &[(String, &str)],
    good: &str,
    answered: impl Fn(&str) -> bool,
    over: &str,
) {
    for (refused, status) in cases {
        let [first, second] = back_to_back(addr, refused, good).await;
        assert!(
            first.0.starts_with(&format!("http/1.1 {status}")),
            "{first:?}"
        );
        assert!(!first.0.contains("connection: close"), "{first:?}");
        assert!(second.0.starts_with("http/1.1 200"), "{second:?}");
        assert!(answered(&second.1), "{second:?}");
    }
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(over.as_bytes()).await.unwrap();
    let first = answer(&mut stream, &mut Vec::new()).await;
    assert!(first.0.starts_with("http/1.1 413"), "{first:?}");
    assert!(first.0.contains("connection: close"), "{first:?}");
}

#[tokio::test]
async fn mcp_server_reads_past_refused_bodies() {
    let tools = McpServer::new("refusals", "1.0").tool_with_schema(
        "echo",
        "Echoes its arguments.",
        serde_json::json!({"type": "object"}),
        |_: ToolContext, v: serde_json::Value| async move { Ok::<_, ToolError>(v.to_string()) },
    );
    let service = McpHttpServer::new(tools).max_body(2048).build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_mcp::http::serve(listener, service));
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    let cases = [
        (request("/mcp", "text/plain", init), "415"),
        (request("/elsewhere", "application/json", init), "404"),
        (
            request("/mcp", "application/json", init).replace(
                "Accept: application/json, text/event-stream",
                "Accept: text/html",
            ),
            "406",
        ),
    ];
    refusals_keep_the_connection(
        addr,
        &cases,
        &request("/mcp", "application/json", init),
        |body| body.contains(r#""protocolVersion":"2025-11-25""#),
        &request("/mcp", "application/json", &" ".repeat(2049)),
    )
    .await;
}
