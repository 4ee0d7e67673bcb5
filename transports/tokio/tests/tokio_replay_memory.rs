//! The nonce cache of signed requests under a flood of distinct nonces: 100 000 signed
//! requests leave it within its bounds in entries and in bytes (counted by the allocator),
//! and it gives the memory back once the window has passed.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::alloc::System;
use std::time::{Duration, UNIX_EPOCH};

use cap::Cap;
use rpcwire_tokio::signing::{RequestSigning, SignatureError};

#[global_allocator]
static ALLOCATOR: Cap<System> = Cap::new(System, usize::MAX);

#[test]
fn a_flood_of_distinct_nonces_stays_within_the_bounds() {
    const OVERALL: usize = 20_000;
    const PER_CALLER: usize = 5_000;
    let signing = RequestSigning::new(b"flood test key".to_vec())
        .window(Duration::from_secs(60))
        .max_nonces(OVERALL, PER_CALLER);
    let body = br#"{"jsonrpc":"2.0","method":"ping","id":1}"#;
    let now = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
    // Signed outside the measured window: only the cache's own memory is counted.
    let requests: Vec<_> = (0..100_000)
        .map(|n| signing.sign(body, now, &format!("nonce-{n}")))
        .collect();
    let baseline = ALLOCATOR.allocated();
    let (mut passed, mut busy) = (0, 0);
    let mut peak = 0;
    for (n, headers) in requests.iter().enumerate() {
        // Ten callers, in turn.
        let caller = format!("caller-{}", n % 10);
        match signing.verify(&caller, headers, body, now) {
            Ok(()) => passed += 1,
            Err(SignatureError::Busy) => busy += 1,
            Err(other) => panic!("request {n}: {other}"),
        }
        if n % 1000 == 0 {
            peak = peak.max(ALLOCATOR.allocated().saturating_sub(baseline));
        }
        assert!(signing.cached_nonces() <= OVERALL);
    }
    let held = ALLOCATOR.allocated().saturating_sub(baseline);
    peak = peak.max(held);
    assert_eq!(
        passed, OVERALL,
        "the overall bound is reached first (10 callers x 5 000 > 20 000)"
    );
    assert_eq!(busy, 100_000 - OVERALL);
    // A 32-byte digest, a shared caller name, an expiry and table overhead per entry: well
    // under 256 bytes each.
    let bound = OVERALL * 256;
    println!("nonce cache: {held} bytes held for {OVERALL} entries (peak {peak})");
    assert!(
        peak <= bound,
        "nonce cache peaked at {peak} bytes, bound {bound}"
    );

    // A replay of an accepted one is still refused while the window lasts.
    let caller = "caller-0";
    assert_eq!(
        signing.verify(caller, &requests[0], body, now),
        Err(SignatureError::Replayed)
    );

    // Once the window has passed twice over, the cache empties and gives its memory back.
    let later = now + Duration::from_secs(200);
    let fresh = signing.sign(body, later, "after");
    assert_eq!(signing.verify(caller, &fresh, body, later), Ok(()));
    assert_eq!(signing.cached_nonces(), 1);
    let after = ALLOCATOR.allocated().saturating_sub(baseline);
    assert!(
        after < held / 4,
        "memory not given back: {after} of {held} bytes"
    );
}
