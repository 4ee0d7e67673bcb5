//! JSON-RPC over WebSocket: `rpcwire serve --ws` against a jsonrpsee WebSocket server serving
//! the same method (`src/bin/jsonrpsee_ws.rs`), side by side in one run:
//! `cargo bench -p rpcwire-bench --bench ws`.
//!
//! - Throughput: W1 calls (`subtract [42,23]`, answer 19, every answer checked), one text
//!   message per call, from one connection pipelining (at most 1 024 unanswered) and from 64
//!   connections at once (at most 64 unanswered each); median of `RPCWIRE_BENCH_ROUNDS`
//!   (default 3) rounds, the servers alternating.
//! - Memory: `RPCWIRE_BENCH_CONNS` (default 10 000) connections opened in steps of 100, one W1
//!   call on each, all kept open; the server's resident memory (`VmRSS`) before and after,
//!   read once the connections have been idle for 2 s. Safety valve: a server past 2 GiB gets
//!   no more connections.
//!
//! The client is a tokio-tungstenite load generator in this process (the same for both
//! servers). The table is printed and written to `target/bench-ws.md`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use rpcwire_bench::{
    format_rate, median, proc_status, rpcwire_server, scale, scaled, workspace_root, Error,
    ProcStatus, STALL,
};
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;

/// Connections opened between two looks at the server's RSS.
const STEP: usize = 100;
/// The valve: a server past this RSS is not given more connections.
const RSS_LIMIT_KIB: u64 = 2 * 1024 * 1024;

/// A server under test: a child process and the address it listens on; killed on drop.
struct Server {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One of the two servers: how to start it.
#[derive(Clone)]
struct Subject {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
}

impl Subject {
    /// Starts it and waits for the stderr line that names its address (the last word,
    /// `ws://ADDR/` or `ADDR`).
    fn start(&self) -> Result<Server, Error> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io_err(format!("cannot start {}", self.program.display()), e))?;
        let Some(stderr) = child.stderr.take() else {
            let _ = child.kill();
            return Err(Error::Server("no stderr pipe".into()));
        };
        let (tx, rx) = std::sync::mpsc::channel();
        let name = self.name;
        std::thread::spawn(move || {
            let mut sent = false;
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                if !sent {
                    let word = line.rsplit(' ').next().unwrap_or_default();
                    let word = word.trim_start_matches("ws://").trim_end_matches('/');
                    if let Ok(addr) = word.parse::<SocketAddr>() {
                        sent = tx.send(addr).is_ok();
                        continue;
                    }
                }
                eprintln!("[{name}] {line}");
            }
        });
        match rx.recv_timeout(STALL) {
            Ok(addr) => Ok(Server { child, addr }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(Error::Server(format!("{name} did not print its address")))
            }
        }
    }
}

/// Runs `cargo build --release -p rpcwire-bench --features jsonrpsee --bin jsonrpsee-ws`.
fn jsonrpsee_server() -> Result<Subject, Error> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(cargo)
        .current_dir(workspace_root())
        .args([
            "build",
            "--release",
            "-p",
            "rpcwire-bench",
            "--features",
            "jsonrpsee",
            "--bin",
            "jsonrpsee-ws",
        ])
        .stdin(Stdio::null())
        .status()
        .map_err(|e| io_err("run cargo build", e))?;
    if !status.success() {
        return Err(Error::Server("cargo build of jsonrpsee-ws failed".into()));
    }
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join("target"));
    Ok(Subject {
        name: "jsonrpsee",
        program: target.join("release/jsonrpsee-ws"),
        args: vec!["127.0.0.1:0".into()],
    })
}

fn io_err(what: impl Into<String>, source: std::io::Error) -> Error {
    Error::Io {
        what: what.into(),
        source,
    }
}

fn w1(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":{id}}}"#)
}

fn client_config() -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(4 << 10)
        .write_buffer_size(16 << 10)
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn open(addr: SocketAddr) -> Result<Ws, Error> {
    let url = format!("ws://{addr}/");
    let connect = tokio_tungstenite::connect_async_with_config(url, Some(client_config()), true);
    match tokio::time::timeout(STALL, connect).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(e)) => Err(Error::Server(format!("WebSocket connect failed: {e}"))),
        Err(_) => Err(Error::Server("WebSocket connect timed out".into())),
    }
}

