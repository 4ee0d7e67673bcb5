//! `rpcwire call`: one JSON value on stdout and exit 0; a JSON-RPC error as JSON on stderr
//! and exit 1; usage 2; connection failure 3; timeout 4.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bin, bounded, rpcwire, serve_tcp};
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_over_tcp_prints_results_and_errors() {
    bounded(async {
        let (_server, addr) = serve_tcp(&[]).await;
        let addr = addr.to_string();
        let tcp = |rest: &[&str]| {
            let mut args = vec!["call", "--tcp", addr.as_str()];
            args.extend_from_slice(rest);
            args.into_iter().map(str::to_owned).collect::<Vec<_>>()
        };
        let run = |args: Vec<String>| async move {
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            rpcwire(&refs).await
        };

        let o = run(tcp(&["subtract", "[42, 23]"])).await;
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (Some(0), "19\n", "")
        );
        let o = run(tcp(&["subtract", r#"{"minuend": 42, "subtrahend": 23}"#])).await;
        assert_eq!(o.stdout, "19\n");
        let o = run(tcp(&["sum", "[1.5, 2]"])).await;
        assert_eq!(o.stdout, "3.5\n");
        // Params from a file (`@FILE`): values larger than a command line allows.
        let file = std::env::temp_dir().join(format!("rpcwire-params-{}.json", std::process::id()));
        let big = "q".repeat(300_000);
        std::fs::write(&file, format!("[\"{big}\"]")).unwrap();
        let at = format!("@{}", file.display());
        let o = run(tcp(&["echo", &at])).await;
        std::fs::remove_file(&file).unwrap();
        assert_eq!(
            (o.code, o.stdout.len()),
            (Some(0), big.len() + 5),
            "{}",
            o.stderr
        );
        let o = run(tcp(&["sum", "@/nonexistent/params.json"])).await;
        assert_eq!(o.code, Some(2), "{}", o.stderr);
        assert!(o.stderr.contains("cannot read PARAMS"), "{}", o.stderr);
        let o = run(tcp(&["get_data"])).await;
        assert_eq!(o.stdout, "[\"hello\",5]\n");
        let o = run(tcp(&["echo", r#"{"a": [1.0, -0, 9007199254740993]}"#])).await;
        assert_eq!(
            o.stdout, "{\"a\": [1.0, -0, 9007199254740993]}\n",
            "unchanged"
        );

        // A JSON-RPC error: stdout empty, the error object on stderr, exit 1.
        let o = run(tcp(&["foobar"])).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(1), ""));
        let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
        assert_eq!(err, json!({"code": -32601, "message": "Method not found"}));
        let o = run(tcp(&["fail"])).await;
        assert_eq!(o.code, Some(1));
        let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
        assert_eq!(err["code"], -32000);
        assert!(err["data"].is_object(), "{err}");
        let o = run(tcp(&["subtract", r#"["a", 1]"#])).await;
        assert_eq!(o.code, Some(1));
        let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
        assert_eq!(err["code"], -32602);

        // A notification: no id, no answer, exit 0.
        let o = run(tcp(&["--notify", "update", "[1, 2, 3]"])).await;
        assert_eq!(
            (o.code, o.stdout.as_str(), o.stderr.as_str()),
            (Some(0), "", "")
        );

        // A timeout: one clear line, its own exit code.
        let o = run(tcp(&["--timeout", "0.3", "sleep", r#"{"ms": 5000}"#])).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(4), ""));
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);

        // Bad arguments.
        let o = run(tcp(&["sum", "[1, 2"])).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(2), ""));
        let o = run(tcp(&["sum", "7"])).await;
        assert_eq!(o.code, Some(2));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_failure_has_its_own_exit_code() {
    bounded(async {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let addr = format!("127.0.0.1:{port}");
        let o = rpcwire(&["call", "--tcp", &addr, "get_data"]).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(3), ""));
        assert_eq!(o.stderr.lines().count(), 1, "{}", o.stderr);
        let o = rpcwire(&["call", "--exec", "/nonexistent/server --stdio", "get_data"]).await;
        assert_eq!(o.code, Some(3), "{o:?}");
        // A server that exits without answering.
        let o = rpcwire(&["call", "--exec", "true", "get_data"]).await;
        assert_eq!(o.code, Some(3), "{o:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_over_exec_in_both_framings() {
    bounded(async {
        let exec = format!("{} serve --stdio", shell_quote(bin()));
        let o = rpcwire(&["call", "--exec", &exec, "get_data"]).await;
        assert_eq!(
            (o.code, o.stdout.as_str()),
            (Some(0), "[\"hello\",5]\n"),
            "{o:?}"
        );
        let exec_cl = format!("{exec} --framing content-length");
        let o = rpcwire(&[
            "call",
            "--exec",
            &exec_cl,
            "--framing",
            "content-length",
            "subtract",
            r#"{"minuend": 1.5, "subtrahend": 1}"#,
        ])
        .await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), "0.5\n"), "{o:?}");
        let o = rpcwire(&["call", "--exec", &exec, "nope", "[]"]).await;
        assert_eq!(o.code, Some(1));
        let o = rpcwire(&["call", "--exec", &exec, "--notify", "notify_hello", "[7]"]).await;
        assert_eq!((o.code, o.stdout.as_str()), (Some(0), ""));
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_needs_a_transport() {
    bounded(async {
        // (Serial ports are tested in cli_serial.rs.)
        let o = rpcwire(&["call", "get_data"]).await;
        assert_eq!(o.code, Some(2));
        let o = rpcwire(&[
            "call",
            "--tcp",
            "127.0.0.1:1",
            "--serial",
            "/dev/ttyUSB0",
            "get_data",
        ])
        .await;
        assert_eq!(o.code, Some(2), "one transport at a time");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_and_shows_the_exchanges() {
    bounded(async {
        let o = rpcwire(&["demo"]).await;
        assert_eq!(o.code, Some(0), "{}", o.stderr);
        assert!(o
            .stdout
            .contains(r#"--> {"jsonrpc":"2.0","method":"subtract","params":[42,23]"#));
        assert!(o.stdout.contains(r#"<-- {"jsonrpc":"2.0","result":19,"#));
        assert!(o.stdout.contains("-32601"));
    })
    .await;
}

fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The peer refuses what we sent with an error of id null (here: params over its
/// `--max-frame`): the call fails with that error at once (exit 1, the error on stderr),
/// instead of waiting out its timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_refusal_with_id_null_fails_the_call_at_once() {
    bounded(async {
        let (_server, addr) = serve_tcp(&["--max-frame", "2048"]).await;
        let addr = addr.to_string();
        let big = format!("[\"{}\"]", "b".repeat(4096));
        let started = std::time::Instant::now();
        let o = rpcwire(&["call", "--tcp", &addr, "--timeout", "30", "echo", &big]).await;
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "waited {:?}",
            started.elapsed()
        );
        assert_eq!(o.code, Some(1), "{}", o.stderr);
        let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
        assert_eq!(err["code"], -32600);
        assert_eq!(err["data"], "frame too large");

        // Params nested deeper than the server takes: its Parse error, at once.
        let deep = format!("[{}{}]", "[".repeat(99), "]".repeat(99));
        let o = rpcwire(&["call", "--tcp", &addr, "--timeout", "30", "echo", &deep]).await;
        assert_eq!(o.code, Some(1), "{}", o.stderr);
        let err: Value = serde_json::from_str(o.stderr.trim()).unwrap();
        assert_eq!(err["code"], -32700);
    })
    .await;
}

/// A server and a caller configured with different framings still understand each other:
/// each framing also reads the other's messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_with_the_other_framing_is_answered() {
    bounded(async {
        for (server, caller) in [("content-length", "line"), ("line", "content-length")] {
            let (_server, addr) = serve_tcp(&["--framing", server]).await;
            let addr = addr.to_string();
            let o = rpcwire(&[
                "call",
                "--tcp",
                &addr,
                "--framing",
                caller,
                "--timeout",
                "10",
                "subtract",
                "[42, 23]",
            ])
            .await;
            assert_eq!(
                (o.code, o.stdout.as_str()),
                (Some(0), "19\n"),
                "server {server}, caller {caller}: {}",
                o.stderr
            );
        }
    })
    .await;
}
