//! The scanner against the third-party JSON parsing corpus (`shared/testdata/json-test-suite`).
//!
//! Every `y_` file must validate, every `n_` file must be rejected, and every `i_` file must
//! come back without panicking with the outcome pinned in [`I_DECISIONS`] (the same table is in
//! the `rpcwire::wire::scan` module docs).

use std::collections::BTreeMap;
use std::path::Path;

use rpcwire::wire::scan::{validate, ScanErrorKind, DEFAULT_MAX_DEPTH};

const SUITE_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../shared/testdata/json-test-suite/test_parsing"
);

const ACCEPT: bool = true;
const REJECT: bool = false;

/// Expected outcome of each implementation-defined file, with the reason.
const I_DECISIONS: &[(&str, bool, &str)] = &[
    (
        "i_number_double_huge_neg_exp.json",
        ACCEPT,
        "numbers are kept raw, any exponent",
    ),
    (
        "i_number_huge_exp.json",
        ACCEPT,
        "numbers are kept raw, any exponent",
    ),
    (
        "i_number_neg_int_huge_exp.json",
        ACCEPT,
        "numbers are kept raw, any exponent",
    ),
    (
        "i_number_pos_double_huge_exp.json",
        ACCEPT,
        "numbers are kept raw, any exponent",
    ),
    (
        "i_number_real_neg_overflow.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_number_real_pos_overflow.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_number_real_underflow.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_number_too_big_neg_int.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_number_too_big_pos_int.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_number_very_big_negative_int.json",
        ACCEPT,
        "numbers are kept raw, any magnitude",
    ),
    (
        "i_object_key_lone_2nd_surrogate.json",
        ACCEPT,
        "lone surrogate escape is valid syntax; unescape reports LoneSurrogate",
    ),
    (
        "i_string_1st_surrogate_but_2nd_missing.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_1st_valid_surrogate_2nd_invalid.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_incomplete_surrogate_and_escape_valid.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_incomplete_surrogate_pair.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_incomplete_surrogates_escape_valid.json",
        ACCEPT,
        "lone surrogate escapes are valid syntax",
    ),
    (
        "i_string_invalid_lonely_surrogate.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_invalid_surrogate.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_inverted_surrogates_U+1D11E.json",
        ACCEPT,
        "lone surrogate escapes are valid syntax",
    ),
    (
        "i_string_lone_second_surrogate.json",
        ACCEPT,
        "lone surrogate escape is valid syntax",
    ),
    (
        "i_string_UTF-8_invalid_sequence.json",
        REJECT,
        "invalid UTF-8 lead byte in string",
    ),
    (
        "i_string_UTF8_surrogate_U+D800.json",
        REJECT,
        "UTF-8-encoded surrogate is not UTF-8",
    ),
    ("i_string_invalid_utf-8.json", REJECT, "0xFF is never UTF-8"),
    (
        "i_string_iso_latin_1.json",
        REJECT,
        "Latin-1 byte is not UTF-8",
    ),
    (
        "i_string_lone_utf8_continuation_byte.json",
        REJECT,
        "stray continuation byte",
    ),
    (
        "i_string_not_in_unicode_range.json",
        REJECT,
        "code point above U+10FFFF",
    ),
    (
        "i_string_overlong_sequence_2_bytes.json",
        REJECT,
        "overlong UTF-8",
    ),
    (
        "i_string_overlong_sequence_6_bytes.json",
        REJECT,
        "overlong 6-byte form is not UTF-8",
    ),
    (
        "i_string_overlong_sequence_6_bytes_null.json",
        REJECT,
        "overlong 6-byte form is not UTF-8",
    ),
    (
        "i_string_truncated-utf-8.json",
        REJECT,
        "truncated UTF-8 sequence",
    ),
    (
        "i_string_UTF-16LE_with_BOM.json",
        REJECT,
        "only UTF-8 JSON is accepted",
    ),
    (
        "i_string_utf16BE_no_BOM.json",
        REJECT,
        "only UTF-8 JSON is accepted",
    ),
    (
        "i_string_utf16LE_no_BOM.json",
        REJECT,
        "only UTF-8 JSON is accepted",
    ),
    (
        "i_structure_UTF-8_BOM_empty_object.json",
        REJECT,
        "a byte order mark is rejected",
    ),
    (
        "i_structure_500_nested_arrays.json",
        REJECT,
        "deeper than DEFAULT_MAX_DEPTH (TooDeep)",
    ),
];

