//! A reference model of one [`Connection`] driven by a sequence of operations: our commands
//! (requests, notifications, batches, cancels, answers, partial transmits, time, close) and
//! the peer's traffic (responses to our requests, requests, raw bytes, in chunks).
//!
//! Shared by `model_connection.rs` (proptest, in CI) and the `connection_ops` fuzz target
//! (which includes this file with `#[path]`; under `cfg(fuzzing)` the operations derive
//! `arbitrary::Arbitrary`). [`Model::apply`] runs one operation against the connection and
//! the model and returns `Err` with a description when they disagree.
//!
//! What the model checks after every operation:
//! - every token a send accepted ends exactly once (response, timeout, cancel `Ok`, close),
//!   never before its deadline and never after it once `handle_timeout` ran;
//! - `pending_len()` equals the model's outstanding tokens; `inflight_len()` covers the open
//!   inbound requests and never exceeds `INFLIGHT`; Busy only when the table is full;
//! - a response to one of our outstanding requests is always routed to its token; any other
//!   response is an unknown response;
//! - `cancel`, `respond` on stale handles, `PendingFull` and commands after `close` agree
//!   with the model;
//! - every byte the connection transmits parses as valid JSON-RPC; a response it emits
//!   echoes the id of a request the peer sent (or is `null`); notifications and responses
//!   from the peer are never answered.

#![allow(dead_code)]

use rpcwire::storage::Inline;
use rpcwire::Input;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use rpcwire::wire::{parse, FrameEvent, Framing, Message, ParseLimits, Parsed, RxBuffer};
use rpcwire::{
    CancelError, Config, Connection, DuplicateIdPolicy, ErrorCode, Event, Failure, Inbound,
    Instant, Problem, RequestHandle, RespondError, SendError, Token,
};

/// Small capacities so that every limit is reached.
pub const TX: usize = 512;
/// Batch reply bytes.
pub const BATCH: usize = 256;
/// Outgoing requests.
pub const PENDING: usize = 4;
/// Inbound requests.
pub const INFLIGHT: usize = 3;
/// The connection under test.
pub type Conn = Connection<Inline<TX, BATCH, PENDING, INFLIGHT>>;

/// One step.
#[cfg_attr(fuzzing, derive(arbitrary::Arbitrary))]
#[derive(Debug, Clone)]
pub enum Op {
    /// `send_request` with a payload of `pad` bytes and a timeout (`None`: the default).
    Request { pad: u8, timeout_ms: Option<u16> },
    /// `send_notification`.
    Notify { pad: u8 },
    /// An outgoing batch (`true`: a request, `false`: a notification), finished or dropped.
    Batch { elements: Vec<bool>, finish: bool },
    /// `cancel` of the `pick`-th token ever issued.
    Cancel { pick: u8 },
    /// The peer answers the `pick`-th request it has seen from us (or a made-up id).
    PeerResponse {
        pick: u8,
        error: bool,
        bogus: bool,
        chunk: u8,
    },
    /// The peer sends `count` requests or notifications (a batch when `count > 1`); `id`
    /// picks the id kind (number, string, null, or a repeat of an earlier one).
    PeerRequest {
        id: u8,
        notification: bool,
        count: u8,
        chunk: u8,
    },
    /// Garbage from the peer, framed (a line, or a body with a correct `Content-Length`).
    PeerBytes { bytes: Vec<u8>, chunk: u8 },
    /// Raw bytes from the peer, not framed: the stream may be desynchronised afterwards, so
    /// the model stops predicting how later responses are routed.
    PeerRaw { bytes: Vec<u8>, chunk: u8 },
    /// Answer the `pick`-th open inbound request (`how`: respond, respond_error, reject) or,
    /// when none is open, a stale handle.
    Answer { pick: u8, how: u8 },
    /// Advance the clock and call `handle_timeout`.
    Advance { ms: u16 },
    /// Write out up to `max` bytes of queued output (0: all of it).
    Transmit { max: u16 },
    /// `close`.
    Close,
}

