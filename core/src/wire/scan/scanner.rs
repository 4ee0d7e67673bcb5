//! The validating scanner: one JSON value checked (RFC 8259, strictly) and its span found, in
//! one pass over the bytes, with a fixed bit stack for nesting instead of recursion.

use super::error::{ScanError, ScanErrorKind};
#[cfg(feature = "std")]
use super::words::LO;
use super::words::{load8, load_tail, string_special, HI, WORD_AT_A_TIME};

/// Hard upper bound for any configured nesting depth (size of the fixed bit stack).
pub const MAX_DEPTH_LIMIT: usize = 256;
/// Default nesting depth.
pub const DEFAULT_MAX_DEPTH: usize = 64;

/// Bits per word of the nesting bit stack: a native word, so that shifting by a depth is one
/// instruction (a `u64` shift is a library call on a 32-bit microcontroller).
const WORD_BITS: usize = usize::BITS as usize;
/// Number of words in the nesting bit stack.
const STACK_WORDS: usize = MAX_DEPTH_LIMIT / WORD_BITS;

/// Skip JSON whitespace (space, `\t`, `\n`, `\r`) from `pos`; returns the first non-whitespace
/// offset (or `input.len()`, also when `pos` is past the end).
#[inline]
pub fn skip_ws(input: &[u8], mut pos: usize) -> usize {
    while let Some(&b) = input.get(pos) {
        if b > b' ' || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
            return pos;
        }
        pos += 1;
    }
    input.len()
}

/// Validate exactly one JSON value starting at `pos` (leading whitespace is skipped first).
///
/// Returns `(start, end)`: `start` is the offset of the value's first byte, `end` the offset just
/// past its last byte (trailing whitespace is not consumed). Depth counts containers: `[]` is
/// depth 1, `[[1]]` depth 2; a scalar at top level is depth 0. `max_depth` values above
/// [`MAX_DEPTH_LIMIT`] are clamped to it.
///
/// A number at the very end of the input is complete (`scan_value(b"12", 0, _)` is `(0, 2)`).
pub fn scan_value(input: &[u8], pos: usize, max_depth: usize) -> Result<(usize, usize), ScanError> {
    let max_depth = if max_depth > MAX_DEPTH_LIMIT {
        MAX_DEPTH_LIMIT
    } else {
        max_depth
    };
    let start = skip_ws(input, pos);
    let mut high = 0u64;
    let result = scan_structure(input, start, max_depth, &mut high);
    if high == 0 {
        return result.map(|end| (start, end));
    }
    // Some string holds non-ASCII bytes: check UTF-8 over everything scanned, in one call.
    // Outside strings a non-ASCII byte is already an error, so this checks exactly the string
    // contents; the earlier of the two errors wins.
    let scanned_to = match result {
        Ok(end) => end,
        Err(e) => e.offset,
    };
    check_utf8(input, start, scanned_to)?;
    result.map(|end| (start, end))
}

/// Checks `input[from..to]` as UTF-8 (see [`scan_value`] for why this covers the strings).
///
/// `to` is the end of a complete value or the offset of a scan error; the byte there is never a
/// UTF-8 continuation byte, so a sequence cut short at `to` is malformed, unless `to` is the end
/// of the input, where it is `UnexpectedEnd`.
#[inline(never)]
fn check_utf8(input: &[u8], from: usize, to: usize) -> Result<(), ScanError> {
    let raw = input.get(from..to).unwrap_or_default();
    let error = if WORD_AT_A_TIME {
        core::str::from_utf8(raw)
            .err()
            .map(|e| (e.valid_up_to(), e.error_len().is_none()))
    } else {
        utf8_error(raw)
    };
    match error {
        None => Ok(()),
        Some((_, true)) if to >= input.len() => {
            Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len()))
        }
        Some((valid_up_to, _)) => Err(ScanError::new(
            ScanErrorKind::InvalidUtf8,
            from + valid_up_to,
        )),
    }
}

/// The first UTF-8 error in `bytes`, as `core::str::from_utf8` reports it: the length of the
/// valid prefix, and whether the bytes merely end inside a sequence that is well formed so far.
///
/// Used where [`WORD_AT_A_TIME`] is off: `core::str::from_utf8` is faster on long text, but
/// with its 256-byte table it takes about 600 bytes of a firmware image, this about 200. The
/// two are compared over every short sequence in this module's tests.
fn utf8_error(bytes: &[u8]) -> Option<(usize, bool)> {
    let mut i = 0;
    while let Some(&lead) = bytes.get(i) {
        if lead < 0x80 {
            i += 1;
            continue;
        }
        // Sequence length, and the range of the second byte (RFC 3629 table 4: no overlong
        // forms, no surrogates, nothing above U+10FFFF).
        let (len, low, high) = match lead {
            0xC2..=0xDF => (2, 0x80, 0xBF),
            0xE0 => (3, 0xA0, 0xBF),
            0xE1..=0xEC | 0xEE..=0xEF => (3, 0x80, 0xBF),
            0xED => (3, 0x80, 0x9F),
            0xF0 => (4, 0x90, 0xBF),
            0xF1..=0xF3 => (4, 0x80, 0xBF),
            0xF4 => (4, 0x80, 0x8F),
            _ => return Some((i, false)),
        };
        for k in 1..len {
            let Some(&next) = bytes.get(i + k) else {
                return Some((i, true));
            };
            let (low, high) = if k == 1 { (low, high) } else { (0x80, 0xBF) };
            if !(low..=high).contains(&next) {
                return Some((i, false));
            }
        }
        i += len;
    }
    None
}

