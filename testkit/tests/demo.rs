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
        method("sleep", (0u64..2000).prop_map(|ms| json!({"ms": ms}))),
        method_any("fail"),
        method_any("rpc.discover"),
    ]
}

#[test]
fn the_demo_router_passes_10_000_cases() {
    let harness = Harness::new(rpcwire_cli::demo_router());
    // RPCWIRE_TESTKIT_CASES: fewer (or more) cases while working on the harness.
    let cases = std::env::var("RPCWIRE_TESTKIT_CASES")
        .ok()
        .and_then(|n| n.parse().ok());
    harness.proptest(strategy::case(demo_methods()), cases.unwrap_or(10_000));
}

#[test]
fn the_demo_firmware_handler_passes_2_000_cases() {
    let fw: Firmware<_, Inline> = Firmware::new(Config::default(), |conn, item| {
        let _ = rpcwire_demo::handle(conn, item);
    });
    let config = proptest::test_runner::Config {
        cases: 2_000,
        failure_persistence: None,
        ..Default::default()
    };
    let rng = proptest::test_runner::TestRng::deterministic_rng(
        proptest::test_runner::RngAlgorithm::ChaCha,
    );
    let mut runner = proptest::test_runner::TestRunner::new_with_rng(config, rng);
    let result = runner.run(&strategy::case(demo_methods()), |case| {
        fw.check(&case)
            .map_err(|v| TestCaseError::fail(format!("{v}")))
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
