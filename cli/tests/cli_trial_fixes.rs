//! What a new user's first trial tripped on, each checked through the `rpcwire` binary: the
//! HTTP connect error, params over `--max-frame`, and a timeout that cancels the server's
//! handler under the LSP and MCP profiles (a closed stdout under `serve`: cli_stdout.rs).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bin, bounded, rpcwire};

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
