//! JSON-RPC over HTTP: `rpcwire serve --http` against jsonrpsee's HTTP server (same method,
//! same runtime threads), side by side in one run: `cargo bench -p rpcwire-bench --bench http`.
//!
//! 1. Throughput: W1 (`subtract [42, 23]`) POSTed over 64 keep-alive HTTP/1.1 connections, one
//!    call outstanding per connection, for `RPCWIRE_BENCH_SECS` seconds (default 3) per run;
//!    the servers take turns, three runs each, medians compared, with each load generator
//!    (below). The CPU time the server and the load generator spent per call is measured too.
//!    Two setups:
//!    - one core each: the server (one worker thread) on CPU 1 and the load generator on
//!      CPU 0, pinned with `taskset`, so that the load generator never takes the server's CPU
//!      and calls per second measure the server (it runs at its core's full use);
//!    - shared: the server's workers (one per core) and the load generator share both cores,
//!      as the scheduler places them.
//! 2. Memory: a fresh process of each server, `RPCWIRE_BENCH_CONNS` connections (default
//!    5 000) opened, one call made on each, all kept open and idle; resident memory per
//!    connection from `/proc/PID/status` before and after.
//!
//! 3. Two floors, in the same turns: hyper alone answering W1's fixed text (no JSON-RPC), to
//!    show how much of a call's cost is hyper's; and `epoll-floor`, a bare `mio` loop that
//!    answers each whole request with that text (no HTTP library, no runtime), with the same
//!    system calls per call as the servers: no server can go faster on this machine, so its
//!    ratio to jsonrpsee is the most any server can show, and the table gives each server's
//!    share of it.
//!
//! Three load generators take turns, each one thread, so that it takes about one of the
//! machine's cores whatever the server does:
//! - the bench's own client (a current-thread tokio runtime), which checks every answer;
//! - `wrk` (`apt-get install wrk`), a C client in wide use, when it is installed: the same
//!   request from a Lua script, `-t1 -c64`; it checks status codes only (a non-2xx answer or
//!   a socket error fails the run). Without it the bench says so and leaves its rows out;
//! - a busy-polling client (one `mio` poll with a zero timeout, every answer checked), in the
//!   one-core-each setup only: it never sleeps, so the server never pays to wake it, and it
//!   costs the least per call of the three, so the server's core is the limit.
//!
//! Why three: a server's kernel time per call on loopback moves with the client's timing
//! (which side frees a segment's memory, whether the peer is asleep when woken), by up to a
//! fifth for the same server, so a ratio measured with one client alone can flatter one server.
//!
//! The table is printed and written to `target/bench-http.md`.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rpcwire_bench::{
    cargo_build_with, children_cpu, http_content_length, median, proc_cpu, proc_status,
    rpcwire_server, Error, STALL,
};
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

/// Where the server and the load generator run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Setup {
    /// Server on CPU 1 with one worker thread, load generator on CPU 0.
    OneCoreEach,
    /// Server with one worker per core; nothing pinned.
    Shared,
}

impl Setup {
    fn label(self) -> &'static str {
        match self {
            Setup::OneCoreEach => "one core each (server: 1 worker on CPU 1; load: CPU 0)",
            Setup::Shared => "shared (server: 2 workers; load and server share both cores)",
        }
    }
}

/// Pins the calling thread to CPU `cpu` (with `taskset`, on its thread id).
fn pin_this_thread(cpu: usize) -> Result<(), Error> {
    let me = std::fs::read_link("/proc/thread-self").map_err(|e| Error::io("thread id", e))?;
    let tid = me
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| Error::Server("no thread id".into()))?
        .to_owned();
    let status = Command::new("taskset")
        .args(["-pc", &cpu.to_string(), &tid])
        .stdout(Stdio::null())
        .status()
        .map_err(|e| Error::io("taskset", e))?;
    if status.success() {
        Ok(())
    } else {
        Err(Error::Server(format!("taskset -pc {cpu} {tid}: {status}")))
    }
}

