//! MCP Streamable HTTP sessions (2025-11-25) with and without a shared store, against the
//! official Python SDK's server, in the same run: `cargo bench -p rpcwire-bench --bench
//! mcp_store`.
//!
//! The servers (`RPCWIRE_BENCH_MCP_SERVERS`, default `own,memory,redis,python,python-events`),
//! each a fresh process measured alone:
//!
//! - `own`: `examples/mcp-server --http` with its own session table (no shared store, the
//!   default);
//! - `memory`: the same with `--store memory` (the shared-store code path on a `MemoryStore`
//!   in the process: every request reads its session from the store, every stream's events
//!   are appended to its log);
//! - `redis`: the same with `--store redis://...` on a fresh Redis of its own
//!   (`rpcwire_tests::redis::Redis`, `.ci/install/redis.sh`; skipped without it);
//! - `python`: the Python SDK's `MCPServer` (mcp 2.3.0, `bench/py/mcp_sdk_server.py`, under
//!   uvicorn) with the same two tools: sessions in its process memory, no event store (the SDK
//!   ships no shared store and no event store);
//! - `python-events`: the same with the script's small in-memory `EventStore`, so that its
//!   streams are resumable as rpcwire's are.
//!
//! On each:
//!
//! 1. `tools/call` calls/s: C connections (`RPCWIRE_BENCH_MCP_CONNS`, default 32), keep-alive,
//!    each `initialize`s a session of its own (then `notifications/initialized`) and calls
//!    `add` {a: 2, b: 3} back to back for `RPCWIRE_BENCH_MCP_SECS` (default 5) seconds after a
//!    warm-up of `RPCWIRE_BENCH_MCP_WARMUP_MS` (default 1 000); every answer is checked (the
//!    text `5`, in a JSON body or in an event stream).
//! 2. Streamed calls/s: the same with `count` {to: N, delay_ms: 0} and a progress token
//!    (`RPCWIRE_BENCH_MCP_STEPS`, default 3): each stream read to its end and checked (N
//!    progress notifications, then the answer `counted to N`).
//! 3. Memory per open session: K more sessions (`RPCWIRE_BENCH_MCP_SESSIONS`, default 1 000)
//!    `initialize`d over C connections and left open (MCP sessions outlive their
//!    connections); the server's `VmRSS` before and after, per session; with Redis also the
//!    growth of Redis's `used_memory` per session.
//!
//! `RPCWIRE_BENCH_SCALE` multiplies the seconds, the warm-up and K (`0.2`: a run of about half
//! a minute). A wrong answer is counted, not taken as a call; a connection that fails ends the
//! run. The Python servers need `.ci/install/mcp-interop.sh`; without it only rpcwire is
//! measured. The table is printed and written to `target/bench-mcp-store.md`.

use std::io::{Read, Write};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{env_usize, read_response, Server};
use rpcwire_bench::{cargo_build, proc_status, scale, workspace_root, Error};
use rpcwire_tests::redis::Redis;
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;

/// The run's settings, from the environment.
struct Settings {
    conns: usize,
    secs: f64,
    warmup: Duration,
    steps: usize,
    sessions: usize,
    servers: Vec<String>,
}

