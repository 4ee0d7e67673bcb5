//! The MCP conformance suite (npm `@modelcontextprotocol/conformance`, server mode, installed
//! by `.ci/install/mcp-conformance.sh`): where it is, one run of a requirement set, its report.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use super::{interop_root, run_bounded};

pub fn suite_dir() -> PathBuf {
    interop_root().join("mcp-conformance/node_modules")
}

/// The scenarios a requirement set's run reports, and which of them it does not score.
pub struct Run {
    /// (scenario, passed, checks passed, checks failed), in the suite's order.
    pub scenarios: Vec<(String, bool, usize, usize)>,
    pub not_scored: Vec<String>,
    pub total: String,
    pub output: String,
}

impl Run {
    pub fn required(&self) -> impl Iterator<Item = &(String, bool, usize, usize)> {
        self.scenarios
            .iter()
            .filter(|(name, ..)| !self.not_scored.contains(name))
    }
}

/// Runs `server --requirements revision` against `url` and reads its summary.
pub fn run(node: &Path, suite: &Path, url: &str, revision: &str) -> Run {
    let out = run_bounded(
        Command::new(node)
            .arg(suite)
            .args(["server", "--url", url, "--requirements", revision]),
        Duration::from_secs(300),
    );
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let summary = stdout.split("=== SUMMARY ===").nth(1).unwrap_or("");
    let (results, rest) = summary.split_once("Total:").unwrap_or((summary, ""));
    // "✓ tools-list: 4 passed, 0 failed"
    let scenarios = results
        .lines()
        .filter_map(|l| {
            let (mark, rest) = (l.chars().next()?, l.get(l.find(' ')? + 1..)?);
            let (name, counts) = rest.split_once(": ")?;
            let mut numbers = counts
                .split(|c: char| !c.is_ascii_digit())
                .filter(|n| !n.is_empty())
                .map(|n| n.parse::<usize>().unwrap());
            Some((
                name.to_owned(),
                mark == '✓',
                numbers.next()?,
                numbers.next()?,
            ))
        })
        .collect();
    // "  ✗ tasks-lifecycle (extension)"
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

pub fn report(label: &str, run: &Run) {
    let required: Vec<_> = run.required().collect();
    let passing = required.iter().filter(|s| s.1).count();
    println!(
        "{label}: {passing} of {} required scenarios pass; {}",
        required.len(),
        run.total.trim()
    );
    for (name, ok, passed, failed) in &run.scenarios {
        if run.not_scored.contains(name) {
            let mark = if *ok { "pass" } else { "FAIL" };
            println!("  not scored: {name}: {mark} ({passed} passed, {failed} failed)");
        } else if !ok {
            println!("  REQUIRED FAILING: {name} ({passed} passed, {failed} failed)");
        }
    }
}
