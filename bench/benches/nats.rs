//! JSON-RPC over NATS: `rpcwire serve --nats` against a plain `async-nats` request/reply loop
//! answering with serde_json (`src/bin/nats_plain.rs`), side by side in one run, through one
//! `nats-server` on loopback: `cargo bench -p rpcwire-bench --bench nats`.
//!
//! A third row: the plain loop taking its messages from an endpoint of `async-nats`'s service
//! module and answering with its `Request::respond`, as rpcwire does (the share of that
//! module's bookkeeping).
//!
//! Throughput: W1 calls (`subtract [42,23]`, every answer checked) from `nats-feed` (4
//! connections, 32 requests under way on each), both servers on one worker thread; median of
//! `RPCWIRE_BENCH_ROUNDS` (default 3) rounds of `RPCWIRE_BENCH_SCALE` x 40 000 calls, the
//! servers alternating (in the other order with `RPCWIRE_BENCH_PLAIN_FIRST=1`). Instructions
//! per call: `bench/callgrind-nats.sh`. The table is printed and written to
//! `target/bench-nats.md`. Without `nats-server` (`.ci/install/brokers.sh`) it prints
//! `SKIPPED` and ends.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rpcwire_bench::{
    cargo_build, cargo_build_with, format_rate, median, scale, scaled, spawn_one_thread,
    workspace_root, Error,
};

/// Runs `nats-feed` for `calls` calls: the calls per second, or why not.
fn feed(feed: &Path, url: &str, calls: u64) -> Result<f64, String> {
    let out = Command::new(feed)
        .args([url, "bench", &calls.to_string(), "4", "32"])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).into_owned());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace().map(str::parse::<f64>);
    match (words.next(), words.next()) {
        (Some(Ok(n)), Some(Ok(secs))) if secs > 0.0 => Ok(n / secs),
        _ => Err(format!("unexpected output {text:?}")),
    }
}

fn run() -> Result<String, Error> {
    let rpcwire = cargo_build("rpcwire-cli", "rpcwire")?;
    let plain = cargo_build_with("rpcwire-bench", "nats-plain", &["nats"])?;
    let feeder = cargo_build_with("rpcwire-bench", "nats-feed", &["nats"])?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::io("find a free port", e))?
        .port();
    let _broker = spawn_one_thread(
        Path::new("nats-server"),
        &["-a", "127.0.0.1", "-p", &port.to_string()],
    )?;
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > until {
            return Err(Error::Server("nats-server never listened".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("nats://127.0.0.1:{port}");
    let mut subjects: [(&str, PathBuf, Vec<&str>); 3] = [
        (
            "rpcwire serve --nats",
            rpcwire,
            vec!["serve", "--nats", &url, "--subject", "bench"],
        ),
        ("plain async-nats loop", plain.clone(), vec![&url, "bench"]),
        (
            "plain loop on the service module",
            plain,
            vec![&url, "bench", "service"],
        ),
    ];
    // The other order (the plain loop in the middle either way).
    if std::env::var("RPCWIRE_BENCH_PLAIN_FIRST").is_ok_and(|v| v == "1") {
        subjects.reverse();
    }
    let rounds: usize = std::env::var("RPCWIRE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let calls = scaled(40_000, scale());
    let mut rates = vec![Vec::new(); subjects.len()];
    for round in 0..rounds {
        for (i, (name, program, args)) in subjects.iter().enumerate() {
            let _server = spawn_one_thread(program, args)?;
            // Ready once a few calls are answered (before: "no responders").
            let until = Instant::now() + Duration::from_secs(30);
            while let Err(e) = feed(&feeder, &url, 100) {
                if Instant::now() > until {
                    return Err(Error::Server(format!("{name} never answered: {e}")));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let rate =
                feed(&feeder, &url, calls).map_err(|e| Error::Server(format!("{name}: {e}")))?;
            eprintln!("round {round}: {name}: {}", format_rate(rate));
            rates[i].push(rate);
        }
    }
    let med: Vec<f64> = rates.iter().map(|r| median(r).unwrap_or(0.0)).collect();
    let mut table =
        String::from("| server | W1 calls/s (median) | ratio to the plain loop |\n|---|---|---|\n");
    for ((name, ..), rate) in subjects.iter().zip(&med) {
        table += &format!(
            "| {name} | {} | {:.2}x |\n",
            format_rate(*rate),
            rate / med[1].max(1.0)
        );
    }
    Ok(table)
}

fn main() -> ExitCode {
    let installed = Command::new("nats-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        eprintln!("SKIPPED: nats-server is not installed (.ci/install/brokers.sh)");
        return ExitCode::SUCCESS;
    }
    match run() {
        Ok(table) => {
            println!("{table}");
            let out = workspace_root().join("target/bench-nats.md");
            if let Err(e) = std::fs::write(&out, &table) {
                eprintln!("cannot write {}: {e}", out.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nats bench: {e}");
            ExitCode::FAILURE
        }
    }
}
