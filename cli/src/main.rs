//! `rpcwire`: serve the demo service, call a JSON-RPC 2.0 method, or watch a demo.

use std::process::ExitCode;

use rpcwire_cli::outln;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use rpcwire_cli::tap::Tap;
use rpcwire_cli::{demo_router, EXIT_CONNECTION};
use rpcwire_tokio::{Builder, CallError, Client, Framing};

mod call;
mod config;
mod cors;
mod drain;
mod hosts;
mod http;
mod probes;
mod serve;

use call::CallArgs;
#[cfg(feature = "otlp")]
use serve::otlp_metrics_recorder;
use serve::{init_logging, ServeArgs};

/// Exit code: the peer answered with a JSON-RPC error (printed on stderr).
const EXIT_RPC_ERROR: u8 = 1;
/// Exit code: bad command line.
const EXIT_USAGE: u8 = 2;
/// Exit code: no answer within `--timeout`.
const EXIT_TIMEOUT: u8 = 4;

#[derive(Debug, Parser)]
#[command(
    name = "rpcwire",
    version,
    about = "Serve or call JSON-RPC 2.0 over stdio, TCP, a serial port or a child process",
    after_help = "Start with `rpcwire demo`: a client and the demo service in one process, every frame printed.\n\n\
        Every command ends quietly with exit code 141 (as a shell shows for SIGPIPE) when its \
        stdout is closed by its reader (`rpcwire serve | head -c1`, `rpcwire demo | head -2`)."
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// Log to stderr (-v: debug, -vv: trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    verbose: u8,
    /// The format of the stderr log: one text line per event, or one JSON object per line.
    #[arg(long, global = true, value_enum, default_value = "text")]
    log_format: rpcwire_cli::logs::LogFormat,
}

// Parsed once per process: the size of its largest variant costs nothing worth boxing for.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Subcommand)]
enum Cmd {
    /// Serve the demo service (subtract, sum, update, notify_hello, notify_sum, get_data, echo,
    /// sleep, fail).
    #[command(after_help = "Methods (params -> result):\n  \
        subtract  [minuend, subtrahend] or {\"minuend\": a, \"subtrahend\": b} -> a - b\n  \
        sum       [n, ...] -> the sum (integers stay integers)\n  \
        get_data  none -> [\"hello\", 5]\n  \
        echo      anything -> the params unchanged (null when absent)\n  \
        update, notify_hello, notify_sum   anything -> null (as notifications: nothing)\n  \
        sleep     {\"ms\": N} or [N] -> null after N milliseconds (at most 3600000)\n  \
        fail      anything -> always the error -32000 with a data member")]
    Serve(ServeArgs),
    /// Call a method (or send a notification) and print the result.
    #[command(
        after_help = "Exit codes: 0 result printed on stdout (or notification sent); \
        1 JSON-RPC error (the error object on stderr); 2 bad arguments; \
        3 connection failed or closed; 4 timeout; 141 stdout closed by its reader."
    )]
    Call(CallArgs),
    /// Print the notifications a WebSocket server sends, one JSON object per line.
    Listen(rpcwire_cli::ws::ListenArgs),
    /// Serve and call in one process over an in-memory pipe, printing every frame.
    Demo,
    /// Carry MCP / JSON-RPC lines between stdio and a device (serial port or TCP), validating
    /// every frame: an MCP host spawns this as a stdio server.
    #[command(
        after_help = "Exit codes: 0 stdin ended; 2 bad arguments; 3 the device link \
        could not be opened, failed or closed."
    )]
    Bridge(rpcwire_cli::bridge_command::BridgeArgs),
}

/// A protocol profile's connection settings.
#[derive(Debug, Clone, Copy, ValueEnum)]
enum ProfileArg {
    /// Plain JSON-RPC 2.0: no cancel notification.
    Plain,
    /// LSP: `Content-Length` framing; `$/cancelRequest` cancels the peer's handler when a
    /// call times out.
    Lsp,
    /// MCP over a byte stream: `notifications/cancelled` cancels the peer's handler when a
    /// call times out.
    Mcp,
}