/// The client that makes the calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Generator {
    /// The bench's own client: every answer checked.
    Own,
    /// `wrk`, with the request from a Lua script: status codes checked.
    Wrk,
    /// The bench's busy-polling client: every answer checked; one core each only.
    BusyPoll,
}

impl Generator {
    fn label(self) -> &'static str {
        match self {
            Generator::Own => "bench client",
            Generator::Wrk => "wrk",
            Generator::BusyPoll => "busy-polling client",
        }
    }
}

/// Whether `wrk` can be started.
fn wrk_installed() -> bool {
    Command::new("wrk")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok()
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
    fn start(&self, setup: Setup) -> Result<Running, Error> {
        let mut command = match setup {
            Setup::OneCoreEach => {
                let mut c = Command::new("taskset");
                c.arg("-c").arg("1").arg(&self.program);
                c.env("RPCWIRE_THREADS", "1");
                c
            }
            Setup::Shared => {
                let mut c = Command::new(&self.program);
                c.env("RPCWIRE_THREADS", "2");
                c
            }
        };
        let mut child = command
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

/// Whether `buf` starts with one whole HTTP/1.1 response (Content-Length body) to W1: its
/// length if so, `None` while more bytes are needed, an error if it is not W1's answer. The
/// head is read in place, with no allocation: this runs once per call in the load generators.
fn whole_answer(buf: &[u8]) -> Result<Option<usize>, Error> {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return Ok(None);
    };
    let head = &buf[..end];
    let len = http_content_length(head).ok_or_else(|| Error::bad("no content-length", head))?;
    let total = end + 4 + len;
    let Some(body) = buf.get(end + 4..total) else {
        return Ok(None);
    };
    if !head.starts_with(b"HTTP/1.1 200") || !body.windows(11).any(|w| w == b"\"result\":19") {
        return Err(Error::bad("not W1's answer", buf));
    }
    Ok(Some(total))
}

/// Reads one HTTP/1.1 response and checks it is W1's answer ([`whole_answer`]).
async fn read_answer(stream: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Error> {
    buf.clear();
    let mut chunk = [0u8; 1024];
    loop {
        if whole_answer(buf)?.is_some() {
            return Ok(());
        }
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| Error::io("read", e))?;
        if n == 0 {
            return Err(Error::Closed {
                what: "answer".into(),
            });
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// One turn of load on one server.
#[derive(Debug, Clone, Copy)]
struct Turn {
    /// Calls answered per second.
    rate: f64,
    /// The server's CPU time per call, microseconds.
    server_us: f64,
    /// The load generator's CPU time per call, microseconds.
    load_us: f64,
}

impl Turn {
    /// The turn of a load generator in the calling thread that made `calls` since `start`,
    /// when the server's and this thread's CPU times were `cpu_then`.
    fn since(
        calls: u64,
        start: Instant,
        server_pid: u32,
        cpu_then: (Duration, Duration),
    ) -> Result<Turn, Error> {
        let elapsed = start.elapsed().as_secs_f64();
        let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
        Ok(Turn {
            rate: calls as f64 / elapsed,
            server_us: per_call(proc_cpu(server_pid)?.saturating_sub(cpu_then.0)),
            load_us: per_call(thread_cpu()?.saturating_sub(cpu_then.1)),
        })
    }
}

/// Calls per second over `CONNECTIONS` keep-alive connections for `secs`, with the CPU time the
/// server and the load generator spent per call.
fn throughput(
    server: &Server,
    running: &Running,
    secs: f64,
    setup: Setup,
    generator: Generator,
) -> Result<Turn, Error> {
    let addr = running.addr;
    let server_pid = running.child.id();
    let request = server.request();
    // A thread of its own, so that pinning it leaves the bench's main thread alone.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                if setup == Setup::OneCoreEach {
                    pin_this_thread(0)?;
                }
                if generator == Generator::BusyPoll {
                    busy_load(addr, server_pid, &request, secs)
                } else {
                    load(addr, server_pid, request, secs)
                }
            })
            .join()
            .map_err(|_| Error::Server("load thread panicked".into()))?
    })
}

