//! The agent server: the same binary run as `orchestrator --agent NAME`, serving JSON-RPC on
//! its stdio (one JSON text per line), as an MCP-style agent would.

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, ReadBuf};

use rpcwire_tokio::{Builder, ErrorCode, Router, RpcError};
use serde::Deserialize;
use serde_json::{json, Value};

/// The agents the orchestrator starts: name, role, tools.
pub const AGENTS: [(&str, &str, &[&str]); 3] = [
    ("alpha", "text", &["uppercase", "reverse"]),
    ("beta", "math", &["sum", "word_count"]),
    ("gamma", "math", &["sum", "sort"]),
];

/// The longest a task may be asked to take (`delay_ms`).
const MAX_DELAY_MS: u64 = 60_000;

/// `task.run`'s params.
#[derive(Debug, Deserialize)]
struct Task {
    tool: String,
    input: Value,
    /// How long the agent works on it (a slow task, to be interrupted).
    #[serde(default)]
    delay_ms: u64,
}

/// Serves agent `name` on stdio until the orchestrator closes its stdin.
pub async fn serve(name: &str) -> Result<(), rpcwire_tokio::DriverError> {
    let Some(&(name, role, tools)) = AGENTS.iter().find(|(n, _, _)| *n == name) else {
        eprintln!("agent: unknown agent {name:?}");
        return Ok(());
    };
    let started = Instant::now();
    let batches = Arc::new(AtomicU64::new(0));
    let seen = Arc::clone(&batches);
    let router = Router::new()
        .sync_method("agent.describe", move |_: ()| {
            Ok::<_, RpcError>(json!({"name": name, "role": role, "pid": std::process::id()}))
        })
        .sync_method("agent.tools", move |_: ()| Ok::<_, RpcError>(tools))
        // Health waits a moment: the batch's replies may then come back in another order
        // than the calls went out, and the client collates them by id.
        .method("agent.health", move |_: ()| {
            let batches = seen.load(Ordering::Relaxed);
            async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                let uptime = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                Ok::<_, RpcError>(
                    json!({"status": "ok", "uptime_ms": uptime, "batches_received": batches}),
                )
            }
        })
        .method("task.run", move |task: Task| async move {
            if !tools.contains(&task.tool.as_str()) {
                return Err(RpcError::new(
                    ErrorCode(-32002),
                    format!("agent {name} has no tool {:?}", task.tool),
                ));
            }
            if task.delay_ms > MAX_DELAY_MS {
                return Err(RpcError::invalid_params(format!(
                    "delay_ms must be at most {MAX_DELAY_MS}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(task.delay_ms)).await;
            run_tool(&task.tool, &task.input)
        });
    let stdin = LineCounter {
        inner: tokio::io::stdin(),
        line_start: true,
        batches,
    };
    Builder::new()
        .router(router)
        .run(stdin, tokio::io::stdout())
        .join()
        .await
}

/// Counts the batches arriving on stdin (lines whose first byte is `[`: the orchestrator
/// writes one compact JSON text per line), so that `agent.health` can show that the
/// capability calls came in one frame.
struct LineCounter<R> {
    inner: R,
    line_start: bool,
    batches: Arc<AtomicU64>,
}

impl<R: AsyncRead + Unpin> AsyncRead for LineCounter<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let mut line_start = self.line_start;
        for &b in &buf.filled()[before..] {
            if line_start && b == b'[' {
                self.batches.fetch_add(1, Ordering::Relaxed);
            }
            line_start = b == b'\n';
        }
        self.line_start = line_start;
        polled
    }
}

fn run_tool(tool: &str, input: &Value) -> Result<Value, RpcError> {
    let text = || {
        input
            .as_str()
            .ok_or_else(|| RpcError::invalid_params("input must be a string"))
    };
    let numbers = || -> Result<Vec<i64>, RpcError> {
        serde_json::from_value(input.clone())
            .map_err(|_| RpcError::invalid_params("input must be an array of integers"))
    };
    Ok(match tool {
        "uppercase" => json!(text()?.to_uppercase()),
        "reverse" => json!(text()?.chars().rev().collect::<String>()),
        "word_count" => json!(text()?.split_whitespace().count()),
        "sum" => json!(numbers()?
            .iter()
            .try_fold(0i64, |a, &b| a.checked_add(b))
            .ok_or_else(|| RpcError::invalid_params("sum overflows"))?),
        "sort" => {
            let mut n = numbers()?;
            n.sort_unstable();
            json!(n)
        }
        other => {
            return Err(RpcError::new(
                ErrorCode(-32002),
                format!("unknown tool {other:?}"),
            ))
        }
    })
}
