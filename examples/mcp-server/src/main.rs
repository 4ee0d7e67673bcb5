//! An MCP server over stdio, built on rpcwire: point an MCP host at the `mcp-server` binary.
//! With `--http ADDR` it serves MCP Streamable HTTP at `http://ADDR/mcp` instead, with the
//! fixture tools, resources, prompts and completion the MCP conformance suite expects
//! (`fixtures.rs`). Options: `--server-name NAME` (the prefix of its session ids, for routing
//! behind a load balancer), `--stateless` (the 2026-07-28 revision: no sessions),
//! `--allow-host NAME` (repeatable: accepted `Host`/`Origin` names besides loopback),
//! `--idle-timeout SECS`, `--max-sessions N`, `--max-parked N` (request streams per session
//! kept running for resumption after their client left, default 16), `--store
//! redis://HOST:PORT` (sessions and resumable streams shared with other replicas through
//! Redis or Valkey: any replica serves any session, no sticky routing; feature `redis`, on by
//! default; `--store memory`: the same code path on a store in this process) with
//! `--store-reread-ms MS` (how long a resumed stream waits for a wake-up before reading the
//! log again, default 1000), `--store-session-check-ms MS` (how often an open GET stream reads
//! its session from the store, default a quarter of the idle timeout, 5 ms to 30 s) and
//! `--forward-queue N` (forwarded answers a replica may have unread, default 64).
//!
//! Tools: `add` and `echo` (simple), `count` (reports progress), `fail` (a tool failure, an
//! `isError: true` result), `long_task` (runs until done or until the client sends
//! `notifications/cancelled`). `count` and `long_task` also log through
//! `notifications/message`. Diagnostics go to stderr; stdout is the wire.

mod fixtures;

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

/// The `--http` options.
struct HttpOptions {
    addr: String,
    name: String,
    stateless: bool,
    hosts: Vec<String>,
    idle: Option<u64>,
    max_sessions: Option<usize>,
    /// `--max-parked N`: request streams per session parked for resumption.
    max_parked: Option<usize>,
    /// `--store redis://...`: the shared store's URL.
    store: Option<String>,
    /// `--store-reread-ms MS`: the shared store's re-read interval.
    reread_ms: Option<u64>,
    /// `--store-session-check-ms MS`: how often a GET stream reads its session from the store.
    session_check_ms: Option<u64>,
    /// `--forward-queue N`: the shared store's forward queue.
    forward_queue: Option<usize>,
    /// OAuth: the authorization server's JWKS URL; tokens are verified against it.
    jwks: Option<String>,
    issuer: Option<String>,
    /// The resource (and audience) URL; default `http(s)://ADDR/mcp`.
    resource: Option<String>,
    scopes: Vec<String>,
    tls_cert: Option<std::path::PathBuf>,
    tls_key: Option<std::path::PathBuf>,
    /// `--otlp URL`: the spans go to this OTLP/HTTP collector (feature `otlp`).
    otlp: Option<String>,
    /// `--otlp-sample RATIO` (with `--otlp`): the fraction of calls without a trace context
    /// whose spans are recorded (see `rpcwire_telemetry::SampleRatio`).
    sample: Option<rpcwire_telemetry::SampleRatio>,
}

/// `--log-format json`: the stderr log as one JSON object per line (for a log collector).
fn log_json() -> bool {
    let args: Vec<String> = std::env::args().collect();
    args.windows(2)
        .any(|w| w[0] == "--log-format" && w[1] == "json")
}

fn usage(why: &str) -> ! {
    eprintln!("mcp-server: {why}");
    eprintln!("usage: mcp-server [--http ADDR [--server-name NAME] [--stateless] [--allow-host NAME]... [--idle-timeout SECS] [--max-sessions N] [--max-parked N] [--store memory|redis://HOST:PORT [--store-reread-ms MS] [--store-session-check-ms MS] [--forward-queue N]] [--tls-cert FILE --tls-key FILE] [--jwks URL --issuer ISS [--resource URL] [--scope SCOPE]...]] [--otlp URL [--otlp-sample RATIO]] [--log-format text|json] [--fixtures] [--quiet]");
    std::process::exit(2);
}