/// One turn of `wrk` on one server: one thread, `CONNECTIONS` connections, for `secs` (whole
/// seconds, at least one). `script` is the Lua file that makes W1's request.
fn wrk_turn(
    server: &Server,
    running: &Running,
    secs: f64,
    setup: Setup,
    script: &Path,
) -> Result<Turn, Error> {
    let mut command = match setup {
        Setup::OneCoreEach => {
            let mut c = Command::new("taskset");
            c.args(["-c", "0", "wrk"]);
            c
        }
        Setup::Shared => Command::new("wrk"),
    };
    command
        .args(["-t1", "-c", &CONNECTIONS.to_string()])
        .arg("-d")
        .arg(format!("{}s", secs.round().max(1.0) as u64))
        .arg("-s")
        .arg(script)
        .arg(format!("http://{}{}", running.addr, server.path))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    let server_pid = running.child.id();
    let (server_cpu, load_cpu) = (proc_cpu(server_pid)?, children_cpu()?);
    // `output` waits for wrk, so its CPU time is in the children's total after this.
    let out = command.output().map_err(|e| Error::io("wrk", e))?;
    let server_cpu = proc_cpu(server_pid)?.saturating_sub(server_cpu);
    let load_cpu = children_cpu()?.saturating_sub(load_cpu);
    let text = String::from_utf8_lossy(&out.stdout);
    // wrk prints these lines only when some answer was not 2xx or a socket failed.
    if !out.status.success() || text.contains("Non-2xx") || text.contains("Socket errors") {
        return Err(Error::bad("wrk saw failed calls", &out.stdout));
    }
    // "  1234567 requests in 3.00s, 190.31MB read" and "Requests/sec: 411522.31".
    let calls = text
        .lines()
        .find_map(|l| l.trim().split_once(" requests in "))
        .and_then(|(n, _)| n.parse::<u64>().ok())
        .ok_or_else(|| Error::bad("no request count in wrk's output", &out.stdout))?;
    let rate = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .ok_or_else(|| Error::bad("no rate in wrk's output", &out.stdout))?;
    let per_call = |d: Duration| d.as_secs_f64() * 1e6 / calls.max(1) as f64;
    Ok(Turn {
        rate,
        server_us: per_call(server_cpu),
        load_us: per_call(load_cpu),
    })
}

/// The load itself, in the calling thread.
fn load(addr: SocketAddr, server_pid: u32, request: Vec<u8>, secs: f64) -> Result<Turn, Error> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Error::io("runtime", e))?;
    rt.block_on(async move {
        let mut streams = Vec::new();
        for _ in 0..CONNECTIONS {
            let s = TcpStream::connect(addr)
                .await
                .map_err(|e| Error::io("connect", e))?;
            s.set_nodelay(true).map_err(|e| Error::io("nodelay", e))?;
            streams.push(s);
        }
        let server_cpu = proc_cpu(server_pid)?;
        let load_cpu = thread_cpu()?;
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
        Turn::since(total, start, server_pid, (server_cpu, load_cpu))
    })
}

