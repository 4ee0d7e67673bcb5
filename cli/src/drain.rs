//! `rpcwire serve`'s graceful shutdown: SIGTERM or SIGINT drains a network server (TCP, TLS,
//! HTTP, WebSocket, MQTT) through the service's [`Shutdown`]: it stops accepting, answers the calls
//! it runs, refuses what arrives (503 over HTTP, `-32042` on a stream or WebSocket), closes
//! its connections cleanly, and the process exits 0 within `--drain-timeout`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcwire_tokio::{Builder, Shutdown};

/// The drain's flags.
#[derive(Debug, Args)]
pub(crate) struct DrainArgs {
    /// With --tcp, --http, --ws or --mqtt: on SIGTERM or SIGINT, let the calls under way finish for at
    /// most this many seconds (new calls are refused), then exit.
    #[arg(long, value_name = "SECS", default_value_t = 30.0, value_parser = drain_secs)]
    pub(crate) drain_timeout: f64,
}

/// A number of seconds, zero or more.
fn drain_secs(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "`{text}` is not a number of seconds from 0 to 86400"
        )),
    }
}

/// The drain of a network server: triggered by SIGTERM or SIGINT from now on, watched by
/// `builder`'s servers.
pub(crate) fn on_signals(args: &DrainArgs, builder: Builder) -> (Shutdown, Builder) {
    let shutdown = Shutdown::new(Duration::from_secs_f64(args.drain_timeout));
    shutdown.on_signals();
    let builder = builder.map_service(|s| s.shutdown(&shutdown));
    (shutdown, builder)
}

/// Once a server's accept loop has returned: waits for the drain to end, and says how it did.
pub(crate) async fn finish(shutdown: &Shutdown, code: ExitCode) -> ExitCode {
    if !shutdown.is_draining() {
        return code;
    }
    match shutdown.drained().await {
        rpcwire_tokio::Drained::Complete => eprintln!("rpcwire: drained, exiting"),
        rpcwire_tokio::Drained::DeadlineReached { open } => {
            eprintln!("rpcwire: drain deadline passed with {open} connection(s) open, exiting")
        }
    }
    code
}
