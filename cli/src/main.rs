//! `rpcwire`: serve the demo service, call a JSON-RPC 2.0 method, or watch a demo.

use std::process::ExitCode;

use rpcwire_cli::outln;
use std::time::Duration;

use clap::{ArgGroup, Args, Parser, Subcommand, ValueEnum};
use rpcwire_cli::tap::Tap;
use rpcwire_cli::{demo_router, EXIT_CONNECTION};
use rpcwire_http::ws::WsConfig;
use rpcwire_tokio::{
    Builder, CallError, Client, Framing, Session, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_FRAME,
};
use serde_json::value::RawValue;

mod http;

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
    Bridge(rpcwire_cli::bridge::BridgeArgs),
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

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("transport").args(["stdio", "tcp", "serial", "http", "ws"])))]
#[command(group(ArgGroup::new("web").args(["http", "ws"])))]
struct ServeArgs {
    /// Serve on stdin/stdout (the default).
    #[arg(long)]
    stdio: bool,
    /// Listen on this TCP address (e.g. 127.0.0.1:4000; port 0 picks one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    tcp: Option<String>,
    /// Serve on a serial port (e.g. /dev/ttyUSB0, 8N1, no flow control).
    #[arg(long, value_name = "PATH")]
    serial: Option<String>,
    /// Serve JSON-RPC over HTTP on this address (POST; GET opens the event stream; a
    /// WebSocket upgrade on the same path); the demo service gains `count [n]`, which sends n
    /// progress notifications first.
    #[arg(long, value_name = "ADDR")]
    http: Option<String>,
    /// With --http: the path served.
    #[arg(long, value_name = "PATH", default_value = "/rpc", requires = "http")]
    path: String,
    /// With --http: accept any Host and Origin (default: loopback names only).
    #[arg(long, requires = "http")]
    any_host: bool,
    /// Serial baud rate (default 115200).
    #[arg(long, value_name = "N", requires = "serial")]
    baud: Option<u32>,
    /// Message framing (default: the profile's; `line` for plain and mcp).
    #[arg(long, value_enum)]
    framing: Option<FramingArg>,
    /// Protocol profile: `lsp` and `mcp` set their cancel notification, so that a client's
    /// timeout cancels the handler it waits for.
    #[arg(long, value_enum, default_value = "plain")]
    profile: ProfileArg,
    /// Largest frame accepted, in bytes (larger ones are answered with an error and skipped).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FRAME)]
    max_frame: usize,
    /// Handlers running at once per connection.
    #[arg(long, value_name = "N", default_value_t = 64)]
    concurrency: usize,
    /// With --tcp: connections held at once; more wait until one ends (a warning is logged).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// With --tcp or --http: serve TLS (HTTPS and WSS for --http, HTTP/2 or HTTP/1.1 by ALPN)
    /// with this certificate chain (PEM, the server's certificate first). The files are read
    /// again when they change and on SIGHUP; open connections go on with the certificate they
    /// started with.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<std::path::PathBuf>,
    /// With --tls-cert: the certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<std::path::PathBuf>,
    /// With --tls-cert: require a client certificate signed by this CA (PEM; mutual TLS).
    /// The certificate's subject is the caller's identity.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    client_ca: Option<std::path::PathBuf>,
    /// With --http or --ws: callers must present one of these API keys or bearer tokens
    /// (`Authorization: Bearer TOKEN`): a file of `TOKEN [@SUBJECT] ROLE...` lines, compared
    /// in constant time. Without one, a request gets 401 (no 101 for a WebSocket upgrade).
    #[arg(long, value_name = "FILE", requires = "web", conflicts_with = "jwks")]
    tokens: Option<std::path::PathBuf>,
    /// With --http or --ws: callers must present an OAuth access token (a JWT: RS256, ES256
    /// or EdDSA) signed by a key of this JWKS URL (fetched, cached, refreshed), for --audience
    /// and --issuer. Its scopes (`scope`, `scp`) and `roles` are the caller's roles for
    /// --policy. A WebSocket connection is authenticated once, at its upgrade.
    #[arg(long, value_name = "URL", requires_all = ["web", "audience", "issuer"])]
    jwks: Option<String>,
    /// With --jwks: the audience tokens must name (this server's URL).
    #[arg(long, value_name = "AUD", requires = "jwks")]
    audience: Option<String>,
    /// With --jwks: the issuer tokens must name.
    #[arg(long, value_name = "ISS", requires = "jwks")]
    issuer: Option<String>,
    /// With --http: every POST must be signed with the key in this file (HMAC-SHA256 of the
    /// body, a timestamp within 5 min and a nonce never seen before: the X-Rpcwire-Signature,
    /// -Timestamp and -Nonce headers); checked before the body is parsed, 401 otherwise.
    #[arg(long, value_name = "FILE", requires = "http")]
    signing_key: Option<std::path::PathBuf>,
    /// At most this many requests per second per caller (a token bucket with a burst of as
    /// many): HTTP answers 429 with Retry-After beyond it, the TCP transport a JSON-RPC error.
    #[arg(long, value_name = "N")]
    rate_limit: Option<u32>,
    /// Which roles may call which method: a file of `METHOD ROLE...` lines (`*` for every
    /// method without a line of its own; a method with no roles is open). A refused call is
    /// answered -32040 Forbidden and its handler does not run. Callers over stdio are the
    /// local process and hold every role.
    #[arg(long, value_name = "FILE")]
    policy: Option<std::path::PathBuf>,
    /// Serve the calls' and connections' metrics in the Prometheus text format on this
    /// address (`HOST:PORT`, or a port on 127.0.0.1), at /metrics.
    #[cfg(feature = "metrics")]
    #[arg(long, value_name = "ADDR")]
    metrics: Option<String>,
    /// With --http: the demo service gains `relay {"method": M, "params": P}`, which calls M
    /// on the JSON-RPC server at this URL (over HTTP) and answers its result.
    #[arg(long, value_name = "URL", requires = "http")]
    upstream: Option<String>,
    /// Export the calls' and connections' spans and metrics over OTLP/HTTP (protobuf) to the
    /// collector at this `http://` URL (spans go to its /v1/traces, metrics to /v1/metrics),
    /// as the service `rpcwire`; a `traceparent` header (or `_meta.traceparent`) a call comes
    /// with is its span's parent, and calls to --upstream carry theirs. The metrics are those
    /// --metrics serves (cumulative), sent every --otlp-interval. What is left is sent when
    /// the process stops (SIGINT, SIGTERM).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "URL")]
    otlp: Option<String>,
    /// With --otlp: send the metrics every this many seconds (and once more when stopped).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "SECS", default_value_t = 60.0, requires = "otlp", value_parser = positive_secs)]
    otlp_interval: f64,
    /// With --otlp: record the spans of this fraction (0 to 1) of the calls that come without
    /// a trace context (and of root client calls). A call with a `traceparent` follows its
    /// sampled flag; an unsampled call builds no span and sends its trace on unsampled
    /// (flags 00). Default: what OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say
    /// (always_on, always_off, traceidratio and their parentbased_ forms), else 1: every
    /// call.
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "RATIO", requires = "otlp", value_parser = clap::value_parser!(rpcwire_telemetry::SampleRatio))]
    otlp_sample: Option<rpcwire_telemetry::SampleRatio>,
    /// Log one line per call on stderr: method, id, latency, status, transport and peer
    /// (never a credential: no header, no token; no params unless --log-bodies).
    #[arg(long)]
    log_calls: bool,
    /// With --log-calls: also log each call's params and result (or error), with the values
    /// of credential-like members (`password`, `token`, `authorization`, ...), of --redact's
    /// names and of the --tokens file's tokens replaced by `"[redacted]"`, cut at
    /// --log-body-limit bytes.
    #[arg(long, requires = "log_calls")]
    log_bodies: bool,
    /// With --log-bodies: also redact the values of JSON members of this name, at any depth
    /// (any case; repeatable).
    #[arg(long, value_name = "FIELD", requires = "log_bodies")]
    redact: Vec<String>,
    /// With --log-bodies: the longest body shown, in bytes; longer ones are cut with a
    /// `…[truncated N bytes]` marker.
    #[arg(long, value_name = "BYTES", default_value_t = rpcwire_telemetry::body_log::DEFAULT_MAX_LEN, requires = "log_bodies")]
    log_body_limit: usize,
    #[command(flatten)]
    ws: rpcwire_cli::ws::WsServeArgs,
    /// The OTLP metrics' recorder, for --metrics to record beside its own (not an option).
    #[cfg(all(feature = "otlp", feature = "metrics"))]
    #[arg(skip)]
    otlp_recorder: Option<rpcwire_telemetry::otlp::metrics::OtlpRecorder>,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("transport").required(true).args(["tcp", "serial", "exec", "http", "ws"])))]
