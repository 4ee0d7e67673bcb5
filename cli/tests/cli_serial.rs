//! `rpcwire serve --serial` and `rpcwire call --serial` over a socat pseudo-terminal pair
//! acting as a real serial line: calls, notifications and errors (exit codes, stdout, the
//! error object on stderr), in both framings. Skips (printing `SKIPPED:`) without socat,
//! unless CI=true.
//!
//! The library-level serial tests (the blocking driver of rpcwire-serial, every specification
//! example as raw bytes) are `tests/tests/serial_pty.rs` and
//! `transports/serial/tests/tokio_pty.rs`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use rpcwire_tests::pty::socat_pair;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{bounded, rpcwire, Outcome};
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

/// `rpcwire -v serve --serial PATH [extra]`, once it has opened the port; its stderr (debug
/// log) is collected.
struct Server {
    _child: Child,
    log: Arc<Mutex<Vec<String>>>,
}

impl Server {
    async fn start(path: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(common::bin())
            .args(["-v", "serve", "--serial", path])
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut lines = tokio::io::BufReader::new(child.stderr.take().unwrap()).lines();
        let first = lines.next_line().await.unwrap().expect("a line on stderr");
        assert!(
            first.contains(&format!("serving the demo service on {path}")),
            "{first}"
        );
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Server { _child: child, log }
    }

    /// Waits (bounded) for a log line containing every one of `parts`.
    async fn saw(&self, parts: &[&str]) -> bool {
        for _ in 0..200 {
            if self
                .log
                .lock()
                .unwrap()
                .iter()
                .any(|l| parts.iter().all(|p| l.contains(p)))
            {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        false
    }
}

/// `rpcwire call --serial PATH args...` (with a 10 s timeout unless `args` set one).
async fn call(path: &str, args: &[&str]) -> Outcome {
    let mut all = vec!["call", "--serial", path];
    if !args.contains(&"--timeout") {
        all.extend(["--timeout", "10"]);
    }
    all.extend_from_slice(args);
    rpcwire(&all).await
}

/// Exit 0, the result on stdout, nothing on stderr.
fn ok(o: &Outcome) -> Value {
    assert_eq!((o.code, o.stderr.as_str()), (Some(0), ""), "{o:?}");
    assert_eq!(o.stdout.lines().count(), 1, "{o:?}");
    serde_json::from_str(&o.stdout).unwrap()
}

/// Exit 1, nothing on stdout, the error object on stderr.
fn rpc_error(o: &Outcome) -> Value {
    assert_eq!((o.code, o.stdout.as_str()), (Some(1), ""), "{o:?}");
    serde_json::from_str(o.stderr.trim()).unwrap_or_else(|e| panic!("{e}: {o:?}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_and_call_over_a_pty_pair() {
    let Some(socat) = socat_pair() else { return };
    bounded(async {
        let (a, b) = (socat.ends.0.as_str(), socat.ends.1.as_str());
        let server = Server::start(a, &["--baud", "115200"]).await;

        // Calls: every process opens the port, calls, and closes it again.
        assert_eq!(ok(&call(b, &["subtract", "[42, 23]"]).await), json!(19));
        assert_eq!(
            ok(&call(
                b,
                &[
                    "--baud",
                    "115200",
                    "subtract",
                    r#"{"subtrahend": 23, "minuend": 42}"#
                ]
            )
            .await),
            json!(19)
        );
        assert_eq!(
            call(b, &["sum", "[1, 2, 4]"]).await.stdout,
            "7\n",
            "integers stay integers"
        );
        assert_eq!(ok(&call(b, &["get_data"]).await), json!(["hello", 5]));
        // A request and its answer larger than the pty's buffers cross in many chunks.
        let big = format!(r#"["{}"]"#, "x".repeat(20_000));
        assert_eq!(call(b, &["echo", &big]).await.stdout, format!("{big}\n"));

        // Notifications: nothing comes back, exit 0; the server handles them.
        let o = call(b, &["--notify", "notify_hello", "[7]"]).await;
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (Some(0), "", ""),
            "{o:?}"
        );
        assert!(
            server
                .saw(&["rpc.request", "method=notify_hello", "handled"])
                .await,
            "the server did not handle the notification: {:?}",
            server.log.lock().unwrap()
        );
        // Even a notification of an unknown method is never answered.
        let o = call(b, &["--notify", "foobar"]).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), ""), "{o:?}");
        assert!(server.saw(&["notification ignored", "foobar"]).await);

        // Errors: exit 1, stdout empty, the error object itself on stderr.
        assert_eq!(
            rpc_error(&call(b, &["foobar"]).await),
            json!({"code": -32601, "message": "Method not found"})
        );
        let err = rpc_error(&call(b, &["subtract", r#"["a", 1]"#]).await);
        assert_eq!(err["code"], -32602, "{err}");
        let err = rpc_error(&call(b, &["fail"]).await);
        assert_eq!(err["code"], -32000, "{err}");
        assert!(err["data"].is_object(), "{err}");

        // A timeout: one clear line and its own exit code; the late answer does not reach the
        // next call.
        let o = call(b, &["--timeout", "0.3", "sleep", r#"{"ms": 600}"#]).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(4), ""), "{o:?}");
        assert_eq!(o.stderr.lines().count(), 1, "{o:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(
            ok(&call(b, &["echo", "[\"after\"]"]).await),
            json!(["after"])
        );
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_length_framing_over_a_pty_pair() {
    let Some(socat) = socat_pair() else { return };
    bounded(async {
        let (a, b) = (socat.ends.0.as_str(), socat.ends.1.as_str());
        let _server = Server::start(a, &["--framing", "content-length", "--baud", "9600"]).await;
        let cl = |rest: &[&str]| {
            let mut args = vec!["--framing", "content-length", "--baud", "9600"];
            args.extend_from_slice(rest);
            args.into_iter().map(str::to_owned).collect::<Vec<_>>()
        };
        let run = |args: Vec<String>| async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            call(b, &refs).await
        };
        let text = "line one\nline two\r\n";
        assert_eq!(
            ok(&run(cl(&["echo", &json!([text]).to_string()])).await),
            json!([text])
        );
        assert_eq!(rpc_error(&run(cl(&["foobar", "[]"])).await)["code"], -32601);
        let o = run(cl(&["--notify", "update", "[1]"])).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), ""), "{o:?}");
        assert_eq!(ok(&run(cl(&["sum", "[0.5, 0.25]"])).await), json!(0.75));
    })
    .await;
}

/// A port that cannot be opened is a connection failure: one clear line, exit 3.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_port_is_a_connection_failure() {
    bounded(async {
        let missing = "/dev/rpcwire-no-such-port";
        let o = rpcwire(&["call", "--serial", missing, "get_data"]).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(3), ""), "{o:?}");
        assert_eq!(o.stderr.lines().count(), 1, "{o:?}");
        assert!(o.stderr.contains(missing), "{o:?}");
        let o = rpcwire(&["serve", "--serial", missing, "--baud", "9600"]).await;
        assert_eq!(o.code, Some(3), "{o:?}");
        assert!(o.stderr.contains(missing), "{o:?}");
        // --baud needs --serial.
        let o = rpcwire(&["serve", "--baud", "9600"]).await;
        assert_eq!(o.code, Some(2), "{o:?}");
    })
    .await;
}
