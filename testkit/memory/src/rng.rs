//! A tiny deterministic pseudo-random generator (SplitMix64), so that a simulation is fully
//! determined by one `u64` seed on any target, with no dependency.

/// SplitMix64 (Steele, Lea and Flood, 2014): 64 bits of state, every seed is valid (0
/// included), good enough statistical quality for test scheduling, and a stable sequence that
/// never changes between versions of this crate, so a printed seed replays forever.
///
/// ```
/// use rpcwire_memory::SplitMix64;
/// let mut a = SplitMix64::new(42);
/// let mut b = SplitMix64::new(42);
/// assert_eq!(a.next_u64(), b.next_u64());
/// let roll = a.below(6);
/// assert!(roll < 6);
/// assert!(a.range_inclusive(3, 3) == 3);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator whose sequence is determined by `seed`.
    pub const fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (0 when `n` is 0). Uses the widening-multiply reduction, so the
    /// bias is below 2^-32 for any `n` a test uses.
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// A value in `lo..=hi` (`lo` when `hi <= lo`).
    pub fn range_inclusive(&mut self, lo: u64, hi: u64) -> u64 {
        if hi <= lo {
            return lo;
        }
        match (hi - lo).checked_add(1) {
            Some(span) => lo + self.below(span),
            None => self.next_u64(),
        }
    }

    /// A `usize` in `0..n` (0 when `n` is 0).
    pub fn index(&mut self, n: usize) -> usize {
        self.below(n as u64) as usize
    }

    /// True with probability `ppm` parts per million (always false for 0, always true from
    /// 1 000 000 up).
    pub fn chance(&mut self, ppm: u32) -> bool {
        ppm > 0 && self.below(1_000_000) < u64::from(ppm)
    }

    /// True with probability `num / den` (false when `den` is 0).
    pub fn ratio(&mut self, num: u64, den: u64) -> bool {
        den > 0 && self.below(den) < num
    }

    /// A generator for an independent sub-stream (for example one per peer), derived from
    /// this one's next output.
    pub fn fork(&mut self) -> SplitMix64 {
        SplitMix64::new(self.next_u64() ^ 0xD1B5_4A32_D192_ED03)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_sequence() {
        // Reference values of SplitMix64 for seed 0.
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }

    #[test]
    fn bounds() {
        let mut r = SplitMix64::new(7);
        for n in 1..200u64 {
            assert!(r.below(n) < n);
            let v = r.range_inclusive(n, n + 3);
            assert!((n..=n + 3).contains(&v));
        }
        assert_eq!(r.below(0), 0);
        assert!(!r.chance(0));
        assert!(r.chance(1_000_000));
    }
}
