//! Model-based test: random operation sequences against one `Connection` and a reference
//! model of its tokens, handles, limits and output (see `model_ops/mod.rs`, which the
//! `connection_ops` fuzz target shares). proptest shrinks a failing sequence to a minimal one.

// `model_ops` derives `arbitrary::Arbitrary` under `cfg(fuzzing)` for the fuzz target.
#![allow(unexpected_cfgs)]

mod model_ops;

use std::time::Duration;

use model_ops::{Model, Op};
use proptest::prelude::*;
use rpcwire::wire::Framing;
use rpcwire::{Config, DuplicateIdPolicy};

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        12 => (any::<u8>(), proptest::option::of(0u16..400))
            .prop_map(|(pad, timeout_ms)| Op::Request { pad: pad % 200, timeout_ms }),
        3 => any::<u8>().prop_map(|pad| Op::Notify { pad }),
        3 => (proptest::collection::vec(any::<bool>(), 0..6), any::<bool>())
            .prop_map(|(elements, finish)| Op::Batch { elements, finish }),
        5 => any::<u8>().prop_map(|pick| Op::Cancel { pick }),
        12 => (any::<u8>(), any::<bool>(), proptest::bool::weighted(0.1), any::<u8>())
            .prop_map(|(pick, error, bogus, chunk)| Op::PeerResponse { pick, error, bogus, chunk }),
        12 => (any::<u8>(), proptest::bool::weighted(0.2), prop_oneof![3 => Just(0u8), 2 => 1u8..5], any::<u8>())
            .prop_map(|(id, notification, count, chunk)| Op::PeerRequest { id, notification, count, chunk }),
        2 => (proptest::collection::vec(any::<u8>(), 0..40), any::<u8>())
            .prop_map(|(bytes, chunk)| Op::PeerBytes { bytes, chunk }),
        1 => (proptest::collection::vec(any::<u8>(), 0..40), any::<u8>())
            .prop_map(|(bytes, chunk)| Op::PeerRaw { bytes, chunk }),
        8 => (any::<u8>(), any::<u8>()).prop_map(|(pick, how)| Op::Answer { pick, how }),
        6 => (0u16..300).prop_map(|ms| Op::Advance { ms }),
        9 => prop_oneof![Just(0u16), 1u16..100].prop_map(|max| Op::Transmit { max }),
        1 => Just(Op::Close),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (
        any::<bool>(),
        proptest::bool::weighted(0.8),
        1usize..8,
        proptest::option::of(1u64..500),
        any::<bool>(),
    )
        .prop_map(|(cl, batches, max_batch_len, timeout, reject)| Config {
            framing: if cl {
                Framing::ContentLength
            } else {
                Framing::Line
            },
            batches,
            max_batch_len,
            request_timeout: timeout.map(Duration::from_millis),
            duplicate_ids: if reject {
                DuplicateIdPolicy::Reject
            } else {
                DuplicateIdPolicy::Process
            },
            ..Config::default()
        })
}

fn run(config: Config, ops: &[Op]) -> Result<model_ops::Counts, TestCaseError> {
    let mut model = Model::new(config);
    for (i, op) in ops.iter().enumerate() {
        model
            .apply(op)
            .map_err(|e| TestCaseError::fail(format!("op {i} {op:?}: {e}")))?;
    }
    model
        .finish()
        .map_err(|e| TestCaseError::fail(format!("at close: {e}")))?;
    Ok(model.counts)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn connection_matches_model(config in config(), ops in proptest::collection::vec(op(), 1..80)) {
        run(config, &ops)?;
    }
}

/// The operation mix reaches every behaviour the model checks.
#[test]
fn model_sequences_exercise_everything() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut total = model_ops::Counts::default();
    for _ in 0..150 {
        let config = config().new_tree(&mut runner).unwrap().current();
        let ops = proptest::collection::vec(op(), 40..80)
            .new_tree(&mut runner)
            .unwrap()
            .current();
        let c = run(config, &ops).unwrap();
        total.responses += c.responses;
        total.timeouts += c.timeouts;
        total.cancels += c.cancels;
        total.closed += c.closed;
        total.inbound_requests += c.inbound_requests;
        total.busy += c.busy;
        total.unknown += c.unknown;
        total.would_block += c.would_block;
        total.problems += c.problems;
    }
    println!("{total:?}");
    for (what, n) in [
        ("responses", total.responses),
        ("timeouts", total.timeouts),
        ("cancels", total.cancels),
        ("closed", total.closed),
        ("inbound requests", total.inbound_requests),
        ("busy", total.busy),
        ("unknown responses", total.unknown),
        ("backpressure", total.would_block),
    ] {
        assert!(n > 0, "never exercised {what}: {total:?}");
    }
}
