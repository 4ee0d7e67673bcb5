//! The records a connection keeps per request in its two tables: [`PendingSlot`] (one of our
//! requests, awaiting its response) and [`InflightSlot`] (one of the peer's, awaiting our
//! answer).
//!
//! They sit below [`storage`](crate::storage), whose [`Storage`](crate::storage::Storage)
//! trait names them as the element types of its tables, and below the connection, whose
//! tables (`conn/pending.rs`, `conn/inflight.rs`) fill them and read them back: so storage
//! never names the connection. Outside the crate they are opaque.
//!
//! Links between slots are `u32` slot numbers plus one, so that 0 means "none" and zeroed
//! memory is an empty table (a firmware's `static` needs no initialisation code).

use crate::code::ErrorCode;
use crate::time::Instant;
use crate::token::{Failure, Token};
use crate::wire::id::StoredId;

/// A slot number plus one; 0 is "none".
pub(crate) type Link = u32;

/// The link to `slot`.
pub(crate) fn link(slot: usize) -> Link {
    // Slot counts are bounded by the tables' limit (2^24), so this never truncates.
    (slot as u32).wrapping_add(1)
}

/// The slot a link names, if any.
pub(crate) fn unlink(l: Link) -> Option<usize> {
    (l as usize).checked_sub(1)
}

/// What an outgoing request is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PendingState {
    Free,
    /// Added to a batch under construction, not yet sent.
    Staged,
    Waiting,
    /// Ended without a response, not yet reported through `poll_event`.
    Failed(Failure),
}

/// One slot of a connection's pending-request table. Opaque: it appears only in the
/// [`Storage`](crate::storage::Storage) trait.
#[derive(Debug, Clone, Copy)]
pub struct PendingSlot {
    pub(crate) state: PendingState,
    pub(crate) token: Token,
    pub(crate) id: u64,
    pub(crate) deadline: Instant,
    /// Next slot in the free, staged or failed list.
    pub(crate) next: Link,
    /// This slot's position in the deadline heap, plus one (0: not in the heap).
    pub(crate) heap_pos: u32,
    /// The heap array, kept alongside: the slot at heap position (this slot's number).
    pub(crate) heap_at: u32,
}

impl PendingSlot {
    /// All zeros, so that a new connection's table is cleared rather than copied from flash.
    pub(crate) const FREE: PendingSlot = PendingSlot {
        state: PendingState::Free,
        token: Token(0),
        id: 0,
        deadline: Instant::ZERO,
        next: 0,
        heap_pos: 0,
        heap_at: 0,
    };
}

/// What an inbound request is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InflightState {
    Free,
    /// Delivered to the application; `reserve` is its batch reservation (0 outside batches).
    Open {
        in_batch: bool,
        reserve: usize,
    },
    /// Answered with a standard error that waits for transmit room.
    Rejected(ErrorCode),
}

/// One slot of a connection's in-flight table. Opaque: it appears only in the
/// [`Storage`](crate::storage::Storage) trait.
#[derive(Debug, Clone, Copy)]
pub struct InflightSlot {
    pub(crate) generation: u16,
    pub(crate) state: InflightState,
    pub(crate) id: StoredId,
    /// Hash of the id (to find its bucket when it leaves, and to skip most comparisons).
    pub(crate) hash: u32,
    /// Next slot in this slot's hash chain (open), the free list (free) or the rejected list.
    pub(crate) next: Link,
    /// Head of the hash chain of bucket number (this slot's number).
    pub(crate) bucket: Link,
}

impl InflightSlot {
    /// All zeros, like [`PendingSlot::FREE`].
    pub(crate) const FREE: InflightSlot = InflightSlot {
        generation: 0,
        state: InflightState::Free,
        id: StoredId::EMPTY,
        hash: 0,
        next: 0,
        bucket: 0,
    };
}
