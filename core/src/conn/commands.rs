//! Commands: requests and notifications out, answers to the peer's requests, cancellation.

use core::time::Duration;

use serde::Serialize;

use super::connection::{Connection, Digits};
use super::outgoing::OutgoingBatch;
use super::stats::{bump, high_water};
use super::transmit::{send_error, TxError};
use super::types::{CancelError, RequestHandle, RespondError, SendError};
use crate::code::ErrorCode;
use crate::storage::Storage;
use crate::time::Instant;
use crate::token::Token;
use crate::wire::encode;
use crate::wire::ser::{SerializeError, SliceSink};

impl<S: Storage> Connection<S> {
    /// The deadline of a request sent at `now` with this timeout (or the configured one).
    pub(super) fn deadline(&self, now: Instant, timeout: Option<Duration>) -> Instant {
        timeout
            .or(self.config.request_timeout)
            .map_or(Instant::MAX, |t| now + t)
    }

    /// Sends a request. `token` comes back exactly once: with the response, as a failure
    /// event (timeout after `timeout`, or the configured default when `None`; close), or as
    /// the `Ok` of [`cancel`](Connection::cancel). Nothing is sent on error.
    ///
    /// Params are any `Serialize` (pass [`NO_PARAMS`](crate::wire::NO_PARAMS) for none); they
    /// must serialize to an array or object.
    pub fn send_request<P: Serialize + ?Sized>(
        &mut self,
        now: Instant,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        let slot = self.pending.alloc().ok_or(SendError::PendingFull)?;
        let seq = self.pending.seq();
        let id = self.pending.id_for(slot);
        let digits = Digits::of(id);
        let written =
            self.write_tx_frame(&|s| encode::request(s, digits.as_bytes(), method, params));
        if let Err(e) = written {
            self.pending.set_seq(seq);
            self.pending.release(slot);
            return Err(send_error(e));
        }
        let deadline = self.deadline(now, timeout);
        self.pending.arm(slot, token, id, deadline, false);
        bump(&mut self.stats.requests_out);
        high_water(&mut self.stats.pending_high_water, self.pending.len());
        Ok(())
    }

