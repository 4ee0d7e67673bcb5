//! JSON-RPC over HTTP: `rpcwire serve --http` against jsonrpsee's HTTP server (same method,
//! same runtime threads), side by side in one run: `cargo bench -p rpcwire-bench --bench http`.
//!
//! 1. Throughput: W1 (`subtract [42, 23]`) POSTed over 64 keep-alive HTTP/1.1 connections, one
//!    call outstanding per connection, for `RPCWIRE_BENCH_SECS` seconds (default 3) per run;
//!    the servers take turns, three runs each, medians compared. Every answer is checked.
//! 2. Memory: a fresh process of each server, `RPCWIRE_BENCH_CONNS` connections (default
//!    5 000) opened, one call made on each, all kept open and idle; resident memory per
//!    connection from `/proc/PID/status` before and after.
//!
//! 3. The floor: hyper alone answering W1's fixed text (no JSON-RPC), in the same turns, to
//!    show how much of a call's cost is hyper's and the kernel's.
//!
//! The load generator is one thread (a current-thread tokio runtime), so that it takes about
//! one of the machine's cores whatever the server does. The table is printed and written to
//! `target/bench-http.md`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rpcwire_bench::{cargo_build_with, median, proc_status, rpcwire_server, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const CONNECTIONS: usize = 64;
const BODY: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

struct Server {
    name: &'static str,
    program: PathBuf,
    args: Vec<String>,
    path: &'static str,
}

/// A running server process, killed on drop.
struct Running {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Server {
    fn start(&self) -> Result<Running, Error> {
        let mut child = Command::new(&self.program)
            .args(&self.args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::io(format!("start {}", self.program.display()), e))?;
        let stderr = child
            .stderr
            .take()
            .ok_or_else(|| Error::Server("no stderr".into()))?;
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let word = line.rsplit(' ').next().unwrap_or("");
                let word = word.strip_prefix("http://").unwrap_or(word);
                let word = word.split('/').next().unwrap_or("");
                if let Ok(addr) = word.parse::<SocketAddr>() {
                    let _ = tx.send(addr);
                } else {
                    eprintln!("[server] {line}");
                }
            }
        });
        let addr = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| Error::Server(format!("{} printed no address", self.name)))?;
        Ok(Running { child, addr })
    }

    fn request(&self) -> Vec<u8> {
        format!(
            "POST {} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{BODY}",
            self.path,
            BODY.len()
        )
        .into_bytes()
    }
}

