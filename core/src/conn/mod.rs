//! The sans-IO [`Connection`]: one per byte stream, both roles at once.
//!
//! A driver feeds it received bytes ([`handle_input`](Connection::handle_input)) and the time
//! ([`handle_timeout`](Connection::handle_timeout)), gives it commands
//! ([`send_request`](Connection::send_request), [`respond`](Connection::respond), ...), and
//! after every input or command drains its outputs
//! ([`poll_output`](Connection::poll_output)) until [`Output::Timeout`] or [`Output::Idle`].

mod batch;
mod types;

use core::time::Duration;

use serde::Serialize;

use self::batch::BatchReply;
pub use self::types::*;
use crate::wire::ser::{SerializeError, SliceSink};
use crate::wire::MAX_STORED_ID_LEN;
use crate::wire::{
    encode, finish_frame, frame_reserve, parse, Batch, BatchIter, Element, FrameEvent, Id, Message,
    ParseLimits, Parsed, Response, RxBuffer, StoredId,
};
use crate::{ErrorCode, Instant};

/// An outgoing request waiting for its response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PendingState {
    Free,
    /// Added to a batch under construction, not yet sent.
    Staged,
    Waiting,
    /// Ended without a response, not yet reported through `poll_event`.
    Failed(Failure),
}

#[derive(Debug, Clone, Copy)]
struct Pending {
    state: PendingState,
    token: Token,
    id: u64,
    deadline: Instant,
}

impl Pending {
    /// All zeros (the other fields mean nothing in a free slot), so that a new connection's
    /// table is cleared rather than copied from a template in flash.
    const FREE: Pending = Pending {
        state: PendingState::Free,
        token: Token(0),
        id: 0,
        deadline: Instant::ZERO,
    };
}

/// An inbound request not yet answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InflightState {
    Free,
    /// Delivered to the application; `reserve` is its batch reservation (0 outside batches).
    Open {
        in_batch: bool,
        reserve: usize,
    },
    /// Answered with a standard error that waits for transmit room.
    Rejected(ErrorCode),
}

#[derive(Debug, Clone, Copy)]
struct Inflight {
    generation: u16,
    state: InflightState,
    id: StoredId,
}

impl Inflight {
    const FREE: Inflight = Inflight {
        generation: 0,
        state: InflightState::Free,
        // Not read in a free slot; zeros, like `Pending::FREE`.
        id: StoredId::EMPTY,
    };
}

/// Where the automatic reply to an inbound message goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// A frame of its own in the transmit buffer: the message came alone.
    Frame,
    /// The reply to the batch being answered, in the room (bytes) the element reserved.
    Batch(usize),
    /// Nowhere: the message is a member of a batch that was answered on arrival
    /// (`open_busy_batch`).
    Done,
}

/// Data strings of automatic replies.
const DATA_FRAME_TOO_LARGE: &str = "frame too large";
const DATA_BATCH_TOO_LARGE: &str = "batch too large";
const DATA_NO_BATCHES: &str = "batches are not supported";
const DATA_DUPLICATE_ID: &str = "duplicate id";
const DATA_ID_TOO_LONG: &str = "id too long";

/// A JSON-RPC 2.0 connection: framing, validation, id correlation, batches, timeouts and
/// limits over one byte stream, with no I/O, no clock and no heap.
///
/// Capacities are const generics, so all storage is inline and sized at compile time:
/// - `TX`: transmit buffer bytes (outgoing frames wait here until written);
/// - `BATCH`: bytes for assembling the reply to one inbound batch;
/// - `PENDING`: outgoing requests awaiting responses;
/// - `INFLIGHT`: inbound requests awaiting our answer.
///
/// A full table is backpressure, never growth: `send_request` returns
/// [`SendError::PendingFull`]; an inbound request that finds no slot is answered with Server
/// busy; when even an automatic reply finds no transmit room, `handle_input` stops consuming
/// until outputs are drained.
///
/// See the [crate documentation](crate) for the run loop.
pub struct Connection<
    const TX: usize = 4096,
    const BATCH: usize = 2048,
    const PENDING: usize = 16,
    const INFLIGHT: usize = 16,
