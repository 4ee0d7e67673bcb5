//! The official MCP SDKs against the `mcp-server` example over stdio: the Python SDK (PyPI
//! `mcp`: `stdio_client` + `ClientSession`) and the TypeScript SDK (npm
//! `@modelcontextprotocol/sdk`: `Client` + `StdioClientTransport`), as installed by
//! `.ci/install/mcp-interop.sh`. Each script (in `tests/interop/`) initializes, pings, lists
//! the tools, calls each one (progress received, the failing tool's `isError` result seen),
//! cancels the long task (its cancellation log arrives, progress ends, the session goes on)
//! and checks `logging/setLevel`; it raises on the first failed check.
//!
//! Skips with a visible `SKIPPED:` line when an SDK is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::{Command, Stdio};
use std::time::Duration;

use common::{assert_passed, interop_dir, python_with, run_bounded, script};

#[test]
fn python_sdk_session_against_the_example_server() {
    let Some(python) = python_with("mcp, anyio") else {
        return;
    };
    let out = run_bounded(
        Command::new(&python)
            .arg(script("python_client.py"))
            .arg(env!("CARGO_BIN_EXE_mcp-server"))
            .env("PYTHONWARNINGS", "ignore"),
        Duration::from_secs(60),
    );
    assert_passed(&out, "python-sdk: all checks passed");
}

#[test]
fn typescript_sdk_session_against_the_example_server() {
    let node_dir = interop_dir().join("node");
    let sdk = node_dir.join("node_modules/@modelcontextprotocol/sdk/package.json");
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !node || !sdk.exists() {
        rpcwire_tests::skip(
            "node or the TypeScript MCP SDK is not installed (.ci/install/mcp-interop.sh)",
        );
        return;
    }
    let out = run_bounded(
        Command::new("node")
            .arg(script("ts_client.cjs"))
            .arg(&node_dir)
            .arg(env!("CARGO_BIN_EXE_mcp-server")),
        Duration::from_secs(60),
    );
    assert_passed(&out, "ts-sdk: all checks passed");
}
