//! `rpcwire serve --stdio` with stdin and stdout that are not pipes: a regular file (read and
//! written in place) and a socket (non-blocking, on the event loop). Every call is answered,
//! each id once, and the server ends when its input does.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]
#![cfg(unix)]

mod common;

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::bin;

const CALLS: u64 = 3000;

fn requests() -> Vec<u8> {
    let mut text = Vec::new();
    for id in 1..=CALLS {
        writeln!(
            text,
            r#"{{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":{id}}}"#
        )
        .unwrap();
    }
    text
}

/// Every answer is 19 and every id 1..=CALLS comes back exactly once.
fn check_answers(lines: impl Iterator<Item = String>) {
    let mut seen = HashSet::new();
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["result"], 19, "{line}");
        assert!(seen.insert(v["id"].as_u64().unwrap()), "id twice: {line}");
    }
    assert_eq!(seen.len() as u64, CALLS);
}

/// Waits for the child to exit by itself, killing it after a bound.
fn wait_bounded(mut child: Child) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            return;
        }
        if Instant::now() > deadline {
            child.kill().ok();
            panic!("the server did not end when its input did");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn stdin_and_stdout_regular_files() {
    let dir = std::env::temp_dir().join(format!("rpcwire-stdin-file-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("requests.ndjson");
    let output = dir.join("answers.ndjson");
    std::fs::write(&input, requests()).unwrap();
    let child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(std::fs::File::open(&input).unwrap())
        .stdout(std::fs::File::create(&output).unwrap())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    wait_bounded(child);
    let answers = std::fs::read_to_string(&output).unwrap();
    check_answers(answers.lines().map(str::to_owned));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn stdin_and_stdout_one_socket() {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair().unwrap();
    let theirs_out = theirs.try_clone().unwrap();
    let child = Command::new(bin())
        .args(["serve", "--stdio"])
        .stdin(std::os::fd::OwnedFd::from(theirs))
        .stdout(std::os::fd::OwnedFd::from(theirs_out))
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    ours.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut writer = ours.try_clone().unwrap();
    let feeder = std::thread::spawn(move || writer.write_all(&requests()).unwrap());
    let lines: Vec<String> = BufReader::new(&ours)
        .lines()
        .take(CALLS as usize)
        .map(Result::unwrap)
        .collect();
    feeder.join().unwrap();
    check_answers(lines.into_iter());
    ours.shutdown(std::net::Shutdown::Write).unwrap();
    wait_bounded(child);
}