> {
    config: Config,
    tx: [u8; TX],
    tx_start: usize,
    tx_end: usize,
    pending: [Pending; PENDING],
    /// Pending entries in `Failed` state, not yet reported.
    failed: usize,
    /// Earliest deadline among waiting requests (a lower bound; recomputed lazily).
    earliest: Instant,
    next_seq: u64,
    inflight: [Inflight; INFLIGHT],
    /// In-flight entries in `Rejected` state.
    rejected: usize,
    batch: BatchReply<BATCH>,
    /// Offset of the next element of the batch being delivered (in the held frame).
    cursor: Option<usize>,
    /// The batch being delivered arrived while another was being answered: its requests were
    /// answered Server busy at once, and only its notifications and responses are delivered.
    busy_batch: bool,
    /// The held frame could not be processed yet (no room for its reply): retry it.
    retry_held: bool,
    /// The reply to an oversize frame (id `null`), waiting for transmit room.
    deferred: Option<(ErrorCode, Option<&'static str>)>,
    stats: Stats,
    closed: bool,
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize>
    core::fmt::Debug for Connection<TX, BATCH, PENDING, INFLIGHT>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Connection")
            .field("config", &self.config)
            .field("queued_tx", &(self.tx_end - self.tx_start))
            .field("pending", &self.pending_len())
            .field("inflight", &self.inflight_len())
            .field("closed", &self.closed)
            .field("stats", &self.stats)
            .finish()
    }
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize> Default
    for Connection<TX, BATCH, PENDING, INFLIGHT>
{
    fn default() -> Self {
        Self::new(Config::default())
    }
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize>
    Connection<TX, BATCH, PENDING, INFLIGHT>
{
    /// Checked at compile time: the transmit buffer holds any automatic reply (and any batch
    /// reply), and slot indices fit in `u16`.
    const CAPACITY_OK: () = {
        assert!(TX >= 256, "TX must be at least 256 bytes");
        assert!(
            TX > BATCH + crate::wire::framing::MAX_HEADER_LEN,
            "TX must hold a whole batch reply"
        );
        assert!(
            PENDING >= 1 && PENDING <= 65536,
            "PENDING must be 1..=65536"
        );
        assert!(
            INFLIGHT >= 1 && INFLIGHT <= 65536,
            "INFLIGHT must be 1..=65536"
        );
    };

    /// A new connection. A `const fn`, so that a firmware can place it in a `static`.
    pub const fn new(config: Config) -> Self {
        #[allow(clippy::let_unit_value)]
        let () = Self::CAPACITY_OK;
        Connection {
            config,
            tx: [0; TX],
            tx_start: 0,
            tx_end: 0,
            pending: [Pending::FREE; PENDING],
            failed: 0,
            earliest: Instant::MAX,
            next_seq: 1,
            inflight: [Inflight::FREE; INFLIGHT],
            rejected: 0,
            batch: BatchReply::new(),
            cursor: None,
            busy_batch: false,
            retry_held: false,
            deferred: None,
            stats: Stats::ZERO,
            closed: false,
        }
    }

    /// Starts the sequence of outgoing request ids at `seed` (masked to the id range). Ids
    /// otherwise start at the same value in every connection; a host that runs many short
    /// connections over one shared line (a serial port, a restarted process) seeds each one
    /// differently so that a late answer meant for an earlier connection cannot match.
    pub fn seed_ids(&mut self, seed: u64) {
        self.next_seq = seed & ((1 << (53 - Self::SLOT_BITS)) - 1);
    }

    /// A receive buffer whose framing matches this connection's.
    pub fn rx_buffer<const N: usize>(&self) -> RxBuffer<N> {
        RxBuffer::new(self.config.framing)
    }

    /// The configuration.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Counters.
    pub fn stats(&self) -> Stats {
        self.stats
    }

    /// Outgoing requests awaiting a response (or an unreported failure).
    pub fn pending_len(&self) -> usize {
        self.pending
            .iter()
            .filter(|p| p.state != PendingState::Free)
            .count()
    }

    /// Inbound requests not yet answered (or whose answer waits for transmit room).
    pub fn inflight_len(&self) -> usize {
        self.inflight
            .iter()
            .filter(|s| s.state != InflightState::Free)
            .count()
    }

    /// True after [`close`](Connection::close).
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// True when input processing stopped for lack of transmit room: drain
    /// [`poll_transmit`](Connection::poll_transmit), then call
    /// [`handle_input`](Connection::handle_input) again (even with no new bytes).
    pub fn is_input_blocked(&self) -> bool {
        self.retry_held || self.deferred.is_some()
    }

    // ----------------------------------------------------------------------------- inputs

    /// Feeds received bytes and yields the next inbound item, borrowing the receive buffer.
    ///
    /// Call it in a loop until it returns `None`: each call consumes as much of `input` as it
    /// needs (copying into `rx`) and returns one request, notification, response, or problem.
    /// `None` means everything buffered has been handled, or that processing is blocked until
    /// outputs are drained ([`is_input_blocked`](Connection::is_input_blocked)); bytes not yet
    /// taken remain in `input`. Answers to peer garbage are queued automatically.
    pub fn handle_input<'a, const N: usize>(
        &mut self,
        now: Instant,
        rx: &'a mut RxBuffer<N>,
        input: &mut &[u8],
    ) -> Option<Inbound<'a>> {
        if self.closed {
            *input = &[];
            return None;
        }
        if now >= self.earliest {
            self.handle_timeout(now);
        }
        self.flush_intents();
        if self.deferred.is_some() {
            return None;
        }
        // Advance the decoder until something is ready. The borrowed frame is taken after the
        // loop so that the loop itself holds no borrow of `rx`.
        let held = self.cursor.is_some() || self.retry_held;
        if !held {
            loop {
                if rx.advance() {
                    break;
                }
                if input.is_empty() || rx.push(input) == 0 {
                    return None;
                }
            }
        }
        if held {
            let frame = rx.held()?;
            return match self.cursor {
                Some(pos) => self.next_batch_element(frame, pos),
                None => self.process_frame(frame),
            };
        }
        match rx.event()? {
            FrameEvent::Frame(frame) => self.process_frame(frame),
            FrameEvent::Oversize { len } => {
                bump(&mut self.stats.oversize_frames);
                bump(&mut self.stats.resyncs);
                bump(&mut self.stats.frames_in);
                // The frame is gone, so there is nothing to retry: keep the reply instead.
                let data = Some(DATA_FRAME_TOO_LARGE);
                if !self.try_error(b"null", ErrorCode::INVALID_REQUEST, data) {
                    self.deferred = Some((ErrorCode::INVALID_REQUEST, data));
                }
                Some(Inbound::Problem(Problem::FrameTooLarge { len }))
            }
            FrameEvent::BadHeader => {
                // Not answered: a header block is framing, not a message, and two peers that
                // both lost framing must not feed each other error frames.
                bump(&mut self.stats.resyncs);
                Some(Inbound::Problem(Problem::BadHeader))
            }
        }
    }

    /// Expires requests whose deadline is at or before `now`; they come out of
    /// [`poll_event`](Connection::poll_event) as [`Failure::TimedOut`]. Spurious calls are
    /// harmless.
    pub fn handle_timeout(&mut self, now: Instant) {
        let mut earliest = Instant::MAX;
        for p in self.pending.iter_mut() {
            if p.state == PendingState::Waiting {
                if p.deadline <= now {
                    p.state = PendingState::Failed(Failure::TimedOut);
                    self.failed += 1;
                    bump(&mut self.stats.timeouts);
                } else {
                    earliest = earliest.min(p.deadline);
                }
            }
        }
        self.earliest = earliest;
    }

    fn process_frame<'a>(&mut self, frame: &'a [u8]) -> Option<Inbound<'a>> {
        let limits = ParseLimits {
            max_depth: self.config.max_depth,
        };
        let inbound = match parse(frame, limits) {
            Err(e) => {
                self.reply_error(Answer::Frame, b"null", ErrorCode::PARSE_ERROR, None)?;
                bump(&mut self.stats.parse_errors);
                Inbound::Problem(Problem::ParseError(e))
            }
            Ok(Parsed::EmptyBatch) => {
                self.reply_error(Answer::Frame, b"null", ErrorCode::INVALID_REQUEST, None)?;
                bump(&mut self.stats.invalid_messages);
                Inbound::Problem(Problem::EmptyBatch)
            }
            Ok(Parsed::Single(element)) => self.accept_element(element, Answer::Frame)?,
            Ok(Parsed::Batch(batch)) => return self.open_batch(frame, batch),
        };
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        Some(inbound)
    }

    /// Takes one message: a single one, or a member of a batch. `answer` says where its
    /// automatic reply goes, if it gets one. `None` when a single message's reply finds no
    /// transmit room: the held frame is taken again once outputs are drained (counters are
    /// bumped only when a message is taken, so a retry counts once).
    fn accept_element<'a>(&mut self, element: Element<'a>, answer: Answer) -> Option<Inbound<'a>> {
        let req = match element {
            Ok(Message::Request(req)) => req,
            Ok(Message::Notification(n)) => {
                self.no_reply(answer);
                return Some(Inbound::Notification(n));
            }
            Ok(Message::Response(resp)) => {
                self.no_reply(answer);
                return Some(self.route_response(resp));
            }
            Err(invalid) => {
                if invalid.needs_reply() {
                    let id = invalid.id.map_or(&b"null"[..], |id| id.raw_bytes());
                    self.reply_error(answer, id, ErrorCode::INVALID_REQUEST, None)?;
                } else {
                    self.no_reply(answer);
                }
                bump(&mut self.stats.invalid_messages);
                return Some(Inbound::Problem(Problem::Invalid(invalid)));
            }
        };
        if answer == Answer::Done {
            return Some(Inbound::Problem(Problem::Busy(req.id)));
        }
        let duplicate = self.is_inflight(req.id);
        let (code, data, problem) =
            if duplicate && self.config.duplicate_ids == DuplicateIdPolicy::Reject {
                let data = Some(DATA_DUPLICATE_ID);
                (
                    ErrorCode::INVALID_REQUEST,
                    data,
                    Problem::DuplicateId(req.id),
                )
            } else if let Some(stored) = StoredId::new(req.id) {
                if let Some(slot) = self.free_inflight() {
                    if duplicate {
                        bump(&mut self.stats.duplicate_ids);
                    }
                    return Some(Inbound::Request(InboundRequest {
                        handle: self.open_inflight(slot, stored, answer),
                        id: req.id,
                        method: req.method,
                        params: req.params,
                        duplicate,
                        in_batch: answer != Answer::Frame,
                    }));
                }
                (ErrorCode::SERVER_BUSY, None, Problem::Busy(req.id))
            } else {
                let data = Some(DATA_ID_TOO_LONG);
                (ErrorCode::INVALID_REQUEST, data, Problem::IdTooLong(req.id))
            };
        self.reply_error(answer, req.id.raw_bytes(), code, data)?;
        if duplicate {
            bump(&mut self.stats.duplicate_ids);
        }
        match problem {
            Problem::Busy(_) => bump(&mut self.stats.busy_rejections),
            Problem::IdTooLong(_) => bump(&mut self.stats.invalid_messages),
            _ => {}
        }
        Some(Inbound::Problem(problem))
    }

    /// Writes an automatic error reply where `answer` says. `None` (and the held frame marked
    /// for retry) when it is a frame of its own and the transmit buffer has no room yet.
    fn reply_error(
        &mut self,
        answer: Answer,
        id: &[u8],
        code: ErrorCode,
        data: Option<&'static str>,
    ) -> Option<()> {
        match answer {
            Answer::Frame if !self.try_error(id, code, data) => return self.block(),
            Answer::Frame | Answer::Done => {}
            Answer::Batch(reserve) => self.batch_error(reserve, id, code, data),
        }
        Some(())
    }

    /// A batch member that gets no reply gives its reservation back.
    fn no_reply(&mut self, answer: Answer) {
        if let Answer::Batch(reserve) = answer {
            self.batch.release(reserve);
        }
    }

    /// Matches a response to a pending request by id.
    fn route_response<'a>(&mut self, resp: Response<'a>) -> Inbound<'a> {
        if let Some(id) = resp.id.as_u64() {
            // The low bits name the slot (see `id_for`).
            let slot = (id & ((1 << Self::SLOT_BITS) - 1)) as usize;
            if let Some(p) = self.pending.get_mut(slot) {
                if p.state == PendingState::Waiting && p.id == id {
                    let token = p.token;
                    *p = Pending::FREE;
                    return Inbound::Response(InboundResponse {
                        token,
                        outcome: resp.outcome,
                    });
                }
            }
        }
        bump(&mut self.stats.unknown_responses);
        Inbound::Problem(Problem::UnknownResponse(resp))
    }

    /// The room reserved in a batch reply for a fallback error reply to an element whose text
    /// is `len` bytes long. It depends on the length alone, so that reserving for a whole batch
    /// costs one skim over it, not a parse: an echoed id is part of the element (so no longer
    /// than it) and, in a batch, never longer than `MAX_STORED_ID_LEN` (longer ones are
    /// answered with `null`, see `batch_error`).
    const fn reservation(len: usize) -> usize {
        let id = if len < MAX_STORED_ID_LEN {
            len
        } else {
            MAX_STORED_ID_LEN
        };
        let id = if id < 4 { 4 } else { id };
        WORST_AUTO_REPLY + 1 + id
    }

    fn open_batch<'a>(&mut self, frame: &'a [u8], batch: Batch<'a>) -> Option<Inbound<'a>> {
        if self.batch.open {
            return self.open_busy_batch(frame, batch);
        }
        let mut elements = 0;
        let mut reserved = 0;
        let mut skim = batch.iter();
        while let Some(len) = skim.skim_next() {
            elements += 1;
            if elements > self.config.max_batch_len {
                break;
            }
            reserved += Self::reservation(len);
        }
        let over = elements > self.config.max_batch_len || !BatchReply::<BATCH>::fits(reserved);
        if over || !self.config.batches {
            // Limits exist for what we must answer. The peer's reply to our own batch is an
            // array of responses that needs no answer: it is always taken (one element per
            // call, so the work per call stays bounded). Checked only on this rare path.
            if batch.iter().all(|e| matches!(e, Ok(Message::Response(_)))) {
                reserved = 0;
            } else if !self.config.batches {
                return self.refuse_batch(DATA_NO_BATCHES, Problem::BatchRefused);
            } else {
                let problem = Problem::BatchTooLarge { elements };
                return self.refuse_batch(DATA_BATCH_TOO_LARGE, problem);
            }
        }
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        self.batch.begin(reserved);
        self.next_batch_element(frame, 1)
    }

    /// Refuses a whole batch with one Invalid Request (not an array).
    fn refuse_batch<'a>(
        &mut self,
        data: &'static str,
        problem: Problem<'a>,
    ) -> Option<Inbound<'a>> {
        self.reply_error(
            Answer::Frame,
            b"null",
            ErrorCode::INVALID_REQUEST,
            Some(data),
        )?;
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        bump(&mut self.stats.invalid_messages);
        Some(Inbound::Problem(problem))
    }

    /// A batch that arrives while another is being answered (there is one reply buffer). Its
    /// requests are answered at once, in one array, with Server busy (and its invalid elements
    /// with Invalid Request); its notifications and responses are then delivered as usual. So
    /// responses are never held up behind a batch, and two peers calling each other in batches
    /// cannot deadlock. Waits only for transmit room, which draining outputs provides.
    fn open_busy_batch<'a>(&mut self, frame: &'a [u8], batch: Batch<'a>) -> Option<Inbound<'a>> {
        /// The automatic reply an element gets, if any.
        fn reply<'e>(element: &Element<'e>) -> Option<(&'e [u8], ErrorCode)> {
            match element {
                Ok(Message::Request(req)) => Some((req.id.raw_bytes(), ErrorCode::SERVER_BUSY)),
                Err(inv) if inv.needs_reply() => Some((
                    inv.id.map_or(&b"null"[..], |id| id.raw_bytes()),
                    ErrorCode::INVALID_REQUEST,
                )),
                _ => None,
            }
        }
        let mut busy = 0u64;
        if batch.iter().any(|e| reply(&e).is_some()) {
            let written = self.write_tx_frame(&|s| {
                for (i, (id, code)) in batch.iter().filter_map(|e| reply(&e)).enumerate() {
                    crate::wire::ser::Sink::put(s, if i == 0 { b"[" } else { b"," });
                    encode::auto_error(s, id, code, None);
                }
                crate::wire::ser::Sink::put(s, b"]");
                Ok(())
            });
            match written {
                Ok(()) => {}
                Err(TxError::WouldBlock { .. }) => return self.block(),
                // Larger than the whole transmit buffer: refuse the batch as a whole.
                Err(_) => {
                    let problem = Problem::BatchTooLarge {
                        elements: batch.len(),
                    };
                    return self.refuse_batch(DATA_BATCH_TOO_LARGE, problem);
                }
            }
            busy = batch
                .iter()
                .filter(|e| matches!(e, Ok(Message::Request(_))))
                .count() as u64;
        }
        self.stats.busy_rejections = self.stats.busy_rejections.saturating_add(busy);
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        self.busy_batch = true;
        self.next_batch_element(frame, 1)
    }

    /// Delivers the batch element at `pos` of the held batch frame.
    fn next_batch_element<'a>(&mut self, frame: &'a [u8], pos: usize) -> Option<Inbound<'a>> {
        let mut iter = BatchIter::resume(Batch::from_validated(frame), pos);
        let element = iter.next();
        let last = iter.is_done();
        self.cursor = if last { None } else { Some(iter.position()) };
        let answer = if self.busy_batch {
            Answer::Done
        } else {
            Answer::Batch(Self::reservation(iter.last_len()))
        };
        // A member's reply goes to reserved room (or was written on arrival): never blocked.
        let inbound = match element {
            Some(element) => self.accept_element(element, answer),
            None => None,
        };
        if last {
            if self.busy_batch {
                self.busy_batch = false;
            } else {
                self.batch.reading = false;
                self.try_finish_batch();
            }
        }
        inbound
    }

    /// Writes an automatic error into the batch reply; it always fits its reservation (an id
    /// longer than `MAX_STORED_ID_LEN` is answered with `null`).
    fn batch_error(
        &mut self,
        reserve: usize,
        id: &[u8],
        code: ErrorCode,
        data: Option<&'static str>,
    ) {
        let id = if id.len() <= MAX_STORED_ID_LEN {
            id
        } else {
            b"null"
        };
        let _ = self.batch.append(reserve, |s| {
            encode::auto_error(s, id, code, data);
            Ok(())
        });
    }

    /// Moves a complete batch reply to the transmit buffer when there is room.
    fn try_finish_batch(&mut self) {
        if !self.batch.complete() {
            return;
        }
        if self.batch.replies() == 0 {
            // All notifications (or responses): nothing at all is sent.
            self.batch.reset();
            return;
        }
        let framing = self.config.framing;
        let reserve = frame_reserve(framing);
        let need = reserve + self.batch.finish().len() + 1;
        if TX - (self.tx_end - self.tx_start) < need {
            return;
        }
        self.compact_tx_for(need);
        let body = self.batch.finish();
        let region = &mut self.tx[self.tx_end..];
        // `need` bytes are free at the end after compaction (checked above).
        let Some(slot) = region.get_mut(reserve..reserve + body.len()) else {
            return;
        };
        slot.copy_from_slice(body);
        if let Ok(n) = finish_frame(framing, region, body.len()) {
            self.tx_end += n;
            bump(&mut self.stats.frames_out);
        }
        self.batch.reset();
    }

    // ---------------------------------------------------------------------------- commands

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
        let slot = self.free_pending().ok_or(SendError::PendingFull)?;
        let id = self.id_for(slot);
        let mut digits = CountingSinkBuf::default();
        digits.put_u64(id);
        self.write_tx_frame(&|s| encode::request(s, digits.as_bytes(), method, params))
            .map_err(send_error)?;
        self.arm(slot, token, id, now, timeout, PendingState::Waiting);
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
            .map_err(send_error)
    }

    /// Starts an outgoing batch; add requests and notifications, then
    /// [`finish`](OutgoingBatch::finish) it. Dropping it unfinished sends nothing.
    pub fn start_batch(
        &mut self,
        now: Instant,
    ) -> Result<OutgoingBatch<'_, TX, BATCH, PENDING, INFLIGHT>, SendError> {
        if self.closed {
            return Err(SendError::Closed);
        }
        // The batch is built in place after the queued frames.
        self.compact_tx_for(TX);
        let body_start = self.tx_end + frame_reserve(self.config.framing);
        if body_start + 3 > TX {
            return Err(SendError::WouldBlock {
                required: frame_reserve(self.config.framing) + 3,
            });
        }
        if let Some(b) = self.tx.get_mut(body_start) {
            *b = b'[';
        }
        Ok(OutgoingBatch {
            conn: self,
            now,
            body_len: 1,
            elements: 0,
        })
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
        let (slot, entry) = self.slot_of(handle)?;
        match entry.state {
            InflightState::Open {
                in_batch: true,
                reserve,
            } => {
                self.batch_error(reserve, entry.id.raw(), code, None);
                self.close_batch_member(slot);
            }
            _ => {
                self.set_inflight(slot, InflightState::Rejected(code));
                self.rejected += 1;
                self.flush_intents();
            }
        }
        Ok(())
    }

    fn answer(
        &mut self,
        handle: RequestHandle,
        body: impl Fn(&mut SliceSink<'_>, &[u8]) -> Result<(), SerializeError>,
    ) -> Result<(), RespondError> {
        let (slot, entry) = self.slot_of(handle)?;
        let id = entry.id;
        match entry.state {
            InflightState::Open {
                in_batch: true,
                reserve,
            } => match self.batch.append(reserve, |s| body(s, id.raw())) {
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
            _ => match self.write_tx_frame(&|s| body(s, id.raw())) {
                Ok(()) => {
                    self.set_inflight(slot, InflightState::Free);
                    Ok(())
                }
                Err(TxError::Serialize(e)) => Err(RespondError::Serialize(e)),
                Err(TxError::WouldBlock { required }) => Err(RespondError::WouldBlock { required }),
                Err(TxError::TooLarge { required }) => {
                    self.set_inflight(slot, InflightState::Rejected(ErrorCode::INTERNAL_ERROR));
                    self.rejected += 1;
                    self.flush_intents();
                    Err(RespondError::TooLarge { required })
                }
            },
        }
    }

    fn close_batch_member(&mut self, slot: usize) {
        self.set_inflight(slot, InflightState::Free);
        self.batch.outstanding = self.batch.outstanding.saturating_sub(1);
        self.try_finish_batch();
    }

    /// Forgets a pending request: a late response is reported as
    /// [`Problem::UnknownResponse`]. `Ok` hands the token back (it will not come back again).
    /// To tell the peer, send the profile's cancel notification (`notifications/cancelled`,
    /// `$/cancelRequest`) yourself.
    pub fn cancel(&mut self, token: Token) -> Result<(), CancelError> {
        let p = self
            .pending
            .iter_mut()
            .find(|p| p.state == PendingState::Waiting && p.token == token)
            .ok_or(CancelError::NotPending)?;
        *p = Pending::FREE;
        Ok(())
    }

    /// The peer will send nothing more (its write side closed) but may still read: every
    /// pending request fails with [`Failure::Closed`] (reported by
    /// [`poll_event`](Connection::poll_event)), while inbound requests stay open so that their
    /// answers can still be sent. New requests can still be sent (they will time out or fail
    /// at [`close`](Connection::close)).
    pub fn fail_pending(&mut self) {
        for p in self.pending.iter_mut() {
            if p.state == PendingState::Waiting {
                p.state = PendingState::Failed(Failure::Closed);
                self.failed += 1;
            }
        }
        self.earliest = Instant::MAX;
    }

    /// Closes the connection: every pending request fails with [`Failure::Closed`] (reported
    /// by [`poll_event`](Connection::poll_event)), open inbound requests are dropped, new
    /// commands fail with `Closed`. Output already queued can still be drained.
    pub fn close(&mut self) {
        if self.closed {
            return;
        }
        self.closed = true;
        for p in self.pending.iter_mut() {
            if matches!(p.state, PendingState::Waiting | PendingState::Staged) {
                p.state = PendingState::Failed(Failure::Closed);
                self.failed += 1;
            }
        }
        for s in self.inflight.iter_mut() {
            s.state = InflightState::Free;
        }
        self.rejected = 0;
        self.batch.reset();
        self.cursor = None;
        self.busy_batch = false;
        self.retry_held = false;
        self.earliest = Instant::MAX;
    }

    // ----------------------------------------------------------------------------- outputs

    /// The next thing to do: an event, bytes to transmit, or the next deadline. Call it after
    /// every input or command until it returns [`Output::Timeout`] or [`Output::Idle`]; after
    /// writing `Transmit` bytes call [`advance_transmit`](Connection::advance_transmit).
    pub fn poll_output(&mut self) -> Output<'_> {
        if let Some(e) = self.poll_event() {
            return Output::Event(e);
        }
        if !self.poll_transmit().is_empty() {
            return Output::Transmit(&self.tx[self.tx_start..self.tx_end]);
        }
        match self.poll_timeout() {
            Some(t) => Output::Timeout(t),
            None => Output::Idle,
        }
    }

    /// The next event, if any.
    pub fn poll_event(&mut self) -> Option<Event> {
        if self.failed == 0 {
            return None;
        }
        let p = self
            .pending
            .iter_mut()
            .find(|p| matches!(p.state, PendingState::Failed(_)))?;
        let PendingState::Failed(reason) = p.state else {
            return None;
        };
        let token = p.token;
        *p = Pending::FREE;
        self.failed -= 1;
        Some(Event::RequestFailed { token, reason })
    }

    /// All bytes waiting to be written (several frames at once, so a driver writes them with
    /// one call). Report progress with [`advance_transmit`](Connection::advance_transmit).
    pub fn poll_transmit(&mut self) -> &[u8] {
        self.flush_intents();
        &self.tx[self.tx_start..self.tx_end]
    }

    /// Marks `n` bytes of [`poll_transmit`](Connection::poll_transmit) as written.
    pub fn advance_transmit(&mut self, n: usize) {
        self.tx_start = (self.tx_start + n).min(self.tx_end);
        if self.tx_start == self.tx_end {
            self.tx_start = 0;
            self.tx_end = 0;
        }
    }

    /// The earliest deadline of a pending request, if any.
    pub fn poll_timeout(&self) -> Option<Instant> {
        self.pending
            .iter()
            .filter(|p| p.state == PendingState::Waiting)
            .map(|p| p.deadline)
            .min()
            .filter(|d| *d != Instant::MAX)
    }

    // ------------------------------------------------------------------------------ helpers

    /// Writes replies that waited for transmit room.
    fn flush_intents(&mut self) {
        if let Some((code, data)) = self.deferred {
            if !self.try_error(b"null", code, data) {
                return;
            }
            self.deferred = None;
        }
        if self.rejected > 0 {
            for slot in 0..INFLIGHT {
                let Some(&Inflight {
                    state: InflightState::Rejected(code),
                    id,
                    ..
                }) = self.inflight.get(slot)
                else {
                    continue;
                };
                if !self.try_error(id.raw(), code, None) {
                    return;
                }
                self.set_inflight(slot, InflightState::Free);
                self.rejected -= 1;
            }
        }
        if self.batch.complete() {
            self.try_finish_batch();
        }
    }

    fn block<T>(&mut self) -> Option<T> {
        self.retry_held = true;
        None
    }

    /// Writes an automatic error reply (standard message, data string) as a frame of its own;
    /// false when the transmit buffer has no room yet. An id so long that the reply could never
    /// fit the buffer is answered with `null`.
    fn try_error(&mut self, id: &[u8], code: ErrorCode, data: Option<&'static str>) -> bool {
        let mut id = id;
        loop {
            let written = self.write_tx_frame(&|s| {
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

    /// Moves queued bytes to the front when fewer than `need` bytes are free at the end.
    fn compact_tx_for(&mut self, need: usize) {
        if self.tx_start > 0 && TX - self.tx_end < need {
            self.tx.copy_within(self.tx_start..self.tx_end, 0);
            self.tx_end -= self.tx_start;
            self.tx_start = 0;
        }
    }

    /// Encodes one frame at the end of the transmit buffer.
    ///
    /// `body` is a trait object so that this writer is compiled once, not once per caller (it
    /// matters in firmware flash; the indirect call costs nothing next to the encoding).
    fn write_tx_frame(
        &mut self,
        body: &dyn Fn(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<(), TxError> {
        let framing = self.config.framing;
        let reserve = frame_reserve(framing);
        let attempt = |conn: &mut Self| -> Result<Result<(), usize>, SerializeError> {
            let region = &mut conn.tx[conn.tx_end..];
            let body_len = {
                let mut sink = SliceSink::new(region.get_mut(reserve..).unwrap_or(&mut []));
                body(&mut sink)?;
                if !sink.fits() {
                    return Ok(Err(reserve + sink.len() + 1));
                }
                sink.len()
            };
            match finish_frame(framing, region, body_len) {
                Ok(n) => {
                    conn.tx_end += n;
                    bump(&mut conn.stats.frames_out);
                    Ok(Ok(()))
                }
                Err(_) => Ok(Err(reserve + body_len + 1)),
            }
        };
        let required = match attempt(self).map_err(TxError::Serialize)? {
            Ok(()) => return Ok(()),
            Err(required) => required,
        };
        if required > TX {
            return Err(TxError::TooLarge { required });
        }
        if self.tx_start > 0 && TX - (self.tx_end - self.tx_start) >= required {
            self.compact_tx_for(TX);
            if let Ok(Ok(())) = attempt(self) {
                return Ok(());
            }
        }
        Err(TxError::WouldBlock { required })
    }

    fn is_inflight(&self, id: Id<'_>) -> bool {
        self.inflight
            .iter()
            .any(|s| matches!(s.state, InflightState::Open { .. }) && s.id.matches(id))
    }

    fn free_inflight(&self) -> Option<usize> {
        self.inflight
            .iter()
            .position(|s| s.state == InflightState::Free)
    }

    /// Takes the free slot `slot` (an index `free_inflight` returned).
    fn open_inflight(&mut self, slot: usize, id: StoredId, answer: Answer) -> RequestHandle {
        let (in_batch, reserve) = match answer {
            Answer::Batch(reserve) => {
                self.batch.outstanding += 1;
                (true, reserve)
            }
            Answer::Frame | Answer::Done => (false, 0),
        };
        let mut generation = 0;
        if let Some(entry) = self.inflight.get_mut(slot) {
            entry.generation = entry.generation.wrapping_add(1);
            entry.state = InflightState::Open { in_batch, reserve };
            entry.id = id;
            generation = entry.generation;
        }
        RequestHandle {
            // INFLIGHT <= 65536 is checked at compile time.
            slot: slot as u16,
            generation,
        }
    }

    fn set_inflight(&mut self, slot: usize, state: InflightState) {
        if let Some(entry) = self.inflight.get_mut(slot) {
            entry.state = state;
        }
    }

    /// The open request a handle names, with its slot index.
    fn slot_of(&self, handle: RequestHandle) -> Result<(usize, Inflight), RespondError> {
        let slot = usize::from(handle.slot);
        match self.inflight.get(slot) {
            Some(e)
                if e.generation == handle.generation
                    && matches!(e.state, InflightState::Open { .. }) =>
            {
                Ok((slot, *e))
            }
            _ => Err(RespondError::UnknownHandle),
        }
    }

    fn free_pending(&self) -> Option<usize> {
        self.pending
            .iter()
            .position(|p| p.state == PendingState::Free)
    }

    /// Bits of an outgoing id that name the pending slot.
    const SLOT_BITS: u32 = PENDING.next_power_of_two().trailing_zeros();

    /// Ids are `seq << SLOT_BITS | slot`, so a response finds its slot without a search or a
    /// division (firmware has no 64-bit divider), and a stale id (a reused slot) never
    /// matches. Ids stay below 2^53, exact in any JSON peer's doubles.
    fn id_for(&mut self, slot: usize) -> u64 {
        let seq = self.next_seq;
        self.next_seq = (self.next_seq + 1) & ((1 << (53 - Self::SLOT_BITS)) - 1);
        (seq << Self::SLOT_BITS) | slot as u64
    }

    fn arm(
        &mut self,
        slot: usize,
        token: Token,
        id: u64,
        now: Instant,
        timeout: Option<Duration>,
        state: PendingState,
    ) {
        let deadline = timeout
            .or(self.config.request_timeout)
            .map_or(Instant::MAX, |t| now + t);
        if let Some(p) = self.pending.get_mut(slot) {
            *p = Pending {
                state,
                token,
                id,
                deadline,
            };
        }
        if state == PendingState::Waiting {
            self.earliest = self.earliest.min(deadline);
        }
    }
}

/// Failure to encode into the transmit buffer.
enum TxError {
    WouldBlock { required: usize },
    TooLarge { required: usize },
    Serialize(SerializeError),
}

fn send_error(e: TxError) -> SendError {
    match e {
        TxError::WouldBlock { required } => SendError::WouldBlock { required },
        TxError::TooLarge { required } => SendError::TooLarge { required },
        TxError::Serialize(e) => SendError::Serialize(e),
    }
}

/// Length of an automatic error reply (standard message, optional data string without escapes)
/// for an id of `id_len` bytes.
const fn auto_len(id_len: usize, code: ErrorCode, data: Option<&str>) -> usize {
    let fixed = r#"{"jsonrpc":"2.0","error":{"code":,"message":""},"id":}"#.len();
    let mut digits = if code.0 < 0 { 2 } else { 1 };
    let mut v = code.0.unsigned_abs() / 10;
    while v > 0 {
        digits += 1;
        v /= 10;
    }
    let data_len = match data {
        Some(d) => r#","data":"""#.len() + d.len(),
        None => 0,
    };
    fixed + digits + code.message().len() + data_len + id_len
}

/// The longest reply the connection may write on its own for a batch request, less its id.
const WORST_AUTO_REPLY: usize = {
    let candidates = [
        auto_len(0, ErrorCode::INTERNAL_ERROR, None),
        auto_len(0, ErrorCode::SERVER_BUSY, None),
        auto_len(0, ErrorCode::INVALID_REQUEST, Some(DATA_DUPLICATE_ID)),
        auto_len(0, ErrorCode::INVALID_REQUEST, Some(DATA_ID_TOO_LONG)),
    ];
    let mut worst = 0;
    let mut rest: &[usize] = &candidates;
    while let [first, tail @ ..] = rest {
        if *first > worst {
            worst = *first;
        }
        rest = tail;
    }
    worst
};

/// Decimal digits of a `u64`, on the stack.
#[derive(Default)]
struct CountingSinkBuf {
    buf: [u8; 20],
    len: usize,
}

impl CountingSinkBuf {
    fn put_u64(&mut self, v: u64) {
        let mut sink = SliceSink::new(&mut self.buf);
        crate::wire::framing::put_u64(&mut sink, v);
        self.len = sink.len();
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

/// An outgoing batch under construction, written in place in the transmit buffer.
pub struct OutgoingBatch<
    'c,
    const TX: usize,
    const BATCH: usize,
    const PENDING: usize,
    const INFLIGHT: usize,
> {
    conn: &'c mut Connection<TX, BATCH, PENDING, INFLIGHT>,
    now: Instant,
    body_len: usize,
    elements: usize,
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize>
    OutgoingBatch<'_, TX, BATCH, PENDING, INFLIGHT>
{
    fn append(
        &mut self,
        body: impl FnOnce(&mut SliceSink<'_>) -> Result<(), SerializeError>,
    ) -> Result<(), SendError> {
        let conn = &mut *self.conn;
        let body_start = conn.tx_end + frame_reserve(conn.config.framing);
        let at = body_start + self.body_len;
        // Keep room for `]` and the line delimiter.
        let limit = TX.saturating_sub(2);
        let region = conn.tx.get_mut(at..limit).unwrap_or(&mut []);
        let mut sink = SliceSink::new(region);
        if self.elements > 0 {
            crate::wire::ser::Sink::put(&mut sink, b",");
        }
        body(&mut sink).map_err(SendError::Serialize)?;
        if !sink.fits() {
            let required = frame_reserve(conn.config.framing) + self.body_len + sink.len() + 2;
            return Err(if required > TX {
                SendError::TooLarge { required }
            } else {
                SendError::WouldBlock { required }
            });
        }
        self.body_len += sink.len();
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
        let slot = self.conn.free_pending().ok_or(SendError::PendingFull)?;
        let seq = self.conn.next_seq;
        let id = self.conn.id_for(slot);
        let mut digits = CountingSinkBuf::default();
        digits.put_u64(id);
        if let Err(e) = self.append(|s| encode::request(s, digits.as_bytes(), method, params)) {
            self.conn.next_seq = seq;
            return Err(e);
        }
        let now = self.now;
        self.conn
            .arm(slot, token, id, now, timeout, PendingState::Staged);
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
        let body_start = conn.tx_end + frame_reserve(framing);
        // `append` keeps room for `]` and the delimiter below `TX - 2`.
        if let Some(b) = conn.tx.get_mut(body_start + self.body_len) {
            *b = b']';
        }
        let region = &mut conn.tx[conn.tx_end..];
        if let Ok(n) = finish_frame(framing, region, self.body_len + 1) {
            conn.tx_end += n;
            bump(&mut conn.stats.frames_out);
            for p in conn.pending.iter_mut() {
                if p.state == PendingState::Staged {
                    p.state = PendingState::Waiting;
                    conn.earliest = conn.earliest.min(p.deadline);
                }
            }
        }
        self.elements = 0;
    }
}

impl<const TX: usize, const BATCH: usize, const PENDING: usize, const INFLIGHT: usize> Drop
    for OutgoingBatch<'_, TX, BATCH, PENDING, INFLIGHT>
{
    fn drop(&mut self) {
        // Unfinished: nothing was sent, so the staged requests are released.
        for p in self.conn.pending.iter_mut() {
            if p.state == PendingState::Staged {
                *p = Pending::FREE;
            }
        }
    }
}