/// `--quiet`: the stderr log at `WARN` and above, without the line per call (for benchmarks
/// against servers that log nothing).
fn quiet() -> bool {
    std::env::args().any(|a| a == "--quiet")
}

/// `--fixtures`: over stdio, the conformance fixtures too (`src/fixtures.rs`: the tools,
/// resources, prompts, completion and tasks the HTTP server always has), so that an SDK can
/// run a 2026-07-28 session over stdio against them.
fn with_fixtures() -> bool {
    std::env::args().any(|a| a == "--fixtures")
}

/// The options, and the `--otlp` URL (which applies over stdio too).
fn options() -> (Option<HttpOptions>, Option<String>) {
    let mut args = std::env::args().skip(1);
    let mut opts = HttpOptions {
        addr: String::new(),
        name: "mcp".into(),
        stateless: false,
        hosts: Vec::new(),
        idle: None,
        max_sessions: None,
        max_parked: None,
        store: None,
        reread_ms: None,
        session_check_ms: None,
        forward_queue: None,
        jwks: None,
        issuer: None,
        resource: None,
        scopes: Vec::new(),
        tls_cert: None,
        tls_key: None,
        otlp: None,
        sample: None,
    };
    let value = |args: &mut std::iter::Skip<std::env::Args>, flag: &str| {
        args.next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
    };
    fn number<T: std::str::FromStr>(args: &mut std::iter::Skip<std::env::Args>, flag: &str) -> T {
        args.next()
            .unwrap_or_else(|| usage(&format!("{flag} needs a value")))
            .parse()
            .unwrap_or_else(|_| usage(&format!("{flag} takes a number")))
    }
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--http" => opts.addr = value(&mut args, "--http"),
            "--server-name" => opts.name = value(&mut args, "--server-name"),
            "--stateless" => opts.stateless = true,
            // Read by `with_fixtures` (it applies over stdio too).
            "--fixtures" => {}
            // Read by `quiet`.
            "--quiet" => {}
            "--store" => opts.store = Some(value(&mut args, "--store")),
            "--allow-host" => opts.hosts.push(value(&mut args, "--allow-host")),
            "--jwks" => opts.jwks = Some(value(&mut args, "--jwks")),
            "--issuer" => opts.issuer = Some(value(&mut args, "--issuer")),
            "--resource" => opts.resource = Some(value(&mut args, "--resource")),
            "--scope" => opts.scopes.push(value(&mut args, "--scope")),
            "--tls-cert" => opts.tls_cert = Some(value(&mut args, "--tls-cert").into()),
            "--tls-key" => opts.tls_key = Some(value(&mut args, "--tls-key").into()),
            "--otlp" => opts.otlp = Some(value(&mut args, "--otlp")),
            "--otlp-sample" => {
                opts.sample = Some(
                    value(&mut args, "--otlp-sample")
                        .parse()
                        .unwrap_or_else(|e| usage(&format!("--otlp-sample: {e}"))),
                )
            }
            "--idle-timeout" => {
                opts.idle = Some(
                    value(&mut args, "--idle-timeout")
                        .parse()
                        .unwrap_or_else(|_| usage("--idle-timeout takes seconds")),
                )
            }
            "--max-sessions" => opts.max_sessions = Some(number(&mut args, "--max-sessions")),
            "--max-parked" => opts.max_parked = Some(number(&mut args, "--max-parked")),
            "--store-reread-ms" => opts.reread_ms = Some(number(&mut args, "--store-reread-ms")),
            "--store-session-check-ms" => {
                opts.session_check_ms = Some(number(&mut args, "--store-session-check-ms"))
            }
            "--forward-queue" => opts.forward_queue = Some(number(&mut args, "--forward-queue")),
            // Read by `log_json` (it applies over stdio too); checked here.
            "--log-format" => match value(&mut args, "--log-format").as_str() {
                "text" | "json" => {}
                _ => usage("--log-format takes text or json"),
            },
            other => usage(&format!("unknown argument {other}")),
        }
    }
    let otlp = opts.otlp.take();
    if opts.sample.is_some() && otlp.is_none() {
        usage("--otlp-sample needs --otlp");
    }
    // Without the flag, OpenTelemetry's OTEL_TRACES_SAMPLER (and _ARG) say, if set; a
    // setting that cannot be followed is warned of and the default kept (the specification's
    // rule for an SDK).
    let from_env = || {
        rpcwire_telemetry::SampleRatio::from_env().unwrap_or_else(|e| {
            eprintln!("mcp-server: OpenTelemetry sampler setting ignored ({e})");
            None
        })
    };
    if let Some(ratio) = opts
        .sample
        .or_else(|| otlp.as_ref().and_then(|_| from_env()))
    {
        rpcwire_telemetry::set_sample_ratio(ratio);
    }
    ((!opts.addr.is_empty()).then_some(opts), otlp)
}