/// An open inbound request.
#[derive(Debug, Clone)]
struct Open {
    handle: RequestHandle,
    id: String,
}

/// The connection and its model.
pub struct Model {
    conn: Conn,
    rx: RxBuffer<[u8; 1024]>,
    tap: RxBuffer<[u8; 2048]>,
    now: Instant,
    next_token: u64,
    /// Token -> deadline.
    outstanding: BTreeMap<u64, Instant>,
    ended: BTreeSet<u64>,
    issued: Vec<u64>,
    /// Request ids we transmitted, with their tokens.
    our_ids: Vec<(String, u64)>,
    open: Vec<Open>,
    stale: Vec<RequestHandle>,
    /// Ids of requests the peer sent (any of our responses must echo one).
    peer_ids: BTreeSet<String>,
    next_peer_id: u64,
    closed: bool,
    /// The peer's frame being fed is a batch (Server busy may come with room in flight).
    batch_busy_ok: bool,
    /// Raw bytes may have desynchronised the framing, or the depth limit is so low that the
    /// peer's crafted frames are rejected: routing of later responses is not predicted.
    desynced: bool,
    /// Counters for the caller's statistics.
    pub counts: Counts,
}

/// What a run exercised.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub responses: u64,
    pub timeouts: u64,
    pub cancels: u64,
    pub closed: u64,
    pub inbound_requests: u64,
    pub busy: u64,
    pub unknown: u64,
    pub would_block: u64,
    pub problems: u64,
}

fn chunk_len(chunk: u8) -> usize {
    usize::from(chunk % 64) + 1
}

impl Model {
    /// A fresh connection with `config` (its capacities are this module's constants).
    pub fn new(config: Config) -> Self {
        // The model's capacities are the arrays' sizes: the configured limits that would cap
        // them lower (arbitrary ones can be 0) are tested on their own in `limits.rs`.
        let config = Config {
            max_frame: usize::MAX,
            max_pending: usize::MAX,
            max_inflight: usize::MAX,
            ..config
        };
        let conn = Conn::new(config);
        Model {
            // The whole array for frames.
            rx: RxBuffer::new(config.framing),
            tap: RxBuffer::new(config.framing),
            conn,
            now: Instant::ZERO,
            next_token: 1,
            outstanding: BTreeMap::new(),
            ended: BTreeSet::new(),
            issued: Vec::new(),
            our_ids: Vec::new(),
            open: Vec::new(),
            stale: Vec::new(),
            peer_ids: BTreeSet::new(),
            next_peer_id: 1,
            closed: false,
            // The peer's responses nest 2 deep, its batches of requests 4.
            desynced: config.max_depth < 4,
            batch_busy_ok: false,
            counts: Counts::default(),
        }
    }

    fn framing(&self) -> Framing {
        self.conn.config().framing
    }

    fn deadline(&self, timeout: Option<Duration>) -> Instant {
        match timeout.or(self.conn.config().request_timeout) {
            Some(t) => self.now + t,
            None => Instant::MAX,
        }
    }

    fn end(&mut self, token: u64, how: &str) -> Result<(), String> {
        if self.outstanding.remove(&token).is_none() {
            return Err(format!(
                "token {token} ended ({how}) but was not outstanding (ended before: {})",
                self.ended.contains(&token)
            ));
        }
        self.ended.insert(token);
        Ok(())
    }

