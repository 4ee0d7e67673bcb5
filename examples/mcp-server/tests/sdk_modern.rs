//! The official MCP SDKs at protocol revision 2026-07-28 against the `mcp-server` example,
//! over stdio (`mcp-server --fixtures`) and Streamable HTTP (`mcp-server --http`): the Python
//! SDK (PyPI `mcp` 2.3.0, `mcp.Client`) and the TypeScript SDK (npm
//! `@modelcontextprotocol/client` 2.4.0), as installed by `.ci/install/mcp-interop.sh`. Each
//! script (in `tests/interop/`) has the SDK discover the server (`server/discover`), list
//! and call tools, answer an elicitation through an `InputRequiredResult` round, read
//! resources (one through the URI template), get a prompt, and run a task of the tasks
//! extension to completion and cancel another; it raises on the first failed check.
//!
//! Neither SDK ships the tasks extension. The Python SDK has a client extension API
//! (`mcp.client.extension`), on which the script writes it (claim `resultType: "task"`, poll
//! `tasks/get`, send `tasks/cancel`). The TypeScript SDK refuses a `resultType: "task"`
//! answer in its decoder whatever the caller asks; its script checks that refusal (the
//! server did answer with a task) and prints a `LIMITATION:` line.
//!
//! Skips with a visible `SKIPPED:` line when an SDK is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_passed, interop_dir, python_with, run_bounded, script, HttpServer};

const SERVER: &str = env!("CARGO_BIN_EXE_mcp-server");

fn python(transport: &str, target: &str) {
    let Some(python) = python_with("mcp.client.extension, mcp_types") else {
        return;
    };
    let out = run_bounded(
        Command::new(&python)
            .arg(script("python_modern_client.py"))
            .args([transport, target])
            .env("PYTHONWARNINGS", "ignore"),
        Duration::from_secs(90),
    );
    assert_passed(&out, "python-sdk-2026: all checks passed");
}

#[test]
fn python_sdk_2026_07_28_over_stdio() {
    python("stdio", SERVER);
}

#[test]
fn python_sdk_2026_07_28_over_streamable_http() {
    let server = HttpServer::start(&[]);
    python("http", &server.url);
}

/// The TypeScript SDK's 2.x client package, beside the 1.x `@modelcontextprotocol/sdk` the
/// older tests use.
fn typescript(transport: &str, target: &str) {
    let node_dir = interop_dir().join("node-client");
    let sdk = node_dir.join("node_modules/@modelcontextprotocol/client/package.json");
    if !sdk.exists() {
        rpcwire_tests::skip(
            "the TypeScript MCP SDK's client (@modelcontextprotocol/client) is not installed (.ci/install/mcp-interop.sh)",
        );
        return;
    }
    let out = run_bounded(
        Command::new("node")
            .arg(script("ts_modern_client.cjs"))
            .arg(&node_dir)
            .args([transport, target]),
        Duration::from_secs(90),
    );
    assert_passed(&out, "ts-sdk-2026: all checks passed");
}

#[test]
fn typescript_sdk_2026_07_28_over_stdio() {
    typescript("stdio", SERVER);
}

#[test]
fn typescript_sdk_2026_07_28_over_streamable_http() {
    let server = HttpServer::start(&[]);
    typescript("http", &server.url);
}