/// Reads one HTTP/1.1 response (Content-Length bodies) and checks it is W1's answer.
async fn read_answer(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Error> {
    buf.clear();
    let mut chunk = [0u8; 1024];
    loop {
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|v| v.trim().parse().ok())
                .ok_or_else(|| Error::bad("no content-length", &buf[..end]))?;
            while buf.len() < end + 4 + len {
                let n = stream
                    .read(&mut chunk)
                    .await
                    .map_err(|e| Error::io("read", e))?;
                if n == 0 {
                    return Err(Error::Closed {
                        what: "body".into(),
                    });
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = &buf[end + 4..end + 4 + len];
            if !head.starts_with("http/1.1 200") || !body.windows(11).any(|w| w == b"\"result\":19")
            {
                return Err(Error::bad("not W1's answer", buf));
            }
            return Ok(());
        }
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| Error::io("read", e))?;
        if n == 0 {
            return Err(Error::Closed {
                what: "head".into(),
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Calls per second over `CONNECTIONS` keep-alive connections for `secs`.
fn throughput(server: &Server, addr: SocketAddr, secs: f64) -> Result<f64, Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("runtime", e))?;
    let request = server.request();
    rt.block_on(async move {
        let mut streams = Vec::new();
        for _ in 0..CONNECTIONS {
            let s = TcpStream::connect(addr)
                .await
                .map_err(|e| Error::io("connect", e))?;
            s.set_nodelay(true).map_err(|e| Error::io("nodelay", e))?;
            streams.push(s);
        }
        let start = Instant::now();
        let end = start + Duration::from_secs_f64(secs);
        let mut tasks = Vec::new();
        for mut s in streams {
            let request = request.clone();
            tasks.push(tokio::spawn(async move {
                let mut buf = Vec::with_capacity(512);
                let mut calls = 0u64;
                while Instant::now() < end {
                    s.write_all(&request)
                        .await
                        .map_err(|e| Error::io("write", e))?;
                    read_answer(&mut s, &mut buf).await?;
                    calls += 1;
                }
                Ok::<u64, Error>(calls)
            }));
        }
        let mut total = 0;
        for t in tasks {
            total += t
                .await
                .map_err(|e| Error::Server(format!("load task: {e}")))??;
        }
        Ok(total as f64 / start.elapsed().as_secs_f64())
    })
}

/// RSS per idle keep-alive connection, KiB: (before, after, per connection).
fn memory(server: &Server, conns: usize) -> Result<(u64, u64, f64), Error> {
    let running = server.start()?;
    let pid = running.child.id();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("runtime", e))?;
    let request = server.request();
    // One warm-up call so that lazily made state is there before the first reading.
    rt.block_on(async {
        let mut s = TcpStream::connect(running.addr)
            .await
            .map_err(|e| Error::io("connect", e))?;
        s.write_all(&request)
            .await
            .map_err(|e| Error::io("write", e))?;
        read_answer(&mut s, &mut Vec::new()).await
    })?;
    std::thread::sleep(Duration::from_millis(500));
    let before = proc_status(pid)?.rss_kib;
    let held = rt.block_on(async {
        let mut held = Vec::with_capacity(conns);
        let mut buf = Vec::new();
        for _ in 0..conns {
            let mut s = TcpStream::connect(running.addr)
                .await
                .map_err(|e| Error::io("connect", e))?;
            s.write_all(&request)
                .await
                .map_err(|e| Error::io("write", e))?;
            read_answer(&mut s, &mut buf).await?;
            held.push(s);
        }
        Ok::<_, Error>(held)
    })?;
    // Let the servers give back what they give back when connections go quiet.
    std::thread::sleep(Duration::from_secs(2));
    let after = proc_status(pid)?.rss_kib;
    drop(held);
    Ok((
        before,
        after,
        (after.saturating_sub(before)) as f64 / conns as f64,
    ))
}

fn run() -> Result<(), Error> {
    let secs: f64 = std::env::var("RPCWIRE_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3.0);
    let conns: usize = std::env::var("RPCWIRE_BENCH_CONNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let wanted = conns as u64 + 512;
    if let Ok((soft, hard)) = rlimit::getrlimit(rlimit::Resource::NOFILE) {
        if soft < wanted {
            let _ = rlimit::setrlimit(rlimit::Resource::NOFILE, wanted.min(hard), hard);
        }
    }
    let rpcwire = rpcwire_server()?;
    let servers = [
        Server {
            name: "rpcwire",
            program: rpcwire.program,
            args: vec!["serve".into(), "--http".into(), "127.0.0.1:0".into()],
            path: "/rpc",
        },
        Server {
            name: "jsonrpsee",
            program: cargo_build_with("rpcwire-bench", "jsonrpsee-http", &["jsonrpsee"])?,
            args: vec![],
            path: "/",
        },
        Server {
            name: "hyper floor (fixed answer, no JSON-RPC)",
            program: cargo_build_with("rpcwire-bench", "hyper-floor", &["jsonrpsee"])?,
            args: vec![],
            path: "/",
        },
    ];
    let running: Vec<Running> = servers
        .iter()
        .map(Server::start)
        .collect::<Result<_, _>>()?;
    let mut rates = vec![Vec::new(); servers.len()];
    for round in 0..3 {
        for (i, server) in servers.iter().enumerate() {
            let rate = throughput(server, running[i].addr, secs)?;
            eprintln!("round {round}: {} {rate:.0} calls/s", server.name);
            rates[i].push(rate);
        }
    }
    drop(running);
    let mut mem = Vec::new();
    // Memory of the two JSON-RPC servers only.
    for server in &servers[..2] {
        let m = memory(server, conns)?;
        eprintln!("{}: {:.1} KiB per idle connection", server.name, m.2);
        mem.push(m);
    }
    let med: Vec<f64> = rates.iter().map(|r| median(r).unwrap_or(0.0)).collect();
    let mut table = String::new();
    table.push_str(&format!(
        "| server | W1 calls/s, {CONNECTIONS} keep-alive connections (median of 3 × {secs} s) | ratio to jsonrpsee | RSS before | RSS after {conns} idle connections | per idle connection |\n|---|---:|---:|---:|---:|---:|\n"
    ));
    for (i, server) in servers.iter().enumerate() {
        let memory = match mem.get(i) {
            Some(m) => format!(
                "{:.1} MiB | {:.1} MiB | {:.1} KiB",
                m.0 as f64 / 1024.0,
                m.1 as f64 / 1024.0,
                m.2
            ),
            None => "– | – | –".to_owned(),
        };
        table.push_str(&format!(
            "| {} | {:.0} | {:.2}x | {memory} |\n",
            server.name,
            med[i],
            med[i] / med[1],
        ));
    }
    println!("{table}");
    let out = rpcwire_bench::workspace_root().join("target/bench-http.md");
    let _ = std::fs::write(out, &table);
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("http bench: {e}");
            ExitCode::FAILURE
        }
    }
}
