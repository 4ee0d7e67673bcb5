//! The pending table: our requests on the wire, awaiting a response.
//!
//! Every operation the connection performs per message costs the same at 16 slots or 100 000:
//! - a free slot comes off a free list (or is the next never-used slot, so that a zeroed table
//!   is a valid empty one and a firmware's `static` needs no initialisation code);
//! - a response finds its slot from the low bits of its id (see [`PendingTable::id_for`]);
//! - the next deadline is the top of a binary heap of waiting slots (its array is kept inside
//!   the slots themselves, so the table is one allocation); a fixed table of at most
//!   [`SCAN_MAX`] slots (a firmware's two or four) scans them instead, which is as fast there
//!   and leaves the heap's code out of the image (the choice is a constant of the storage
//!   type, so the other path is compiled out);
//! - ended requests wait for [`Connection::poll_event`](super::Connection::poll_event) in a
//!   FIFO list, and the members of an outgoing batch under construction in a list of their own.
//!
//! Links are `u32` slot numbers plus one, so that 0 means "none" and zeroed memory is empty.

use super::limits::{MAX_SLOTS, SCAN_MAX, TABLE_KEEP};
use crate::records::{link, unlink, Link, PendingSlot, PendingState};
use crate::slots::{next_slots, Slots};
use crate::time::Instant;
use crate::token::{Failure, Token};

/// A FIFO list of slots.
#[derive(Debug, Clone, Copy, Default)]
struct Fifo {
    head: Link,
    tail: Link,
}

/// Outgoing requests awaiting a response.
pub(crate) struct PendingTable<P> {
    slots: P,
    /// Slots ever handed out; those at and above are fresh (never used, all zeros).
    fresh: usize,
    /// The most slots this table may have.
    limit: usize,
    free: Link,
    staged: Link,
    failed: Fifo,
    heap_len: usize,
    /// Slots not free.
    used: usize,
    /// Bits of an outgoing id that name the slot.
    slot_bits: u32,
    next_seq: u64,
}

impl<P: Slots<PendingSlot>> PendingTable<P> {
    /// A table over `slots`, of at most `limit` slots (clamped to [`MAX_SLOTS`]).
    pub(crate) const fn new(slots: P, limit: usize) -> Self {
        let limit = if limit > MAX_SLOTS {
            MAX_SLOTS
        } else if limit == 0 {
            1
        } else {
            limit
        };
        PendingTable {
            slots,
            fresh: 0,
            limit,
            free: 0,
            staged: 0,
            failed: Fifo { head: 0, tail: 0 },
            heap_len: 0,
            used: 0,
            slot_bits: limit.next_power_of_two().trailing_zeros(),
            next_seq: 1,
        }
    }

    /// Slots in use (waiting, staged, or failed and not yet reported).
    pub(crate) fn len(&self) -> usize {
        self.used
    }

    /// Failed requests not yet reported.
    pub(crate) fn has_failed(&self) -> bool {
        self.failed.head != 0
    }

