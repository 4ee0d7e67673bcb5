//! The in-flight table: the peer's requests we have not answered yet.
//!
//! Per message, everything costs the same at 16 slots or 100 000:
//! - a free slot comes off a free list (or is the next never-used slot: zeroed memory is an
//!   empty table);
//! - duplicate detection looks the id up in a hash index (separate chaining, one bucket per
//!   slot, bucket heads kept inside the slots so that the table is one allocation); a fixed
//!   table of at most `SCAN_MAX` slots compares the few ids instead, with less code;
//! - answers that wait for transmit room wait in a FIFO list.
//!
//! Links are slot numbers plus one, so that 0 means "none".

use super::limits::{MAX_SLOTS, SCAN_MAX, TABLE_KEEP};
use super::types::RequestHandle;
use crate::code::ErrorCode;
use crate::records::{link, unlink, InflightSlot, InflightState, Link};
use crate::slots::{next_slots, Slots};
use crate::wire::{Id, StoredId};

/// FNV-1a over the id's bytes. Ids are short; the hash only spreads them over buckets, and
/// a peer that makes its ids collide only lengthens its own chains (bounded by the table).
/// Inlined on hosts: for the usual id of a few bytes the call cost more than the hashing.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn hash(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811C_9DC5u32, |h, &b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Maps a hash onto `n` buckets without a division (Lemire's multiply-shift).
fn bucket_of(hash: u32, n: usize) -> usize {
    ((u64::from(hash) * n as u64) >> 32) as usize
}

/// A rejected request whose error reply waits for transmit room.
pub(crate) struct Rejected {
    pub(crate) id: StoredId,
    pub(crate) code: ErrorCode,
}

/// Inbound requests awaiting our answer.
pub(crate) struct InflightTable<I> {
    slots: I,
    fresh: usize,
    limit: usize,
    free: Link,
    rejected_head: Link,
    rejected_tail: Link,
    /// Slots not free.
    used: usize,
    /// The generation fresh slots start from: above every generation handed out before the
    /// table's memory was given back, so that old handles stay stale.
    gen_floor: u16,
}

impl<I: Slots<InflightSlot>> InflightTable<I> {
    /// A table over `slots`, of at most `limit` slots (clamped to `1..=MAX_SLOTS`).
    pub(crate) const fn new(slots: I, limit: usize) -> Self {
        let limit = if limit > MAX_SLOTS {
            MAX_SLOTS
        } else if limit == 0 {
            1
        } else {
            limit
        };
        InflightTable {
            slots,
            fresh: 0,
            limit,
            free: 0,
            rejected_head: 0,
            rejected_tail: 0,
            used: 0,
            gen_floor: 0,
        }
    }

    /// Requests not yet answered (or whose answer waits for room).
    pub(crate) fn len(&self) -> usize {
        self.used
    }

    pub(crate) fn capacity(&self) -> usize {
        self.slots.slots().len()
    }

    /// True when ids are found through the hash index (see `SCAN_MAX`).
    #[inline(always)]
    fn indexed(&self) -> bool {
        I::GROWS || self.slots.slots().len() > SCAN_MAX
    }

    fn slot(&self, i: usize) -> Option<&InflightSlot> {
        self.slots.slots().get(i)
    }

    fn slot_mut(&mut self, i: usize) -> Option<&mut InflightSlot> {
        self.slots.slots_mut().get_mut(i)
    }

    /// True when a request with this id is open (delivered and not answered).
    pub(crate) fn contains(&self, id: Id<'_>) -> bool {
        let n = self.slots.slots().len();
        if self.used == 0 || n == 0 {
            return false;
        }
        let raw = id.raw_bytes();
        if !self.indexed() {
            return self
                .slots
                .slots()
                .iter()
                .any(|s| matches!(s.state, InflightState::Open { .. }) && s.id.raw() == raw);
        }
        let h = hash(raw);
        let mut at = self.slot(bucket_of(h, n)).map_or(0, |s| s.bucket);
        while let Some(i) = unlink(at) {
            let Some(s) = self.slot(i) else {
                return false;
            };
            if s.hash == h && s.id.raw() == raw {
                return true;
            }
            at = s.next;
        }
        false
    }

    /// Takes a free slot, growing the table if its storage can; `None` when full.
    pub(crate) fn alloc(&mut self) -> Option<usize> {
        if let Some(slot) = unlink(self.free) {
            self.free = self.slot(slot)?.next;
            return Some(slot);
        }
        let cap = self.slots.slots().len();
        if self.fresh >= cap && cap < self.limit {
            let want = next_slots(cap, self.limit);
            if self.slots.grow_to(want, InflightSlot::FREE) > cap {
                self.rehash();
            }
        }
        if self.fresh < self.slots.slots().len().min(self.limit) {
            let slot = self.fresh;
            self.fresh += 1;
            let floor = self.gen_floor;
            if I::GROWS {
                if let Some(s) = self.slot_mut(slot) {
                    s.generation = floor;
                }
            }
            return Some(slot);
        }
        None
    }