impl ProfileArg {
    /// The profile's builder, with `framing` instead of the profile's own when given.
    fn builder(self, framing: Option<FramingArg>) -> Builder {
        let builder = match self {
            ProfileArg::Plain => Builder::new(),
            // LSP: `Content-Length` framing, `$/cancelRequest` (`id`) both ways, a cancelled
            // request still answered.
            ProfileArg::Lsp => Builder::new()
                .framing(rpcwire_tokio::Framing::ContentLength)
                .map_service(|s| s.cancel_notification("$/cancelRequest", "id")),
            ProfileArg::Mcp => rpcwire_mcp::tokio::mcp_builder().batches(true),
        };
        match framing {
            Some(f) => builder.framing(f.into()),
            None => builder,
        }
    }
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FramingArg {
    /// One JSON text per line (MCP stdio, most TCP peers).
    Line,
    /// `Content-Length` headers (LSP).
    ContentLength,
}

impl From<FramingArg> for Framing {
    fn from(f: FramingArg) -> Framing {
        match f {
            FramingArg::Line => Framing::Line,
            FramingArg::ContentLength => Framing::ContentLength,
        }
    }
}

/// The sample ratio OpenTelemetry's environment variables set, if any; a setting rpcwire
/// cannot follow is warned of and left out (the default then holds), as the OpenTelemetry
/// specification asks of an SDK.
#[cfg(feature = "otlp")]
fn sample_ratio_from_env() -> Option<rpcwire_telemetry::SampleRatio> {
    rpcwire_telemetry::SampleRatio::from_env().unwrap_or_else(|e| {
        eprintln!(
            "rpcwire: OpenTelemetry sampler setting ignored ({e}): every call sampled unless \
             --otlp-sample says otherwise"
        );
        None
    })
}

/// The command line, with the flags of `serve --config FILE` read in (see `config`).
fn parse_cli() -> Cli {
    use clap::{CommandFactory, FromArgMatches};
    let argv: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let command = Cli::command();
    let matches = command.clone().get_matches_from(argv.clone());
    let argv = match config::with_config(argv, &command, &matches) {
        Ok(argv) => argv,
        Err(e) => {
            eprintln!("rpcwire: {e}");
            std::process::exit(i32::from(EXIT_USAGE));
        }
    };
    let matches = command.get_matches_from(argv);
    Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
}

fn main() -> ExitCode {
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut cli = parse_cli();
    let log_calls = matches!(&cli.command, Cmd::Serve(args) if args.log_calls);
    // Started before the subscriber, which holds its layer; dropped (flushed) last.
    #[cfg(feature = "otlp")]
    let otlp = match &cli.command {
        Cmd::Serve(ServeArgs {
            otlp: Some(url),
            otlp_sample,
            ..
        }) => match rpcwire_telemetry::otlp::OtlpExport::start(url, "rpcwire") {
            Ok(export) => {
                if let Some(ratio) = otlp_sample.or_else(sample_ratio_from_env) {
                    rpcwire_telemetry::set_sample_ratio(ratio);
                }
                Some(export)
            }
            Err(e) => {
                eprintln!("rpcwire: --otlp: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        _ => None,
    };
    // The metrics sent with the spans: their recorder installed now, or beside the Prometheus
    // one when --metrics is given too (in `serve`). Dropped (the last values sent) after the
    // runtime.
    #[cfg(feature = "otlp")]
    let otlp_metrics = match &mut cli.command {
        Cmd::Serve(args) => match args.otlp.as_deref().map(|url| {
            let every = Duration::from_secs_f64(args.otlp_interval);
            rpcwire_telemetry::otlp::metrics::OtlpMetrics::start(url, "rpcwire", every)
        }) {
            None => None,
            Some(Ok(export)) => {
                if let Err(e) = otlp_metrics_recorder(args, &export) {
                    eprintln!("rpcwire: --otlp: metrics recorder: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
                Some(export)
            }
            Some(Err(e)) => {
                eprintln!("rpcwire: --otlp: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        _ => None,
    };
    #[cfg(feature = "otlp")]
    init_logging(
        cli.log_format,
        cli.verbose,
        log_calls,
        otlp.as_ref().map(|o| o.layer()),
    );
    #[cfg(not(feature = "otlp"))]
    init_logging(
        cli.log_format,
        cli.verbose,
        log_calls,
        None::<tracing_subscriber::layer::Identity>,
    );
    // One connection (stdio, a serial port, a call) runs best on one thread: no hand-offs
    // between workers. A TCP server spreads its connections over every core.
    let one_connection = !matches!(&cli.command, Cmd::Serve(args) if args.tcp.is_some() || args.http.is_some() || args.ws.ws.is_some() || args.nats.nats.is_some() || args.mqtt.mqtt.is_some());
    let mut builder = if one_connection {
        tokio::runtime::Builder::new_current_thread()
    } else {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        if let Some(n) = std::env::var("RPCWIRE_THREADS")
            .ok()
            .and_then(|v| v.parse().ok())
        {
            b.worker_threads(n);
        }
        b
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("rpcwire: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async move {
        match cli.command {
            #[cfg(feature = "otlp")]
            // A network server drains on the signal itself (`drain`), and returns.
            Cmd::Serve(args) if otlp.is_some() && !args.drains() => {
                // Stopped by a signal, the spans not yet exported are sent before exiting.
                tokio::select! {
                    code = serve::serve(args) => code,
                    () = rpcwire_cli::stop_signal() => ExitCode::SUCCESS,
                }
            }
            Cmd::Serve(args) => serve::serve(args).await,
            Cmd::Call(args) => call::call(args).await,
            Cmd::Listen(args) => rpcwire_cli::ws::listen(&args).await,
            Cmd::Demo => demo().await,
            Cmd::Bridge(args) => rpcwire_cli::bridge_command::main(args).await,
        }
    });
    // A blocking stdin read may still be parked in the runtime's blocking pool: do not wait
    // for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    #[cfg(feature = "otlp")]
    drop(otlp_metrics);
    code
}

/// Prints a call's outcome under its frames.
fn show(outcome: Result<serde_json::Value, CallError>) {
    match outcome {
        Ok(v) => outln!("    = {v}"),
        Err(CallError::Rpc(e)) => outln!(
            "    ! error {}",
            serde_json::to_string(&e).unwrap_or_else(|_| e.to_string())
        ),
        Err(e) => outln!("    ! {e}"),
    }
}

async fn step(title: &str) {
    // Let the previous step's frames print before the next heading.
    tokio::time::sleep(Duration::from_millis(20)).await;
    outln!("\n# {title}");
}

async fn demo() -> ExitCode {
    outln!(
        "rpcwire demo: a client and the demo service joined by an in-memory pipe.\n\
         Every frame is printed as it crosses the pipe: --> client to server, <-- server to client;\n\
         `=` is the result the client decoded, `!` an error."
    );
    let (server_io, client_io) = tokio::io::duplex(64 << 10);
    let server = Builder::new().router(demo_router()).run_io(server_io);
    let (reader, writer) = tokio::io::split(client_io);
    let session = Builder::new()
        .request_timeout(Some(Duration::from_secs(5)))
        .run(Tap::new(reader, "<--"), Tap::new(writer, "-->"));
    let c: Client = session.client().clone();

    step("subtract, positional params").await;
    show(c.call("subtract", [42, 23]).await);
    step("subtract, named params").await;
    show(
        c.call(
            "subtract",
            serde_json::json!({"subtrahend": 23, "minuend": 42}),
        )
        .await,
    );
    step("sum: integers stay integers, fractions stay fractions").await;
    show(c.call("sum", [1, 2, 4]).await);
    show(c.call("sum", [0.5, 0.25]).await);
    step("get_data, no params").await;
    show(c.call("get_data", ()).await);
    step("echo returns its params unchanged").await;
    show(
        c.call("echo", serde_json::json!({"nested": [1, "two", null]}))
            .await,
    );
    step("a notification: no id, no answer").await;
    if let Err(e) = c.notify("update", [1, 2, 3, 4, 5]).await {
        outln!("    ! {e}");
    }
    step("a method that does not exist").await;
    show(c.call("foobar", ()).await);
    step("wrong params").await;
    show(c.call("subtract", ("forty-two", 23)).await);
    step("fail: an application error with data").await;
    show(c.call("fail", ()).await);
    step("three concurrent sleeps answer out of order (300, 200, 100 ms)").await;
    let (a, b, d) = tokio::join!(
        c.call::<_, serde_json::Value>("sleep", serde_json::json!({"ms": 300})),
        c.call::<_, serde_json::Value>("sleep", serde_json::json!({"ms": 200})),
        c.call::<_, serde_json::Value>("sleep", serde_json::json!({"ms": 100})),
    );
    for outcome in [a, b, d] {
        show(outcome);
    }
    step("a batch: calls and a notification in one array").await;
    let mut batch = c.batch();
    let built = (|| {
        batch.call("sum", [1, 2, 4])?;
        batch.notify("notify_hello", [7])?;
        batch.call("subtract", [42, 23])?;
        batch.call("get_data", ())?;
        Ok::<_, CallError>(())
    })();
    match built {
        Ok(()) => match batch.send().await {
            Ok(results) => {
                for r in results {
                    show(r.and_then(|raw| {
                        serde_json::from_str(raw.get()).map_err(CallError::Decode)
                    }));
                }
            }
            Err(e) => outln!("    ! {e}"),
        },
        Err(e) => outln!("    ! {e}"),
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    drop(c);
    let _ = session.join().await;
    let _ = server.join().await;
    outln!(
        "\nTry it over TCP: `rpcwire serve --tcp 127.0.0.1:4000` in one terminal, then\n\
         `rpcwire call --tcp 127.0.0.1:4000 subtract '[42, 23]'` in another."
    );
    ExitCode::SUCCESS
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every flag of `serve` has a key in a `--config` file: each one, alone in a table
    /// (a sample value of its kind), becomes that flag. A flag that could not (no long name,
    /// say) fails here as soon as it is added.
    #[test]
    fn every_serve_flag_has_a_config_key() {
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let mut seen = 0;
        for arg in serve.get_arguments() {
            let id = arg.get_id().as_str();
            if id == "config" || id == "help" || arg.is_global_set() {
                continue;
            }
            let long = arg
                .get_long()
                .unwrap_or_else(|| panic!("`serve` flag `{id}` has no long name: no config key"));
            let takes_value = arg.get_action().takes_values();
            let value = if takes_value {
                toml::Value::String("1".into())
            } else {
                toml::Value::Boolean(true)
            };
            for key in [long.to_owned(), long.replace('-', "_")] {
                let mut table = toml::Table::new();
                table.insert(key.clone(), value.clone());
                let flags = config::flags_of(&table, serve, &|_| false)
                    .unwrap_or_else(|e| panic!("`{key}`: {e}"));
                let mut want = vec![std::ffi::OsString::from(format!("--{long}"))];
                if takes_value {
                    want.push("1".into());
                }
                assert_eq!(flags, want, "`{key}`");
                // Given on the command line: the key is left out.
                let given = config::flags_of(&table, serve, &|i| i == id).unwrap();
                assert!(given.is_empty(), "`{key}`");
            }
            seen += 1;
        }
        assert!(seen > 30, "only {seen} flags seen");
    }

    #[test]
    fn unknown_keys_and_wrong_kinds_are_refused_with_their_key() {
        let cli = Cli::command();
        let serve = cli.find_subcommand("serve").unwrap();
        let table: toml::Table = "max-frames = 3".parse().unwrap();
        let e = config::flags_of(&table, serve, &|_| false).unwrap_err();
        assert!(e.to_string().contains("max-frames"), "{e}");
        let table: toml::Table = "any-host = 3".parse().unwrap();
        let e = config::flags_of(&table, serve, &|_| false).unwrap_err();
        assert!(e.to_string().contains("any-host"), "{e}");
        let table: toml::Table = "max-frame = { a = 1 }".parse().unwrap();
        assert!(config::flags_of(&table, serve, &|_| false).is_err());
    }
}
