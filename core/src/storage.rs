//! Where a [`Connection`](crate::Connection) and an [`RxBuffer`](crate::wire::RxBuffer) keep
//! their bytes and tables: chosen by the caller, one protocol code path for every choice.
//!
//! - [`Inline`]: fixed arrays sized by const generics, no heap, const-constructible (for
//!   firmware statics). A full buffer or table is backpressure, never growth.
//! - [`Heap`] (feature `alloc`): vectors that start empty, grow on demand up to the configured
//!   limits ([`Config`](crate::Config)'s `max_frame`, `max_pending`, `max_inflight`) and give
//!   memory back once a large frame has gone. Growth failure (allocator refusal) is treated like
//!   a full fixed buffer: backpressure or a clear error, never an abort.
//!
//! In the spirit of smoltcp's caller-provided storage and heapless's views: the protocol code
//! sees only slices, through [`Slots`].
//!
//! ```
//! use rpcwire::{Config, Connection};
//! use rpcwire::storage::Inline;
//!
//! // 2 KiB transmit buffer, 1 KiB batch replies, 4 pending and 4 in-flight slots.
//! let conn: Connection<Inline<2048, 1024, 4, 4>> = Connection::const_new(Config::DEFAULT);
//! assert_eq!(conn.pending_len(), 0);
//! ```

use crate::conn::{InflightSlot, PendingSlot};
use crate::wire::{MemoSlot, MEMO_SLOTS};

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

/// The storage of a [`Connection`](crate::Connection): its transmit buffer, its batch-reply
/// buffer, and its two tables (outgoing requests awaiting responses, inbound requests awaiting
/// answers). Implemented by [`Inline`] and [`Heap`]; the slot types are opaque.
pub trait Storage {
    /// Transmit buffer: outgoing frames wait here until written.
    type Tx: Slots<u8>;
    /// Assembly of the reply to one inbound batch.
    type Batch: Slots<u8>;
    /// Outgoing requests awaiting a response.
    type Pending: Slots<PendingSlot>;
    /// Inbound requests awaiting an answer.
    type Inflight: Slots<InflightSlot>;
    /// What validating an inbound batch learned of its first elements, so that delivering
    /// them needs no second walk (hosts; empty on 32-bit targets).
    type Memo: Slots<MemoSlot>;
    /// Empty storage (fixed storage: zeroed arrays; heap storage: empty vectors).
    fn parts() -> Parts<Self>;
}

/// A fixed run of `N` taken from the heap on first use and given back whole: one pointer while
/// empty (the record of a batch's elements in [`Heap`] storage, which most connections never
/// use).
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

/// The parts of a connection's storage, as [`Storage::parts`] builds them.
#[allow(missing_debug_implementations)]
pub struct Parts<S: Storage + ?Sized> {
    /// See [`Storage::Tx`].
    pub tx: S::Tx,
    /// See [`Storage::Batch`].
    pub batch: S::Batch,
    /// See [`Storage::Pending`].
    pub pending: S::Pending,
    /// See [`Storage::Inflight`].
    pub inflight: S::Inflight,
    /// See [`Storage::Memo`].
    pub memo: S::Memo,
}

/// Fixed inline storage: `TX` bytes of transmit buffer, `BATCH` bytes for batch replies,
/// `PENDING` outgoing and `INFLIGHT` inbound request slots. No heap; a connection with this
/// storage can be built in a `static` with [`Connection::const_new`](crate::Connection::const_new).
#[derive(Debug, Clone, Copy, Default)]
pub struct Inline<
    const TX: usize = 4096,
    const BATCH: usize = 2048,
    const PENDING: usize = 16,
    const INFLIGHT: usize = 16,
>;

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize> Storage
    for Inline<TX, BATCH, PENDING, INFLIGHT>
{
    type Tx = [u8; TX];
    type Batch = [u8; BATCH];
    type Pending = [PendingSlot; PENDING];
    type Inflight = [InflightSlot; INFLIGHT];
    type Memo = [MemoSlot; MEMO_SLOTS];
    fn parts() -> Parts<Self> {
        Parts {
            tx: [0; TX],
            batch: [0; BATCH],
            pending: [PendingSlot::FREE; PENDING],
            inflight: [InflightSlot::FREE; INFLIGHT],
            memo: [MemoSlot::EMPTY; MEMO_SLOTS],
        }
    }
}

/// Heap storage (feature `alloc`): every buffer and table starts empty, grows on demand up to
/// the limits in the connection's [`Config`](crate::Config), and shrinks back after a large
/// frame. An idle connection holds a few hundred bytes.
#[cfg(feature = "alloc")]
#[derive(Debug, Clone, Copy, Default)]
pub struct Heap;

#[cfg(feature = "alloc")]
impl Storage for Heap {
    type Tx = alloc::vec::Vec<u8>;
    type Batch = alloc::vec::Vec<u8>;
    type Pending = alloc::vec::Vec<PendingSlot>;
    type Inflight = alloc::vec::Vec<InflightSlot>;
    type Memo = Option<alloc::boxed::Box<[MemoSlot; MEMO_SLOTS]>>;
    fn parts() -> Parts<Self> {
        Parts {
            tx: alloc::vec::Vec::new(),
            batch: alloc::vec::Vec::new(),
            pending: alloc::vec::Vec::new(),
            inflight: alloc::vec::Vec::new(),
            memo: None,
        }
    }
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
