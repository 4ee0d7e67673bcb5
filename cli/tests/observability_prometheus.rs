//! A real Prometheus server (Debian's `prometheus`, installed by
//! `.ci/install/observability.sh`, run here in the foreground with its own configuration and
//! storage, on 127.0.0.1) scrapes `rpcwire serve --http ... --metrics ...` while N calls are
//! made, M of them failing (a flood of distinct unknown method names among them); Prometheus's
//! HTTP API must then return N for the calls and M for the errors, the label set must stay
//! bounded (`_OTHER`), and the exposition must parse with PyPI `prometheus-client` and pass
//! `promtool check metrics` (Debian's `prometheus` package ships it) with nothing to report.
//! The same for a server built with the library in this process (`rpcwire_http::serve` with
//! `rpcwire_telemetry::prometheus`'s two lines), scraped by a real Prometheus too.
//!
//! Skips with a visible `SKIPPED:` line when the tools are missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use common::{bounded, http, spawn_serve};
use serde_json::Value;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};

/// Calls that succeed.
const OK: usize = 13;
/// Calls with bad params (Invalid params).
const BAD_PARAMS: usize = 4;
/// Calls of distinct made-up method names.
const UNKNOWN: usize = 300;

fn python() -> Option<PathBuf> {
    let py = PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
        .join(".cache/rpcwire-interop/observability/venv/bin/python");
    if py.exists() {
        Some(py)
    } else {
        rpcwire_tests::skip("no prometheus-client venv: run .ci/install/observability.sh");
        None
    }
}

fn prometheus() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("prometheus"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        rpcwire_tests::skip("no prometheus server: run .ci/install/observability.sh");
    }
    found
}

fn promtool() -> Option<PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("promtool"))
            .find(|p| p.is_file())
    });
    if found.is_none() {
        rpcwire_tests::skip("no promtool: run .ci/install/observability.sh");
    }
    found
}

/// `promtool check metrics` on `text`: what it reports (nothing when the exposition follows
/// Prometheus's rules: help text, `_total` on counters, units, ...).
async fn promtool_report(promtool: &PathBuf, text: &str) -> String {
    let mut child = Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(text.as_bytes()).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if out.status.success() {
        report
    } else {
        format!("exit {:?}: {report}", out.status.code())
    }
}

