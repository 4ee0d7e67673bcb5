//! Unescaping: the contents of a JSON string decoded into UTF-8, into a caller's buffer, or
//! only counted, or compared with a text as they are decoded.

use core::fmt;

/// Errors from [`unescape_into`] and [`unescaped_len`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UnescapeError {
    /// `out` is too small; `required` is the exact decoded length.
    BufferTooSmall {
        /// Exact number of bytes the decoded string needs.
        required: usize,
    },
    /// A `\u` escape encodes an unpaired UTF-16 surrogate, which has no UTF-8 form.
    LoneSurrogate,
    /// A malformed or truncated escape (input that [`scan_string`](super::scan_string) would
    /// reject).
    InvalidEscape,
}

impl fmt::Display for UnescapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { required } => {
                write!(f, "buffer too small: {required} bytes required")
            }
            Self::LoneSurrogate => f.write_str("lone UTF-16 surrogate in \\u escape"),
            Self::InvalidEscape => f.write_str("invalid escape in string"),
        }
    }
}

impl core::error::Error for UnescapeError {}

/// Where decoded bytes go: a counter, or a buffer that also counts past its end.
trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

struct Counter(usize);

impl Sink for Counter {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        self.0 += bytes.len();
    }
}

struct Writer<'a> {
    out: &'a mut [u8],
    /// Total decoded length so far (may exceed `out.len()`).
    len: usize,
    /// Set once something did not fit; nothing more is written after that.
    overflow: bool,
}

impl Sink for Writer<'_> {
    #[inline(always)]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        if !self.overflow {
            match self.out.get_mut(self.len..end) {
                Some(dst) => dst.copy_from_slice(bytes),
                None => self.overflow = true,
            }
        }
        self.len = end;
    }
}

/// Compares decoded bytes with an expected text as they come, without a buffer.
struct Compare<'e> {
    rest: &'e [u8],
    equal: bool,
}

impl Sink for Compare<'_> {
    fn put(&mut self, bytes: &[u8]) {
        match self.rest.strip_prefix(bytes) {
            Some(rest) if self.equal => self.rest = rest,
            _ => self.equal = false,
        }
    }
}

/// True when escaped string contents decode to exactly `expected` (contents with a lone
/// surrogate escape decode to no text, so they equal none).
pub(crate) fn unescaped_eq(escaped: &[u8], expected: &[u8]) -> bool {
    let mut compare = Compare {
        rest: expected,
        equal: true,
    };
    decode(escaped, &mut compare).is_ok() && compare.equal && compare.rest.is_empty()
}

