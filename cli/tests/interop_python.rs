//! `rpcwire call` against a server written with another JSON-RPC library: Python's
//! `jsonrpcserver` (installed by `.ci/install/python-interop.sh`), over TCP and over stdio.
//!
//! Skips with a visible `SKIPPED:` line when python3 or the package is missing, unless
//! `CI=true`, where that is a failure.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;

use common::{bounded, rpcwire};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const SERVER: &str = r#"
import socketserver, sys
from jsonrpcserver import method, Success, Error, Result, dispatch

@method
def subtract(minuend, subtrahend) -> Result:
    return Success(minuend - subtrahend)

@method
def sum(*numbers) -> Result:
    total = 0
    for n in numbers:
        total += n
    return Success(total)

@method
def get_data() -> Result:
    return Success(["hello", 5])

@method
def echo(*args, **kwargs) -> Result:
    return Success(kwargs if kwargs else list(args))

@method
def fail() -> Result:
    return Error(-32000, "it failed", {"why": "always"})

@method
def update(*args) -> Result:
    return Success(None)

class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            if not line.strip():
                continue
            response = dispatch(line.decode("utf-8"))
            if response:
                self.wfile.write(response.encode("utf-8") + b"\n")
                self.wfile.flush()

if sys.argv[1] == "--tcp":
    socketserver.ThreadingTCPServer.allow_reuse_address = True
    with socketserver.ThreadingTCPServer(("127.0.0.1", 0), Handler) as server:
        print("PORT", server.server_address[1], flush=True)
        server.serve_forever()
else:
    for line in sys.stdin:
        if not line.strip():
            continue
        response = dispatch(line)
        if response:
            sys.stdout.write(response + "\n")
            sys.stdout.flush()
"#;

/// Writes the server script, or explains why the test cannot run.
async fn setup(tag: &str) -> Option<std::path::PathBuf> {
    let probe = Command::new("python3")
        .args(["-c", "import jsonrpcserver"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .await;
    let missing = match probe {
        Err(e) => Some(format!("python3 not runnable ({e})")),
        Ok(s) if !s.success() => Some("python package jsonrpcserver not installed".to_owned()),
        Ok(_) => None,
    };
    if let Some(why) = missing {
        let ci = std::env::var("CI").is_ok_and(|v| v == "true");
        assert!(
            !ci,
            "interop test cannot run under CI: {why} (see .ci/install/python-interop.sh)"
        );
        // Straight to the process's stderr: libtest's capture would hide a `println!`.
        let msg = format!("SKIPPED: interop_python: {why}; run .ci/install/python-interop.sh\n");
        let _ = std::io::Write::write_all(&mut std::io::stderr(), msg.as_bytes());
        return None;
    }
    let path =
        std::env::temp_dir().join(format!("rpcwire-interop-{}-{tag}.py", std::process::id()));
    std::fs::write(&path, SERVER).unwrap();
    Some(path)
}

/// Runs the same calls against whatever transport `target` names (`--tcp ADDR` or
/// `--exec CMD`).
async fn exercise(target: &[&str]) {
    let call = |rest: &[&str]| {
        let mut args = vec!["call"];
        args.extend_from_slice(target);
        args.extend_from_slice(rest);
        args.into_iter().map(str::to_owned).collect::<Vec<_>>()
    };
    let run = |args: Vec<String>| async move {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        rpcwire(&refs).await
    };
    let o = run(call(&["subtract", "[42, 23]"])).await;
    assert_eq!((o.code, o.stdout.as_str()), (Some(0), "19\n"), "{o:?}");
    let o = run(call(&["subtract", r#"{"subtrahend": 23, "minuend": 42}"#])).await;
    assert_eq!(o.stdout, "19\n", "{o:?}");
    let o = run(call(&["sum", "[1, 2, 4]"])).await;
    assert_eq!(o.stdout, "7\n", "{o:?}");
    let o = run(call(&["sum", "[1.5, 2]"])).await;
    assert_eq!(o.stdout, "3.5\n", "{o:?}");
    let o = run(call(&["get_data"])).await;
    assert_eq!(
        serde_json::from_str::<Value>(&o.stdout).unwrap(),
        json!(["hello", 5])
    );
    let o = run(call(&["echo", r#"{"a": "é", "b": [null, true]}"#])).await;
    assert_eq!(
        serde_json::from_str::<Value>(&o.stdout).unwrap(),
        json!({"a": "é", "b": [null, true]})
    );

    let o = run(call(&["foobar"])).await;
    assert_eq!((o.code, o.stdout.as_str()), (Some(1), ""), "{o:?}");
    let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
    assert_eq!(err["code"], -32601, "{err}");
    let o = run(call(&["fail"])).await;
    assert_eq!(o.code, Some(1));
    let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
    assert_eq!(
        err,
        json!({"code": -32000, "message": "it failed", "data": {"why": "always"}})
    );
    let o = run(call(&["subtract", "[1, 2, 3]"])).await;
    assert_eq!(o.code, Some(1));
    let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
    assert_eq!(err["code"], -32602, "{err}");

    let o = run(call(&["--notify", "update", "[1, 2, 3]"])).await;
    assert_eq!(
        (o.code, o.stdout.as_str(), o.stderr.as_str()),
        (Some(0), "", ""),
        "{o:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpcwire_call_against_python_jsonrpcserver_over_tcp() {
    bounded(async {
        let Some(script) = setup("tcp").await else {
            return;
        };
        let mut server = Command::new("python3")
            .arg(&script)
            .arg("--tcp")
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(server.stdout.take().unwrap()).lines();
        let first = lines.next_line().await.unwrap().expect("the server's port");
        let port = first.strip_prefix("PORT ").expect("PORT line").to_owned();
        let addr = format!("127.0.0.1:{port}");
        exercise(&["--tcp", &addr]).await;
        server.kill().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpcwire_call_against_python_jsonrpcserver_over_stdio() {
    bounded(async {
        let Some(script) = setup("stdio").await else {
            return;
        };
        let exec = format!("python3 '{}' --stdio", script.display());
        exercise(&["--exec", &exec]).await;
    })
    .await;
}
