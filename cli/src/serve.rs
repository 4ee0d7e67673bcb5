//! `rpcwire serve`: the demo service over stdio, TCP (with TLS), HTTP, WebSocket or a serial
//! port, with the authentication, policy, limits and telemetry its flags name.

use std::process::ExitCode;

use clap::{ArgGroup, Args};
use rpcwire_cli::{demo_router, EXIT_CONNECTION};
use rpcwire_tokio::{Builder, DEFAULT_MAX_CONNECTIONS, DEFAULT_MAX_FRAME};

use crate::{http, FramingArg, ProfileArg, EXIT_USAGE};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("transport").args(["stdio", "tcp", "serial", "http", "ws", "nats", "mqtt"])))]
#[command(group(ArgGroup::new("web").args(["http", "ws"])))]
pub(crate) struct ServeArgs {
    /// Read the flags from this TOML file, one key per flag (its long name: `max-frame =
    /// 1024`, `tokens = "tokens.txt"`, `any-host = true`, `redact = ["card"]`); a flag given on
    /// the command line overrides its key.
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<std::path::PathBuf>,
    /// Serve on stdin/stdout (the default).
    #[arg(long)]
    pub(crate) stdio: bool,
    /// Listen on this TCP address (e.g. 127.0.0.1:4000; port 0 picks one, printed on stderr).
    #[arg(long, value_name = "ADDR")]
    pub(crate) tcp: Option<String>,
    /// Serve on a serial port (e.g. /dev/ttyUSB0, 8N1, no flow control).
    #[arg(long, value_name = "PATH")]
    pub(crate) serial: Option<String>,
    /// Serve JSON-RPC over HTTP on this address (POST; GET opens the event stream; a
    /// WebSocket upgrade on the same path); the demo service gains `count [n]`, which sends n
    /// progress notifications first.
    #[arg(long, value_name = "ADDR")]
    pub(crate) http: Option<String>,
    /// With --http: the path served.
    #[arg(long, value_name = "PATH", default_value = "/rpc", requires = "http")]
    pub(crate) path: String,
    /// With --http or --ws: accept any Host and Origin (default: loopback names only).
    #[arg(long, requires = "web")]
    pub(crate) any_host: bool,
    /// Serial baud rate (default 115200).
    #[arg(long, value_name = "N", requires = "serial")]
    pub(crate) baud: Option<u32>,
    /// Message framing (default: the profile's; `line` for plain and mcp).
    #[arg(long, value_enum)]
    pub(crate) framing: Option<FramingArg>,
    /// Protocol profile: `lsp` and `mcp` set their cancel notification, so that a client's
    /// timeout cancels the handler it waits for.
    #[arg(long, value_enum, default_value = "plain")]
    pub(crate) profile: ProfileArg,
    /// Largest frame accepted, in bytes (larger ones are answered with an error and skipped).
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FRAME)]
    pub(crate) max_frame: usize,
    /// Handlers running at once per connection.
    #[arg(long, value_name = "N", default_value_t = 64)]
    pub(crate) concurrency: usize,
    /// With --tcp: connections held at once; more wait until one ends (a warning is logged).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_MAX_CONNECTIONS)]
    pub(crate) max_connections: usize,
    /// With --tcp or --http: serve TLS (HTTPS and WSS for --http, HTTP/2 or HTTP/1.1 by ALPN)
    /// with this certificate chain (PEM, the server's certificate first). The files are read
    /// again when they change and on SIGHUP; open connections go on with the certificate they
    /// started with.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    pub(crate) tls_cert: Option<std::path::PathBuf>,
    /// With --tls-cert: the certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) tls_key: Option<std::path::PathBuf>,
    /// With --tls-cert: require a client certificate signed by this CA (PEM; mutual TLS).
    /// The certificate's subject is the caller's identity.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    pub(crate) client_ca: Option<std::path::PathBuf>,
    /// With --http or --ws: callers must present one of these API keys or bearer tokens
    /// (`Authorization: Bearer TOKEN`): a file of `TOKEN [@SUBJECT] ROLE...` lines, compared
    /// in constant time. Without one, a request gets 401 (no 101 for a WebSocket upgrade).
    #[arg(long, value_name = "FILE", requires = "web", conflicts_with = "jwks")]
    pub(crate) tokens: Option<std::path::PathBuf>,
    /// With --http or --ws: callers must present an OAuth access token (a JWT: RS256, ES256
    /// or EdDSA) signed by a key of this JWKS URL (fetched, cached, refreshed), for --audience
    /// and --issuer. Its scopes (`scope`, `scp`) and `roles` are the caller's roles for
    /// --policy. A WebSocket connection is authenticated once, at its upgrade.
    #[arg(long, value_name = "URL", requires_all = ["web", "audience", "issuer"])]
    pub(crate) jwks: Option<String>,
    /// With --jwks: the audience tokens must name (this server's URL).
    #[arg(long, value_name = "AUD", requires = "jwks")]
    pub(crate) audience: Option<String>,
    /// With --jwks: the issuer tokens must name.
    #[arg(long, value_name = "ISS", requires = "jwks")]
    pub(crate) issuer: Option<String>,
    /// With --http: every POST must be signed with the key in this file (HMAC-SHA256 of the
    /// body, a timestamp within 5 min and a nonce never seen before: the X-Rpcwire-Signature,
    /// -Timestamp and -Nonce headers); checked before the body is parsed, 401 otherwise.
    #[arg(long, value_name = "FILE", requires = "http")]
    pub(crate) signing_key: Option<std::path::PathBuf>,
    /// At most this many requests per second per caller (a token bucket with a burst of as
    /// many): HTTP answers 429 with Retry-After beyond it, the TCP transport a JSON-RPC error.
    #[arg(long, value_name = "N")]
    pub(crate) rate_limit: Option<u32>,
    /// Which roles may call which method: a file of `METHOD ROLE...` lines (`*` for every
    /// method without a line of its own; a method with no roles is open). A refused call is
    /// answered -32040 Forbidden and its handler does not run. Callers over stdio are the
    /// local process and hold every role.
    #[arg(long, value_name = "FILE")]
    pub(crate) policy: Option<std::path::PathBuf>,
    /// Serve the calls' and connections' metrics in the Prometheus text format on this
    /// address (`HOST:PORT`, or a port on 127.0.0.1), at /metrics.
    #[cfg(feature = "metrics")]
    #[arg(long, value_name = "ADDR")]
    pub(crate) metrics: Option<String>,
    /// With --http: the demo service gains `relay {"method": M, "params": P}`, which calls M
    /// on the JSON-RPC server at this URL (over HTTP) and answers its result.
    #[arg(long, value_name = "URL", requires = "http")]
    pub(crate) upstream: Option<String>,
    /// Export the calls' and connections' spans and metrics over OTLP/HTTP (protobuf) to the
    /// collector at this `http://` URL (spans go to its /v1/traces, metrics to /v1/metrics),
    /// as the service `rpcwire`; a `traceparent` header (or `_meta.traceparent`) a call comes
    /// with is its span's parent, and calls to --upstream carry theirs. The metrics are those
    /// --metrics serves (cumulative), sent every --otlp-interval. What is left is sent when
    /// the process stops (SIGINT, SIGTERM).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "URL")]
    pub(crate) otlp: Option<String>,
    /// With --otlp: send the metrics every this many seconds (and once more when stopped).
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "SECS", default_value_t = 60.0, requires = "otlp", value_parser = positive_secs)]
    pub(crate) otlp_interval: f64,
    /// With --otlp: record the spans of this fraction (0 to 1) of the calls that come without
    /// a trace context (and of root client calls). A call with a `traceparent` follows its
    /// sampled flag; an unsampled call builds no span and sends its trace on unsampled
    /// (flags 00). Default: what OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG say
    /// (always_on, always_off, traceidratio and their parentbased_ forms), else 1: every
    /// call.
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "RATIO", requires = "otlp", value_parser = clap::value_parser!(rpcwire_telemetry::SampleRatio))]
    pub(crate) otlp_sample: Option<rpcwire_telemetry::SampleRatio>,
    /// Log one line per call on stderr: method, id, latency, status, transport and peer
    /// (never a credential: no header, no token; no params unless --log-bodies).
    #[arg(long)]
    pub(crate) log_calls: bool,
    /// With --log-calls: also log each call's params and result (or error), with the values
    /// of credential-like members (`password`, `token`, `authorization`, ...), of --redact's
    /// names and of the --tokens file's tokens replaced by `"[redacted]"`, cut at
    /// --log-body-limit bytes.
    #[arg(long, requires = "log_calls")]
    pub(crate) log_bodies: bool,
    /// With --log-bodies: also redact the values of JSON members of this name, at any depth
    /// (any case; repeatable).
    #[arg(long, value_name = "FIELD", requires = "log_bodies")]
    pub(crate) redact: Vec<String>,
    /// With --log-bodies: the longest body shown, in bytes; longer ones are cut with a
    /// `…[truncated N bytes]` marker.
    #[arg(long, value_name = "BYTES", default_value_t = rpcwire_telemetry::body_log::DEFAULT_MAX_LEN, requires = "log_bodies")]
    pub(crate) log_body_limit: usize,
    #[command(flatten)]
    pub(crate) ws: rpcwire_cli::ws::WsServeArgs,
    #[command(flatten)]
    pub(crate) drain: crate::drain::DrainArgs,
    #[command(flatten)]
    pub(crate) probes: crate::probes::ProbeArgs,
    #[command(flatten)]
    pub(crate) hosts: crate::hosts::HostArgs,
    #[command(flatten)]
    pub(crate) cors: crate::cors::CorsArgs,
    #[command(flatten)]
    pub(crate) refusal_log: rpcwire_cli::logs::RefusalLogArgs,
    #[command(flatten)]
    pub(crate) nats: rpcwire_cli::nats::NatsServeArgs,
    #[command(flatten)]
    pub(crate) mqtt: rpcwire_cli::mqtt::MqttServeArgs,
    /// The OTLP metrics' recorder, for --metrics to record beside its own (not an option).
    #[cfg(all(feature = "otlp", feature = "metrics"))]
    #[arg(skip)]
    pub(crate) otlp_recorder: Option<rpcwire_telemetry::otlp::metrics::OtlpRecorder>,
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
pub(crate) fn otlp_metrics_recorder(
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

/// Logs on stderr at warn level (`-v` debug, `-vv` trace) in `format`; `log_calls` adds the
/// one line per call of `serve --log-calls` (target `rpcwire::calls`, info level).
/// The stderr log, and `extra` (the OTLP export's layer) beside it.
pub(crate) fn init_logging<L>(
    format: rpcwire_cli::logs::LogFormat,
    verbose: u8,
    log_calls: bool,
    extra: Option<L>,
) where
    L: tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync + 'static,
{
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    let mut targets = tracing_subscriber::filter::Targets::new().with_default(level);
    if log_calls && level < tracing::Level::INFO {
        targets = targets.with_target(rpcwire_telemetry::CALL_LOG, tracing::Level::INFO);
    }
    rpcwire_cli::logs::install(format, targets, extra);
}

/// The default serial baud rate.
pub(crate) const DEFAULT_BAUD: u32 = 115_200;

/// Opens a serial port (8N1, no flow control) for the tokio driver.
pub(crate) fn open_serial(
    path: &str,
    baud: u32,
) -> Result<rpcwire_serial::AsyncSerialPort, String> {
    if baud == 0 {
        return Err("--baud must be a positive number".to_owned());
    }
    rpcwire_serial::open_async(path, baud).map_err(|e| format!("cannot open {e}"))
}

/// `builder` with the authenticator of `--tokens` or `--jwks` (`serve --http` and
/// `serve --ws` alike).
fn authenticated(args: &ServeArgs, mut builder: Builder) -> Result<Builder, ExitCode> {
    let limit = args.refusal_log.limit();
    builder = builder.map_service(|s| s.refusal_log_limit(limit));
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
        match rpcwire_http::jwks::keys(url) {
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

#[cfg(feature = "otlp")]
impl ServeArgs {
    /// Whether this is a network server, drained on SIGTERM and SIGINT (`crate::drain`).
    pub(crate) fn drains(&self) -> bool {
        self.tcp.is_some()
            || self.http.is_some()
            || self.ws.ws.is_some()
            || self.mqtt.mqtt.is_some()
    }
}

pub(crate) async fn serve(args: ServeArgs) -> ExitCode {
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
    let hosts = match args.hosts.policy(args.any_host) {
        // A CORS origin passes the Origin check too.
        Ok(hosts) => args
            .cors
            .cors_origin
            .iter()
            .fold(hosts, |h, o| h.with(o.as_str())),
        Err(code) => return code,
    };
    let cors = match args.cors.layer() {
        Ok(cors) => cors,
        Err(e) => {
            eprintln!("rpcwire: {e}: not an origin");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    if args.ws.ws.is_some() {
        let concurrency = args.concurrency;
        let builder = Builder::new().map_service(|s| s.concurrency(concurrency));
        let builder = match authenticated(&args, builder) {
            Ok(builder) => builder,
            Err(code) => return code,
        };
        let (max, conns) = (args.max_frame, args.max_connections);
        let (shutdown, builder) = crate::drain::on_signals(&args.drain, builder);
        let served = rpcwire_cli::ws::serve(&args.ws, builder, max, conns, policy.as_ref(), hosts);
        return crate::drain::finish(&shutdown, served.await).await;
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
    if args.nats.nats.is_some() {
        return rpcwire_cli::nats::serve(&args.nats, builder).await;
    }
    if args.mqtt.mqtt.is_some() {
        let (shutdown, builder) = crate::drain::on_signals(&args.drain, builder);
        let served = rpcwire_cli::mqtt::serve(&args.mqtt, builder).await;
        return crate::drain::finish(&shutdown, served).await;
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
        let (shutdown, builder) = crate::drain::on_signals(&args.drain, builder);
        let served = http::serve(
            addr,
            &args.path,
            hosts,
            args.max_frame,
            builder,
            tls,
            policy,
            signing,
            args.ws.console,
            args.upstream.as_deref(),
            &args.probes,
            cors,
            match args.ws.credential_leeway() {
                Ok(leeway) => leeway,
                Err(code) => return code,
            },
        );
        return crate::drain::finish(&shutdown, served.await).await;
    }
    if let Some(addr) = &args.tcp {
        let (listener, local) = match rpcwire_cli::listen(addr).await {
            Ok(listening) => listening,
            Err(code) => return code,
        };
        let (shutdown, builder) = crate::drain::on_signals(&args.drain, builder);
        if let Some(tls) = tls {
            let _watch = tls.watch(std::time::Duration::from_secs(2));
            let mutual = if args.client_ca.is_some() {
                " (client certificates required)"
            } else {
                ""
            };
            eprintln!("rpcwire: serving the demo service over TLS{mutual} on {local}");
            builder.serve_tls(listener, tls).await;
            return crate::drain::finish(&shutdown, ExitCode::SUCCESS).await;
        }
        eprintln!("rpcwire: serving the demo service on {local}");
        builder.serve_tcp(listener).await;
        return crate::drain::finish(&shutdown, ExitCode::SUCCESS).await;
    }
    // `rpcwire serve | head -c1`: 141 when the reader of our answers has gone.
    rpcwire_cli::out::serve_stdio(builder, EXIT_CONNECTION).await
}
