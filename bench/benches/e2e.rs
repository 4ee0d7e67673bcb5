//! End-to-end throughput of the `rpcwire` binary against the plain serde_json loop
//! (`plain-loop`), W1 calls, side by side in one run: `cargo bench -p rpcwire-bench --bench e2e`.
//!
//! Scenarios: stdio, 1 000 000 calls pipelined through the child's pipes; TCP, 1 connection
//! with 200 000 calls; TCP, 100 connections with 2 000 calls each. Every scenario runs for both
//! servers in each round, the order of the two servers alternating between rounds so that
//! neither always runs on a warmer machine; the figure is the median over the rounds, and the
//! ratio is rpcwire / plain loop.
//!
//! Environment: `RPCWIRE_BENCH_SCALE` multiplies every call count (0.1 for a quick run),
//! `RPCWIRE_BENCH_ROUNDS` sets the rounds (default 3), `RPCWIRE_BENCH_RPCWIRE` names an
//! `rpcwire` binary to measure instead of building the workspace's.
//!
//! The table is printed and written to `target/bench-e2e.md`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use rpcwire_bench::{
    format_rate, median, rpcwire_server, scale, scaled, stdio_run, tcp_run, Error, ServerCommand,
    TcpLoad, TcpServer,
};

/// Most calls left unanswered on one connection or pipe: by default none (every call is
/// written as fast as the pipe takes it, the pipelining a batch client does); a server must
/// push back through the byte stream, never answer Server busy (the checker counts that as a
/// failure). `RPCWIRE_BENCH_WINDOW=N` bounds it, to compare with a windowed client.
fn window() -> u64 {
    std::env::var("RPCWIRE_BENCH_WINDOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(u64::MAX)
}

/// How a scenario's title shows the window.
fn window_note(window: u64) -> String {
    if window == u64::MAX {
        String::new()
    } else {
        format!(" (window {window})")
    }
}

/// One scenario of the table.
#[derive(Debug, Clone, Copy)]
enum Scenario {
    /// `n` calls through the child's stdin/stdout.
    Stdio(u64),
    /// Calls over loopback TCP.
    Tcp(TcpLoad),
}

impl Scenario {
    fn calls(self) -> u64 {
        match self {
            Scenario::Stdio(n) => n,
            Scenario::Tcp(load) => load.connections as u64 * load.calls,
        }
    }

    fn label(self) -> String {
        match self {
            Scenario::Stdio(n) => format!("stdio, {n} calls{}", window_note(window())),
            Scenario::Tcp(load) => format!(
                "TCP, {} conn x {} calls{}",
                load.connections,
                load.calls,
                window_note(load.window)
            ),
        }
    }

    /// Runs it once against a fresh server process and returns the wall time.
    fn run(self, server: &ServerCommand) -> Result<Duration, Error> {
        match self {
            Scenario::Stdio(n) => stdio_run(server, n, window()),
            Scenario::Tcp(load) => {
                let running = TcpServer::start(server, &[])?;
                tcp_run(running.addr(), load)
            }
        }
    }
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("e2e: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let rpcwire = rpcwire_server()?;
    // Built by cargo for this bench, with the bench profile (which is the release profile).
    let plain = ServerCommand {
        name: "plain loop".into(),
        program: PathBuf::from(env!("CARGO_BIN_EXE_plain-loop")),
        args: Vec::new(),
    };
    let scale = scale();
    let rounds = std::env::var("RPCWIRE_BENCH_ROUNDS")
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        .filter(|&r| r > 0)
        .unwrap_or(3);
    let scenarios = [
        Scenario::Stdio(scaled(1_000_000, scale)),
        Scenario::Tcp(TcpLoad {
            connections: 1,
            calls: scaled(200_000, scale),
            window: window(),
        }),
        Scenario::Tcp(TcpLoad {
            connections: 100,
            calls: scaled(2_000, scale),
            window: window(),
        }),
    ];
    let servers = [&plain, &rpcwire];
    eprintln!(
        "e2e: {rounds} rounds, scale {scale}; plain loop {}, rpcwire {}",
        plain.program.display(),
        rpcwire.program.display()
    );

    // rates[scenario][server]: calls/s of each round.
    let mut rates = vec![[Vec::new(), Vec::new()]; scenarios.len()];
    for round in 0..rounds {
        for (s, scenario) in scenarios.iter().enumerate() {
            let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                let time = scenario.run(servers[i])?;
                let rate = scenario.calls() as f64 / time.as_secs_f64();
                eprintln!(
                    "e2e: round {}/{rounds}: {}: {}: {} calls/s ({:.3} s)",
                    round + 1,
                    scenario.label(),
                    servers[i].name,
                    format_rate(rate),
                    time.as_secs_f64()
                );
                rates[s][i].push(rate);
            }
        }
    }

    let mut table = String::new();
    table.push_str(&format!(
        "W1 calls, median of {rounds} rounds, scale {scale}\n\n\
         | scenario | plain loop calls/s | rpcwire calls/s | ratio (rpcwire / plain) |\n\
         |---|---:|---:|---:|\n"
    ));
    for (scenario, [plain_rates, rpcwire_rates]) in scenarios.iter().zip(&rates) {
        let p = median(plain_rates).unwrap_or(0.0);
        let r = median(rpcwire_rates).unwrap_or(0.0);
        let ratio = if p > 0.0 { r / p } else { 0.0 };
        // Two decimals hide small ratios (0.003 would read 0.00): three below 0.1.
        let ratio = if ratio < 0.1 {
            format!("{ratio:.3}x")
        } else {
            format!("{ratio:.2}x")
        };
        table.push_str(&format!(
            "| {} | {} | {} | {ratio} |\n",
            scenario.label(),
            format_rate(p),
            format_rate(r)
        ));
    }
    println!("{table}");
    let out = target_dir().join("bench-e2e.md");
    std::fs::write(&out, &table).map_err(|e| Error::Io {
        what: format!("write {}", out.display()),
        source: e,
    })?;
    eprintln!("e2e: written to {}", out.display());
    Ok(())
}

/// The target directory: two levels above the plain loop's executable (`target/release/`).
fn target_dir() -> PathBuf {
    let exe = Path::new(env!("CARGO_BIN_EXE_plain-loop"));
    exe.ancestors()
        .nth(2)
        .map_or_else(|| PathBuf::from("target"), Path::to_path_buf)
}
