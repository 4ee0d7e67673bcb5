//! Shared helpers for the `rpcwire` binary's tests.
#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

/// Every test finishes within this, or fails.
pub const LIMIT: Duration = Duration::from_secs(60);

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_rpcwire")
}

pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test exceeded its time limit")
}

/// `rpcwire serve --<transport> 127.0.0.1:0 [extra]`, and the last word of the first line it
/// prints on stderr (the address or URL it serves on; a bridge child's lines are skipped). Its stderr is drained after that line,
/// so the server never blocks on it.
pub async fn serve(transport: &str, extra: &[&str]) -> (Child, String) {
    serve_env(transport, extra, &[]).await
}

/// [`serve`] with these environment variables set for the server.
pub async fn serve_env(transport: &str, extra: &[&str], env: &[(&str, &str)]) -> (Child, String) {
    let mut args = vec![transport, "127.0.0.1:0"];
    args.extend_from_slice(extra);
    let (child, mut lines) = spawn_serve_env(&args, env);
    // A `--forward` child (`rpcwire bridge`) shares the server's stderr and may speak first.
    let mut line = String::new();
    for _ in 0..50 {
        line = lines.next_line().await.unwrap().expect("a line on stderr");
        if !line.starts_with("rpcwire bridge:") {
            break;
        }
    }
    let last = line.rsplit(' ').next().unwrap_or_default().to_owned();
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, last)
}

/// `rpcwire serve --tcp 127.0.0.1:0 [extra]`, and the address it prints.
pub async fn serve_tcp(extra: &[&str]) -> (Child, SocketAddr) {
    let (child, addr) = serve("--tcp", extra).await;
    let addr = addr
        .parse()
        .unwrap_or_else(|_| panic!("no address in {addr:?}"));
    (child, addr)
}

/// `rpcwire serve --http 127.0.0.1:0 [extra]`, and the URL it prints.
pub async fn serve_http(extra: &[&str]) -> (Child, String) {
    let (child, url) = serve("--http", extra).await;
    assert!(url.starts_with("http://"), "no URL: {url:?}");
    (child, url)
}

/// Stops a server with SIGTERM and waits for a clean exit (a server with `--otlp` sends its
/// last spans and metrics as it exits).
pub async fn stop_on_sigterm(mut child: Child) {
    rpcwire_tests::otlp::sigterm(child.id().expect("running"));
    let status = child.wait().await.unwrap();
    assert!(status.success(), "the server exited with {status}");
}

/// `rpcwire serve --ws 127.0.0.1:0 [extra]`, and the URL it prints.
pub async fn serve_ws(extra: &[&str]) -> (Child, String) {
    let (child, url) = serve("--ws", extra).await;
    assert!(url.starts_with("ws://"), "no URL: {url:?}");
    (child, url)
}

/// Runs `rpcwire serve --stdio [extra]` with `input` on stdin (then closed), returning stdout.
/// Asserts the process exits 0.
pub async fn serve_stdio(extra: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(bin())
        .args(["serve", "--stdio"])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let input = input.to_vec();
    let writer = tokio::spawn(async move {
        stdin.write_all(&input).await.unwrap();
        drop(stdin);
    });
    let mut out = Vec::new();
    stdout.read_to_end(&mut out).await.unwrap();
    writer.await.unwrap();
    let status = child.wait().await.unwrap();
    assert!(status.success(), "serve --stdio exited with {status}");
    out
}

/// The outcome of `rpcwire call ...`.
#[derive(Debug)]
pub struct Outcome {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

pub async fn rpcwire(args: &[&str]) -> Outcome {
    let out = Command::new(bin())
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    Outcome {
        code: out.status.code(),
        stdout: String::from_utf8(out.stdout).unwrap(),
        stderr: String::from_utf8(out.stderr).unwrap(),
    }
}

/// Parses JSON and sorts the elements of a top-level array, so batch replies compare as sets.
pub fn normalize(text: &str) -> Value {
    let mut v: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text:?}"));
    if let Value::Array(items) = &mut v {
        items.sort_by_key(|i| i.to_string());
    }
    v
}

/// Splits content-length frames into their bodies.
pub fn content_length_bodies(mut bytes: &[u8]) -> Vec<String> {
    let mut bodies = Vec::new();
    while !bytes.is_empty() {
        let text = std::str::from_utf8(bytes).unwrap();
        let header_end = text.find("\r\n\r\n").expect("header terminator");
        let len: usize = text[..header_end]
            .strip_prefix("Content-Length: ")
            .expect("content-length header")
            .parse()
            .unwrap();
        let body = &bytes[header_end + 4..header_end + 4 + len];
        bodies.push(String::from_utf8(body.to_vec()).unwrap());
        bytes = &bytes[header_end + 4 + len..];
    }
    bodies
}

/// One HTTP/1.1 exchange written by hand (`Connection: close`), with extra header lines
/// (`"Name: value\r\n"` each): (status, body).
pub async fn http(method: &str, url: &str, headers: &str, body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n\
         {headers}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    stream.read_to_end(&mut all).await.unwrap();
    let text = String::from_utf8(all).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

/// `rpcwire serve ARGS...` with stderr piped, and the lines of its stderr.
pub fn spawn_serve(
    args: &[&str],
) -> (
    Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) {
    spawn_serve_env(args, &[])
}

/// [`spawn_serve`] with these environment variables set for the server.
pub fn spawn_serve_env(
    args: &[&str],
    env: &[(&str, &str)],
) -> (
    Child,
    tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) {
    let mut child = Command::new(bin())
        .arg("serve")
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stderr.take().unwrap()).lines();
    (child, lines)
}
