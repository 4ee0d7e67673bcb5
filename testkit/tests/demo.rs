//! The demo service (what `rpcwire serve` serves) keeps every invariant over 10 000 cases,
//! on the tokio router and as the firmware handler.

use proptest::prelude::*;
use rpcwire::storage::Inline;
use rpcwire::Config;
use rpcwire_testkit::strategy::{self, method, method_any};
use rpcwire_testkit::{Firmware, Harness};
use serde_json::json;

fn number() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        any::<i64>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
    ]
}

fn demo_methods() -> Vec<strategy::Method> {
    vec![
        method(
            "subtract",
            (number(), number()).prop_map(|(a, b)| json!([a, b])),
        ),
        method(
            "subtract",
            (number(), number()).prop_map(|(a, b)| json!({"minuend": a, "subtrahend": b})),
        ),
        method(
            "sum",
            prop::collection::vec(number(), 0..5).prop_map(|v| json!(v)),
        ),
        method_any("get_data"),
        method_any("echo"),
        method_any("update"),
        method_any("notify_hello"),
        method_any("notify_sum"),
        method("sleep", (0u64..2000).prop_map(|ms| json!({"ms": ms}))),
        method_any("fail"),
        method_any("rpc.discover"),
    ]
}

#[test]
fn the_demo_router_passes_10_000_cases() {
    let harness = Harness::new(rpcwire_cli::demo_router());
    // RPCWIRE_TESTKIT_CASES overrides the count (fewer while working on the harness).
    let coverage = harness.proptest(strategy::case(demo_methods()), 10_000);
    // The traffic reaches every method, error paths and batches (the summary is printed too).
    assert!(coverage.never_called.is_empty(), "{coverage}");
    assert!(coverage.errors.contains_key(&-32601), "{coverage}");
    assert!(coverage.batch_sizes.len() > 3, "{coverage}");
}

#[test]
fn the_demo_firmware_handler_passes_2_000_cases() {
    let fw: Firmware<_, Inline> = Firmware::new(Config::default(), |conn, item| {
        let _ = rpcwire_demo::handle(conn, item);
    })
    .methods(&[
        "subtract",
        "sum",
        "get_data",
        "echo",
        "update",
        "notify_hello",
    ]);
    let coverage = fw.proptest(strategy::case(demo_methods()), 2_000);
    assert!(coverage.never_called.is_empty(), "{coverage}");
}
