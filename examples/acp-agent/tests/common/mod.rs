//! What the SDK tests share: where `.ci/install/acp-interop.sh` puts the SDKs, the client
//! scripts, and bounded runs of third-party programs.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs a command to its end, killing it (and failing) after `limit`.
pub fn run_bounded(cmd: &mut Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Drain both pipes on threads, so a chatty child never blocks.
    let mut stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let out_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stdout, &mut v);
        v
    });
    let err_t = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = std::io::Read::read_to_end(&mut stderr, &mut v);
        v
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "timed out after {limit:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out_t.join().unwrap_or_default()),
                String::from_utf8_lossy(&err_t.join().unwrap_or_default())
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out_t.join().unwrap_or_default(),
        stderr: err_t.join().unwrap_or_default(),
    }
}

/// Where `.ci/install/acp-interop.sh` puts the SDKs
/// (`$RPCWIRE_INTEROP_DIR/acp`, else `~/.cache/rpcwire-interop/acp`).
pub fn interop_dir() -> PathBuf {
    std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        })
        .join("acp")
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

/// Asserts a script exited 0 having printed `last_line`, showing both streams if not.
pub fn assert_passed(out: &Output, last_line: &str) {
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.lines().any(|l| l == last_line),
        "status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    // Every check prints `ok: ...`: show them in `--nocapture` runs.
    println!("{stdout}");
}
