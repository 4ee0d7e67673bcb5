//! The library behind the `rpcwire` command: the demo service as a [`Router`] (shared with the
//! integration tests) and the wire tap the `demo` subcommand prints frames with.

use std::time::Duration;

use rpcwire::wire::RawJson;
use rpcwire_demo::Number;
use rpcwire_tokio::{ErrorCode, Router, RpcError};
use serde::Deserialize;
use serde_json::value::RawValue;

pub mod tap;

fn numbers<T>(
    params: Option<RawJson<'_>>,
    parse: impl FnOnce(RawJson<'_>) -> Option<T>,
    expected: &str,
) -> Result<T, RpcError> {
    params
        .and_then(parse)
        .ok_or_else(|| RpcError::invalid_params(expected))
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
/// | `sleep` | `{"ms": N}` | `null` after N ms |
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
    // Every method but `sleep` answers at once: `raw_method` runs it in the connection's
    // driver on the received bytes (no task, no copy of the params).
    Router::new()
        .raw_method("subtract", |p: Option<RawJson<'_>>| {
            let (a, b) = numbers(
                p,
                rpcwire_demo::subtract_params,
                "expected [minuend, subtrahend] or {\"minuend\": .., \"subtrahend\": ..} with numbers",
            )?;
            Ok::<_, RpcError>(sub(a, b))
        })
        .raw_method("sum", |p: Option<RawJson<'_>>| {
            numbers(p, rpcwire_demo::sum_params, "expected an array of numbers")
        })
        .raw_method("update", |_: Option<RawJson<'_>>| Ok::<_, RpcError>(()))
        .raw_method("notify_hello", |_: Option<RawJson<'_>>| Ok::<_, RpcError>(()))
        .raw_method("notify_sum", |_: Option<RawJson<'_>>| Ok::<_, RpcError>(()))
        .raw_method("get_data", |_: Option<RawJson<'_>>| Ok::<_, RpcError>(("hello", 5)))
        .raw_method("echo", |p: Option<RawJson<'_>>| {
            // The answer outlives the request's bytes: one copy, kept as raw JSON.
            p.map(|p| RawValue::from_string(p.as_str().to_owned()))
                .transpose()
                .map_err(|e| RpcError::internal(&e.to_string()))
        })
        .method("sleep", |p: SleepParams| async move {
            if p.ms > MAX_SLEEP_MS {
                return Err(RpcError::invalid_params(format!(
                    "ms must be at most {MAX_SLEEP_MS}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(p.ms)).await;
            Ok(())
        })
        .raw_method("fail", |_: Option<RawJson<'_>>| {
            let err = RpcError::new(ErrorCode(-32000), "Server error");
            let data = serde_json::json!({"reason": "the method fail always fails"});
            Err::<(), _>(err.clone().with_data(&data).unwrap_or(err))
        })
        .notification("update", |_: Option<Box<RawValue>>| async {})
        .notification("notify_hello", |_: Option<Box<RawValue>>| async {})
        .notification("notify_sum", |_: Option<Box<RawValue>>| async {})
}

/// `a - b`, keeping integers integers (falling back to a float on overflow).
fn sub(a: Number, b: Number) -> Number {
    let f = |n: Number| match n {
        Number::Int(i) => i as f64,
        Number::Float(x) => x,
    };
    match (a, b) {
        (Number::Int(x), Number::Int(y)) => match x.checked_sub(y) {
            Some(d) => Number::Int(d),
            None => Number::Float(x as f64 - y as f64),
        },
        (a, b) => Number::Float(f(a) - f(b)),
    }
}
