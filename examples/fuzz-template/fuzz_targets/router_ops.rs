//! Structured operations: requests, notifications, batches and raw frames over the router's
//! methods (`arbitrary`), written in arbitrary chunks.
#![no_main]

use libfuzzer_sys::arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use rpcwire_fuzz_template::{harness, METHODS};
use rpcwire_testkit::Case;

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(case) = Case::arbitrary_for(&mut u, METHODS) else {
        return;
    };
    if let Err(violation) = harness().check(&case) {
        // The case as sent, and as a test to paste into tests/ (this crate's harness()).
        let test = case.to_test("rpcwire_fuzz_template::harness()", &violation.to_string());
        panic!("{violation}\n{case:?}\n{test}");
    }
});
