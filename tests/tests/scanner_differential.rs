//! Differential tests: `rpcwire::wire::scan` against serde_json on accept/reject.
//!
//! The oracle is `serde_json::from_slice::<IgnoredAny>(bytes).is_ok() && str::from_utf8(bytes).is_ok()`.
//! Checked empirically against serde_json 1.0.154:
//! * `IgnoredAny` skips strings without validating their UTF-8 (it accepts `"\xff"`), while the
//!   scanner rejects malformed UTF-8 everywhere; hence the `from_utf8` conjunct (outside strings
//!   both reject any non-ASCII byte anyway).
//! * `IgnoredAny` accepts lone surrogate escapes (`"\uD800"`), and so does the scanner: no filter
//!   is needed for them.
//! * `IgnoredAny` has no depth limit (a 200-deep array is accepted). Generated values stay below
//!   depth 60 (mutations add at most a few levels), under the scanner's `DEFAULT_MAX_DEPTH` of 64.

use proptest::prelude::*;
use proptest::sample::Index;
use rpcwire::wire::scan::{
    scan_number, scan_string, scan_value, skip_value_trusted, skip_ws, unescape_into,
    unescaped_len, validate, UnescapeError, DEFAULT_MAX_DEPTH,
};
use serde::de::IgnoredAny;
use serde_json::Value;

/// What a strict RFC 8259 validator should say, according to serde_json.
fn oracle(bytes: &[u8]) -> bool {
    serde_json::from_slice::<IgnoredAny>(bytes).is_ok() && std::str::from_utf8(bytes).is_ok()
}

fn check_agrees(bytes: &[u8]) -> Result<(), TestCaseError> {
    let ours = validate(bytes, DEFAULT_MAX_DEPTH);
    let theirs = oracle(bytes);
    prop_assert_eq!(
        ours.is_ok(),
        theirs,
        "scanner {:?} vs serde_json {} on {:?}",
        ours,
        theirs,
        String::from_utf8_lossy(bytes)
    );
    Ok(())
}

/// Tiny deterministic RNG for whitespace and escaping choices.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        // xorshift64*; the state must not be 0.
        let mut x = self.0 | 1;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn ws(rng: &mut Rng, out: &mut Vec<u8>) {
    if rng.below(3) == 0 {
        for _ in 0..rng.below(4) {
            out.push(b" \t\n\r"[rng.below(4) as usize]);
        }
    }
}

fn hex4(rng: &mut Rng, unit: u32, out: &mut Vec<u8>) {
    let s = if rng.below(2) == 0 {
        format!("\\u{unit:04x}")
    } else {
        format!("\\u{unit:04X}")
    };
    out.extend_from_slice(s.as_bytes());
}

/// Emits `s` as a JSON string, choosing escapes at random (all of them valid).
fn emit_str(s: &str, rng: &mut Rng, out: &mut Vec<u8>) {
    out.push(b'"');
    for c in s.chars() {
        match c {
            '"' => out.extend_from_slice(b"\\\""),
            '\\' => out.extend_from_slice(b"\\\\"),
            '\u{8}' if rng.below(2) == 0 => out.extend_from_slice(b"\\b"),
            '\u{c}' if rng.below(2) == 0 => out.extend_from_slice(b"\\f"),
            '\n' if rng.below(2) == 0 => out.extend_from_slice(b"\\n"),
            '\r' if rng.below(2) == 0 => out.extend_from_slice(b"\\r"),
            '\t' if rng.below(2) == 0 => out.extend_from_slice(b"\\t"),
            '/' if rng.below(2) == 0 => out.extend_from_slice(b"\\/"),
            c if (c as u32) < 0x20 || rng.below(4) == 0 => {
                let mut units = [0u16; 2];
                for &u in c.encode_utf16(&mut units).iter() {
                    hex4(rng, u32::from(u), out);
                }
            }
            c => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out.push(b'"');
}

/// Emits `v` with random whitespace and random (valid) escaping.
fn emit(v: &Value, rng: &mut Rng, out: &mut Vec<u8>) {
    match v {
        Value::Null | Value::Bool(_) | Value::Number(_) => {
            out.extend_from_slice(v.to_string().as_bytes());
        }
        Value::String(s) => emit_str(s, rng, out),
        Value::Array(items) => {
            out.push(b'[');
            ws(rng, out);
            for (k, item) in items.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                    ws(rng, out);
                }
                emit(item, rng, out);
                ws(rng, out);
            }
            out.push(b']');
        }
        Value::Object(map) => {
            out.push(b'{');
            ws(rng, out);
            for (k, (key, item)) in map.iter().enumerate() {
                if k > 0 {
                    out.push(b',');
                    ws(rng, out);
                }
                emit_str(key, rng, out);
                ws(rng, out);
                out.push(b':');
                ws(rng, out);
                emit(item, rng, out);
                ws(rng, out);
            }
            out.push(b'}');
        }
    }
}