    /// Opens the slot `alloc` returned for a request with this id (its JSON text, at most
    /// [`MAX_STORED_ID_LEN`](crate::wire::MAX_STORED_ID_LEN) bytes: the caller checked; a
    /// longer one is stored empty). The id is copied straight into the slot.
    pub(crate) fn open(
        &mut self,
        slot: usize,
        id: &[u8],
        in_batch: bool,
        reserve: usize,
    ) -> RequestHandle {
        let indexed = self.indexed();
        let h = if indexed { hash(id) } else { 0 };
        let n = self.slots.slots().len();
        let b = bucket_of(h, n);
        let head = if indexed {
            self.slot(b).map_or(0, |s| s.bucket)
        } else {
            0
        };
        let mut generation = 0;
        if let Some(s) = self.slot_mut(slot) {
            s.generation = s.generation.wrapping_add(1);
            s.state = InflightState::Open { in_batch, reserve };
            if !s.id.set(id) {
                s.id = StoredId::EMPTY;
            }
            s.hash = h;
            s.next = head;
            generation = s.generation;
        }
        if indexed {
            if let Some(s) = self.slot_mut(b) {
                s.bucket = link(slot);
            }
        }
        self.used += 1;
        RequestHandle {
            // Slot counts are bounded by `MAX_SLOTS` (2^24).
            slot: slot as u32,
            generation,
        }
    }

    /// The open request a handle names: its slot number, its batch reservation when it came
    /// in a batch (its answer joins the batch reply), and its id (borrowed: a copy of a
    /// `StoredId` moves its whole array).
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub(crate) fn lookup(
        &self,
        handle: RequestHandle,
    ) -> Option<(usize, Option<usize>, &StoredId)> {
        let slot = handle.slot as usize;
        let s = self.slot(slot)?;
        match s.state {
            InflightState::Open { in_batch, reserve } if s.generation == handle.generation => {
                Some((slot, in_batch.then_some(reserve), &s.id))
            }
            _ => None,
        }
    }

    /// The open request in `slot` is answered: its slot is free again.
    pub(crate) fn answered(&mut self, slot: usize) {
        self.unindex(slot);
        let free = self.free;
        if let Some(s) = self.slot_mut(slot) {
            s.state = InflightState::Free;
            s.next = free;
        }
        self.free = link(slot);
        self.used = self.used.saturating_sub(1);
        if self.used == 0 && self.fresh > TABLE_KEEP {
            self.shrink();
        }
    }

    /// Gives back the memory of a growing table while it is empty.
    pub(crate) fn shrink(&mut self) {
        if I::GROWS && self.used == 0 {
            let newest = self.slots.slots().iter().map(|s| s.generation).max();
            self.gen_floor = newest.map_or(self.gen_floor, |g| g.wrapping_add(1));
            self.slots.shrink_to(0);
            self.fresh = 0;
            self.free = 0;
            self.rejected_head = 0;
            self.rejected_tail = 0;
        }
    }

    /// The open request in `slot` is answered with `code`, written when there is room.
    pub(crate) fn reject(&mut self, slot: usize, code: ErrorCode) {
        self.unindex(slot);
        if let Some(s) = self.slot_mut(slot) {
            s.state = InflightState::Rejected(code);
            s.next = 0;
        }
        let tail = self.rejected_tail;
        match unlink(tail).and_then(|t| self.slot_mut(t)) {
            Some(t) => t.next = link(slot),
            None => self.rejected_head = link(slot),
        }
        self.rejected_tail = link(slot);
    }

    /// True when a rejected request's reply waits for room.
    #[inline]
    pub(crate) fn has_rejected(&self) -> bool {
        unlink(self.rejected_head).is_some()
    }

    /// The oldest rejected request whose reply waits for room.
    pub(crate) fn first_rejected(&self) -> Option<Rejected> {
        let s = self.slot(unlink(self.rejected_head)?)?;
        let InflightState::Rejected(code) = s.state else {
            return None;
        };
        Some(Rejected { id: s.id, code })
    }

    /// The oldest rejected request's reply was written.
    pub(crate) fn pop_rejected(&mut self) {
        let Some(slot) = unlink(self.rejected_head) else {
            return;
        };
        self.rejected_head = self.slot(slot).map_or(0, |s| s.next);
        if self.rejected_head == 0 {
            self.rejected_tail = 0;
        }
        // Out of the hash index already (`reject` took it out): freed like an answered one.
        self.answered(slot);
    }

    /// Drops every request (the connection closed).
    pub(crate) fn clear(&mut self) {
        let n = self.fresh;
        for s in self.slots.slots_mut().iter_mut().take(n) {
            *s = InflightSlot {
                generation: s.generation,
                ..InflightSlot::FREE
            };
        }
        // Every slot handed out so far goes back on the free list, generations kept so that
        // old handles stay stale.
        self.free = 0;
        for slot in (0..n).rev() {
            let free = self.free;
            if let Some(s) = self.slot_mut(slot) {
                s.next = free;
            }
            self.free = link(slot);
        }
        self.rejected_head = 0;
        self.rejected_tail = 0;
        self.used = 0;
    }