#[test]
fn json_test_suite() {
    let dir = Path::new(SUITE_DIR);
    if !dir.is_dir() {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("JSON test suite not found at {SUITE_DIR} (required in CI)");
        }
        eprintln!("SKIPPED: JSON test suite not found at {SUITE_DIR}");
        return;
    }

    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .expect("read test suite dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    entries.sort();

    let decisions: BTreeMap<&str, (bool, &str)> =
        I_DECISIONS.iter().map(|&(n, a, r)| (n, (a, r))).collect();
    assert_eq!(
        decisions.len(),
        I_DECISIONS.len(),
        "duplicate names in I_DECISIONS"
    );

    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new(); // prefix -> (accepted, rejected)
    let mut failures = Vec::new();
    let mut seen_i = Vec::new();

    for path in &entries {
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let bytes = std::fs::read(path).expect("read test file");
        let result = validate(&bytes, DEFAULT_MAX_DEPTH);
        let accepted = result.is_ok();
        let prefix = if name.starts_with("y_") {
            "y_"
        } else if name.starts_with("n_") {
            "n_"
        } else if name.starts_with("i_") {
            "i_"
        } else {
            continue;
        };
        let c = counts.entry(prefix).or_default();
        if accepted {
            c.0 += 1;
        } else {
            c.1 += 1;
        }
        match prefix {
            "y_" if !accepted => failures.push(format!("{name}: must accept, got {result:?}")),
            "n_" if accepted => failures.push(format!("{name}: must reject, was accepted")),
            "i_" => {
                seen_i.push(name.clone());
                match decisions.get(name.as_str()) {
                    None => failures.push(format!(
                        "{name}: i_ file missing from I_DECISIONS (outcome: {result:?})"
                    )),
                    Some(&(want, reason)) if want != accepted => failures.push(format!(
                        "{name}: expected {} ({reason}), got {result:?}",
                        if want { "accept" } else { "reject" }
                    )),
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }

    for &(name, _, _) in I_DECISIONS {
        if !seen_i.iter().any(|s| s == name) {
            failures.push(format!(
                "{name}: listed in I_DECISIONS but not in the suite"
            ));
        }
    }

    for (prefix, (acc, rej)) in &counts {
        eprintln!(
            "{prefix}: {} files, {acc} accepted, {rej} rejected",
            acc + rej
        );
    }
    assert!(
        counts.get("y_").is_some_and(|c| c.0 > 0) && counts.get("n_").is_some_and(|c| c.1 > 0),
        "suite directory holds no y_/n_ files"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// The pinned `TooDeep` decision is really about depth, not some other error.
#[test]
fn deep_nesting_files_fail_with_too_deep() {
    let path = Path::new(SUITE_DIR).join("i_structure_500_nested_arrays.json");
    let Ok(bytes) = std::fs::read(&path) else {
        if std::env::var("CI").as_deref() == Ok("true") {
            panic!("{} not found (required in CI)", path.display());
        }
        eprintln!("SKIPPED: {} not found", path.display());
        return;
    };
    let err = validate(&bytes, DEFAULT_MAX_DEPTH).unwrap_err();
    assert_eq!(err.kind, ScanErrorKind::TooDeep);
    assert_eq!(err.offset, DEFAULT_MAX_DEPTH);
    assert!(
        validate(&bytes, 500).is_err(),
        "500 exceeds MAX_DEPTH_LIMIT, clamped"
    );
    assert!(validate(&bytes, rpcwire::wire::scan::MAX_DEPTH_LIMIT).is_err());
}
