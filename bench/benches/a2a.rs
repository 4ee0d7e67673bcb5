//! A2A over HTTP (`rpcwire-a2a`, `examples/a2a-agent`) against the official Python SDK's own
//! server (`a2a-sdk` 1.3.0 on uvicorn, `bench/py/a2a_sdk_agent.py`) with the same agent logic,
//! for each task store, in the same run: `cargo bench -p rpcwire-bench --bench a2a`.
//!
//! For each store (`RPCWIRE_BENCH_A2A_STORES`, default `memory,sqlite,postgres,redis`),
//! rpcwire's agent and then the Python agent, each a fresh process on a fresh store (a new
//! SQLite file in the system's temporary directory; a new PostgreSQL cluster from
//! `rpcwire_tests::postgres` for each server, `.ci/install/postgres.sh`; a new `redis-server`
//! from `rpcwire_tests::redis`, `.ci/install/redis.sh`). The Python SDK has no Redis task
//! store: the `redis` row is rpcwire's alone (compare it with the other stores' rows of the
//! same run):
//!
//! 1. `SendMessage` calls/s: C connections (`RPCWIRE_BENCH_A2A_CONNS`, default 32), keep-alive,
//!    each sending `SendMessage` "echo hello" (a task created, an artifact, completed, the task
//!    answered) back to back for `RPCWIRE_BENCH_A2A_SECS` (default 5) seconds after a warm-up
//!    of `RPCWIRE_BENCH_A2A_WARMUP_MS` (default 1 000); every answer is checked to be the
//!    completed task with its echo.
//! 2. Streaming calls/s: the same connections sending `SendStreamingMessage` "count N"
//!    (`RPCWIRE_BENCH_A2A_STEPS`, default 3, one step every `RPCWIRE_BENCH_A2A_STEP_MS`,
//!    default 0: the servers' own cost, not the agent's sleeping), each stream read to its end
//!    and checked: the task, working, a status update and an artifact chunk per step, then
//!    completed (2N + 3 events).
//!
//! With the memory store, also memory per open stream: right after the `SendMessage` load, on
//! the same server (whose count steps are an hour long; the streaming rate is then measured on
//! a second one), K clients (`RPCWIRE_BENCH_A2A_STREAMS`, default 1 000), one connection each,
//! send `SendStreamingMessage` "count 1" for a task that then waits; each reads its first two
//! events (the task, then working) and keeps the stream open. The server's `VmRSS` before and
//! after gives the memory per open stream (connection, task, stream buffer and all); the table
//! ends with whether rpcwire's is within the 16 KiB budget.
//!
//! An answer that is not the expected one is counted as an error, not as a call (the table
//! shows how many); a connection that fails ends the run. The Python side needs
//! `.ci/install/a2a-interop.sh`; without it only rpcwire is measured.
//! `RPCWIRE_BENCH_A2A_SDK_ARGS` adds options to the Python agent's command line (e.g.
//! `--sqlite-journal default`: SQLite's own journal instead of the WAL both stores use).
//! `RPCWIRE_BENCH_A2A_BASELINE=/path/to/a2a-agent` measures another build of the agent too (an
//! earlier commit's, with each store measured), in the same run, right after this one. The table is printed and written
//! to `target/bench-a2a.md`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{env_usize, read_response, Server};
use rpcwire_bench::{cargo_build, proc_status, workspace_root, Error};
use rpcwire_tests::postgres::Postgres;
use rpcwire_tests::redis::Redis;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Memory per open stream allowed with the in-memory store, KiB.
const BUDGET_KIB: f64 = 16.0;

/// The run's settings, from the environment.
struct Settings {
    streams: usize,
    conns: usize,
    secs: u64,
    warmup: Duration,
    steps: usize,
    step_ms: u64,
    stores: Vec<String>,
}