    /// Takes an open slot out of its hash chain.
    fn unindex(&mut self, slot: usize) {
        if !self.indexed() {
            return;
        }
        let n = self.slots.slots().len();
        let Some(s) = self.slot(slot) else {
            return;
        };
        if !matches!(s.state, InflightState::Open { .. }) || n == 0 {
            return;
        }
        let (b, next) = (bucket_of(s.hash, n), s.next);
        let target = link(slot);
        let head = self.slot(b).map_or(0, |s| s.bucket);
        if head == target {
            if let Some(s) = self.slot_mut(b) {
                s.bucket = next;
            }
            return;
        }
        let mut at = head;
        while let Some(i) = unlink(at) {
            let after = self.slot(i).map_or(0, |s| s.next);
            if after == target {
                if let Some(s) = self.slot_mut(i) {
                    s.next = next;
                }
                return;
            }
            at = after;
        }
    }

    /// Rebuilds the hash index after the table grew (the bucket count is the slot count).
    fn rehash(&mut self) {
        if !self.indexed() {
            return;
        }
        let n = self.slots.slots().len();
        for s in self.slots.slots_mut().iter_mut() {
            s.bucket = 0;
        }
        for slot in 0..self.fresh.min(n) {
            let Some(s) = self.slot(slot) else {
                continue;
            };
            if !matches!(s.state, InflightState::Open { .. }) {
                continue;
            }
            let b = bucket_of(s.hash, n);
            let head = self.slot(b).map_or(0, |s| s.bucket);
            if let Some(s) = self.slot_mut(slot) {
                s.next = head;
            }
            if let Some(s) = self.slot_mut(b) {
                s.bucket = link(slot);
            }
        }
    }
}

#[cfg(all(test, feature = "alloc"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::format;
    use std::vec::Vec;

    fn id(text: &str) -> Id<'_> {
        Id::from_json(text).unwrap()
    }

    #[test]
    fn index_follows_open_answer_and_reject() {
        let mut t = InflightTable::new([InflightSlot::FREE; 8], 8);
        let texts: Vec<_> = (0..8).map(|i| format!("\"r{i}\"")).collect();
        let mut handles = Vec::new();
        for text in &texts {
            assert!(!t.contains(id(text)));
            let slot = t.alloc().unwrap();
            handles.push(t.open(slot, id(text).raw_bytes(), false, 0));
        }
        assert!(t.alloc().is_none());
        for text in &texts {
            assert!(t.contains(id(text)));
        }
        let (s1, ..) = t.lookup(handles[1]).unwrap();
        t.answered(s1);
        let (s2, ..) = t.lookup(handles[2]).unwrap();
        t.reject(s2, ErrorCode::SERVER_BUSY);
        assert!(!t.contains(id(&texts[1])));
        assert!(!t.contains(id(&texts[2])));
        assert!(t.contains(id(&texts[3])));
        assert!(t.lookup(handles[1]).is_none());
        assert_eq!(t.first_rejected().unwrap().id.raw(), texts[2].as_bytes());
        t.pop_rejected();
        assert_eq!(t.len(), 6);
        // Freed slots are reused; the old handle stays stale.
        let again = t.alloc().unwrap();
        let h = t.open(again, id("7").raw_bytes(), false, 0);
        assert!(t.lookup(h).is_some());
        assert!(handles.iter().all(|old| *old != h));
    }

    #[test]
    fn a_growing_table_with_a_limit_below_its_first_size_stops_at_the_limit() {
        // Found by fuzzing: the first growth (4 slots) must not exceed a smaller limit.
        for limit in 1..=5 {
            let mut t = InflightTable::new(Vec::new(), limit);
            for _ in 0..limit {
                assert!(t.alloc().is_some());
            }
            assert!(t.alloc().is_none(), "limit {limit}");
        }
    }

    #[test]
    fn growing_table_keeps_its_index_across_rehashes() {
        let mut t = InflightTable::new(Vec::new(), 5000);
        let texts: Vec<_> = (0..5000).map(|i| format!("{i}")).collect();
        let mut handles = Vec::new();
        for (k, text) in texts.iter().enumerate() {
            let slot = t.alloc().unwrap();
            handles.push(t.open(slot, id(text).raw_bytes(), false, 0));
            if k % 997 == 0 {
                assert!(texts[..=k].iter().all(|x| t.contains(id(x))));
            }
        }
        assert!(t.alloc().is_none());
        assert!(!t.contains(id("5000")));
        for h in &handles {
            let (slot, ..) = t.lookup(*h).unwrap();
            t.answered(slot);
        }
        assert_eq!(t.capacity(), 0);
        // The memory went back; handles from before it stay stale.
        let slot = t.alloc().unwrap();
        let new = t.open(slot, id("1").raw_bytes(), false, 0);
        assert!(handles.iter().all(|old| t.lookup(*old).is_none()));
        assert!(t.lookup(new).is_some());
    }
}
