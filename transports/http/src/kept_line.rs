//! Finding, in a request head on the fast path, the credential line whose value is the one the
//! connection keeps ([`crate::fast_auth`]), so that the head is parsed without it.
//!
//! Why: a JWT is several hundred bytes, and httparse checks every byte of a header value it
//! parses (~650 instructions for a 690-byte token, more than the rest of the head). A value
//! equal, byte for byte, to one httparse has already let through on this connection needs no
//! second check: the comparison proves it.
//!
//! Why leaving the line out changes nothing else: httparse reads a request head line by line,
//! with no state carried from one header line to the next but the number of fields. Take a
//! head `A L B` where
//! - the buffer starts with `POST ` (no empty lines are skipped before the request line, so
//!   the request line starts at 0 and ends at or before the first LF, or is refused there);
//! - `A` ends with an LF, so httparse, when it reaches the end of `A`, has either refused the
//!   head already, or ended it (an empty line: the head's length then shows it), or is at the
//!   start of a header line;
//! - `L` is `name:`, spaces or tabs, the kept value, CR LF, where `name` is the credential
//!   header's name in any case: a header line httparse takes, whose value is the kept one
//!   (the kept value is one httparse returned, so it neither starts nor ends with a space or
//!   tab and holds no CR, LF or other control byte but tabs);
//! - `B` starts with a byte that is not a space or tab (not a folded continuation of `L`).
//!
//! Then httparse's answer for `A B` with one field slot fewer is its answer for `A L B`
//! without the field `L`: the same refusal, the same partial head, or the same fields with
//! `L` missing and the head `L`'s length shorter. Every byte of `A` and `B` is still checked
//! by httparse exactly as before; only the kept value is taken on the comparison's word.

use crate::fast::MAX_HEAD;

/// A credential line found in a head: byte offsets in the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct KeptLine {
    /// Where the line starts (after the previous line's LF).
    pub(crate) start: usize,
    /// Where its value starts.
    pub(crate) value: usize,
    /// Where the next line starts (after the line's CR LF).
    pub(crate) end: usize,
}

impl KeptLine {
    /// The line's length, CR LF included.
    pub(crate) fn len(&self) -> usize {
        self.end - self.start
    }
}

/// The line of `buf` (a request head, perhaps followed by its body) that is `name` (lower
/// case) with the value `key`, as the module's docs say it must stand; `None` when there is
/// none (then the head is parsed whole). `hint`: where the line started in the connection's
/// last request (clients send their fields in the same order), looked at first, and set to
/// where the line is found.
#[inline]
pub(crate) fn find(buf: &[u8], name: &[u8], key: &[u8], hint: &mut usize) -> Option<KeptLine> {
    if !buf.starts_with(b"POST ") {
        return None;
    }
    match line_at(buf, *hint, name, key) {
        Some(line) => Some(line),
        None => search(buf, name, key, hint),
    }
}

/// [`find`] where the hint fails: line by line from the request line's end, up to the head's
/// end (an empty line) or [`MAX_HEAD`], beyond which the fast path does not read a head.
#[cold]
#[inline(never)]
fn search(buf: &[u8], name: &[u8], key: &[u8], hint: &mut usize) -> Option<KeptLine> {
    let mut at = memchr::memchr(b'\n', buf)? + 1;
    while at < buf.len().min(MAX_HEAD) {
        if matches!(buf[at], b'\r' | b'\n') {
            return None;
        }
        if let Some(line) = line_at(buf, at, name, key) {
            *hint = at;
            return Some(line);
        }
        at += memchr::memchr(b'\n', &buf[at..])? + 1;
    }
    None
}

/// The credential line starting at `at`, if it is one (see the module's docs).
#[inline(always)] // runs for every request: no call
fn line_at(buf: &[u8], at: usize, name: &[u8], key: &[u8]) -> Option<KeptLine> {
    // `at` is 1 or more (0 wraps to a byte that is not there) and follows an LF.
    if buf.get(at.wrapping_sub(1)) != Some(&b'\n') {
        return None;
    }
    let rest = &buf[at..];
    let (n, k) = (name.len(), key.len());
    // The name, a colon, the value, CR LF and a byte after them, at the least.
    if rest.len() < n + k + 4 || !name_is(&rest[..n], name) || rest[n] != b':' {
        return None;
    }
    let mut value = n + 1;
    while matches!(rest.get(value), Some(b' ' | b'\t')) {
        value += 1;
    }
    // The value, CR LF, and a next line that is not a continuation.
    let after = rest.get(value..value + k + 3)?;
    if after[..k] != *key || after[k..k + 2] != *b"\r\n" || matches!(after[k + 2], b' ' | b'\t') {
        return None;
    }
    Some(KeptLine {
        start: at,
        value: at + value,
        end: at + value + k + 2,
    })
}

