//! Rendering integers into JSON text and reading JSON integers, with 32-bit divisions only
//! and no deserializer (shared by the firmware images).

use rpcwire::wire::ser::RAW_JSON_TOKEN;
use rpcwire::wire::RawJson;
use serde::{Serialize, Serializer};

/// Room for any result rendered here: the longest, `rpc.stats`, is at most 378 bytes (127 of
/// member names, ten numbers of up to 21 characters with 4 of punctuation each, the
/// closing brace), so nothing is ever truncated and the text is always the JSON value it was
/// built as.
pub const TEXT_LEN: usize = 384;

/// A small text buffer for rendering results.
pub struct Text {
    buf: [u8; TEXT_LEN],
    len: usize,
}

impl Text {
    /// An empty buffer.
    pub fn new() -> Self {
        Text {
            buf: [0; TEXT_LEN],
            len: 0,
        }
    }

    /// Appends bytes (truncated at the capacity, which no rendering reaches: see [`TEXT_LEN`]).
    pub fn put(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            }
        }
        self
    }

    /// Appends an integer in decimal.
    pub fn int(&mut self, n: i64) -> &mut Self {
        if n < 0 {
            self.put(b"-");
        }
        let mut v = n.unsigned_abs();
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            let (q, r) = div_small(v, 10);
            i -= 1;
            digits[i] = b'0' + r as u8;
            v = q;
            if v == 0 {
                break;
            }
        }
        self.put(&digits[i..])
    }

    /// Drops the last `n` bytes rendered.
    #[allow(dead_code)] // `rpc.stats` only, which not every image has
    pub fn truncate(&mut self, n: usize) -> &mut Self {
        self.len = self.len.saturating_sub(n);
        self
    }

    /// The text rendered so far.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }
}

/// `v / d` and `v % d` for a divisor below 2^16, with 32-bit divisions only: the Cortex-M3
/// divides 32-bit numbers in hardware, while a `u64` division links about 900 bytes of
/// compiler-builtins (`__aeabi_uldivmod`).
pub fn div_small(v: u64, d: u16) -> (u64, u32) {
    let d = u32::from(d);
    let hi = (v >> 32) as u32;
    let lo = v as u32;
    // Long division in 16-bit steps: with a remainder below d < 2^16, every partial dividend
    // fits in 32 bits.
    let (q_hi, r) = (hi / d, hi % d);
    let mid = (r << 16) | (lo >> 16);
    let (q_mid, r) = (mid / d, mid % d);
    let low = (r << 16) | (lo & 0xFFFF);
    let (q_low, r) = (low / d, low % d);
    (
        (u64::from(q_hi) << 32) | u64::from((q_mid << 16) | q_low),
        r,
    )
}

/// A JSON integer as an `i64`: `None` for any other value (fractions and exponents included)
/// and on overflow, as decoding with serde would give, without linking a deserializer.
pub fn int(raw: RawJson<'_>) -> Option<i64> {
    let bytes = raw.as_bytes();
    let (negative, digits) = match bytes.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, bytes),
    };
    // 19 digits stay below 10^19 < 2^64; more overflow an i64 (JSON has no leading zeros).
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut magnitude = 0u64;
    for &b in digits {
        let digit = b.wrapping_sub(b'0');
        if digit > 9 {
            return None;
        }
        magnitude = magnitude * 10 + u64::from(digit);
    }
    if negative {
        0i64.checked_sub_unsigned(magnitude)
    } else {
        i64::try_from(magnitude).ok()
    }
}

/// JSON text sent verbatim: a valid JSON value, which the caller guarantees (this module's
/// own renderings, an already validated [`RawJson`], a constant). Given to the serializer as
/// bytes, so that no UTF-8 check (and no `core::str::from_utf8`, 600 bytes of flash) is linked.
#[derive(Clone, Copy)]
pub struct Raw<'a>(pub &'a [u8]);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(RAW_JSON_TOKEN, &Bytes(self.0))
    }
}

/// Bytes that serialize as bytes (`[u8]` itself serializes as a sequence).
struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}