/// The structural scan behind [`scan_value`]: `start` is at the value's first byte. Returns
/// the end of the value. Raw string bytes are not checked as UTF-8 here: the high bit of every
/// string byte is ORed into `high`, so the caller knows whether a UTF-8 check is needed.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[allow(clippy::indexing_slicing)] // the bit-stack index is masked to `STACK_WORDS - 1`
fn scan_structure(
    input: &[u8],
    start: usize,
    max_depth: usize,
    high: &mut u64,
) -> Result<usize, ScanError> {
    let mut i = start;
    // Bit `d` is 1 when the container at depth `d + 1` is an object. Only indices
    // `< max_depth <= MAX_DEPTH_LIMIT` are used; `& (STACK_WORDS - 1)` keeps indexing in range.
    let mut stack = [0usize; STACK_WORDS];
    let mut depth = 0usize;
    let mut in_object = false;

    'value: loop {
        // Invariant: `i` is at the first byte of a value, whitespace already skipped.
        let Some(&b) = input.get(i) else {
            return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len()));
        };
        match b {
            b'"' => i = string(input, i, high)?,
            b'{' | b'[' => {
                if depth >= max_depth {
                    return Err(ScanError::new(ScanErrorKind::TooDeep, i));
                }
                let is_obj = b == b'{';
                let word = &mut stack[(depth / WORD_BITS) & (STACK_WORDS - 1)];
                let bit = 1 << (depth % WORD_BITS);
                if is_obj {
                    *word |= bit;
                } else {
                    *word &= !bit;
                }
                depth += 1;
                in_object = is_obj;
                i = skip_ws(input, i + 1);
                let close = if is_obj { b'}' } else { b']' };
                match input.get(i) {
                    None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
                    Some(&c) if c == close => {
                        // Empty container: it is a complete value; fall through to close it.
                        i += 1;
                        depth -= 1;
                        in_object = depth > 0 && top_is_object(&stack, depth);
                    }
                    Some(_) => {
                        if is_obj {
                            i = member_key(input, i, high)?;
                        }
                        continue 'value;
                    }
                }
            }
            b't' => i = literal(input, i, b"true")?,
            b'f' => i = literal(input, i, b"false")?,
            b'n' => i = literal(input, i, b"null")?,
            b'-' | b'0'..=b'9' => i = number(input, i)?,
            b'.' | b'+' => return Err(ScanError::new(ScanErrorKind::InvalidNumber, i)),
            _ => return Err(ScanError::new(ScanErrorKind::UnexpectedByte, i)),
        }

        // A complete value ends just before `i`: continue or close the enclosing containers.
        loop {
            if depth == 0 {
                return Ok(i);
            }
            i = skip_ws(input, i);
            let Some(&c) = input.get(i) else {
                return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len()));
            };
            match c {
                b',' => {
                    i = skip_ws(input, i + 1);
                    if in_object {
                        i = member_key(input, i, high)?;
                    }
                    continue 'value;
                }
                b'}' if in_object => {}
                b']' if !in_object => {}
                _ => return Err(ScanError::new(ScanErrorKind::UnexpectedByte, i)),
            }
            i += 1;
            depth -= 1;
            in_object = depth > 0 && top_is_object(&stack, depth);
        }
    }
}

/// The string at `i` (an opening quote) in the structural scan: the inline path for short
/// plain strings, else the full string scan (only that where [`short_string`] is left out).
#[inline(always)]
fn string(input: &[u8], i: usize, high: &mut u64) -> Result<usize, ScanError> {
    match short_string(input, i) {
        Some(end) => Ok(end),
        None => string_body::<WORD_AT_A_TIME>(input, i + 1, high),
    }
}

/// Whether the container at depth `depth` (1-based, `depth >= 1`) is an object.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[allow(clippy::indexing_slicing)] // the bit-stack index is masked to `STACK_WORDS - 1`
fn top_is_object(stack: &[usize; STACK_WORDS], depth: usize) -> bool {
    let d = depth - 1;
    (stack[(d / WORD_BITS) & (STACK_WORDS - 1)] >> (d % WORD_BITS)) & 1 != 0
}

/// `i` is at the first non-whitespace byte where an object key must start. Validates
/// `"key" ws : ws` and returns the offset of the member's value.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn member_key(input: &[u8], i: usize, high: &mut u64) -> Result<usize, ScanError> {
    match input.get(i) {
        Some(b'"') => {}
        Some(_) => return Err(ScanError::new(ScanErrorKind::UnexpectedByte, i)),
        None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
    let i = skip_ws(input, string(input, i, high)?);
    match input.get(i) {
        Some(b':') => Ok(skip_ws(input, i + 1)),
        Some(_) => Err(ScanError::new(ScanErrorKind::UnexpectedByte, i)),
        None => Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
}

/// Validates the literal `lit` at `i` (whose first byte is already known to match).
#[inline]
fn literal(input: &[u8], i: usize, lit: &'static [u8]) -> Result<usize, ScanError> {
    let end = i + lit.len();
    if input.get(i..end) == Some(lit) {
        return Ok(end);
    }
    for (k, &want) in lit.iter().enumerate() {
        match input.get(i + k) {
            None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
            Some(&got) if got != want => {
                return Err(ScanError::new(ScanErrorKind::UnexpectedByte, i + k))
            }
            Some(_) => {}
        }
    }
    // Unreachable: the bytes all matched, so the slice comparison above succeeded.
    Ok(end)
}

/// Skips ASCII digits from `i`.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn digits(input: &[u8], mut i: usize) -> usize {
    while let Some(b'0'..=b'9') = input.get(i) {
        i += 1;
    }
    i
}

