//! The JSON scanner against serde_json: accept/reject must agree on any input nested less
//! than 60 deep (the scanner's default limit is 64; serde_json's is 128). The oracle is
//! `serde_json::from_slice::<IgnoredAny>` plus UTF-8 validity of the whole input (`IgnoredAny`
//! does not check UTF-8 inside strings; the scanner does). Both reject a UTF-8 byte order
//! mark. Accepted input also gives a span covering the value, and `RawJson::parse` agrees.
//! The message parser validates objects on its own walk (with an inline path for short
//! strings): it must accept and reject exactly the same texts; batches (walked element by
//! element) with the very same error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::wire::scan::{scan_value, skip_ws, validate, DEFAULT_MAX_DEPTH};
use rpcwire::wire::{parse, ParseLimits, RawJson};
use rpcwire_fuzz::nesting_depth;
use serde::de::IgnoredAny;

fuzz_target!(|data: &[u8]| {
    if nesting_depth(data) >= 60 {
        return;
    }
    let ours = validate(data, DEFAULT_MAX_DEPTH);
    let theirs =
        serde_json::from_slice::<IgnoredAny>(data).is_ok() && std::str::from_utf8(data).is_ok();
    assert_eq!(
        ours.is_ok(),
        theirs,
        "scanner {ours:?} vs serde_json {theirs} on {:?}",
        String::from_utf8_lossy(data)
    );
    let parsed = parse(data, ParseLimits::default());
    assert_eq!(
        parsed.is_ok(),
        ours.is_ok(),
        "parse {parsed:?} vs scanner {ours:?} on {:?}",
        String::from_utf8_lossy(data)
    );
    // A batch is validated one element at a time, with the whole scan's error.
    if data.get(skip_ws(data, 0)) == Some(&b'[') {
        assert_eq!(
            parsed.err(),
            ours.err(),
            "batch walk vs scanner on {:?}",
            String::from_utf8_lossy(data)
        );
    }
    if ours.is_ok() {
        let start = skip_ws(data, 0);
        let (s, e) = scan_value(data, start, DEFAULT_MAX_DEPTH).expect("validated input scans");
        assert_eq!(s, start);
        assert_eq!(skip_ws(data, e), data.len());
        let text = std::str::from_utf8(data).expect("validated input is UTF-8");
        let raw = RawJson::parse(text, DEFAULT_MAX_DEPTH).expect("RawJson agrees with validate");
        assert_eq!(raw.as_bytes(), &data[s..e]);
    }
});
