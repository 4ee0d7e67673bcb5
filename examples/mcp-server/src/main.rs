//! An MCP server over stdio, built on rpcwire: point an MCP host at the `mcp-server` binary.
//!
//! Tools: `add` and `echo` (simple), `count` (reports progress), `fail` (a tool failure, an
//! `isError: true` result), `long_task` (runs until done or until the client sends
//! `notifications/cancelled`). `count` and `long_task` also log through
//! `notifications/message`. Diagnostics go to stderr; stdout is the wire.

use std::time::Duration;

use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
use rpcwire_mcp::LogLevel;
use schemars::JsonSchema;
use serde::Deserialize;

#[derive(Deserialize, JsonSchema)]
struct Add {
    /// The first addend.
    a: i64,
    /// The second addend.
    b: i64,
}

#[derive(Deserialize, JsonSchema)]
struct Echo {
    /// The text to send back.
    text: String,
}

#[derive(Deserialize, JsonSchema)]
struct Count {
    /// Count from 1 to this (at most 1000).
    to: u32,
    /// Milliseconds between steps (default 10, at most 1000).
    #[serde(default)]
    delay_ms: Option<u64>,
}

#[derive(Deserialize, JsonSchema)]
struct Fail {
    /// Why the tool fails.
    #[serde(default)]
    reason: Option<String>,
}

#[derive(Deserialize, JsonSchema)]
struct LongTask {
    /// How long to run, in seconds (default 30, at most 3600).
    #[serde(default)]
    seconds: Option<u64>,
}

async fn add(_ctx: ToolContext, Add { a, b }: Add) -> Result<String, ToolError> {
    let sum = a
        .checked_add(b)
        .ok_or_else(|| ToolError::new(format!("{a} + {b} overflows a 64-bit integer")))?;
    Ok(sum.to_string())
}

async fn echo(_ctx: ToolContext, Echo { text }: Echo) -> Result<String, ToolError> {
    Ok(text)
}

async fn count(ctx: ToolContext, Count { to, delay_ms }: Count) -> Result<String, ToolError> {
    if to > 1000 {
        return Err(ToolError::new("`to` is at most 1000"));
    }
    let delay = Duration::from_millis(delay_ms.unwrap_or(10).min(1000));
    ctx.log(LogLevel::Info, format!("counting to {to}")).await;
    for i in 1..=to {
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = ctx.cancelled() => return Err(ToolError::new(format!("cancelled at {}", i - 1))),
        }
        ctx.progress(
            f64::from(i),
            Some(f64::from(to)),
            Some(&format!("step {i}")),
        )
        .await;
    }
    ctx.log(LogLevel::Debug, "counting done").await;
    Ok(format!("counted to {to}"))
}

async fn fail(_ctx: ToolContext, Fail { reason }: Fail) -> Result<String, ToolError> {
    Err(ToolError::new(
        reason.unwrap_or_else(|| "this tool always fails".to_owned()),
    ))
}

async fn long_task(ctx: ToolContext, LongTask { seconds }: LongTask) -> Result<String, ToolError> {
    let steps = seconds.unwrap_or(30).min(3600) * 10;
    ctx.log(
        LogLevel::Info,
        format!("long_task started: {steps} steps of 100 ms"),
    )
    .await;
    for step in 1..=steps {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_millis(100)) => {}
            () = ctx.cancelled() => {
                // The client no longer waits; this log line says where the task stopped.
                ctx.log(LogLevel::Warning, format!("long_task cancelled after {} steps", step - 1))
                    .await;
                return Err(ToolError::new("cancelled"));
            }
        }
        ctx.progress(step as f64, Some(steps as f64), None).await;
    }
    Ok(format!("long_task finished {steps} steps"))
}

#[tokio::main]
async fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .init();
    let server = McpServer::new("rpcwire-example", env!("CARGO_PKG_VERSION"))
        .instructions(
            "Example tools: add, echo, count (progress), fail (isError), long_task (cancellable).",
        )
        .tool("add", "Adds two integers.", add)
        .tool("echo", "Sends the text back.", echo)
        .tool(
            "count",
            "Counts to `to`, reporting progress at each step.",
            count,
        )
        .tool("fail", "Always fails (an isError result).", fail)
        .tool(
            "long_task",
            "Runs for `seconds`, reporting progress; stops when cancelled.",
            long_task,
        );
    if let Err(e) = server.serve_stdio().await {
        eprintln!("mcp-server: {e}");
        std::process::exit(1);
    }
}
