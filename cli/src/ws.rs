//! The WebSocket side of the `rpcwire` command: `serve --ws ADDR` (the demo service, with
//! server push and optionally the browser console), `call --ws URL` and `listen --ws URL`.

use std::process::ExitCode;
use std::time::Duration;

use clap::Args;
use rpcwire_http::ws::{self, Hub, WsConfig, WsServer};
use rpcwire_tokio::{Builder, Router, RpcError, Session};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{json, Value};

use crate::outln;

use crate::EXIT_CONNECTION;
/// Exit code: bad command line.
const EXIT_USAGE: u8 = 2;
/// Exit code: nothing within `--timeout`.
const EXIT_TIMEOUT: u8 = 4;

/// The WebSocket options of `rpcwire serve`.
#[derive(Debug, Args)]
pub struct WsServeArgs {
    /// Serve over WebSocket on this address (e.g. 127.0.0.1:4000; port 0 picks one, printed on
    /// stderr as a ws:// URL). Any path upgrades.
    #[arg(long, value_name = "ADDR")]
    pub ws: Option<String>,
    /// With --ws: also serve the browser console on http://ADDR/; with --http: on
    /// http://ADDR/console. Its live view charts the calls (rate, latency percentiles, errors
    /// by method) and the open connections.
    #[arg(long)]
    pub console: bool,
    /// With --ws: send the notification `tick` {"n": N} to every connection every MS
    /// milliseconds.
    #[arg(long, value_name = "MS", requires = "ws")]
    pub tick: Option<u64>,
    /// With --ws: instead of the demo service, forward every call and notification to this
    /// command's stdin and stdout (split with shell-word rules), and its notifications to
    /// every connection: with `"rpcwire bridge --serial /dev/ttyACM0"`, the browser console
    /// (and any WebSocket client) reaches a device.
    #[arg(long, value_name = "CMD", requires = "ws")]
    pub forward: Option<String>,
    /// With --ws: seconds of silence before a ping (0: never).
    #[arg(long, value_name = "SECS", default_value_t = 30.0, requires = "ws")]
    pub ping_interval: f64,
    /// With --ws: seconds a peer has to answer a ping before it is dropped.
    #[arg(long, value_name = "SECS", default_value_t = 20.0, requires = "ws")]
    pub pong_timeout: f64,
    /// With --ws: seconds a peer may leave its messages unread before it is dropped.
    #[arg(long, value_name = "SECS", default_value_t = 10.0, requires = "ws")]
    pub send_timeout: f64,
    /// With --ws or --http: close a WebSocket (1008, "credential expired") this many seconds
    /// after its caller's credential expires (a --jwks token's `exp`, plus the 30 s leeway
    /// tokens are checked with); nothing it sends after is answered.
    #[arg(long, value_name = "SECS", default_value_t = 0.0)]
    pub credential_leeway: f64,
}

impl WsServeArgs {
    /// `--credential-leeway` as the WebSocket layer's setting.
    pub fn credential_leeway(&self) -> Result<Option<Duration>, ExitCode> {
        seconds(self.credential_leeway, "--credential-leeway").map(Some)
    }
}

/// The options of `rpcwire listen`.
#[derive(Debug, Args)]
pub struct ListenArgs {
    /// The server's WebSocket URL (ws://host:port/path, or wss://).
    #[arg(long, value_name = "URL", required = true)]
    pub ws: String,
    /// For a wss:// URL: trust the certificates in this PEM file (a private CA, a self-signed
    /// server) instead of Mozilla's root certificates.
    #[arg(long, value_name = "FILE")]
    pub ca_cert: Option<std::path::PathBuf>,
    /// Exit after this many notifications.
    #[arg(long, value_name = "N")]
    pub count: Option<u64>,
    /// Seconds to wait for the connection (and, with --count, for the notifications).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub timeout: f64,
}

fn seconds(value: f64, flag: &str) -> Result<Duration, ExitCode> {
    Duration::try_from_secs_f64(value).map_err(|_| {
        eprintln!("rpcwire: {flag} must be a number of seconds (0 or more)");
        ExitCode::from(EXIT_USAGE)
    })
}

/// `ask`'s params: the method to call on the caller's own connection, and its params.
#[derive(Debug, Deserialize)]
struct AskParams {
    method: String,
    #[serde(default)]
    params: Option<Box<RawValue>>,
}