/// Four hex digits at `i` as a UTF-16 code unit.
#[inline]
fn hex4(s: &[u8], i: usize) -> Option<u32> {
    let mut v = 0u32;
    for k in 0..4 {
        let d = match *s.get(i + k)? {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | u32::from(d);
    }
    Some(v)
}

fn decode<S: Sink>(escaped: &[u8], sink: &mut S) -> Result<(), UnescapeError> {
    let mut i = 0;
    loop {
        let rest = escaped.get(i..).unwrap_or_default();
        let Some(k) = rest.iter().position(|&b| b == b'\\') else {
            sink.put(rest);
            return Ok(());
        };
        sink.put(rest.get(..k).unwrap_or_default());
        i += k; // at the backslash
        let simple = match escaped.get(i + 1) {
            Some(b'"') => b'"',
            Some(b'\\') => b'\\',
            Some(b'/') => b'/',
            Some(b'b') => 0x08,
            Some(b'f') => 0x0C,
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b't') => b'\t',
            Some(b'u') => 0,
            _ => return Err(UnescapeError::InvalidEscape),
        };
        if simple != 0 {
            sink.put(&[simple]);
            i += 2;
            continue;
        }
        let unit = hex4(escaped, i + 2).ok_or(UnescapeError::InvalidEscape)?;
        i += 6;
        let cp = match unit {
            0xD800..=0xDBFF => {
                if escaped.get(i) != Some(&b'\\') || escaped.get(i + 1) != Some(&b'u') {
                    return Err(UnescapeError::LoneSurrogate);
                }
                let low = hex4(escaped, i + 2).ok_or(UnescapeError::InvalidEscape)?;
                if !(0xDC00..=0xDFFF).contains(&low) {
                    return Err(UnescapeError::LoneSurrogate);
                }
                i += 6;
                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(UnescapeError::LoneSurrogate),
            _ => unit,
        };
        // Always `Some`: surrogates were handled above and `cp <= 0x10FFFF`.
        let ch = char::from_u32(cp).ok_or(UnescapeError::LoneSurrogate)?;
        let mut buf = [0u8; 4];
        sink.put(ch.encode_utf8(&mut buf).as_bytes());
    }
}

/// Decode the *contents* of a JSON string (the bytes between the quotes, still escaped) into
/// `out` as UTF-8. Returns the number of bytes written.
///
/// Handles all escapes, including `\uXXXX` surrogate pairs. An unpaired surrogate gives
/// [`UnescapeError::LoneSurrogate`] (the scanner accepts those, see the module docs). Raw bytes
/// are copied as they are: the contents are expected to come from a string that
/// [`scan_string`](super::scan_string) accepted, so they are already valid UTF-8.
///
/// If `out` is too small, returns [`UnescapeError::BufferTooSmall`] with the exact decoded
/// length; nothing useful is in `out` then. A content error (`LoneSurrogate`, `InvalidEscape`)
/// anywhere in the string takes precedence over `BufferTooSmall`.
pub fn unescape_into(escaped: &[u8], out: &mut [u8]) -> Result<usize, UnescapeError> {
    let mut w = Writer {
        out,
        len: 0,
        overflow: false,
    };
    decode(escaped, &mut w)?;
    if w.overflow {
        Err(UnescapeError::BufferTooSmall { required: w.len })
    } else {
        Ok(w.len)
    }
}

/// Exact decoded length of escaped string contents (same errors as [`unescape_into`], never
/// `BufferTooSmall`).
pub fn unescaped_len(escaped: &[u8]) -> Result<usize, UnescapeError> {
    let mut c = Counter(0);
    decode(escaped, &mut c)?;
    Ok(c.0)
}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unescape_cases() {
        let mut out = [0u8; 64];
        let cases: &[(&[u8], &[u8])] = &[
            (b"", b""),
            (b"plain", b"plain"),
            (b"a\\nb\\tc", b"a\nb\tc"),
            (b"\\\"\\\\\\/\\b\\f\\n\\r\\t", b"\"\\/\x08\x0c\n\r\t"),
            (b"\\u0041\\u00e9\\u20AC", "Aé€".as_bytes()),
            (b"\\uD834\\uDD1E!", "𝄞!".as_bytes()),
            (b"\\ud83d\\ude00", "😀".as_bytes()),
            (b"\\u0000", b"\x00"),
            ("raw é 日".as_bytes(), "raw é 日".as_bytes()),
        ];
        for (esc, want) in cases {
            let n = unescape_into(esc, &mut out).unwrap();
            assert_eq!(&out[..n], *want, "{esc:?}");
            assert_eq!(unescaped_len(esc), Ok(want.len()));
        }
        for lone in [
            &b"\\uD800"[..],
            b"\\uDC00",
            b"\\uD800x",
            b"\\uD800\\n",
            b"\\uD800\\uD800",
            b"\\uDD1E\\uD834",
        ] {
            assert_eq!(
                unescape_into(lone, &mut out),
                Err(UnescapeError::LoneSurrogate)
            );
            assert_eq!(unescaped_len(lone), Err(UnescapeError::LoneSurrogate));
        }
        for bad in [&b"\\"[..], b"\\x", b"\\u12", b"\\u12G4", b"\\uD800\\u12"] {
            assert_eq!(
                unescape_into(bad, &mut out),
                Err(UnescapeError::InvalidEscape)
            );
        }
        // Too small: exact required length, for each possible short size.
        let esc = b"ab\\u00e9\\uD834\\uDD1Ecd\\n";
        let need = unescaped_len(esc).unwrap();
        assert_eq!(need, 2 + 2 + 4 + 2 + 1);
        for size in 0..need {
            assert_eq!(
                unescape_into(esc, &mut out[..size]),
                Err(UnescapeError::BufferTooSmall { required: need })
            );
        }
        assert_eq!(unescape_into(esc, &mut out[..need]), Ok(need));
        // Content errors take precedence over size.
        assert_eq!(
            unescape_into(b"abcdef\\uD800", &mut out[..1]),
            Err(UnescapeError::LoneSurrogate)
        );
    }
}