impl Settings {
    fn from_env() -> Settings {
        let scale = scale();
        let scaled = |n: usize| ((n as f64 * scale).round() as usize).max(1);
        Settings {
            conns: env_usize("RPCWIRE_BENCH_MCP_CONNS", 32).max(1),
            secs: env_usize("RPCWIRE_BENCH_MCP_SECS", 5).max(1) as f64 * scale,
            warmup: Duration::from_millis(
                scaled(env_usize("RPCWIRE_BENCH_MCP_WARMUP_MS", 1_000)) as u64
            ),
            steps: env_usize("RPCWIRE_BENCH_MCP_STEPS", 3).clamp(1, 1000),
            sessions: scaled(env_usize("RPCWIRE_BENCH_MCP_SESSIONS", 1_000)),
            servers: std::env::var("RPCWIRE_BENCH_MCP_SERVERS")
                .unwrap_or_else(|_| "own,memory,redis,python,python-events".into())
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

/// One POST to `/mcp`, in the session `session` once there is one.
fn post(addr: &str, session: Option<&str>, body: &str) -> Vec<u8> {
    let session = session.map_or(String::new(), |s| {
        format!("mcp-session-id: {s}\r\nmcp-protocol-version: 2025-11-25\r\n")
    });
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n{session}content-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// The JSON-RPC messages of a body: the body itself (JSON), or the `data:` of each event of
/// an event stream (empty ones, priming events, carry none).
fn messages(body: &[u8]) -> Vec<Value> {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        return vec![v];
    }
    String::from_utf8_lossy(body)
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .filter_map(|d| serde_json::from_str(d).ok())
        .collect()
}

/// A connection with a session of its own.
struct Session {
    stream: TcpStream,
    buf: Vec<u8>,
    id: String,
}

/// Connects, `initialize`s a session and sends `notifications/initialized`.
async fn open_session(addr: &str) -> std::io::Result<Session> {
    let mut stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let mut buf = Vec::new();
    let init = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
    stream.write_all(&post(addr, None, init)).await?;
    let (head, body) = read_response(&mut stream, &mut buf).await?;
    let id = head
        .lines()
        .find_map(|l| l.strip_prefix("mcp-session-id:"))
        .map(|v| v.trim().to_owned())
        .ok_or_else(|| std::io::Error::other("no mcp-session-id"))?;
    let ok = messages(&body)
        .iter()
        .any(|m| m.pointer("/result/protocolVersion").is_some());
    if !ok {
        return Err(std::io::Error::other("initialize was not answered"));
    }
    let initialized = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    stream
        .write_all(&post(addr, Some(&id), initialized))
        .await?;
    read_response(&mut stream, &mut buf).await?;
    Ok(Session { stream, buf, id })
}

/// What a call is and what its answer must be.
#[derive(Clone, Copy)]
enum Call {
    /// `add` {a: 2, b: 3}: the text `5`.
    Add,
    /// `count` {to: N, delay_ms: 0} with a progress token: N progress notifications, then
    /// `counted to N`.
    Count(usize),
}

impl Call {
    fn body(self, n: u64) -> String {
        match self {
            Call::Add => format!(
                r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"add","arguments":{{"a":2,"b":3}}}}}}"#
            ),
            Call::Count(steps) => format!(
                r#"{{"jsonrpc":"2.0","id":{n},"method":"tools/call","params":{{"name":"count","arguments":{{"to":{steps},"delay_ms":0}},"_meta":{{"progressToken":"p{n}"}}}}}}"#
            ),
        }
    }

    fn check(self, n: u64, body: &[u8]) -> bool {
        let all = messages(body);
        let answer = all
            .iter()
            .find(|m| m.get("id").and_then(Value::as_u64) == Some(n));
        let text = answer
            .and_then(|a| a.pointer("/result/content/0/text"))
            .and_then(Value::as_str);
        match self {
            Call::Add => text == Some("5"),
            Call::Count(steps) => {
                let token = format!("p{n}");
                let progress = all
                    .iter()
                    .filter(|m| {
                        m["method"] == "notifications/progress"
                            && m.pointer("/params/progressToken").and_then(Value::as_str)
                                == Some(token.as_str())
                    })
                    .count();
                progress == steps && text == Some(format!("counted to {steps}").as_str())
            }
        }
    }
}

