//! Outgoing batches, written in place at the end of the transmit queue.

use core::time::Duration;

use serde::Serialize;

use super::connection::{Connection, Digits};
use super::stats::{bump, high_water};
use super::transmit::{send_error, TxError};
use super::types::SendError;
use crate::slots::Slots;
use crate::storage::Storage;
use crate::time::Instant;
use crate::token::Token;
use crate::wire::ser::{SerializeError, Sink, SliceSink};
use crate::wire::{encode, finish_frame, frame_reserve};

/// An outgoing batch under construction, written in place in the transmit buffer. Its
/// requests are sent (and their deadlines start) when it is [finished](OutgoingBatch::finish);
/// dropped unfinished, it sends nothing.
pub struct OutgoingBatch<'c, S: Storage> {
    conn: &'c mut Connection<S>,
    now: Instant,
    /// Bytes of body written after the frame's header room, `[` included.
    body_len: usize,
    elements: usize,
    /// Of the elements, requests (the others are notifications).
    requests: usize,
}

impl<S: Storage> core::fmt::Debug for OutgoingBatch<'_, S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("OutgoingBatch")
            .field("elements", &self.elements)
            .field("body_len", &self.body_len)
            .finish()
    }
}

impl<'c, S: Storage> OutgoingBatch<'c, S> {
    pub(super) fn start(conn: &'c mut Connection<S>, now: Instant) -> Result<Self, SendError> {
        // The batch is built after the queued frames, and the queue never moves while it is
        // (it is compacted now, and only grows in place).
        conn.tx.compact_for(usize::MAX);
        let reserve = frame_reserve(conn.config.framing);
        conn.tx.make_room(reserve + 3).map_err(send_error)?;
        if let Some(b) = conn.tx.tail_mut().get_mut(reserve) {
            *b = b'[';
        }
        Ok(OutgoingBatch {
            conn,
            now,
            body_len: 1,
            elements: 0,
            requests: 0,
        })
    }

    fn append(
        &mut self,
        body: impl Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<(), SendError> {
        let reserve = frame_reserve(self.conn.config.framing);
        let at = reserve + self.body_len;
        let sep = self.elements > 0;
        let attempt = |conn: &mut Connection<S>| -> Result<Result<usize, usize>, SendError> {
            let tail = conn.tx.tail_mut();
            // Keep room for `]` and the line delimiter.
            let limit = tail.len().saturating_sub(2);
            let mut sink = SliceSink::new(tail.get_mut(at..limit).unwrap_or(&mut []));
            if sep {
                sink.put(b",");
            }
            body(&mut sink).map_err(SendError::Serialize)?;
            Ok(if sink.fits() {
                Ok(sink.len())
            } else {
                Err(at + sink.len() + 2)
            })
        };
        // The whole batch, `[` and `]` included, is one frame: at most `max_frame` bytes with
        // growing storage (fixed storage is bounded by its array).
        let max_body = if <S::Tx as Slots<u8>>::GROWS {
            self.conn.config.max_frame
        } else {
            usize::MAX
        };
        let n = match attempt(self.conn)? {
            Ok(n) if self.body_len + n < max_body => n,
            Ok(n) => {
                return Err(SendError::TooLarge {
                    required: at + n + 2,
                })
            }
            Err(required) => {
                match self.conn.tx.make_room(required) {
                    Ok(()) => {}
                    Err(TxError::TooLarge { required }) => {
                        return Err(SendError::TooLarge { required })
                    }
                    Err(e) => return Err(send_error(e)),
                }
                attempt(self.conn)?.map_err(|required| SendError::WouldBlock { required })?
            }
        };
        self.body_len += n;
        self.elements += 1;
        Ok(())
    }

    /// Adds a request; its token comes back like that of
    /// [`send_request`](Connection::send_request) once the batch is finished.
    pub fn request<P: Serialize + ?Sized>(
        &mut self,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        let pending = &mut self.conn.pending;
        let slot = pending.alloc().ok_or(SendError::PendingFull)?;
        let seq = pending.seq();
        let id = pending.id_for(slot);
        let digits = Digits::of(id);
        if let Err(e) = self.append(|s| encode::request(s, digits.as_bytes(), method, params)) {
            self.conn.pending.set_seq(seq);
            self.conn.pending.release(slot);
            return Err(e);
        }
        let deadline = self.conn.deadline(self.now, timeout);
        self.conn.pending.arm(slot, token, id, deadline, true);
        self.requests += 1;
        Ok(())
    }

    /// Adds a notification.
    pub fn notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SendError> {
        self.append(|s| encode::notification(s, method, params))
    }

    /// Elements added so far.
    pub fn len(&self) -> usize {
        self.elements
    }

    /// True when nothing was added.
    pub fn is_empty(&self) -> bool {
        self.elements == 0
    }

    /// Sends the batch (an empty batch sends nothing: `[]` is not a valid batch).
    pub fn finish(mut self) {
        if self.elements == 0 {
            return;
        }
        let conn = &mut *self.conn;
        let framing = conn.config.framing;
        let reserve = frame_reserve(framing);
        let tail = conn.tx.tail_mut();
        // `append` keeps room for `]` and the delimiter.
        if let Some(b) = tail.get_mut(reserve + self.body_len) {
            *b = b']';
        }
        let seq = conn.pending.seq();
        if let Ok(n) = finish_frame(framing, tail, self.body_len + 1) {
            conn.tx.commit(n);
            // A batch may draw one error with id `null` (refused whole), like a notification.
            conn.unconfirmed = Some(seq);
            bump(&mut conn.stats.frames_out);
            bump(&mut conn.stats.batches_out);
            let (requests, notifications) = (self.requests, self.elements - self.requests);
            let stats = &mut conn.stats;
            stats.requests_out = stats.requests_out.saturating_add(requests as u64);
            stats.notifications_out = stats.notifications_out.saturating_add(notifications as u64);
            conn.pending.commit_staged();
            high_water(&mut conn.stats.pending_high_water, conn.pending.len());
        }
        self.elements = 0;
    }
}

impl<S: Storage> Drop for OutgoingBatch<'_, S> {
    fn drop(&mut self) {
        // Unfinished: nothing was sent, so the staged requests are released (after `finish`
        // there are none).
        self.conn.pending.drop_staged();
    }
}