/// `--store memory|URL`: the shared store of sessions and event logs, with
/// `--store-reread-ms` and `--forward-queue`: `memory` (a `MemoryStore` in this process, as
/// many sessions as `--max-sessions`: the shared-store code path without a network, for
/// benchmarks), or `redis://` / `rediss://` (Redis or Valkey, keys under `rpcwire:mcp`; exits
/// when it cannot be reached).
async fn shared_store(opts: &HttpOptions, url: &str) -> rpcwire_mcp::http::store::SharedStore {
    use rpcwire_mcp::http::store::{MemoryStore, SharedStore, DEFAULT_FORWARD_QUEUE};
    let store = if url == "memory" {
        let store = MemoryStore::new(opts.max_sessions.unwrap_or(1024), 16 * 1024)
            .forward_queue(opts.forward_queue.unwrap_or(DEFAULT_FORWARD_QUEUE));
        SharedStore::new(std::sync::Arc::new(store))
    } else if url.starts_with("redis://") || url.starts_with("rediss://") {
        redis_store(opts, url).await
    } else {
        usage("--store takes memory or a redis:// URL")
    };
    let store = match opts.reread_ms {
        Some(ms) => store.reread_every(Duration::from_millis(ms)),
        None => store,
    };
    match opts.session_check_ms {
        Some(ms) => store.session_check_every(Duration::from_millis(ms)),
        None => store,
    }
}

#[cfg(feature = "redis")]
async fn redis_store(opts: &HttpOptions, url: &str) -> rpcwire_mcp::http::store::SharedStore {
    use rpcwire_mcp::http::store::{RedisStore, RedisStoreOptions, SharedStore};
    let mut options = RedisStoreOptions::new("rpcwire:mcp").timeout(Duration::from_secs(5));
    if let Some(n) = opts.forward_queue {
        options = options.forward_queue(n);
    }
    match RedisStore::connect_with(url, options).await {
        Ok(store) => SharedStore::new(store),
        Err(e) => {
            let source = std::error::Error::source(&e).map(ToString::to_string);
            eprintln!("mcp-server: {e}: {}", source.unwrap_or_default());
            std::process::exit(1);
        }
    }
}

#[cfg(not(feature = "redis"))]
async fn redis_store(_opts: &HttpOptions, _url: &str) -> rpcwire_mcp::http::store::SharedStore {
    usage("--store redis:// needs the feature `redis`")
}