    /// Bytes the table holds (its capacity), for memory accounting.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.slots().len()
    }

    pub(crate) fn seed(&mut self, seed: u64) {
        self.next_seq = seed & self.seq_mask();
    }

    fn seq_mask(&self) -> u64 {
        (1u64 << (53 - self.slot_bits())) - 1
    }

    /// Bits of an outgoing id that name the slot: a constant for fixed storage (so a 32-bit
    /// target shifts by a constant, with no 64-bit shift routine).
    #[inline(always)]
    fn slot_bits(&self) -> u32 {
        if P::GROWS {
            self.slot_bits
        } else {
            self.slots
                .slots()
                .len()
                .next_power_of_two()
                .trailing_zeros()
        }
    }

    /// True when deadlines are kept in the heap (see [`SCAN_MAX`]).
    #[inline(always)]
    fn indexed(&self) -> bool {
        P::GROWS || self.slots.slots().len() > SCAN_MAX
    }

    fn slot(&self, i: usize) -> Option<&PendingSlot> {
        self.slots.slots().get(i)
    }

    fn slot_mut(&mut self, i: usize) -> Option<&mut PendingSlot> {
        self.slots.slots_mut().get_mut(i)
    }

    /// Takes a free slot, growing the table if its storage can; `None` when full.
    pub(crate) fn alloc(&mut self) -> Option<usize> {
        if let Some(slot) = unlink(self.free) {
            self.free = self.slot(slot)?.next;
            self.used += 1;
            return Some(slot);
        }
        let mut cap = self.slots.slots().len();
        if self.fresh >= cap && cap < self.limit {
            let want = next_slots(cap, self.limit);
            cap = self.slots.grow_to(want, PendingSlot::FREE);
        }
        if self.fresh < cap.min(self.limit) {
            self.fresh += 1;
            self.used += 1;
            return Some(self.fresh - 1);
        }
        None
    }

    /// Ids are `seq << slot_bits | slot`, so a response finds its slot without a search or a
    /// division (firmware has no 64-bit divider), and a stale id (a reused slot) never
    /// matches. Ids stay below 2^53, exact in any JSON peer's doubles.
    pub(crate) fn id_for(&mut self, slot: usize) -> u64 {
        let seq = self.next_seq;
        self.next_seq = (self.next_seq + 1) & self.seq_mask();
        (seq << self.slot_bits()) | slot as u64
    }

    /// The sequence counter, to undo an `id_for` whose request was not sent.
    pub(crate) fn seq(&self) -> u64 {
        self.next_seq
    }

    pub(crate) fn set_seq(&mut self, seq: u64) {
        self.next_seq = seq;
    }

    /// Gives a slot taken with `alloc` back without arming it.
    pub(crate) fn release(&mut self, slot: usize) {
        self.free_slot(slot);
    }

    /// Fills a slot taken with `alloc`: waiting (with its deadline in the heap) or staged.
    pub(crate) fn arm(
        &mut self,
        slot: usize,
        token: Token,
        id: u64,
        deadline: Instant,
        staged: bool,
    ) {
        let staged_head = self.staged;
        let Some(p) = self.slot_mut(slot) else {
            return;
        };
        p.token = token;
        p.id = id;
        p.deadline = deadline;
        p.heap_pos = 0;
        if staged {
            p.state = PendingState::Staged;
            p.next = staged_head;
            self.staged = link(slot);
        } else {
            p.state = PendingState::Waiting;
            self.heap_push(slot);
        }
    }

    /// The sequence number an outgoing id carries (requests sent later carry larger ones).
    pub(crate) fn seq_of(&self, id: u64) -> u64 {
        id >> self.slot_bits()
    }

    /// The token of the waiting request `id` names, which is then done.
    pub(crate) fn take_response(&mut self, id: u64) -> Option<Token> {
        let slot = (id & ((1u64 << self.slot_bits()) - 1)) as usize;
        let p = self.slot(slot)?;
        if p.state != PendingState::Waiting || p.id != id || slot >= self.fresh {
            return None;
        }
        let token = p.token;
        self.heap_remove(slot);
        self.free_slot(slot);
        Some(token)
    }

    /// The token of the one request waiting for a response, which is then done; `None`
    /// unless exactly one is waiting. (An error with id `null` answers the request the peer
    /// could not read: when only one was on the wire, it is that one.)
    pub(crate) fn take_sole_waiting(&mut self) -> Option<Token> {
        let slot = if self.indexed() {
            if self.heap_len != 1 {
                return None;
            }
            self.slot(0)?.heap_at as usize
        } else {
            let mut waiting = (0..self.fresh).filter(|&i| {
                self.slot(i)
                    .is_some_and(|p| p.state == PendingState::Waiting)
            });
            let first = waiting.next()?;
            if waiting.next().is_some() {
                return None;
            }
            first
        };
        let token = self.slot(slot)?.token;
        self.heap_remove(slot);
        self.free_slot(slot);
        Some(token)
    }

    /// The wire id of the waiting request with this token. A scan, like `cancel`.
    pub(crate) fn id_of(&self, token: Token) -> Option<u64> {
        self.slots
            .slots()
            .iter()
            .take(self.fresh)
            .find(|p| p.state == PendingState::Waiting && p.token == token)
            .map(|p| p.id)
    }

    /// Forgets the waiting request with this token. A scan: cancellation is rare next to
    /// responses, and tokens are the caller's, not indexed.
    pub(crate) fn cancel(&mut self, token: Token) -> bool {
        let found = self
            .slots
            .slots()
            .iter()
            .take(self.fresh)
            .position(|p| p.state == PendingState::Waiting && p.token == token);
        let Some(slot) = found else {
            return false;
        };
        self.heap_remove(slot);
        self.free_slot(slot);
        true
    }

    /// The earliest deadline of a waiting request.
    pub(crate) fn next_deadline(&self) -> Option<Instant> {
        if !self.indexed() {
            return self
                .slots
                .slots()
                .iter()
                .filter(|p| p.state == PendingState::Waiting)
                .map(|p| p.deadline)
                .min()
                .filter(|d| *d != Instant::MAX);
        }
        if self.heap_len == 0 {
            return None;
        }
        let top = self.slot(0)?.heap_at as usize;
        Some(self.slot(top)?.deadline).filter(|d| *d != Instant::MAX)
    }

    /// Fails every waiting request whose deadline is at or before `now`; returns how many.
    /// False when no request waits for a deadline (none was ever sent, or the heap is
    /// empty): [`expire`](Self::expire) would find nothing.
    #[inline]
    pub(crate) fn may_expire(&self) -> bool {
        if self.indexed() {
            self.heap_len > 0
        } else {
            self.fresh > 0
        }
    }

    pub(crate) fn expire(&mut self, now: Instant) -> u64 {
        let mut expired = 0;
        if !self.indexed() {
            for slot in 0..self.fresh {
                if self
                    .slot(slot)
                    .is_some_and(|p| p.state == PendingState::Waiting && p.deadline <= now)
                {
                    self.fail(slot, Failure::TimedOut);
                    expired += 1;
                }
            }
            return expired;
        }
        while self.heap_len > 0 {
            let Some(top) = self.slot(0).map(|p| p.heap_at as usize) else {
                break;
            };
            if self.slot(top).is_none_or(|p| p.deadline > now) {
                break;
            }
            self.heap_remove(top);
            self.fail(top, Failure::TimedOut);
            expired += 1;
        }
        expired
    }

    /// Fails every waiting (and, with `staged`, staged) request.
    pub(crate) fn fail_all(&mut self, reason: Failure, staged: bool) {
        for slot in 0..self.fresh {
            let state = self.slot(slot).map(|p| p.state);
            if state == Some(PendingState::Waiting)
                || (staged && state == Some(PendingState::Staged))
            {
                self.fail(slot, reason);
            }
        }
        self.heap_len = 0;
        if staged {
            self.staged = 0;
        }
    }

    /// The next failed request, reported once.
    pub(crate) fn pop_failed(&mut self) -> Option<(Token, Failure)> {
        let slot = unlink(self.failed.head)?;
        let p = *self.slot(slot)?;
        self.failed.head = p.next;
        if self.failed.head == 0 {
            self.failed.tail = 0;
        }
        let PendingState::Failed(reason) = p.state else {
            return None;
        };
        self.free_slot(slot);
        Some((p.token, reason))
    }

    /// Sends the staged members of a finished batch: they now wait for their responses.
    pub(crate) fn commit_staged(&mut self) {
        while let Some(slot) = unlink(self.staged) {
            self.staged = self.slot(slot).map_or(0, |p| p.next);
            if let Some(p) = self.slot_mut(slot) {
                p.state = PendingState::Waiting;
            }
            self.heap_push(slot);
        }
    }

    /// Frees the staged members of a batch that was dropped unfinished.
    pub(crate) fn drop_staged(&mut self) {
        while let Some(slot) = unlink(self.staged) {
            self.staged = self.slot(slot).map_or(0, |p| p.next);
            self.free_slot(slot);
        }
    }

    fn fail(&mut self, slot: usize, reason: Failure) {
        let tail = self.failed.tail;
        if let Some(p) = self.slot_mut(slot) {
            p.state = PendingState::Failed(reason);
            p.next = 0;
            p.heap_pos = 0;
        }
        match unlink(tail).and_then(|t| self.slot_mut(t)) {
            Some(t) => t.next = link(slot),
            None => self.failed.head = link(slot),
        }
        self.failed.tail = link(slot);
    }

    /// Gives back the memory of a growing table while it is empty.
    pub(crate) fn shrink(&mut self) {
        if P::GROWS && self.used == 0 {
            self.slots.shrink_to(0);
            self.fresh = 0;
            self.free = 0;
            self.staged = 0;
            self.failed = Fifo::default();
            self.heap_len = 0;
        }
    }

    fn free_slot(&mut self, slot: usize) {
        let free = self.free;
        if let Some(p) = self.slot_mut(slot) {
            p.state = PendingState::Free;
            p.next = free;
            p.heap_pos = 0;
        }
        self.free = link(slot);
        self.used = self.used.saturating_sub(1);
        if self.used == 0 && self.fresh > TABLE_KEEP {
            // A burst is over: give the table's memory back.
            self.shrink();
        }
    }

    // ------------------------------------------------------------------ the deadline heap

    fn deadline_at(&self, pos: usize) -> Instant {
        self.slot(pos)
            .and_then(|h| self.slot(h.heap_at as usize))
            .map_or(Instant::MAX, |p| p.deadline)
    }

    fn place(&mut self, pos: usize, slot: usize) {
        if let Some(h) = self.slot_mut(pos) {
            h.heap_at = slot as u32;
        }
        if let Some(p) = self.slot_mut(slot) {
            p.heap_pos = pos as u32 + 1;
        }
    }

    fn heap_push(&mut self, slot: usize) {
        if !self.indexed() {
            return;
        }
        let pos = self.heap_len;
        self.heap_len += 1;
        self.place(pos, slot);
        self.sift_up(pos);
    }

    fn heap_remove(&mut self, slot: usize) {
        if !self.indexed() {
            return;
        }
        let Some(pos) = self
            .slot(slot)
            .and_then(|p| (p.heap_pos as usize).checked_sub(1))
        else {
            return;
        };
        if let Some(p) = self.slot_mut(slot) {
            p.heap_pos = 0;
        }
        self.heap_len -= 1;
        let last = self.heap_len;
        if pos == last {
            return;
        }
        let moved = self.slot(last).map_or(0, |h| h.heap_at as usize);
        self.place(pos, moved);
        self.sift_down(pos);
        self.sift_up(pos);
    }

    fn swap(&mut self, a: usize, b: usize) {
        let sa = self.slot(a).map_or(0, |h| h.heap_at as usize);
        let sb = self.slot(b).map_or(0, |h| h.heap_at as usize);
        self.place(a, sb);
        self.place(b, sa);
    }

    fn sift_up(&mut self, mut pos: usize) {
        while pos > 0 {
            let parent = (pos - 1) / 2;
            if self.deadline_at(parent) <= self.deadline_at(pos) {
                return;
            }
            self.swap(parent, pos);
            pos = parent;
        }
    }

    fn sift_down(&mut self, mut pos: usize) {
        loop {
            let left = 2 * pos + 1;
            if left >= self.heap_len {
                return;
            }
            let right = left + 1;
            let child = if right < self.heap_len && self.deadline_at(right) < self.deadline_at(left)
            {
                right
            } else {
                left
            };
            if self.deadline_at(pos) <= self.deadline_at(child) {
                return;
            }
            self.swap(pos, child);
            pos = child;
        }
    }
}

