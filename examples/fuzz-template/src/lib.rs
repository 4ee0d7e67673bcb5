//! The service under test: replace [`router`] with your own (and [`METHODS`] with its
//! method names, which the structured target calls most of the time).
//!
//! Feature `planted-bug` plants the README's bug in `div`, to see a fuzzer find it.

use std::sync::OnceLock;

use rpcwire_testkit::Harness;
use rpcwire_tokio::{Router, RpcError};
use serde::Deserialize;
use serde_json::json;

/// The methods the structured target calls (others are tried now and then).
pub const METHODS: &[&str] = &["add", "div", "greet", "echo", "log", "rpc.discover"];

#[derive(Deserialize)]
struct Greet {
    name: String,
}

/// Your service's router. Its params are documented (`.params`): `rpc.discover` shows them,
/// and the seed corpus (`examples/seeds.rs`) calls each method with an example of them.
pub fn router() -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64)| async move {
            a.checked_add(b)
                .ok_or_else(|| RpcError::invalid_params("overflow"))
        })
        .params(
            "add",
            json!([{"name": "a", "schema": {"type": "integer"}, "required": true},
                   {"name": "b", "schema": {"type": "integer"}, "required": true}]),
        )
        .method("div", |(a, b): (i64, i64)| async move { quotient(a, b) })
        .params(
            "div",
            json!([{"name": "a", "schema": {"type": "integer"}, "required": true},
                   {"name": "b", "schema": {"type": "integer"}, "required": true}]),
        )
        .method("greet", |p: Greet| async move {
            Ok::<_, RpcError>(format!("hello, {}", p.name))
        })
        .params(
            "greet",
            json!([{"name": "name", "schema": {"type": "string"}, "required": true}]),
        )
        .method("echo", |p: Option<serde_json::Value>| async move {
            Ok::<_, RpcError>(p)
        })
        .notification("log", |_: Vec<String>| async {})
}

/// `div`: the integer quotient, Invalid params for a zero divisor (and for the one quotient
/// an `i64` cannot hold, `i64::MIN / -1`).
#[cfg(not(feature = "planted-bug"))]
fn quotient(a: i64, b: i64) -> Result<i64, RpcError> {
    a.checked_div(b)
        .ok_or_else(|| RpcError::invalid_params("division by zero or overflow"))
}

/// `div` with the README's planted bug: the division unchecked, which panics for a zero
/// divisor (and for `i64::MIN / -1`).
#[cfg(feature = "planted-bug")]
fn quotient(a: i64, b: i64) -> Result<i64, RpcError> {
    Ok(a / b)
}

/// One harness for the whole fuzzing run (the router is built once).
pub fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| Harness::new(router()))
}
