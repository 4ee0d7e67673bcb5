//! Word-at-a-time helpers: eight bytes of a string examined per step on 64-bit hosts, with
//! masks that are exact per byte.

/// Whether string contents are scanned eight bytes per step.
///
/// On for 64-bit targets, where a `u64` is one register. Off elsewhere: on a 32-bit
/// microcontroller every 64-bit mask operation takes several instructions, and the word loops
/// cost about 1 KiB of flash in a firmware image; there the byte loops, which are exact on
/// their own (the word loops only skip ahead over bytes the byte loops would also pass), do
/// all the work. Both forms are compiled and compared in this module's tests on every host.
pub const WORD_AT_A_TIME: bool = cfg!(target_pointer_width = "64");

pub(super) const LO: u64 = 0x0101_0101_0101_0101;
pub(super) const HI: u64 = 0x8080_8080_8080_8080;

/// Reads 8 bytes at `i` as a little-endian word, if that many remain.
#[inline(always)]
pub(crate) fn load8(input: &[u8], i: usize) -> Option<u64> {
    // Callers keep `i <= input.len() + 1 <= isize::MAX`, so `i + 8` cannot overflow.
    let chunk = input.get(i..i + 8)?;
    match <[u8; 8]>::try_from(chunk) {
        Ok(a) => Some(u64::from_le_bytes(a)),
        Err(_) => None,
    }
}

/// The (fewer than eight) bytes from `i` to the end as a little-endian word, zero-padded.
#[inline(always)]
pub(super) fn load_tail(input: &[u8], i: usize) -> u64 {
    // The last word of the input shifted down: one load instead of a copy byte by byte.
    if let Some(last) = input.len().checked_sub(8) {
        return match (load8(input, last), i.checked_sub(last)) {
            (Some(x), Some(skip @ 0..=7)) => x >> (8 * skip),
            _ => 0,
        };
    }
    let mut word = [0u8; 8];
    let rest = input.get(i..).unwrap_or_default();
    for (w, b) in word.iter_mut().zip(rest) {
        *w = *b;
    }
    u64::from_le_bytes(word)
}

/// High bit set in each byte of `x` that is `"`, `\` or below 0x20 (bytes >= 0x80 are not
/// flagged).
///
/// Exact per byte: every addition below stays within its byte (no carries between lanes), so
/// the lowest set bit identifies the first such byte.
#[inline(always)]
pub(super) fn string_special(x: u64) -> u64 {
    let x7 = x & !HI; // low 7 bits of each byte
    let ge_space = x7 + LO * 0x60; // high bit set iff x7 >= 0x20
    let not_quote = (x7 ^ (LO * b'"' as u64)) + LO * 0x7f; // high bit set iff x7 != '"'
    let not_bslash = (x7 ^ (LO * b'\\' as u64)) + LO * 0x7f; // high bit set iff x7 != '\\'
    !x & !(ge_space & not_quote & not_bslash) & HI
}

/// High bit set in each byte of `x` that is `"` or `\` (exact per byte, as above).
#[inline(always)]
pub(super) fn quote_or_backslash(x: u64) -> u64 {
    let x7 = x & !HI;
    let not_quote = (x7 ^ (LO * b'"' as u64)) + LO * 0x7f;
    let not_bslash = (x7 ^ (LO * b'\\' as u64)) + LO * 0x7f;
    !(x & HI) & !(not_quote & not_bslash) & HI
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tail word is the bytes from `i` to the end, zero-padded, however it is loaded.
    #[test]
    fn tail_words_are_the_last_bytes_padded() {
        let bytes: [u8; 20] = core::array::from_fn(|k| 0xa0 + k as u8);
        for len in 0..=20 {
            let input = &bytes[..len];
            for i in len.saturating_sub(8)..=len + 1 {
                let mut word = [0u8; 8];
                for (w, b) in word.iter_mut().zip(input.get(i..).unwrap_or_default()) {
                    *w = *b;
                }
                if i + 8 > len {
                    assert_eq!(load_tail(input, i), u64::from_le_bytes(word), "{len} {i}");
                }
            }
        }
    }

    #[test]
    fn swar_masks_are_exact() {
        for b in 0..=255u8 {
            let special = b < 0x20 || b == b'"' || b == b'\\';
            let qb = b == b'"' || b == b'\\';
            for p in 0..7 {
                // `b` at position `p`, a quote at position 7, other bytes non-special (some high).
                let mut bytes = [b'a', 0xC3, 0xA9, b' ', 0xFF, b'~', 0x80, b'"'];
                bytes[p] = b;
                let x = u64::from_le_bytes(bytes);
                let first = |m: u64| (m.trailing_zeros() / 8) as usize;
                assert_eq!(
                    first(string_special(x)),
                    if special { p } else { 7 },
                    "{b:#x}@{p}"
                );
                assert_eq!(
                    first(quote_or_backslash(x)),
                    if qb { p } else { 7 },
                    "{b:#x}@{p}"
                );
            }
            let all = u64::from_le_bytes([b; 8]);
            assert_eq!(string_special(all) != 0, special, "{b:#x}");
            assert_eq!(quote_or_backslash(all) != 0, qb, "{b:#x}");
        }
    }
}
