//! A closed stdout (`rpcwire demo | head -2`, `rpcwire serve | head -c1`) ends the command quietly with exit code 141, as a
//! shell reports for a program ended by SIGPIPE: no panic message.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::bin;

#[test]
fn demo_into_a_reader_that_stops_after_two_lines_ends_quietly() {
    let mut child = Command::new(bin())
        .arg("demo")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    for _ in 0..2 {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        assert!(!line.is_empty());
    }
    // The reader goes away, like `head -2`.
    drop(stdout);
    let stderr = ends_quietly_with_141(&mut child, || {});
    assert!(!stderr.contains("panicked"), "stderr: {stderr}");
}

/// `rpcwire serve | head -c1`: the server's answers find the reader gone; the same quiet
/// exit as `demo` and `call`, with no i/o error.
#[test]
fn serve_into_a_reader_that_stops_after_one_byte_ends_quietly() {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n";
    stdin.write_all(call).unwrap();
    let mut stdout = child.stdout.take().unwrap();
    stdout.read_exact(&mut [0u8; 1]).unwrap();
    // The reader goes away after one byte, like `head -c1`; the server has more to say.
    drop(stdout);
    let stderr = ends_quietly_with_141(&mut child, || {
        let _ = stdin.write_all(call);
    });
    assert!(!stderr.contains("i/o error"), "stderr: {stderr}");
}

/// Waits (doing `meanwhile` every 20 ms) for `child` to end, asserts exit code 141, and gives
/// back its stderr.
fn ends_quietly_with_141(child: &mut std::process::Child, mut meanwhile: impl FnMut()) -> String {
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the command did not end after its stdout closed"
        );
        meanwhile();
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(141), "stderr: {stderr}");
    stderr
}

/// `echo '<a call with a 300 000-byte answer>' | rpcwire serve --stdio | head -c1`: stdin has
/// ended before the reader goes away, with most of the answer unwritten; the same 141 as with
/// stdin open (three runs: the end of stdin and the broken pipe race).
#[test]
fn serve_with_stdin_ended_into_a_reader_that_stops_after_one_byte_ends_with_141() {
    let big = "x".repeat(300_000);
    let call =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":1}}\n");
    for _ in 0..3 {
        let mut child = Command::new(bin())
            .args(["serve", "--stdio"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(call.as_bytes()).unwrap();
        // stdin ends: the server answers what it received, then would exit 0.
        drop(stdin);
        let mut stdout = child.stdout.take().unwrap();
        stdout.read_exact(&mut [0u8; 1]).unwrap();
        drop(stdout);
        let stderr = ends_quietly_with_141(&mut child, || {});
        assert!(!stderr.contains("i/o error"), "stderr: {stderr}");
    }
}

/// The whole answer read: stdin's end is the orderly end, exit 0.
#[test]
fn serve_with_stdin_ended_and_every_answer_read_exits_0() {
    let big = "x".repeat(300_000);
    let call =
        format!("{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[\"{big}\"],\"id\":1}}\n");
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(call.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.len() > 300_000, "{}", out.stdout.len());
}
