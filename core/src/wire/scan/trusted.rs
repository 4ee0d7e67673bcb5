//! Trusted skipping: the end of a value already known to be valid, found fast, without a
//! check (and without a panic or a hang on any input).

use super::scanner::{short_string, skip_ws};
use super::words::{load8, quote_or_backslash, WORD_AT_A_TIME};

/// Fast skip of a value that is *already known valid* (e.g. validated earlier), starting at
/// `pos` (leading whitespace skipped). Returns `(start, end)` like
/// [`scan_value`](super::scan_value).
///
/// Nothing is validated, but it never panics and always terminates on any input: on invalid
/// input it returns some `start <= end <= input.len()`.
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub fn skip_value_trusted(input: &[u8], pos: usize) -> (usize, usize) {
    let start = skip_ws(input, pos);
    if WORD_AT_A_TIME && matches!(input.get(start), Some(b'-' | b'0'..=b'9')) {
        // A number (the commonest params element), inline on hosts: valid JSON numbers are
        // made of these bytes only, and what follows one is none of them.
        let mut i = start + 1;
        while let Some(b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') = input.get(i) {
            i += 1;
        }
        return (start, i);
    }
    if WORD_AT_A_TIME && input.get(start) == Some(&b'"') {
        // Short plain strings (names, versions, method names) in two word loads.
        if let Some(end) = short_string(input, start) {
            return (start, end);
        }
    }
    skip_non_number_trusted(input, start)
}

/// [`skip_value_trusted`] for everything but numbers on hosts; `start` is past whitespace.
/// Elsewhere it is all of it, inlined back into its one caller (no second function in flash).
#[cfg_attr(not(target_pointer_width = "64"), inline(always))]
fn skip_non_number_trusted(input: &[u8], start: usize) -> (usize, usize) {
    let Some(&b) = input.get(start) else {
        return (start, start);
    };
    let end = match b {
        b'"' => skip_string_trusted::<WORD_AT_A_TIME>(input, start + 1),
        b'{' | b'[' => {
            let mut depth = 1usize;
            let mut i = start + 1;
            loop {
                let Some(&c) = input.get(i) else {
                    break input.len();
                };
                i += 1;
                // A range test and a bit test: as fast as a 256-byte table, without the table.
                if !matches!(c, b'"' | b'[' | b']' | b'{' | b'}') {
                    continue;
                }
                match c {
                    b'"' => i = skip_string_trusted::<WORD_AT_A_TIME>(input, i),
                    b'{' | b'[' => depth += 1,
                    _ => {
                        depth -= 1;
                        if depth == 0 {
                            break i;
                        }
                    }
                }
            }
        }
        _ => {
            let mut i = start + 1;
            while let Some(&c) = input.get(i) {
                if matches!(
                    c,
                    b',' | b']' | b'}' | b':' | b' ' | b'\t' | b'\n' | b'\r' | b'"' | b'[' | b'{'
                ) {
                    break;
                }
                i += 1;
            }
            i
        }
    };
    (start, end)
}

/// `i` is just past an opening quote; returns the offset just past the closing quote (or
/// `input.len()` if there is none). `WORDS` selects the word-at-a-time skip ([`WORD_AT_A_TIME`]).
#[inline]
pub(super) fn skip_string_trusted<const WORDS: bool>(input: &[u8], mut i: usize) -> usize {
    loop {
        while let Some(x) = if WORDS { load8(input, i) } else { None } {
            let m = quote_or_backslash(x);
            if m != 0 {
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            i += 8;
        }
        match input.get(i) {
            Some(b'"') => return i + 1,
            Some(b'\\') => i += 2,
            Some(_) => i += 1,
            None => return input.len(),
        }
    }
}
