//! The official ACP SDKs as the editor, against the example agent: initialize, a session,
//! prompts with updates in order, permission answered allow and reject, a file read served by
//! the client, `session/cancel` during the long task, `$/cancel_request` answered -32800.
//! The SDKs come from `.ci/install/acp-interop.sh`; without them the tests print `SKIPPED:`
//! (and fail under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod common;

use std::process::Command;
use std::time::Duration;

use common::{assert_passed, node_sdk, python_sdk, run_bounded, script};

const AGENT: &str = env!("CARGO_BIN_EXE_acp-agent");

#[test]
fn typescript_sdk_session_against_the_example_agent() {
    let Some(node_dir) = node_sdk() else { return };
    let out = run_bounded(
        Command::new("node")
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
    let out = run_bounded(
        Command::new(python).arg(script("python_client.py")).args([
            AGENT,
            "--step-ms",
            "100",
            "--log",
            "warn",
        ]),
        Duration::from_secs(60),
    );
    assert_passed(&out, "python-sdk: all checks passed");
}
