//! The library behind the `rpcwire` command: the demo service as a [`Router`] (shared with the
//! integration tests) and the wire tap the `demo` subcommand prints frames with.

use std::time::Duration;

use rpcwire::wire::RawJson;
use rpcwire_demo::Answer;
use rpcwire_tokio::{ErrorCode, Router, RpcError};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub mod bridge;
pub mod bridge_command;
pub mod logs;
#[cfg(feature = "metrics")]
pub mod metrics;
pub mod mqtt;
pub mod nats;
pub mod out;
pub mod policy;
pub mod tap;
pub mod tls;
pub mod ws;

/// Exit code: could not connect (or listen), or the connection ended before the work was done.
pub const EXIT_CONNECTION: u8 = 3;

/// Listens on `addr` for a server subcommand: the listener and the address it got (the port
/// the system chose for `:0`), or, with the reason on stderr, the exit code.
pub async fn listen(
    addr: &str,
) -> Result<(tokio::net::TcpListener, String), std::process::ExitCode> {
    match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => {
            let local = listener
                .local_addr()
                .map_or_else(|_| addr.to_owned(), |a| a.to_string());
            Ok((listener, local))
        }
        Err(e) => {
            eprintln!("rpcwire: cannot listen on {addr}: {e}");
            Err(std::process::ExitCode::from(EXIT_CONNECTION))
        }
    }
}

/// `sleep`'s params.
#[derive(Debug, Deserialize)]
struct SleepParams {
    ms: u64,
}

/// The longest `sleep` accepted (one hour).
const MAX_SLEEP_MS: u64 = 3_600_000;

/// The demo service: the methods of the JSON-RPC 2.0 specification's examples, plus `echo`,
/// `sleep` and `fail`.
///
/// | method | params | result |
/// |---|---|---|
/// | `subtract` | `[minuend, subtrahend]` or `{"minuend", "subtrahend"}` | the difference (an integer for integers) |
/// | `sum` | array of numbers | the sum (an integer when all are integers) |
/// | `update`, `notify_hello`, `notify_sum` | anything | `null` (as notifications: nothing) |
/// | `get_data` | none | `["hello", 5]` |
/// | `echo` | anything | the params unchanged (`null` when absent) |
/// | `sleep` | `{"ms": N}` | `null` after N ms (error -32800 when the client cancels it) |
/// | `fail` | anything | always the error -32000 with a `data` member |
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rpcwire_tokio::Builder;
/// let (server, client) = Builder::new()
///     .router(rpcwire_cli::demo_router())
///     .duplex(Builder::new(), 4096);
/// let c = client.client();
/// assert_eq!(c.call::<_, serde_json::Value>("subtract", [42, 23]).await?, 19);
/// assert_eq!(c.call::<_, serde_json::Value>("sum", (1.5, 2)).await?, 3.5);
/// assert_eq!(c.call::<_, (String, i64)>("get_data", ()).await?, ("hello".into(), 5));
/// let err = c.call::<_, ()>("fail", ()).await.unwrap_err();
/// assert_eq!(err.rpc().map(|e| e.code), Some(-32000));
/// # Ok(()) }
/// ```
pub fn demo_router() -> Router {
    // The methods of the demo service, defined once in `rpcwire_demo::call`; each runs in the
    // connection's driver on the received bytes (`raw_method`: no task, no copy of the
    // params). Only `echo`'s answer outlives the request's bytes, so it is copied.
    let router = rpcwire_demo::METHODS
        .iter()
        .fold(Router::new(), |router, &name| {
            router.raw_method(
                name,
                move |p: Option<RawJson<'_>>| match rpcwire_demo::call(name.as_bytes(), p) {
                    Ok(answer) => match answer.into_static() {
                        Some(answer) => Ok(Reply::Answer(answer)),
                        None => RawValue::from_string(p.map_or("null", |p| p.as_str()).to_owned())
                            .map(Reply::Raw)
                            .map_err(RpcError::internal),
                    },
                    Err(refusal) if refusal.expected.is_empty() => {
                        Err(RpcError::standard(refusal.code))
                    }
                    Err(refusal) => Err(RpcError::invalid_params(refusal.expected)),
                },
            )
        });
    router
        .method_with_context("sleep", |ctx, p: SleepParams| async move {
            if p.ms > MAX_SLEEP_MS {
                return Err(RpcError::invalid_params(format!(
                    "ms must be at most {MAX_SLEEP_MS}"
                )));
            }
            // A client that gives up (with a profile's cancel notification) ends the wait.
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(p.ms)) => Ok(()),
                () = ctx.cancelled() => {
                    tracing::info!(ms = p.ms, "sleep cancelled by the client");
                    Err(RpcError::new(ErrorCode(-32800), "Request cancelled"))
                }
            }
        })
        .raw_method("fail", |_: Option<RawJson<'_>>| {
            let err = RpcError::new(ErrorCode(-32000), "Server error");
            let data = serde_json::json!({"reason": "the method fail always fails"});
            Err::<(), _>(err.with_data(&data))
        })
        .notification("update", |_: Option<Box<RawValue>>| async {})
        .notification("notify_hello", |_: Option<Box<RawValue>>| async {})
        .notification("notify_sum", |_: Option<Box<RawValue>>| async {})
        .info("rpcwire demo service", env!("CARGO_PKG_VERSION"))
        .describe_demo()
}

