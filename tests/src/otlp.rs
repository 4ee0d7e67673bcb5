//! An OTLP/HTTP trace and metrics receiver for the tests: `py/otlp_receiver.py` (PyPI
//! `opentelemetry-proto`, installed by `.ci/install/observability.sh`) decodes each protobuf
//! export POSTed to `/v1/traces` and `/v1/metrics` and prints its spans, one JSON object a
//! line, and each metrics export as one line (its data points), read here.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// A running receiver on 127.0.0.1; killed when dropped.
#[derive(Debug)]
pub struct OtlpReceiver {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`: what `--otlp` takes).
    pub url: String,
    spans: mpsc::Receiver<Value>,
    metrics: mpsc::Receiver<Value>,
}

impl OtlpReceiver {
    /// Starts it, or `None` after [`crate::skip`] when the venv is missing (a failure under
    /// `CI=true`).
    pub fn start() -> Option<Self> {
        let python = crate::interop::venv_python("observability", "opentelemetry.proto")?;
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("py/otlp_receiver.py");
        let mut child = Command::new(python)
            .arg(script)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the OTLP receiver");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .expect("the receiver's first line");
        let port = first
            .strip_prefix("listening ")
            .expect("`listening PORT`")
            .to_owned();
        let (tx, spans) = mpsc::channel();
        let (metrics_tx, metrics) = mpsc::channel();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let Ok(mut line) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                // A metrics export, or a span (or a refused export: given to both readers).
                let sent = match line.get_mut("metrics").map(Value::take) {
                    Some(points) => metrics_tx.send(points).is_ok(),
                    None => {
                        if line.get("error").is_some() {
                            let _ = metrics_tx.send(line.clone());
                        }
                        tx.send(line).is_ok()
                    }
                };
                if !sent {
                    break;
                }
            }
        });
        Some(OtlpReceiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            spans,
            metrics,
        })
    }

    /// The next span received (panics past `limit`, or when an export was refused: a wrong
    /// path or content type).
    pub fn next_span(&self, limit: Duration) -> Value {
        let span = self
            .spans
            .recv_timeout(limit)
            .expect("no span exported in time");
        assert!(
            span.get("error").is_none(),
            "the receiver refused an export: {span}"
        );
        span
    }

    /// The next span received within `limit`, or `None` (panics when an export was refused).
    pub fn try_next_span(&self, limit: Duration) -> Option<Value> {
        let span = self.spans.recv_timeout(limit).ok()?;
        assert!(
            span.get("error").is_none(),
            "the receiver refused an export: {span}"
        );
        Some(span)
    }
}

impl OtlpReceiver {
    /// The data points of the next metrics export received (an array of objects with `name`,
    /// `unit`, `type` (`sum`, `gauge`, `histogram`), `attributes`, and `value` or `count`,
    /// `sum`, `bucket_counts`, `explicit_bounds`); `None` when none came within `limit`.
    /// Panics when an export was refused (a wrong path or content type).
    pub fn next_metrics(&self, limit: Duration) -> Option<Value> {
        let points = self.metrics.recv_timeout(limit).ok()?;
        assert!(
            points.get("error").is_none(),
            "the receiver refused an export: {points}"
        );
        Some(points)
    }
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Asks the process `pid` to stop as an operator would (SIGTERM): a server with `--otlp`
/// sends its last spans as it exits.
pub fn sigterm(pid: u32) {
    let killed = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(killed.success(), "kill -TERM {pid}");
}
