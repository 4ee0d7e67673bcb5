//! The example agent as a process, driven by hand over its stdin and stdout: nothing but
//! JSON-RPC lines on stdout (logs, at trace level, all on stderr), and the disk used when the
//! client offers no file system (a read counted, a write made after permission); by default
//! its stderr holds warnings only, without colour codes.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

mod common;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{json, Value};

struct Agent {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    stderr: Option<std::thread::JoinHandle<String>>,
}

impl Agent {
    fn start(args: &[&str]) -> Agent {
        let mut child = Command::new(env!("CARGO_BIN_EXE_acp-agent"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn acp-agent");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut stderr = child.stderr.take().expect("stderr");
        let stderr = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut s);
            s
        });
        let stdin = child.stdin.take();
        Agent {
            child,
            stdin,
            lines,
            stderr: Some(stderr),
        }
    }

    fn send(&mut self, message: Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
    }

    /// The next stdout line, which must be a JSON-RPC 2.0 message.
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line from the agent within 10 s");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line not JSON ({e}): {line}"));
        assert_eq!(message["jsonrpc"], "2.0", "{line}");
        message
    }

    /// Reads until the answer to `id`, returning the notifications and requests before it.
    fn until_answer(&mut self, id: i64) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let m = self.recv();
            if m["id"] == id && m.get("method").is_none() {
                return (before, m);
            }
            before.push(m);
        }
    }

    /// Closes stdin and returns the agent's stderr once it has exited.
    fn finish(mut self) -> String {
        drop(self.stdin.take());
        let status = (0..500)
            .find_map(|_| {
                let s = self.child.try_wait().expect("wait");
                if s.is_none() {
                    std::thread::sleep(Duration::from_millis(10));
                }
                s
            })
            .expect("the agent exits within 5 s of its stdin closing");
        assert!(status.success(), "{status}");
        // Whatever is left on stdout must be JSON-RPC too.
        while let Ok(line) = self.lines.recv_timeout(Duration::from_millis(100)) {
            serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
        }
        self.stderr
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn texts(messages: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages {
        let update = &m["params"]["update"];
        if let Some(t) = update["content"]["text"].as_str() {
            out.push(t.to_owned());
        }
        for c in update["content"].as_array().into_iter().flatten() {
            if let Some(t) = c["content"]["text"].as_str() {
                out.push(t.to_owned());
            }
        }
    }
    out
}

#[test]
fn only_json_rpc_on_stdout_and_the_disk_without_client_fs() {
    let dir = std::env::temp_dir().join(format!("acp-agent-stdio-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("three.txt");
    std::fs::write(&input, "a\nb\nc\n").unwrap();
    let output = dir.join("out.txt");

    let mut agent = Agent::start(&["--log", "trace", "--step-ms", "10"]);
    agent.send(
        json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1,
        "clientCapabilities":{"fs":{"readTextFile":false,"writeTextFile":false}}}}),
    );
    let (_, init) = agent.until_answer(1);
    assert_eq!(init["result"]["protocolVersion"], 1);
    agent.send(
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":dir,"mcpServers":[]}}),
    );
    let (_, new) = agent.until_answer(2);
    let session = new["result"]["sessionId"].clone();

    let read = format!("read {}", input.display());
    agent.send(
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":session,
        "prompt":[{"type":"text","text":read}]}}),
    );
    let (updates, answer) = agent.until_answer(3);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    let texts_read = texts(&updates);
    assert!(
        texts_read.contains(&"3 lines (read from disk)".to_owned()),
        "{texts_read:?}"
    );
    assert!(
        texts_read.contains(&format!("{} has 3 lines", input.display())),
        "{texts_read:?}"
    );

    let write = format!("write {} written by the agent", output.display());
    agent.send(
        json!({"jsonrpc":"2.0","id":4,"method":"session/prompt","params":{"sessionId":session,
        "prompt":[{"type":"text","text":write}]}}),
    );
    // The permission request comes to us: allow it.
    let ask = loop {
        let m = agent.recv();
        if m["method"] == "session/request_permission" {
            break m;
        }
    };
    assert!(!output.exists(), "written before the permission was given");
    agent.send(json!({"jsonrpc":"2.0","id":ask["id"],"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}));
    let (updates, answer) = agent.until_answer(4);
    assert_eq!(answer["result"]["stopReason"], "end_turn");
    assert!(
        texts(&updates).contains(&"written to disk".to_owned()),
        "{:?}",
        texts(&updates)
    );
    assert_eq!(
        std::fs::read_to_string(&output).unwrap(),
        "written by the agent"
    );

    let stderr = agent.finish();
    assert!(
        stderr.contains("TRACE") || stderr.contains("DEBUG"),
        "logs at trace level on stderr: {stderr}"
    );
    assert!(stderr.contains("prompt"), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn quiet_and_colourless_by_default() {
    let mut agent = Agent::start(&[]);
    agent
        .send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}));
    agent.until_answer(1);
    // An MCP server that cannot start: the one thing worth a line on stderr.
    agent.send(
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/",
        "mcpServers":[{"name":"gone","command":"/nonexistent/mcp","args":[],"env":[]}]}}),
    );
    let (_, new) = agent.until_answer(2);
    let session = new["result"]["sessionId"].clone();
    agent.send(
        json!({"jsonrpc":"2.0","id":3,"method":"session/prompt","params":{"sessionId":session,
        "prompt":[{"type":"text","text":"tools"}]}}),
    );
    let (updates, _) = agent.until_answer(3);
    assert_eq!(texts(&updates), ["no MCP tools in this session"]);
    let stderr = agent.finish();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(
        lines[0].contains("WARN") && lines[0].contains("MCP server gone"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "colour codes on stderr: {stderr:?}"
    );
}

/// `--log-format json`: the same warning as one JSON object on its line, for a log collector.
#[test]
fn json_log_lines_with_log_format_json() {
    let mut agent = Agent::start(&["--log-format", "json"]);
    agent
        .send(json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":1}}));
    agent.until_answer(1);
    agent.send(
        json!({"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/",
        "mcpServers":[{"name":"gone","command":"/nonexistent/mcp","args":[],"env":[]}]}}),
    );
    agent.until_answer(2);
    let stderr = agent.finish();
    let lines: Vec<Value> = stderr
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert_eq!(lines[0]["level"], "WARN", "{stderr}");
    let text = lines[0].to_string();
    assert!(text.contains("MCP server gone"), "{stderr}");
}
