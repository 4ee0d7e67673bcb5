//! Byte helpers shared by the wire layer and the connection: a byte search, and decimal
//! digits read and written without 64-bit division (firmware links no division routine).

use crate::wire::ser::Sink;

/// True when `needle` is in `hay`. Names of 8 to 16 bytes (most method names) take two word
/// loads on hosts, overlapping when shorter than 16: a yes or no needs no position, and the
/// search's call and loop cost several times as much for them.
#[inline]
pub(crate) fn contains_byte(needle: u8, hay: &[u8]) -> bool {
    if crate::wire::scan::WORD_AT_A_TIME && (8..=16).contains(&hay.len()) {
        const LO: u64 = 0x0101_0101_0101_0101;
        const HI: u64 = 0x8080_8080_8080_8080;
        let word = |at: usize| match hay.get(at..at + 8).map(<[u8; 8]>::try_from) {
            Some(Ok(w)) => u64::from_le_bytes(w) ^ (LO * u64::from(needle)),
            // Never: both loads are inside. Flagged as a find, so that the answer stays safe.
            _ => 0,
        };
        let (a, b) = (word(0), word(hay.len() - 8));
        // A zero byte in either word (see `find_byte`; here any flag means found).
        return (a.wrapping_sub(LO) & !a | b.wrapping_sub(LO) & !b) & HI != 0;
    }
    find_byte(needle, hay, 0).is_some()
}

/// Position of `needle` in `hay[from..]`, as an offset into `hay`.
pub(crate) fn find_byte(needle: u8, hay: &[u8], from: usize) -> Option<usize> {
    let hay = hay.get(from..)?;
    // Very short haystacks (names) are faster a word at a time than through a SIMD call,
    // whose set-up costs as much as a few words.
    #[cfg(feature = "std")]
    if hay.len() >= 16 {
        return memchr::memchr(needle, hay).map(|i| i + from);
    }
    let mut done = 0;
    if crate::wire::scan::WORD_AT_A_TIME {
        const LO: u64 = 0x0101_0101_0101_0101;
        const HI: u64 = 0x8080_8080_8080_8080;
        for chunk in hay.chunks_exact(8) {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            let x = u64::from_le_bytes(word) ^ (LO * u64::from(needle));
            // High bit set in each zero byte of `x` (a borrow can flag a byte above a zero
            // byte, never below one, so the lowest flag is exact).
            let zero = x.wrapping_sub(LO) & !x & HI;
            if zero != 0 {
                return Some(from + done + (zero.trailing_zeros() / 8) as usize);
            }
            done += 8;
        }
    }
    let rest = hay.get(done..).unwrap_or_default();
    rest.iter()
        .position(|&b| b == needle)
        .map(|i| i + from + done)
}

/// Copies `src` into `dst`, of the same length. Up to 16 bytes (ids, short names and
/// values) on hosts: two loads and two stores of a fixed width, overlapping when shorter,
/// instead of a call to `memcpy`, whose call and size dispatch cost more than the copy.
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub(crate) fn copy_bytes(dst: &mut [u8], src: &[u8]) {
    let n = src.len();
    if crate::wire::scan::WORD_AT_A_TIME && n <= 16 && dst.len() == n {
        if n >= 8 {
            copy_fixed::<8>(dst, src, 0);
            copy_fixed::<8>(dst, src, n - 8);
        } else if n >= 4 {
            copy_fixed::<4>(dst, src, 0);
            copy_fixed::<4>(dst, src, n - 4);
        } else if n > 0 {
            // One to three bytes: the first, the middle and the last cover them.
            for i in [0, n / 2, n - 1] {
                if let (Some(d), Some(&b)) = (dst.get_mut(i), src.get(i)) {
                    *d = b;
                }
            }
        }
        return;
    }
    dst.copy_from_slice(src);
}

/// `dst[at..at + N] = src[at..at + N]`, when both are inside.
#[inline(always)]
fn copy_fixed<const N: usize>(dst: &mut [u8], src: &[u8], at: usize) {
    if let (Some(d), Some(s)) = (dst.get_mut(at..at + N), src.get(at..at + N)) {
        d.copy_from_slice(s);
    }
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

    /// The needle's neighbours and its high-bit twin.
    fn near_misses(needle: u8) -> [u8; 4] {
        [
            needle ^ 1,
            needle.wrapping_add(1),
            needle.wrapping_sub(1),
            needle ^ 0x80,
        ]
    }

    /// 200 bytes of near misses of `needle`, none of them the needle.
    fn haystack(needle: u8) -> [u8; 200] {
        let near = near_misses(needle);
        core::array::from_fn(|i| near[i % near.len()])
    }

    /// `contains_byte` (two word loads for 8 to 16 bytes, the search otherwise) finds the
    /// needle wherever it is, and nothing among near misses.
    #[test]
    fn contains_byte_agrees_with_a_plain_search() {
        for needle in [b'\\', b'\n', 0u8, 0x80, 0xff] {
            for len in 0..40 {
                let mut hay = haystack(needle);
                let hay = &mut hay[..len];
                assert!(!contains_byte(needle, hay), "{needle} {len}");
                for at in 0..len {
                    let was = hay[at];
                    hay[at] = needle;
                    assert!(contains_byte(needle, hay), "{needle} {len} {at}");
                    hay[at] = was;
                }
            }
        }
    }

    /// The word loop, the byte loop and the SIMD search agree with a plain search, whatever
    /// the length, start and position, with near misses (the needle's neighbours and its
    /// high-bit twin) around it.
    #[test]
    fn find_byte_agrees_with_a_plain_search() {
        for needle in [b'\n', b'\\', 0u8, 0x80, 0xff] {
            let near = near_misses(needle);
            for len in 0..200 {
                let mut hay = haystack(needle);
                let hay = &mut hay[..len];
                for at in (0..len).step_by(3).map(Some).chain([None]) {
                    if let Some(at) = at {
                        hay[at] = needle;
                    }
                    for from in [0, 1, 7, 8, 9, len] {
                        let plain = hay
                            .get(from..)
                            .and_then(|h| h.iter().position(|&b| b == needle))
                            .map(|i| i + from);
                        assert_eq!(
                            find_byte(needle, hay, from),
                            plain,
                            "{needle} {len} {at:?} {from}"
                        );
                    }
                    if let Some(at) = at {
                        hay[at] = near[at % near.len()];
                    }
                }
            }
        }
        assert_eq!(find_byte(b'x', b"abc", 4), None);
    }

    #[test]
    fn short_copies_copy_every_byte() {
        let src: [u8; 40] = core::array::from_fn(|i| b'a' + i as u8);
        for n in 0..=40 {
            let mut dst = [0u8; 40];
            copy_bytes(&mut dst[..n], &src[..n]);
            assert_eq!(&dst[..n], &src[..n], "length {n}");
            assert!(
                dst[n..].iter().all(|&b| b == 0),
                "length {n}: written past the end"
            );
        }
    }

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