fn arb_leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>().prop_filter_map("finite", |f| serde_json::Number::from_f64(f)
            .map(Value::Number)),
        any::<String>().prop_map(Value::String),
        "[a-z\"\\\\/\u{0}-\u{1f}é€😀]{0,12}".prop_map(Value::String),
    ]
}

fn arb_value() -> impl Strategy<Value = Value> {
    arb_leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

/// A value wrapped in up to 50 extra arrays/objects: total depth stays below 60.
fn arb_nested_value() -> impl Strategy<Value = Value> {
    (arb_value(), prop::collection::vec(any::<bool>(), 0..50)).prop_map(|(mut v, wraps)| {
        for obj in wraps {
            v = if obj {
                let mut m = serde_json::Map::new();
                m.insert("k".to_owned(), v);
                Value::Object(m)
            } else {
                Value::Array(vec![v])
            };
        }
        v
    })
}

/// Valid JSON texts built from generated values, in several spellings.
fn arb_text() -> impl Strategy<Value = Vec<u8>> {
    (arb_nested_value(), any::<u64>(), 0u8..3).prop_map(|(v, seed, style)| match style {
        0 => serde_json::to_vec(&v).expect("serialize"),
        1 => serde_json::to_vec_pretty(&v).expect("serialize"),
        _ => {
            let mut rng = Rng(seed);
            let mut out = Vec::new();
            ws(&mut rng, &mut out);
            emit(&v, &mut rng, &mut out);
            ws(&mut rng, &mut out);
            out
        }
    })
}

#[derive(Debug, Clone)]
enum Mutation {
    Insert(Index, u8),
    Delete(Index),
    Replace(Index, u8),
    Truncate(Index),
}

fn arb_byte() -> impl Strategy<Value = u8> {
    prop_oneof![
        any::<u8>(),
        prop::sample::select(
            b"[]{}\",:\\ \t\n\r0123456789-+.eEtrufalsn\x00\x1f\x7f\x80\xbf\xc0\xc2\xe0\xed\xef\xf0\xf4\xf5\xff"
                .to_vec()
        ),
    ]
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (any::<Index>(), arb_byte()).prop_map(|(i, b)| Mutation::Insert(i, b)),
        3 => any::<Index>().prop_map(Mutation::Delete),
        3 => (any::<Index>(), arb_byte()).prop_map(|(i, b)| Mutation::Replace(i, b)),
        1 => any::<Index>().prop_map(Mutation::Truncate),
    ]
}

fn apply(text: &mut Vec<u8>, m: &Mutation) {
    match m {
        Mutation::Insert(i, b) => {
            let at = i.index(text.len() + 1);
            text.insert(at, *b);
        }
        Mutation::Delete(i) if !text.is_empty() => {
            let at = i.index(text.len());
            text.remove(at);
        }
        Mutation::Replace(i, b) if !text.is_empty() => {
            let at = i.index(text.len());
            text[at] = *b;
        }
        Mutation::Truncate(i) => {
            let at = i.index(text.len() + 1);
            text.truncate(at);
        }
        _ => {}
    }
}

/// 2000 cases per property (about 6 s in a debug build); `PROPTEST_CASES` overrides it for
/// longer runs.
fn config() -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    ProptestConfig::with_cases(cases)
}

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

