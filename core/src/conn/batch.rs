//! Assembly of the reply to an inbound batch.
//!
//! Members of a batch may be answered in any order (an async server answers them concurrently);
//! their replies collect here and leave as one array once the last is in. Memory is bounded by
//! a reservation: when a batch is accepted, room for a short error reply is reserved for every
//! element that needs an answer, so an accepted batch can always be completed, even when a
//! member's real response turns out too large (that member then gets Internal error).

use crate::wire::ser::{SerializeError, SliceSink};

/// Reply assembly for one inbound batch at a time.
pub(crate) struct BatchReply<const B: usize> {
    buf: [u8; B],
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

impl<const B: usize> BatchReply<B> {
    pub(crate) const fn new() -> Self {
        BatchReply {
            buf: [0; B],
            len: 0,
            replies: 0,
            reserved: 0,
            outstanding: 0,
            reading: false,
            open: false,
            finished: false,
        }
    }

    /// Bytes a batch whose elements reserve `reserved` in total needs.
    pub(crate) const fn fits(reserved: usize) -> bool {
        reserved + 2 <= B
    }

    pub(crate) fn begin(&mut self, reserved: usize) {
        self.buf[0] = b'[';
        self.len = 1;
        self.replies = 0;
        self.reserved = reserved;
        self.outstanding = 0;
        self.reading = true;
        self.open = true;
        self.finished = false;
    }

    pub(crate) fn reset(&mut self) {
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
        body: impl FnOnce(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<Result<(), usize>, SerializeError> {
        let others = self.reserved.saturating_sub(release);
        // Room for `]` and everyone else's reservation stays untouched.
        let limit = B.saturating_sub(1 + others);
        let sep = usize::from(self.replies > 0);
        let region = self.buf.get_mut(self.len..limit).unwrap_or(&mut []);
        let mut sink = SliceSink::new(region);
        if sep == 1 {
            crate::wire::ser::Sink::put(&mut sink, b",");
        }
        body(&mut sink)?;
        if !sink.fits() {
            return Ok(Err(sink.len()));
        }
        self.len += sink.len();
        self.replies += 1;
        self.reserved = others;
        Ok(Ok(()))
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
            if let Some(b) = self.buf.get_mut(self.len) {
                *b = b']';
                self.len += 1;
            }
        }
        self.buf.get(..self.len).unwrap_or(&[])
    }
}
