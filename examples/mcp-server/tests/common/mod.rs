//! What the SDK and HTTP tests share: the example server on a free loopback port, where the
//! SDKs are installed, the test scripts, and bounded runs of third-party programs.
#![allow(dead_code)]

pub mod conformance;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// `mcp-server --http 127.0.0.1:0 ARGS`, killed on drop.
pub struct HttpServer {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// `127.0.0.1:PORT`.
    pub addr: String,
}

impl HttpServer {
    pub fn start(args: &[&str]) -> HttpServer {
        Self::start_on("127.0.0.1:0", args)
    }

    pub fn start_on(addr: &str, args: &[&str]) -> HttpServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
            .args(["--http", addr])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn mcp-server");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut lines = BufReader::new(stderr).lines();
            for line in lines.by_ref().map_while(Result::ok) {
                if let Some(url) = line.strip_prefix("mcp-server: listening on ") {
                    let _ = tx.send(url.to_owned());
                    break;
                }
            }
            // Keep draining, so the server never blocks on a full pipe.
            for _ in lines {}
        });
        let url = rx
            .recv_timeout(Duration::from_secs(20))
            .expect("mcp-server did not start");
        let addr = url
            .trim_start_matches("http://")
            .trim_start_matches("https://")
            .trim_end_matches("/mcp")
            .to_owned();
        HttpServer { child, url, addr }
    }
}

impl HttpServer {
    /// Stops the server with SIGTERM (it sends its last spans as it exits, with `--otlp`)
    /// and waits for it; panics unless it exits successfully.
    pub fn terminate(&mut self) {
        rpcwire_tests::otlp::sigterm(self.child.id());
        let status = self.child.wait().expect("wait for mcp-server");
        assert!(status.success(), "mcp-server exited with {status}");
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Where the `.ci/install/` scripts put what interop tests run (`RPCWIRE_INTEROP_DIR`, else
/// `~/.cache/rpcwire-interop`).
pub fn interop_root() -> PathBuf {
    rpcwire_tests::interop::interop_dir("")
}

/// Where `.ci/install/mcp-interop.sh` puts the SDKs.
pub fn interop_dir() -> PathBuf {
    interop_root().join("mcp")
}

/// The interop venv's Python when it can import `modules` (a comma-separated list, as in an
/// `import` statement); otherwise `None`, after a visible skip line (a failure under `CI=true`).
pub fn python_with(modules: &str) -> Option<PathBuf> {
    let python = interop_dir().join("venv/bin/python");
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {modules}")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok {
        Some(python)
    } else {
        rpcwire_tests::skip("the Python MCP SDK is not installed (.ci/install/mcp-interop.sh)");
        None
    }
}

/// A client script in `tests/interop/`.
pub fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/interop")
        .join(name)
}

// Not every test binary uses both.
#[allow(unused_imports)]
pub use rpcwire_tests::interop::{assert_passed, run_bounded};
