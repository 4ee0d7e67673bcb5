//! Method models catch wrong answers, not only protocol violations: a planted wrong result
//! (`add` off by one for one input range) and a planted lost update (a counter's
//! read-modify-write across an `.await`) are each caught and shrunk to a minimal case, and
//! the regression test printed for each compiles and fails as printed (`tests/printed/`,
//! included below verbatim).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use proptest::prelude::*;
use rpcwire::storage::Inline;
use rpcwire::{Config, Inbound};
use rpcwire_testkit::strategy::{self, method, method_any};
use rpcwire_testkit::{Case, Firmware, Frame, Harness, Message, Model, Violation, SEED_VAR};
use rpcwire_tokio::{Router, RpcError};
use serde_json::json;

/// Set in the environment of the printed tests' re-run: their `harness()` then serves the
/// planted defect instead of the fixed service.
const PLANTED_VAR: &str = "RPCWIRE_TESTKIT_PLANTED";

fn planted() -> bool {
    std::env::var_os(PLANTED_VAR).is_some()
}

/// `add`; with `planted`, off by one when the first operand is in `1000..2000`.
fn adder(planted: bool) -> Router {
    Router::new().method("add", move |(a, b): (i64, i64)| async move {
        let sum = a.wrapping_add(b);
        let wrong = planted && (1000..2000).contains(&a);
        Ok::<_, RpcError>(if wrong { sum.wrapping_add(1) } else { sum })
    })
}

fn adder_model() -> Model {
    Model::new().method("add", |(a, b): (i64, i64)| Ok(a.wrapping_add(b)))
}

fn adder_traffic() -> impl Strategy<Value = Case> {
    let small = -5000i64..5000;
    strategy::case(vec![
        method(
            "add",
            (small.clone(), small).prop_map(|(a, b)| json!([a, b])),
        ),
        method_any("add"),
    ])
}

type Store = Arc<Mutex<HashMap<String, i64>>>;

fn read(store: &Store, key: &str) -> i64 {
    let map = store.lock().unwrap_or_else(PoisonError::into_inner);
    map.get(key).copied().unwrap_or(0)
}

/// Counters: `incr [key, by]` answers the new value, `get [key]` the value. With `planted`,
/// `incr` reads, yields, then writes: an `incr` running meanwhile loses its update.
fn counters(planted: bool) -> Router {
    let store = Store::default();
    let get_store = Arc::clone(&store);
    Router::new()
        .method("incr", move |(key, by): (String, i64)| {
            let store = Arc::clone(&store);
            async move {
                if planted {
                    let old = read(&store, &key);
                    tokio::task::yield_now().await;
                    let new = old.wrapping_add(by);
                    store
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(key, new);
                    return Ok::<_, RpcError>(new);
                }
                let mut map = store.lock().unwrap_or_else(PoisonError::into_inner);
                let value = map.entry(key).or_default();
                *value = value.wrapping_add(by);
                Ok(*value)
            }
        })
        .method("get", move |(key,): (String,)| {
            let value = read(&get_store, &key);
            async move { Ok::<_, RpcError>(value) }
        })
}

fn counters_model() -> Model<HashMap<String, i64>> {
    // Notifications to `incr` change nothing: a router runs a request method's handler for
    // requests only (notifications go to notification handlers).
    Model::with_state(HashMap::new())
        .method_with_state(
            "incr",
            |s: &mut HashMap<String, i64>, (key, by): (String, i64)| {
                let value = s.entry(key).or_default();
                *value = value.wrapping_add(by);
                Ok(*value)
            },
        )
        .method_with_state("get", |s, (key,): (String,)| {
            Ok(s.get(&key).copied().unwrap_or(0))
        })
}

fn counters_methods() -> Vec<strategy::Method> {
    let key = || prop::sample::select(&["a", "b"][..]);
    vec![
        method("incr", (key(), 0i64..5).prop_map(|(k, by)| json!([k, by]))),
        method("get", key().prop_map(|k| json!([k]))),
    ]
}

fn counters_traffic() -> impl Strategy<Value = Case> {
    strategy::valid_case(counters_methods())
}

/// The requests and notifications of a case.
fn calls(case: &Case) -> usize {
    case.frames
        .iter()
        .map(|f| match f {
            Frame::Single(_) => 1,
            Frame::Batch(items) => items.len(),
            Frame::Raw(_) => 0,
        })
        .sum()
}

