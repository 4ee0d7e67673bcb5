//! Assembly of the reply to an inbound batch.
//!
//! Members of a batch may be answered in any order (an async server answers them concurrently);
//! their replies collect here and leave as one array once the last is in. Memory is bounded by
//! a reservation: when a batch is accepted, room for a short error reply is reserved for every
//! element that needs an answer, so an accepted batch can always be completed, even when a
//! member's real response turns out too large (that member then gets Internal error).

use crate::slots::{next_size, Slots, KEEP, SHRINK_ABOVE};
use crate::wire::ser::{SerializeError, SliceSink};

/// Reply assembly for one inbound batch at a time.
pub(crate) struct BatchReply<B> {
    buf: B,
    /// The most bytes a reply may take (growing storage; fixed storage: its length).
    limit: usize,
    /// Bytes written, starting with `[`.
    len: usize,
    /// Replies written.
    replies: usize,
    /// Bytes reserved for the fallback replies of elements not yet answered.
    reserved: usize,
    /// Requests delivered and not yet answered.
    pub(crate) outstanding: usize,
    /// Elements are still being delivered.
    pub(crate) reading: bool,
    /// A batch is being answered.
    pub(crate) open: bool,
    /// `]` has been appended.
    finished: bool,
}

impl<B: Slots<u8>> BatchReply<B> {
    pub(crate) const fn new(buf: B, limit: usize) -> Self {
        BatchReply {
            buf,
            limit,
            len: 0,
            replies: 0,
            reserved: 0,
            outstanding: 0,
            reading: false,
            open: false,
            finished: false,
        }
    }

    /// Gives back the memory of growing storage while no batch is answered.
    pub(crate) fn shrink(&mut self) {
        if B::GROWS && !self.open {
            self.buf.shrink_to(0);
        }
    }

    /// Bytes of storage held now.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.slots().len()
    }

    /// The largest reply this buffer can ever hold.
    fn max_len(&self) -> usize {
        if B::GROWS {
            self.limit
        } else {
            self.buf.slots().len()
        }
    }

    /// True when a batch whose elements reserve `reserved` bytes in total fits.
    pub(crate) fn fits(&self, reserved: usize) -> bool {
        reserved.saturating_add(2) <= self.max_len()
    }

    pub(crate) fn begin(&mut self, reserved: usize) {
        if self.buf.slots().is_empty() {
            self.buf.grow_to(next_size(0, reserved + 2, self.limit), 0);
        }
        if let Some(b) = self.buf.slots_mut().first_mut() {
            *b = b'[';
        }
        self.len = 1;
        self.replies = 0;
        self.reserved = reserved;
        self.outstanding = 0;
        self.reading = true;
        self.open = true;
        self.finished = false;
    }

    pub(crate) fn reset(&mut self) {
        if B::GROWS && self.buf.slots().len() > SHRINK_ABOVE {
            self.buf.shrink_to(KEEP);
        }
        self.open = false;
        self.reading = false;
        self.outstanding = 0;
        self.reserved = 0;
        self.len = 0;
        self.replies = 0;
    }

    /// Appends one reply, consuming `release` bytes of reservation. `Ok(Err(required))` when
    /// it would not leave room for the other reservations (nothing is written then).
    pub(crate) fn append(
        &mut self,
        release: usize,
        body: impl Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<Result<(), usize>, SerializeError> {
        let others = self.reserved.saturating_sub(release);
        // Room for `]` and everyone else's reservation stays untouched.
        let limit = self.max_len().saturating_sub(1 + others);
        let written = self.try_append(limit, &body)?;
        let written = match written {
            Err(required) if B::GROWS && self.len + required <= limit => {
                // Growing storage: make room for this reply (plus the reservations) and
                // encode again.
                let need = self.len + required + 1;
                let size = next_size(self.buf.slots().len(), need, self.limit);
                self.buf.grow_to(size, 0);
                self.try_append(limit, &body)?
            }
            other => other,
        };
        let n = match written {
            Ok(n) => n,
            Err(required) => return Ok(Err(required)),
        };
        self.len += n;
        self.replies += 1;
        self.reserved = others;
        Ok(Ok(()))
    }

    /// Encodes one reply (with its separator) after the others, within `limit`: `Ok(n)` bytes
    /// written, or `Err(required)`.
    fn try_append(
        &mut self,
        limit: usize,
        body: &impl Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<Result<usize, usize>, SerializeError> {
        let sep = self.replies > 0;
        let len = self.len;
        // Growing storage may be shorter than `limit` now: stay inside it, with room for `]`.
        let end = limit.min(self.buf.slots().len().saturating_sub(1));
        let region = self.buf.slots_mut().get_mut(len..end).unwrap_or(&mut []);
        let mut sink = SliceSink::new(region);
        if sep {
            crate::wire::ser::Sink::put(&mut sink, b",");
        }
        body(&mut sink)?;
        if !sink.fits() {
            return Ok(Err(sink.len()));
        }
        Ok(Ok(sink.len()))
    }

    /// Gives back the reservation of an element that needs no reply.
    pub(crate) fn release(&mut self, reserve: usize) {
        self.reserved = self.reserved.saturating_sub(reserve);
    }

    /// True when every element is delivered and every request answered.
    pub(crate) fn complete(&self) -> bool {
        self.open && !self.reading && self.outstanding == 0
    }

    /// Number of replies written.
    pub(crate) fn replies(&self) -> usize {
        self.replies
    }

    /// The finished array (appends `]` on first call).
    pub(crate) fn finish(&mut self) -> &[u8] {
        if !self.finished {
            self.finished = true;
            // Room for `]` is always kept free by `append`.
            let len = self.len;
            if let Some(b) = self.buf.slots_mut().get_mut(len) {
                *b = b']';
                self.len += 1;
            }
        }
        self.buf.slots().get(..self.len).unwrap_or(&[])
    }
}