async fn serve_http(server: McpServer, opts: HttpOptions) {
    use rpcwire_mcp::http::HostPolicy;
    use rpcwire_mcp::http::{McpHttpServer, Mode};
    let router = fixtures::surface(fixtures::tools(server))
        .strict_handshake(false)
        .router();
    let mut hosts = vec!["localhost".to_owned(), "127.0.0.1".into(), "[::1]".into()];
    hosts.extend(opts.hosts.iter().cloned());
    // SIGTERM / SIGINT drain the server: no new connections, calls under way finish, what
    // arrives is answered 503, then the process ends (at most 30 s later).
    let shutdown = rpcwire_tokio::Shutdown::new(Duration::from_secs(30));
    shutdown.on_signals();
    let builder = rpcwire_mcp::tokio::mcp_builder().router(router);
    let builder = builder.map_service(|s| s.shutdown(&shutdown));
    let mut config = McpHttpServer::from_builder(builder)
        .session_prefix(&opts.name)
        .hosts(HostPolicy::Names(hosts))
        .mode(if opts.stateless {
            Mode::Stateless
        } else {
            Mode::Sessions
        });
    if let Some(secs) = opts.idle {
        config = config.idle_timeout(Duration::from_secs(secs));
    }
    if let Some(n) = opts.max_sessions {
        config = config.max_sessions(n);
    }
    if let Some(n) = opts.max_parked {
        config = config.max_parked_streams(n);
    }
    if let Some(url) = &opts.store {
        config = config.store(shared_store(&opts, url).await);
    } else if opts.reread_ms.is_some()
        || opts.session_check_ms.is_some()
        || opts.forward_queue.is_some()
    {
        usage("--store-reread-ms, --store-session-check-ms and --forward-queue go with --store");
    }
    let listener = match tokio::net::TcpListener::bind(&opts.addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("mcp-server: cannot listen on {}: {e}", opts.addr);
            std::process::exit(1);
        }
    };
    let addr = listener
        .local_addr()
        .map_or_else(|_| opts.addr.clone(), |a| a.to_string());
    let scheme = if opts.tls_cert.is_some() {
        "https"
    } else {
        "http"
    };
    if let Some(jwks) = &opts.jwks {
        config = authorization(config, jwks, &opts, &format!("{scheme}://{addr}/mcp"));
    }
    let tls = match (&opts.tls_cert, &opts.tls_key) {
        (Some(cert), Some(key)) => {
            let files = rpcwire_tokio::tls::TlsFiles {
                cert: cert.clone(),
                key: key.clone(),
                client_ca: None,
            };
            match rpcwire_tokio::tls::ServerTls::with_alpn(files, &[b"h2", b"http/1.1"]) {
                Ok(tls) => Some(tls),
                Err(e) => usage(&e.to_string()),
            }
        }
        (None, None) => None,
        _ => usage("--tls-cert and --tls-key go together"),
    };
    // Tests and scripts read this line to learn the port (with --http 127.0.0.1:0).
    eprintln!("mcp-server: listening on {scheme}://{addr}/mcp");
    match tls {
        Some(tls) => {
            let _watch = tls.watch(Duration::from_secs(2));
            rpcwire_mcp::http::serve_tls(listener, config.build(), tls, Duration::from_secs(10))
                .await;
        }
        None => rpcwire_mcp::http::serve(listener, config.build()).await,
    }
    shutdown.drained().await;
}

/// `--jwks`: OAuth access tokens verified against the authorization server's keys, its
/// issuer and this resource as the audience; RFC 9728 metadata names the issuer.
fn authorization(
    config: rpcwire_mcp::http::McpHttpServer,
    jwks: &str,
    opts: &HttpOptions,
    default_resource: &str,
) -> rpcwire_mcp::http::McpHttpServer {
    let Some(issuer) = &opts.issuer else {
        usage("--jwks needs --issuer");
    };
    let resource = opts.resource.as_deref().unwrap_or(default_resource);
    let keys = rpcwire_http::jwks::keys(jwks).unwrap_or_else(|e| usage(&e.to_string()));
    let auth = rpcwire_tokio::jwt::JwtAuthenticator::new(keys)
        .issuer(issuer)
        .audience(resource);
    let scopes: Vec<&str> = opts.scopes.iter().map(String::as_str).collect();
    config
        .authenticator(auth)
        .protected_resource(rpcwire_mcp::http::ProtectedResource {
            resource: resource.to_owned(),
            authorization_servers: vec![issuer.clone()],
            scopes_supported: opts.scopes.clone(),
        })
        .required_scopes(&scopes)
}

