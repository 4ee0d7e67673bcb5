//! The transmit queue: outgoing frames wait here, in order, until the driver writes them.
//!
//! Frames are encoded in place at the end of the queue. Fixed storage is backpressure when
//! full; growing storage grows for queued frames up to [`QUEUE_SOFT`] bytes (a driver
//! writes several frames per call), for a single frame up to the configured limit, and gives
//! its memory back once a large frame has been written.

use super::types::SendError;
use crate::slots::{next_size, Slots, KEEP, QUEUE_SOFT, SHRINK_ABOVE};
use crate::wire::ser::{SerializeError, SliceSink};
use crate::wire::{finish_frame, frame_reserve, Framing};

/// Failure to encode into the transmit queue.
pub(crate) enum TxError {
    /// No room now: write out what is queued and retry.
    WouldBlock {
        required: usize,
    },
    /// Larger than the queue can ever be.
    TooLarge {
        required: usize,
    },
    Serialize(SerializeError),
}

/// What a frame of the application's that could not be queued means to the caller that sent
/// it (`send_request`, `send_notification`, an outgoing batch).
pub(super) fn send_error(e: TxError) -> SendError {
    match e {
        TxError::WouldBlock { required } => SendError::WouldBlock { required },
        TxError::TooLarge { required } => SendError::TooLarge { required },
        TxError::Serialize(e) => SendError::Serialize(e),
    }
}

pub(crate) struct TxQueue<T> {
    buf: T,
    start: usize,
    end: usize,
    /// The most bytes the queue may hold (growing storage); fixed storage holds its length.
    limit: usize,
}

impl<T: Slots<u8>> TxQueue<T> {
    pub(crate) const fn new(buf: T, limit: usize) -> Self {
        TxQueue {
            buf,
            start: 0,
            end: 0,
            limit,
        }
    }

