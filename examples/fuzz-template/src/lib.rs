//! The service under test: replace [`router`] with your own (and [`METHODS`] with its
//! method names, which the structured target calls most of the time).

use std::sync::OnceLock;

use rpcwire_testkit::Harness;
use rpcwire_tokio::{Router, RpcError};
use serde::Deserialize;

/// The methods the structured target calls (others are tried now and then).
pub const METHODS: &[&str] = &["add", "greet", "echo", "log", "rpc.discover"];

#[derive(Deserialize)]
struct Greet {
    name: String,
}

/// Your service's router.
pub fn router() -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64)| async move {
            a.checked_add(b)
                .ok_or_else(|| RpcError::invalid_params("overflow"))
        })
        .method("greet", |p: Greet| async move {
            Ok::<_, RpcError>(format!("hello, {}", p.name))
        })
        .method("echo", |p: Option<serde_json::Value>| async move {
            Ok::<_, RpcError>(p)
        })
        .notification("log", |_: Vec<String>| async {})
}

/// One harness for the whole fuzzing run (the router is built once).
pub fn harness() -> &'static Harness {
    static HARNESS: OnceLock<Harness> = OnceLock::new();
    HARNESS.get_or_init(|| Harness::new(router()))
}