/// Calls/s and wrong answers of `call` over `conns` connections (a session each) for `secs`,
/// after a warm-up whose calls are not counted.
async fn rate(addr: &str, call: Call, s: &Settings) -> Result<(f64, u64), Error> {
    let done = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let measure_from = start + s.warmup;
    let deadline = measure_from + Duration::from_secs_f64(s.secs);
    let workers: Vec<_> = (0..s.conns)
        .map(|_| {
            let addr = addr.to_owned();
            let (done, wrong) = (Arc::clone(&done), Arc::clone(&wrong));
            tokio::spawn(async move {
                let mut session = open_session(&addr).await?;
                let mut n = 0;
                while Instant::now() < deadline {
                    n += 1;
                    let request = post(&addr, Some(&session.id), &call.body(n));
                    session.stream.write_all(&request).await?;
                    let (_, body) = read_response(&mut session.stream, &mut session.buf).await?;
                    if Instant::now() >= measure_from {
                        let counter = if call.check(n, &body) { &done } else { &wrong };
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
                Ok::<_, std::io::Error>(())
            })
        })
        .collect();
    for w in workers {
        w.await
            .map_err(|e| Error::Server(e.to_string()))?
            .map_err(|e| Error::io("a call", e))?;
    }
    let measured = start.elapsed().saturating_sub(s.warmup).as_secs_f64();
    Ok((
        done.load(Ordering::Relaxed) as f64 / measured,
        wrong.load(Ordering::Relaxed),
    ))
}

/// Opens `k` sessions over `conns` connections (each closed after its share) and returns
/// how many were opened.
async fn open_sessions(addr: &str, k: usize, conns: usize) -> Result<usize, Error> {
    let opened = Arc::new(AtomicU64::new(0));
    let per = k.div_ceil(conns);
    let workers: Vec<_> = (0..conns)
        .map(|c| {
            let (addr, opened) = (addr.to_owned(), Arc::clone(&opened));
            let mine = per.min(k.saturating_sub(c * per));
            tokio::spawn(async move {
                for _ in 0..mine {
                    open_session(&addr).await?;
                    opened.fetch_add(1, Ordering::Relaxed);
                }
                Ok::<_, std::io::Error>(())
            })
        })
        .collect();
    for w in workers {
        w.await
            .map_err(|e| Error::Server(e.to_string()))?
            .map_err(|e| Error::io("open a session", e))?;
    }
    Ok(opened.load(Ordering::Relaxed) as usize)
}

/// Redis's `used_memory` (bytes), by `INFO memory` on a connection of its own.
fn redis_used_memory(redis: &Redis) -> Result<u64, Error> {
    let url = redis.url();
    let addr = url
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .to_owned();
    let mut s =
        std::net::TcpStream::connect(&addr).map_err(|e| Error::io("connect to Redis", e))?;
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .map_err(|e| Error::io("Redis", e))?;
    s.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nmemory\r\n")
        .map_err(|e| Error::io("INFO memory", e))?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 8192];
    // A bulk string: `$LEN\r\n` then LEN bytes; `used_memory:` is in its first lines.
    while !String::from_utf8_lossy(&reply).contains("used_memory_human") {
        let n = s
            .read(&mut chunk)
            .map_err(|e| Error::io("read INFO memory", e))?;
        if n == 0 {
            break;
        }
        reply.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8_lossy(&reply)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| Error::Server("no used_memory in INFO memory".into()))
}

/// One server's figures.
struct Row {
    key: String,
    name: String,
    add: (f64, u64),
    count: (f64, u64),
    /// KiB per session in the server, sessions opened, and in Redis (KiB per session).
    per_session: (f64, usize, Option<f64>),
}

async fn measure(
    key: &str,
    server: Server,
    redis: Option<&Redis>,
    name: &str,
    s: &Settings,
) -> Result<Row, Error> {
    let add = rate(&server.addr, Call::Add, s).await?;
    let count = rate(&server.addr, Call::Count(s.steps), s).await?;
    let rss_before = proc_status(server.pid())?.rss_kib;
    let redis_before = redis.map(redis_used_memory).transpose()?;
    let opened = open_sessions(&server.addr, s.sessions, s.conns).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let rss_after = proc_status(server.pid())?.rss_kib;
    let redis_after = redis.map(redis_used_memory).transpose()?;
    let per = |before: u64, after: u64| after.saturating_sub(before) as f64 / opened.max(1) as f64;
    let in_redis = redis_before
        .zip(redis_after)
        .map(|(b, a)| per(b, a) / 1024.0);
    eprintln!(
        "{name}: tools/call {:.0}/s ({} wrong), streamed {:.0}/s ({} wrong), {opened} sessions: RSS {rss_before} -> {rss_after} KiB",
        add.0, add.1, count.0, count.1
    );
    Ok(Row {
        key: key.to_owned(),
        name: name.to_owned(),
        add,
        count,
        per_session: (per(rss_before, rss_after), opened, in_redis),
    })
}

fn table(rows: &[Row], s: &Settings) -> String {
    let reference = rows.iter().find(|r| r.key == "own");
    let python = rows.iter().find(|r| r.key == "python");
    let mut out = format!(
        "| server | `tools/call` calls/s | ÷ own table | ÷ Python | streamed calls/s (count {}) | ÷ own table | ÷ Python | KiB per open session ({} sessions) | in Redis |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n",
        s.steps, s.sessions
    );
    let calls = |(rate, wrong): (f64, u64)| {
        if wrong == 0 {
            format!("{rate:.0}")
        } else {
            format!("{rate:.0} ({wrong} wrong answers)")
        }
    };
    for r in rows {
        let ratio = |to: Option<&Row>, pick: fn(&Row) -> f64| match to {
            Some(t) if !std::ptr::eq(t, r) && pick(t) > 0.0 => {
                format!("{:.2}x", pick(r) / pick(t))
            }
            _ => "—".to_owned(),
        };
        let (kib, _, in_redis) = r.per_session;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {kib:.1} | {} |\n",
            r.name,
            calls(r.add),
            ratio(reference, |r| r.add.0),
            ratio(python, |r| r.add.0),
            calls(r.count),
            ratio(reference, |r| r.count.0),
            ratio(python, |r| r.count.0),
            in_redis.map_or("—".to_owned(), |k| format!("{k:.1}")),
        ));
    }
    out
}

