//! Helpers shared by the tokio `McpServer` test binaries.

use std::time::Duration;

use rpcwire_mcp::tokio::McpServer;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

/// Raw lines to a server, and the answers (one line each for `expect` answers).
pub async fn raw(server: McpServer, lines: &[&str], expect: usize) -> Vec<Value> {
    let (a, b) = tokio::io::duplex(64 << 10);
    let _served = server.builder().run_io(a);
    let (r, mut w) = tokio::io::split(b);
    for line in lines {
        w.write_all(line.as_bytes()).await.unwrap();
        w.write_all(b"\n").await.unwrap();
    }
    let mut reader = BufReader::new(r).lines();
    let mut out = Vec::new();
    for _ in 0..expect {
        let line = tokio::time::timeout(Duration::from_secs(5), reader.next_line())
            .await
            .expect("an answer within 5 s")
            .unwrap()
            .unwrap();
        out.push(serde_json::from_str(&line).unwrap());
    }
    out
}

pub const INIT: &str = r#"{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}"#;
