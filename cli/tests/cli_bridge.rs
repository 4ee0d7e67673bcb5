//! `rpcwire bridge` between its stdio (the host's side, as an MCP host spawns it) and a device
//! played by the test, over TCP and over a socat pseudo-terminal pair (`--serial`): frames
//! forwarded both ways byte for byte, garbage and oversize lines from the device dropped with
//! the host's session unharmed, the boot notification reported on stderr (and the waiting
//! calls failed), a silent device failing the host's calls with a JSON-RPC error after
//! `--timeout`, host garbage answered, and stdin's end ending the bridge with exit 0.
//! The pty test skips (printing `SKIPPED:`) without socat, unless CI=true.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::bounded;
use rpcwire_tests::pty::socat_pair;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

/// The bridge process, its stdio, and its stderr collected line by line.
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Lines<BufReader<ChildStdout>>,
    log: Arc<Mutex<Vec<String>>>,
}

impl Bridge {
    fn start(device: &[&str]) -> Bridge {
        let mut child = Command::new(common::bin())
            .arg("bridge")
            .args(device)
            .args(["--timeout", "1", "--max-frame", "1024"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&log);
        tokio::spawn(async move {
            while let Ok(Some(line)) = err.next_line().await {
                sink.lock().unwrap().push(line);
            }
        });
        Bridge {
            child,
            stdin,
            stdout,
            log,
        }
    }

    async fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// The next line on stdout (what the host receives), as JSON.
    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.stdout.next_line())
            .await
            .expect("the bridge wrote nothing to the host in time")
            .unwrap()
            .expect("stdout still open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("host got non-JSON {line:?}: {e}"))
    }

    /// Waits (bounded) for a stderr line containing every one of `parts`.
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
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        false
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }
}

