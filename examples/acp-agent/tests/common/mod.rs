//! What the SDK tests share: where `.ci/install/acp-interop.sh` puts the SDKs, the client
//! scripts, and bounded runs of third-party programs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where `.ci/install/acp-interop.sh` puts the SDKs
/// (`$RPCWIRE_INTEROP_DIR/acp`, else `~/.cache/rpcwire-interop/acp`).
pub fn interop_dir() -> PathBuf {
    rpcwire_tests::interop::interop_dir("acp")
}

/// The venv's Python when it has the ACP SDK; otherwise `None` after a visible skip line (a
/// failure under `CI=true`).
pub fn python_sdk() -> Option<PathBuf> {
    let python = interop_dir().join("venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import acp"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(python)
    } else {
        rpcwire_tests::skip("the Python ACP SDK is not installed (.ci/install/acp-interop.sh)");
        None
    }
}

/// The folder whose `node_modules/` has the TypeScript SDK, when it and `node` are there;
/// otherwise `None` after a visible skip line (a failure under `CI=true`).
pub fn node_sdk() -> Option<PathBuf> {
    let node_dir = interop_dir().join("node");
    let sdk = node_dir.join("node_modules/@agentclientprotocol/sdk/package.json");
    let node = Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node && sdk.exists() {
        Some(node_dir)
    } else {
        rpcwire_tests::skip(
            "node or the TypeScript ACP SDK is not installed (.ci/install/acp-interop.sh)",
        );
        None
    }
}

/// A script in `tests/interop/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

// Not every test binary uses both.
#[allow(unused_imports)]
pub use rpcwire_tests::interop::{assert_passed, run_bounded};
