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

use crate::records::{InflightSlot, PendingSlot};
pub use crate::slots::Slots;
use crate::wire::{MemoSlot, MEMO_SLOTS};

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