/// The device's end of the link, played by the test.
struct Device<R, W> {
    lines: Lines<BufReader<R>>,
    out: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Device<R, W> {
    async fn send(&mut self, bytes: &[u8]) {
        self.out.write_all(bytes).await.unwrap();
        self.out.flush().await.unwrap();
    }

    async fn recv(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("the bridge forwarded nothing to the device in time")
            .unwrap()
            .expect("link open");
        serde_json::from_str(&line).unwrap()
    }
}

/// The whole scenario, whatever the link.
async fn scenario<R, W>(mut bridge: Bridge, mut device: Device<R, W>)
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    // The device boots: reported on stderr, not passed to the host.
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"booted\",\"params\":{\"firmware\":\"t\"}}\n")
        .await;
    assert!(
        bridge
            .saw(&["the device reset", "\"firmware\":\"t\""])
            .await,
        "{}",
        bridge.log()
    );

    // Host -> device, byte for byte (string id, params untouched).
    let init = r#"{"jsonrpc":"2.0","id":"init-1","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    bridge.send(init).await;
    let got = device.recv().await;
    assert_eq!(got, serde_json::from_str::<Value>(init).unwrap());

    // Garbage, an oversize line (over --max-frame 1024), invalid JSON-RPC, an answer to no
    // waiting call, a bare `]`: none reaches the host. Then the real answer does.
    let mut junk = b"\x00\xff\xfe garbage \x1b[0m\n".to_vec();
    junk.extend_from_slice(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"x\",\"params\":[\"{}\"]}}\n",
            "o".repeat(3000)
        )
        .as_bytes(),
    );
    junk.extend_from_slice(b"{\"jsonrpc\":\"1.0\",\"method\":\"x\"}\n");
    junk.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"result\":{},\"id\":\"nobody\"}\n");
    junk.extend_from_slice(b"]\n{\"jsonrpc\":\"2.0\",\"result\":{\"ok\":tru\n");
    device.send(&junk).await;
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"id\":\"init-1\",\"result\":{\"protocolVersion\":\"2025-06-18\"}}\n")
        .await;
    let reply = bridge.recv().await;
    assert_eq!(reply["id"], "init-1", "{reply}");
    assert_eq!(reply["result"]["protocolVersion"], "2025-06-18");
    assert!(
        bridge.saw(&["garbled line"]).await && bridge.saw(&["over --max-frame 1024"]).await,
        "{}",
        bridge.log()
    );
    assert!(
        bridge.saw(&["no waiting call", "nobody"]).await,
        "{}",
        bridge.log()
    );

    // Device -> host notifications pass (progress), a host notification passes to the device.
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":0.5}}\n")
        .await;
    assert_eq!(bridge.recv().await["params"]["progress"], 0.5);
    bridge
        .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;
    assert_eq!(device.recv().await["method"], "notifications/initialized");

    // Host garbage is answered by the bridge and not forwarded.
    bridge.send("{\"jsonrpc\":\"2.0\",\"method\":").await;
    let parse_error = bridge.recv().await;
    assert_eq!(parse_error["error"]["code"], -32700, "{parse_error}");
    assert_eq!(parse_error["id"], Value::Null);

    // A silent device: the call fails after --timeout with a clear JSON-RPC error.
    bridge
        .send(r#"{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"slow"}}"#)
        .await;
    assert_eq!(device.recv().await["id"], 42);
    let started = std::time::Instant::now();
    let timeout = bridge.recv().await;
    assert_eq!(timeout["id"], 42, "{timeout}");
    assert_eq!(timeout["error"]["code"], -32000);
    assert_eq!(timeout["error"]["data"]["reason"], "device_timeout");
    assert!(
        timeout["error"]["message"]
            .as_str()
            .unwrap()
            .contains("did not answer within 1 s"),
        "{timeout}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Its late answer is dropped, not passed on; the session goes on.
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"id\":42,\"result\":{}}\n")
        .await;
    bridge
        .send(r#"{"jsonrpc":"2.0","id":43,"method":"ping"}"#)
        .await;
    assert_eq!(device.recv().await["id"], 43);
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"id\":43,\"result\":{}}\n")
        .await;
    let pong = bridge.recv().await;
    assert_eq!(pong, json!({"jsonrpc":"2.0","id":43,"result":{}}));

    // A reset while a call waits: the call fails at once, the reset is reported.
    bridge
        .send(r#"{"jsonrpc":"2.0","id":44,"method":"ping"}"#)
        .await;
    assert_eq!(device.recv().await["id"], 44);
    device
        .send(b"{\"jsonrpc\":\"2.0\",\"method\":\"booted\",\"params\":{\"firmware\":\"again\"}}\n")
        .await;
    let reset = bridge.recv().await;
    assert_eq!(reset["id"], 44);
    assert_eq!(reset["error"]["data"]["reason"], "device_reset");
    assert!(bridge.saw(&["the device reset", "again"]).await);

    // stdin's end: exit 0, with the totals on stderr.
    drop(bridge.stdin.take());
    let status = tokio::time::timeout(Duration::from_secs(10), bridge.child.wait())
        .await
        .expect("the bridge exits when stdin ends")
        .unwrap();
    assert!(status.success(), "{status}\n{}", bridge.log());
    assert!(
        bridge
            .saw(&["stdin ended", "1 timed out", "2 resets"])
            .await,
        "{}",
        bridge.log()
    );
    // Nothing more reached the host than the frames checked above.
    assert!(bridge.stdout.next_line().await.unwrap().is_none());
}

#[tokio::test]
async fn bridge_over_tcp() {
    bounded(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let bridge = Bridge::start(&["--tcp", &addr]);
        let (socket, _) = listener.accept().await.unwrap();
        let (r, w) = socket.into_split();
        let device = Device {
            lines: BufReader::new(r).lines(),
            out: w,
        };
        assert!(bridge.saw(&["bridging stdio to", &addr]).await);
        scenario(bridge, device).await;
    })
    .await;
}

#[tokio::test]
async fn bridge_over_a_serial_pty() {
    let Some(pair) = socat_pair() else { return };
    bounded(async {
        let (device_path, host_path) = pair.ends.clone();
        let port = rpcwire_serial::open_async(&device_path, 115_200).unwrap();
        let (r, w) = tokio::io::split(port);
        let device = Device {
            lines: BufReader::new(r).lines(),
            out: w,
        };
        let bridge = Bridge::start(&["--serial", &host_path, "--baud", "115200"]);
        assert!(
            bridge.saw(&["bridging stdio to", &host_path]).await,
            "{}",
            bridge.log()
        );
        scenario(bridge, device).await;
    })
    .await;
}

#[tokio::test]
async fn bridge_reports_a_device_it_cannot_reach() {
    bounded(async {
        // A port nothing listens on (bound, then closed).
        let addr = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .to_string();
        let out = Command::new(common::bin())
            .args(["bridge", "--tcp", &addr])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(3));
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));
        let out = Command::new(common::bin())
            .args(["bridge", "--tcp", &addr, "--timeout", "0"])
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
    })
    .await;
}
