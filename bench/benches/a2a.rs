//! A2A over HTTP (`rpcwire-a2a`, `examples/a2a-agent`) against the official Python SDK's own
//! server (`a2a-sdk` 1.3.0 on uvicorn, `profiles/a2a/tests/py/sdk_agent.py`) with the same
//! agent logic, in the same run: `cargo bench -p rpcwire-bench --bench a2a`.
//!
//! 1. Streams held open: K clients (`RPCWIRE_BENCH_A2A_STREAMS`, default 1 000), one
//!    connection each, send `SendStreamingMessage` for a task that then waits (a count whose
//!    step is an hour); each reads its first two events (the task, then a status update) and
//!    keeps the stream open. The server's `VmRSS` before and after gives the memory per open
//!    stream (connection, task, stream buffer and all).
//! 2. `SendMessage` calls/s: C connections (`RPCWIRE_BENCH_A2A_CONNS`, default 32), keep-alive,
//!    each sending `SendMessage` "echo ..." (a task created, an artifact, completed, the task
//!    answered) back to back for `RPCWIRE_BENCH_A2A_SECS` (default 5) seconds; every answer is
//!    checked to be a completed task.
//!
//! 3. The same two with the agent's tasks in a SQLite file (`--store sqlite:PATH`, a fresh
//!    file in the system's temporary directory), in the same run.
//!
//! The Python side needs `.ci/install/a2a-interop.sh`; without it only rpcwire is measured.
//! `RPCWIRE_BENCH_A2A_BASELINE=/path/to/a2a-agent` measures another build of the agent too
//! (an earlier commit's), in the same run.
//! The table is printed and written to `target/bench-a2a.md`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rpcwire_bench::{cargo_build, proc_status, workspace_root, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

/// A server process, killed on drop.
struct Server {
    child: Child,
    addr: String,
}

