//! What a new user's first trial tripped on, each checked through the `rpcwire` binary: a
//! closed stdout under `serve`, the HTTP connect error, params over `--max-frame`, and a
//! timeout that cancels the server's handler under the LSP and MCP profiles.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bin, bounded, rpcwire};

/// `rpcwire serve | head -c1`: the same quiet exit 141 as `call` and `demo`.
#[test]
fn serve_into_a_reader_that_stops_ends_quietly_with_141() {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let call = b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n";
    stdin.write_all(call).unwrap();
    let mut one = [0u8; 1];
    stdout.read_exact(&mut one).unwrap();
    // The reader goes away after one byte, like `head -c1`; the server has more to say.
    drop(stdout);
    let started = Instant::now();
    let status = loop {
        let _ = stdin.write_all(call);
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "serve did not end"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(141), "stderr: {stderr}");
    assert!(!stderr.contains("i/o error"), "stderr: {stderr}");
}

/// Nothing listens: a sentence, not the client's JSON error object.
#[tokio::test]
async fn an_http_connect_error_is_a_sentence() {
    // A port just freed: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/rpc");
    let out = bounded(rpcwire(&[
        "call",
        "--http",
        &url,
        "--timeout",
        "5",
        "get_data",
    ]))
    .await;
    assert_eq!(out.code, Some(3), "{out:?}");
    assert!(
        out.stderr
            .starts_with(&format!("rpcwire: cannot reach {url}: ")),
        "{out:?}"
    );
    assert!(!out.stderr.contains("\"status\""), "{out:?}");
    assert!(!out.stderr.contains('{'), "{out:?}");
}

/// Params larger than the largest frame: the message names `--max-frame`.
#[tokio::test]
async fn params_over_the_frame_limit_name_max_frame() {
    let (_server, addr) = common::serve_tcp(&[]).await;
    let big = format!("[\"{}\"]", "x".repeat(4000));
    let addr = addr.to_string();
    let args = ["call", "--tcp", &addr, "--max-frame", "2048", "echo", &big];
    let out = bounded(rpcwire(&args)).await;
    assert_eq!(out.code, Some(2), "{out:?}");
    assert!(out.stderr.contains("--max-frame 2048"), "{out:?}");
    assert!(out.stderr.contains("raise --max-frame"), "{out:?}");
}

/// Under `--profile lsp` and `--profile mcp` a call that times out cancels the server's
/// handler: the server (its log on the call's stderr, as a child of `--exec`) reports the
/// `sleep` cancelled. Plain JSON-RPC has no cancel notification: the handler runs on.
#[tokio::test]
async fn a_timeout_cancels_the_handler_under_the_lsp_and_mcp_profiles() {
    for (profile, cancels) in [("lsp", true), ("mcp", true), ("plain", false)] {
        let server = format!("{} -v serve --stdio --profile {profile}", bin());
        let args = [
            "call",
            "--exec",
            &server,
            "--profile",
            profile,
            "--timeout",
            "1",
            "sleep",
            "{\"ms\": 600000}",
        ];
        let out = bounded(rpcwire(&args)).await;
        assert_eq!(out.code, Some(4), "{profile}: {out:?}");
        assert_eq!(
            out.stderr.contains("sleep cancelled by the client"),
            cancels,
            "{profile}: {out:?}"
        );
    }
}
