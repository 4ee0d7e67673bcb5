//! `cargo run --release --bin mcp-http-bench` (in `bench/rmcp/`): a 2026-07-28 `tools/call`
//! of `add` over Streamable HTTP, rpcwire's `examples/mcp-server --http --stateless` against
//! rmcp 3.x's server with the same tool (`rmcp-server`), in the same run (`--quiet`: no log
//! line per call, as rmcp's server writes none): calls per second
//! from 64 keep-alive connections (every answer checked: status 200, the sum as text, the
//! request's id), the median of `RPCWIRE_BENCH_ROUNDS` (default 3) runs of
//! `RPCWIRE_BENCH_SECS` (default 3) each, the servers alternating; then resident memory per
//! idle keep-alive connection (`RPCWIRE_BENCH_CONNS`, default 2 000, each after one call).
//! Both servers are release builds on a multi-threaded tokio runtime; the load generator
//! shares the machine with them, as in `cargo bench -p rpcwire-bench --bench http`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rpcwire_bench::{cargo_build, format_rate, median, proc_status, Error};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Keep-alive connections of the throughput runs (as in the `http` bench).
const CONNECTIONS: usize = 64;

/// One 2026-07-28 `tools/call` POST: the revision and client capabilities in `_meta`, and the
/// headers the revision asks for (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`).
fn request(addr: SocketAddr, id: u64) -> Vec<u8> {
    let body = format!(
        concat!(
            r#"{{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{{"name":"add","#,
            r#""arguments":{{"a":2,"b":40}},"_meta":{{"#,
            r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","#,
            r#""io.modelcontextprotocol/clientCapabilities":{{}},"#,
            r#""io.modelcontextprotocol/clientInfo":{{"name":"bench","version":"1"}}}}}}}}"#
        ),
        id
    );
    format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: tools/call\r\nMcp-Name: add\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Reads one HTTP/1.1 answer (a `Content-Length` body or a chunked one) and checks it: status
/// 200 and a JSON-RPC result with the text `42` for request `id`. `buf` keeps what follows.
async fn answer(s: &mut TcpStream, buf: &mut Vec<u8>, id: u64) -> Result<(), Error> {
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        read_more(s, buf).await?;
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
    if !head.starts_with("http/1.1 200") {
        return Err(Error::bad("status is not 200", &buf[..head_end]));
    }
    let length = head.lines().find_map(|l| {
        l.strip_prefix("content-length:")
            .and_then(|v| v.trim().parse::<usize>().ok())
    });
    let body: Vec<u8> = match length {
        Some(n) => {
            while buf.len() < head_end + n {
                read_more(s, buf).await?;
            }
            let body = buf[head_end..head_end + n].to_vec();
            buf.drain(..head_end + n);
            body
        }
        None if head.contains("transfer-encoding: chunked") => {
            let mut body = Vec::new();
            let mut at = head_end;
            loop {
                let line_end = loop {
                    if let Some(i) = buf[at..].windows(2).position(|w| w == b"\r\n") {
                        break at + i;
                    }
                    read_more(s, buf).await?;
                };
                let size =
                    usize::from_str_radix(String::from_utf8_lossy(&buf[at..line_end]).trim(), 16)
                        .map_err(|_| Error::bad("bad chunk size", &buf[at..line_end]))?;
                while buf.len() < line_end + 2 + size + 2 {
                    read_more(s, buf).await?;
                }
                body.extend_from_slice(&buf[line_end + 2..line_end + 2 + size]);
                at = line_end + 2 + size + 2;
                if size == 0 {
                    break;
                }
            }
            buf.drain(..at);
            body
        }
        None => return Err(Error::bad("no body length", head.as_bytes())),
    };
    let v: serde_json::Value =
        serde_json::from_slice(&body).map_err(|_| Error::bad("answer is not JSON", &body))?;
    if v["id"] != id || v["result"]["content"][0]["text"] != "42" {
        return Err(Error::bad("unexpected answer", &body));
    }
    Ok(())
}

async fn read_more(s: &mut TcpStream, buf: &mut Vec<u8>) -> Result<(), Error> {
    let mut chunk = [0u8; 8192];
    let n = tokio::time::timeout(Duration::from_secs(30), s.read(&mut chunk))
        .await
        .map_err(|_| Error::Server("no answer for 30 s".into()))?
        .map_err(|e| Error::io("read", e))?;
    if n == 0 {
        return Err(Error::Server("the server closed the connection".into()));
    }
    buf.extend_from_slice(&chunk[..n]);
    Ok(())
}

/// A server process, killed on drop.
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

/// Starts `program args... ` and waits for its `... listening on http://ADDR/mcp` line.
fn start(program: &PathBuf, args: &[&str]) -> Result<Running, Error> {
    use std::io::BufRead;
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::io(format!("start {}", program.display()), e))?;
    let stderr = child
        .stderr
        .take()
        .ok_or_else(|| Error::Server("no stderr".into()))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(stderr).lines();
        for line in lines.by_ref().map_while(Result::ok) {
            if let Some((_, url)) = line.split_once("listening on http://") {
                let _ = tx.send(url.trim_end_matches("/mcp").to_owned());
                break;
            }
        }
        // Drained, so that the server never blocks on a full pipe.
        for _ in lines {}
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| Error::Server(format!("{} did not start", program.display())))?;
    let addr = addr
        .parse()
        .map_err(|_| Error::Server(format!("bad address {addr}")))?;
    Ok(Running { child, addr })
}