/// The demo service of [`crate::demo_router`] plus the WebSocket demo methods:
///
/// | method | params | result |
/// |---|---|---|
/// | `broadcast` | anything | sends the notification `news` with these params to every connection; the number of connections |
/// | `ask` | `{"method": M, "params": P}` | calls `M` with `P` on the caller's own connection and returns the caller's answer |
/// | `whoami` | none | the connection's caller: `{"subject", "roles", "authenticated"}` (with `--tokens` or `--jwks`, who the upgrade's token stands for) |
pub fn ws_demo_router(hub: Hub) -> Router {
    crate::demo_router()
        .method("broadcast", move |params: Option<Box<RawValue>>| {
            let hub = hub.clone();
            async move {
                hub.notify_all("news", params.as_deref())
                    .map_err(RpcError::internal)
            }
        })
        .method_with_context("ask", |ctx, p: AskParams| async move {
            let answer = ctx
                .peer()
                .call_json(&p.method, p.params.as_deref(), None)
                .await?;
            Ok::<_, RpcError>(answer)
        })
        .method_with_context("whoami", |ctx, _: Option<Box<RawValue>>| async move {
            let id = ctx.identity();
            Ok::<_, RpcError>(json!({
                "subject": id.subject(),
                "roles": id.roles().collect::<Vec<_>>(),
                "authenticated": id.is_authenticated(),
            }))
        })
        .describe(
            "subtract",
            "[minuend, subtrahend] or {minuend, subtrahend} -> the difference",
        )
        .describe("sum", "[n, ...] -> the sum")
        .describe("get_data", "no params -> [\"hello\", 5]")
        .describe("echo", "anything -> the params unchanged")
        .describe("sleep", "{\"ms\": N} -> null after N ms")
        .describe("fail", "always fails with -32000 and data")
        .describe(
            "broadcast",
            "params -> the notification `news` with them to every connection",
        )
        .describe(
            "ask",
            "{\"method\": M, \"params\": P} -> calls M on your connection, returns your answer",
        )
        .describe("whoami", "no params -> who this connection's caller is")
}

/// `rpcwire serve --ws ADDR`: serves the demo service over WebSocket until stopped; with
/// `hosts` (`--any-host`, `--allowed-host`, `--allowed-origin`: the loopback names only by
/// default), to the `Host` and `Origin` names accepted.
pub async fn serve(
    args: &WsServeArgs,
    builder: Builder,
    max_message: usize,
    max_connections: usize,
    policy: Option<&crate::policy::Policy>,
    hosts: rpcwire_http::HostPolicy,
) -> ExitCode {
    let Some(addr) = args.ws.as_deref() else {
        return ExitCode::from(EXIT_USAGE);
    };
    let ping = match seconds(args.ping_interval, "--ping-interval") {
        Ok(d) => (!d.is_zero()).then_some(d),
        Err(code) => return code,
    };
    let (pong, send) = match (
        seconds(args.pong_timeout, "--pong-timeout"),
        seconds(args.send_timeout, "--send-timeout"),
    ) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(code), _) | (_, Err(code)) => return code,
    };
    let config = WsConfig {
        max_message,
        ping_interval: ping,
        pong_timeout: pong,
        send_timeout: send,
        credential_leeway: match args.credential_leeway() {
            Ok(leeway) => leeway,
            Err(code) => return code,
        },
        ..WsConfig::default()
    };
    let hub = Hub::new();
    let (router, _child) = match &args.forward {
        None => (ws_demo_router(hub.clone()), None),
        Some(command) => match forward_router(command, &hub) {
            Ok((router, child)) => (router, Some(child)),
            Err(code) => return code,
        },
    };
    let router = match policy {
        Some(policy) => policy.apply(router),
        None => router,
    };
    let server = WsServer::new(builder.router(router), config)
        .with_hub(hub.clone())
        .max_connections(max_connections)
        .console(args.console)
        .hosts(hosts);
    let (listener, local) = match crate::listen(addr).await {
        Ok(listening) => listening,
        Err(code) => return code,
    };
    match &args.forward {
        Some(command) => eprintln!("rpcwire: forwarding to `{command}` on ws://{local}/"),
        None => eprintln!("rpcwire: serving the demo service on ws://{local}/"),
    }
    if args.console {
        eprintln!("rpcwire: console on http://{local}/");
    }
    if let Some(ms) = args.tick.filter(|ms| *ms > 0) {
        let hub = hub.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(ms));
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await;
            for n in 1u64.. {
                every.tick().await;
                let _ = hub.notify_all("tick", json!({ "n": n }));
            }
        });
    }
    server.serve_tcp(listener).await;
    ExitCode::SUCCESS
}

