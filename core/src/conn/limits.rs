//! Sizes the parts of a connection share: how large its tables may be and how they index, and
//! how small its transmit queue may be. A leaf, so that the tables and the connection read them
//! from one place.

use crate::wire::framing::MAX_HEADER_LEN;

/// The most slots a table may have (ids keep their slot in the low bits of 53).
pub(crate) const MAX_SLOTS: usize = 1 << 24;

/// Fixed tables up to this many slots are scanned instead of indexed: a bounded scan costs
/// no more than an index there, and its code is much smaller (firmware flash). Growing
/// tables are always indexed.
pub(crate) const SCAN_MAX: usize = 8;

/// Growing tables are given back once empty when they hold more slots than this.
pub(crate) const TABLE_KEEP: usize = 64;

/// The smallest transmit queue: every automatic reply fits.
pub(crate) const MIN_TX: usize = 256;

/// The transmit limit of growing storage: one frame of `max_frame` bytes with its framing.
pub(crate) const fn tx_limit(max_frame: usize) -> usize {
    let n = max_frame.saturating_add(MAX_HEADER_LEN + 1);
    if n < MIN_TX {
        MIN_TX
    } else {
        n
    }
}
