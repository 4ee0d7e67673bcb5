//! Input: frames from the receive buffer, messages validated and delivered one at a time,
//! automatic replies to peer garbage, inbound batches, responses matched to our requests.

use super::connection::Connection;
use super::stats::{bump, high_water};
use super::transmit::TxError;
use super::types::{DuplicateIdPolicy, Inbound, InboundRequest, InboundResponse, Input, Problem};
use crate::code::ErrorCode;
use crate::slots::Slots;
use crate::storage::Storage;
use crate::time::Instant;
use crate::wire::scan::ScanError;
use crate::wire::{
    encode, parse_recording, parse_single, parse_single_read, read_canonical, scan, Batch,
    BatchIter, Element, FrameEvent, Message, ParseLimits, Parsed, Response, RxBuffer,
    MAX_STORED_ID_LEN,
};

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

impl<S: Storage> Connection<S> {
    /// Feeds received bytes and gives back the next inbound item, borrowing the receive
    /// buffer, or why there is none.
    ///
    /// Call it in a loop: each call consumes as much of `input` as it needs (copying into
    /// `rx`) and returns [`Input::Item`] with one request, notification, response, or problem.
    /// Then:
    /// - [`Input::NeedMore`]: everything received is handled (`input` is empty);
    /// - [`Input::Blocked`]: a reply waits for transmit room; write out
    ///   [`poll_transmit`](Connection::poll_transmit) and call again: the bytes not yet taken
    ///   stay in `input`;
    /// - [`Input::Closed`]: the connection is closed and `input` was discarded.
    ///
    /// Answers to peer garbage are queued automatically.
    pub fn handle_input<'a, B: Slots<u8>>(
        &mut self,
        now: Instant,
        rx: &'a mut RxBuffer<B>,
        input: &mut &[u8],
    ) -> Input<'a> {
        if self.closed {
            *input = &[];
            return Input::Closed;
        }
        // A heap peek, or a scan of a few slots: cheap enough for every call.
        self.handle_timeout(now);
        self.flush_intents();
        let item = if self.deferred.is_some() {
            None
        } else {
            self.next_inbound(rx, input)
        };
        match item {
            Some(item) => Input::Item(item),
            None if self.is_input_blocked() => Input::Blocked,
            None => Input::NeedMore,
        }
    }

    /// [`handle_input`](Connection::handle_input) without the copy: a whole line at the front
    /// of `input` while nothing is buffered is parsed where it is, so the item may borrow
    /// `input` as well as `rx`. Everything else (content-length framing, a partial line, a
    /// batch, a blank line, the rest of a frame under way) goes through `rx` as `handle_input`
    /// takes it: the same bytes give the same items in the same order, whichever of the two
    /// is called, and the two may be mixed on one connection.
    ///
    /// For a caller that holds received bytes in a buffer of its own (a read buffer, a
    /// datagram, a test's input): one copy per message less.
    ///
    /// ```
    /// use rpcwire::{Connection, Inbound, Input, Instant};
    /// use rpcwire::wire::RxBuffer;
    /// let mut conn: Connection = Connection::default();
    /// let mut rx: RxBuffer<[u8; 256]> = conn.rx_buffer();
    /// let bytes = b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":7}\n";
    /// let mut input = &bytes[..];
    /// let Input::Item(Inbound::Request(req)) =
    ///     conn.handle_input_borrowed(Instant::ZERO, &mut rx, &mut input)
    /// else { panic!() };
    /// assert_eq!(req.id.raw(), "7");
    /// assert!(input.is_empty());
    /// assert_eq!(rx.buffered(), 0); // nothing was copied
    /// ```
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub fn handle_input_borrowed<'a, 'i: 'a, B: Slots<u8>>(
        &mut self,
        now: Instant,
        rx: &'a mut RxBuffer<B>,
        input: &mut &'i [u8],
    ) -> Input<'a> {
        if scan::WORD_AT_A_TIME
            && input.is_empty()
            && self.is_idle()
            && rx.is_drained()
            && !self.pending.may_expire()
            && self.nothing_to_flush()
        {
            // Everything received is handled (the call after the last item of a read), and no
            // request of ours can time out: what `handle_input` does then, inlined at the
            // caller without a call. `advance` only resets the empty buffer's marks, as it
            // would there. Hosts only (flash).
            rx.advance();
            return Input::NeedMore;
        }
        self.handle_input_in_place(now, rx, input)
    }

    /// True when no frame is held or under way and nothing waits: the state in which a line
    /// may be taken where it is.
    #[inline]
    fn is_idle(&self) -> bool {
        !self.closed && self.deferred.is_none() && self.cursor.is_none() && !self.retry_held
    }

    /// [`handle_input_borrowed`](Self::handle_input_borrowed) past its inline check.
    fn handle_input_in_place<'a, 'i: 'a, B: Slots<u8>>(
        &mut self,
        now: Instant,
        rx: &'a mut RxBuffer<B>,
        input: &mut &'i [u8],
    ) -> Input<'a> {
        let idle = self.is_idle();
        if scan::WORD_AT_A_TIME && idle && input.is_empty() && rx.is_drained() {
            // Everything received is handled (the call after the last item of a read): what
            // `handle_input` does then, without its call. `advance` only resets the empty
            // buffer's marks, as it would there. Hosts only (flash).
            self.handle_timeout(now);
            self.flush_intents();
            if !rx.advance() {
                return if self.is_input_blocked() {
                    Input::Blocked
                } else {
                    Input::NeedMore
                };
            }
        }
        // Hosts: the canonical reader reads the object at the front first; when the line ends
        // right after it, that is the frame, found without a search for its newline.
        let read = if scan::WORD_AT_A_TIME && idle && rx.takes_in_place(input) {
            read_canonical(input, self.limits())
        } else {
            None
        };
        let line = read.and_then(|(_, end)| rx.split_line_at(input, end));
        if let Some((frame, rest)) = line.or_else(|| rx.split_line(input)).filter(|_| idle) {
            self.handle_timeout(now);
            self.flush_intents();
            let item = if scan::WORD_AT_A_TIME {
                self.take_single(parse_single_read(frame, read, self.limits()))
            } else {
                self.process_frame(frame)
            };
            if let Some(item) = item {
                *input = rest;
                return Input::Item(item);
            }
            // Its reply found no transmit room: the frame is held in `rx` for the retry, as
            // `handle_input` would have left it.
            let mut line = input.get(..input.len() - rest.len()).unwrap_or_default();
            while !line.is_empty() && rx.push(&mut line) > 0 {}
            if rx.advance() {
                *input = rest;
                return Input::Blocked;
            }
            // Never: the line decodes as it was split. Taken again the usual way.
            self.retry_held = false;
        }
        self.handle_input(now, rx, input)
    }

    fn next_inbound<'a, B: Slots<u8>>(
        &mut self,
        rx: &'a mut RxBuffer<B>,
        input: &mut &[u8],
    ) -> Option<Inbound<'a>> {
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

    fn limits(&self) -> ParseLimits {
        ParseLimits {
            max_depth: self.config.max_depth,
        }
    }

    /// Takes a frame that is one object, parsed (hosts).
    #[cfg_attr(target_pointer_width = "64", inline(always))]
    fn take_single<'a>(&mut self, parsed: Result<Element<'a>, ScanError>) -> Option<Inbound<'a>> {
        let inbound = match parsed {
            Ok(element) => self.accept_element(element, Answer::Frame)?,
            Err(e) => self.parse_error(e)?,
        };
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        Some(inbound)
    }

    fn process_frame<'a>(&mut self, frame: &'a [u8]) -> Option<Inbound<'a>> {
        let limits = self.limits();
        // Hosts: a frame that is one object (the usual one) is parsed and taken straight.
        if scan::WORD_AT_A_TIME && frame.first() == Some(&b'{') {
            return self.take_single(parse_single(frame, 0, limits));
        }
        let inbound = match parse_recording(frame, limits, self.memo.slots()) {
            Err(e) => self.parse_error(e)?,
            Ok((Parsed::EmptyBatch, _)) => {
                self.reply_error(Answer::Frame, b"null", ErrorCode::INVALID_REQUEST, None)?;
                bump(&mut self.stats.invalid_messages);
                Inbound::Problem(Problem::EmptyBatch)
            }
            Ok((Parsed::Single(element), _)) => self.accept_element(element, Answer::Frame)?,
            #[cfg_attr(not(target_pointer_width = "64"), allow(unused_variables))]
            Ok((Parsed::Batch(batch), recorded)) => {
                #[cfg(target_pointer_width = "64")]
                self.memo
                    .recorded(frame.len(), recorded.slots, recorded.base);
                return self.open_batch(frame, batch);
            }
        };
        self.retry_held = false;
        bump(&mut self.stats.frames_in);
        Some(inbound)
    }

    /// A frame that is not JSON: answered with a parse error.
    fn parse_error<'a>(&mut self, e: ScanError) -> Option<Inbound<'a>> {
        self.reply_error(Answer::Frame, b"null", ErrorCode::PARSE_ERROR, None)?;
        bump(&mut self.stats.parse_errors);
        Some(Inbound::Problem(Problem::ParseError(e)))
    }

    /// Takes one message: a single one, or a member of a batch. `answer` says where its
    /// automatic reply goes, if it gets one. `None` when a single message's reply finds no
    /// transmit room: the held frame is taken again once outputs are drained (counters are
    /// bumped only when a message is taken, so a retry counts once).
    #[cfg_attr(target_pointer_width = "64", inline(always))]
    fn accept_element<'a>(&mut self, element: Element<'a>, answer: Answer) -> Option<Inbound<'a>> {
        let req = match element {
            Ok(Message::Request(req)) => {
                bump(&mut self.stats.requests_in);
                req
            }
            Ok(Message::Notification(n)) => {
                bump(&mut self.stats.notifications_in);
                self.no_reply(answer);
                return Some(Inbound::Notification(n));
            }
            Ok(Message::Response(resp)) => {
                bump(&mut self.stats.responses_in);
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
        let duplicate = self.inflight.contains(req.id);
        let (code, data, problem) =
            if duplicate && self.config.duplicate_ids == DuplicateIdPolicy::Reject {
                let data = Some(DATA_DUPLICATE_ID);
                (
                    ErrorCode::INVALID_REQUEST,
                    data,
                    Problem::DuplicateId(req.id),
                )
            } else if req.id.raw_bytes().len() <= MAX_STORED_ID_LEN {
                if let Some(slot) = self.inflight.alloc() {
                    // Counted once opened below, with this one.
                    high_water(&mut self.stats.inflight_high_water, self.inflight.len() + 1);
                    if duplicate {
                        bump(&mut self.stats.duplicate_ids);
                    }
                    let (in_batch, reserve) = match answer {
                        Answer::Batch(reserve) => {
                            self.batch.outstanding += 1;
                            (true, reserve)
                        }
                        Answer::Frame | Answer::Done => (false, 0),
                    };
                    return Some(Inbound::Request(InboundRequest {
                        handle: self
                            .inflight
                            .open(slot, req.id.raw_bytes(), in_batch, reserve),
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

    fn block<T>(&mut self) -> Option<T> {
        self.retry_held = true;
        None
    }

    /// A batch member that gets no reply gives its reservation back.
    fn no_reply(&mut self, answer: Answer) {
        if let Answer::Batch(reserve) = answer {
            self.batch.release(reserve);
        }
    }

    /// Matches a response to a pending request by id. An error with id `null` (the peer could
    /// not read one of our messages: Parse error, Invalid Request, a frame over its limit) is
    /// the answer to our request when that request is the only message it can be about: the
    /// only one waiting, with no notification or batch sent since the peer last showed it read
    /// everything before; otherwise it is reported as [`Problem::PeerError`].
    fn route_response<'a>(&mut self, resp: Response<'a>) -> Inbound<'a> {
        if let Some((id, token)) = resp
            .id
            .as_u64()
            .and_then(|id| Some((id, self.pending.take_response(id)?)))
        {
            if self
                .unconfirmed
                .is_some_and(|since| self.pending.seq_of(id) >= since)
            {
                // The peer answered a request sent after our last notification or batch: it
                // read past them.
                self.unconfirmed = None;
            }
            return Inbound::Response(InboundResponse {
                token,
                outcome: resp.outcome,
            });
        }
        if let (true, Err(error)) = (resp.id.is_null(), resp.outcome) {
            bump(&mut self.stats.peer_errors);
            let sole = match self.unconfirmed {
                None => self.pending.take_sole_waiting(),
                Some(_) => None,
            };
            if let Some(token) = sole {
                return Inbound::Response(InboundResponse {
                    token,
                    outcome: resp.outcome,
                });
            }
            return Inbound::Problem(Problem::PeerError(error));
        }
        bump(&mut self.stats.unknown_responses);
        Inbound::Problem(Problem::UnknownResponse(resp))
    }

    /// The room reserved in a batch reply for a fallback error reply to an element whose text
    /// is `len` bytes long. It depends on the length alone, so that the walk that validates a
    /// batch measures it for all elements (`BatchSizes`), with no parse: an echoed id is part of
    /// the element (so no longer than it) and, in a batch, never longer than `MAX_STORED_ID_LEN`
    /// (longer ones are answered with `null`, see `batch_error`).
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
        // Measured while the batch was validated; elements are reported up to one past the
        // limit. The sum is `reservation` of each element's length.
        let sizes = batch.sizes();
        let elements = sizes
            .elements
            .min(self.config.max_batch_len.saturating_add(1));
        let mut reserved = sizes
            .id_room
            .saturating_add(sizes.elements.saturating_mul(WORST_AUTO_REPLY + 1));
        let over = elements > self.config.max_batch_len || !self.batch.fits(reserved);
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
        bump(&mut self.stats.batches_in);
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
        bump(&mut self.stats.batches_in);
        bump(&mut self.stats.batch_rejections);
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
            let written = self.write_auto_frame(&|s| {
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
        bump(&mut self.stats.batches_in);
        self.busy_batch = true;
        self.next_batch_element(frame, 1)
    }

    /// Delivers the batch element at `pos` of the held batch frame.
    fn next_batch_element<'a>(&mut self, frame: &'a [u8], pos: usize) -> Option<Inbound<'a>> {
        // As the validating walk recorded it, else walked again.
        let (element, len, next) = match self.memo.take(frame, pos) {
            Some((element, len, next)) => (Some(element), len, next),
            None => {
                let mut iter = BatchIter::resume(Batch::from_validated(frame), pos);
                let element = iter.next();
                let next = (!iter.is_done()).then_some(iter.position());
                (element, iter.last_len(), next)
            }
        };
        let last = next.is_none();
        self.cursor = next;
        let answer = if self.busy_batch {
            Answer::Done
        } else {
            Answer::Batch(Self::reservation(len))
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
    pub(super) fn batch_error(
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

    /// Moves a complete batch reply to the transmit queue when there is room.
    pub(super) fn try_finish_batch(&mut self) {
        if !self.batch.complete() {
            return;
        }
        if self.batch.replies() == 0 {
            // All notifications (or responses): nothing at all is sent.
            self.batch.reset();
            return;
        }
        let body = self.batch.finish();
        let written = self.tx.write_frame(self.config.framing, usize::MAX, &|s| {
            crate::wire::ser::Sink::put(s, body);
            Ok(())
        });
        if written.is_ok() {
            bump(&mut self.stats.frames_out);
            self.batch.reset();
        }
    }
}