struct CallArgs {
    /// Connect to this TCP address.
    #[arg(long, value_name = "ADDR")]
    tcp: Option<String>,
    /// Talk over a serial port (e.g. /dev/ttyACM0, 8N1, no flow control).
    #[arg(long, value_name = "PATH")]
    serial: Option<String>,
    /// Serial baud rate (default 115200).
    #[arg(long, value_name = "N", requires = "serial")]
    baud: Option<u32>,
    /// Spawn this server command (split with shell-word rules) and talk over its stdio.
    #[arg(long, value_name = "CMD")]
    exec: Option<String>,
    /// POST to this URL (e.g. http://127.0.0.1:8080/rpc, or https://); notifications the
    /// server sends first (progress) are printed on stderr as they arrive.
    #[arg(long, value_name = "URL")]
    http: Option<String>,
    /// Connect to this WebSocket URL (ws://host:port/path, or wss://).
    #[arg(long, value_name = "URL")]
    ws: Option<String>,
    /// For an https:// or wss:// URL, or --tcp with --tls: trust the certificates in this PEM
    /// file (a private CA, a self-signed server) instead of Mozilla's root certificates.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["serial", "exec"])]
    ca_cert: Option<std::path::PathBuf>,
    /// With --tcp: speak TLS (needs --ca-cert); the server's certificate is checked for the
    /// host part of ADDR.
    #[arg(long, requires_all = ["tcp", "ca_cert"])]
    tls: bool,
    /// With --http: send this header with the request (`'Name: value'`; repeatable).
    #[arg(long = "header", value_name = "HEADER", requires = "http")]
    headers: Vec<String>,
    /// With --http: send `Authorization: Bearer TOKEN`. `@FILE` reads the token from a file
    /// and `env:NAME` from an environment variable, so that it stays out of the process list
    /// and the shell history. Never logged.
    #[arg(long, value_name = "TOKEN", requires = "http")]
    bearer: Option<String>,
    /// With --tls: present this client certificate (PEM) for mutual TLS.
    #[arg(long, value_name = "FILE", requires_all = ["tls", "key"])]
    cert: Option<std::path::PathBuf>,
    /// With --cert: the client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<std::path::PathBuf>,
    /// Message framing (default: the profile's; `line` for plain and mcp).
    #[arg(long, value_enum)]
    framing: Option<FramingArg>,
    /// Protocol profile: with `lsp` or `mcp`, a call that times out sends the profile's cancel
    /// notification, which cancels the server's handler.
    #[arg(long, value_enum, default_value = "plain")]
    profile: ProfileArg,
    /// Largest frame sent or received, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FRAME)]
    max_frame: usize,
    /// Seconds to wait for the connection and the answer.
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    timeout: f64,
    /// Send a notification (no id, no answer) instead of a call.
    #[arg(long)]
    notify: bool,
    /// The method name.
    method: String,
    /// The params as JSON (an array or an object); `@FILE` reads them from a file and `-`
    /// from stdin (for values larger than the command line allows).
    #[arg(value_name = "PARAMS")]
    params: Option<String>,
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

fn main() -> ExitCode {
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut cli = Cli::parse();
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
    init_logging(cli.verbose, log_calls, otlp.as_ref().map(|o| o.layer()));
    #[cfg(not(feature = "otlp"))]
    init_logging(
        cli.verbose,
        log_calls,
        None::<tracing_subscriber::layer::Identity>,
    );
    // One connection (stdio, a serial port, a call) runs best on one thread: no hand-offs
    // between workers. A TCP server spreads its connections over every core.
    let one_connection = !matches!(&cli.command, Cmd::Serve(args) if args.tcp.is_some() || args.http.is_some() || args.ws.ws.is_some());
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
            Cmd::Serve(args) if otlp.is_some() => {
                // Stopped by a signal, the spans not yet exported are sent before exiting.
                tokio::select! {
                    code = serve(args) => code,
                    () = rpcwire_cli::stop_signal() => ExitCode::SUCCESS,
                }
            }
            Cmd::Serve(args) => serve(args).await,
            Cmd::Call(args) => call(args).await,
            Cmd::Listen(args) => rpcwire_cli::ws::listen(&args).await,
            Cmd::Demo => demo().await,
            Cmd::Bridge(args) => rpcwire_cli::bridge::main(args).await,
        }
    });
    // A blocking stdin read may still be parked in the runtime's blocking pool: do not wait
    // for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    #[cfg(feature = "otlp")]
    drop(otlp_metrics);
    code
}

