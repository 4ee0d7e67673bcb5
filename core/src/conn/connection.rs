//! The [`Connection`] itself: its state, how it is built, what it says of itself, its outputs,
//! and the writers that the inputs and commands share. The inputs (`input`), the commands
//! (`commands`) and outgoing batches (`outgoing`) are `impl` blocks of their own, above this
//! one; the parts it holds (`transmit`, `pending`, `inflight`, `batch`, `memo`) sit below it.

use super::batch::BatchReply;
use super::inflight::InflightTable;
use super::limits::{tx_limit, MAX_SLOTS, MIN_TX};
use super::memo::BatchMemo;
use super::pending::PendingTable;
use super::stats::{bump, Stats};
use super::transmit::{TxError, TxQueue};
use super::types::{Config, Event, Output};
use crate::code::ErrorCode;
use crate::records::{InflightSlot, PendingSlot};
use crate::slots::Slots;
use crate::storage::{Inline, Storage};
use crate::time::Instant;
use crate::token::Failure;
use crate::wire::framing::MAX_HEADER_LEN;
use crate::wire::ser::{SerializeError, SliceSink};
use crate::wire::{encode, MemoSlot, RxBuffer, MEMO_SLOTS};

/// A JSON-RPC 2.0 connection: framing, validation, id correlation, batches, timeouts and
/// limits over one byte stream, with no I/O and no clock.
///
/// Its storage is a type parameter ([`storage`](crate::storage)):
/// - [`Inline<TX, BATCH, PENDING, INFLIGHT>`](Inline) (the default, `Inline<4096, 2048, 16,
///   16>`): fixed arrays, no heap, const-constructible with
///   [`const_new`](Connection::const_new) for a firmware `static`;
/// - [`Heap`](crate::storage::Heap) (feature `alloc`): buffers and tables that grow on
///   demand up to the [`Config`] limits and shrink back; an idle connection holds a few
///   hundred bytes.
///
/// A full table is backpressure, never unbounded growth: `send_request` returns
/// [`SendError::PendingFull`](super::SendError::PendingFull); an inbound request that finds
/// no slot is answered with Server busy; when even an automatic reply finds no transmit room,
/// `handle_input` returns [`Input::Blocked`](super::Input::Blocked) until outputs are drained.
///
/// See the [crate documentation](crate) for the run loop.
pub struct Connection<S: Storage = Inline> {
    pub(super) config: Config,
    pub(super) tx: TxQueue<S::Tx>,
    pub(super) pending: PendingTable<S::Pending>,
    pub(super) inflight: InflightTable<S::Inflight>,
    pub(super) batch: BatchReply<S::Batch>,
    /// What validating the batch being delivered learned of its elements.
    pub(super) memo: BatchMemo<S::Memo>,
    /// Offset of the next element of the batch being delivered (in the held frame).
    pub(super) cursor: Option<usize>,
    /// The batch being delivered arrived while another was being answered: its requests were
    /// answered Server busy at once, and only its notifications and responses are delivered.
    pub(super) busy_batch: bool,
    /// The held frame could not be processed yet (no room for its reply): retry it.
    pub(super) retry_held: bool,
    /// The reply to an oversize frame (id `null`), waiting for transmit room.
    pub(super) deferred: Option<(ErrorCode, Option<&'static str>)>,
    /// A notification or batch was sent that the peer may yet answer with an error of id
    /// `null`: the request sequence number at that moment. Cleared once the peer answers a
    /// request sent after it (so it read past it). While set, a `null` error is not
    /// attributed to a lone waiting request.
    pub(super) unconfirmed: Option<u64>,
    pub(super) stats: Stats,
    pub(super) closed: bool,
}

impl<S: Storage> core::fmt::Debug for Connection<S> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connection")
            .field("config", &self.config)
            .field("queued_tx", &self.tx.queued().len())
            .field("pending", &self.pending_len())
            .field("inflight", &self.inflight_len())
            .field("closed", &self.closed)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<S: Storage> Default for Connection<S> {
    fn default() -> Self {
        Self::new(Config::default())
    }
}

const fn min(a: usize, b: usize) -> usize {
    if a < b {
        a
    } else {
        b
    }
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize>
    Connection<Inline<TX, BATCH, PENDING, INFLIGHT>>
{
    /// Checked at compile time: the transmit buffer holds any automatic reply (and any batch
    /// reply), and the tables have slots.
    const CAPACITY_OK: () = {
        assert!(TX >= MIN_TX, "TX must be at least 256 bytes");
        assert!(
            TX > BATCH + MAX_HEADER_LEN,
            "TX must hold a whole batch reply"
        );
        assert!(
            PENDING >= 1 && PENDING <= MAX_SLOTS,
            "PENDING must be 1..=2^24"
        );
        assert!(
            INFLIGHT >= 1 && INFLIGHT <= MAX_SLOTS,
            "INFLIGHT must be 1..=2^24"
        );
    };

    /// A new connection with inline storage, as a `const fn`, so that a firmware can place it
    /// in a `static` ([`new`](Connection::new) does the same at run time, for any storage).
    pub const fn const_new(config: Config) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_OK;
        Connection {
            config,
            tx: TxQueue::new([0; TX], TX),
            pending: PendingTable::new(
                [PendingSlot::FREE; PENDING],
                min(config.max_pending, PENDING),
            ),
            inflight: InflightTable::new(
                [InflightSlot::FREE; INFLIGHT],
                min(config.max_inflight, INFLIGHT),
            ),
            batch: BatchReply::new([0; BATCH], BATCH),
            memo: BatchMemo::new([MemoSlot::EMPTY; MEMO_SLOTS]),
            cursor: None,
            busy_batch: false,
            retry_held: false,
            deferred: None,
            unconfirmed: None,
            stats: Stats::ZERO,
            closed: false,
        }
    }
}

impl<S: Storage> Connection<S> {
    /// A new connection. With fixed storage the arrays cap the configured limits; growing
    /// storage starts empty.
    pub fn new(config: Config) -> Self {
        let parts = S::parts();
        let grows = <S::Tx as Slots<u8>>::GROWS;
        let cap = |limit: usize, len: usize| if grows { limit } else { limit.min(len) };
        let pending_limit = cap(config.max_pending, parts.pending.slots().len());
        let inflight_limit = cap(config.max_inflight, parts.inflight.slots().len());
        let tx_limit = tx_limit(config.max_frame);
        let batch_limit = config.max_frame;
        Connection {
            config,
            tx: TxQueue::new(parts.tx, tx_limit),
            pending: PendingTable::new(parts.pending, pending_limit),
            inflight: InflightTable::new(parts.inflight, inflight_limit),
            batch: BatchReply::new(parts.batch, batch_limit),
            memo: BatchMemo::new(parts.memo),
            cursor: None,
            busy_batch: false,
            retry_held: false,
            deferred: None,
            unconfirmed: None,
            stats: Stats::ZERO,
            closed: false,
        }
    }

