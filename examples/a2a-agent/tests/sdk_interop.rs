//! The official A2A SDKs as clients of the example agent, and raw HTTP cases with httpx.
//! The SDKs come from `.ci/install/a2a-interop.sh`; without them the tests print `SKIPPED:`
//! (and fail under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use rpcwire_tests::interop::{assert_passed, node_modules, run_bounded, venv_python, Server};

const AGENT: &str = env!("CARGO_BIN_EXE_a2a-agent");
const LIMIT: Duration = Duration::from_secs(90);

fn script(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

fn agent(extra: &[&str]) -> Server {
    Server::start(
        Command::new(AGENT)
            .args(["--http", "127.0.0.1:0"])
            .args(extra),
        "listening ",
        Duration::from_secs(20),
    )
}

#[test]
fn python_sdk_client_against_the_example_agent() {
    let Some(python) = venv_python("a2a", "a2a.client") else {
        return;
    };
    let server = agent(&["--step-ms", "40"]);
    let out = run_bounded(
        Command::new(python)
            .arg(script("py/sdk_client.py"))
            .arg(&server.address),
        LIMIT,
    );
    assert_passed(&out, "all ok");
    // The cancelled count stopped: its turn was dropped mid-way.
    let log = server.stderr();
    assert!(log.contains("count stopped at"), "agent stderr:\n{log}");
}

#[test]
fn javascript_sdk_client_against_the_example_agent() {
    let Some(node_dir) = node_modules("a2a", "@a2a-js/sdk") else {
        return;
    };
    let server = agent(&["--step-ms", "40"]);
    let out = run_bounded(
        Command::new("node")
            .arg(script("js/sdk_client.mjs"))
            .arg(&node_dir)
            .arg(&server.address),
        LIMIT,
    );
    assert_passed(&out, "all ok");
    let log = server.stderr();
    assert!(log.contains("count stopped at"), "agent stderr:\n{log}");
}

#[test]
fn raw_http_cases_against_the_example_agent() {
    let Some(python) = venv_python("a2a", "httpx") else {
        return;
    };
    let server = agent(&["--step-ms", "50", "--max-body", "65536"]);
    let out = run_bounded(
        Command::new(python)
            .arg(script("py/raw_http.py"))
            .arg(&server.address)
            .arg("65536"),
        LIMIT,
    );
    assert_passed(&out, "all ok");
}

#[test]
fn python_sdk_v03_transport_against_the_compatibility_mode() {
    let Some(python) = venv_python("a2a", "a2a.compat.v0_3") else {
        return;
    };
    let server = agent(&["--step-ms", "40", "--compat-v03"]);
    let out = run_bounded(
        Command::new(python)
            .arg(script("py/sdk_client_v03.py"))
            .arg(&server.address),
        LIMIT,
    );
    assert_passed(&out, "all ok");
}

#[test]
fn python_sdk_push_notifications_reach_a_webhook_with_the_configs_credentials() {
    let Some(python) = venv_python("a2a", "a2a.client") else {
        return;
    };
    let server = agent(&["--webhook-allow", "127.0.0.1"]);
    let out = run_bounded(
        Command::new(python)
            .arg(script("py/sdk_push.py"))
            .arg(&server.address),
        LIMIT,
    );
    assert_passed(&out, "all ok");
}

#[test]
fn javascript_sdk_push_notifications_reach_a_webhook_with_the_configs_credentials() {
    let Some(node_dir) = node_modules("a2a", "@a2a-js/sdk") else {
        return;
    };
    let server = agent(&["--webhook-allow", "127.0.0.1"]);
    let out = run_bounded(
        Command::new("node")
            .arg(script("js/sdk_push.mjs"))
            .arg(&node_dir)
            .arg(&server.address),
        LIMIT,
    );
    assert_passed(&out, "all ok");
}