/// A number of seconds more than zero (`--otlp-interval`).
#[cfg(feature = "otlp")]
fn positive_secs(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(secs) if secs > 0.0 && secs.is_finite() && secs < 1e9 => Ok(secs),
        _ => Err(format!(
            "{text:?} is not a number of seconds more than zero"
        )),
    }
}

/// Installs the OTLP metrics' recorder, or (with --metrics) leaves it for `serve` to put
/// beside the Prometheus one.
#[cfg(feature = "otlp")]
fn otlp_metrics_recorder(
    args: &mut ServeArgs,
    export: &rpcwire_telemetry::otlp::metrics::OtlpMetrics,
) -> Result<(), String> {
    #[cfg(feature = "metrics")]
    if args.metrics.is_some() {
        args.otlp_recorder = Some(export.recorder());
        return Ok(());
    }
    let _ = args;
    export.install().map_err(|e| e.to_string())
}

/// Turns on `--log-bodies` with its redactions: the named members, and any string that is
/// one of the `--tokens` file's tokens.
fn log_bodies(args: &ServeArgs) -> Result<(), ExitCode> {
    use rpcwire_telemetry::body_log::{self, BodyLog};
    let mut config = BodyLog::default().max_len(args.log_body_limit);
    for name in &args.redact {
        config = config.redact(name);
    }
    if let Some(path) = &args.tokens {
        let tokens = rpcwire_tokio::StaticTokens::from_file(path).map_err(|e| {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_USAGE)
        })?;
        config = config.secret(std::sync::Arc::new(move |text| {
            tokens.lookup(text).is_some()
        }));
    }
    body_log::install(config);
    Ok(())
}