    /// Starts the sequence of outgoing request ids at `seed` (masked to the id range). Ids
    /// otherwise start at the same value in every connection; a host that runs many short
    /// connections over one shared line (a serial port, a restarted process) seeds each one
    /// differently so that a late answer meant for an earlier connection cannot match.
    pub fn seed_ids(&mut self, seed: u64) {
        self.pending.seed(seed);
    }

    /// A receive buffer whose framing and maximum frame match this connection's
    /// configuration (an array caps the maximum frame at what it holds).
    pub fn rx_buffer<B: Slots<u8>>(&self) -> RxBuffer<B> {
        RxBuffer::with_max_frame(self.config.framing, self.config.max_frame)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Accepts inbound batches from now on, or refuses them (each answered with one Invalid
    /// Request), as [`Config::batches`] does from the start: for a profile whose rule depends
    /// on what the peers negotiated (MCP accepts them in revision 2025-03-26 and refuses them
    /// from 2025-06-18 on).
    pub fn set_batches(&mut self, accept: bool) {
        self.config.batches = accept;
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// The counters where they are kept: for a driver that looks at a few of them after every
    /// message (batch boundaries), with no copy of the whole set.
    #[inline]
    pub fn counters(&self) -> &Stats {
        &self.stats
    }

    /// Outgoing requests awaiting a response (or an unreported failure).
    pub fn pending_len(&self) -> usize {
        self.pending.len()
    }

    /// Inbound requests not yet answered (or whose answer waits for transmit room).
    pub fn inflight_len(&self) -> usize {
        self.inflight.len()
    }

    /// Bytes of storage this connection holds now (buffers and tables; for inline storage,
    /// always the same). For memory accounting on hosts.
    pub fn storage_bytes(&self) -> usize {
        self.tx.capacity()
            + self.batch.capacity()
            + self.pending.capacity() * core::mem::size_of::<PendingSlot>()
            + self.inflight.capacity() * core::mem::size_of::<InflightSlot>()
            + self.memo.capacity() * core::mem::size_of::<crate::wire::MemoSlot>()
    }

    /// Growing storage: gives back the memory of every buffer and table that holds nothing
    /// now (the transmit queue once written out, the batch-reply buffer between batches, empty
    /// tables). A driver calls it when a connection has been idle for a while; an idle
    /// connection then holds a few hundred bytes. Buffers enlarged for a large frame are
    /// given back on their own, as soon as the frame has gone. Fixed storage: no effect.
    pub fn shrink(&mut self) {
        self.tx.shrink();
        self.batch.shrink();
        // Safe mid-batch too: the elements not yet delivered are then walked again.
        self.memo.shrink();
        self.pending.shrink();
        self.inflight.shrink();
    }

    /// True after [`close`](Connection::close).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// True when input processing stopped for lack of transmit room (what
    /// [`Input::Blocked`](super::Input::Blocked) says): drain
    /// [`poll_transmit`](Connection::poll_transmit), then call
    /// [`handle_input`](Connection::handle_input) again (even with no new bytes).
    pub fn is_input_blocked(&self) -> bool {
        self.retry_held || self.deferred.is_some()
    }

    /// Expires requests whose deadline is at or before `now`; they come out of
    /// [`poll_event`](Connection::poll_event) as [`Failure::TimedOut`]. Spurious calls are
    /// harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        let expired = self.pending.expire(now);
        self.stats.timeouts = self.stats.timeouts.saturating_add(expired);
    }

    /// The peer will send nothing more (its write side closed) but may still read: every
    /// pending request fails with [`Failure::Closed`] (reported by
    /// [`poll_event`](Connection::poll_event)), while inbound requests stay open so that their
    /// answers can still be sent. New requests can still be sent (they will time out or fail
    /// at [`close`](Connection::close)).
    pub fn fail_pending(&mut self) {
        self.pending.fail_all(Failure::Closed, false);
    }

    /// Closes the connection: every pending request fails with [`Failure::Closed`] (reported
    /// by [`poll_event`](Connection::poll_event)), open inbound requests are dropped, new
    /// commands fail with `Closed`. Output already queued can still be drained.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        self.pending.fail_all(Failure::Closed, true);
        self.inflight.clear();
        self.batch.reset();
        self.cursor = None;
        self.busy_batch = false;
        self.retry_held = false;
    }

    // ----------------------------------------------------------------------------- outputs

    /// The next thing to do: an event, bytes to transmit, or the next deadline. Call it after
    /// every input or command until it returns [`Output::Timeout`] or [`Output::Idle`]; after
    /// writing `Transmit` bytes call [`advance_transmit`](Connection::advance_transmit).
    pub fn poll_output(&mut self) -> Output<'_> {
        if let Some(e) = self.poll_event() {
            return Output::Event(e);
        }
        self.flush_intents();
        if !self.tx.is_empty() {
            return Output::Transmit(self.tx.queued());
        }
        match self.poll_timeout() {
            Some(t) => Output::Timeout(t),
            None => Output::Idle,
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        if !self.pending.has_failed() {
            return None;
        }
        let (token, reason) = self.pending.pop_failed()?;
        Some(Event::RequestFailed { token, reason })
    }

    /// All bytes waiting to be written (several frames at once, so a driver writes them with
    /// one call). Report progress with [`advance_transmit`](Connection::advance_transmit).
    pub fn poll_transmit(&mut self) -> &[u8] {
        self.flush_intents();
        self.tx.queued()
    }

    /// Bytes queued for transmission now (what [`poll_transmit`](Connection::poll_transmit)
    /// would return, without writing pending automatic replies first).
    pub fn transmit_len(&self) -> usize {
        self.tx.queued().len()
    }

    /// Marks `n` bytes of [`poll_transmit`](Connection::poll_transmit) as written.
    pub fn advance_transmit(&mut self, n: usize) {
        self.tx.advance(n);
    }

    /// Writes out everything queued with `write` (which returns how many bytes it took), as
    /// long as it takes some: the drain every blocking driver runs. Returns the bytes written;
    /// stops early, without error, when `write` takes nothing (a non-blocking sink that is
    /// full). Async drivers do the same with [`poll_transmit`](Connection::poll_transmit) and
    /// [`advance_transmit`](Connection::advance_transmit) around their `await`.
    pub fn transmit_with<E>(
        &mut self,
        mut write: impl FnMut(&[u8]) -> Result<usize, E>,
    ) -> Result<usize, E> {
        let mut total = 0;
        loop {
            let bytes = self.poll_transmit();
            if bytes.is_empty() {
                return Ok(total);
            }
            let n = write(bytes)?;
            if n == 0 {
                return Ok(total);
            }
            self.advance_transmit(n);
            total += n;
        }
    }

    /// The earliest deadline of a pending request, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending.next_deadline()
    }