/// The router of `serve --ws --forward CMD`: every request (`rpc.discover` included) and
/// notification goes to the command's stdio, its answer (or error) comes back as it is, and
/// its notifications go to every connection of `hub`. The child is killed when dropped.
fn forward_router(command: &str, hub: &Hub) -> Result<(Router, tokio::process::Child), ExitCode> {
    let argv = match shell_words::split(command) {
        Ok(argv) if !argv.is_empty() => argv,
        Ok(_) | Err(_) => {
            eprintln!("rpcwire: --forward {command:?}: not a command");
            return Err(ExitCode::from(EXIT_USAGE));
        }
    };
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    let hub = hub.clone();
    let upstream = Builder::new().router(Router::new().fallback_notification(
        move |ctx, params: Option<Box<RawValue>>| {
            let _ = hub.notify_all(ctx.method(), params);
            async {}
        },
    ));
    let (session, child) = upstream.spawn_child(&mut cmd).map_err(|e| {
        eprintln!("rpcwire: cannot start {:?}: {e}", argv[0]);
        ExitCode::from(EXIT_CONNECTION)
    })?;
    let calls = session.client().clone();
    let discover = calls.clone();
    let notes = calls.clone();
    // The session's driver runs on; the child ends with this process.
    drop(session);
    let router =
        Router::new()
            .method_with_context(
                rpcwire_tokio::DISCOVER_METHOD,
                move |_, params: Option<Box<RawValue>>| {
                    let up = discover.clone();
                    async move {
                        let method = rpcwire_tokio::DISCOVER_METHOD;
                        Ok::<_, RpcError>(up.call_json(method, params.as_deref(), None).await?)
                    }
                },
            )
            .fallback_method(move |ctx, params| {
                let up = calls.clone();
                async move {
                    Ok::<_, RpcError>(up.call_json(ctx.method(), params.as_deref(), None).await?)
                }
            })
            .fallback_notification(move |ctx, params| {
                let up = notes.clone();
                // Absent params stay absent (`None` is sent without a params member).
                async move {
                    let _ = up.notify(ctx.method(), &params).await;
                }
            });
    Ok((router, child))
}

/// Connects for `call --ws URL` (and `listen`), sending `headers` with the upgrade (a bearer
/// token, say) and using `tls` for a `wss://` URL (`None`: Mozilla's root certificates).
pub async fn connect(
    url: &str,
    headers: &[(String, String)],
    builder: Builder,
    config: &WsConfig,
    tls: Option<std::sync::Arc<rpcwire_http::tls::rustls::ClientConfig>>,
) -> Result<Session, String> {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    let mut request = url
        .into_client_request()
        .map_err(|e| format!("{url}: {e}"))?;
    for (name, value) in headers {
        let name = http::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("--header {name:?}: not a valid header name"))?;
        // The value is not shown: it may be a credential.
        let value = http::HeaderValue::from_str(value)
            .map_err(|_| format!("--header {name:?}: not a valid header value"))?;
        request.headers_mut().append(name, value);
    }
    ws::connect_request(request, builder, config, tls)
        .await
        .map_err(|e| format!("cannot connect to {url}: {e}"))
}

/// `rpcwire listen --ws URL`: prints each notification the server sends, one JSON object per
/// line (`{"method": ..., "params": ...}`), until the connection ends (or `--count`).
pub async fn listen(args: &ListenArgs) -> ExitCode {
    let timeout = match seconds(args.timeout, "--timeout") {
        Ok(t) if !t.is_zero() => t,
        _ => {
            eprintln!("rpcwire: --timeout must be a positive number of seconds");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let router = Router::new().fallback_notification(move |ctx, params| {
        let line = json!({
            "method": ctx.method(),
            "params": params.map_or(Value::Null, |p| {
                serde_json::from_str(p.get()).unwrap_or(Value::Null)
            }),
        });
        let _ = tx.send(line.to_string());
        async {}
    });
    let connected = async {
        let tls = match &args.ca_cert {
            Some(path) => Some(crate::tls::trusting(path)?),
            None => None,
        };
        connect(
            &args.ws,
            &[],
            Builder::new().router(router),
            &WsConfig::default(),
            tls,
        )
        .await
    };
    let session = match tokio::time::timeout(timeout, connected).await {
        Ok(Ok(session)) => session,
        Ok(Err(e)) => {
            eprintln!("rpcwire: {e}");
            return ExitCode::from(EXIT_CONNECTION);
        }
        Err(_) => {
            eprintln!("rpcwire: timed out connecting to {}", args.ws);
            return ExitCode::from(EXIT_TIMEOUT);
        }
    };
    eprintln!("rpcwire: listening on {}", args.ws);
    let deadline = tokio::time::Instant::now() + timeout;
    let mut seen = 0u64;
    let code = loop {
        if args.count.is_some_and(|n| seen >= n) {
            break ExitCode::SUCCESS;
        }
        let next = match args.count {
            Some(_) => match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(next) => next,
                Err(_) => {
                    eprintln!("rpcwire: {seen} notifications within {} s", args.timeout);
                    break ExitCode::from(EXIT_TIMEOUT);
                }
            },
            None => rx.recv().await,
        };
        match next {
            Some(line) => {
                outln!("{line}");
                seen += 1;
            }
            None => {
                eprintln!("rpcwire: the connection ended");
                break ExitCode::from(EXIT_CONNECTION);
            }
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(2), session.close()).await;
    code
}
