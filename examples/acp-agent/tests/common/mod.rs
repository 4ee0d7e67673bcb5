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

/// The project's MCP example server (`mcp-server`, built beside this package's binary by
/// `cargo test --workspace`); otherwise `None` after a visible skip line (a failure under
/// `CI=true`).
pub fn mcp_server(agent: &str) -> Option<PathBuf> {
    let path =
        Path::new(agent).with_file_name(format!("mcp-server{}", std::env::consts::EXE_SUFFIX));
    if path.exists() {
        Some(path)
    } else {
        rpcwire_tests::skip(
            "the mcp-server example is not built (cargo build -p rpcwire-example-mcp-server)",
        );
        None
    }
}

/// The MCP example server over Streamable HTTP on a free loopback port, killed when dropped.
pub struct HttpMcp {
    child: std::process::Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
}

impl HttpMcp {
    /// Starts `mcp-server --http 127.0.0.1:0` and reads its URL from its first stderr line.
    pub fn start(server: &Path) -> HttpMcp {
        use std::io::BufRead;
        let mut child = Command::new(server)
            .args(["--http", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start mcp-server --http");
        let stderr = child.stderr.take().expect("its stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = std::io::BufReader::new(stderr).lines();
            while let Some(Ok(line)) = lines.next() {
                if let Some(url) = line.split("listening on ").nth(1) {
                    let _ = tx.send(url.trim().to_owned());
                    break;
                }
            }
            // Keep reading so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let url = rx
            .recv_timeout(std::time::Duration::from_secs(30))
            .expect("mcp-server --http prints its URL");
        HttpMcp { child, url }
    }
}

impl Drop for HttpMcp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