/// The printed tests: the files are what the harness prints (checked below), included
/// verbatim; each `harness()` serves the fixed service, or the planted one when re-run with
/// `RPCWIRE_TESTKIT_PLANTED` set.
mod printed_wrong_result {
    use rpcwire_testkit::Harness;

    fn harness() -> Harness {
        Harness::new(super::adder(super::planted())).model(super::adder_model())
    }

    include!("printed/wrong_result.rs");
}

mod printed_lost_update {
    use rpcwire_testkit::{Harness, PerCase};
    use rpcwire_tokio::Router;

    fn harness() -> Harness<PerCase<impl Fn() -> Router>> {
        Harness::per_case(|| super::counters(super::planted())).model(super::counters_model())
    }

    include!("printed/lost_update.rs");
}

/// Runs the planted service's search with seed 0 and compares its printed test with the
/// file (`RPCWIRE_TESTKIT_BLESS=1` rewrites the file instead).
fn printed_matches(failure: &rpcwire_testkit::Failure, file: &str) {
    if std::env::var_os(SEED_VAR).is_some() {
        println!("{SEED_VAR} is set: the printed test differs from the file's seed-0 one");
        return;
    }
    let path = format!("{}/tests/printed/{file}", env!("CARGO_MANIFEST_DIR"));
    let printed = failure.regression_test();
    if std::env::var_os("RPCWIRE_TESTKIT_BLESS").is_some() {
        std::fs::write(&path, &printed).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let kept = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(printed, kept, "{path} is not what the harness prints now");
}

/// Re-runs one printed test of this binary against the planted service: it must fail, with
/// the violation in its output.
fn fails_as_printed(test: &str) {
    let exe = std::env::current_exe().unwrap_or_default();
    let out = std::process::Command::new(exe)
        .args(["--exact", test, "--test-threads=1"])
        .env(PLANTED_VAR, "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot re-run the test binary: {e}"));
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !out.status.success(),
        "{test} passed against the planted service:\n{text}"
    );
    assert!(text.contains("1 failed"), "{text}");
    assert!(text.contains("NotAsModelled"), "{text}");
}

#[test]
fn a_wrong_result_for_one_input_range_is_caught_and_shrunk() {
    let harness = Harness::new(adder(true)).model(adder_model()).seed(0);
    let failure = harness.run_proptest(adder_traffic(), 500).unwrap_err();
    println!("{failure}");
    assert!(
        matches!(failure.violation, Violation::NotAsModelled { .. }),
        "{failure}"
    );
    // Shrunk to one call at the edge of the range: add(1000, 0).
    assert_eq!(
        failure.case,
        Case::new(vec![Frame::Single(Message::request(
            "add",
            json!([1000, 0]),
            0
        ))]),
        "{failure}"
    );
    printed_matches(&failure, "wrong_result.rs");
    fails_as_printed("printed_wrong_result::regression_add");
    // The same traffic finds nothing to say about the service without the defect.
    let fixed = Harness::new(adder(false)).model(adder_model());
    let passed = fixed.run_proptest(adder_traffic(), 500);
    assert!(passed.is_ok(), "{passed:?}");
}

#[test]
fn a_lost_update_is_caught_and_shrunk_to_two_calls() {
    let harness = Harness::per_case(|| counters(true))
        .model(counters_model())
        .seed(0);
    let failure = harness.run_proptest(counters_traffic(), 500).unwrap_err();
    println!("{failure}");
    assert!(
        matches!(failure.violation, Violation::NotAsModelled { .. }),
        "{failure}"
    );
    // Two increments of one counter, the second running while the first waits.
    assert_eq!(calls(&failure.case), 2, "{failure}");
    assert!(failure.case.chunks.is_empty(), "{failure}");
    printed_matches(&failure, "lost_update.rs");
    fails_as_printed("printed_lost_update::regression_incr");

    let fixed = Harness::per_case(|| counters(false)).model(counters_model());
    let passed = fixed.run_proptest(counters_traffic(), 500);
    assert!(passed.is_ok(), "{passed:?}");
    // Single messages sent one at a time: no two increments overlap, the defect cannot show.
    let sequential = Harness::per_case(|| counters(true))
        .model(counters_model())
        .sequential();
    let singles = prop::collection::vec(
        strategy::message(&counters_methods()).prop_map(Frame::Single),
        1..8,
    )
    .prop_map(Case::new);
    let passed = sequential.run_proptest(singles, 200);
    assert!(passed.is_ok(), "{passed:?}");
}

