//! The official MCP SDKs' Streamable HTTP clients against `mcp-server --http`: the Python SDK
//! (PyPI `mcp`: `streamable_http_client` + `ClientSession`) and the TypeScript SDK (npm
//! `@modelcontextprotocol/sdk`: `Client` + `StreamableHTTPClientTransport`), as installed by
//! `.ci/install/mcp-interop.sh`. Each script (in `tests/interop/`) initializes, pings, lists
//! and calls tools (progress and log messages over SSE), cancels a long task (the server
//! stops it and does not answer it, as MCP asks; the session goes on), ends the session with
//! DELETE (then a POST on it gets 404), sees a call on a session deleted under it fail with
//! 404, and initializes a new session; it raises on the first failed check.
//!
//! Skips with a visible `SKIPPED:` line when an SDK is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_passed, interop_dir, python_with, run_bounded, script, HttpServer};

#[test]
fn python_sdk_streamable_http() {
    let Some(python) = python_with("mcp.client.streamable_http, httpx2") else {
        return;
    };
    let server = HttpServer::start(&[]);
    let out = run_bounded(
        Command::new(&python)
            .arg(script("python_http_client.py"))
            .arg(&server.url),
        Duration::from_secs(90),
    );
    assert_passed(&out, "python-sdk-http: all checks passed");
}

#[test]
fn typescript_sdk_streamable_http() {
    let node_dir = interop_dir().join("node");
    if !node_dir
        .join("node_modules/@modelcontextprotocol/sdk/package.json")
        .exists()
    {
        rpcwire_tests::skip("the TypeScript MCP SDK is not installed (.ci/install/mcp-interop.sh)");
        return;
    }
    let server = HttpServer::start(&[]);
    let out = run_bounded(
        Command::new("node")
            .arg(script("ts_http_client.cjs"))
            .arg(&node_dir)
            .arg(&server.url),
        Duration::from_secs(90),
    );
    assert_passed(&out, "ts-sdk-http: all checks passed");
}