/// The busy-polling client, in the calling thread: every connection in one `mio` poll, polled
/// with a zero timeout in a loop, so that this thread never sleeps and the server never pays
/// to wake it (on loopback the sender runs the receiver's wake-up). Each connection sends its
/// next request as soon as its answer is whole and checked, until `secs` are up.
fn busy_load(addr: SocketAddr, server_pid: u32, request: &[u8], secs: f64) -> Result<Turn, Error> {
    use mio::{Events, Interest, Poll, Token};
    use std::io::{ErrorKind, Read, Write};

    /// Sends one request. No request is outstanding, so the send buffer is empty and a short
    /// write means something is wrong rather than that the peer is slow.
    fn send(stream: &mut mio::net::TcpStream, request: &[u8]) -> Result<(), Error> {
        match stream.write(request) {
            Ok(n) if n == request.len() => Ok(()),
            Ok(n) => Err(Error::Server(format!(
                "short write: {n} of {} bytes",
                request.len()
            ))),
            Err(e) => Err(Error::io("write", e)),
        }
    }

    let mut poll = Poll::new().map_err(|e| Error::io("poll", e))?;
    let mut conns = Vec::with_capacity(CONNECTIONS);
    for i in 0..CONNECTIONS {
        // Connected blocking, then handed to mio: its own connect returns before the
        // handshake ends and would need a wait for writability first.
        let s = std::net::TcpStream::connect(addr).map_err(|e| Error::io("connect", e))?;
        s.set_nodelay(true).map_err(|e| Error::io("nodelay", e))?;
        s.set_nonblocking(true)
            .map_err(|e| Error::io("nonblocking", e))?;
        let mut s = mio::net::TcpStream::from_std(s);
        poll.registry()
            .register(&mut s, Token(i), Interest::READABLE)
            .map_err(|e| Error::io("register", e))?;
        conns.push((s, Vec::with_capacity(512)));
    }
    let server_cpu = proc_cpu(server_pid)?;
    let load_cpu = thread_cpu()?;
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(secs);
    for (s, _) in &mut conns {
        send(s, request)?;
    }
    let mut events = Events::with_capacity(CONNECTIONS);
    let mut chunk = [0u8; 1024];
    let mut calls = 0u64;
    // Connections still making calls; and when an answer last arrived, to give up on a
    // server that stops answering instead of spinning for ever.
    let mut busy = CONNECTIONS;
    let mut progress = start;
    while busy > 0 {
        poll.poll(&mut events, Some(Duration::ZERO))
            .map_err(|e| Error::io("poll", e))?;
        if events.is_empty() {
            if progress.elapsed() > STALL {
                return Err(Error::Stalled {
                    what: format!("busy-polling client, {calls} calls"),
                });
            }
            continue;
        }
        for event in &events {
            let (stream, buf) = &mut conns[event.token().0];
            // mio's readiness is edge-triggered: read until the answer is whole or the
            // socket is empty. A whole answer leaves it empty, as the server has nothing
            // more to send until the next request.
            loop {
                match stream.read(&mut chunk) {
                    Ok(0) => {
                        return Err(Error::Closed {
                            what: format!("busy-polling client, {calls} calls"),
                        })
                    }
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(e) => return Err(Error::io("read", e)),
                }
                let Some(len) = whole_answer(buf)? else {
                    continue;
                };
                if len != buf.len() {
                    return Err(Error::bad("bytes after the answer", buf));
                }
                buf.clear();
                calls += 1;
                progress = Instant::now();
                if progress < end {
                    send(stream, request)?;
                } else {
                    busy -= 1;
                }
                break;
            }
        }
    }
    Turn::since(calls, start, server_pid, (server_cpu, load_cpu))
}

/// CPU time of the calling thread (the load generator's), from `/proc/thread-self/stat`.
fn thread_cpu() -> Result<Duration, Error> {
    let me = std::fs::read_link("/proc/thread-self").map_err(|e| Error::io("thread id", e))?;
    let tid: u32 = me
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| Error::Server("no thread id".into()))?;
    proc_cpu(tid)
}

