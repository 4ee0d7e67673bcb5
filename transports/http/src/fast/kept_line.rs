//! Finding, in a request head on the fast path, the credential line whose value is the one the
//! connection keeps ([`super::auth`]), so that the head is parsed without it.
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

use super::limits::MAX_HEAD;

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

/// Where the kept credential's line stood in the connection's last request, and its bytes
/// there. Clients send their fields in the same order and spelling from one request to the
/// next, so the next head most likely has the very same line at the same place: then one
/// comparison of the whole line (name, colon, spaces, value, CR LF) stands for
/// [`line_at`]'s checks of each part, which these bytes passed when they were found.
#[derive(Debug, Default)]
pub(crate) struct LastLine {
    /// Where the line started (a hint: heads differ, and are checked anew).
    at: usize,
    /// The line's bytes, CR LF included; empty until a line is found.
    bytes: Vec<u8>,
    /// Where the value starts in `bytes`.
    value: usize,
}

impl LastLine {
    /// The line at `self.at` in `buf` if it has the last line's bytes and is followed by a
    /// byte that is not a space or tab: what [`line_at`] would find there, since the bytes
    /// passed its checks when they were found and the place follows an LF.
    #[inline(always)] // runs for every request: no call
    fn again(&self, buf: &[u8]) -> Option<KeptLine> {
        let (at, len) = (self.at, self.bytes.len());
        // `at` is 1 or more (0 wraps to a byte that is not there) and follows an LF.
        if len == 0 || buf.get(at.wrapping_sub(1)) != Some(&b'\n') {
            return None;
        }
        // The line and the byte after it: at `end` (the first byte of the next line).
        let end = at.checked_add(len)?;
        if buf.get(at..end)? != self.bytes || matches!(buf.get(end)?, b' ' | b'\t') {
            return None;
        }
        Some(KeptLine {
            start: at,
            value: at + self.value,
            end,
        })
    }

    /// Keeps `line` of `buf` for the next request.
    fn keep(&mut self, buf: &[u8], line: KeptLine) {
        self.at = line.start;
        self.bytes.clear();
        self.bytes.extend_from_slice(&buf[line.start..line.end]);
        self.value = line.value - line.start;
    }
}

/// The line of `buf` (a request head, perhaps followed by its body) that is `name` (lower
/// case) with the value `key`, as the module's docs say it must stand; `None` when there is
/// none (then the head is parsed whole). `last`: the line as it stood in the connection's last
/// request, looked for first (at its place, byte for byte), and set to the line found.
#[inline]
pub(crate) fn find(buf: &[u8], name: &[u8], key: &[u8], last: &mut LastLine) -> Option<KeptLine> {
    if !buf.starts_with(b"POST ") {
        return None;
    }
    if let Some(line) = last.again(buf) {
        return Some(line);
    }
    let line = match line_at(buf, last.at, name, key) {
        Some(line) => line,
        None => search(buf, name, key)?,
    };
    last.keep(buf, line);
    Some(line)
}

/// [`find`] where the last line is not at its place: line by line from the request line's
/// end, up to the head's end (an empty line) or [`MAX_HEAD`], beyond which the fast path does
/// not read a head.
#[cold]
#[inline(never)]
fn search(buf: &[u8], name: &[u8], key: &[u8]) -> Option<KeptLine> {
    let mut at = memchr::memchr(b'\n', buf)? + 1;
    while at < buf.len().min(MAX_HEAD) {
        if matches!(buf[at], b'\r' | b'\n') {
            return None;
        }
        if let Some(line) = line_at(buf, at, name, key) {
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
/// apart ([`field_is`](super::head::field_is) has no such test: httparse has checked its names).
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
        let mut last = LastLine::default();
        find(head.as_bytes(), b"authorization", KEY, &mut last).map(|l| (l.start, l.value, l.end))
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
        let mut last = LastLine::default();
        let head = b"POST / HTTP/1.1\r\nx\rapi\rkey: k\r\n\r\n";
        assert_eq!(find(head, b"x-api-key", b"k", &mut last), None);
        let head = b"POST / HTTP/1.1\r\nX-API-KEY: k\r\n\r\n";
        assert!(find(head, b"x-api-key", b"k", &mut last).is_some());
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
    fn the_last_line_is_looked_for_at_its_place_and_kept() {
        let head = "POST / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc.def\r\n\r\n";
        let at = head.find("Authorization").unwrap();
        let mut last = LastLine::default();
        assert!(find(head.as_bytes(), b"authorization", KEY, &mut last).is_some());
        assert_eq!(last.at, at);
        assert_eq!(last.bytes, b"Authorization: Bearer abc.def\r\n");
        // Found again at its place, by its bytes.
        assert_eq!(last.again(head.as_bytes()).map(|l| l.start), Some(at));
        // A place that is not a line's start, or past the buffer, is passed over.
        for hint in [at + 1, 5, head.len(), usize::MAX] {
            let mut last = LastLine {
                at: hint,
                ..LastLine::default()
            };
            let line = find(head.as_bytes(), b"authorization", KEY, &mut last);
            assert_eq!(line.map(|l| l.start), Some(at));
            assert_eq!(last.at, at);
        }
    }

    /// The last line's bytes at its place are what `line_at` finds there and nothing else:
    /// the same line spelt otherwise, moved, cut, followed by a continuation or by nothing,
    /// or not after an LF, is checked part by part (and found or not as `line_at` says).
    #[test]
    fn the_last_line_again_is_what_line_at_finds() {
        let first = "POST / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc.def\r\n\r\n";
        let mut last = LastLine::default();
        assert!(find(first.as_bytes(), b"authorization", KEY, &mut last).is_some());
        let at = last.at;
        for head in [
            first,
            "POST / HTTP/1.1\r\nHost: h\r\nauthorization:\tBearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer abc.def\r\n x\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer abc.def\r\n\tx\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer abc.def\r\n",
            "POST / HTTP/1.1\r\nHost: g\r\nAuthorization: Bearer abc.deff\r\n\r\n",
            "POST / HTTP/1.1\r\nHost:  hAuthorization: Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: \rAuthorization: Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: hh\r\nAuthorization: Bearer abc.def\r\n\r\n",
            "POST / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer abc.de",
        ] {
            let bytes = head.as_bytes();
            let again = last.again(bytes);
            if let Some(line) = again {
                assert_eq!(
                    line_at(bytes, at, b"authorization", KEY),
                    Some(line),
                    "{head:?}"
                );
            }
            let mut fresh = LastLine::default();
            let whole = find(bytes, b"authorization", KEY, &mut fresh);
            let mut kept = LastLine {
                at,
                bytes: last.bytes.clone(),
                value: last.value,
            };
            assert_eq!(
                find(bytes, b"authorization", KEY, &mut kept),
                whole,
                "{head:?}"
            );
        }
        // Only the first head is found again by its bytes alone.
        assert!(last.again(first.as_bytes()).is_some());
        let spelt = "POST / HTTP/1.1\r\nHost: h\r\nauthorization:\tBearer abc.def\r\n\r\n";
        assert_eq!(last.again(spelt.as_bytes()), None);
    }
}