    /// Runs one operation and checks the model.
    pub fn apply(&mut self, op: &Op) -> Result<(), String> {
        match op {
            Op::Request { pad, timeout_ms } => self.request(*pad, *timeout_ms)?,
            Op::Notify { pad } => {
                let r = self
                    .conn
                    .send_notification("note", Some(&(0, "x".repeat(usize::from(*pad)))));
                self.check_send(r, false)?;
            }
            Op::Batch { elements, finish } => self.batch(elements, *finish)?,
            Op::Cancel { pick } => self.cancel(*pick)?,
            Op::PeerResponse {
                pick,
                error,
                bogus,
                chunk,
            } => self.peer_response(*pick, *error, *bogus, *chunk)?,
            Op::PeerRequest {
                id,
                notification,
                count,
                chunk,
            } => self.peer_request(*id, *notification, *count, *chunk)?,
            Op::PeerBytes { bytes, chunk } => {
                let mut body = bytes.clone();
                if self.framing() == Framing::Line {
                    body.retain(|&b| b != b'\n');
                    body.push(b'\n');
                } else {
                    let mut framed = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
                    framed.extend(body);
                    body = framed;
                }
                // Garbage may well be a batch.
                self.batch_busy_ok = true;
                let r = self.feed(&body, chunk_len(*chunk), None);
                self.batch_busy_ok = false;
                r?;
            }
            Op::PeerRaw { bytes, chunk } => {
                let bytes = bytes.clone();
                self.desynced |= !bytes.is_empty();
                self.batch_busy_ok = true;
                let r = self.feed(&bytes, chunk_len(*chunk), None);
                self.batch_busy_ok = false;
                r?;
            }
            Op::Answer { pick, how } => self.answer(*pick, *how)?,
            Op::Advance { ms } => {
                self.now = self.now + Duration::from_millis(u64::from(*ms));
                self.conn.handle_timeout(self.now);
            }
            Op::Transmit { max } => self.transmit(usize::from(*max))?,
            Op::Close => {
                self.conn.close();
                self.closed = true;
                self.stale.extend(self.open.drain(..).map(|o| o.handle));
            }
        }
        self.settle_events()
    }

    /// Closes the connection and checks that every token came back.
    pub fn finish(&mut self) -> Result<(), String> {
        self.apply(&Op::Close)?;
        self.transmit(0)?;
        if !self.outstanding.is_empty() {
            return Err(format!("tokens never came back: {:?}", self.outstanding));
        }
        Ok(())
    }

    fn check_send(&mut self, r: Result<(), SendError>, request: bool) -> Result<bool, String> {
        match r {
            Ok(()) if self.closed => Err("a command succeeded after close".into()),
            Ok(()) => Ok(true),
            Err(SendError::Closed) if self.closed => Ok(false),
            Err(SendError::PendingFull) if request && self.outstanding.len() == PENDING => {
                Ok(false)
            }
            Err(SendError::WouldBlock { required }) => {
                let queued = self.conn.poll_transmit().len();
                if queued + required <= TX {
                    return Err(format!(
                        "WouldBlock for {required} bytes with {queued} of {TX} queued"
                    ));
                }
                self.counts.would_block += 1;
                Ok(false)
            }
            Err(SendError::TooLarge { required }) if required > TX => Ok(false),
            Err(e) => Err(format!(
                "send failed: {e:?} (outstanding {}, closed {})",
                self.outstanding.len(),
                self.closed
            )),
        }
    }

    fn request(&mut self, pad: u8, timeout_ms: Option<u16>) -> Result<(), String> {
        let token = self.next_token;
        let timeout = timeout_ms.map(|ms| Duration::from_millis(u64::from(ms)));
        let params = (token, "x".repeat(usize::from(pad)));
        let r = self
            .conn
            .send_request(self.now, Token(token), "m", Some(&params), timeout);
        if self.check_send(r, true)? {
            self.next_token += 1;
            self.issued.push(token);
            let deadline = self.deadline(timeout);
            self.outstanding.insert(token, deadline);
        }
        Ok(())
    }

