//! Strings written as JSON: quoted and escaped as serde_json escapes them, clean runs copied
//! whole (found eight bytes at a time on 64-bit hosts).

use core::fmt;

use super::error::SerializeError;
use super::sink::Sink;
use crate::wire::scan::WORD_AT_A_TIME;

/// For each byte: 0 when it goes out verbatim, otherwise the letter after the backslash
/// (`u` meaning `\u00XX`). Same table as `serde_json`.
pub(super) const ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX_DIGITS: [u8; 16] = *b"0123456789abcdef";

/// Flags the bytes of `word` (in memory order, little-endian) that need escaping: a control byte
/// (< 0x20), `"` or `\\`. Bytes >= 0x80 are never flagged.
///
/// These are the classic "has a byte below n" / "has a zero byte" tests. A borrow can only start
/// at a byte that matches, so the result is 0 exactly when no byte needs escaping, and its lowest
/// set bit (`trailing_zeros() / 8`) is exactly the first such byte; higher bits may be spurious.
#[inline]
pub(super) fn escape_mask(word: &[u8; 8]) -> u64 {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let x = u64::from_le_bytes(*word);
    let quote = x ^ (ONES * u64::from(b'"'));
    let backslash = x ^ (ONES * u64::from(b'\\'));
    let below_space = x.wrapping_sub(ONES * 0x20) & !x;
    let is_quote = quote.wrapping_sub(ONES) & !quote;
    let is_backslash = backslash.wrapping_sub(ONES) & !backslash;
    (below_space | is_quote | is_backslash) & HIGH
}

/// Writes the escape sequence for `byte` (whose [`ESCAPE`] entry is `escape`, not 0).
#[inline]
fn put_escape<S: Sink + ?Sized>(sink: &mut S, byte: u8, escape: u8) {
    if escape == b'u' {
        sink.put(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX_DIGITS[(byte >> 4) as usize],
            HEX_DIGITS[(byte & 0x0f) as usize],
        ]);
    } else {
        sink.put(&[b'\\', escape]);
    }
}

/// Writes the escaped contents of a string (without quotes), clean runs in one `put` each.
///
/// On 64-bit targets the string is scanned 8 bytes at a time ([`escape_mask`] jumps straight to
/// the next byte to escape) and the last few bytes go through the [`ESCAPE`] table one by one;
/// elsewhere every byte does (see [`WORD_AT_A_TIME`]).
fn put_str_contents<S: Sink + ?Sized>(sink: &mut S, value: &str) {
    put_str_contents_with::<S, { WORD_AT_A_TIME }>(sink, value);
}

pub(super) fn put_str_contents_with<S: Sink + ?Sized, const WORDS: bool>(
    sink: &mut S,
    value: &str,
) {
    let bytes = value.as_bytes();
    let mut run_start = 0;
    let mut i = 0;
    while let Some(word) = if WORDS {
        bytes.get(i..).and_then(<[u8]>::first_chunk::<8>)
    } else {
        None
    } {
        let mask = escape_mask(word);
        if mask == 0 {
            i += 8;
            continue;
        }
        let at = i + (mask.trailing_zeros() / 8) as usize;
        if run_start < at {
            sink.put(&bytes[run_start..at]);
        }
        let byte = bytes[at];
        put_escape(sink, byte, ESCAPE[byte as usize]);
        run_start = at + 1;
        i = at + 1;
    }
    for (offset, &byte) in bytes[i..].iter().enumerate() {
        let at = i + offset;
        let escape = ESCAPE[byte as usize];
        if escape != 0 {
            if run_start < at {
                sink.put(&bytes[run_start..at]);
            }
            put_escape(sink, byte, escape);
            run_start = at + 1;
        }
    }
    if run_start < bytes.len() {
        sink.put(&bytes[run_start..]);
    }
}

/// Writes a quoted, escaped JSON string.
#[inline]
pub(super) fn put_str<S: Sink + ?Sized>(sink: &mut S, value: &str) {
    sink.put(b"\"");
    put_str_contents(sink, value);
    sink.put(b"\"");
}

/// Escapes `Display` output straight into the sink (no intermediate buffer).
struct EscapeAdapter<'a, S: ?Sized> {
    sink: &'a mut S,
}

impl<S: Sink + ?Sized> fmt::Write for EscapeAdapter<'_, S> {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        put_str_contents(self.sink, s);
        Ok(())
    }
}

/// Writes `value`'s `Display` output as a quoted, escaped JSON string.
pub(super) fn put_display<S, T>(sink: &mut S, value: &T) -> Result<(), SerializeError>
where
    S: Sink + ?Sized,
    T: fmt::Display + ?Sized,
{
    sink.put(b"\"");
    fmt::write(
        &mut EscapeAdapter { sink: &mut *sink },
        format_args!("{value}"),
    )
    .map_err(|_| SerializeError::Custom)?;
    sink.put(b"\"");
    Ok(())
}