    /// The largest the queue can ever be.
    pub(crate) fn max_len(&self) -> usize {
        if T::GROWS {
            self.limit
        } else {
            self.buf.slots().len()
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.buf.slots().len()
    }

    /// Bytes waiting to be written.
    pub(crate) fn queued(&self) -> &[u8] {
        self.buf.slots().get(self.start..self.end).unwrap_or(&[])
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Marks `n` bytes as written.
    pub(crate) fn advance(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
            if T::GROWS && self.buf.slots().len() > SHRINK_ABOVE {
                // A large frame has gone: give its memory back.
                self.buf.shrink_to(KEEP);
            }
        }
    }

    /// Gives back the memory of growing storage while nothing is queued.
    pub(crate) fn shrink(&mut self) {
        if T::GROWS && self.is_empty() {
            self.start = 0;
            self.end = 0;
            self.buf.shrink_to(0);
        }
    }

    /// Free bytes at the end.
    pub(crate) fn room(&self) -> usize {
        self.buf.slots().len() - self.end
    }

    /// The free bytes at the end, to encode into; follow with [`commit`](Self::commit).
    pub(crate) fn tail_mut(&mut self) -> &mut [u8] {
        let end = self.end;
        self.buf.slots_mut().get_mut(end..).unwrap_or(&mut [])
    }

    /// Appends a whole frame that is already encoded (its framing included) when it fits
    /// the free bytes at the end as they are; false (nothing written) otherwise, and the
    /// caller writes it the general way, which makes room.
    #[inline]
    #[cfg(target_pointer_width = "64")]
    pub(crate) fn put_encoded(&mut self, frame: &[u8]) -> bool {
        match self.tail_mut().get_mut(..frame.len()) {
            Some(dst) => {
                dst.copy_from_slice(frame);
                self.end += frame.len();
                true
            }
            None => false,
        }
    }

    /// Encodes a line-framed frame (`body`, then the newline) straight at the end of the queue
    /// when it fits the free bytes there as they are and its body is at most `max_body` bytes
    /// (growing storage; fixed storage is bounded by its array): `Ok(true)`, committed.
    /// `Ok(false)` (nothing committed) otherwise, and the caller writes it the general way
    /// ([`write_frame`](Self::write_frame)), which makes room.
    ///
    /// Hosts only: generic over the body, so compiled into each caller, where the general
    /// writer's indirect calls and framing dispatch cost more than the usual small answer's
    /// encoding. Firmware keeps the one writer (flash).
    #[cfg(target_pointer_width = "64")]
    #[inline(always)]
    pub(crate) fn put_line(
        &mut self,
        max_body: usize,
        body: impl FnOnce(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<bool, SerializeError> {
        let end = self.end;
        let region = self.buf.slots_mut().get_mut(end..).unwrap_or(&mut []);
        let mut sink = SliceSink::new(region);
        body(&mut sink)?;
        let len = sink.len();
        if T::GROWS && len > max_body {
            return Ok(false);
        }
        match region.get_mut(len) {
            // Past the body only if the body fit.
            Some(newline) => *newline = b'\n',
            None => return Ok(false),
        }
        self.end = end + len + 1;
        Ok(true)
    }

    /// The buffer from the end of the queue, with the offset of the end.
    pub(crate) fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.buf.slots().len());
    }

    /// Moves queued bytes to the front when fewer than `need` bytes are free at the end.
    pub(crate) fn compact_for(&mut self, need: usize) {
        if self.start > 0 && self.room() < need {
            let (start, end) = (self.start, self.end);
            self.buf.slots_mut().copy_within(start..end, 0);
            self.end -= start;
            self.start = 0;
        }
    }

    /// Makes `need` bytes free at the end if the queue can: compacts, then (growing
    /// storage) grows. Err when it cannot now (`WouldBlock`) or ever (`TooLarge`).
    pub(crate) fn make_room(&mut self, need: usize) -> Result<(), TxError> {
        if self.room() >= need {
            return Ok(());
        }
        let queued = self.end - self.start;
        let total = queued + need;
        if total > self.max_len() {
            return Err(if need > self.max_len() {
                TxError::TooLarge { required: need }
            } else {
                TxError::WouldBlock { required: need }
            });
        }
        self.compact_for(need);
        if self.room() >= need {
            return Ok(());
        }
        if T::GROWS {
            // Queued frames may share up to `QUEUE_SOFT` bytes; a frame larger than that
            // gets the queue to itself.
            let cap = self.buf.slots().len();
            if queued == 0 || total <= QUEUE_SOFT {
                let ceiling = if queued == 0 {
                    self.limit
                } else {
                    QUEUE_SOFT.min(self.limit)
                };
                let size = next_size(cap, total, ceiling.max(total));
                self.buf.grow_to(size, 0);
                if self.room() >= need {
                    return Ok(());
                }
                if queued == 0 {
                    // The allocator refused.
                    return Err(TxError::TooLarge { required: need });
                }
            }
        }
        Err(TxError::WouldBlock { required: need })
    }

    /// Encodes one frame whose body is at most `max_body` bytes (growing storage; fixed storage
    /// is bounded by its array) at the end of the queue; returns its length. A longer body is
    /// `TooLarge` (nothing is queued).
    ///
    /// `body` is a trait object so that this writer is compiled once, not once per caller (it
    /// matters in firmware flash; the indirect call costs nothing next to the encoding).
    pub(crate) fn write_frame(
        &mut self,
        framing: Framing,
        max_body: usize,
        body: &dyn Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<usize, TxError> {
        let reserve = frame_reserve(framing);
        // Fixed storage: the array is the bound (and the check's code stays out of firmware).
        let max_body = if T::GROWS { max_body } else { usize::MAX };
        let attempt = |q: &mut Self| -> Result<Result<usize, usize>, SerializeError> {
            let region = q.tail_mut();
            let body_len = {
                let mut sink = SliceSink::new(region.get_mut(reserve..).unwrap_or(&mut []));
                body(&mut sink)?;
                if !sink.fits() || sink.len() > max_body {
                    return Ok(Err(reserve + sink.len() + 1));
                }
                sink.len()
            };
            match finish_frame(framing, region, body_len) {
                Ok(n) => {
                    q.commit(n);
                    Ok(Ok(n))
                }
                Err(_) => Ok(Err(reserve + body_len + 1)),
            }
        };
        let required = match attempt(self).map_err(TxError::Serialize)? {
            Ok(n) => return Ok(n),
            Err(required) => required,
        };
        if required > max_body.saturating_add(reserve + 1) {
            return Err(TxError::TooLarge { required });
        }
        self.make_room(required)?;
        match attempt(self).map_err(TxError::Serialize)? {
            Ok(n) => Ok(n),
            Err(required) => Err(TxError::WouldBlock { required }),
        }
    }
}
