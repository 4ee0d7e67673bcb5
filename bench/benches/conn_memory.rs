//! Memory per open connection of `rpcwire serve --tcp`, against the plain loop's thread per
//! connection: `cargo bench -p rpcwire-bench --bench conn_memory`.
//!
//! Starts the server, reads its `VmRSS` and `Threads` from `/proc/PID/status`, opens K
//! connections (`RPCWIRE_BENCH_CONNS`, default 10 000) in steps of 100, makes one W1 call on
//! each and keeps them all open, then reads the status again. Safety valve: the run of a server
//! stops as soon as its RSS passes 2 GiB after a step, and the figure so far is reported with
//! the reason. The plain loop is measured the same way up to 2 000 connections (its threads are
//! the reference, not the subject).
//!
//! The table is printed and written to `target/bench-conn-memory.md`.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use rpcwire_bench::{
    proc_status, rpcwire_server, tcp_call_once, tcp_connect, Error, ProcStatus, ServerCommand,
    TcpServer,
};

/// Connections opened between two looks at the server's RSS.
const STEP: usize = 100;
/// The valve: a server past this RSS is not given more connections.
const RSS_LIMIT_KIB: u64 = 2 * 1024 * 1024;
/// Most connections given to the plain loop.
const PLAIN_CAP: usize = 2_000;

/// What one server's run found.
struct Measurement {
    name: String,
    asked: usize,
    opened: usize,
    before: ProcStatus,
    after: ProcStatus,
    time: Duration,
    /// Why it stopped before `asked`, if it did.
    stopped: Option<String>,
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conn_memory: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let conns = std::env::var("RPCWIRE_BENCH_CONNS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&k| k > 0)
        .unwrap_or(10_000);
    // This process holds one descriptor per connection and the server (which inherits the
    // limit) one more each, plus some slack for pipes, the listener and the like.
    let wanted = conns as u64 + 256;
    let limit = rlimit::increase_nofile_limit(wanted).map_err(|e| Error::Io {
        what: "raise RLIMIT_NOFILE".into(),
        source: e,
    })?;
    if limit < wanted {
        eprintln!("conn_memory: RLIMIT_NOFILE is {limit} (hard limit), below {wanted}: expect to stop early");
    }

    let rpcwire = rpcwire_server()?;
    // A cap on connections, if this build of the server has one, must not be what stops us.
    let cap = conns.to_string();
    let extra: Vec<&str> = if supports_max_connections(&rpcwire.program) {
        vec!["--max-connections", &cap]
    } else {
        Vec::new()
    };
    let plain = ServerCommand {
        name: "plain loop".into(),
        program: PathBuf::from(env!("CARGO_BIN_EXE_plain-loop")),
        args: Vec::new(),
    };

    let results = [
        measure(&rpcwire, &extra, conns)?,
        measure(&plain, &[], conns.min(PLAIN_CAP))?,
    ];

    let mut report = format!(
        "Connections held open after one W1 call each, server RSS from /proc (rpcwire flags: {})\n\n\
         | server | connections | RSS before | RSS after | per connection | threads before → after | open + call all |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
        if extra.is_empty() { "none" } else { "--max-connections" }
    );
    for m in &results {
        let per = if m.opened > 0 {
            m.after.rss_kib.saturating_sub(m.before.rss_kib) as f64 / m.opened as f64
        } else {
            0.0
        };
        report.push_str(&format!(
            "| {} | {} of {} | {} | {} | {per:.1} KiB | {} → {} | {:.2} s |\n",
            m.name,
            m.opened,
            m.asked,
            mib(m.before.rss_kib),
            mib(m.after.rss_kib),
            m.before.threads,
            m.after.threads,
            m.time.as_secs_f64()
        ));
    }
    report.push('\n');
    for m in &results {
        if let Some(reason) = &m.stopped {
            report.push_str(&format!(
                "- {}: stopped after {} connections: {reason}\n",
                m.name, m.opened
            ));
        }
    }
    if conns > PLAIN_CAP {
        report.push_str(&format!(
            "- plain loop: measured up to {PLAIN_CAP} connections only (it is the reference)\n"
        ));
    }
    println!("{report}");
    let out = target_dir().join("bench-conn-memory.md");
    std::fs::write(&out, &report).map_err(|e| Error::Io {
        what: format!("write {}", out.display()),
        source: e,
    })?;
    eprintln!("conn_memory: written to {}", out.display());
    Ok(())
}

/// Whether `rpcwire serve --help` lists `--max-connections`.
fn supports_max_connections(program: &Path) -> bool {
    Command::new(program)
        .args(["serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("--max-connections"))
        .unwrap_or(false)
}

/// Opens `asked` connections to a fresh `server`, one call each, with the RSS valve.
fn measure(server: &ServerCommand, extra: &[&str], asked: usize) -> Result<Measurement, Error> {
    let mut running = TcpServer::start(server, extra)?;
    let pid = running.pid();
    // Let it finish starting (runtime threads, first allocations) before the baseline.
    std::thread::sleep(Duration::from_millis(300));
    let before = proc_status(pid)?;
    let mut open: Vec<TcpStream> = Vec::with_capacity(asked);
    let mut after = before;
    let mut stopped = None;
    let start = Instant::now();
    'steps: while open.len() < asked {
        let step = STEP.min(asked - open.len());
        for _ in 0..step {
            let id = open.len() as u64 + 1;
            let call = tcp_connect(running.addr()).and_then(|mut s| {
                tcp_call_once(&mut s, id)?;
                Ok(s)
            });
            match call {
                Ok(s) => open.push(s),
                Err(e) => {
                    stopped = Some(if running.running() {
                        format!("connection {id}: {e}")
                    } else {
                        format!("the server exited (connection {id}: {e})")
                    });
                    break 'steps;
                }
            }
        }
        after = proc_status(pid)?;
        eprintln!(
            "conn_memory: {}: {} connections, RSS {}, {} threads",
            server.name,
            open.len(),
            mib(after.rss_kib),
            after.threads
        );
        if after.rss_kib > RSS_LIMIT_KIB {
            stopped = Some(format!(
                "safety valve: server RSS {} passed {}",
                mib(after.rss_kib),
                mib(RSS_LIMIT_KIB)
            ));
            break;
        }
    }
    let time = start.elapsed();
    if let Ok(status) = proc_status(pid) {
        after = status;
    }
    Ok(Measurement {
        name: server.name.clone(),
        asked,
        opened: open.len(),
        before,
        after,
        time,
        stopped,
    })
}

/// KiB as MiB with one decimal.
fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}

/// The target directory: two levels above the plain loop's executable (`target/release/`).
fn target_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_plain-loop"));
    exe.ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}