/// Logs on stderr at warn level (`-v` debug, `-vv` trace); `log_calls` adds the one line per
/// call of `serve --log-calls` (target `rpcwire::calls`, info level).
/// The stderr log, and `extra` (the OTLP export's layer) beside it.
fn init_logging<L>(verbose: u8, log_calls: bool, extra: Option<L>)
where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::Layer;
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let mut targets = tracing_subscriber::filter::Targets::new().with_default(level);
    if log_calls && level < tracing::Level::INFO {
        targets = targets.with_target(rpcwire_telemetry::CALL_LOG, tracing::Level::INFO);
    }
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(targets);
    let registry = tracing_subscriber::registry().with(extra).with(layer);
    let _ = tracing::subscriber::set_global_default(registry);
}

/// The default serial baud rate.
const DEFAULT_BAUD: u32 = 115_200;

/// Opens a serial port (8N1, no flow control) for the tokio driver.
fn open_serial(path: &str, baud: u32) -> Result<rpcwire_serial::AsyncSerialPort, String> {
    if baud == 0 {
        return Err("--baud must be a positive number".to_owned());
    }
    rpcwire_serial::open_async(path, baud).map_err(|e| format!("cannot open {e}"))
}

/// `builder` with the authenticator of `--tokens` or `--jwks` (`serve --http` and
/// `serve --ws` alike).
fn authenticated(args: &ServeArgs, mut builder: Builder) -> Result<Builder, ExitCode> {
    if let Some(path) = &args.tokens {
        match rpcwire_tokio::StaticTokens::from_file(path) {
            Ok(tokens) => builder = builder.map_service(|s| s.authenticator(tokens)),
            Err(e) => {
                eprintln!("rpcwire: {e}");
                return Err(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    if let (Some(url), Some(audience), Some(issuer)) = (&args.jwks, &args.audience, &args.issuer) {
        match rpcwire_http::jwks::JwksKeys::new(url) {
            Ok(keys) => {
                let jwt = rpcwire_tokio::jwt::JwtAuthenticator::new(keys)
                    .issuer(issuer)
                    .audience(audience);
                builder = builder.map_service(|s| s.authenticator(jwt))
            }
            Err(e) => {
                eprintln!("rpcwire: --jwks: {e}");
                return Err(ExitCode::from(EXIT_USAGE));
            }
        }
    }
    Ok(builder)
}

async fn serve(args: ServeArgs) -> ExitCode {
    if args.ws.console && args.ws.ws.is_none() && args.http.is_none() {
        eprintln!("rpcwire: --console needs --ws or --http");
        return ExitCode::from(EXIT_USAGE);
    }
    if args.log_bodies {
        if let Err(code) = log_bodies(&args) {
            return code;
        }
    }
    #[cfg(feature = "metrics")]
    if let Some(addr) = &args.metrics {
        #[cfg(feature = "otlp")]
        let beside = args.otlp_recorder.clone();
        #[cfg(not(feature = "otlp"))]
        let beside = None::<metrics::NoopRecorder>;
        let served = match rpcwire_cli::metrics::parse_addr(addr) {
            Ok(addr) => rpcwire_cli::metrics::serve_beside(addr, beside).await,
            Err(e) => Err(e),
        };
        match served {
            Ok(local) => eprintln!("rpcwire: metrics on http://{local}/metrics"),
            Err(e) => {
                eprintln!("rpcwire: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        }
    }
    let policy = match &args.policy {
        Some(path) => match rpcwire_cli::policy::Policy::from_file(path) {
            Ok(policy) => Some(policy),
            Err(e) => {
                eprintln!("rpcwire: {e}");
                return ExitCode::from(EXIT_USAGE);
            }
        },
        None => None,
    };
    if args.ws.ws.is_some() {
        let concurrency = args.concurrency;
        let builder = Builder::new().map_service(|s| s.concurrency(concurrency));
        let builder = match authenticated(&args, builder) {
            Ok(builder) => builder,
            Err(code) => return code,
        };
        let (max, conns) = (args.max_frame, args.max_connections);
        return rpcwire_cli::ws::serve(&args.ws, builder, max, conns, policy.as_ref()).await;
    }
    let tls = match (&args.tls_cert, &args.tls_key) {
        (Some(cert), Some(key)) => {
            if args.tcp.is_none() && args.http.is_none() {
                eprintln!("rpcwire: --tls-cert needs --tcp or --http");
                return ExitCode::from(EXIT_USAGE);
            }
            let files = rpcwire_tokio::tls::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: args.client_ca.clone(),
            };
            let alpn: &[&[u8]] = if args.http.is_some() {
                &[b"h2", b"http/1.1"]
            } else {
                &[]
            };
            match rpcwire_tokio::tls::ServerTls::with_alpn(files, alpn) {
                Ok(tls) => Some(tls),
                Err(e) => {
                    eprintln!("rpcwire: {e}");
                    return ExitCode::from(EXIT_USAGE);
                }
            }
        }
        _ => None,
    };
    let builder = args
        .profile
        .builder(args.framing)
        .max_frame(args.max_frame)
        .max_connections(args.max_connections)
        .router(match &policy {
            Some(policy) => policy.apply(demo_router()),
            None => demo_router(),
        })
        .map_service(|s| s.concurrency(args.concurrency));
    let mut builder = match authenticated(&args, builder) {
        Ok(builder) => builder,
        Err(code) => return code,
    };
    if let Some(n) = args.rate_limit {
        builder =
            builder.map_service(|s| s.rate_limit(rpcwire_tokio::RateLimiter::new(f64::from(n), n)));
    }
    if let Some(path) = &args.serial {
        let baud = args.baud.unwrap_or(DEFAULT_BAUD);
        let port = match open_serial(path, baud) {
            Ok(port) => port,
            Err(msg) => {
                eprintln!("rpcwire: {msg}");
                return ExitCode::from(EXIT_CONNECTION);
            }
        };
        eprintln!("rpcwire: serving the demo service on {path} at {baud} baud");
        // The port never reports an end of its own: serve until the line fails (for a pseudo-
        // terminal, its other side going away) or the process is stopped.
        return match builder.run_io(port).join().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("rpcwire: {path}: {e}");
                ExitCode::from(EXIT_CONNECTION)
            }
        };
    }
    if let Some(addr) = &args.http {
        let policy = policy.as_ref();
        let signing = match &args.signing_key {
            Some(path) => match std::fs::read(path) {
                Ok(key) => Some(std::sync::Arc::new(
                    rpcwire_tokio::signing::RequestSigning::new(key.trim_ascii().to_vec()),
                )),
                Err(e) => {
                    eprintln!("rpcwire: --signing-key {}: {e}", path.display());
                    return ExitCode::from(EXIT_USAGE);
                }
            },
            None => None,
        };
        return http::serve(
            addr,
            &args.path,
            args.any_host,
            args.max_frame,
            builder,
            tls,
            policy,
            signing,
            args.ws.console,
            args.upstream.as_deref(),
        )
        .await;
    }
    if let Some(addr) = &args.tcp {
        let (listener, local) = match rpcwire_cli::listen(addr).await {
            Ok(listening) => listening,
            Err(code) => return code,
        };
        if let Some(tls) = tls {
            let _watch = tls.watch(std::time::Duration::from_secs(2));
            let mutual = if args.client_ca.is_some() {
                " (client certificates required)"
            } else {
                ""
            };
            eprintln!("rpcwire: serving the demo service over TLS{mutual} on {local}");
            builder.serve_tls(listener, tls).await;
            return ExitCode::SUCCESS;
        }
        eprintln!("rpcwire: serving the demo service on {local}");
        builder.serve_tcp(listener).await;
        return ExitCode::SUCCESS;
    }
    match builder.stdio().join().await {
        Ok(()) => ExitCode::SUCCESS,
        // `rpcwire serve | head -c1`: the reader of our answers has gone.
        Err(rpcwire_tokio::DriverError::Io(e)) if rpcwire_cli::out::is_stdout_closed(&e) => {
            rpcwire_cli::out::stdout_closed()
        }
        Err(e) => {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_CONNECTION)
        }
    }
}

/// `call --tcp ADDR --tls`: the server's certificate checked against `--ca-cert` for the host
/// part of ADDR, with `--cert`/`--key` presented for mutual TLS. The handshake completes
/// here, so a refused certificate is reported as such.
async fn connect_tls(addr: &str, args: &CallArgs, builder: Builder) -> Result<Session, String> {
    let ca = args.ca_cert.as_deref().ok_or("--tls needs --ca-cert")?;
    let identity = args.cert.as_deref().zip(args.key.as_deref());
    let config = rpcwire_tokio::tls::client_config(ca, identity).map_err(|e| e.to_string())?;
    let host = addr
        .rsplit_once(':')
        .map_or(addr, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    let socket = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("the address resolves to nothing")?;
    builder
        .connect_tls(socket, host, std::sync::Arc::new(config))
        .await
        .map_err(|e| e.to_string())
}

/// The headers of `--header` and `--bearer`, as (name, value) pairs; the error names the
/// argument, never the token.
fn request_headers(args: &CallArgs) -> Result<Vec<(String, String)>, String> {
    let mut headers = Vec::new();
    for header in &args.headers {
        let (name, value) = header
            .split_once(':')
            .ok_or_else(|| format!("--header {header:?}: expected 'Name: value'"))?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    if let Some(bearer) = &args.bearer {
        let token = if let Some(path) = bearer.strip_prefix('@') {
            std::fs::read_to_string(path)
                .map_err(|e| format!("--bearer @{path}: {e}"))?
                .trim()
                .to_owned()
        } else if let Some(name) = bearer.strip_prefix("env:") {
            std::env::var(name).map_err(|_| format!("--bearer env:{name}: not set"))?
        } else {
            bearer.clone()
        };
        if token.is_empty() {
            return Err("--bearer: the token is empty".to_owned());
        }
        headers.push(("authorization".to_owned(), format!("Bearer {token}")));
    }
    Ok(headers)
}

/// Parses PARAMS (an array or an object), read from a file for `@FILE` and from stdin for `-`.
fn parse_params(text: Option<&str>) -> Result<Option<Box<RawValue>>, String> {
    let Some(text) = text else {
        return Ok(None);
    };
    let text = match text {
        "-" => {
            let mut all = String::new();
            std::io::Read::read_to_string(&mut std::io::stdin(), &mut all)
                .map_err(|e| format!("cannot read PARAMS from stdin: {e}"))?;
            all
        }
        _ => match text.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read PARAMS from {path}: {e}"))?,
            None => text.to_owned(),
        },
    };
    let raw = RawValue::from_string(text.trim().to_owned())
        .map_err(|e| format!("PARAMS is not valid JSON: {e}"))?;
    match raw.get().as_bytes().first() {
        Some(b'[' | b'{') => Ok(Some(raw)),
        _ => Err("PARAMS must be a JSON array or object".to_owned()),
    }
}

/// The connection `call` talks over, plus the child process when it spawned one.
struct Target {
    session: Session,
    child: Option<tokio::process::Child>,
}

async fn connect(args: &CallArgs, timeout: Duration) -> Result<Target, ExitCode> {
    let builder = args
        .profile
        .builder(args.framing)
        .max_frame(args.max_frame)
        .request_timeout(Some(timeout));
    if let Some(url) = &args.ws {
        return match tokio::time::timeout(
            timeout,
            rpcwire_cli::ws::connect(
                url,
                builder,
                &WsConfig {
                    max_message: args.max_frame,
                    ..WsConfig::default()
                },
                args.ca_cert.as_deref(),
            ),
        )
        .await
        {
            Ok(Ok(session)) => Ok(Target {
                session,
                child: None,
            }),
            Ok(Err(msg)) => {
                eprintln!("rpcwire: {msg}");
                Err(ExitCode::from(EXIT_CONNECTION))
            }
            Err(_) => {
                eprintln!("rpcwire: timed out connecting to {url}");
                Err(ExitCode::from(EXIT_TIMEOUT))
            }
        };
    }
    if args.tcp.is_some() && args.ca_cert.is_some() && !args.tls {
        eprintln!("rpcwire: --ca-cert with --tcp needs --tls");
        return Err(ExitCode::from(EXIT_USAGE));
    }
    if let (Some(addr), true) = (&args.tcp, args.tls) {
        return match tokio::time::timeout(timeout, connect_tls(addr, args, builder)).await {
            Ok(Ok(session)) => Ok(Target {
                session,
                child: None,
            }),
            Ok(Err(msg)) => {
                eprintln!("rpcwire: cannot connect to {addr} over TLS: {msg}");
                Err(ExitCode::from(EXIT_CONNECTION))
            }
            Err(_) => {
                eprintln!("rpcwire: timed out connecting to {addr}");
                Err(ExitCode::from(EXIT_TIMEOUT))
            }
        };
    }
    if let Some(addr) = &args.tcp {
        return match tokio::time::timeout(timeout, builder.connect_tcp(addr.as_str())).await {
            Ok(Ok(session)) => Ok(Target {
                session,
                child: None,
            }),
            Ok(Err(e)) => {
                eprintln!("rpcwire: cannot connect to {addr}: {e}");
                Err(ExitCode::from(EXIT_CONNECTION))
            }
            Err(_) => {
                eprintln!("rpcwire: timed out connecting to {addr}");
                Err(ExitCode::from(EXIT_TIMEOUT))
            }
        };
    }
    if let Some(command) = &args.exec {
        let argv = match shell_words::split(command) {
            Ok(argv) if !argv.is_empty() => argv,
            Ok(_) => {
                eprintln!("rpcwire: --exec needs a command");
                return Err(ExitCode::from(EXIT_USAGE));
            }
            Err(e) => {
                eprintln!("rpcwire: --exec {command:?}: {e}");
                return Err(ExitCode::from(EXIT_USAGE));
            }
        };
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..]);
        return match builder.spawn_child(&mut cmd) {
            Ok((session, child)) => Ok(Target {
                session,
                child: Some(child),
            }),
            Err(e) => {
                eprintln!("rpcwire: cannot start {:?}: {e}", argv[0]);
                Err(ExitCode::from(EXIT_CONNECTION))
            }
        };
    }
    let path = args.serial.as_deref().unwrap_or_default();
    match open_serial(path, args.baud.unwrap_or(DEFAULT_BAUD)) {
        Ok(port) => {
            // Bytes already waiting are not ours: most likely a late answer to an earlier
            // `call` that timed out, whose id the first request of this process reuses.
            if let Err(e) = rpcwire_serial::discard_input(&port) {
                tracing::debug!(error = %e, "could not discard stale input");
            }
            Ok(Target {
                session: builder.run_io(port),
                child: None,
            })
        }
        Err(msg) => {
            eprintln!("rpcwire: {msg}");
            Err(ExitCode::from(EXIT_CONNECTION))
        }
    }
}

async fn call(args: CallArgs) -> ExitCode {
    let params = match parse_params(args.params.as_deref()) {
        Ok(p) => p,
        Err(msg) => {
            eprintln!("rpcwire: {msg}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let timeout = match Duration::try_from_secs_f64(args.timeout) {
        Ok(t) if !t.is_zero() => t,
        _ => {
            eprintln!("rpcwire: --timeout must be a positive number of seconds");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    // One deadline for the whole command: `--timeout N` means it exits within about N
    // seconds, whatever the peer does (never reads, never answers, floods, half-closes).
    let deadline = tokio::time::Instant::now() + timeout;
    if let Some(url) = &args.http {
        let headers = match request_headers(&args) {
            Ok(headers) => headers,
            Err(msg) => {
                eprintln!("rpcwire: {msg}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let ca = args.ca_cert.as_deref();
        let client = match http::client(url, timeout, args.max_frame, ca, &headers) {
            Ok(c) => c,
            Err(code) => return code,
        };
        let sent = http::send(
            &client,
            &args.method,
            params.as_deref(),
            args.notify,
            timeout,
        );
        let outcome = tokio::time::timeout_at(deadline, sent).await;
        // The notification's POST (or anything else queued) leaves before the process ends.
        let _ = tokio::time::timeout_at(deadline, client.close()).await;
        return match outcome {
            Ok(Ok(Some(result))) => {
                outln!("{}", result.get());
                ExitCode::SUCCESS
            }
            Ok(Ok(None)) => ExitCode::SUCCESS,
            Ok(Err(e)) => http::failed(url, &e).unwrap_or_else(|| report(&args, e)),
            Err(_) => report(&args, CallError::Timeout),
        };
    }
    let Target { session, child } = match connect(&args, timeout).await {
        Ok(t) => t,
        Err(code) => return code,
    };
    let client = session.client().clone();
    let code = if args.notify {
        let sent = tokio::time::timeout_at(deadline, async {
            match &params {
                Some(p) => client.notify(&args.method, p).await,
                None => client.notify(&args.method, ()).await,
            }
        })
        .await
        .unwrap_or(Err(CallError::Timeout));
        match sent {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => report(&args, e),
        }
    } else {
        match client
            .call_json(&args.method, params.as_deref(), Some(timeout))
            .await
        {
            Ok(result) => {
                outln!("{}", result.get());
                ExitCode::SUCCESS
            }
            Err(e) => report(&args, e),
        }
    };
    // Graceful close: flush what is queued (a notification), close our write side; within
    // what is left of the deadline (and a moment at least), never longer.
    let grace = || {
        deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .clamp(Duration::from_millis(200), Duration::from_secs(2))
    };
    client.shutdown();
    drop(client);
    let closed = tokio::time::timeout(grace(), session.join()).await;
    if let Ok(Err(e)) = closed {
        tracing::debug!(error = %e, "connection ended with an error");
    }
    if let Some(mut child) = child {
        // Its stdin is closed: give it a moment to exit, then stop it.
        if tokio::time::timeout(grace(), child.wait()).await.is_err() {
            let _ = child.kill().await;
        }
    }
    code
}

fn report(args: &CallArgs, e: CallError) -> ExitCode {
    match e {
        CallError::Rpc(err) => {
            match serde_json::to_string(&err) {
                Ok(json) => eprintln!("{json}"),
                Err(_) => eprintln!("{err}"),
            }
            ExitCode::from(EXIT_RPC_ERROR)
        }
        CallError::Timeout => {
            eprintln!(
                "rpcwire: no answer to {:?} within {} s",
                args.method, args.timeout
            );
            ExitCode::from(EXIT_TIMEOUT)
        }
        CallError::Closed => {
            eprintln!("rpcwire: the connection closed before an answer arrived");
            ExitCode::from(EXIT_CONNECTION)
        }
        CallError::TooLarge { required } => {
            eprintln!(
                "rpcwire: the request is {required} bytes, more than the largest frame \
                 (--max-frame {}): raise --max-frame",
                args.max_frame
            );
            ExitCode::from(EXIT_USAGE)
        }
        CallError::ParamsNotStructured | CallError::Params(_) => {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_USAGE)
        }
        other => {
            eprintln!("rpcwire: {other}");
            ExitCode::from(EXIT_CONNECTION)
        }
    }
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
