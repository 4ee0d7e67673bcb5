//! `mcp-server --log-format json`: the stderr log as one JSON object per line (a warning for
//! bytes that are not JSON on stdin, here); `--quiet`: warnings still, no line per call.
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

/// The stderr log of `mcp-server ARGS` given these stdin lines (the server exits when stdin
/// ends).
fn stderr_of(args: &[&str], stdin_text: &[u8]) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(stdin_text).unwrap();
    drop(stdin);
    String::from_utf8(child.wait_with_output().unwrap().stderr).unwrap()
}

#[test]
fn quiet_drops_the_line_per_call_and_keeps_warnings() {
    // A 2026-07-28 tools/call (no handshake needed), then bytes that are not JSON.
    let input = concat!(
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":40},"#,
        r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#,
        "\nnot json at all\n"
    );
    let loud = stderr_of(&[], input.as_bytes());
    assert!(loud.contains("method=tools/call"), "{loud}");
    let quiet = stderr_of(&["--quiet"], input.as_bytes());
    assert!(!quiet.contains("method=tools/call"), "{quiet}");
    assert!(
        quiet.contains("WARN") && quiet.contains("not JSON"),
        "{quiet}"
    );
}

/// A server whose stderr was closed (`mcp-server … 2>&1 | head -1`) still drains and exits
/// on SIGTERM: a log line it cannot write is dropped, not a panic of the task that logs it
/// (the signal's, before the fix, which left the server running).
#[test]
fn sigterm_ends_a_server_whose_stderr_is_closed() {
    use std::io::{BufRead, BufReader};
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_mcp-server"))
        .args(["--http", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stderr.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    // The reader is dropped here: the pipe's read end closes, as `head -1` closes it.
    assert!(first.contains("listening on"), "{first}");
    rpcwire_tests::otlp::sigterm(child.id());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = child.kill();
    let _ = child.wait();
    let status = status.expect("mcp-server still running 10 s after SIGTERM");
    assert!(status.success(), "mcp-server exited with {status}");
}