/// Checks one answer: W1's result is 19.
fn check(msg: Message) -> Result<(), Error> {
    match msg {
        Message::Text(t) if t.contains(r#""result":19"#) => Ok(()),
        Message::Ping(_) | Message::Pong(_) => {
            Err(Error::Server("unexpected control frame".into()))
        }
        other => Err(Error::Server(format!("bad answer: {other:?}"))),
    }
}

/// One connection pipelining `calls` W1 calls, at most `window` unanswered.
async fn conn_load(addr: SocketAddr, calls: u64, window: usize) -> Result<(), Error> {
    let ws = open(addr).await?;
    let (mut tx, mut rx) = ws.split();
    let slots = Arc::new(Semaphore::new(window));
    let writer_slots = Arc::clone(&slots);
    let writer = async move {
        let mut id = 0u64;
        while id < calls {
            let first = writer_slots
                .acquire()
                .await
                .map_err(|_| Error::Server("closed".into()))?;
            first.forget();
            let mut burst = 0;
            loop {
                id += 1;
                burst += 1;
                tx.feed(Message::text(w1(id)))
                    .await
                    .map_err(|e| Error::Server(format!("send: {e}")))?;
                if id >= calls || burst >= 64 {
                    break;
                }
                match writer_slots.try_acquire() {
                    Ok(p) => p.forget(),
                    Err(_) => break,
                }
            }
            tx.flush()
                .await
                .map_err(|e| Error::Server(format!("flush: {e}")))?;
        }
        Ok::<_, Error>(tx)
    };
    let reader = async move {
        let mut got = 0u64;
        while got < calls {
            match tokio::time::timeout(STALL, rx.next()).await {
                Ok(Some(Ok(msg))) => check(msg)?,
                Ok(other) => return Err(Error::Server(format!("connection ended: {other:?}"))),
                Err(_) => return Err(Error::Server("no answer within the stall timeout".into())),
            }
            got += 1;
            slots.add_permits(1);
        }
        Ok::<_, Error>(rx)
    };
    let (tx, rx) = tokio::try_join!(writer, reader)?;
    if let Ok(mut ws) = tx.reunite(rx) {
        let _ = ws.close(None).await;
    }
    Ok(())
}

/// `conns` connections at once, each pipelining `calls` calls; returns the elapsed time.
async fn load(
    addr: SocketAddr,
    conns: usize,
    calls: u64,
    window: usize,
) -> Result<Duration, Error> {
    let start = Instant::now();
    let tasks: Vec<_> = (0..conns)
        .map(|_| tokio::spawn(conn_load(addr, calls, window)))
        .collect();
    for t in tasks {
        t.await
            .map_err(|e| Error::Server(format!("load task: {e}")))??;
    }
    Ok(start.elapsed())
}

/// What one server's memory run found.
struct Memory {
    name: &'static str,
    opened: usize,
    before: ProcStatus,
    after: ProcStatus,
    time: Duration,
    stopped: Option<String>,
}

async fn memory(subject: &Subject, conns: usize) -> Result<Memory, Error> {
    let server = subject.start()?;
    let addr = server.addr;
    let pid = server.child.id();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = proc_status(pid)?;
    let start = Instant::now();
    let mut held: Vec<Ws> = Vec::with_capacity(conns);
    let mut stopped = None;
    let mut id = 0u64;
    while held.len() < conns {
        let step = STEP.min(conns - held.len());
        let opens: Vec<_> = (0..step)
            .map(|_| {
                id += 1;
                let call = id;
                tokio::spawn(async move {
                    let mut ws = open(addr).await?;
                    ws.send(Message::text(w1(call)))
                        .await
                        .map_err(|e| Error::Server(format!("send: {e}")))?;
                    match tokio::time::timeout(STALL, ws.next()).await {
                        Ok(Some(Ok(msg))) => check(msg)?,
                        other => return Err(Error::Server(format!("no answer: {other:?}"))),
                    }
                    Ok::<_, Error>(ws)
                })
            })
            .collect();
        for t in opens {
            match t.await {
                Ok(Ok(ws)) => held.push(ws),
                Ok(Err(e)) => stopped = Some(e.to_string()),
                Err(e) => stopped = Some(e.to_string()),
            }
        }
        if stopped.is_some() {
            break;
        }
        let now = proc_status(pid)?;
        if now.rss_kib > RSS_LIMIT_KIB {
            stopped = Some(format!("RSS {} KiB past the 2 GiB valve", now.rss_kib));
            break;
        }
    }
    let time = start.elapsed();
    // Idle, as connections mostly are: buffers a burst enlarged may be given back.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = proc_status(pid)?;
    let opened = held.len();
    // Drop the connections without a closing handshake (the server is killed next).
    drop(held);
    drop(server);
    Ok(Memory {
        name: subject.name,
        opened,
        before,
        after,
        time,
        stopped,
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ws bench: {e}");
            ExitCode::FAILURE
        }
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(default)
}

fn run() -> Result<(), Error> {
    let conns = env_usize("RPCWIRE_BENCH_CONNS", 10_000);
    let rounds = env_usize("RPCWIRE_BENCH_ROUNDS", 3);
    let wanted = 2 * conns as u64 + 512;
    let limit = rlimit::increase_nofile_limit(wanted).map_err(|e| Error::Io {
        what: "raise RLIMIT_NOFILE".into(),
        source: e,
    })?;
    if limit < wanted {
        eprintln!("ws bench: RLIMIT_NOFILE is {limit}, below {wanted}: expect to stop early");
    }
    let rpcwire = rpcwire_server()?;
    let cap = (conns + 100).to_string();
    let rpcwire = Subject {
        name: "rpcwire",
        program: rpcwire.program,
        args: vec![
            "serve".into(),
            "--ws".into(),
            "127.0.0.1:0".into(),
            "--max-connections".into(),
            cap,
        ],
    };
    let jsonrpsee = jsonrpsee_server()?;
    let subjects = [rpcwire, jsonrpsee];

    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| io_err("start the client runtime", e))?;

    let s = scale();
    let one_calls = scaled(200_000, s);
    let many_calls = scaled(3_000, s);
    // (label, connections, calls per connection, window)
    let scenarios = [
        (
            format!("1 conn × {one_calls} calls (window 1 024)"),
            1usize,
            one_calls,
            1024usize,
        ),
        (
            format!("64 conn × {many_calls} calls (window 64)"),
            64,
            many_calls,
            64,
        ),
    ];
    let mut rates = vec![vec![Vec::new(); subjects.len()]; scenarios.len()];
    for round in 0..rounds {
        for k in 0..subjects.len() {
            // Alternate which server goes first.
            let k = if round % 2 == 0 {
                k
            } else {
                subjects.len() - 1 - k
            };
            let subject = &subjects[k];
            let server = subject.start()?;
            for (i, (label, c, n, w)) in scenarios.iter().enumerate() {
                let elapsed = runtime.block_on(load(server.addr, *c, *n, *w))?;
                let rate = (*c as u64 * n) as f64 / elapsed.as_secs_f64();
                eprintln!(
                    "round {round}: {} {label}: {} calls/s",
                    subject.name,
                    format_rate(rate)
                );
                rates[i][k].push(rate);
            }
            drop(server);
        }
    }

    let mut memories = Vec::new();
    for subject in &subjects {
        let m = runtime.block_on(memory(subject, conns))?;
        eprintln!(
            "memory {}: {} connections, {} KiB -> {} KiB",
            m.name, m.opened, m.before.rss_kib, m.after.rss_kib
        );
        memories.push(m);
    }

    let mut out = String::new();
    out.push_str(
        "| scenario | jsonrpsee calls/s | rpcwire calls/s | ratio (rpcwire / jsonrpsee) |\n",
    );
    out.push_str("|---|---:|---:|---:|\n");
    for (i, (label, ..)) in scenarios.iter().enumerate() {
        let ours = median(&rates[i][0]).unwrap_or(0.0);
        let theirs = median(&rates[i][1]).unwrap_or(0.0);
        out.push_str(&format!(
            "| {label} | {} | {} | {:.2}x |\n",
            format_rate(theirs),
            format_rate(ours),
            if theirs > 0.0 { ours / theirs } else { 0.0 }
        ));
    }
    out.push('\n');
    out.push_str("| server | connections | RSS before | RSS after | per connection | threads | open + call all |\n");
    out.push_str("|---|---:|---:|---:|---:|---:|---:|\n");
    let mut per = Vec::new();
    for m in &memories {
        let per_conn = if m.opened > 0 {
            (m.after.rss_kib.saturating_sub(m.before.rss_kib)) as f64 / m.opened as f64
        } else {
            0.0
        };
        per.push(per_conn);
        out.push_str(&format!(
            "| {} | {} of {conns}{} | {:.1} MiB | {:.1} MiB | {:.1} KiB | {} → {} | {:.2} s |\n",
            m.name,
            m.opened,
            m.stopped
                .as_ref()
                .map_or(String::new(), |why| format!(" (stopped: {why})")),
            m.before.rss_kib as f64 / 1024.0,
            m.after.rss_kib as f64 / 1024.0,
            per_conn,
            m.before.threads,
            m.after.threads,
            m.time.as_secs_f64(),
        ));
    }
    if let [ours, theirs] = per[..] {
        if theirs > 0.0 {
            out.push_str(&format!(
                "\nMemory per connection, rpcwire / jsonrpsee: {:.2}x\n",
                ours / theirs
            ));
        }
    }
    println!("\n{out}");
    let path = workspace_root().join("target/bench-ws.md");
    if let Err(e) = std::fs::write(&path, &out) {
        eprintln!("ws bench: cannot write {}: {e}", path.display());
    }
    Ok(())
}
