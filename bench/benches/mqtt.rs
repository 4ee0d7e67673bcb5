//! JSON-RPC over MQTT: `rpcwire serve --mqtt` against a plain `rumqttc` MQTT 5 request/reply
//! loop answering with serde_json (`src/bin/mqtt_plain.rs`), side by side in one run, through
//! one `mosquitto` on loopback: `cargo bench -p rpcwire-bench --bench mqtt`.
//!
//! Throughput: W1 calls (`subtract [42,23]`, every answer checked) from `mqtt-feed` (4
//! connections, 32 requests under way on each, QoS 0, a Response Topic and Correlation Data
//! on each request), both servers on one worker thread; median of `RPCWIRE_BENCH_ROUNDS`
//! (default 3) rounds of `RPCWIRE_BENCH_SCALE` x 40 000 calls, the servers alternating (the
//! plain loop first with `RPCWIRE_BENCH_PLAIN_FIRST=1`). Instructions per call:
//! `bench/callgrind-mqtt.sh`. The table is printed and written to `target/bench-mqtt.md`.
//! Without `mosquitto` (`.ci/install/brokers.sh`) it prints `SKIPPED` and ends.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rpcwire_bench::{
    cargo_build, cargo_build_with, format_rate, median, mosquitto, scale, scaled, spawn_one_thread,
    workspace_root, Error,
};

/// Runs `mqtt-feed` for `calls` calls: the calls per second, or why not.
fn feed(feed: &Path, port: u16, calls: u64, stall_ms: u64) -> Result<f64, String> {
    let out = Command::new(feed)
        .args(["127.0.0.1", &port.to_string(), "bench"])
        .args([calls.to_string(), "4".into(), "32".into()])
        .env("MQTT_FEED_STALL_MS", stall_ms.to_string())
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

fn run(bin: &str) -> Result<String, Error> {
    let rpcwire = cargo_build("rpcwire-cli", "rpcwire")?;
    let plain = cargo_build_with("rpcwire-bench", "mqtt-plain", &["mqtt"])?;
    let feeder = cargo_build_with("rpcwire-bench", "mqtt-feed", &["mqtt"])?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::io("find a free port", e))?
        .port();
    let dir = workspace_root().join("target/bench-mqtt-broker");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create the broker's folder", e))?;
    let config = dir.join("mosquitto.conf");
    let text = format!("listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n");
    std::fs::write(&config, text).map_err(|e| Error::io("write mosquitto.conf", e))?;
    let config = config.to_string_lossy().into_owned();
    let _broker = spawn_one_thread(Path::new(bin), &["-c", &config])?;
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > until {
            return Err(Error::Server("mosquitto never listened".into()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let url = format!("mqtt://127.0.0.1:{port}");
    let port_text = port.to_string();
    let mut subjects: Vec<(&str, PathBuf, Vec<&str>)> = vec![
        (
            "rpcwire serve --mqtt",
            rpcwire,
            vec!["serve", "--mqtt", &url, "--topic", "bench"],
        ),
        (
            "plain rumqttc loop",
            plain,
            vec!["127.0.0.1", &port_text, "bench"],
        ),
    ];
    let plain_first = std::env::var("RPCWIRE_BENCH_PLAIN_FIRST").is_ok_and(|v| v == "1");
    if plain_first {
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
            // Ready once a few calls are answered (before it, QoS 0 requests are lost).
            let until = Instant::now() + Duration::from_secs(30);
            while let Err(e) = feed(&feeder, port, 100, 500) {
                if Instant::now() > until {
                    return Err(Error::Server(format!("{name} never answered: {e}")));
                }
            }
            let rate = feed(&feeder, port, calls, 10_000)
                .map_err(|e| Error::Server(format!("{name}: {e}")))?;
            eprintln!("round {round}: {name}: {}", format_rate(rate));
            rates[i].push(rate);
        }
    }
    let med: Vec<f64> = rates.iter().map(|r| median(r).unwrap_or(0.0)).collect();
    let plain = usize::from(!plain_first);
    let mut table = format!(
        "W1 calls/s over MQTT 5 (mosquitto on loopback), median of {rounds} rounds of {calls} calls\n\n\
         | server | W1 calls/s (median) | ratio to the plain loop |\n|---|---|---|\n"
    );
    for ((name, ..), rate) in subjects.iter().zip(&med) {
        table += &format!(
            "| {name} | {} | {:.2}x |\n",
            format_rate(*rate),
            rate / med[plain].max(1.0)
        );
    }
    Ok(table)
}

fn main() -> ExitCode {
    let Some(bin) = mosquitto() else {
        eprintln!("SKIPPED: mosquitto is not installed (.ci/install/brokers.sh)");
        return ExitCode::SUCCESS;
    };
    match run(bin) {
        Ok(table) => {
            println!("{table}");
            let out = workspace_root().join("target/bench-mqtt.md");
            if let Err(e) = std::fs::write(&out, &table) {
                eprintln!("cannot write {}: {e}", out.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mqtt bench: {e}");
            ExitCode::FAILURE
        }
    }
}
