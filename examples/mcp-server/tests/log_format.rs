//! `mcp-server --log-format json`: the stderr log as one JSON object per line (a warning for
//! bytes that are not JSON on stdin, here).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::Write;
use std::process::{Command, Stdio};

#[test]
fn json_log_lines_with_log_format_json() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(["--log-format", "json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"not json at all\n").unwrap();
    // stdin ends: the server answers, then exits.
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    let lines: Vec<serde_json::Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let warning = lines
        .iter()
        .find(|l| l["level"] == "WARN")
        .unwrap_or_else(|| panic!("no warning: {stderr}"));
    assert!(
        warning["fields"]["message"]
            .as_str()
            .unwrap()
            .contains("not JSON"),
        "{warning}"
    );
}