impl Settings {
    fn from_env() -> Settings {
        Settings {
            streams: env_usize("RPCWIRE_BENCH_A2A_STREAMS", 1_000).max(1),
            conns: env_usize("RPCWIRE_BENCH_A2A_CONNS", 32).max(1),
            secs: env_usize("RPCWIRE_BENCH_A2A_SECS", 5).max(1) as u64,
            warmup: Duration::from_millis(env_usize("RPCWIRE_BENCH_A2A_WARMUP_MS", 1_000) as u64),
            steps: env_usize("RPCWIRE_BENCH_A2A_STEPS", 3).clamp(1, 1000),
            step_ms: env_usize("RPCWIRE_BENCH_A2A_STEP_MS", 0) as u64,
            stores: std::env::var("RPCWIRE_BENCH_A2A_STORES")
                .unwrap_or_else(|_| "memory,sqlite,postgres,redis".into())
                .split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect(),
        }
    }
}

fn post(addr: &str, body: &str) -> Vec<u8> {
    format!(
        "POST / HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\na2a-version: 1.0\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn message_body(method: &str, text: &str, n: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{n},"method":"{method}","params":{{"message":{{"messageId":"m{n}","role":"ROLE_USER","parts":[{{"text":"{text}"}}]}}}}}}"#
    )
}

/// What a call's answer must be.
#[derive(Clone, Copy)]
enum Call {
    /// `SendMessage` "echo hello": the completed task with the echo artifact.
    Send,
    /// `SendStreamingMessage` "count N", read to the end: 2N + 3 events, the last completed.
    Stream(usize),
}

impl Call {
    fn body(self, n: u64) -> String {
        match self {
            Call::Send => message_body("SendMessage", "echo hello", n),
            Call::Stream(steps) => {
                message_body("SendStreamingMessage", &format!("count {steps}"), n)
            }
        }
    }

    /// Whether `body` is the answer this call must get.
    fn check(self, body: &[u8]) -> bool {
        match self {
            Call::Send => serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|v| {
                v.pointer("/result/task/status/state")
                    == Some(&serde_json::json!("TASK_STATE_COMPLETED"))
                    && v.pointer("/result/task/artifacts/0/parts/0/text")
                        == Some(&serde_json::json!("hello"))
            }),
            Call::Stream(steps) => {
                // The SSE events' `data:` lines; empty ones (rpcwire's first event, which only
                // sets the retry delay) and comments carry no JSON-RPC response.
                let events: Vec<serde_json::Value> = String::from_utf8_lossy(body)
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .filter_map(|d| serde_json::from_str(d).ok())
                    .collect();
                events.len() == 2 * steps + 3
                    && events[0].pointer("/result/task").is_some()
                    && events
                        .last()
                        .and_then(|e| e.pointer("/result/statusUpdate/status/state"))
                        == Some(&serde_json::json!("TASK_STATE_COMPLETED"))
            }
        }
    }
}