/// RSS per idle keep-alive connection, KiB: (before, after, per connection).
fn memory(server: &Server, conns: usize) -> Result<(u64, u64, f64), Error> {
    let running = server.start(Setup::Shared)?;
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
        Server {
            name: "epoll floor (fixed answer, no HTTP library)",
            program: cargo_build_with("rpcwire-bench", "epoll-floor", &["jsonrpsee"])?,
            args: vec![],
            path: "/",
        },
    ];
    // Ratios are to jsonrpsee; shares are of the epoll floor.
    let (reference_at, floor_at) = (1, servers.len() - 1);
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut setups = vec![Setup::OneCoreEach, Setup::Shared];
    if cores < 2 {
        eprintln!("SKIPPED: the one-core-each setup needs 2 CPUs; this machine has {cores}");
        setups.retain(|s| *s != Setup::OneCoreEach);
    }
    let mut generators = vec![Generator::Own, Generator::BusyPoll];
    let script = rpcwire_bench::workspace_root().join("target/bench-http-w1.lua");
    if wrk_installed() {
        let lua = format!(
            "wrk.method = \"POST\"\nwrk.body = '{BODY}'\nwrk.headers[\"Content-Type\"] = \"application/json\"\n"
        );
        std::fs::write(&script, lua).map_err(|e| Error::io("write the wrk script", e))?;
        generators.push(Generator::Wrk);
    } else {
        eprintln!("SKIPPED: wrk is not installed (apt-get install wrk): its rows are left out");
    }
    let mut table = format!(
        "| setup | load generator | server | W1 calls/s, {CONNECTIONS} keep-alive connections (median of 3 × {secs} s) | ratio to jsonrpsee | share of the epoll floor | server CPU per call | load generator CPU per call |\n|---|---|---|---:|---:|---:|---:|---:|\n"
    );
    for setup in setups {
        let running: Vec<Running> = servers
            .iter()
            .map(|s| s.start(setup))
            .collect::<Result<_, _>>()?;
        for &generator in &generators {
            // Spinning on a core the server may need would measure the spinning.
            if generator == Generator::BusyPoll && setup == Setup::Shared {
                continue;
            }
            let mut turns = vec![Vec::new(); servers.len()];
            for round in 0..3 {
                for (i, server) in servers.iter().enumerate() {
                    let turn = match generator {
                        Generator::Own | Generator::BusyPoll => {
                            throughput(server, &running[i], secs, setup, generator)?
                        }
                        Generator::Wrk => wrk_turn(server, &running[i], secs, setup, &script)?,
                    };
                    eprintln!(
                        "{setup:?} {generator:?} round {round}: {} {:.0} calls/s, CPU per call: server {:.2} us, load {:.2} us",
                        server.name, turn.rate, turn.server_us, turn.load_us
                    );
                    turns[i].push(turn);
                }
            }
            let med = |i: usize, f: fn(&Turn) -> f64| {
                median(&turns[i].iter().map(f).collect::<Vec<_>>()).unwrap_or(0.0)
            };
            let reference = med(reference_at, |t| t.rate);
            let floor = med(floor_at, |t| t.rate);
            for (i, server) in servers.iter().enumerate() {
                // A client that never sleeps uses its whole core whatever it does per call.
                let load = if generator == Generator::BusyPoll {
                    "(spins)".to_owned()
                } else {
                    format!("{:.2} µs", med(i, |t| t.load_us))
                };
                table.push_str(&format!(
                    "| {} | {} | {} | {:.0} | {:.2}x | {:.0} % | {:.2} µs | {load} |\n",
                    setup.label(),
                    generator.label(),
                    server.name,
                    med(i, |t| t.rate),
                    med(i, |t| t.rate) / reference,
                    100.0 * med(i, |t| t.rate) / floor,
                    med(i, |t| t.server_us),
                ));
            }
        }
        drop(running);
    }
    let mut mem = Vec::new();
    // Memory of the two JSON-RPC servers only.
    for server in &servers[..2] {
        let m = memory(server, conns)?;
        eprintln!("{}: {:.1} KiB per idle connection", server.name, m.2);
        mem.push(m);
    }
    table.push_str(&format!(
        "\n| server | RSS before | RSS after {conns} idle keep-alive connections | per idle connection |\n|---|---:|---:|---:|\n"
    ));
    for (server, m) in servers.iter().zip(&mem) {
        table.push_str(&format!(
            "| {} | {:.1} MiB | {:.1} MiB | {:.1} KiB |\n",
            server.name,
            m.0 as f64 / 1024.0,
            m.1 as f64 / 1024.0,
            m.2
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