    // ------------------------------------------------------------------------------ helpers

    /// Writes replies that waited for transmit room.
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub(super) fn flush_intents(&mut self) {
        // Checked on every input and output call, and there is seldom anything to write:
        // hosts look first without a call (firmware saves the flash).
        if crate::wire::scan::WORD_AT_A_TIME && self.nothing_to_flush() {
            return;
        }
        self.flush_waiting();
    }

    /// True when no automatic reply waits for transmit room and no batch reply is complete.
    #[inline]
    pub(super) fn nothing_to_flush(&self) -> bool {
        self.deferred.is_none() && !self.inflight.has_rejected() && !self.batch.complete()
    }

    fn flush_waiting(&mut self) {
        if let Some((code, data)) = self.deferred {
            if !self.try_error(b"null", code, data) {
                return;
            }
            self.deferred = None;
        }
        while let Some(r) = self.inflight.first_rejected() {
            if !self.try_error(r.id.raw(), r.code, None) {
                return;
            }
            self.inflight.pop_rejected();
        }
        if self.batch.complete() {
            self.try_finish_batch();
        }
    }

    /// Writes an automatic error reply (standard message, data string) as a frame of its own;
    /// false when the transmit buffer has no room yet. An id so long that the reply could never
    /// fit the buffer is answered with `null`.
    pub(super) fn try_error(
        &mut self,
        id: &[u8],
        code: ErrorCode,
        data: Option<&'static str>,
    ) -> bool {
        // Hosts: the reply to peer garbage with no id (a parse error, mostly) is a whole
        // line known in advance, copied in one piece when it fits as the queue stands.
        #[cfg(target_pointer_width = "64")]
        if let (None, b"null", crate::wire::Framing::Line) = (data, id, self.config.framing) {
            if let Some(line) = encode::null_id_error_line(code) {
                if self.tx.put_encoded(line) {
                    bump(&mut self.stats.frames_out);
                    return true;
                }
            }
        }
        let mut id = id;
        loop {
            let written = self.write_auto_frame(&|s| {
                encode::auto_error(s, id, code, data);
                Ok(())
            });
            match written {
                Ok(()) => return true,
                Err(TxError::TooLarge { .. }) if id != b"null" => id = b"null",
                Err(_) => return false,
            }
        }
    }

    /// Encodes one frame of the application's (a request, a notification, an answer) at the
    /// end of the transmit queue: its body is at most `Config::max_frame` bytes.
    pub(super) fn write_tx_frame(
        &mut self,
        body: &dyn Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<(), TxError> {
        self.tx
            .write_frame(self.config.framing, self.config.max_frame, body)?;
        bump(&mut self.stats.frames_out);
        Ok(())
    }

    /// Encodes an automatic reply: bounded by the transmit queue alone (a peer must get its
    /// error reply even under a tiny `max_frame`; such replies are a few hundred bytes).
    pub(super) fn write_auto_frame(
        &mut self,
        body: &dyn Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<(), TxError> {
        self.tx.write_frame(self.config.framing, usize::MAX, body)?;
        bump(&mut self.stats.frames_out);
        Ok(())
    }
}

/// Decimal digits of a `u64`, on the stack.
#[derive(Default)]
pub(super) struct Digits {
    buf: [u8; 20],
    len: usize,
}

impl Digits {
    pub(super) fn of(v: u64) -> Self {
        let mut d = Digits::default();
        let mut sink = SliceSink::new(&mut d.buf);
        crate::bytes::put_u64(&mut sink, v);
        d.len = sink.len();
        d
    }

    pub(super) fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}