/// The `rpc.discover` document's account of the demo methods (their params are read from
/// the raw bytes, so the router cannot tell them).
trait DescribeDemo {
    fn describe_demo(self) -> Self;
}

impl DescribeDemo for Router {
    fn describe_demo(self) -> Self {
        let number = serde_json::json!({"type": "number"});
        let any = serde_json::json!({});
        let param = |name: &str, schema: &serde_json::Value, required: bool| serde_json::json!({"name": name, "schema": schema, "required": required});
        self.params(
            "subtract",
            serde_json::json!([
                param("minuend", &number, true),
                param("subtrahend", &number, true)
            ]),
        )
        .describe("subtract", "minuend - subtrahend (integers stay integers)")
        .params(
            "sum",
            serde_json::json!([param(
                "numbers",
                &serde_json::json!({"type": "array", "items": number}),
                false
            )]),
        )
        .describe("sum", "the sum of the numbers, given as the params array")
        .params("get_data", serde_json::json!([]))
        .describe("get_data", "[\"hello\", 5]")
        .params("echo", serde_json::json!([param("params", &any, false)]))
        .describe("echo", "the params unchanged (null when absent)")
        .params(
            "sleep",
            serde_json::json!([param(
                "ms",
                &serde_json::json!({"type": "integer", "minimum": 0, "maximum": MAX_SLEEP_MS}),
                true
            )]),
        )
        .describe("sleep", "null after ms milliseconds, {\"ms\": N} or [N]")
        .params("fail", serde_json::json!([param("params", &any, false)]))
        .describe("fail", "always the error -32000 with a data member")
        .params("update", serde_json::json!([param("params", &any, false)]))
        .params(
            "notify_hello",
            serde_json::json!([param("params", &any, false)]),
        )
        .params(
            "notify_sum",
            serde_json::json!([param("params", &any, false)]),
        )
    }
}

/// A demo answer that owns what it holds (only `echo`'s params need a copy).
enum Reply {
    Answer(Answer<'static>),
    Raw(Box<RawValue>),
}

/// As `#[serde(untagged)]` would write it, inlined where the answer is encoded: every call's
/// answer goes through it, and a derived impl left it to the compiler's whims whether it is
/// (the `metrics` feature's code elsewhere in the binary tipped it).
impl Serialize for Reply {
    #[inline]
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Reply::Answer(answer) => answer.serialize(s),
            Reply::Raw(raw) => raw.serialize(s),
        }
    }
}

/// Resolves when the process is asked to stop (SIGINT, or SIGTERM on Unix): a server that
/// must finish something first (the OTLP export's last spans) waits for it.
pub async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                _ = term.recv() => {}
                _ = tokio::signal::ctrl_c() => {}
            }
            return;
        }
    }
    let _ = tokio::signal::ctrl_c().await;
}