impl Server {
    fn start(cmd: &mut Command) -> Result<Server, Error> {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Error::io("start the server", e))?;
        let stdout = child
            .stdout
            .take()
            .ok_or_else(|| Error::Server("no stdout".into()))?;
        let mut line = String::new();
        BufReader::new(stdout)
            .read_line(&mut line)
            .map_err(|e| Error::io("read the server's first line", e))?;
        let url = line
            .trim()
            .strip_prefix("listening http://")
            .ok_or_else(|| Error::Server(format!("unexpected first line {line:?}")))?;
        Ok(Server {
            addr: url.trim_end_matches('/').to_owned(),
            child,
        })
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn post(addr: &str, body: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\na2a-version: 1.0\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn send_body(text: &str, n: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"SendMessage","params":{{"message":{{"messageId":"m{n}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
    )
}

/// Reads one HTTP/1.1 response with a `content-length` body; returns the body.
async fn read_response(s: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<Vec<u8>> {
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| std::io::Error::other(format!("no content-length in {head}")))?;
            while buf.len() < end + 4 + len {
                let mut chunk = [0u8; 16384];
                let n = s.read(&mut chunk).await?;
                if n == 0 {
                    return Err(std::io::Error::other("closed mid-body"));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = buf[end + 4..end + 4 + len].to_vec();
            buf.drain(..end + 4 + len);
            return Ok(body);
        }
        let mut chunk = [0u8; 16384];
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::Error::other("closed before a response"));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens `k` streams and holds them; the RSS of `pid` before and after, in KiB.
async fn hold_streams(addr: &str, pid: u32, k: usize) -> Result<(u64, u64, Vec<TcpStream>), Error> {
    let before = proc_status(pid)?.rss_kib;
    let mut held = Vec::with_capacity(k);
    let body = |n: usize| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{n},"method":"SendStreamingMessage","params":{{"message":{{"messageId":"s{n}","role":"ROLE_USER","parts":[{{"text":"count 1"}}]}}}}}}"#
        )
    };
    for chunk in (0..k).collect::<Vec<_>>().chunks(100) {
        let opened = chunk.iter().map(|&n| {
            let addr = addr.to_owned();
            let request = post(&addr, &body(n));
            tokio::spawn(async move {
                let mut s = TcpStream::connect(&addr).await?;
                s.write_all(&request).await?;
                // Wait for two `data:` events with a JSON-RPC response: the task and the
                // working status.
                let mut seen = Vec::new();
                while seen.windows(8).filter(|w| w == b"\"result\"").count() < 2 {
                    let mut b = [0u8; 8192];
                    let n = s.read(&mut b).await?;
                    if n == 0 {
                        return Err(std::io::Error::other("stream closed early"));
                    }
                    seen.extend_from_slice(&b[..n]);
                }
                Ok::<_, std::io::Error>(s)
            })
        });
        for h in opened.collect::<Vec<_>>() {
            let s = h
                .await
                .map_err(|e| Error::Server(e.to_string()))?
                .map_err(|e| Error::io("open a stream", e))?;
            held.push(s);
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let after = proc_status(pid)?.rss_kib;
    Ok((before, after, held))
}

/// `SendMessage` calls/s over `conns` keep-alive connections for `secs`.
async fn send_rate(addr: &str, conns: usize, secs: u64) -> Result<f64, Error> {
    let done = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let start = Instant::now();
    let workers: Vec<_> = (0..conns)
        .map(|c| {
            let addr = addr.to_owned();
            let done = Arc::clone(&done);
            tokio::spawn(async move {
                let mut s = TcpStream::connect(&addr).await?;
                let mut buf = Vec::new();
                let mut n = (c as u64) << 32;
                while Instant::now() < deadline {
                    n += 1;
                    s.write_all(&post(&addr, &send_body("echo hello", n)))
                        .await?;
                    let body = read_response(&mut s, &mut buf).await?;
                    let v: serde_json::Value = serde_json::from_slice(&body)
                        .map_err(|e| std::io::Error::other(e.to_string()))?;
                    if v.pointer("/result/task/status/state")
                        .and_then(|s| s.as_str())
                        != Some("TASK_STATE_COMPLETED")
                    {
                        return Err(std::io::Error::other(format!("unexpected answer {v}")));
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, std::io::Error>(())
            })
        })
        .collect();
    for w in workers {
        w.await
            .map_err(|e| Error::Server(e.to_string()))?
            .map_err(|e| Error::io("SendMessage", e))?;
    }
    Ok(done.load(Ordering::Relaxed) as f64 / start.elapsed().as_secs_f64())
}

struct Row {
    name: &'static str,
    streams: usize,
    per_stream_kib: f64,
    rate: f64,
}

async fn measure(
    name: &'static str,
    server: &Server,
    k: usize,
    conns: usize,
    secs: u64,
) -> Result<Row, Error> {
    let rate = send_rate(&server.addr, conns, secs).await?;
    let (before, after, held) = hold_streams(&server.addr, server.pid(), k).await?;
    let per = (after.saturating_sub(before)) as f64 / k as f64;
    eprintln!(
        "{name}: {k} streams open, RSS {before} -> {after} KiB ({per:.1} KiB per stream); SendMessage {rate:.0}/s"
    );
    drop(held);
    Ok(Row {
        name,
        streams: k,
        per_stream_kib: per,
        rate,
    })
}

fn python() -> Option<PathBuf> {
    let dir = std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        });
    let p = dir.join("a2a/venv/bin/python");
    p.exists().then_some(p)
}

async fn run() -> Result<(), Error> {
    let k = env_usize("RPCWIRE_BENCH_A2A_STREAMS", 1_000);
    let conns = env_usize("RPCWIRE_BENCH_A2A_CONNS", 32);
    let secs = env_usize("RPCWIRE_BENCH_A2A_SECS", 5) as u64;
    let wanted = 2 * k as u64 + 512;
    let _ = rlimit::increase_nofile_limit(wanted);

    let agent = cargo_build("rpcwire-example-a2a-agent", "a2a-agent")?;
    let mut rows = Vec::new();
    {
        let server = Server::start(Command::new(&agent).args([
            "--http",
            "127.0.0.1:0",
            "--step-ms",
            "3600000",
        ]))?;
        rows.push(measure("rpcwire-a2a (a2a-agent)", &server, k, conns, secs).await?);
    }
    {
        let file =
            std::env::temp_dir().join(format!("rpcwire-bench-a2a-{}.sqlite", std::process::id()));
        let store = format!("sqlite:{}", file.display());
        let server = Server::start(Command::new(&agent).args([
            "--http",
            "127.0.0.1:0",
            "--step-ms",
            "3600000",
            "--store",
            &store,
        ]))?;
        let row = measure(
            "rpcwire-a2a (a2a-agent --store sqlite)",
            &server,
            k,
            conns,
            secs,
        )
        .await;
        drop(server);
        for suffix in ["", "-wal", "-shm"] {
            let mut p = file.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
        rows.push(row?);
    }
    // Another build of the agent (an earlier commit's, say), measured in the same run.
    if let Some(baseline) = std::env::var_os("RPCWIRE_BENCH_A2A_BASELINE") {
        let server = Server::start(Command::new(baseline).args([
            "--http",
            "127.0.0.1:0",
            "--step-ms",
            "3600000",
        ]))?;
        rows.push(measure("a2a-agent, baseline build", &server, k, conns, secs).await?);
    }
    match python() {
        Some(py) => {
            let script = workspace_root().join("profiles/a2a/tests/py/sdk_agent.py");
            let server = Server::start(Command::new(py).arg(script).args(["0", "3600000"]))?;
            rows.push(measure("a2a-sdk 1.3.0 (Python, uvicorn)", &server, k, conns, secs).await?);
        }
        None => eprintln!(
            "a2a: the Python SDK is not installed (.ci/install/a2a-interop.sh): rpcwire alone"
        ),
    }

    let mut table = String::from(
        "| server | streams held open | memory per open stream | SendMessage calls/s | calls/s ratio |\n|---|---:|---:|---:|---:|\n",
    );
    let reference = rows
        .iter()
        .find(|r| r.name.starts_with("a2a-sdk"))
        .map(|r| r.rate);
    for r in &rows {
        let ratio = reference.map_or("—".to_owned(), |p| format!("{:.1}×", r.rate / p));
        table.push_str(&format!(
            "| {} | {} | {:.1} KiB | {:.0} | {ratio} |\n",
            r.name, r.streams, r.per_stream_kib, r.rate
        ));
    }
    print!("{table}");
    let out = workspace_root().join("target/bench-a2a.md");
    std::fs::write(&out, &table).map_err(|e| Error::io(format!("write {}", out.display()), e))?;
    Ok(())
}

fn main() -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("a2a: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("a2a: {e}");
            ExitCode::FAILURE
        }
    }
}
