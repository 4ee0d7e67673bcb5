//! Memory per idle client connection over the brokers: N rpcwire clients (`NatsClient`,
//! `MqttClient`), each with a broker connection of its own, against N plain `async-nats` and
//! `rumqttc` clients, in one run: `cargo bench -p rpcwire-bench --bench broker_memory`.
//!
//! Each kind runs in a process of its own (`src/bin/broker_clients.rs`) that reads its RSS
//! with one client open, opens N more (`RPCWIRE_BENCH_CLIENTS`, default 500), waits until
//! each is ready and a second longer, and reads it again: (after − before) / N is the figure.
//! The kinds alternate over `RPCWIRE_BENCH_ROUNDS` (default 3) rounds, the median is kept.
//! One `nats-server` and one `mosquitto` on loopback. The table is printed and written to
//! `target/bench-broker-memory.md`. Without either broker (`.ci/install/brokers.sh`) it
//! prints `SKIPPED` and ends.

use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use rpcwire_bench::{cargo_build_with, median, mosquitto, workspace_root, Error, Killed};

fn broker(program: &str, args: &[&str], port: u16) -> Result<Killed, Error> {
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| Error::Server(format!("cannot start {program}: {e}")))?;
    let until = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > until {
            return Err(Error::Server(format!("{program} never listened")));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(Killed(child))
}

fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::io("find a free port", e))
}

/// KiB of RSS per client of one `broker-clients` run.
fn per_client(program: &Path, kind: &str, url: &str, n: usize) -> Result<f64, Error> {
    let out = Command::new(program)
        .args([kind, url, &n.to_string()])
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::io("run broker-clients", e))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let words: Vec<f64> = text
        .split_whitespace()
        .filter_map(|w| w.parse().ok())
        .collect();
    match words.as_slice() {
        [n, before, after] if out.status.success() => Ok((after - before) / n),
        _ => Err(Error::Server(format!(
            "broker-clients {kind}: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        ))),
    }
}

fn run(mosquitto: &str) -> Result<String, Error> {
    let program = cargo_build_with("rpcwire-bench", "broker-clients", &["broker-clients"])?;
    let n: usize = std::env::var("RPCWIRE_BENCH_CLIENTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or(500);
    let rounds: usize = std::env::var("RPCWIRE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let nats_port = free_port()?;
    let nats_args = ["-a", "127.0.0.1", "-p", &nats_port.to_string()];
    let _nats = broker("nats-server", &nats_args, nats_port)?;
    let mqtt_port = free_port()?;
    let dir = workspace_root().join("target/bench-broker-memory");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io("create the broker's folder", e))?;
    let config = dir.join("mosquitto.conf");
    let text = format!("listener {mqtt_port} 127.0.0.1\nallow_anonymous true\npersistence false\n");
    std::fs::write(&config, text).map_err(|e| Error::io("write mosquitto.conf", e))?;
    let _mqtt = broker(mosquitto, &["-c", &config.to_string_lossy()], mqtt_port)?;
    let nats_url = format!("nats://127.0.0.1:{nats_port}");
    let mqtt_url = format!("127.0.0.1:{mqtt_port}");
    // Each kind, and the row of the plain client it is compared with.
    let kinds = [
        ("rpcwire-nats", "rpcwire `NatsClient`", &nats_url, 1),
        ("nats", "plain `async-nats` client", &nats_url, 1),
        ("rpcwire-mqtt", "rpcwire `MqttClient`", &mqtt_url, 4),
        (
            "mqtt",
            "plain `rumqttc` client, default options",
            &mqtt_url,
            3,
        ),
        (
            "mqtt-256",
            "plain `rumqttc` client, in-flight limit 256",
            &mqtt_url,
            4,
        ),
    ];
    let mut figures = vec![Vec::new(); kinds.len()];
    for round in 0..rounds {
        for (i, (kind, _, url, _)) in kinds.iter().enumerate() {
            let kib = per_client(&program, kind, url, n)?;
            eprintln!("round {round}: {kind}: {kib:.1} KiB per client");
            figures[i].push(kib);
        }
    }
    let med: Vec<f64> = figures.iter().map(|f| median(f).unwrap_or(0.0)).collect();
    let mut table = format!(
        "RSS growth per idle client connection, {n} clients, median of {rounds} rounds\n\n\
         | client | KiB per client | ratio |\n|---|---:|---|\n"
    );
    for (i, (_, name, _, reference)) in kinds.iter().enumerate() {
        let (of, to) = (med[i], med[*reference]);
        let against = kinds[*reference].1;
        table += &format!("| {name} | {of:.1} | {:.2}x {against} |\n", of / to);
    }
    Ok(table)
}

fn main() -> ExitCode {
    let nats = Command::new("nats-server")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    let (true, Some(mosquitto)) = (nats, mosquitto()) else {
        eprintln!("SKIPPED: nats-server or mosquitto is not installed (.ci/install/brokers.sh)");
        return ExitCode::SUCCESS;
    };
    match run(mosquitto) {
        Ok(table) => {
            println!("{table}");
            let out = workspace_root().join("target/bench-broker-memory.md");
            if let Err(e) = std::fs::write(&out, &table) {
                eprintln!("cannot write {}: {e}", out.display());
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("broker_memory bench: {e}");
            ExitCode::FAILURE
        }
    }
}