/// Calls/s and wrong answers of `call` over `conns` keep-alive connections for `secs`, after
/// a warm-up whose calls are not counted.
async fn rate(addr: &str, call: Call, s: &Settings) -> Result<(f64, u64), Error> {
    let done = Arc::new(AtomicU64::new(0));
    let wrong = Arc::new(AtomicU64::new(0));
    let counting = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let measure_from = start + s.warmup;
    let deadline = measure_from + Duration::from_secs(s.secs);
    let workers: Vec<_> = (0..s.conns)
        .map(|c| {
            let addr = addr.to_owned();
            let (done, wrong, counting) =
                (Arc::clone(&done), Arc::clone(&wrong), Arc::clone(&counting));
            tokio::spawn(async move {
                let mut stream = TcpStream::connect(&addr).await?;
                stream.set_nodelay(true)?;
                let mut buf = Vec::new();
                let mut n = (c as u64) << 32;
                while Instant::now() < deadline {
                    n += 1;
                    stream.write_all(&post(&addr, &call.body(n))).await?;
                    let (head, body) = read_response(&mut stream, &mut buf).await?;
                    if !head.starts_with("http/1.1 200") {
                        return Err(std::io::Error::other(format!("answered {head}")));
                    }
                    if Instant::now() >= measure_from {
                        counting.store(true, Ordering::Relaxed);
                        let counter = if call.check(&body) { &done } else { &wrong };
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

/// Opens `k` streams and holds them; the RSS of `pid` before and after, in KiB.
async fn hold_streams(addr: &str, pid: u32, k: usize) -> Result<(u64, u64, Vec<TcpStream>), Error> {
    let before = proc_status(pid)?.rss_kib;
    let mut held = Vec::with_capacity(k);
    for chunk in (0..k).collect::<Vec<_>>().chunks(100) {
        let opened = chunk.iter().map(|&n| {
            let addr = addr.to_owned();
            let request = post(&addr, &Call::Stream(1).body(n as u64));
            tokio::spawn(async move {
                let mut s = TcpStream::connect(&addr).await?;
                s.write_all(&request).await?;
                // Two `data:` events with a JSON-RPC response: the task and working.
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

/// One server's figures.
struct Row {
    store: String,
    name: String,
    send: (f64, u64),
    stream: (f64, u64),
    /// KiB per open stream and how many were open (memory store only).
    per_stream: Option<(f64, usize)>,
    python: bool,
}

/// How to start one kind of server with a given store and step.
enum Kind<'a> {
    Rpcwire(&'a Path),
    Python(&'a Path),
}

impl Kind<'_> {
    fn command(&self, store: &str, step_ms: u64) -> Command {
        let mut c = match self {
            Kind::Rpcwire(agent) => Command::new(agent),
            Kind::Python(python) => {
                let mut c = Command::new(python);
                c.arg(workspace_root().join("bench/py/a2a_sdk_agent.py"));
                // More options of the reference agent, e.g. `--sqlite-journal default`.
                if let Ok(more) = std::env::var("RPCWIRE_BENCH_A2A_SDK_ARGS") {
                    c.args(more.split_whitespace());
                }
                c
            }
        };
        c.args(["--http", "127.0.0.1:0", "--step-ms", &step_ms.to_string()])
            .args(["--store", store]);
        c
    }
}

/// A fresh store for one server: its `--store` argument and what keeps it alive (the
/// PostgreSQL or Redis server), removed when dropped.
struct FreshStore {
    arg: String,
    _postgres: Option<Postgres>,
    _redis: Option<Redis>,
    file: Option<PathBuf>,
}

impl FreshStore {
    fn new(store: &str, tag: &str) -> Result<Option<FreshStore>, Error> {
        Ok(match store {
            "memory" => Some(FreshStore {
                arg: "memory".into(),
                _postgres: None,
                _redis: None,
                file: None,
            }),
            "sqlite" => {
                let file = std::env::temp_dir().join(format!(
                    "rpcwire-bench-a2a-{}-{tag}.sqlite",
                    std::process::id()
                ));
                Some(FreshStore {
                    arg: format!("sqlite:{}", file.display()),
                    _postgres: None,
                    _redis: None,
                    file: Some(file),
                })
            }
            "postgres" => Postgres::start().map(|pg| FreshStore {
                arg: format!("postgres:{}", pg.url()),
                _postgres: Some(pg),
                _redis: None,
                file: None,
            }),
            "redis" => Redis::start().map(|redis| FreshStore {
                arg: format!("redis:{}", redis.url()),
                _postgres: None,
                _redis: Some(redis),
                file: None,
            }),
            other => return Err(Error::Server(format!("unknown store {other:?}"))),
        })
    }
}

impl Drop for FreshStore {
    fn drop(&mut self) {
        if let Some(file) = &self.file {
            for suffix in ["", "-wal", "-shm", "-journal"] {
                let mut p = file.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

async fn measure(
    kind: &Kind<'_>,
    name: &str,
    store: &str,
    s: &Settings,
) -> Result<Option<Row>, Error> {
    let tag = name.split_whitespace().next().unwrap_or("server");
    let Some(fresh) = FreshStore::new(store, tag)? else {
        return Ok(None);
    };
    let mut per_stream = None;
    let send = if store == "memory" {
        // Memory per open stream on the server that has just carried the `SendMessage` load
        // (its runtime and allocator warmed, finished tasks kept), as earlier runs measured
        // it: what one more stream costs, not the process's first growth. Its count steps
        // are an hour long, so the streaming rate is measured on a second server.
        let server = Server::start(&mut kind.command(&fresh.arg, 3_600_000), false)?;
        let send = rate(&server.addr, Call::Send, s).await?;
        let (before, after, held) = hold_streams(&server.addr, server.pid(), s.streams).await?;
        drop(held);
        eprintln!(
            "{name}: {} streams open, RSS {before} -> {after} KiB",
            s.streams
        );
        per_stream = Some((
            after.saturating_sub(before) as f64 / s.streams as f64,
            s.streams,
        ));
        Some(send)
    } else {
        None
    };
    let (send, stream) = {
        let server = Server::start(&mut kind.command(&fresh.arg, s.step_ms), false)?;
        let send = match send {
            Some(send) => send,
            None => rate(&server.addr, Call::Send, s).await?,
        };
        (send, rate(&server.addr, Call::Stream(s.steps), s).await?)
    };
    drop(fresh);
    eprintln!(
        "{name}, {store}: SendMessage {:.0}/s ({} wrong), streaming {:.0}/s ({} wrong)",
        send.0, send.1, stream.0, stream.1
    );
    Ok(Some(Row {
        store: store.to_owned(),
        name: name.to_owned(),
        send,
        stream,
        per_stream,
        python: matches!(kind, Kind::Python(_)),
    }))
}

fn table(rows: &[Row], s: &Settings) -> String {
    let mut out = format!(
        "| store | server | `SendMessage` calls/s | rpcwire ÷ Python | streaming calls/s (count {}, {} events) | rpcwire ÷ Python | memory per open stream ({} open) |\n|---|---|---:|---:|---:|---:|---:|\n",
        s.steps,
        2 * s.steps + 3,
        s.streams
    );
    let calls = |(rate, wrong): (f64, u64)| {
        if wrong == 0 {
            format!("{rate:.0}")
        } else {
            format!("{rate:.0} ({wrong} wrong answers)")
        }
    };
    for r in rows {
        let python = rows.iter().find(|p| p.python && p.store == r.store);
        let ratio = |pick: fn(&Row) -> f64| match python {
            Some(p) if !r.python && pick(p) > 0.0 => format!("{:.1}×", pick(r) / pick(p)),
            _ => "—".to_owned(),
        };
        let memory = r
            .per_stream
            .map_or("—".to_owned(), |(kib, _)| format!("{kib:.1} KiB"));
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {memory} |\n",
            r.store,
            r.name,
            calls(r.send),
            ratio(|r| r.send.0),
            calls(r.stream),
            ratio(|r| r.stream.0),
        ));
    }
    out
}

async fn run() -> Result<(), Error> {
    let s = Settings::from_env();
    let _ = rlimit::increase_nofile_limit(2 * s.streams as u64 + 512);
    let agent = cargo_build("rpcwire-example-a2a-agent", "a2a-agent")?;
    let baseline = std::env::var_os("RPCWIRE_BENCH_A2A_BASELINE").map(PathBuf::from);
    // The database stores need the SDK's `sqlite` and `postgresql` extras too.
    let py = common::interop_python(
        "a2a",
        "import a2a.server.tasks.database_task_store, aiosqlite, asyncpg",
    );
    if py.is_none() {
        eprintln!(
            "a2a: the Python SDK is not installed (.ci/install/a2a-interop.sh): rpcwire alone"
        );
    }
    let started = Instant::now();
    let mut rows = Vec::new();
    for store in &s.stores {
        let mut servers = vec![(Kind::Rpcwire(&agent), "rpcwire-a2a (a2a-agent)")];
        if let Some(b) = &baseline {
            servers.push((Kind::Rpcwire(b), "a2a-agent, baseline build"));
        }
        // The SDK ships no Redis task store.
        if let (Some(p), false) = (&py, store == "redis") {
            servers.push((Kind::Python(p), "a2a-sdk 1.3.0 (Python, uvicorn)"));
        }
        for (kind, name) in &servers {
            match measure(kind, name, store, &s).await? {
                Some(row) => rows.push(row),
                None => eprintln!("a2a: {store} skipped (its server is not installed)"),
            }
        }
    }
    let mut table = table(&rows, &s);
    // The budget of issue 26 for rpcwire with its in-memory store.
    if let Some((kib, _)) = rows
        .iter()
        .find(|r| !r.python && r.store == "memory")
        .and_then(|r| r.per_stream)
    {
        let verdict = if kib <= BUDGET_KIB { "holds" } else { "OVER" };
        table.push_str(&format!(
            "\nrpcwire, memory store: {kib:.1} KiB per open stream, budget ≤ {BUDGET_KIB} KiB: {verdict}\n"
        ));
    }
    print!("{table}");
    eprintln!("a2a: measured in {:.0} s", started.elapsed().as_secs_f64());
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