    /// Sends a notification (no response, no token).
    pub fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        self.write_tx_frame(&|s| encode::notification(s, method, params))
            .map_err(send_error)?;
        bump(&mut self.stats.notifications_out);
        self.unconfirmed = Some(self.pending.seq());
        Ok(())
    }

    /// Starts an outgoing batch; add requests and notifications, then
    /// [`finish`](OutgoingBatch::finish) it. Dropping it unfinished sends nothing.
    pub fn start_batch(&mut self, now: Instant) -> Result<OutgoingBatch<'_, S>, SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        OutgoingBatch::start(self, now)
    }

    /// Answers an inbound request with `result`.
    pub fn respond<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.answer(handle, |s, id| encode::result(s, id, result))
    }

    /// Answers an inbound request with an error. `message` defaults to the code's standard
    /// message; `data` is any `Serialize` (pass `None::<&()>` for none).
    pub fn respond_error<D: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        code: ErrorCode,
        message: Option<&str>,
        data: Option<&D>,
    ) -> Result<(), RespondError> {
        self.answer(handle, |s, id| encode::error(s, id, code, message, data))
    }

    /// Answers an inbound request with a standard error (for example
    /// [`ErrorCode::METHOD_NOT_FOUND`]). Never blocks: without transmit room the reply is kept
    /// as a small record and written when outputs are polled.
    pub fn reject(&mut self, handle: RequestHandle, code: ErrorCode) -> Result<(), RespondError> {
        let (slot, batch, id) = self
            .inflight
            .lookup(handle)
            .ok_or(RespondError::UnknownHandle)?;
        let id = *id;
        bump(&mut self.stats.responses_out);
        match batch {
            Some(reserve) => {
                self.batch_error(reserve, id.raw(), code, None);
                self.close_batch_member(slot);
            }
            None => self.reject_alone(slot, code),
        }
        Ok(())
    }

    /// Lets go of an inbound request without answering it: its slot is free and nothing is
    /// written. In a batch, the reply array leaves it out (and a batch left with no reply at
    /// all sends nothing, as one of only notifications).
    ///
    /// JSON-RPC answers every request, so this is for profiles whose rules say otherwise: MCP
    /// asks a receiver not to answer a request its peer cancelled (`notifications/cancelled`),
    /// where LSP still wants an answer to a cancelled one.
    ///
    /// ```
    /// use rpcwire::{Config, Connection, Inbound, Input, Instant};
    /// use rpcwire::storage::Inline;
    /// use rpcwire::wire::RxBuffer;
    ///
    /// let mut conn: Connection<Inline> = Connection::new(Config::default());
    /// let mut rx: RxBuffer<[u8; 256]> = conn.rx_buffer();
    /// let mut input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"slow\"}\n";
    /// let Input::Item(Inbound::Request(req)) = conn.handle_input(Instant::ZERO, &mut rx, &mut input)
    /// else { panic!() };
    /// let handle = req.handle;
    /// conn.release(handle).unwrap();
    /// assert_eq!(conn.inflight_len(), 0);
    /// assert!(conn.poll_transmit().is_empty());
    /// assert!(conn.release(handle).is_err()); // once only
    /// ```
    pub fn release(&mut self, handle: RequestHandle) -> Result<(), RespondError> {
        let (slot, batch, _) = self
            .inflight
            .lookup(handle)
            .ok_or(RespondError::UnknownHandle)?;
        match batch {
            Some(reserve) => {
                self.batch.release(reserve);
                self.close_batch_member(slot);
            }
            None => self.inflight.answered(slot),
        }
        Ok(())
    }

    fn answer(
        &mut self,
        handle: RequestHandle,
        body: impl Fn(&mut SliceSink<'_>, &[u8]) -> Result<(), SerializeError>,
    ) -> Result<(), RespondError> {
        let (slot, batch, id) = self
            .inflight
            .lookup(handle)
            .ok_or(RespondError::UnknownHandle)?;
        bump(&mut self.stats.responses_out);
        // Hosts: an answer alone on a line connection goes straight to the end of the
        // transmit queue when it fits there, the id read where the table keeps it.
        #[cfg(target_pointer_width = "64")]
        if batch.is_none() && self.config.framing == crate::wire::Framing::Line {
            let put = self
                .tx
                .put_line(self.config.max_frame, |s| body(s, id.raw()))
                .map_err(RespondError::Serialize)?;
            if put {
                bump(&mut self.stats.frames_out);
                self.inflight.answered(slot);
                return Ok(());
            }
        }
        // Copied out (the writer needs the whole connection). Reading it in place through
        // fields borrowed apart saved a dozen instructions on hosts and cost 200 bytes of
        // firmware flash, where the image has none to spare.
        let id = *id;
        match batch {
            Some(reserve) => match self.batch.append(reserve, |s| body(s, id.raw())) {
                Err(e) => Err(RespondError::Serialize(e)),
                Ok(Ok(())) => {
                    self.close_batch_member(slot);
                    Ok(())
                }
                Ok(Err(required)) => {
                    self.batch_error(reserve, id.raw(), ErrorCode::INTERNAL_ERROR, None);
                    self.close_batch_member(slot);
                    Err(RespondError::TooLarge { required })
                }
            },
            None => match self.write_tx_frame(&|s| body(s, id.raw())) {
                Ok(()) => {
                    self.inflight.answered(slot);
                    Ok(())
                }
                Err(TxError::Serialize(e)) => Err(RespondError::Serialize(e)),
                Err(TxError::WouldBlock { required }) => Err(RespondError::WouldBlock { required }),
                Err(TxError::TooLarge { required }) => {
                    self.reject_alone(slot, ErrorCode::INTERNAL_ERROR);
                    Err(RespondError::TooLarge { required })
                }
            },
        }
    }

    /// Answers a request that came alone with a standard error: kept as a record, written
    /// now if there is room, else when outputs are polled.
    fn reject_alone(&mut self, slot: usize, code: ErrorCode) {
        self.inflight.reject(slot, code);
        self.flush_intents();
    }

    fn close_batch_member(&mut self, slot: usize) {
        self.inflight.answered(slot);
        self.batch.outstanding = self.batch.outstanding.saturating_sub(1);
        self.try_finish_batch();
    }

    /// The id our request with this token carries on the wire, while it waits for its
    /// response: what a profile's cancel notification names (`$/cancelRequest`,
    /// `notifications/cancelled`). A scan of the pending table, as [`cancel`](Connection::cancel).
    pub fn request_id(&self, token: Token) -> Option<u64> {
        self.pending.id_of(token)
    }

    /// Forgets a pending request: a late response is reported as
    /// [`Problem::UnknownResponse`](super::Problem::UnknownResponse). `Ok` hands the token back
    /// (it will not come back again). To tell the peer, send the profile's cancel notification
    /// (`notifications/cancelled`, `$/cancelRequest`) with [`request_id`](Connection::request_id).
    pub fn cancel(&mut self, token: Token) -> Result<(), CancelError> {
        if self.pending.cancel(token) {
            Ok(())
        } else {
            Err(CancelError::NotPending)
        }
    }
}
