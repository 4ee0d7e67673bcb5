//! `rpcwire call --ws` and `rpcwire listen --ws` against `rpcwire serve --ws`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::time::Duration;

use common::{bin, bounded, serve_ws};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

async fn rpcwire(args: &[&str]) -> std::process::Output {
    bounded(
        Command::new(bin())
            .args(args)
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn call_over_websocket() {
    let (_server, url) = serve_ws(&[]).await;
    let out = rpcwire(&["call", "--ws", &url, "subtract", "[42, 23]"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
    let out = rpcwire(&["call", "--ws", &url, "rpc.discover"]).await;
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .any(|m| m["name"] == "broadcast"));
    // A JSON-RPC error: exit code 1, the error object on stderr.
    let out = rpcwire(&["call", "--ws", &url, "nope"]).await;
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["code"], -32601);
    // Nobody listening: exit code 3.
    let out = rpcwire(&["call", "--ws", "ws://127.0.0.1:1/", "subtract", "[1, 2]"]).await;
    assert_eq!(out.status.code(), Some(3));
}

#[tokio::test]
async fn listen_prints_ticks_and_broadcasts() {
    let (_server, url) = serve_ws(&["--tick", "100"]).await;
    let out = rpcwire(&["listen", "--ws", &url, "--count", "2", "--timeout", "10"]).await;
    assert!(out.status.success(), "{out:?}");
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert!(lines
        .iter()
        .all(|l| l["method"] == "tick" && l["params"]["n"].is_u64()));

    // Without --tick: a broadcast from another client reaches the listener.
    let (_server, url) = serve_ws(&[]).await;
    let mut listen = Command::new(bin())
        .args(["listen", "--ws", &url, "--count", "1", "--timeout", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut err = BufReader::new(listen.stderr.take().unwrap()).lines();
    let line = bounded(err.next_line()).await.unwrap().unwrap();
    assert!(line.contains("listening"), "{line}");
    let out = rpcwire(&["call", "--ws", &url, "broadcast", r#"{"text": "hi"}"#]).await;
    assert!(out.status.success(), "{out:?}");
    let done = bounded(listen.wait_with_output()).await.unwrap();
    assert!(done.status.success());
    let got: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(got, json!({"method": "news", "params": {"text": "hi"}}));
    // The listener ends when the server goes away.
    let (mut server, url) = serve_ws(&[]).await;
    let listen = Command::new(bin())
        .args(["listen", "--ws", &url])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.kill().await.unwrap();
    let done = bounded(listen.wait_with_output()).await.unwrap();
    assert_eq!(done.status.code(), Some(3));
}

/// `serve --ws --forward "rpcwire bridge --tcp DEVICE"`: WebSocket clients reach a device
/// (here a small device on a TCP socket, written in the test) through the bridge: calls and
/// their errors both ways, `rpc.discover` answered by the device, and the device's
/// notifications pushed to every WebSocket client.
#[tokio::test]
async fn forward_reaches_a_device_through_the_bridge() {
    use tokio::io::AsyncWriteExt;
    let device = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let device_addr = device.local_addr().unwrap().to_string();
    // The device: answers `read_counter` with its count of calls, `rpc.discover` with a
    // one-method document, anything else Method not found; after each answer it sends the
    // notification `sensor`.
    tokio::spawn(async move {
        let (stream, _) = device.accept().await.unwrap();
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let mut calls = 0u64;
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(msg) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let Some(id) = msg.get("id") else { continue };
            calls += 1;
            let answer = match msg["method"].as_str() {
                Some("read_counter") => json!({"jsonrpc": "2.0", "result": calls, "id": id}),
                Some("rpc.discover") => json!({"jsonrpc": "2.0", "id": id, "result":
                    {"openrpc": "1.3.2", "methods": [{"name": "read_counter", "params": []}]}}),
                _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "Method not found"}}),
            };
            let note = json!({"jsonrpc": "2.0", "method": "sensor", "params": {"calls": calls}});
            let out = format!("{answer}\n{note}\n");
            if write.write_all(out.as_bytes()).await.is_err() {
                break;
            }
        }
    });
    let forward = format!("{} bridge --tcp {device_addr}", bin());
    let (_server, url) = serve_ws(&["--forward", &forward]).await;

    let mut listen = Command::new(bin())
        .args(["listen", "--ws", &url, "--count", "1", "--timeout", "20"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut err = BufReader::new(listen.stderr.take().unwrap()).lines();
    let line = bounded(err.next_line()).await.unwrap().unwrap();
    assert!(line.contains("listening"), "{line}");

    let out = rpcwire(&["call", "--ws", &url, "read_counter"]).await;
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "1");
    let done = bounded(listen.wait_with_output()).await.unwrap();
    assert!(done.status.success(), "{done:?}");
    let got: Value = serde_json::from_slice(&done.stdout).unwrap();
    assert_eq!(got, json!({"method": "sensor", "params": {"calls": 1}}));

    let out = rpcwire(&["call", "--ws", &url, "rpc.discover"]).await;
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["methods"][0]["name"], "read_counter", "{doc}");
    let out = rpcwire(&["call", "--ws", &url, "set_led", r#"{"on": true}"#]).await;
    assert_eq!(out.status.code(), Some(1));
    let err: Value = serde_json::from_slice(&out.stderr).unwrap();
    assert_eq!(err["code"], -32601);
}