#[test]
fn a_request_with_null_params_makes_the_harness_say_so() {
    let router = Router::new().method("hang", |_: Option<serde_json::Value>| {
        std::future::pending::<Result<(), RpcError>>()
    });
    let vacuous = Case::new(vec![Frame::Single(Message::request(
        "hang",
        json!(null),
        1,
    ))]);
    let said = Harness::new(router).check(&vacuous);
    assert!(
        matches!(&said, Err(Violation::Vacuous { message }) if message.contains("\"hang\"")),
        "{said:?}"
    );
    let text = said.map_err(|v| v.to_string()).unwrap_err();
    assert!(text.contains("request_without_params"), "{text}");
    // The firmware harness (whose `Firmware::check` a vacuous case once passed) too.
    let fw: Firmware<_, Inline> = Firmware::new(Config::default(), |_conn, _item: Inbound<'_>| {});
    assert!(matches!(fw.check(&vacuous), Err(Violation::Vacuous { .. })));
    // Without params, the request reaches the handler, which never answers: caught.
    let real = Case::new(vec![Frame::Single(Message::request_without_params(
        "hang", 1,
    ))]);
    assert!(matches!(fw.check(&real), Err(Violation::Missing { .. })));
}

/// The firmware harness has the same proptest helper and models: a firmware handler that
/// answers `sum` wrong for three or more numbers is caught and shrunk.
#[test]
fn a_firmware_handler_with_a_wrong_result_is_caught_by_its_proptest_helper() {
    fn handler(conn: &mut rpcwire::Connection<Inline>, item: Inbound<'_>) {
        if let Inbound::Request(req) = item {
            let numbers: Option<Vec<i64>> = req
                .params
                .and_then(|p| serde_json::from_str(p.as_str()).ok());
            let _ = match numbers {
                Some(n) => {
                    let wrong = i64::from(n.len() >= 3);
                    let sum = n.iter().fold(0i64, |a, b| a.wrapping_add(*b));
                    conn.respond(req.handle, &sum.wrapping_add(wrong))
                }
                None => conn.respond_error(
                    req.handle,
                    rpcwire::ErrorCode::INVALID_PARAMS,
                    None,
                    None::<&()>,
                ),
            };
        }
    }
    let model = Model::new().method("sum", |n: Vec<i64>| {
        Ok(n.iter().fold(0i64, |a, b| a.wrapping_add(*b)))
    });
    let fw: Firmware<_, Inline> = Firmware::new(Config::default(), handler)
        .model(model)
        .methods(&["sum"]);
    let traffic = strategy::valid_case(vec![method(
        "sum",
        prop::collection::vec(-100i64..100, 0..5).prop_map(|v| json!(v)),
    )]);
    let failure = fw.run_proptest(traffic, 300).unwrap_err();
    assert!(
        matches!(failure.violation, Violation::NotAsModelled { .. }),
        "{failure}"
    );
    assert_eq!(calls(&failure.case), 1, "{failure}");
    assert!(
        failure.to_string().contains("json!([0, 0, 0])"),
        "{failure}"
    );
    assert!(
        failure
            .regression_test()
            .contains("firmware().check(&case)"),
        "{failure}"
    );
}

#[test]
fn coverage_reports_methods_errors_and_batches() {
    let harness =
        Harness::new(adder(false).method("never", |(): ()| async { Ok::<_, RpcError>(()) }))
            .model(adder_model());
    let coverage = harness
        .run_proptest(adder_traffic(), 200)
        .unwrap_or_else(|f| panic!("{f}"));
    assert_eq!(coverage.cases, 200);
    assert!(
        coverage.requests.get("add").is_some_and(|n| *n > 100),
        "{coverage}"
    );
    assert!(coverage.errors.contains_key(&-32602), "{coverage}");
    assert!(coverage.errors.contains_key(&-32700), "{coverage}");
    assert!(coverage.results > 100, "{coverage}");
    assert!(!coverage.batch_sizes.is_empty(), "{coverage}");
    assert_eq!(
        coverage.never_called,
        ["never", "rpc.discover"],
        "{coverage}"
    );
    assert!(coverage.unknown > 0, "{coverage}");
}
