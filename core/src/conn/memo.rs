//! The record of the inbound batch being delivered: what the walk that validated it learned of
//! its first elements ([`MemoSlot`]), so that each is delivered without walking its text again.
//! Hosts only: elsewhere the record has no slots and this keeps nothing (firmware RAM and
//! flash).

use crate::slots::Slots;
use crate::wire::{Element, MemoSlot};

/// A batch's record, with where it applies.
pub(crate) struct BatchMemo<M> {
    slots: M,
    #[cfg(target_pointer_width = "64")]
    at: Place,
}

/// Where a record applies and how far its batch is delivered.
#[cfg(target_pointer_width = "64")]
#[derive(Clone, Copy)]
struct Place {
    /// Slots filled for the batch being delivered.
    filled: u8,
    /// The slot of the next element delivered.
    next: u8,
    /// Offset of the batch text (its `[`) in its frame.
    base: u32,
    /// The frame's length, so that a record is never read against another frame.
    frame_len: u32,
}

impl<M: Slots<MemoSlot>> BatchMemo<M> {
    pub(crate) const fn new(slots: M) -> Self {
        BatchMemo {
            slots,
            #[cfg(target_pointer_width = "64")]
            at: Place {
                filled: 0,
                next: 0,
                base: 0,
                frame_len: 0,
            },
        }
    }

    /// The slots to record the next frame in, if it is a batch ([`parse_recording`]).
    ///
    /// [`parse_recording`]: crate::wire::parse_recording
    pub(crate) fn slots(&mut self) -> &mut M {
        // Every batch parsed is `recorded`: a record is never read for another batch.
        &mut self.slots
    }

    /// Notes that `slots` slots were filled for the batch at `base` in a frame of `frame_len`
    /// bytes, just parsed.
    #[cfg(target_pointer_width = "64")]
    pub(crate) fn recorded(&mut self, frame_len: usize, slots: usize, base: usize) {
        self.at = match (u32::try_from(frame_len), u32::try_from(base)) {
            (Ok(frame_len), Ok(base)) => Place {
                // At most `MEMO_SLOTS` (16).
                filled: u8::try_from(slots).unwrap_or(0),
                next: 0,
                base,
                frame_len,
            },
            _ => Place {
                filled: 0,
                ..self.at
            },
        };
    }

    /// The next element of the batch in `frame`, delivered from `at` (a position in the
    /// batch text), as recorded: with its text's length and the position of the element after
    /// it (`None` after the last). `None` when it was not recorded (the caller walks the text).
    #[cfg(target_pointer_width = "64")]
    #[inline]
    pub(crate) fn take<'a>(
        &mut self,
        frame: &'a [u8],
        at: usize,
    ) -> Option<(Element<'a>, usize, Option<usize>)> {
        let i = self.at.next;
        if i >= self.at.filled || frame.len() != self.at.frame_len as usize {
            return None;
        }
        self.at.next = i + 1;
        let text = frame.get(self.at.base as usize..)?;
        self.slots.slots().get(i as usize)?.element(text, at)
    }

    /// Nothing is recorded on these targets.
    #[cfg(not(target_pointer_width = "64"))]
    #[inline(always)]
    pub(crate) fn take<'a>(
        &mut self,
        _frame: &'a [u8],
        _at: usize,
    ) -> Option<(Element<'a>, usize, Option<usize>)> {
        None
    }

    /// Growing storage: gives the slots back (they are taken again at the next batch).
    pub(crate) fn shrink(&mut self) {
        if M::GROWS {
            #[cfg(target_pointer_width = "64")]
            {
                self.at.filled = 0;
            }
            self.slots.shrink_to(0);
        }
    }

    /// Slots held now.
    pub(crate) fn capacity(&self) -> usize {
        self.slots.slots().len()
    }
}
