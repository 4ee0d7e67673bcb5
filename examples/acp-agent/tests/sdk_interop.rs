//! The official ACP SDKs as the editor, against the example agent: initialize, a session,
//! prompts with updates in order, permission answered allow and reject, a file read served by
//! the client, `session/cancel` during the long task, `$/cancel_request` answered -32800; and
//! the rest of the stable v1 surface: modes, a config option, an elicitation round trip, a
//! command in the client's terminal, sessions listed, resumed, closed and deleted,
//! authenticate and logout, an extension method, and the tools of the project's MCP example
//! server given in `session/new` (over stdio to the TypeScript SDK's session, over Streamable
//! HTTP to the Python SDK's).
//! The SDKs come from `.ci/install/acp-interop.sh`; without them the tests print `SKIPPED:`
//! (and fail under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_passed, mcp_server, node_sdk, python_sdk, run_bounded, script, HttpMcp};

const AGENT: &str = env!("CARGO_BIN_EXE_acp-agent");

#[test]
fn typescript_sdk_session_against_the_example_agent() {
    let Some(node_dir) = node_sdk() else { return };
    let Some(mcp) = mcp_server(AGENT) else { return };
    let out = run_bounded(
        Command::new("node")
            .env("MCP_SERVER", mcp)
            .arg(script("ts_client.mjs"))
            .arg(&node_dir)
            .args([AGENT, "--step-ms", "100", "--log", "warn"]),
        Duration::from_secs(60),
    );
    assert_passed(&out, "ts-sdk: all checks passed");
}

#[test]
fn python_sdk_session_against_the_example_agent() {
    let Some(python) = python_sdk() else { return };
    let Some(mcp) = mcp_server(AGENT) else { return };
    let http = HttpMcp::start(&mcp);
    let out = run_bounded(
        Command::new(python)
            .env("MCP_URL", &http.url)
            .arg(script("python_client.py"))
            .args([AGENT, "--step-ms", "100", "--log", "warn"]),
        Duration::from_secs(60),
    );
    assert_passed(&out, "python-sdk: all checks passed");
}