/// Whether `bytes` (any bytes) are `lower` (lower-case letters, digits and `-`) but for the
/// case of their letters, eight bytes at a time (`eq_ignore_ascii_case` costs ~15
/// instructions a byte, and this runs for every request). Or-ing 0x20 into a byte folds
/// `A`-`Z` onto `a`-`z`; the only other bytes it folds onto a letter, a digit or `-` are
/// control bytes (below 0x20: 0x0D onto `-`, 0x10-0x19 onto the digits), which are refused
/// apart ([`crate::fast::field_is`] has no such test: httparse has checked its names).
fn name_is(bytes: &[u8], lower: &[u8]) -> bool {
    const FOLD: u64 = u64::from_ne_bytes([0x20; 8]);
    const SPACES: u64 = u64::from_ne_bytes([0x20; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    let n = lower.len();
    if bytes.len() != n {
        return false;
    }
    if n < 8 {
        return bytes
            .iter()
            .zip(lower)
            .all(|(&b, &l)| b | 0x20 == l && b >= 0x20);
    }
    let word = |s: &[u8], at: usize| u64::from_ne_bytes(s[at..at + 8].try_into().unwrap_or([0; 8]));
    // Whole words, the last one ending with the name (overlapping the one before it).
    let mut at = 0;
    loop {
        let from = at.min(n - 8);
        let w = word(bytes, from);
        // Some byte of `w` below 0x20: exact for any word (the borrow of the subtraction
        // reaches a higher byte only from a byte that is itself below 0x20).
        let control = w.wrapping_sub(SPACES) & !w & HIGH != 0;
        if w | FOLD != word(lower, from) || control {
            return false;
        }
        if from == n - 8 {
            return true;
        }
        at += 8;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"Bearer abc.def";

    fn found(head: &str) -> Option<(usize, usize, usize)> {
        let mut hint = 0;
        find(head.as_bytes(), b"authorization", KEY, &mut hint).map(|l| (l.start, l.value, l.end))
    }

    #[test]
    fn the_kept_line_is_found_in_any_case_and_place() {
        let head = "POST / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc.def\r\n\r\n";
        let start = head.find("Authorization").unwrap();
        let value = head.find("Bearer").unwrap();
        assert_eq!(found(head), Some((start, value, value + KEY.len() + 2)));
        let first = "POST / HTTP/1.1\r\nAUTHORIZATION:\t \tBearer abc.def\r\nHost: h\r\n\r\n";
        assert_eq!(found(first).map(|l| l.0), Some(17));
        // After a bare LF (httparse ends a line there too).
        let lf = "POST / HTTP/1.1\nHost: h\nauthorization:Bearer abc.def\r\n\r\n";
        assert_eq!(found(lf).map(|l| l.0), Some(lf.find("auth").unwrap()));
    }

    #[test]
    fn anything_but_the_kept_line_as_it_must_stand_is_not_found() {
        for head in [
            // Another value, a longer one, trailing white space, a bare LF after it.
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.deg\r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def2\r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def \r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def\n\r\n",
            // A folded continuation, or nothing yet after the line.
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n x\r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n\tx\r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n",
            // Another name, a space before the colon, control bytes folding onto letters.
            "POST / HTTP/1.1\r\nAuthorisation: Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nAuthorization : Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nX-Authorization: Bearer abc.def\r\n\r\n",
            // In the request line, after the head's end, before the request line.
            "POST /Authorization: Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\n\r\nAuthorization: Bearer abc.def\r\n\r\n",
            "\r\nPOST / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n\r\n",
            "GET / HTTP/1.1\r\nAuthorization: Bearer abc.def\r\n\r\n",
        ] {
            assert_eq!(found(head), None, "{head:?}");
        }
        // A name with `-` does not take a CR in its place.
        let mut hint = 0;
        let head = b"POST / HTTP/1.1\r\nx\rapi\rkey: k\r\n\r\n";
        assert_eq!(find(head, b"x-api-key", b"k", &mut hint), None);
        let head = b"POST / HTTP/1.1\r\nX-API-KEY: k\r\n\r\n";
        assert!(find(head, b"x-api-key", b"k", &mut hint).is_some());
    }

    /// `name_is` agrees with a case-insensitive comparison for every byte against every
    /// character a lower-case name may hold, alone, in a word and after one.
    #[test]
    fn names_compare_exactly_for_any_byte() {
        let lower = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
        for b in 0..=255u8 {
            for l in (0..=255u8).filter(|&l| lower(l)) {
                let expected = b.eq_ignore_ascii_case(&l);
                assert_eq!(name_is(&[b], &[l]), expected, "{b:#x} ~ {l:#x}");
                for at in [0, 3, 7, 8, 12] {
                    let (mut bytes, mut want) = (*b"x-api-key-123", *b"x-api-key-123");
                    bytes[at] = b;
                    want[at] = l;
                    assert_eq!(name_is(&bytes, &want), expected, "{b:#x} ~ {l:#x} at {at}");
                }
            }
        }
        assert!(!name_is(b"authorizatio", b"authorization"));
        // Every length around the word size, every place.
        let name = b"a-0b-1c-2d-3e-4f-5g-6h";
        for len in 1..=name.len() {
            let lower = &name[..len];
            assert!(name_is(&lower.to_ascii_uppercase(), lower));
            for at in 0..len {
                for b in [0x0d, 0x10, 0x11, 0x41, 0x42, b'x', 0xcd, 0x8d] {
                    let mut bytes = lower.to_vec();
                    bytes[at] = b;
                    let expected = bytes.eq_ignore_ascii_case(lower);
                    assert_eq!(name_is(&bytes, lower), expected, "{bytes:?}");
                }
            }
        }
    }

    #[test]
    fn the_hint_is_looked_at_first_and_kept() {
        let head = "POST / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc.def\r\n\r\n";
        let at = head.find("Authorization").unwrap();
        let mut hint = 0;
        assert!(find(head.as_bytes(), b"authorization", KEY, &mut hint).is_some());
        assert_eq!(hint, at);
        // A hint that is not a line's start, or past the buffer, is passed over.
        for mut hint in [at + 1, 5, head.len(), usize::MAX] {
            let line = find(head.as_bytes(), b"authorization", KEY, &mut hint);
            assert_eq!(line.map(|l| l.start), Some(at));
        }
    }
}
