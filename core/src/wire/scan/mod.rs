//! Strict RFC 8259 JSON scanner: validation and span finding without allocation.
//!
//! # Why hand-written
//!
//! The core must validate untrusted JSON and hand out byte spans (`params`, `result`, ids) that
//! borrow the input. No existing crate does all of these at once: validate zero-copy, without
//! allocation, without recursion (so adversarial nesting cannot overflow the stack), with a
//! configurable depth limit, and return the span of each value. serde-json-core deserializes into
//! a target type through recursive calls and has no span API; serde_json allocates, recurses,
//! and its `IgnoredAny` path does not even check UTF-8 inside strings. So this module is an
//! iterative scanner over bytes, using only `core` and no `unsafe`.
//!
//! # What it does
//!
//! * [`validate`] checks that a whole buffer is exactly one JSON text (`ws value ws`).
//! * [`scan_value`] validates one value at an offset and returns its `(start, end)` span.
//! * [`scan_string`] / [`scan_number`] validate a single string / number.
//! * [`skip_value_trusted`] skips an already-validated value quickly (no checks, never panics).
//! * [`unescape_into`] / [`unescaped_len`] decode the contents of a string into caller storage.
//!
//! Nesting is tracked with a fixed bit stack of [`MAX_DEPTH_LIMIT`] bits (one bit per open
//! container: object or array), so 100 000 `[` in a row end in [`ScanErrorKind::TooDeep`] after
//! `max_depth` bytes, with constant stack use.
//!
//! Speed comes from one pass over the bytes with tight loops: on 64-bit targets string contents
//! are skipped eight bytes at a time (a word-at-a-time mask finds the next `"`, `\` or control
//! byte; see [`WORD_AT_A_TIME`] for smaller targets), and UTF-8 is
//! checked afterwards with one call to `core::str::from_utf8` over the scanned span, only if
//! some string held a non-ASCII byte (outside strings any non-ASCII byte is an error anyway).
//!
//! ```
//! use rpcwire::wire::scan::{scan_value, validate, ScanErrorKind, DEFAULT_MAX_DEPTH};
//!
//! let text = br#"  {"jsonrpc": "2.0", "params": [1, 2.5e3, "\u00e9"]}  "#;
//! assert!(validate(text, DEFAULT_MAX_DEPTH).is_ok());
//!
//! // Spans borrow the input: find the value after `"params":`.
//! let at = text.windows(9).position(|w| w == b"\"params\":").unwrap() + 9;
//! let (start, end) = scan_value(text, at, DEFAULT_MAX_DEPTH).unwrap();
//! assert_eq!(&text[start..end], br#"[1, 2.5e3, "\u00e9"]"#);
//!
//! let err = validate(b"[01]", DEFAULT_MAX_DEPTH).unwrap_err();
//! assert_eq!(err.kind, ScanErrorKind::InvalidNumber);
//! assert_eq!(err.offset, 2);
//! ```
//!
//! # Strictness
//!
//! Everything RFC 8259 leaves to the implementation is decided as follows:
//!
//! * **Numbers** of any magnitude, precision or exponent are accepted; they are kept raw.
//! * **Lone surrogate escapes** such as `"\uD800"` are accepted by the scanner (they are
//!   syntactically valid escapes), but [`unescape_into`] reports [`UnescapeError::LoneSurrogate`]
//!   for them, since they cannot be turned into UTF-8.
//! * **Raw bytes must be UTF-8**: overlong forms, UTF-8-encoded surrogates (`ED A0..BF ..`),
//!   code points above U+10FFFF, stray continuation bytes and truncated sequences inside strings
//!   are [`ScanErrorKind::InvalidUtf8`]; any non-ASCII byte outside a string is
//!   [`ScanErrorKind::UnexpectedByte`].
//! * **A byte order mark** (UTF-8 `EF BB BF` or UTF-16) is rejected: RFC 8259 §8.1 says
//!   implementations must not add one, and a JSON-RPC peer has no reason to send one.
//! * **Nesting** deeper than the configured `max_depth` (default [`DEFAULT_MAX_DEPTH`], at most
//!   [`MAX_DEPTH_LIMIT`]) is [`ScanErrorKind::TooDeep`].
//!
//! The `i_` ("implementation defined") files of the JSON test suite therefore come out as:
//!
//! | `i_` files | outcome | reason |
//! | --- | --- | --- |
//! | `i_number_*` (huge exponents, huge integers, overflow, underflow) | accept | numbers are kept raw, any magnitude |
//! | `i_object_key_lone_2nd_surrogate`, `i_string_1st_surrogate_but_2nd_missing`, `i_string_1st_valid_surrogate_2nd_invalid`, `i_string_incomplete_surrogate*`, `i_string_invalid_lonely_surrogate`, `i_string_invalid_surrogate`, `i_string_inverted_surrogates_U+1D11E`, `i_string_lone_second_surrogate` | accept | lone surrogate `\u` escapes are syntactically valid; decoding reports `LoneSurrogate` |
//! | `i_string_UTF-8_invalid_sequence`, `i_string_UTF8_surrogate_U+D800`, `i_string_invalid_utf-8`, `i_string_iso_latin_1`, `i_string_lone_utf8_continuation_byte`, `i_string_not_in_unicode_range`, `i_string_overlong_sequence_*`, `i_string_truncated-utf-8` | reject | raw bytes in strings must be well-formed UTF-8 |
//! | `i_string_UTF-16LE_with_BOM`, `i_string_utf16BE_no_BOM`, `i_string_utf16LE_no_BOM` | reject | JSON exchanged between systems is UTF-8 only |
//! | `i_structure_UTF-8_BOM_empty_object` | reject | a byte order mark is not accepted |
//! | `i_structure_500_nested_arrays` | reject | deeper than `DEFAULT_MAX_DEPTH` (64), and than `MAX_DEPTH_LIMIT`: `TooDeep` |
//!
//! # Error offsets
//!
//! [`ScanError::offset`] is the offset in the input of: the opening `\` of a bad escape, the
//! first byte of a malformed UTF-8 sequence, the opening bracket that is one level too deep,
//! `input.len()` for [`ScanErrorKind::UnexpectedEnd`] (the input ended while a value, including
//! a number such as `1.` or `-`, was still incomplete), and otherwise the offending byte. When
//! the input has several errors, the first one in input order is reported.
//!
//! # Layout
//!
//! `words` holds the word-at-a-time helpers and `error` the errors; `scanner` is the validating
//! scanner (on both), `trusted` the fast skip over validated text (on the scanner's
//! short-string path), and `unescape` the decoder, which stands alone.

mod error;
mod scanner;
mod trusted;
mod unescape;
mod words;

pub use self::error::{ScanError, ScanErrorKind};
pub(crate) use self::scanner::{flat_container, message_key, short_string};
pub use self::scanner::{
    scan_number, scan_string, scan_value, skip_ws, validate, DEFAULT_MAX_DEPTH, MAX_DEPTH_LIMIT,
};
pub use self::trusted::skip_value_trusted;
pub(crate) use self::unescape::unescaped_eq;
pub use self::unescape::{unescape_into, unescaped_len, UnescapeError};
pub(crate) use self::words::load8;
pub use self::words::WORD_AT_A_TIME;
