//! Raw bytes, in any chunking, into the router: whatever arrives, the answers keep the
//! protocol (one per request, valid JSON-RPC, batches as specified, no panic, no stall,
//! memory back to idle).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire_testkit::Case;

fuzz_target!(|data: &[u8]| {
    let case = Case::from_fuzz_bytes(data);
    if let Err(violation) = rpcwire_fuzz_template::harness().check(&case) {
        // The case as sent, and as a test to paste into tests/ (this crate's harness()).
        let test = case.to_test("rpcwire_fuzz_template::harness()", &violation.to_string());
        panic!("{violation}\n{case:?}\n{test}");
    }
});
