//! An OTLP/HTTP trace receiver for the tests: `py/otlp_receiver.py` (PyPI
//! `opentelemetry-proto`, installed by `.ci/install/observability.sh`) decodes each protobuf
//! export POSTed to `/v1/traces` and prints its spans, one JSON object a line, read here.

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
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let Ok(span) = serde_json::from_str::<Value>(&line) else {
                    continue;
                };
                if tx.send(span).is_err() {
                    break;
                }
            }
        });
        Some(OtlpReceiver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            spans,
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
