//! Third-party WebSocket clients against `rpcwire serve --ws`: Python's `websockets` and
//! Node's `ws` (installed by `.ci/install/ws-interop.sh`). Each runs the same checks
//! (cli/tests/ws/interop.py, interop.js): every example of the JSON-RPC specification, the
//! server calling the client, a notification to every client, fragmented messages, close 1009
//! / 1007 / 1003, and a client that stops reading closed after the send timeout while another
//! is served.
//!
//! Skips with a visible `SKIPPED:` line when the tools are missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{bounded, serve_ws};
use tokio::process::Command;

/// The largest message the server takes in these tests.
const MAX_MESSAGE: usize = 65_536;
/// The server's send timeout in these tests (seconds).
const SEND_TIMEOUT: &str = "1";

/// Where the install script put the clients.
pub fn interop_dir() -> PathBuf {
    match std::env::var_os("RPCWIRE_INTEROP") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/rpcwire-interop/ws"),
    }
}

/// The specification's examples as JSON, in a file for the scripts.
fn examples_file(tag: &str) -> PathBuf {
    let examples: Vec<serde_json::Value> = rpcwire_demo::spec::SPEC_EXAMPLES
        .iter()
        .map(|e| serde_json::json!({"name": e.name, "request": e.request, "response": e.response}))
        .collect();
    let path = std::env::temp_dir().join(format!(
        "rpcwire-ws-examples-{tag}-{}.json",
        std::process::id()
    ));
    std::fs::write(&path, serde_json::to_vec(&examples).unwrap()).unwrap();
    path
}

async fn run_client(mut cmd: Command, tag: &str) {
    let (mut server, url) = serve_ws(&[
        "--max-frame",
        &MAX_MESSAGE.to_string(),
        "--send-timeout",
        SEND_TIMEOUT,
    ])
    .await;
    let examples = examples_file(tag);
    let out = bounded(
        cmd.arg(&url)
            .arg(&examples)
            .arg(MAX_MESSAGE.to_string())
            .arg(SEND_TIMEOUT)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let _ = std::fs::remove_file(&examples);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{tag} client:\n{stdout}");
    assert!(
        out.status.success(),
        "{tag} client failed:\n{stdout}\n{stderr}"
    );
    for check in [
        "specification examples",
        "called the client",
        "every connected client",
        "reassembled",
        "1009",
        "1007",
        "1003",
        "stopped reading",
    ] {
        assert!(
            stdout.contains(check),
            "{tag}: no `{check}` line in\n{stdout}"
        );
    }
    // The server survived all of it.
    assert!(server.try_wait().unwrap().is_none(), "the server exited");
}

#[tokio::test]
async fn python_websockets_client() {
    let python = interop_dir().join("venv/bin/python");
    if !python.exists() {
        rpcwire_tests::skip("Python websockets not installed (run .ci/install/ws-interop.sh)");
        return;
    }
    let mut cmd = Command::new(python);
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/interop.py"));
    run_client(cmd, "python").await;
}

#[tokio::test]
async fn node_ws_client() {
    let modules = interop_dir().join("node_modules");
    let node_ok = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !modules.join("ws").exists() || !node_ok {
        rpcwire_tests::skip("node or its ws package not installed (run .ci/install/ws-interop.sh)");
        return;
    }
    let mut cmd = Command::new("node");
    cmd.env("NODE_PATH", &modules)
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/interop.js"));
    run_client(cmd, "node").await;
}
