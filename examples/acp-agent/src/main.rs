//! `acp-agent`: an Agent Client Protocol agent that needs no language model. An editor (Zed,
//! or any ACP client) launches it and talks to it over its stdin and stdout; its logs go to
//! stderr (warnings only by default, no colours). It answers every method of ACP's stable v1
//! surface (sessions to list, load, resume, close and delete; modes; a config option; logout;
//! an extension method), understands a few prompts (see [`commands`]) and reports every step
//! as a tool call, and uses the tools of the MCP servers the editor gives it.

mod commands;
mod example;

use std::time::Duration;

use clap::Parser;
use rpcwire_acp::{AcpOptions, AgentServer};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "acp-agent",
    version,
    about = "An ACP agent with no language model"
)]
struct Args {
    /// The largest JSON-RPC message accepted or sent, in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_message: usize,
    /// How long each step of `long N` takes, in milliseconds.
    #[arg(long, default_value_t = 200)]
    step_ms: u64,
    /// Log level on stderr (error, warn, info, debug, trace). Quiet by default: an editor
    /// shows the agent's stderr as it is.
    #[arg(long, default_value = "warn")]
    log: tracing::Level,
    /// The format of the stderr log: text lines, or one JSON object per line (for a log
    /// collector).
    #[arg(long, value_enum, default_value = "text")]
    log_format: LogFormat,
}

/// The format of the stderr log (`--log-format`).
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
enum LogFormat {
    Text,
    Json,
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    // stdout is the wire: every log line goes to stderr, without colour codes (editors and
    // log files show them as they are).
    let log = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A line that cannot be written (stderr closed) is dropped; the subscriber's own
        // report of it would panic the task that logged.
        .log_internal_errors(false)
        .with_ansi(false)
        .with_max_level(args.log);
    match args.log_format {
        LogFormat::Text => log.init(),
        LogFormat::Json => log.json().init(),
    }
    let agent = example::Example::new(Duration::from_millis(args.step_ms));
    let options = AcpOptions::new().max_message(args.max_message);
    if let Err(e) = AgentServer::new(agent).options(options).serve_stdio().await {
        tracing::error!(error = %e, "connection failed");
        std::process::exit(1);
    }
    tracing::debug!("client closed the connection");
}