/// A Prometheus server scraping `target` (`HOST:PORT`, path `/metrics`) every second, on a
/// port of its own: its API's URL, and the process (killed when dropped) with its directory.
fn start_prometheus(prometheus: &PathBuf, target: &str, name: &str) -> (String, Child, PathBuf) {
    let dir =
        std::env::temp_dir().join(format!("rpcwire-prometheus-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: rpcwire\n    \
             static_configs:\n      - targets: ['{target}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new(prometheus)
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    (format!("http://127.0.0.1:{port}"), child, dir)
}

/// Waits (bounded) until `expr` is `want` in Prometheus (it scrapes every second); the last
/// value seen.
async fn wait_for(api: &str, expr: &str, want: f64) -> Option<f64> {
    let mut seen = None;
    for _ in 0..120 {
        seen = query(api, expr).await;
        if seen == Some(want) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    seen
}

/// `rpcwire serve --http 127.0.0.1:0 --metrics 127.0.0.1:0`: the RPC URL and the metrics URL.
async fn serve() -> (Child, String, String) {
    let (child, mut lines) = spawn_serve(&["--http", "127.0.0.1:0", "--metrics", "127.0.0.1:0"]);
    let (mut rpc, mut metrics) = (None, None);
    while rpc.is_none() || metrics.is_none() {
        let line = lines.next_line().await.unwrap().expect("a line on stderr");
        let last = line.rsplit(' ').next().unwrap_or_default().to_owned();
        if line.contains("metrics on") {
            metrics = Some(last);
        } else if last.starts_with("http://") {
            rpc = Some(last);
        }
    }
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, rpc.unwrap(), metrics.unwrap())
}

/// A free port on 127.0.0.1 (bound and released; Prometheus binds it next).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// `query` percent-encoded for a URL.
fn encode(query: &str) -> String {
    query
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'_' | b'.' | b'-' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The value of an instant query (`None` while it has no result or Prometheus is not up).
async fn query(api: &str, expr: &str) -> Option<f64> {
    // Prometheus may not listen yet (it starts while the calls are made).
    let addr = api.strip_prefix("http://")?;
    tokio::net::TcpStream::connect(addr).await.ok()?;
    let (status, body) = http(
        "GET",
        &format!("{api}/api/v1/query?query={}", encode(expr)),
        "",
        "",
    )
    .await;
    if status != 200 {
        return None;
    }
    let v: Value = serde_json::from_str(&body).ok()?;
    v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
}

#[tokio::test]
async fn prometheus_scrapes_call_counts_and_errors() {
    let (Some(prometheus), Some(python), Some(promtool)) = (prometheus(), python(), promtool())
    else {
        return;
    };
    bounded(async {
        let (_server, rpc, metrics) = serve().await;
        let metrics_target = metrics
            .strip_prefix("http://")
            .and_then(|m| m.strip_suffix("/metrics"))
            .unwrap()
            .to_owned();

        let (api, _prometheus, dir) = start_prometheus(&prometheus, &metrics_target, "cli");

        for i in 0..OK {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#);
            let (status, reply) = http("POST", &rpc, "", &body).await;
            assert_eq!(status, 200);
            assert!(reply.contains("result"), "{reply}");
        }
        for i in 0..BAD_PARAMS {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":["x"],"id":{i}}}"#);
            let (_, reply) = http("POST", &rpc, "", &body).await;
            assert!(reply.contains("-32602"), "{reply}");
        }
        for i in 0..UNKNOWN {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"made-up-{i}","id":{i}}}"#);
            let (_, reply) = http("POST", &rpc, "", &body).await;
            assert!(reply.contains("-32601"), "{reply}");
        }
        // Two batches, of 3 and 2 calls: their sizes in `rpc.server.batch.size`.
        for size in [3, 2] {
            let items: Vec<String> = (0..size)
                .map(|i| {
                    format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#)
                })
                .collect();
            let (status, reply) = http("POST", &rpc, "", &format!("[{}]", items.join(","))).await;
            assert_eq!(status, 200);
            assert_eq!(reply.matches("result").count(), size, "{reply}");
        }
        let calls = (OK + 5 + BAD_PARAMS + UNKNOWN) as f64;
        let errors = (BAD_PARAMS + UNKNOWN) as f64;

        // Prometheus scrapes every second: wait (bounded) for the last scrape to hold them all.
        let all = "sum(rpc_server_call_duration_seconds_count)";
        let failed = r#"sum(rpc_server_call_duration_seconds_count{error_type!=""})"#;
        let seen = wait_for(&api, all, calls).await;
        assert_eq!(seen, Some(calls), "calls counted by Prometheus");
        // Prometheus's own view of the target: its last scrape succeeded.
        let up = r#"up{job="rpcwire"}"#;
        assert_eq!(query(&api, up).await, Some(1.0), "the CLI's target is up");
        assert_eq!(query(&api, failed).await, Some(errors), "errors");
        let methods = "count(count by (rpc_method) (rpc_server_call_duration_seconds_count))";
        assert_eq!(
            query(&api, methods).await,
            Some(2.0),
            "subtract and _OTHER only"
        );
        let batches = "sum(rpc_server_batch_size_count)";
        assert_eq!(query(&api, batches).await, Some(2.0), "batches");
        let sizes = "sum(rpc_server_batch_size_sum)";
        assert_eq!(query(&api, sizes).await, Some(5.0), "batch sizes");
        let in_flight = "sum(rpc_server_calls_in_flight)";
        assert_eq!(query(&api, in_flight).await, Some(0.0), "calls in flight");

        // The exposition itself, parsed by the reference Python parser.
        let (status, text) = http("GET", &metrics, "", "").await;
        assert_eq!(status, 200);
        assert!(!text.contains("made-up"), "an unknown name became a label");
        assert!(
            text.contains(&format!(
                r#"rpc_server_rejections_total{{reason="not_found"}} {UNKNOWN}"#
            )),
            "{text}"
        );
        // Every HTTP connection was counted open, then closed.
        assert!(
            text.contains(r#"rpc_server_connections{network_transport="tcp"} 0"#),
            "{text}"
        );
        // The server's own event-stream connection is not a client's.
        assert!(!text.contains(r#"network_transport="pipe""#), "{text}");
        assert_eq!(promtool_report(&promtool, &text).await, "", "{text}");
        let script = r#"
import sys
from prometheus_client.parser import text_string_to_metric_families
count = errors = 0
methods = set()
for family in text_string_to_metric_families(sys.stdin.read()):
    if family.name == "rpc_server_call_duration_seconds":
        assert family.type == "histogram", family.type
        for s in family.samples:
            if s.name == "rpc_server_call_duration_seconds_count":
                count += s.value
                methods.add(s.labels["rpc_method"])
                if "error_type" in s.labels:
                    errors += s.value
print(int(count), int(errors), ",".join(sorted(methods)))
"#;
        let mut child = Command::new(&python)
            .args(["-c", script])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(text.as_bytes()).await.unwrap();
        drop(stdin);
        let out = child.wait_with_output().await.unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            format!("{} {} _OTHER,subtract", calls as u64, errors as u64)
        );
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// A server built with the library, as a user's binary does it: the demo router over
/// `rpcwire_http::serve`, its metrics mounted with the two lines of
/// `rpcwire_telemetry::prometheus`'s documentation; a real Prometheus scrapes it, and its
/// exposition passes `promtool check metrics`.
#[tokio::test]
async fn prometheus_scrapes_a_library_built_server() {
    let (Some(prometheus), Some(promtool)) = (prometheus(), promtool()) else {
        return;
    };
    bounded(async {
        let metrics = rpcwire_telemetry::prometheus::install().unwrap();
        let bound = metrics.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();

        let service = rpcwire_http::HttpServer::new(
            rpcwire_tokio::Builder::new().router(rpcwire_cli::demo_router()),
        )
        .path("/rpc")
        .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let rpc = format!("http://{}/rpc", listener.local_addr().unwrap());
        tokio::spawn(rpcwire_http::serve(listener, service));

        for i in 0..OK {
            let body =
                format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#);
            let (status, reply) = http("POST", &rpc, "", &body).await;
            assert_eq!(status, 200);
            assert!(reply.contains("result"), "{reply}");
        }
        for i in 0..BAD_PARAMS {
            let body = format!(r#"{{"jsonrpc":"2.0","method":"nothing-{i}","id":{i}}}"#);
            let (_, reply) = http("POST", &rpc, "", &body).await;
            assert!(reply.contains("-32601"), "{reply}");
        }
        let calls = (OK + BAD_PARAMS) as f64;

        let (api, _prometheus, dir) = start_prometheus(&prometheus, &bound.to_string(), "library");
        let all = "sum(rpc_server_call_duration_seconds_count)";
        assert_eq!(wait_for(&api, all, calls).await, Some(calls), "calls");
        let up = r#"up{job="rpcwire"}"#;
        assert_eq!(
            query(&api, up).await,
            Some(1.0),
            "the library's target is up"
        );
        let unknown = r#"sum(rpc_server_rejections_total{reason="not_found"})"#;
        assert_eq!(
            query(&api, unknown).await,
            Some(BAD_PARAMS as f64),
            "unknown"
        );

        let text = metrics.render();
        assert_eq!(promtool_report(&promtool, &text).await, "", "{text}");
        // Every family described, none a summary.
        for family in [
            "rpc_server_call_duration_seconds",
            "rpc_server_rejections_total",
        ] {
            assert!(text.contains(&format!("# HELP {family} ")), "{text}");
        }
        assert!(!text.contains("summary"), "{text}");
        assert!(!text.contains(r#"network_transport="pipe""#), "{text}");
        let (status, served) = http("GET", &format!("http://{bound}/metrics"), "", "").await;
        assert_eq!(status, 200);
        assert!(
            served.contains("# TYPE rpc_server_call_duration_seconds histogram"),
            "{served}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