async fn run() -> Result<(), Error> {
    let s = Settings::from_env();
    let _ = rlimit::increase_nofile_limit(4 * s.conns as u64 + 1024);
    let mcp_server = cargo_build("rpcwire-example-mcp-server", "mcp-server")?;
    let py = common::interop_python("mcp", "import mcp.server.mcpserver, uvicorn");
    let started = Instant::now();
    let mut rows = Vec::new();
    for key in &s.servers {
        let rpcwire = |store: Option<&str>| {
            let mut c = Command::new(&mcp_server);
            c.args([
                "--http",
                "127.0.0.1:0",
                "--quiet",
                "--max-sessions",
                "1000000",
            ]);
            if let Some(store) = store {
                c.args(["--store", store]);
            }
            c
        };
        let python_server = |events: &str| {
            py.as_ref().map(|p| {
                let mut c = Command::new(p);
                c.arg(workspace_root().join("bench/py/mcp_sdk_server.py"))
                    .args(["--event-store", events]);
                c
            })
        };
        let (name, redis, server) = match key.as_str() {
            "own" => (
                "rpcwire, own session table (no store)",
                None,
                Server::start(&mut rpcwire(None), true)?,
            ),
            "memory" => (
                "rpcwire, `--store memory` (MemoryStore)",
                None,
                Server::start(&mut rpcwire(Some("memory")), true)?,
            ),
            "redis" => {
                let Some(redis) = Redis::start() else {
                    eprintln!("mcp_store: redis skipped (.ci/install/redis.sh)");
                    continue;
                };
                let server = Server::start(&mut rpcwire(Some(&redis.url())), true)?;
                (
                    "rpcwire, `--store redis://` (RedisStore)",
                    Some(redis),
                    server,
                )
            }
            "python" | "python-events" => {
                let events = if key == "python" { "none" } else { "memory" };
                let Some(mut cmd) = python_server(events) else {
                    eprintln!("mcp_store: {key} skipped (.ci/install/mcp-interop.sh)");
                    continue;
                };
                let name = if key == "python" {
                    "mcp 2.3.0 (Python, uvicorn), no event store"
                } else {
                    "mcp 2.3.0 (Python, uvicorn), in-memory EventStore"
                };
                (name, None, Server::start(&mut cmd, false)?)
            }
            other => return Err(Error::Server(format!("unknown server {other:?}"))),
        };
        rows.push(measure(key, server, redis.as_ref(), name, &s).await?);
    }
    let table = table(&rows, &s);
    print!("{table}");
    eprintln!(
        "mcp_store: measured in {:.0} s ({} connections, {:.1} s per rate after {} ms warm-up)",
        started.elapsed().as_secs_f64(),
        s.conns,
        s.secs,
        s.warmup.as_millis()
    );
    let out = workspace_root().join("target/bench-mcp-store.md");
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
            eprintln!("mcp_store: no runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcp_store: {e}");
            ExitCode::FAILURE
        }
    }
}