/// With `--otlp URL` (feature `otlp`): the spans of the calls (their `_meta.traceparent` or
/// `traceparent` header as their parent, the MCP attributes) exported to that collector,
/// beside the log on stderr, and the metrics (call durations, sessions, ...) every
/// [`DEFAULT_INTERVAL`](rpcwire_telemetry::otlp::metrics::DEFAULT_INTERVAL); what is left is sent
/// when the server is stopped (SIGINT, SIGTERM).
#[cfg(feature = "otlp")]
fn start_otlp(
    url: &str,
) -> (
    rpcwire_telemetry::otlp::OtlpExport,
    rpcwire_telemetry::otlp::metrics::OtlpMetrics,
) {
    use tracing_subscriber::layer::SubscriberExt;
    const SERVICE: &str = "rpcwire-example-mcp-server";
    let export = rpcwire_telemetry::otlp::OtlpExport::start(url, SERVICE)
        .unwrap_or_else(|e| usage(&e.to_string()));
    let metrics = rpcwire_telemetry::otlp::metrics::OtlpMetrics::start(
        url,
        SERVICE,
        rpcwire_telemetry::otlp::metrics::DEFAULT_INTERVAL,
    )
    .unwrap_or_else(|e| usage(&e.to_string()));
    metrics.install().unwrap_or_else(|e| usage(&e.to_string()));
    use tracing_subscriber::Layer;
    let info = if quiet() {
        tracing_subscriber::filter::LevelFilter::WARN
    } else {
        tracing_subscriber::filter::LevelFilter::INFO
    };
    let json = log_json();
    // One of the two, as `--log-format` says (an absent layer lets everything through).
    let json_log = json.then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .log_internal_errors(false)
            .with_ansi(false)
            .json()
            .with_filter(info)
    });
    let text_log = (!json).then(|| {
        tracing_subscriber::fmt::layer()
            .with_writer(std::io::stderr)
            .log_internal_errors(false)
            .with_ansi(false)
            .with_filter(info)
    });
    let registry = tracing_subscriber::registry()
        .with(export.layer())
        .with(json_log)
        .with(text_log);
    let _ = tracing::subscriber::set_global_default(registry);
    (export, metrics)
}

/// Resolves on SIGINT or SIGTERM.
#[cfg(feature = "otlp")]
async fn stopped() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[tokio::main]
async fn main() {
    let (opts, otlp) = options();
    #[cfg(feature = "otlp")]
    if let Some(url) = otlp {
        let export = start_otlp(&url);
        let server = tools();
        // An HTTP server drains on the signal itself, then returns.
        let http = opts.is_some();
        let serve = async {
            match opts {
                Some(opts) => serve_http(server, opts).await,
                // Until stdin ends (the client is gone).
                None => {
                    if let Err(e) = server.serve_stdio().await {
                        eprintln!("mcp-server: {e}");
                    }
                }
            }
        };
        tokio::select! {
            () = serve => {}
            () = stopped(), if !http => {}
        }
        // The metrics first (their thread logs through the spans' subscriber), then the spans.
        drop(export.1);
        drop(export.0);
        return;
    }
    #[cfg(not(feature = "otlp"))]
    if otlp.is_some() {
        usage("--otlp needs the feature `otlp`");
    }
    let log = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        // A line that cannot be written (stderr closed) is dropped; the subscriber's own
        // report of it would panic the task that logged.
        .log_internal_errors(false)
        .with_ansi(false)
        .with_max_level(if quiet() {
            tracing_subscriber::filter::LevelFilter::WARN
        } else {
            tracing_subscriber::filter::LevelFilter::INFO
        });
    if log_json() {
        log.json().init();
    } else {
        log.init();
    }
    let server = tools();
    if let Some(opts) = opts {
        serve_http(server, opts).await;
        return;
    }
    let server = if with_fixtures() {
        // The handshake stays required of the older revisions' requests; a 2026-07-28
        // request carries its revision in `_meta` and needs none.
        fixtures::surface(fixtures::tools(server))
    } else {
        server
    };
    if let Err(e) = server.serve_stdio().await {
        eprintln!("mcp-server: {e}");
        std::process::exit(1);
    }
}

/// The example's tools.
fn tools() -> McpServer {
    McpServer::new("rpcwire-example", env!("CARGO_PKG_VERSION"))
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
        )
}