/// `i` must be at the first byte of a number (`-` or a digit, otherwise `InvalidNumber`).
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn number(input: &[u8], mut i: usize) -> Result<usize, ScanError> {
    if input.get(i) == Some(&b'-') {
        i += 1;
    }
    match input.get(i) {
        Some(b'0') => {
            i += 1;
            if let Some(b'0'..=b'9') = input.get(i) {
                return Err(ScanError::new(ScanErrorKind::InvalidNumber, i));
            }
        }
        Some(b'1'..=b'9') => i = digits(input, i + 1),
        Some(_) => return Err(ScanError::new(ScanErrorKind::InvalidNumber, i)),
        None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
    if input.get(i) == Some(&b'.') {
        i += 1;
        match input.get(i) {
            Some(b'0'..=b'9') => i = digits(input, i + 1),
            Some(_) => return Err(ScanError::new(ScanErrorKind::InvalidNumber, i)),
            None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
        }
    }
    if let Some(b'e' | b'E') = input.get(i) {
        i += 1;
        if let Some(b'+' | b'-') = input.get(i) {
            i += 1;
        }
        match input.get(i) {
            Some(b'0'..=b'9') => i = digits(input, i + 1),
            Some(_) => return Err(ScanError::new(ScanErrorKind::InvalidNumber, i)),
            None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
        }
    }
    Ok(i)
}

/// `pos` must be at the first byte of a number; validates it and returns the offset just past
/// it. The number ends at the first byte that cannot continue it (that byte is not checked).
pub fn scan_number(input: &[u8], pos: usize) -> Result<usize, ScanError> {
    match input.get(pos) {
        Some(b'-' | b'0'..=b'9' | b'.' | b'+') => number(input, pos),
        Some(_) => Err(ScanError::new(ScanErrorKind::UnexpectedByte, pos)),
        None => Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
}

/// `pos` must be at an opening `"`; validates the string and returns the offset just past the
/// closing quote.
pub fn scan_string(input: &[u8], pos: usize) -> Result<usize, ScanError> {
    match input.get(pos) {
        Some(b'"') => {
            let mut high = 0u64;
            let result = string_body::<WORD_AT_A_TIME>(input, pos + 1, &mut high);
            if high != 0 {
                let scanned_to = match result {
                    Ok(end) => end,
                    Err(e) => e.offset,
                };
                check_utf8(input, pos, scanned_to)?;
            }
            result
        }
        Some(_) => Err(ScanError::new(ScanErrorKind::UnexpectedByte, pos)),
        None => Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
}

/// `pos` is at an opening `"`: the offset just past the closing quote when the string's
/// contents are at most fifteen plain printable ASCII bytes (no `\`, no control, no non-ASCII
/// byte), else `None`, and the caller scans it with [`scan_string`] (which accepts every
/// string this accepts, with the same end).
///
/// The member names of a message and most method names, ids and short values are such
/// strings: two word loads and masks instead of a call, with nothing to check as UTF-8 after.
/// Hosts only ([`WORD_AT_A_TIME`]); elsewhere always `None`, and the code is left out.
#[inline(always)]
pub(crate) fn short_string(input: &[u8], pos: usize) -> Option<usize> {
    if !WORD_AT_A_TIME {
        return None;
    }
    let mut at = pos + 1;
    for _ in 0..2 {
        // Near the end of the input the word is padded with zero bytes, which are control
        // bytes: they stop the run without being taken for a closing quote.
        let x = match load8(input, at) {
            Some(x) => x,
            None => load_tail(input, at),
        };
        // Special bytes (`"`, `\`, control) and non-ASCII bytes alike stop the run.
        let m = string_special(x) | (x & HI);
        if m != 0 {
            let first = (m.trailing_zeros() / 8) as usize;
            // Only a closing quote may end it; everything else is left to `scan_string`.
            return (input.get(at + first) == Some(&b'"')).then_some(at + first + 1);
        }
        at += 8;
    }
    None
}

/// A JSON-RPC member name written plainly at `pos` (which holds its opening `"`): the
/// member's position in `jsonrpc, method, params, id, result, error` and the offset just past
/// its closing quote, else `None` (the caller then scans the key as any string).
///
/// Compares the first word of the key with each name's bytes, quote included, and checks the
/// byte after the name is its closing quote: such a key is that name exactly (no escape, no
/// other byte fits). Hosts only ([`WORD_AT_A_TIME`]); elsewhere always `None`.
#[inline(always)]
pub(crate) fn message_key(input: &[u8], pos: usize) -> Option<(usize, usize)> {
    if !WORD_AT_A_TIME {
        return None;
    }
    /// A name's first `len` bytes (opening quote included, zero-padded to a word), masked.
    const fn key(name: &[u8; 8], len: usize) -> (u64, u64, usize) {
        let mask = if len >= 8 {
            u64::MAX
        } else {
            (1u64 << (len * 8)) - 1
        };
        (u64::from_le_bytes(*name) & mask, mask, len)
    }
    // In slot order; the closing quote follows each prefix. `"jsonrpc` fills the word.
    const KEYS: [(u64, u64, usize); 6] = [
        key(b"\"jsonrpc", 8),
        key(b"\"method\0", 7),
        key(b"\"params\0", 7),
        key(b"\"id\0\0\0\0\0", 3),
        key(b"\"result\0", 7),
        key(b"\"error\0\0", 6),
    ];
    // Near the end of the input the word is padded with zero bytes, which no name holds.
    let x = match load8(input, pos) {
        Some(x) => x,
        None => load_tail(input, pos),
    };
    for (slot, &(word, mask, len)) in KEYS.iter().enumerate() {
        if x & mask == word {
            return (input.get(pos + len) == Some(&b'"')).then_some((slot, pos + len + 1));
        }
    }
    None
}

/// `pos` is at `[` or `{`: the offset just past the closing bracket when the container is
/// flat, holding only numbers and short plain strings ([`short_string`]) as values and keys,
/// and is valid JSON; else `None`, and the caller scans it with [`scan_value`] (which accepts
/// every container this accepts, with the same end).
///
/// Most params are such containers (`[42,23]`, `{"minuend":42,"subtrahend":23}`): one tight
/// loop with no nesting stack. Hosts only ([`WORD_AT_A_TIME`]); elsewhere always `None`.
#[inline(always)]
pub(crate) fn flat_container(input: &[u8], pos: usize) -> Option<usize> {
    if !WORD_AT_A_TIME {
        return None;
    }
    let is_obj = match input.get(pos)? {
        b'{' => true,
        b'[' => false,
        _ => return None,
    };
    let close = if is_obj { b'}' } else { b']' };
    let mut i = skip_ws(input, pos + 1);
    if input.get(i) == Some(&close) {
        return Some(i + 1);
    }
    loop {
        if is_obj {
            if input.get(i) != Some(&b'"') {
                return None;
            }
            i = skip_ws(input, short_string(input, i)?);
            if input.get(i) != Some(&b':') {
                return None;
            }
            i = skip_ws(input, i + 1);
        }
        i = match input.get(i)? {
            b'"' => short_string(input, i)?,
            b'-' | b'0'..=b'9' => number(input, i).ok()?,
            _ => return None,
        };
        i = skip_ws(input, i);
        match input.get(i)? {
            b',' => i = skip_ws(input, i + 1),
            &c if c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

/// `start` is just past an opening quote. Validates the string's syntax up to and including
/// the closing quote and returns the offset just past it.
///
/// The high bit of every raw byte in the string is ORed into `high`; the caller checks UTF-8
/// afterwards, over the whole scanned range in one call to `core::str::from_utf8` (which is
/// fast, and much faster once than once per short string).
///
/// `WORDS` selects the word-at-a-time skip ([`WORD_AT_A_TIME`]).
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn string_body<const WORDS: bool>(
    input: &[u8],
    start: usize,
    high: &mut u64,
) -> Result<usize, ScanError> {
    let mut i = start;
    let mut hi_bits = 0u64;
    // Plain words skipped since the last special byte, and whether a long run may still be
    // handed to `long_run` (not after it found a control byte: the exact loop then finds it).
    let mut plain_words = 0u32;
    let mut long_runs = cfg!(feature = "std");
    let result = loop {
        // Fast path: skip bytes that are neither `"`, `\` nor control, eight at a time.
        while let Some(x) = if WORDS { load8(input, i) } else { None } {
            let m = string_special(x);
            if m != 0 {
                // Only the bytes before the special one belong to this run.
                hi_bits |= x & HI & (m & m.wrapping_neg()).wrapping_sub(1);
                i += (m.trailing_zeros() / 8) as usize;
                break;
            }
            hi_bits |= x & HI;
            i += 8;
            plain_words += 1;
            if long_runs && plain_words == LONG_RUN_WORDS {
                match long_run(input, i) {
                    Some((end, bits)) => {
                        hi_bits |= bits;
                        i = end;
                        break;
                    }
                    None => long_runs = false,
                }
            }
        }
        plain_words = 0;
        let Some(&b) = input.get(i) else {
            break Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len()));
        };
        // Most often the fast path stopped at the closing quote: test that first.
        if b == b'"' {
            break Ok(i + 1);
        } else if b == b'\\' {
            match escape(input, i) {
                Ok(next) => i = next,
                Err(e) => break Err(e),
            }
        } else if b < 0x20 {
            break Err(ScanError::new(ScanErrorKind::ControlCharacter, i));
        } else {
            // A plain or non-ASCII byte (with `WORDS`, only in the last seven of the input).
            hi_bits |= u64::from(b & 0x80);
            i += 1;
        }
    };
    *high |= hi_bits;
    result
}

/// Plain words a string must run before [`long_run`] takes over: short strings (names, ids)
/// never pay for its call.
const LONG_RUN_WORDS: u32 = 2;

/// A long run of string contents from `i`, on hosts with `std`: finds the next `"` or `\`
/// with `memchr` (SIMD), then checks the bytes before it for control bytes a word at a time.
/// Returns the offset of that `"` or `\` (or the end of the input) and the high bits of the
/// run's bytes; `None` when the run holds a control byte, which the caller's exact loop then
/// finds and reports at its offset.
#[cfg(feature = "std")]
#[inline(never)]
fn long_run(input: &[u8], i: usize) -> Option<(usize, u64)> {
    let rest = input.get(i..)?;
    let len = memchr::memchr2(b'"', b'\\', rest).unwrap_or(rest.len());
    let run = rest.get(..len)?;
    let (mut control, mut bits) = (0u64, 0u64);
    let mut words = run.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(<[u8; 8]>::try_from(word).ok()?);
        // Some byte below 0x20 makes this nonzero (exact as to whether, not which).
        control |= x.wrapping_sub(LO * 0x20) & !x;
        bits |= x;
    }
    let tail = words.remainder();
    // The zero padding after the last bytes must not count as control bytes: make it spaces.
    let padding = u64::MAX << (8 * tail.len());
    let x = load_tail(tail, 0) | (padding & (LO * 0x20));
    control |= x.wrapping_sub(LO * 0x20) & !x;
    bits |= x;
    (control & HI == 0).then_some((i + len, bits & HI))
}

#[cfg(not(feature = "std"))]
#[inline(always)]
fn long_run(_input: &[u8], _i: usize) -> Option<(usize, u64)> {
    None
}

/// `i` is at a backslash inside a string; validates the escape and returns the offset after it.
#[inline]
fn escape(input: &[u8], i: usize) -> Result<usize, ScanError> {
    match input.get(i + 1) {
        Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => Ok(i + 2),
        Some(b'u') => {
            for k in 2..6 {
                match input.get(i + k) {
                    Some(h) if h.is_ascii_hexdigit() => {}
                    Some(_) => return Err(ScanError::new(ScanErrorKind::InvalidEscape, i)),
                    None => return Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
                }
            }
            Ok(i + 6)
        }
        Some(_) => Err(ScanError::new(ScanErrorKind::InvalidEscape, i)),
        None => Err(ScanError::new(ScanErrorKind::UnexpectedEnd, input.len())),
    }
}

/// Validate that the whole input is one JSON text: `ws value ws`, nothing else.
pub fn validate(input: &[u8], max_depth: usize) -> Result<(), ScanError> {
    let (_, end) = scan_value(input, 0, max_depth)?;
    let rest = skip_ws(input, end);
    if rest == input.len() {
        Ok(())
    } else {
        Err(ScanError::new(ScanErrorKind::TrailingCharacters, rest))
    }
}

#[allow(clippy::unwrap_used, clippy::expect_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::scan::trusted::{skip_string_trusted, skip_value_trusted};

    fn err(input: &[u8]) -> (ScanErrorKind, usize) {
        match validate(input, DEFAULT_MAX_DEPTH) {
            Ok(()) => panic!("accepted {:?}", core::str::from_utf8(input)),
            Err(e) => (e.kind, e.offset),
        }
    }

    fn ok(input: &[u8]) {
        if let Err(e) = validate(input, DEFAULT_MAX_DEPTH) {
            panic!("rejected {:?}: {e}", core::str::from_utf8(input));
        }
    }

    const VALID: &[&[u8]] = &[
        b"0",
        b"-0",
        b"-0.0e-0",
        b"123",
        b"1.5E+10",
        b"1e999999999999",
        b"true",
        b"false",
        b"null",
        b"\"\"",
        b"\"abc\"",
        b"\"a somewhat longer plain ascii string with more than eight bytes\"",
        b"\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\uD834\\uDD1E\"",
        b"\"\\uD800\"",
        "\"é日本語🎉 mixed ascii\"".as_bytes(),
        b"\"\x7f\"",
        b"[]",
        b"{}",
        b" \t\r\n[ 1 , 2 ,\n3 ] \n",
        b"{\"a\":[1,{\"b\":null}],\"c\":\"d\"}",
        b"[[[[]]],{},[{}],\"x\",-1.25e-3]",
        b"{ \"k\" : { } , \"l\" : [ ] }",
    ];

    /// The inline short-string path agrees with `scan_string` wherever it answers, and
    /// answers for plain ASCII strings of up to fifteen bytes (on hosts).
    #[test]
    fn short_strings_agree_with_scan_string() {
        let bodies: &[&[u8]] = &[
            b"",
            b"a",
            b"id",
            b"jsonrpc",
            b"method\"",
            b"subtract",
            b"fifteen bytes!!",
            b"sixteen bytes!!!",
            b"a\\b",
            b"\x01",
            "\u{e9}t\u{e9}".as_bytes(),
            b"tab\there",
            b"\x7f",
            b"\"",
            b"ends with a slash\\",
        ];
        for body in bodies {
            for tail in [&b""[..], b",", b"          "] {
                let mut text = std::vec![b'"'];
                text.extend_from_slice(body);
                text.push(b'"');
                text.extend_from_slice(tail);
                let fast = short_string(&text, 0);
                let slow = scan_string(&text, 0);
                if let Some(end) = fast {
                    assert_eq!(Ok(end), slow, "{text:?}");
                }
                let plain = body.len() <= 15
                    && body
                        .iter()
                        .all(|b| (0x20..0x80).contains(b) && !matches!(b, b'"' | b'\\'));
                if WORD_AT_A_TIME && plain {
                    assert_eq!(fast, Some(body.len() + 2), "{text:?}");
                }
            }
        }
    }

    #[test]
    fn accepts_valid() {
        for v in VALID {
            ok(v);
        }
    }

    #[test]
    fn unexpected_end() {
        for s in [
            &b""[..],
            b"   ",
            b"[",
            b"[1",
            b"[1,",
            b"{",
            b"{\"a\"",
            b"{\"a\":",
            b"{\"a\":1",
            b"\"abc",
            b"\"abc\\",
            b"\"\\u12",
            b"tru",
            b"nul",
            b"-",
            b"1.",
            b"1e",
            b"1e+",
            b"\"\xe6\x97",
        ] {
            assert_eq!(err(s), (ScanErrorKind::UnexpectedEnd, s.len()), "{s:?}");
        }
    }

    #[test]
    fn unexpected_byte() {
        assert_eq!(err(b"[1,]"), (ScanErrorKind::UnexpectedByte, 3));
        assert_eq!(err(b"{\"a\":1,}"), (ScanErrorKind::UnexpectedByte, 7));
        assert_eq!(err(b"{1:2}"), (ScanErrorKind::UnexpectedByte, 1));
        assert_eq!(err(b"{\"a\" 1}"), (ScanErrorKind::UnexpectedByte, 5));
        assert_eq!(err(b"[1 2]"), (ScanErrorKind::UnexpectedByte, 3));
        assert_eq!(err(b"[1}"), (ScanErrorKind::UnexpectedByte, 2));
        assert_eq!(err(b"{\"a\":1]"), (ScanErrorKind::UnexpectedByte, 6));
        assert_eq!(err(b"trUe"), (ScanErrorKind::UnexpectedByte, 2));
        assert_eq!(err(b"nil"), (ScanErrorKind::UnexpectedByte, 1));
        assert_eq!(err(b"'a'"), (ScanErrorKind::UnexpectedByte, 0));
        assert_eq!(err(b"]"), (ScanErrorKind::UnexpectedByte, 0));
        assert_eq!(err(b"\xef\xbb\xbf{}"), (ScanErrorKind::UnexpectedByte, 0));
        assert_eq!(err(b"[\xc3\xa9]"), (ScanErrorKind::UnexpectedByte, 1));
        assert_eq!(err(b"[\x0c1]"), (ScanErrorKind::UnexpectedByte, 1));
    }

    #[test]
    fn invalid_utf8() {
        for (s, off) in [
            (&b"\"\xff\""[..], 1),
            (b"\"\x80\"", 1),
            (b"\"\xc0\xaf\"", 1),
            (b"\"\xc1\xbf\"", 1),
            (b"\"\xe0\x80\xaf\"", 1),
            (b"\"\xed\xa0\x80\"", 1),
            (b"\"\xf4\x90\x80\x80\"", 1),
            (b"\"\xf5\x80\x80\x80\"", 1),
            (b"\"ab\xe6\x97\"", 3),
            (b"\"\xe6\x97\xa5\xd1\x88\xfa\"", 6),
            (b"\"\xfc\x83\xbf\xbf\xbf\xbf\"", 1),
            (b"\"0123456789\xe9\"", 11),
        ] {
            assert_eq!(err(s), (ScanErrorKind::InvalidUtf8, off), "{s:?}");
        }
    }

    #[test]
    fn invalid_escape() {
        assert_eq!(err(b"\"\\x\""), (ScanErrorKind::InvalidEscape, 1));
        assert_eq!(err(b"[\"a\\'\"]"), (ScanErrorKind::InvalidEscape, 3));
        assert_eq!(err(b"\"\\u12G4\""), (ScanErrorKind::InvalidEscape, 1));
        assert_eq!(err(b"\"\\U1234\""), (ScanErrorKind::InvalidEscape, 1));
        assert_eq!(err(b"\"\\\xc3\xa9\""), (ScanErrorKind::InvalidEscape, 1));
    }

    #[test]
    fn control_character() {
        assert_eq!(err(b"\"a\tb\""), (ScanErrorKind::ControlCharacter, 2));
        assert_eq!(err(b"\"\x00\""), (ScanErrorKind::ControlCharacter, 1));
        assert_eq!(
            err(b"[\"0123456789\n\"]"),
            (ScanErrorKind::ControlCharacter, 12)
        );
    }

    #[test]
    fn invalid_number() {
        for (s, off) in [
            (&b"01"[..], 1),
            (b"-01", 2),
            (b"[1.]", 3),
            (b"[1.e5]", 3),
            (b"[-]", 2),
            (b"-a", 1),
            (b".5", 0),
            (b"+1", 0),
            (b"[1e]", 3),
            (b"[1E+]", 4),
            (b"[00]", 2),
        ] {
            assert_eq!(err(s), (ScanErrorKind::InvalidNumber, off), "{s:?}");
        }
    }

    #[test]
    fn trailing_characters() {
        assert_eq!(err(b"1 2"), (ScanErrorKind::TrailingCharacters, 2));
        assert_eq!(err(b"[] ]"), (ScanErrorKind::TrailingCharacters, 3));
        assert_eq!(err(b"{}x"), (ScanErrorKind::TrailingCharacters, 2));
        assert_eq!(err(b"truex"), (ScanErrorKind::TrailingCharacters, 4));
        assert_eq!(err(b"\"a\"\x00"), (ScanErrorKind::TrailingCharacters, 3));
        // scan_value itself does not look past the value.
        assert_eq!(scan_value(b"1 2", 0, 8), Ok((0, 1)));
    }

    fn nested(open: &[u8], depth: usize, inner: &[u8], close: &[u8]) -> [u8; 2048] {
        let mut buf = [b' '; 2048];
        let mut n = 0;
        for _ in 0..depth {
            buf[n..n + open.len()].copy_from_slice(open);
            n += open.len();
        }
        buf[n..n + inner.len()].copy_from_slice(inner);
        n += inner.len();
        for _ in 0..depth {
            buf[n..n + close.len()].copy_from_slice(close);
            n += close.len();
        }
        buf
    }

    #[test]
    fn depth_limits() {
        assert_eq!(validate(b"1", 0), Ok(()));
        assert_eq!(kind_at(b"[]", 0), (ScanErrorKind::TooDeep, 0));
        assert_eq!(validate(b"[]", 1), Ok(()));
        assert_eq!(validate(b"[[1]]", 2), Ok(()));
        assert_eq!(kind_at(b"[[1]]", 1), (ScanErrorKind::TooDeep, 1));
        assert_eq!(kind_at(b"[{\"a\":{}}]", 2), (ScanErrorKind::TooDeep, 6));
        for max in [1usize, 5, 63, 64, 65, 100, 255, 256] {
            let ok_arr = nested(b"[", max, b"", b"]");
            assert_eq!(validate(&ok_arr, max), Ok(()), "max {max}");
            let deep = nested(b"[", max + 1, b"", b"]");
            assert_eq!(
                kind_at(&deep, max),
                (ScanErrorKind::TooDeep, max),
                "max {max}"
            );
            let ok_obj = nested(b"{\"\":", max - 1, b"{}", b"}");
            assert_eq!(validate(&ok_obj, max), Ok(()), "obj max {max}");
        }
        // Limits above MAX_DEPTH_LIMIT are clamped.
        let at_limit = nested(b"[", MAX_DEPTH_LIMIT, b"", b"]");
        assert_eq!(validate(&at_limit, usize::MAX), Ok(()));
        let over = nested(b"[", MAX_DEPTH_LIMIT + 1, b"", b"]");
        assert_eq!(kind_at(&over, usize::MAX), (ScanErrorKind::TooDeep, 256));
        // Mixed kinds across word boundaries of the bit stack keep their closers straight.
        let mut mixed = [b' '; 1024];
        let mut n = 0;
        for d in 0..200 {
            mixed[n] = if d % 3 == 0 { b'[' } else { b'{' };
            n += 1;
            if d % 3 != 0 {
                mixed[n..n + 3].copy_from_slice(b"\"\":");
                n += 3;
            }
        }
        mixed[n] = b'1';
        n += 1;
        for d in (0..200).rev() {
            mixed[n] = if d % 3 == 0 { b']' } else { b'}' };
            n += 1;
        }
        assert_eq!(validate(&mixed[..n], 200), Ok(()));
        mixed[n - 1] = b'}'; // outermost is an array
        assert_eq!(
            kind_at(&mixed[..n], 200),
            (ScanErrorKind::UnexpectedByte, n - 1)
        );
    }

    fn kind_at(input: &[u8], max: usize) -> (ScanErrorKind, usize) {
        match validate(input, max) {
            Ok(()) => panic!("accepted"),
            Err(e) => (e.kind, e.offset),
        }
    }

    #[test]
    fn hundred_thousand_brackets() {
        let deep = [b'['; 100_000];
        let e = validate(&deep, DEFAULT_MAX_DEPTH).unwrap_err();
        assert_eq!(e, ScanError::new(ScanErrorKind::TooDeep, DEFAULT_MAX_DEPTH));
        let e = validate(&deep, usize::MAX).unwrap_err();
        assert_eq!(e.kind, ScanErrorKind::TooDeep);
        // Trusted skipping also copes (no recursion): it runs off the end.
        assert_eq!(skip_value_trusted(&deep, 0), (0, deep.len()));
    }

    #[test]
    fn offsets_and_spans() {
        let text = b"  {\"a\" : [1, \"two\", {\"x\": true}] , \"b\": -2.5e3 }  ";
        let (s, e) = scan_value(text, 0, 8).unwrap();
        assert_eq!((s, e), (2, text.len() - 2));
        let a = text.iter().position(|&b| b == b'[').unwrap();
        let (s, e) = scan_value(text, a - 1, 8).unwrap();
        assert_eq!(&text[s..e], b"[1, \"two\", {\"x\": true}]");
        let n = text.iter().position(|&b| b == b'-').unwrap();
        assert_eq!(scan_value(text, n, 8), Ok((n, n + 6)));
        assert_eq!(scan_number(text, n), Ok(n + 6));
        assert_eq!(scan_string(b"x\"a\\\"b\" ", 1), Ok(7));
        assert_eq!(
            scan_string(b"abc", 0),
            Err(ScanError::new(ScanErrorKind::UnexpectedByte, 0))
        );
        assert_eq!(
            scan_string(b"abc", 9),
            Err(ScanError::new(ScanErrorKind::UnexpectedEnd, 3))
        );
        // Positions past the end never panic.
        assert_eq!(
            scan_value(b"[]", usize::MAX, 8),
            Err(ScanError::new(ScanErrorKind::UnexpectedEnd, 2))
        );
        assert_eq!(skip_ws(b"  ", 10), 2);
        assert_eq!(skip_ws(b" \t\r\nx", 0), 4);
        assert_eq!(skip_value_trusted(b"[]", usize::MAX), (2, 2));
    }

    #[test]
    fn skip_trusted_agrees_with_scan() {
        for v in VALID {
            assert_eq!(
                skip_value_trusted(v, 0),
                scan_value(v, 0, DEFAULT_MAX_DEPTH).unwrap(),
                "{v:?}"
            );
            // Embedded in a container, followed by more elements.
            let mut buf = [0u8; 512];
            let pre = b"[ ";
            let post = b" ,1]";
            buf[..2].copy_from_slice(pre);
            buf[2..2 + v.len()].copy_from_slice(v);
            buf[2 + v.len()..2 + v.len() + post.len()].copy_from_slice(post);
            let whole = &buf[..2 + v.len() + post.len()];
            assert_eq!(
                skip_value_trusted(whole, 1),
                scan_value(whole, 1, DEFAULT_MAX_DEPTH).unwrap(),
                "{v:?}"
            );
        }
    }

    #[test]
    fn skip_trusted_never_panics() {
        let junk: &[&[u8]] = &[
            b"",
            b"\"",
            b"\"\\",
            b"[\"]",
            b"]]]",
            b"}",
            b"[[",
            b"\"abc\\\"",
            b"-",
            b"x",
            b"{\"a",
        ];
        for j in junk {
            let (s, e) = skip_value_trusted(j, 0);
            assert!(s <= e && e <= j.len(), "{j:?}");
        }
    }

    /// A fixed pseudo-random sequence (xorshift64) for the sampled tests below.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    /// The byte loops alone (what 32-bit targets run) and with the word-at-a-time skip (what
    /// 64-bit hosts run) agree on every string: same end or error, same high-bit summary.
    #[test]
    fn byte_loops_agree_with_word_loops() {
        // Every string of up to 20 bytes over an alphabet with each kind of byte that matters,
        // at every alignment, sampled by a fixed xorshift sequence.
        const ALPHABET: &[u8] = b"a\"\\u0\x01\x1f\x7f\xc3\xa9\xff/n";
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..200_000 {
            let len = (xorshift(&mut state) % 21) as usize;
            let mut text = [0u8; 24];
            text[0] = b'"';
            for slot in text[1..=len].iter_mut() {
                *slot = ALPHABET[(xorshift(&mut state) % ALPHABET.len() as u64) as usize];
            }
            let input = &text[..=len];
            string_loops_agree(input);
            assert_eq!(
                skip_string_trusted::<true>(input, 1),
                skip_string_trusted::<false>(input, 1),
                "{input:?}"
            );
        }
    }

    /// Long strings, where hosts with `std` hand runs to `long_run` (memchr and a word-wise
    /// control check): the byte loops agree on the end or error and on the high-bit summary,
    /// with the special byte at every distance and alignment.
    #[test]
    fn byte_loops_agree_with_long_runs() {
        const RARE: &[u8] = b"\"\\\x00\x1f\x7f\xc3\xa9\xff";
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..100_000 {
            let len = (xorshift(&mut state) % 97) as usize;
            let mut text = [b'a'; 100];
            text[0] = b'"';
            // A few rare bytes anywhere, the rest plain.
            for _ in 0..(xorshift(&mut state) % 4) {
                let at = 1 + (xorshift(&mut state) as usize) % 99;
                text[at] = RARE[(xorshift(&mut state) % RARE.len() as u64) as usize];
            }
            string_loops_agree(&text[..=len]);
        }
    }

    /// The string scan with the word loops (and, with `std`, `long_run`) and with the byte
    /// loops alone give the same end or error and the same high-bit summary on `input`.
    fn string_loops_agree(input: &[u8]) {
        let (mut high_words, mut high_bytes) = (0, 0);
        let words = string_body::<true>(input, 1, &mut high_words);
        let bytes = string_body::<false>(input, 1, &mut high_bytes);
        assert_eq!(words, bytes, "{input:?}");
        assert_eq!(high_words != 0, high_bytes != 0, "{input:?}");
    }

    /// The compact UTF-8 check (32-bit targets) reports exactly what `core::str::from_utf8`
    /// (64-bit hosts) reports, for every sequence of up to three bytes after an ASCII byte,
    /// every lead byte with every second byte, and random longer texts.
    #[test]
    fn compact_utf8_check_agrees_with_core() {
        fn core_error(bytes: &[u8]) -> Option<(usize, bool)> {
            core::str::from_utf8(bytes)
                .err()
                .map(|e| (e.valid_up_to(), e.error_len().is_none()))
        }
        let check = |bytes: &[u8]| assert_eq!(utf8_error(bytes), core_error(bytes), "{bytes:x?}");
        // Bytes where the rules change.
        const EDGES: &[u8] = &[
            0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
            0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF,
        ];
        for a in 0..=255u8 {
            for b in 0..=255u8 {
                check(&[b'x', a, b]);
                check(&[a, b]);
            }
            for &b in EDGES {
                for &c in EDGES {
                    check(&[a, b, c]);
                    for &d in EDGES {
                        check(&[a, b, c, d]);
                    }
                }
            }
        }
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for _ in 0..20_000 {
            let mut text = [0u8; 24];
            let len = (state % 25) as usize;
            for slot in text[..len].iter_mut() {
                let state = xorshift(&mut state);
                *slot = match state % 4 {
                    0 => EDGES[(state >> 8) as usize % EDGES.len()],
                    1 => 0x80 | (state >> 16) as u8 & 0x3F,
                    _ => (state >> 24) as u8,
                };
            }
            check(&text[..len]);
        }
        check("héllo wörld ✓ 𝄞".as_bytes());
    }
}
