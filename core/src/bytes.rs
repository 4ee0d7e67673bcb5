//! Byte helpers shared by the wire layer and the connection: a byte search, and decimal
//! digits read and written without 64-bit division (firmware links no division routine).

use crate::wire::ser::Sink;

/// Position of `needle` in `hay[from..]`, as an offset into `hay`.
pub(crate) fn find_byte(needle: u8, hay: &[u8], from: usize) -> Option<usize> {
    let hay = hay.get(from..)?;
    // Very short haystacks (names) are faster with a plain loop than a SIMD call.
    #[cfg(feature = "std")]
    if hay.len() >= 16 {
        return memchr::memchr(needle, hay).map(|i| i + from);
    }
    hay.iter().position(|&b| b == needle).map(|i| i + from)
}

/// Parses plain decimal digits (as JSON writes an unsigned integer) without overflow.
pub(crate) fn parse_u64(digits: &[u8]) -> Option<u64> {
    if digits.is_empty() || digits.len() > 20 || (digits.len() > 1 && digits.first() == Some(&b'0'))
    {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        let d = b.checked_sub(b'0').filter(|d| *d < 10)?;
        acc.checked_mul(10)?.checked_add(u64::from(d))
    })
}

/// Writes `n` in decimal. Long division by 10 over 16-bit limbs, so that firmware links no
/// 64-bit division routine.
pub(crate) fn put_u64(sink: &mut impl Sink, n: u64) {
    let mut limbs = [
        (n >> 48) as u32,
        (n >> 32) as u32 & 0xFFFF,
        (n >> 16) as u32 & 0xFFFF,
        n as u32 & 0xFFFF,
    ];
    let mut digits = [0u8; 20];
    let mut len = 0;
    for slot in digits.iter_mut().rev() {
        let mut rem = 0u32;
        for limb in limbs.iter_mut() {
            let cur = (rem << 16) | *limb;
            *limb = cur / 10;
            rem = cur % 10;
        }
        *slot = b'0' + rem as u8;
        len += 1;
        if limbs.iter().all(|&l| l == 0) {
            break;
        }
    }
    sink.put(digits.get(digits.len() - len..).unwrap_or(&[]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ser::SliceSink;

    #[test]
    fn decimal_digits_of_any_u64() {
        for n in [
            0,
            1,
            9,
            10,
            65535,
            65536,
            4294967296,
            9007199254740993,
            u64::MAX,
        ] {
            let mut buf = [0u8; 20];
            let mut sink = SliceSink::new(&mut buf);
            put_u64(&mut sink, n);
            assert_eq!(sink.written().unwrap(), std::format!("{n}").as_bytes());
        }
    }
}
