//! Runs of slots that are either fixed (an array) or grow and shrink (a vector), and how growing
//! ones grow: the bottom of the crate, below the wire layer (receive buffers, the record of a
//! batch) and the connection (transmit queue, tables) alike. Public as
//! [`storage::Slots`](crate::storage::Slots).

/// A run of `T` that is either fixed (an array) or grows and shrinks (a vector).
///
/// The protocol code asks for more room with [`grow_to`](Slots::grow_to) and takes whatever it
/// gets: fixed storage never grows, and heap storage stops at the limits the caller configured
/// (or when the allocator refuses).
pub trait Slots<T: Copy> {
    /// New storage: an array filled with `fill`, or an empty vector.
    fn empty(fill: T) -> Self
    where
        Self: Sized;
    /// The elements available now.
    fn slots(&self) -> &[T];
    /// The elements available now, mutably.
    fn slots_mut(&mut self) -> &mut [T];
    /// Makes at least `len` elements available if the storage can (new ones are `fill`), and
    /// returns how many are available afterwards (possibly fewer than `len`).
    fn grow_to(&mut self, len: usize, fill: T) -> usize;
    /// Gives memory back, keeping the first `len` elements. Fixed storage keeps everything.
    fn shrink_to(&mut self, len: usize);
    /// True when this storage can grow (and so is worth shrinking).
    const GROWS: bool;
}

impl<T: Copy, const N: usize> Slots<T> for [T; N] {
    fn empty(fill: T) -> Self {
        [fill; N]
    }
    #[inline(always)]
    fn slots(&self) -> &[T] {
        self
    }
    #[inline(always)]
    fn slots_mut(&mut self) -> &mut [T] {
        self
    }
    #[inline(always)]
    fn grow_to(&mut self, _len: usize, _fill: T) -> usize {
        N
    }
    #[inline(always)]
    fn shrink_to(&mut self, _len: usize) {}
    const GROWS: bool = false;
}

#[cfg(feature = "alloc")]
impl<T: Copy> Slots<T> for alloc::vec::Vec<T> {
    fn empty(_fill: T) -> Self {
        alloc::vec::Vec::new()
    }
    #[inline(always)]
    fn slots(&self) -> &[T] {
        self
    }
    #[inline(always)]
    fn slots_mut(&mut self) -> &mut [T] {
        self
    }
    fn grow_to(&mut self, len: usize, fill: T) -> usize {
        if len > self.len() {
            // `try_reserve_exact`: an allocator refusal becomes backpressure, not an abort.
            if self.try_reserve_exact(len - self.len()).is_ok() {
                self.resize(len, fill);
            }
        }
        self.len()
    }
    fn shrink_to(&mut self, len: usize) {
        if len < self.len() {
            self.truncate(len);
        }
        self.shrink_to_fit();
    }
    const GROWS: bool = true;
}

/// A fixed run of `N` taken from the heap on first use and given back whole: one pointer while
/// empty (the record of a batch's elements in [`Heap`](crate::storage::Heap) storage, which most
/// connections never use).
#[cfg(feature = "alloc")]
impl<T: Copy, const N: usize> Slots<T> for Option<alloc::boxed::Box<[T; N]>> {
    fn empty(_fill: T) -> Self {
        None
    }
    #[inline(always)]
    fn slots(&self) -> &[T] {
        match self {
            Some(run) => &run[..],
            None => &[],
        }
    }
    #[inline(always)]
    fn slots_mut(&mut self) -> &mut [T] {
        match self {
            Some(run) => &mut run[..],
            None => &mut [],
        }
    }
    fn grow_to(&mut self, len: usize, fill: T) -> usize {
        if self.is_none() && len > 0 {
            // `try_reserve_exact`: an allocator refusal leaves the run empty, not an abort.
            let mut run = alloc::vec::Vec::new();
            if run.try_reserve_exact(N).is_ok() {
                run.resize(N, fill);
                *self = run.into_boxed_slice().try_into().ok();
            }
        }
        self.slots().len()
    }
    fn shrink_to(&mut self, len: usize) {
        if len == 0 {
            *self = None;
        }
    }
    const GROWS: bool = true;
}

/// Buffers of growing storage that were enlarged for a large frame are given back, once empty,
/// when they exceed this many bytes (a large frame has gone) ...
///
/// It is above what ordinary traffic needs (reads and queued frames of up to
/// [`QUEUE_SOFT`]), so that a busy connection does not shrink and grow again on every turn;
/// a driver gives back the rest once a connection is idle ([`Connection::shrink`]).
///
/// [`Connection::shrink`]: crate::Connection::shrink
pub(crate) const SHRINK_ABOVE: usize = 64 << 10;
/// The most bytes that queued frames make a growing transmit queue grow to (a frame larger
/// than that gets the queue to itself, up to the maximum frame).
pub(crate) const QUEUE_SOFT: usize = 32 << 10;
/// ... down to this many.
pub(crate) const KEEP: usize = 2 << 10;
/// The first allocation of a growing byte buffer.
pub(crate) const MIN_BYTES: usize = 512;

/// The first allocation of a growing table (pending calls, in-flight requests).
pub(crate) const MIN_SLOTS: usize = 4;

/// The next size of a growing table of `current` slots: doubling, within `limit`.
pub(crate) fn next_slots(current: usize, limit: usize) -> usize {
    // Not `clamp`: the limit may be below the first allocation.
    current.saturating_mul(2).max(MIN_SLOTS).min(limit)
}

/// The next size of a growing buffer that needs `need` bytes: doubling (so that a frame built
/// up over many reads costs a logarithmic number of copies), within `limit`.
pub(crate) fn next_size(current: usize, need: usize, limit: usize) -> usize {
    need.max(current.saturating_mul(2))
        .max(MIN_BYTES)
        .min(limit)
}

#[cfg(all(test, feature = "alloc"))]
mod tests {
    use super::*;

    /// The boxed run is empty until first grown, then all `N` slots, and empty again once
    /// given back.
    #[test]
    fn a_boxed_run_is_taken_whole_and_given_back_whole() {
        let mut run: Option<alloc::boxed::Box<[u16; 5]>> = Slots::empty(0);
        assert!(run.slots().is_empty());
        assert_eq!(run.grow_to(0, 7), 0);
        assert_eq!(run.grow_to(2, 7), 5);
        assert_eq!(run.slots(), &[7; 5]);
        run.slots_mut()[4] = 1;
        assert_eq!(run.grow_to(9, 0), 5);
        run.shrink_to(3);
        assert_eq!(run.slots(), &[7, 7, 7, 7, 1]);
        run.shrink_to(0);
        assert!(run.slots_mut().is_empty());
    }
}