    fn batch(&mut self, elements: &[bool], finish: bool) -> Result<(), String> {
        let now = self.now;
        let mut staged = Vec::new();
        let free = PENDING - self.outstanding.len();
        let closed = self.closed;
        match self.conn.start_batch(now) {
            Err(SendError::Closed) if closed => return Ok(()),
            Err(SendError::WouldBlock { .. }) => return Ok(()),
            Err(e) => return Err(format!("start_batch: {e:?}")),
            Ok(_) if closed => return Err("start_batch succeeded after close".into()),
            Ok(mut batch) => {
                for &is_request in elements.iter().take(8) {
                    let token = self.next_token + staged.len() as u64;
                    let r = if is_request {
                        batch.request(Token(token), "m", Some(&[token]), None)
                    } else {
                        batch.notification("note", Some(&[0]))
                    };
                    match r {
                        Ok(()) if is_request => staged.push(token),
                        Ok(()) => {}
                        Err(SendError::PendingFull) if is_request && staged.len() == free => {}
                        Err(SendError::WouldBlock { .. } | SendError::TooLarge { .. }) => {}
                        Err(e) => return Err(format!("batch element: {e:?}")),
                    }
                }
                if finish {
                    batch.finish();
                } else {
                    staged.clear();
                }
            }
        }
        let deadline = self.deadline(None);
        for token in staged {
            self.next_token = token + 1;
            self.issued.push(token);
            self.outstanding.insert(token, deadline);
        }
        Ok(())
    }

    fn cancel(&mut self, pick: u8) -> Result<(), String> {
        if self.issued.is_empty() {
            return Ok(());
        }
        let token = self.issued[usize::from(pick) % self.issued.len()];
        let r = self.conn.cancel(Token(token));
        match (r, self.outstanding.contains_key(&token)) {
            (Ok(()), true) => {
                self.counts.cancels += 1;
                self.end(token, "cancel")
            }
            (Err(CancelError::NotPending), false) => Ok(()),
            (r, expected) => Err(format!(
                "cancel({token}) gave {r:?}, model outstanding={expected}"
            )),
        }
    }

