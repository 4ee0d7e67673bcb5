//! Numbers written as JSON: integers by a digit-pair table, floats in `ryu`'s shortest form
//! as serde_json prints them; map keys quoted.

use super::error::SerializeError;
use super::sink::Sink;
use crate::wire::scan::WORD_AT_A_TIME;

/// "00" "01" .. "99".
const DIGIT_PAIRS: [u8; 200] = {
    let mut table = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        table[2 * i] = b'0' + (i / 10) as u8;
        table[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    table
};

/// Room for an opening quote, a sign, the 20 digits of `u64::MAX` and a closing quote.
const INT64_BUF_LEN: usize = 23;

/// Room for an opening quote, a sign, the 39 digits of `u128::MAX` (or of `i128::MIN`'s
/// magnitude) and a closing quote.
const INT128_BUF_LEN: usize = 42;

/// Writes the decimal digits of `n` so that they end just before `end`; returns where they start.
/// Needs `end >= 20`.
#[inline]
fn format_u64<const N: usize>(buf: &mut [u8; N], mut end: usize, mut n: u64) -> usize {
    while n >= 10_000 {
        let rem = (n % 10_000) as usize;
        n /= 10_000;
        let hi = (rem / 100) * 2;
        let lo = (rem % 100) * 2;
        end -= 4;
        buf[end..end + 2].copy_from_slice(&DIGIT_PAIRS[hi..hi + 2]);
        buf[end + 2..end + 4].copy_from_slice(&DIGIT_PAIRS[lo..lo + 2]);
    }
    let mut n = n as usize; // < 10_000
    if n >= 100 {
        let lo = (n % 100) * 2;
        n /= 100;
        end -= 2;
        buf[end..end + 2].copy_from_slice(&DIGIT_PAIRS[lo..lo + 2]);
    }
    if n >= 10 {
        let d = n * 2;
        end -= 2;
        buf[end..end + 2].copy_from_slice(&DIGIT_PAIRS[d..d + 2]);
    } else {
        end -= 1;
        buf[end] = b'0' + n as u8;
    }
    end
}

/// Like [`format_u64`] for `u128`. Needs `end >= 39`.
#[inline]
fn format_u128<const N: usize>(buf: &mut [u8; N], mut end: usize, mut n: u128) -> usize {
    const TEN_POW_19: u128 = 10_000_000_000_000_000_000;
    while n > u128::from(u64::MAX) {
        let low = (n % TEN_POW_19) as u64;
        n /= TEN_POW_19;
        let start = format_u64(buf, end, low);
        let padded = end - 19;
        buf[padded..start].fill(b'0');
        end = padded;
    }
    format_u64(buf, end, n as u64)
}

/// Writes `[-]digits`, optionally in quotes (for map keys), with one `put`. `digits` writes the
/// magnitude so that it ends just before the given index and returns where it starts; the buffer
/// leaves room for the sign and quotes.
#[inline]
fn put_integer<S, const N: usize>(
    sink: &mut S,
    negative: bool,
    quoted: bool,
    digits: impl FnOnce(&mut [u8; N], usize) -> usize,
) where
    S: Sink + ?Sized,
{
    let mut buf = [0u8; N];
    let mut end = N;
    if quoted {
        end -= 1;
        buf[end] = b'"';
    }
    let mut start = digits(&mut buf, end);
    if negative {
        start -= 1;
        buf[start] = b'-';
    }
    if quoted {
        start -= 1;
        buf[start] = b'"';
    }
    sink.put(&buf[start..]);
}

/// Writes `n` (below 100) in one `put` of a length the compiler knows: small results, counts
/// and ids, without the digit buffer and the copy of a length known only at run time. Hosts
/// only (firmware keeps the one digit writer, for flash).
#[inline(always)]
fn put_small<S: Sink + ?Sized>(sink: &mut S, n: u64) {
    let n = n as usize;
    if n < 10 {
        sink.put(&[b'0' + n as u8]);
    } else if let Some(pair) = DIGIT_PAIRS.get(n * 2..n * 2 + 2) {
        sink.put(pair);
    }
}

#[inline]
pub(super) fn put_unsigned<S: Sink + ?Sized>(sink: &mut S, n: impl Into<u64>, quoted: bool) {
    let n = n.into();
    if WORD_AT_A_TIME && !quoted && n < 100 {
        return put_small(sink, n);
    }
    put_integer::<S, INT64_BUF_LEN>(sink, false, quoted, |buf, end| format_u64(buf, end, n));
}

#[inline]
pub(super) fn put_signed<S: Sink + ?Sized>(sink: &mut S, n: impl Into<i64>, quoted: bool) {
    let n: i64 = n.into();
    let magnitude = n.unsigned_abs();
    if WORD_AT_A_TIME && !quoted && (0..100).contains(&n) {
        return put_small(sink, magnitude);
    }
    put_integer::<S, INT64_BUF_LEN>(sink, n < 0, quoted, |buf, end| {
        format_u64(buf, end, magnitude)
    });
}

#[inline]
pub(super) fn put_u128<S: Sink + ?Sized>(sink: &mut S, n: u128, quoted: bool) {
    put_integer::<S, INT128_BUF_LEN>(sink, false, quoted, |buf, end| format_u128(buf, end, n));
}

#[inline]
pub(super) fn put_i128<S: Sink + ?Sized>(sink: &mut S, n: i128, quoted: bool) {
    let magnitude = n.unsigned_abs();
    put_integer::<S, INT128_BUF_LEN>(sink, n < 0, quoted, |buf, end| {
        format_u128(buf, end, magnitude)
    });
}

/// Writes `ryu`'s shortest round-trip form the way `serde_json` prints it. Recent `serde_json`
/// (1.0.154 here) formats floats with `zmij`, which writes positive exponents with an explicit sign
/// (`1e+16`) where `ryu` writes `1e16`; the digits are the same.
#[inline]
fn put_float_text<S: Sink + ?Sized>(sink: &mut S, text: &str) {
    let bytes = text.as_bytes();
    match bytes.iter().position(|&b| b == b'e') {
        Some(e) if bytes.get(e + 1) != Some(&b'-') => {
            sink.put(&bytes[..=e]);
            sink.put(b"+");
            sink.put(&bytes[e + 1..]);
        }
        _ => sink.put(bytes),
    }
}

#[inline]
pub(super) fn put_f64<S: Sink + ?Sized>(sink: &mut S, value: f64) -> Result<(), SerializeError> {
    if !value.is_finite() {
        return Err(SerializeError::NonFiniteFloat);
    }
    put_float_text(sink, ryu::Buffer::new().format_finite(value));
    Ok(())
}

/// `f32` through `zmij`, as `serde_json` writes it (same digits and exponent form, so no
/// fixing up). Not ryu: recent ryu computes an `f32`'s digits with its `f64` tables, 10 KiB of
/// flash for any firmware that answers one `f32` (2 KiB with its `small` feature); zmij's
/// `f32` path takes about 1 KiB (`examples/firmware-embassy`'s typed image: 2.6 KiB for an
/// `f32` result in all, the serializer's own code included).
#[inline]
pub(super) fn put_f32<S: Sink + ?Sized>(sink: &mut S, value: f32) -> Result<(), SerializeError> {
    if !value.is_finite() {
        return Err(SerializeError::NonFiniteFloat);
    }
    sink.put(zmij::Buffer::new().format_finite(value).as_bytes());
    Ok(())
}
