//! `rpcwire call`: one call (or notification) over TCP (with TLS), a serial port, a child
//! process, HTTP or WebSocket, the result printed on stdout.

use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgGroup, Args};
use rpcwire_cli::{outln, EXIT_CONNECTION};
use rpcwire_http::ws::WsConfig;
use rpcwire_tokio::{Builder, CallError, Session, DEFAULT_MAX_FRAME};
use serde_json::value::RawValue;

use crate::serve::{open_serial, DEFAULT_BAUD};
use crate::{http, FramingArg, ProfileArg, EXIT_RPC_ERROR, EXIT_TIMEOUT, EXIT_USAGE};

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("transport").required(true).args(["tcp", "serial", "exec", "http", "ws", "nats", "mqtt"])))]
#[command(group(ArgGroup::new("web").args(["http", "ws"])))]
pub(crate) struct CallArgs {
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
    #[command(flatten)]
    nats: rpcwire_cli::nats::NatsCallArgs,
    #[command(flatten)]
    mqtt: rpcwire_cli::mqtt::MqttCallArgs,
    /// For an https:// or wss:// URL, or --tcp with --tls: trust the certificates in this PEM
    /// file (a private CA, a self-signed server) instead of Mozilla's root certificates.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["serial", "exec"])]
    ca_cert: Option<std::path::PathBuf>,
    /// With --tcp: speak TLS (needs --ca-cert); the server's certificate is checked for the
    /// host part of ADDR.
    #[arg(long, requires_all = ["tcp", "ca_cert"])]
    tls: bool,
    /// With --http or --ws: send this header with the request (or the WebSocket upgrade)
    /// (`'Name: value'`; repeatable).
    #[arg(long = "header", value_name = "HEADER", requires = "web")]
    headers: Vec<String>,
    /// With --http or --ws: send `Authorization: Bearer TOKEN` (with the WebSocket upgrade
    /// for --ws). `@FILE` reads the token from a file and `env:NAME` from an environment
    /// variable, so that it stays out of the process list and the shell history. Never
    /// logged.
    #[arg(long, value_name = "TOKEN", requires = "web")]
    bearer: Option<String>,
    /// Present this client certificate (PEM) for mutual TLS: with --tcp --tls, or with an
    /// https:// (--http) or wss:// (--ws) URL.
    #[arg(long, value_name = "FILE", requires = "key", conflicts_with_all = ["serial", "exec"])]
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

/// The TLS settings of an `https://` or `wss://` call: `--ca-cert` and `--cert`/`--key`
/// (`None`: the client's defaults). A client certificate with a plain-text URL is refused.
fn client_tls(
    args: &CallArgs,
    url: &str,
) -> Result<Option<std::sync::Arc<rpcwire_http::tls::rustls::ClientConfig>>, String> {
    let identity = args.cert.as_deref().zip(args.key.as_deref());
    let secure = url.starts_with("https://") || url.starts_with("wss://");
    if identity.is_some() && !secure {
        return Err(format!("--cert needs an https:// or wss:// URL, not {url}"));
    }
    rpcwire_cli::tls::client_tls(args.ca_cert.as_deref(), identity)
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
    if let Some(session) = rpcwire_cli::nats::session(&args.nats, builder.clone()).await {
        return session.map(|session| Target {
            session,
            child: None,
        });
    }
    if let Some(session) = rpcwire_cli::mqtt::session(&args.mqtt, builder.clone()).await {
        return session.map(|session| Target {
            session,
            child: None,
        });
    }
    if let Some(url) = &args.ws {
        let connected = async {
            let headers = request_headers(args)?;
            let tls = client_tls(args, url)?;
            rpcwire_cli::ws::connect(
                url,
                &headers,
                builder,
                &WsConfig {
                    max_message: args.max_frame,
                    ..WsConfig::default()
                },
                tls,
            )
            .await
        };
        return match tokio::time::timeout(timeout, connected).await {
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
    if args.tcp.is_some() && args.cert.is_some() && !args.tls {
        eprintln!("rpcwire: --cert with --tcp needs --tls");
        return Err(ExitCode::from(EXIT_USAGE));
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

pub(crate) async fn call(args: CallArgs) -> ExitCode {
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
        let tls = match client_tls(&args, url) {
            Ok(tls) => tls,
            Err(msg) => {
                eprintln!("rpcwire: {msg}");
                return ExitCode::from(EXIT_USAGE);
            }
        };
        let client = match http::client(url, timeout, args.max_frame, tls, &headers) {
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