#[cfg(all(test, feature = "alloc"))]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::vec::Vec;

    fn at(ms: u64) -> Instant {
        Instant::from_millis(ms)
    }

    #[test]
    fn deadlines_come_out_in_order_and_removal_keeps_the_heap() {
        let mut t = PendingTable::new([PendingSlot::FREE; 64], 64);
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let mut armed = Vec::new();
        for i in 0..64u64 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let slot = t.alloc().unwrap();
            let id = t.id_for(slot);
            t.arm(slot, Token(i), id, at(rng % 1000), false);
            armed.push((id, rng % 1000, i));
        }
        assert_eq!(t.alloc(), None);
        // Answer every third request: its deadline leaves the heap.
        for (k, (id, _, tok)) in armed.iter().enumerate() {
            if k % 3 == 0 {
                assert_eq!(t.take_response(*id), Some(Token(*tok)));
            }
        }
        let mut left: Vec<_> = armed
            .iter()
            .enumerate()
            .filter(|(k, _)| k % 3 != 0)
            .map(|(_, (_, d, tok))| (*d, *tok))
            .collect();
        left.sort();
        let mut seen = Vec::new();
        for now in 0..1000 {
            assert!(t.next_deadline().is_none_or(|d| d >= at(now)));
            t.expire(at(now));
            while let Some((token, reason)) = t.pop_failed() {
                assert_eq!(reason, Failure::TimedOut);
                seen.push((now, token.0));
            }
        }
        assert_eq!(seen.len(), left.len());
        for ((d, tok), (now, seen_tok)) in left.iter().zip(&seen) {
            assert_eq!(d, now);
            let _ = (tok, seen_tok);
        }
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn stale_ids_do_not_match_a_reused_slot() {
        let mut t = PendingTable::new([PendingSlot::FREE; 2], 2);
        let s = t.alloc().unwrap();
        let old = t.id_for(s);
        t.arm(s, Token(1), old, Instant::MAX, false);
        assert_eq!(t.take_response(old), Some(Token(1)));
        let s2 = t.alloc().unwrap();
        assert_eq!(s, s2);
        let new = t.id_for(s2);
        t.arm(s2, Token(2), new, Instant::MAX, false);
        assert_eq!(t.take_response(old), None);
        assert_eq!(t.next_deadline(), None);
        assert!(t.cancel(Token(2)));
        assert_eq!(t.len(), 0);
    }

    #[test]
    fn a_growing_table_with_a_limit_below_its_first_size_stops_at_the_limit() {
        // Found by fuzzing: the first growth (4 slots) must not exceed a smaller limit.
        for limit in 1..=5 {
            let mut t = PendingTable::new(Vec::new(), limit);
            for _ in 0..limit {
                assert!(t.alloc().is_some());
            }
            assert!(t.alloc().is_none(), "limit {limit}");
            assert!(t.capacity() <= limit.max(1));
        }
    }

    #[test]
    fn growing_table_grows_and_gives_memory_back() {
        let mut t = PendingTable::new(Vec::new(), 1000);
        let mut ids = Vec::new();
        for i in 0..1000 {
            let s = t.alloc().unwrap();
            let id = t.id_for(s);
            t.arm(s, Token(i), id, at(i), false);
            ids.push(id);
        }
        assert!(t.alloc().is_none());
        assert!(t.capacity() >= 1000);
        for id in ids {
            assert!(t.take_response(id).is_some());
        }
        assert_eq!(t.capacity(), 0);
        assert!(t.alloc().is_some());
    }
}