/// Calls per second from [`CONNECTIONS`] keep-alive connections for `secs`.
fn throughput(rt: &tokio::runtime::Runtime, addr: SocketAddr, secs: f64) -> Result<f64, Error> {
    rt.block_on(async {
        let end = Instant::now() + Duration::from_secs_f64(secs);
        let mut tasks = Vec::with_capacity(CONNECTIONS);
        for c in 0..CONNECTIONS {
            tasks.push(tokio::spawn(async move {
                let mut s = TcpStream::connect(addr)
                    .await
                    .map_err(|e| Error::io("connect", e))?;
                let _ = s.set_nodelay(true);
                let mut buf = Vec::new();
                let mut calls = 0u64;
                while Instant::now() < end {
                    let id = (c as u64) << 32 | calls;
                    s.write_all(&request(addr, id))
                        .await
                        .map_err(|e| Error::io("write", e))?;
                    answer(&mut s, &mut buf, id).await?;
                    calls += 1;
                }
                Ok::<u64, Error>(calls)
            }));
        }
        let start = Instant::now();
        let mut calls = 0;
        for t in tasks {
            calls += t.await.map_err(|e| Error::Server(e.to_string()))??;
        }
        Ok(calls as f64 / start.elapsed().as_secs_f64())
    })
}

/// RSS per idle keep-alive connection, KiB: (before, after, per connection).
fn memory(
    rt: &tokio::runtime::Runtime,
    server: &Running,
    conns: usize,
) -> Result<(u64, u64, f64), Error> {
    let pid = server.child.id();
    let addr = server.addr;
    let one = |id: u64| async move {
        let mut s = TcpStream::connect(addr)
            .await
            .map_err(|e| Error::io("connect", e))?;
        s.write_all(&request(addr, id))
            .await
            .map_err(|e| Error::io("write", e))?;
        answer(&mut s, &mut Vec::new(), id).await?;
        Ok::<_, Error>(s)
    };
    // A warm-up call, so that lazily made state is there before the first reading.
    drop(rt.block_on(one(0))?);
    std::thread::sleep(Duration::from_millis(500));
    let before = proc_status(pid)?.rss_kib;
    let held = rt.block_on(async {
        let mut held = Vec::with_capacity(conns);
        for i in 0..conns {
            held.push(one(i as u64 + 1).await?);
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
        after.saturating_sub(before) as f64 / conns as f64,
    ))
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn run() -> Result<(), Error> {
    let secs: f64 = env_or("RPCWIRE_BENCH_SECS", 3.0);
    let rounds: usize = env_or("RPCWIRE_BENCH_ROUNDS", 3);
    let conns: usize = env_or("RPCWIRE_BENCH_CONNS", 2_000);
    let ours = cargo_build("rpcwire-example-mcp-server", "mcp-server")?;
    // This package's own server, built by the `cargo run --release` that started this.
    let me = std::env::current_exe().map_err(|e| Error::io("current exe", e))?;
    let theirs = me.with_file_name("rmcp-server");
    if !theirs.exists() {
        return Err(Error::Server(format!(
            "{} is missing: run `cargo build --release` in bench/rmcp first",
            theirs.display()
        )));
    }
    let servers: [(&str, &PathBuf, &[&str]); 2] = [
        (
            "rpcwire",
            &ours,
            // No log line per call: rmcp's server logs nothing without a subscriber.
            &["--http", "127.0.0.1:0", "--stateless", "--quiet"],
        ),
        ("rmcp 3.11.0", &theirs, &["127.0.0.1:0"]),
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::io("runtime", e))?;
    let mut rates = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        for (i, (name, program, args)) in servers.iter().enumerate() {
            let server = start(program, args)?;
            let rate = throughput(&rt, server.addr, secs)?;
            eprintln!("round {round}: {name} {}", format_rate(rate));
            rates[i].push(rate);
        }
    }
    let mut mem = Vec::new();
    for (_, program, args) in &servers {
        let server = start(program, args)?;
        mem.push(memory(&rt, &server, conns)?);
    }
    let rate = |i: usize| median(&rates[i]).unwrap_or(0.0);
    println!("\n2026-07-28 tools/call `add` over Streamable HTTP, {CONNECTIONS} keep-alive connections, median of {rounds} runs of {secs} s\n");
    println!("| server | calls/s | ratio to rmcp | RSS before | RSS after {conns} idle connections | per idle connection |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (i, (name, _, _)) in servers.iter().enumerate() {
        let (before, after, per) = mem[i];
        println!(
            "| {name} | {} | {:.2}x | {before} KiB | {after} KiB | {per:.1} KiB |",
            format_rate(rate(i)),
            rate(i) / rate(1)
        );
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("mcp-http-bench: {e}");
        std::process::exit(1);
    }
}