proptest! {
    #![proptest_config(config())]

    /// Generated valid texts: both accept, and the span is the text minus outer whitespace.
    #[test]
    fn valid_values_agree(text in arb_text()) {
        prop_assert!(oracle(&text), "oracle rejected generated text");
        check_agrees(&text)?;
        let lead = text.iter().take_while(|&&b| is_ws(b)).count();
        let trail = text.iter().rev().take_while(|&&b| is_ws(b)).count();
        let span = scan_value(&text, 0, DEFAULT_MAX_DEPTH);
        prop_assert_eq!(span, Ok((lead, text.len() - trail)));
        prop_assert_eq!(skip_value_trusted(&text, 0), (lead, text.len() - trail));
    }

    /// Mutated texts: accept/reject agrees with serde_json; no panics; trusted skip stays in bounds.
    #[test]
    fn mutated_values_agree(
        text in arb_text(),
        muts in prop::collection::vec(arb_mutation(), 1..4),
    ) {
        let mut text = text;
        for m in &muts {
            apply(&mut text, m);
        }
        check_agrees(&text)?;
        let (s, e) = skip_value_trusted(&text, 0);
        prop_assert!(s <= e && e <= text.len());
        // Trusted skipping only promises the right span on valid input (a valid prefix such
        // as `1` in `1\x000` is not enough: the skip does not know where a bad scalar ends).
        if validate(&text, DEFAULT_MAX_DEPTH).is_ok() {
            prop_assert_eq!(Ok((s, e)), scan_value(&text, 0, DEFAULT_MAX_DEPTH));
        }
    }

    /// Number grammar: random strings over number characters.
    #[test]
    fn number_like_tokens_agree(tok in "[-+0-9.eE]{1,8}", wrap in any::<bool>()) {
        let text = if wrap { format!("[{tok}]") } else { tok };
        check_agrees(text.as_bytes())?;
    }

    /// Valid numbers of any size are accepted by both.
    #[test]
    fn valid_numbers_accepted(
        tok in "-?(0|[1-9][0-9]{0,30})(\\.[0-9]{1,20})?([eE][+-]?[0-9]{1,6})?",
    ) {
        prop_assert!(validate(tok.as_bytes(), DEFAULT_MAX_DEPTH).is_ok());
        check_agrees(tok.as_bytes())?;
    }

    /// Random short strings over JSON's structural alphabet.
    #[test]
    fn structural_noise_agrees(bytes in prop::collection::vec(arb_byte(), 0..24)) {
        check_agrees(&bytes)?;
    }

    /// Raw bytes inside a string, drawn from the UTF-8 boundary values (lead bytes around each
    /// range edge, continuation bytes around 0x8F/0x90/0x9F/0xA0), so that overlongs, encoded
    /// surrogates, values above U+10FFFF and truncations all come up often.
    #[test]
    fn utf8_edges_agree(
        pieces in prop::collection::vec(
            (
                prop::sample::select(vec![
                    b'a', b'"', b'\\', 0x7f, 0x80, 0xbf, 0xc0, 0xc1, 0xc2, 0xdf, 0xe0, 0xe1,
                    0xec, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf3, 0xf4, 0xf5, 0xff,
                ]),
                prop::collection::vec(
                    prop::sample::select(vec![0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0]),
                    0..4,
                ),
            ),
            0..4,
        ),
        wrap in any::<bool>(),
    ) {
        let body: Vec<u8> = pieces
            .into_iter()
            .flat_map(|(lead, rest)| std::iter::once(lead).chain(rest))
            .collect();
        let mut text = Vec::with_capacity(body.len() + 4);
        if wrap {
            text.push(b'[');
        }
        text.push(b'"');
        text.extend_from_slice(&body);
        text.push(b'"');
        if wrap {
            text.push(b']');
        }
        check_agrees(&text)?;
    }

    /// Any bytes, any position: every entry point returns in-bounds offsets and never panics.
    #[test]
    fn arbitrary_input_in_bounds(
        bytes in prop::collection::vec(arb_byte(), 0..32),
        pos in 0usize..40,
        out_len in 0usize..16,
    ) {
        let len = bytes.len();
        match scan_value(&bytes, pos, DEFAULT_MAX_DEPTH) {
            Ok((s, e)) => prop_assert!(s < e && e <= len),
            Err(err) => prop_assert!(err.offset <= len),
        }
        match scan_string(&bytes, pos) {
            Ok(e) => prop_assert!(pos < e && e <= len),
            Err(err) => prop_assert!(err.offset <= len),
        }
        match scan_number(&bytes, pos) {
            Ok(e) => prop_assert!(pos < e && e <= len),
            Err(err) => prop_assert!(err.offset <= len),
        }
        let (s, e) = skip_value_trusted(&bytes, pos);
        prop_assert!(s <= e && e <= len);
        prop_assert!(skip_ws(&bytes, pos) <= len);
        let mut out = vec![0u8; out_len];
        let n = unescaped_len(&bytes);
        match unescape_into(&bytes, &mut out) {
            Ok(w) => prop_assert_eq!(Ok(w), n),
            Err(UnescapeError::BufferTooSmall { required }) => {
                prop_assert!(required > out_len);
                prop_assert_eq!(Ok(required), n);
            }
            Err(other) => prop_assert_eq!(Err(other), n),
        }
    }

    /// Strings with random escaping: the scanner accepts them and unescaping restores the text.
    #[test]
    fn unescape_round_trips(s in any::<String>(), seed in any::<u64>()) {
        let mut text = Vec::new();
        emit_str(&s, &mut Rng(seed), &mut text);
        prop_assert_eq!(scan_string(&text, 0), Ok(text.len()));
        let contents = &text[1..text.len() - 1];
        prop_assert_eq!(unescaped_len(contents), Ok(s.len()));
        let mut out = vec![0u8; s.len()];
        prop_assert_eq!(unescape_into(contents, &mut out), Ok(s.len()));
        prop_assert_eq!(&out[..], s.as_bytes());
        let parsed: String = serde_json::from_slice(&text).expect("serde_json parses it");
        prop_assert_eq!(parsed, s);
    }
}