    fn peer_response(
        &mut self,
        pick: u8,
        error: bool,
        bogus: bool,
        chunk: u8,
    ) -> Result<(), String> {
        let (id, token) = if bogus || self.our_ids.is_empty() {
            (format!("{}", 1_000_000_000 + u64::from(pick)), None)
        } else {
            let (id, token) = self.our_ids[usize::from(pick) % self.our_ids.len()].clone();
            (id, Some(token))
        };
        let body = if error {
            format!(r#"{{"jsonrpc":"2.0","error":{{"code":-32000,"message":"no"}},"id":{id}}}"#)
        } else {
            format!(
                r#"{{"jsonrpc":"2.0","result":[{}],"id":{id}}}"#,
                token.unwrap_or(0)
            )
        };
        // A token whose deadline has come is expired by `handle_input` before the response
        // is read: either outcome is right then.
        let due = token
            .and_then(|t| self.outstanding.get(&t))
            .is_some_and(|d| *d <= self.now);
        let expect = token.filter(|t| self.outstanding.contains_key(t) && !self.closed);
        let expect = (!self.desynced && !due).then_some(expect);
        let bytes = self.frame(&body);
        self.feed(&bytes, chunk_len(chunk), expect)
    }

    fn peer_request(
        &mut self,
        id: u8,
        notification: bool,
        count: u8,
        chunk: u8,
    ) -> Result<(), String> {
        let count = usize::from(count % 5) + 1;
        let mut elements = Vec::new();
        for i in 0..count {
            if notification && i % 2 == 0 {
                elements.push(r#"{"jsonrpc":"2.0","method":"n","params":[1]}"#.to_string());
                continue;
            }
            let n = self.next_peer_id;
            self.next_peer_id += 1;
            let id = match id % 5 {
                0 | 1 => format!("{n}"),
                2 => format!("\"s{n}\""),
                3 => "null".to_string(),
                // A repeat of an id still open (a duplicate) when there is one.
                _ => self
                    .open
                    .first()
                    .map(|o| o.id.clone())
                    .unwrap_or_else(|| format!("{n}")),
            };
            elements.push(format!(
                r#"{{"jsonrpc":"2.0","method":"m","params":{{"k":[{n}]}},"id":{id}}}"#
            ));
        }
        let body = if count == 1 {
            elements.remove(0)
        } else {
            format!("[{}]", elements.join(","))
        };
        let bytes = self.frame(&body);
        // Requests of a batch that arrives while another batch is being answered get Server
        // busy whatever the in-flight table holds.
        self.batch_busy_ok = count > 1;
        let r = self.feed(&bytes, chunk_len(chunk), None);
        self.batch_busy_ok = false;
        r
    }

    fn frame(&self, body: &str) -> Vec<u8> {
        match self.framing() {
            Framing::Line => format!("{body}\n").into_bytes(),
            Framing::ContentLength => {
                format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
            }
            other => unreachable!("no test for {other:?}"),
        }
    }

    /// Feeds bytes in chunks; `expect` is `Some(Some(token))` when a response for that token
    /// must come out, `Some(None)` when a response must be reported unknown.
    fn feed(
        &mut self,
        bytes: &[u8],
        chunk: usize,
        expect: Option<Option<u64>>,
    ) -> Result<(), String> {
        let mut saw_expected = false;
        let mut saw_unknown = false;
        for piece in bytes.chunks(chunk) {
            let mut input = piece;
            let mut stalls = 0;
            loop {
                let before = input.len();
                let status = self.conn.handle_input(self.now, &mut self.rx, &mut input);
                let item = match status {
                    Input::Item(item) => item,
                    Input::Closed => {
                        if !self.closed {
                            return Err("an open connection said Closed".into());
                        }
                        if !input.is_empty() {
                            return Err("a closed connection kept input".into());
                        }
                        break;
                    }
                    Input::NeedMore => {
                        // The status must be exact: NeedMore means all input was taken and
                        // nothing waits for transmit room.
                        if !input.is_empty() || self.conn.is_input_blocked() {
                            return Err(format!(
                                "NeedMore with {} bytes left, blocked={}",
                                input.len(),
                                self.conn.is_input_blocked()
                            ));
                        }
                        break;
                    }
                    Input::Blocked => {
                        if !self.conn.is_input_blocked() {
                            return Err("Blocked while is_input_blocked() is false".into());
                        }
                        // Blocked on transmit room: write everything out and go on.
                        stalls = if input.len() == before { stalls + 1 } else { 0 };
                        if stalls > 2 {
                            return Err(format!("input stuck: {} bytes left", input.len()));
                        }
                        self.transmit(0)?;
                        continue;
                    }
                };
                if self.closed {
                    return Err("a closed connection yielded input".into());
                }
                match Seen::from(item) {
                    Seen::Request {
                        handle,
                        id,
                        duplicate: flagged,
                    } => {
                        self.counts.inbound_requests += 1;
                        let duplicate = self.open.iter().any(|o| o.id == id);
                        if flagged != duplicate {
                            return Err(format!(
                                "request {id}: duplicate flag {flagged} but model {duplicate}"
                            ));
                        }
                        if duplicate
                            && self.conn.config().duplicate_ids == DuplicateIdPolicy::Reject
                        {
                            return Err(format!(
                                "duplicate {id} delivered under the Reject policy"
                            ));
                        }
                        self.peer_ids.insert(id.clone());
                        self.open.push(Open { handle, id });
                    }
                    Seen::Other => {}
                    Seen::Response(token) => {
                        self.counts.responses += 1;
                        if expect.is_some_and(|e| e != Some(token)) {
                            return Err(format!(
                                "response routed to token {token} (expected {expect:?})"
                            ));
                        }
                        saw_expected = true;
                        self.end(token, "response")?;
                    }
                    Seen::Busy(id) => {
                        self.counts.problems += 1;
                        self.counts.busy += 1;
                        self.peer_ids.insert(id);
                        if self.conn.inflight_len() < INFLIGHT && !self.batch_busy_ok {
                            return Err(format!(
                                "Busy with {} of {INFLIGHT} in flight",
                                self.conn.inflight_len()
                            ));
                        }
                    }
                    Seen::Unknown(r) => {
                        self.counts.problems += 1;
                        self.counts.unknown += 1;
                        if let Some(Some(t)) = expect {
                            return Err(format!(
                                "the response for outstanding token {t} was reported unknown: {r}"
                            ));
                        }
                        saw_unknown = true;
                    }
                    Seen::Problem(id) => {
                        self.counts.problems += 1;
                        if let Some(id) = id {
                            self.peer_ids.insert(id);
                        }
                    }
                }
                self.check_bounds()?;
            }
        }
        match expect {
            Some(Some(t)) if !saw_expected => Err(format!("no response delivered for token {t}")),
            Some(None) if !saw_unknown && !self.closed => {
                Err("a response for no outstanding request was not reported unknown".into())
            }
            _ => Ok(()),
        }
    }

    fn answer(&mut self, pick: u8, how: u8) -> Result<(), String> {
        if self.open.is_empty() {
            if let Some(&h) = self.stale.get(usize::from(pick) % self.stale.len().max(1)) {
                let r = self.conn.respond(h, &1);
                if r != Err(RespondError::UnknownHandle) {
                    return Err(format!("respond on a stale handle gave {r:?}"));
                }
                let r = self.conn.release(h);
                if r != Err(RespondError::UnknownHandle) {
                    return Err(format!("release of a stale handle gave {r:?}"));
                }
            }
            return Ok(());
        }
        let i = usize::from(pick) % self.open.len();
        let handle = self.open[i].handle;
        let r = match how % 4 {
            0 => self.conn.respond(handle, &("result", usize::from(pick))),
            1 => self
                .conn
                .respond_error(handle, ErrorCode(-32000), Some("failed"), Some(&[1, 2])),
            2 => self.conn.reject(handle, ErrorCode::METHOD_NOT_FOUND),
            // Let go of with no answer (a cancelled MCP request).
            _ => self.conn.release(handle),
        };
        match r {
            Ok(()) | Err(RespondError::TooLarge { .. }) => {
                self.open.remove(i);
                self.stale.push(handle);
                Ok(())
            }
            Err(RespondError::WouldBlock { .. }) => {
                self.counts.would_block += 1;
                Ok(())
            }
            Err(e) => Err(format!("answering an open request failed: {e:?}")),
        }
    }

    /// Writes out up to `max` bytes (0: all) and checks them.
    fn transmit(&mut self, max: usize) -> Result<(), String> {
        loop {
            let bytes = self.conn.poll_transmit();
            if bytes.is_empty() {
                return Ok(());
            }
            let n = if max == 0 {
                bytes.len()
            } else {
                max.min(bytes.len())
            };
            let mut chunk = &bytes[..n];
            while !chunk.is_empty() {
                if self.tap.push(&mut chunk) == 0 && self.tap.is_full() {
                    return Err("tap full: the connection emitted an oversize frame".into());
                }
                while let Some(ev) = self.tap.next_frame() {
                    let FrameEvent::Frame(frame) = ev else {
                        return Err(format!("the connection emitted a bad frame: {ev:?}"));
                    };
                    let frame = frame.to_vec();
                    check_emitted(&frame, &mut self.our_ids, &self.peer_ids)?;
                }
            }
            self.conn.advance_transmit(n);
            if max != 0 {
                return Ok(());
            }
        }
    }

    fn settle_events(&mut self) -> Result<(), String> {
        while let Some(Event::RequestFailed { token, reason }) = self.conn.poll_event() {
            let deadline = self.outstanding.get(&token.0).copied();
            match reason {
                Failure::TimedOut => {
                    self.counts.timeouts += 1;
                    if deadline.is_some_and(|d| d > self.now) {
                        return Err(format!("token {} timed out before its deadline", token.0));
                    }
                }
                Failure::Closed => {
                    self.counts.closed += 1;
                    if !self.closed {
                        return Err(format!(
                            "token {} failed Closed on an open connection",
                            token.0
                        ));
                    }
                }
            }
            self.end(token.0, "failure event")?;
        }
        // After handle_timeout (Advance), nothing may outlive its deadline; other operations
        // call it implicitly only when they take input.
        if let Some((t, d)) = self.outstanding.iter().find(|(_, d)| **d <= self.now) {
            if self.conn.poll_timeout().is_none_or(|p| p > self.now) {
                return Err(format!(
                    "token {t} (deadline {}us) outlived it and poll_timeout does not say so",
                    d.as_micros()
                ));
            }
        }
        self.check_bounds()
    }

    fn check_bounds(&self) -> Result<(), String> {
        let pending = self.conn.pending_len();
        let inflight = self.conn.inflight_len();
        if inflight > INFLIGHT || inflight < self.open.len() {
            return Err(format!(
                "inflight_len {inflight}, {} open in the model",
                self.open.len()
            ));
        }
        // Unreported failures still count as pending until poll_event hands them out.
        if pending < self.outstanding.len() || pending > PENDING {
            return Err(format!(
                "pending_len {pending}, model {}",
                self.outstanding.len()
            ));
        }
        Ok(())
    }
}

/// Frame check for what the connection transmits.
fn check_emitted(
    frame: &[u8],
    our_ids: &mut Vec<(String, u64)>,
    peer_ids: &BTreeSet<String>,
) -> Result<(), String> {
    let text = String::from_utf8_lossy(frame).into_owned();
    let messages: Vec<Message<'_>> = match parse(frame, ParseLimits::default()) {
        Ok(Parsed::Single(Ok(m))) => vec![m],
        Ok(Parsed::Batch(b)) => b
            .iter()
            .collect::<Result<_, _>>()
            .map_err(|inv| format!("emitted an invalid batch element {inv:?}: {text}"))?,
        other => return Err(format!("emitted {other:?}: {text}")),
    };
    for m in messages {
        match m {
            Message::Request(req) => {
                let token = req
                    .params
                    .and_then(|p| p.elements().next())
                    .and_then(|t| t.as_str().parse::<u64>().ok())
                    .ok_or_else(|| format!("request without token: {text}"))?;
                our_ids.push((req.id.raw().to_string(), token));
            }
            Message::Notification(_) => {}
            Message::Response(resp) => {
                let id = resp.id.raw();
                if !resp.id.is_null() && !peer_ids.contains(id) {
                    return Err(format!(
                        "emitted a response for id {id} the peer never sent: {text}"
                    ));
                }
            }
        }
    }
    Ok(())
}

/// An inbound item, copied out of the receive buffer.
enum Seen {
    Request {
        handle: RequestHandle,
        id: String,
        duplicate: bool,
    },
    Response(u64),
    Busy(String),
    Unknown(String),
    /// Another problem, with the id it echoes if any.
    Problem(Option<String>),
    Other,
}

impl From<Inbound<'_>> for Seen {
    fn from(item: Inbound<'_>) -> Self {
        match item {
            Inbound::Request(req) => Seen::Request {
                handle: req.handle,
                id: req.id.raw().to_string(),
                duplicate: req.duplicate,
            },
            Inbound::Notification(_) => Seen::Other,
            Inbound::Response(resp) => Seen::Response(resp.token.0),
            Inbound::Problem(Problem::Busy(id)) => Seen::Busy(id.raw().to_string()),
            Inbound::Problem(Problem::UnknownResponse(r)) => Seen::Unknown(format!("{r:?}")),
            Inbound::Problem(Problem::DuplicateId(id) | Problem::IdTooLong(id)) => {
                Seen::Problem(Some(id.raw().to_string()))
            }
            Inbound::Problem(Problem::Invalid(inv)) => {
                Seen::Problem(inv.id.map(|id| id.raw().to_string()))
            }
            Inbound::Problem(_) => Seen::Problem(None),
        }
    }
}
