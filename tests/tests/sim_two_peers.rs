//! Deterministic two-peer simulation over the `rpcwire-memory` link.
//!
//! Two [`Connection`]s (small capacities, so every limit is reached) call and notify each other
//! concurrently over a seeded [`Link`] that chunks, coalesces, delays and (in faulty scenarios)
//! corrupts, truncates or drops. A virtual clock drives timeouts. Each scenario is determined
//! by one `u64` seed: framing, link capacity and behaviour, fault mode, peer configurations and
//! the whole sequence of actions (requests, notifications, batches, cancels, deferred answers,
//! time jumps).
//!
//! Invariants checked in every scenario:
//! - **token conservation**: every token a send accepted ends exactly once (response, timeout,
//!   cancel or close), never before its deadline, and at the end of the run none is left;
//!   after every step `pending_len()` equals the model's count of outstanding tokens;
//! - **valid output**: every frame either peer emits parses as valid JSON-RPC (wire tap);
//! - **bounded memory**: pending / in-flight counts never exceed the const-generic capacities;
//! - **no panic** and no livelock (a bounded settle phase must reach quiescence).
//!
//! In scenarios without corruption or truncation additionally:
//! - **no cross-wiring**: each request carries a unique payload and its response must echo
//!   exactly that payload (or be the error its method asks for, or Server busy);
//! - **exactly once**: every request id is answered at most once on the wire, and (fault-free
//!   runs, after settling) exactly once unless its batch was refused;
//! - **notifications are never answered** (no reply with a null id unless a batch was refused)
//!   and each is delivered exactly once;
//! - an unknown response is always a late answer to a cancelled or timed-out request.
//!
//! A failure prints its seed; replay one scenario with a trace of every action:
//! `RPCWIRE_SEED=<seed> cargo test -p rpcwire-tests --test sim_two_peers -- --nocapture`.
//! `RPCWIRE_SIM_SCENARIOS=<n>` changes how many seeds each test runs (default 2 500 per test,
//! 10 000 in all), and `RPCWIRE_SIM_BASE=<n>` moves the seed range to explore new scenarios.

use rpcwire::storage::Inline;
use rpcwire::Input;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::Duration;

use rpcwire::wire::{parse, FrameEvent, Framing, Message, ParseLimits, Parsed, RawJson, RxBuffer};
use rpcwire::{
    CancelError, Config, Connection, ErrorCode, Event, Failure, Inbound, Instant, Problem,
    RequestHandle, RespondError, SendError, Token,
};
use rpcwire_memory::{Faults, Link, LinkConfig, LinkError, Side, SplitMix64};
use serde_json::Value;

const TX: usize = 2048;
const BATCH: usize = 1024;
const PENDING: usize = 6;
const INFLIGHT: usize = 4;
/// Larger than any frame a peer can emit (`TX`), so a fault-free run never sees an oversize frame.
const RX: usize = 4096;
/// Most elements a simulated batch carries (their reservations always fit `BATCH`).
const MAX_BATCH_ELEMENTS: u64 = 6;
/// Settle rounds before a scenario is declared livelocked.
const SETTLE_ROUNDS: usize = 5_000;
/// Peer problems (garbage frames) tolerated while settling; faults are off then, so more
/// means the peers feed each other garbage forever.
const SETTLE_PROBLEMS: u32 = 200;

type Conn = Connection<Inline<TX, BATCH, PENDING, INFLIGHT>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// No faults: every invariant, including completeness, is checked.
    Clean,
    /// Bytes get corrupted.
    Corrupt,
    /// Writes lose their tails.
    Truncate,
    /// The link breaks at some point (no corruption before it).
    Drop,
    /// All of the above.
    Mixed,
    /// No faults, but at some point one peer shuts its writing direction down (a graceful
    /// half close): the other reads the rest, sees end of stream, calls `RxBuffer::finish`
    /// and `Connection::fail_pending`, and goes on answering.
    HalfClose,
}

impl Mode {
    /// No byte is ever altered or lost while the link is up.
    fn strict(self) -> bool {
        matches!(self, Mode::Clean | Mode::Drop | Mode::HalfClose)
    }
}

/// What the receiving application does with a method.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    /// Answered at once with its params.
    Echo,
    /// Answered later (a deferred, out-of-order answer) with its params.
    Hold,
    /// Answered with error -32050 whose data is the params.
    Fail,
    /// Unknown to the application: Method not found.
    Nope,
}

const FAIL_CODE: ErrorCode = ErrorCode(-32050);

impl Method {
    fn name(self) -> &'static str {
        match self {
            Method::Echo => "echo",
            Method::Hold => "hold",
            Method::Fail => "fail",
            Method::Nope => "nope",
        }
    }

    fn from_name(name: &str) -> Option<Method> {
        [Method::Echo, Method::Hold, Method::Fail, Method::Nope]
            .into_iter()
            .find(|m| m.name() == name)
    }

    fn pick(rng: &mut SplitMix64) -> Method {
        match rng.below(20) {
            0..=7 => Method::Echo,
            8..=12 => Method::Hold,
            13..=16 => Method::Fail,
            _ => Method::Nope,
        }
    }
}

/// How a token ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum End {
    Responded,
    TimedOut,
    Cancelled,
    Closed,
}

/// A request as the sender's model remembers it.
#[derive(Debug, Clone)]
struct Sent {
    method: Method,
    params: Value,
    deadline: Instant,
    /// In a batch the peer must refuse (too long, or batches off).
    refused: bool,
}

/// An inbound request the application has not answered yet.
#[derive(Debug, Clone)]
struct Held {
    handle: RequestHandle,
    method: Method,
    params: Option<String>,
}

/// Decodes everything a peer transmits (what the core produced, before the link's faults).
struct Tap {
    rx: RxBuffer<[u8; 2 * TX]>,
    /// Request ids emitted -> the payload nonce they carried.
    request_ids: BTreeMap<String, u64>,
    /// Responses emitted, by id.
    responses: BTreeMap<String, u32>,
    /// Responses emitted with a null id.
    null_responses: u32,
    /// Print every frame.
    verbose: bool,
}

impl Tap {
    fn new(framing: Framing, verbose: bool) -> Self {
        Tap {
            verbose,
            rx: RxBuffer::new(framing),
            request_ids: BTreeMap::new(),
            responses: BTreeMap::new(),
            null_responses: 0,
        }
    }

    /// Takes bytes the peer wrote and checks every complete frame.
    fn feed(&mut self, mut bytes: &[u8], strict: bool) -> Result<(), String> {
        while !bytes.is_empty() {
            if self.rx.push(&mut bytes) == 0 && self.rx.is_full() {
                return Err("tap: a frame larger than the tap buffer".into());
            }
            loop {
                let frame = match self.rx.next_frame() {
                    None => break,
                    Some(FrameEvent::Frame(f)) => f.to_vec(),
                    Some(other) => return Err(format!("tap: core emitted a bad frame: {other:?}")),
                };
                self.frame(&frame, strict)?;
            }
        }
        Ok(())
    }

    fn frame(&mut self, frame: &[u8], strict: bool) -> Result<(), String> {
        let text = String::from_utf8_lossy(frame).into_owned();
        if self.verbose {
            println!("  emitted: {text}");
        }
        let parsed = parse(frame, ParseLimits::default())
            .map_err(|e| format!("tap: core emitted invalid JSON ({e:?}): {text}"))?;
        let mut messages = Vec::new();
        match parsed {
            Parsed::Single(Ok(m)) => messages.push(m),
            Parsed::Batch(b) => {
                for element in b.iter() {
                    messages.push(element.map_err(|inv| {
                        format!("tap: core emitted an invalid batch element ({inv:?}): {text}")
                    })?);
                }
            }
            other => return Err(format!("tap: core emitted {other:?}: {text}")),
        }
        for m in messages {
            match m {
                Message::Request(req) => {
                    let nonce = req
                        .params
                        .and_then(|p| p.elements().next())
                        .and_then(|n| n.as_str().parse::<u64>().ok())
                        .ok_or_else(|| format!("tap: request without a nonce: {text}"))?;
                    let id = req.id.raw().to_owned();
                    if self.request_ids.insert(id.clone(), nonce).is_some() {
                        return Err(format!("tap: request id {id} emitted twice"));
                    }
                }
                Message::Notification(_) => {}
                Message::Response(resp) => {
                    if resp.id.is_null() {
                        self.null_responses += 1;
                    }
                    let count = self.responses.entry(resp.id.raw().to_owned()).or_default();
                    *count += 1;
                    if strict && *count > 1 && !resp.id.is_null() {
                        return Err(format!("request id {} answered twice: {text}", resp.id));
                    }
                }
            }
        }
        Ok(())
    }
}

/// One simulated endpoint: a connection, its application, and the model of its requests.
struct Peer {
    side: Side,
    conn: Conn,
    rx: RxBuffer<[u8; RX]>,
    tap: Tap,
    next_nonce: u64,
    /// Tokens (= nonces) accepted and not yet ended.
    outstanding: BTreeMap<u64, Sent>,
    /// Every request ever accepted, by nonce.
    all_sent: BTreeMap<u64, Sent>,
    ended: BTreeMap<u64, End>,
    held: Vec<Held>,
    /// Notification nonces sent that the peer must receive (not in refused batches).
    notes_sent: BTreeSet<u64>,
    /// Notification nonces received from the other peer.
    notes_received: BTreeSet<u64>,
    /// Batches sent that the other peer must refuse.
    refused_batches: u32,
    /// Each batch sent that the other peer may refuse: its request and notification nonces.
    /// (A batch that arrives while the peer answers another one may instead get Server busy
    /// for each request, with its notifications delivered.)
    refusable: Vec<(Vec<u64>, Vec<u64>)>,
    /// Batches of the other peer this one refused.
    refusals_made: u32,
    /// Null-id error replies received (answers to refused batches, or garbage).
    null_errors_received: u32,
    closed: bool,
    /// This peer shut its writing direction down: it sends nothing more.
    write_shut: bool,
    /// The other peer shut its writing direction down and everything it sent was read.
    eof: bool,
}

/// Totals over many scenarios, to prove the suite exercises what it claims.
#[derive(Debug, Default, Clone, Copy)]
struct Coverage {
    scenarios: u64,
    line: u64,
    content_length: u64,
    responses: u64,
    error_responses: u64,
    busy: u64,
    timeouts: u64,
    cancels: u64,
    closed: u64,
    batches: u64,
    refused_batches: u64,
    notifications: u64,
    unknown_responses: u64,
    deferred_answers: u64,
    would_block: u64,
    corrupted: u64,
    truncated: u64,
    broken: u64,
    parse_errors: u64,
    half_closes: u64,
}

impl Coverage {
    fn add(&mut self, o: &Coverage) {
        self.scenarios += o.scenarios;
        self.line += o.line;
        self.content_length += o.content_length;
        self.responses += o.responses;
        self.error_responses += o.error_responses;
        self.busy += o.busy;
        self.timeouts += o.timeouts;
        self.cancels += o.cancels;
        self.closed += o.closed;
        self.batches += o.batches;
        self.refused_batches += o.refused_batches;
        self.notifications += o.notifications;
        self.unknown_responses += o.unknown_responses;
        self.deferred_answers += o.deferred_answers;
        self.would_block += o.would_block;
        self.corrupted += o.corrupted;
        self.truncated += o.truncated;
        self.broken += o.broken;
        self.parse_errors += o.parse_errors;
        self.half_closes += o.half_closes;
    }
}

/// A whole scenario.
struct Sim<const CAP: usize> {
    seed: u64,
    mode: Mode,
    rng: SplitMix64,
    link: Link<CAP, 16>,
    now: Instant,
    peers: [Peer; 2],
    trace: Option<Vec<String>>,
    cov: Coverage,
    settling: bool,
    settle_problems: u32,
}

fn random_config(rng: &mut SplitMix64, framing: Framing) -> Config {
    Config {
        framing,
        max_batch_len: [2, 4, 64][rng.index(3)],
        batches: rng.below(10) != 0,
        request_timeout: match rng.below(3) {
            0 => None,
            _ => Some(Duration::from_millis(rng.range_inclusive(5, 400))),
        },
        ..Config::default()
    }
}

/// A payload string with characters that need escaping now and then.
fn pad(rng: &mut SplitMix64) -> String {
    const CHARS: &[char] = &['a', 'b', 'z', ' ', '"', '\\', '\n', 'é', '\u{1}', '😀', '/'];
    let len = rng.below(24) as usize;
    (0..len).map(|_| CHARS[rng.index(CHARS.len())]).collect()
}

impl<const CAP: usize> Sim<CAP> {
    fn new(seed: u64, mut rng: SplitMix64, verbose: bool) -> Self {
        let framing = if rng.below(2) == 0 {
            Framing::Line
        } else {
            Framing::ContentLength
        };
        let mode = match rng.below(20) {
            0..=8 => Mode::Clean,
            9 | 10 => Mode::Corrupt,
            11 | 12 => Mode::Truncate,
            13..=15 => Mode::Drop,
            16 | 17 => Mode::Mixed,
            _ => Mode::HalfClose,
        };
        let mut faults = Faults::NONE;
        if matches!(mode, Mode::Corrupt | Mode::Mixed) {
            faults.corrupt_ppm = rng.range_inclusive(5_000, 100_000) as u32;
        }
        if matches!(mode, Mode::Truncate | Mode::Mixed) {
            faults.truncate_ppm = rng.range_inclusive(5_000, 60_000) as u32;
        }
        if matches!(mode, Mode::Drop | Mode::Mixed) {
            if rng.below(2) == 0 {
                faults.drop_at = Some(Instant::from_millis(rng.range_inclusive(1, 2_000)));
            } else {
                faults.drop_ppm = rng.range_inclusive(1_000, 30_000) as u32;
            }
        }
        let max_delay = Duration::from_micros(rng.range_inclusive(0, 20_000));
        let link_config = LinkConfig {
            max_chunk: [0, 1, 7, 64, 512][rng.index(5)],
            coalesce_ppm: rng.range_inclusive(0, 300_000) as u32,
            min_delay: Duration::from_micros(rng.range_inclusive(0, max_delay.as_micros() as u64)),
            max_delay,
            faults,
        };
        let link = Link::new(rng.next_u64(), link_config);
        let mut peer = |side| {
            let config = random_config(&mut rng, framing);
            let conn = Conn::new(config);
            Peer {
                side,
                rx: conn.rx_buffer(),
                conn,
                tap: Tap::new(framing, verbose),
                next_nonce: 1,
                outstanding: BTreeMap::new(),
                all_sent: BTreeMap::new(),
                ended: BTreeMap::new(),
                held: Vec::new(),
                notes_sent: BTreeSet::new(),
                notes_received: BTreeSet::new(),
                refused_batches: 0,
                refusable: Vec::new(),
                refusals_made: 0,
                null_errors_received: 0,
                closed: false,
                write_shut: false,
                eof: false,
            }
        };
        let peers = [peer(Side::A), peer(Side::B)];
        let mut cov = Coverage {
            scenarios: 1,
            ..Coverage::default()
        };
        match framing {
            Framing::Line => cov.line = 1,
            Framing::ContentLength => cov.content_length = 1,
            other => unreachable!("no test for {other:?}"),
        }
        let mut sim = Sim {
            seed,
            mode,
            rng,
            link,
            now: Instant::ZERO,
            peers,
            trace: verbose.then(Vec::new),
            cov,
            settling: false,
            settle_problems: 0,
        };
        sim.log(|| format!("seed {seed}: {mode:?} {framing:?} CAP={CAP} link={link_config:?}"));
        for p in 0..2 {
            let config = *sim.peers[p].conn.config();
            sim.log(|| format!("peer {:?}: {config:?}", Side::BOTH[p]));
        }
        sim
    }

    fn log(&mut self, line: impl FnOnce() -> String) {
        if let Some(t) = self.trace.as_mut() {
            let l = line();
            println!("[{:>9}us] {l}", self.now.as_micros());
            t.push(l);
        }
    }

    fn fail(&self, what: impl std::fmt::Display) -> String {
        format!(
            "sim seed {} ({:?}) at t={}us: {what}\n  replay: RPCWIRE_SEED={} cargo test -p rpcwire-tests --test sim_two_peers -- --nocapture",
            self.seed,
            self.mode,
            self.now.as_micros(),
            self.seed
        )
    }

    fn deadline(&self, p: usize, timeout: Option<Duration>) -> Instant {
        match timeout.or(self.peers[p].conn.config().request_timeout) {
            Some(t) => self.now + t,
            None => Instant::MAX,
        }
    }

    // ------------------------------------------------------------------------ model checks

    /// Drains events and transmit bytes of peer `p`, then checks the model against it.
    fn pump(&mut self, p: usize) -> Result<bool, String> {
        let mut progressed = false;
        while let Some(event) = self.peers[p].conn.poll_event() {
            progressed = true;
            let Event::RequestFailed { token, reason } = event;
            let end = match reason {
                Failure::TimedOut => End::TimedOut,
                Failure::Closed => End::Closed,
            };
            let sent = self.end_token(p, token, end)?;
            match reason {
                Failure::TimedOut => {
                    self.cov.timeouts += 1;
                    if sent.deadline > self.now {
                        return Err(self.fail(format_args!(
                            "token {} timed out early (deadline {}us)",
                            token.0,
                            sent.deadline.as_micros()
                        )));
                    }
                }
                Failure::Closed => {
                    self.cov.closed += 1;
                    if !self.peers[p].closed && !self.peers[p].eof {
                        return Err(self.fail(format_args!(
                            "token {} failed Closed on an open connection",
                            token.0
                        )));
                    }
                }
            }
        }
        // Transmit into the link.
        if !self.peers[p].closed && !self.peers[p].write_shut {
            let side = self.peers[p].side;
            let strict = self.mode.strict();
            let peer = &mut self.peers[p];
            let bytes = peer.conn.poll_transmit();
            if !bytes.is_empty() {
                match self.link.write(self.now, side, bytes) {
                    Ok(n) => {
                        if n > 0 {
                            progressed = true;
                        }
                        let r = peer.tap.feed(&bytes[..n], strict);
                        peer.conn.advance_transmit(n);
                        r.map_err(|e| self.fail(e))?;
                    }
                    Err(e) => {
                        self.close_peer(p, e)?;
                        progressed = true;
                    }
                }
            }
        }
        self.check_bounds(p)?;
        Ok(progressed)
    }

    fn check_bounds(&self, p: usize) -> Result<(), String> {
        let peer = &self.peers[p];
        let pending = peer.conn.pending_len();
        let inflight = peer.conn.inflight_len();
        if pending > PENDING || inflight > INFLIGHT {
            return Err(self.fail(format_args!(
                "capacity exceeded: pending {pending}, inflight {inflight}"
            )));
        }
        if pending != peer.outstanding.len() {
            return Err(self.fail(format_args!(
                "peer {:?}: core has {pending} pending requests, the model {} ({:?})",
                peer.side,
                peer.outstanding.len(),
                peer.outstanding.keys().collect::<Vec<_>>()
            )));
        }
        let open = peer.held.len();
        if inflight < open {
            return Err(self.fail(format_args!(
                "peer {:?}: {open} held requests but only {inflight} in flight",
                peer.side
            )));
        }
        Ok(())
    }

    /// Removes a token from the model; it must be outstanding (ends exactly once).
    fn end_token(&mut self, p: usize, token: Token, end: End) -> Result<Sent, String> {
        self.log(|| format!("{:?}: token {} ended {end:?}", Side::BOTH[p], token.0));
        match self.peers[p].outstanding.remove(&token.0) {
            Some(sent) => {
                self.peers[p].ended.insert(token.0, end);
                Ok(sent)
            }
            None => Err(self.fail(format_args!(
                "peer {:?}: token {} ended ({end:?}) but it was not outstanding (earlier end: {:?})",
                Side::BOTH[p],
                token.0,
                self.peers[p].ended.get(&token.0)
            ))),
        }
    }

    fn close_peer(&mut self, p: usize, why: LinkError) -> Result<(), String> {
        if self.peers[p].closed {
            return Ok(());
        }
        self.log(|| format!("{:?}: link {why}, closing", Side::BOTH[p]));
        if why == LinkError::Broken {
            self.cov.broken += 1;
        }
        let peer = &mut self.peers[p];
        peer.closed = true;
        peer.held.clear();
        peer.conn.close();
        let r = peer.conn.send_request(
            self.now,
            Token(u64::MAX),
            "x",
            rpcwire::wire::NO_PARAMS,
            None,
        );
        if r != Err(SendError::Closed) {
            return Err(self.fail(format_args!("send after close gave {r:?}")));
        }
        // Events (Closed failures) are drained by the next pump.
        Ok(())
    }

    // ------------------------------------------------------------------------ input

    /// Reads one chunk from the link into peer `p` and handles everything it can.
    fn deliver(&mut self, p: usize) -> Result<bool, String> {
        if self.peers[p].closed {
            return Ok(false);
        }
        let side = self.peers[p].side;
        let mut progressed = false;
        match rpcwire_memory::fill(&mut self.link, self.now, side, &mut self.peers[p].rx) {
            Ok(n) => progressed |= n > 0,
            Err(LinkError::Closed) if self.peers[p].eof => {}
            Err(LinkError::Closed) => {
                // End of stream: the last line counts, and nothing more will answer us.
                self.log(|| format!("{:?}: end of stream", Side::BOTH[p]));
                self.cov.half_closes += 1;
                self.peers[p].eof = true;
                self.peers[p].rx.finish();
                self.handle_input(p)?;
                self.peers[p].conn.fail_pending();
                self.pump(p)?;
                return Ok(true);
            }
            Err(e) => {
                self.close_peer(p, e)?;
                return Ok(true);
            }
        }
        progressed |= self.handle_input(p)?;
        Ok(progressed)
    }

    fn handle_input(&mut self, p: usize) -> Result<bool, String> {
        let mut progressed = false;
        loop {
            let now = self.now;
            let peer = &mut self.peers[p];
            let Input::Item(item) = peer.conn.handle_input(now, &mut peer.rx, &mut &[][..]) else {
                break;
            };
            progressed = true;
            let owned = OwnedInbound::from(item);
            self.on_inbound(p, owned)?;
            self.pump(p)?;
        }
        Ok(progressed)
    }

    fn on_inbound(&mut self, p: usize, item: OwnedInbound) -> Result<(), String> {
        let strict = self.mode.strict();
        match item {
            OwnedInbound::Request {
                handle,
                method,
                params,
                duplicate,
            } => {
                self.log(|| format!("{:?}: request {method} {params:?}", Side::BOTH[p]));
                if strict && duplicate {
                    return Err(self.fail("a unique id was flagged duplicate"));
                }
                if self.peers[p].write_shut {
                    // Nothing can be sent any more: the request stays open until close.
                    return Ok(());
                }
                let method = Method::from_name(&method).unwrap_or(Method::Nope);
                let held = Held {
                    handle,
                    method,
                    params,
                };
                if method == Method::Hold {
                    self.peers[p].held.push(held);
                } else {
                    self.answer(p, held)?;
                }
            }
            OwnedInbound::Notification { method, params } => {
                self.cov.notifications += 1;
                self.log(|| format!("{:?}: notification {method} {params:?}", Side::BOTH[p]));
                if strict {
                    let nonce = params
                        .as_deref()
                        .and_then(|t| serde_json::from_str::<Value>(t).ok())
                        .and_then(|v| v.get(0).and_then(Value::as_u64));
                    let Some(nonce) = nonce.filter(|_| method == "note") else {
                        return Err(
                            self.fail(format_args!("unexpected notification {method} {params:?}"))
                        );
                    };
                    if !self.peers[p].notes_received.insert(nonce) {
                        return Err(self.fail(format_args!("notification {nonce} delivered twice")));
                    }
                }
            }
            OwnedInbound::Response { token, outcome } => {
                let sent = self.end_token(p, token, End::Responded)?;
                self.cov.responses += 1;
                if outcome.is_err() {
                    self.cov.error_responses += 1;
                }
                if strict {
                    self.check_outcome(token, &sent, &outcome)?;
                }
            }
            OwnedInbound::Problem(problem) => {
                self.log(|| format!("{:?}: problem {problem:?}", Side::BOTH[p]));
                self.on_problem(p, problem, strict)?;
            }
        }
        Ok(())
    }

    fn check_outcome(
        &self,
        token: Token,
        sent: &Sent,
        outcome: &Result<Value, (i32, Option<Value>)>,
    ) -> Result<(), String> {
        let ok = match outcome {
            Ok(result) => {
                matches!(sent.method, Method::Echo | Method::Hold) && *result == sent.params
            }
            Err((code, data)) => match ErrorCode(*code) {
                FAIL_CODE => sent.method == Method::Fail && data.as_ref() == Some(&sent.params),
                ErrorCode::METHOD_NOT_FOUND => sent.method == Method::Nope,
                // The peer's in-flight table was full, or the answer could not fit.
                ErrorCode::SERVER_BUSY | ErrorCode::INTERNAL_ERROR => true,
                _ => false,
            },
        };
        if ok {
            Ok(())
        } else {
            Err(self.fail(format_args!(
                "cross-wired or wrong answer for token {} ({:?} {}): got {outcome:?}",
                token.0, sent.method, sent.params
            )))
        }
    }

    fn on_problem(&mut self, p: usize, problem: OwnedProblem, strict: bool) -> Result<(), String> {
        if self.settling && !matches!(problem, OwnedProblem::Busy) {
            self.settle_problems += 1;
        }
        match problem {
            OwnedProblem::Busy => self.cov.busy += 1,
            OwnedProblem::UnknownResponse { id, is_error } => {
                self.cov.unknown_responses += 1;
                if id == "null" {
                    self.peers[p].null_errors_received += 1;
                    if strict
                        && (!is_error
                            || self.peers[p].null_errors_received > self.peers[p].refused_batches)
                    {
                        return Err(self.fail("a null-id reply that answers nothing we sent (a notification answered?)"));
                    }
                } else if strict {
                    // A late answer: to a request of ours that was cancelled or timed out.
                    let peer = &self.peers[p];
                    let end = peer
                        .tap
                        .request_ids
                        .get(&id)
                        .and_then(|n| peer.ended.get(n));
                    if !matches!(end, Some(End::Cancelled | End::TimedOut)) {
                        return Err(self.fail(format_args!(
                            "unknown response for id {id}, which ended {end:?}"
                        )));
                    }
                }
            }
            OwnedProblem::BatchRefusal(what) => {
                self.peers[p].refusals_made += 1;
                if strict && self.peers[p].refusals_made > self.peers[1 - p].refused_batches {
                    return Err(self.fail(format_args!(
                        "a batch refused that should have been accepted: {what}"
                    )));
                }
            }
            OwnedProblem::Other(what) => {
                if what.starts_with("ParseError") {
                    self.cov.parse_errors += 1;
                }
                if strict {
                    return Err(self.fail(format_args!("problem on a fault-free link: {what}")));
                }
            }
        }
        Ok(())
    }

    /// Answers an inbound request as its method says; keeps it when there is no room yet.
    fn answer(&mut self, p: usize, held: Held) -> Result<(), String> {
        let params = held.params.as_deref().map(|t| RawJson::parse(t, 64));
        let params = match params {
            Some(Ok(raw)) => Some(raw),
            Some(Err(e)) => {
                return Err(self.fail(format_args!("params the core accepted do not parse: {e:?}")))
            }
            None => None,
        };
        let peer = &mut self.peers[p];
        let r = match held.method {
            Method::Echo | Method::Hold => match params {
                Some(raw) => peer.conn.respond(held.handle, &raw),
                None => peer.conn.respond(held.handle, &()),
            },
            Method::Fail => {
                peer.conn
                    .respond_error(held.handle, FAIL_CODE, Some("failed"), params.as_ref())
            }
            Method::Nope => peer.conn.reject(held.handle, ErrorCode::METHOD_NOT_FOUND),
        };
        match r {
            Ok(()) | Err(RespondError::TooLarge { .. }) => Ok(()),
            Err(RespondError::WouldBlock { .. }) => {
                self.cov.would_block += 1;
                self.peers[p].held.push(held);
                Ok(())
            }
            Err(RespondError::UnknownHandle) if self.peers[p].closed => Ok(()),
            Err(e) => Err(self.fail(format_args!("respond failed: {e:?}"))),
        }
    }

    // ------------------------------------------------------------------------ commands

    fn send_request(&mut self, p: usize) -> Result<(), String> {
        let method = Method::pick(&mut self.rng);
        let timeout = match self.rng.below(4) {
            0 => None,
            _ => Some(Duration::from_millis(self.rng.range_inclusive(1, 300))),
        };
        let pad = pad(&mut self.rng);
        let peer = &mut self.peers[p];
        let nonce = peer.next_nonce;
        peer.next_nonce += 1;
        let deadline = self.deadline(p, timeout);
        let peer = &mut self.peers[p];
        let r = peer.conn.send_request(
            self.now,
            Token(nonce),
            method.name(),
            Some(&(nonce, &pad)),
            timeout,
        );
        self.log(|| {
            format!(
                "{:?}: send_request {nonce} {method:?} timeout={timeout:?} -> {r:?}",
                Side::BOTH[p]
            )
        });
        match r {
            Ok(()) => {
                let sent = Sent {
                    method,
                    params: serde_json::json!([nonce, pad]),
                    deadline,
                    refused: false,
                };
                let peer = &mut self.peers[p];
                peer.all_sent.insert(nonce, sent.clone());
                peer.outstanding.insert(nonce, sent);
            }
            Err(SendError::PendingFull) => {
                if self.peers[p].outstanding.len() != PENDING {
                    return Err(self.fail("PendingFull while the table has room"));
                }
            }
            Err(SendError::WouldBlock { .. }) => self.cov.would_block += 1,
            Err(SendError::Closed) if self.peers[p].closed => {}
            Err(e) => return Err(self.fail(format_args!("send_request: {e:?}"))),
        }
        Ok(())
    }

    fn send_notification(&mut self, p: usize) -> Result<(), String> {
        let pad = pad(&mut self.rng);
        let peer = &mut self.peers[p];
        let nonce = peer.next_nonce;
        peer.next_nonce += 1;
        let r = peer.conn.send_notification("note", Some(&(nonce, &pad)));
        self.log(|| format!("{:?}: send_notification {nonce} -> {r:?}", Side::BOTH[p]));
        match r {
            Ok(()) => {
                self.peers[p].notes_sent.insert(nonce);
            }
            Err(SendError::WouldBlock { .. }) => self.cov.would_block += 1,
            Err(SendError::Closed) if self.peers[p].closed => {}
            Err(e) => return Err(self.fail(format_args!("send_notification: {e:?}"))),
        }
        Ok(())
    }

    fn send_batch(&mut self, p: usize) -> Result<(), String> {
        let n = self.rng.range_inclusive(1, MAX_BATCH_ELEMENTS);
        let mut plan = Vec::new();
        for _ in 0..n {
            let nonce = self.peers[p].next_nonce;
            self.peers[p].next_nonce += 1;
            let element = if self.rng.below(3) == 0 {
                None
            } else {
                let timeout = match self.rng.below(3) {
                    0 => None,
                    _ => Some(Duration::from_millis(self.rng.range_inclusive(1, 300))),
                };
                Some((Method::pick(&mut self.rng), timeout))
            };
            plan.push((nonce, element, pad(&mut self.rng)));
        }
        let other = &self.peers[1 - p].conn.config();
        let (other_max, other_batches) = (other.max_batch_len, other.batches);
        let now = self.now;
        let default_timeout = self.peers[p].conn.config().request_timeout;
        let verbose = self.trace.is_some();
        let mut added = Vec::new();
        let mut result = Ok(());
        {
            let peer = &mut self.peers[p];
            match peer.conn.start_batch(now) {
                Ok(mut batch) => {
                    for (nonce, element, pad) in &plan {
                        let params = (nonce, pad);
                        let r = match element {
                            Some((method, timeout)) => {
                                batch.request(Token(*nonce), method.name(), Some(&params), *timeout)
                            }
                            None => batch.notification("note", Some(&params)),
                        };
                        if verbose {
                            println!("  batch element {nonce} {element:?} -> {r:?}");
                        }
                        match r {
                            Ok(()) => added.push((*nonce, *element, pad.clone())),
                            Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {}
                            Err(e) => {
                                result = Err(format!("batch element: {e:?}"));
                                break;
                            }
                        }
                    }
                    batch.finish();
                }
                Err(SendError::WouldBlock { .. }) => {}
                Err(SendError::Closed) if peer.closed => {}
                Err(e) => result = Err(format!("start_batch: {e:?}")),
            }
        }
        result.map_err(|e| self.fail(e))?;
        if added.is_empty() {
            return Ok(());
        }
        let refused = added.len() > other_max || !other_batches;
        self.log(|| {
            format!(
                "{:?}: batch of {} (refused: {refused}) {added:?}",
                Side::BOTH[p],
                added.len()
            )
        });
        self.cov.batches += 1;
        let peer = &mut self.peers[p];
        if refused {
            self.cov.refused_batches += 1;
            peer.refused_batches += 1;
            let (requests, notes) = added.iter().partition(|(_, e, _)| e.is_some());
            let nonces = |v: Vec<&(u64, _, String)>| v.into_iter().map(|(n, _, _)| *n).collect();
            peer.refusable.push((nonces(requests), nonces(notes)));
        }
        for (nonce, element, pad) in added {
            match element {
                Some((method, timeout)) => {
                    let deadline = match timeout.or(default_timeout) {
                        Some(t) => now + t,
                        None => Instant::MAX,
                    };
                    let sent = Sent {
                        method,
                        params: serde_json::json!([nonce, pad]),
                        deadline,
                        refused,
                    };
                    peer.all_sent.insert(nonce, sent.clone());
                    peer.outstanding.insert(nonce, sent);
                }
                None => {
                    if !refused {
                        peer.notes_sent.insert(nonce);
                    }
                }
            }
        }
        Ok(())
    }

    fn cancel(&mut self, p: usize) -> Result<(), String> {
        let peer = &self.peers[p];
        // Mostly an outstanding token, sometimes one that already ended.
        let pick_outstanding = self.rng.below(4) != 0 && !peer.outstanding.is_empty();
        let token = if pick_outstanding {
            *peer
                .outstanding
                .keys()
                .nth(self.rng.index(peer.outstanding.len()))
                .unwrap_or(&0)
        } else if !peer.ended.is_empty() {
            *peer
                .ended
                .keys()
                .nth(self.rng.index(peer.ended.len()))
                .unwrap_or(&0)
        } else {
            return Ok(());
        };
        let r = self.peers[p].conn.cancel(Token(token));
        self.log(|| format!("{:?}: cancel {token} -> {r:?}", Side::BOTH[p]));
        let expected_ok = self.peers[p].outstanding.contains_key(&token);
        match r {
            Ok(()) if expected_ok => {
                self.cov.cancels += 1;
                self.end_token(p, Token(token), End::Cancelled)?;
            }
            Err(CancelError::NotPending) if !expected_ok => {}
            Err(CancelError::NotPending) => {
                // Allowed only for a token that already ended and waits to be reported by
                // poll_event (a timeout or a close): it must come out now.
                self.pump(p)?;
                if self.peers[p].outstanding.contains_key(&token) {
                    return Err(self.fail(format_args!(
                        "cancel({token}) gave NotPending but no event reports the token"
                    )));
                }
            }
            _ => {
                return Err(self.fail(format_args!(
                    "cancel({token}) gave {r:?}, model expected ok={expected_ok}"
                )))
            }
        }
        Ok(())
    }

    /// Peer `p` shuts its writing direction down once everything queued is written (so the
    /// stream ends on a frame boundary); from then on its application answers nothing.
    fn shut_down(&mut self, p: usize) -> Result<(), String> {
        self.pump(p)?;
        if self.peers[p].closed || !self.peers[p].conn.poll_transmit().is_empty() {
            return Ok(());
        }
        self.log(|| format!("{:?}: shuts its writing down", Side::BOTH[p]));
        self.link.shutdown(self.peers[p].side);
        self.peers[p].write_shut = true;
        self.peers[p].held.clear();
        Ok(())
    }

    fn answer_held(&mut self, p: usize, all: bool) -> Result<(), String> {
        if self.peers[p].write_shut {
            return Ok(());
        }
        let mut rounds = if all { self.peers[p].held.len() } else { 1 };
        while rounds > 0 && !self.peers[p].held.is_empty() {
            rounds -= 1;
            let i = self.rng.index(self.peers[p].held.len());
            let held = self.peers[p].held.swap_remove(i);
            self.cov.deferred_answers += 1;
            self.log(|| format!("{:?}: answer held {:?}", Side::BOTH[p], held.method));
            self.answer(p, held)?;
            self.pump(p)?;
        }
        Ok(())
    }

    fn advance(&mut self, to: Instant) -> Result<(), String> {
        if to > self.now {
            self.now = to;
        }
        for p in 0..2 {
            if self.peers[p].closed {
                continue;
            }
            if self.peers[p]
                .conn
                .poll_timeout()
                .is_some_and(|t| t <= self.now)
            {
                self.peers[p].conn.handle_timeout(self.now);
            }
            self.pump(p)?;
            // poll_timeout must have announced every deadline, and handle_timeout expired it.
            let peer = &self.peers[p];
            if let Some((t, s)) = peer
                .outstanding
                .iter()
                .find(|(_, s)| s.deadline <= self.now)
            {
                return Err(self.fail(format_args!(
                    "token {t} outlived its deadline {}us",
                    s.deadline.as_micros()
                )));
            }
        }
        Ok(())
    }

    /// The next instant something happens by itself.
    fn next_event(&self) -> Option<Instant> {
        let mut next = self.link.poll_timeout();
        for peer in &self.peers {
            if !peer.closed {
                if let Some(t) = peer.conn.poll_timeout() {
                    next = Some(next.map_or(t, |n| n.min(t)));
                }
            }
        }
        next
    }

    /// Flushes, delivers and handles input on both peers until nothing moves.
    fn service(&mut self) -> Result<bool, String> {
        let mut any = false;
        for _ in 0..64 {
            let mut progressed = false;
            for p in 0..2 {
                progressed |= self.pump(p)?;
                progressed |= self.deliver(p)?;
                if !self.peers[p].closed {
                    progressed |= self.handle_input(p)?;
                }
                progressed |= self.pump(p)?;
            }
            any |= progressed;
            if !progressed {
                break;
            }
        }
        Ok(any)
    }

    // ------------------------------------------------------------------------ the run

    fn run(mut self) -> Result<Coverage, String> {
        let steps = self.rng.range_inclusive(20, 120);
        for _ in 0..steps {
            let p = self.rng.index(2);
            let mute = self.peers[p].write_shut;
            let deaf = mute || self.peers[p].eof;
            if self.mode == Mode::HalfClose && !deaf && self.rng.below(40) == 0 {
                self.shut_down(p)?;
            }
            match self.rng.below(100) {
                0..=24 if !deaf => self.send_request(p)?,
                25..=33 if !mute => self.send_notification(p)?,
                34..=40 if !deaf => self.send_batch(p)?,
                41..=45 => self.cancel(p)?,
                46..=57 if !mute => self.answer_held(p, false)?,
                58..=79 => {
                    self.deliver(p)?;
                    self.pump(p)?;
                }
                80..=89 => {
                    let dt = Duration::from_micros(self.rng.range_inclusive(0, 40_000));
                    self.advance(self.now + dt)?;
                }
                _ => {
                    if let Some(t) = self.next_event() {
                        self.advance(t)?;
                    }
                }
            }
            for p in 0..2 {
                self.pump(p)?;
            }
        }
        self.settle()?;
        self.finish()
    }

    /// Stops injecting faults (except a scheduled drop that already happened), answers every
    /// held request and runs until nothing moves.
    fn settle(&mut self) -> Result<(), String> {
        self.log(|| "settle".into());
        self.settling = true;
        let mut config = *self.link.config();
        config.faults = Faults {
            drop_at: None,
            ..Faults::NONE
        };
        self.link.set_config(config);
        for round in 0..SETTLE_ROUNDS {
            let mut progressed = self.service()?;
            for p in 0..2 {
                if !self.peers[p].held.is_empty() {
                    let before = self.peers[p].held.len();
                    self.answer_held(p, true)?;
                    progressed |= self.peers[p].held.len() < before;
                }
            }
            if self.settle_problems > SETTLE_PROBLEMS {
                return Err(self.fail(format_args!(
                    "{} peer problems while settling without faults: the peers feed each other garbage",
                    self.settle_problems
                )));
            }
            if progressed {
                continue;
            }
            // Wait for bytes in flight (not for request deadlines: those are the peers'
            // business, and settling must not time out requests a fault-free run answers).
            match self.link.poll_timeout() {
                Some(t) if t > self.now => self.advance(t)?,
                Some(_) => {
                    if round + 1 == SETTLE_ROUNDS {
                        break;
                    }
                }
                None => {
                    // A peer that shut its writing down may stay blocked on replies it can
                    // never send.
                    let blocked = self.peers.iter().any(|p| {
                        !p.closed
                            && !p.write_shut
                            && (p.conn.is_input_blocked() || !p.held.is_empty())
                    });
                    if !blocked {
                        return Ok(());
                    }
                }
            }
        }
        let state: Vec<String> = self
            .peers
            .iter()
            .map(|p| {
                format!(
                    "{:?}: {:?} rx={} held={}",
                    p.side,
                    p.conn,
                    p.rx.buffered(),
                    p.held.len()
                )
            })
            .collect();
        Err(self.fail(format_args!(
            "no quiescence after {SETTLE_ROUNDS} settle rounds (livelock or deadlock): link queued A->B {} B->A {}, {state:?}",
            self.link.queued(Side::B),
            self.link.queued(Side::A)
        )))
    }

    fn finish(mut self) -> Result<Coverage, String> {
        if self.mode == Mode::Clean {
            self.check_complete()?;
        }
        for p in 0..2 {
            if !self.peers[p].closed {
                self.close_peer(p, LinkError::Closed)?;
            }
            self.pump(p)?;
            let peer = &self.peers[p];
            if !peer.outstanding.is_empty() || peer.conn.pending_len() != 0 {
                return Err(self.fail(format_args!(
                    "peer {:?}: tokens never came back after close: {:?}",
                    peer.side,
                    peer.outstanding.keys().collect::<Vec<_>>()
                )));
            }
            if peer.conn.inflight_len() != 0 {
                return Err(self.fail("in-flight requests survived close"));
            }
        }
        let stats = self.link.stats();
        self.cov.corrupted += stats.corrupted;
        self.cov.truncated += stats.truncated;
        Ok(self.cov)
    }

    /// Fault-free run, settled: everything sent arrived and was answered exactly once.
    fn check_complete(&self) -> Result<(), String> {
        for p in 0..2 {
            let me = &self.peers[p];
            let other = &self.peers[1 - p];
            if let Some((t, s)) = me.outstanding.iter().find(|(_, s)| !s.refused) {
                return Err(self.fail(format_args!(
                    "peer {:?}: token {t} ({s:?}) never answered",
                    me.side
                )));
            }
            let answers = |nonce: &u64| {
                me.tap
                    .request_ids
                    .iter()
                    .find(|(_, n)| *n == nonce)
                    .map_or(0, |(id, _)| {
                        other.tap.responses.get(id).copied().unwrap_or(0)
                    })
            };
            for (id, nonce) in &me.tap.request_ids {
                let refused = me.all_sent.get(nonce).is_some_and(|s| s.refused);
                let n = answers(nonce);
                if n > 1 || (n == 0 && !refused) {
                    return Err(self.fail(format_args!(
                        "request id {id} (nonce {nonce}, refusable batch: {refused}) answered {n} times"
                    )));
                }
            }
            // A refusable batch is refused whole (one null-id reply, no answer per request)
            // or answered whole (Server busy per request, notifications delivered).
            let (mut refused_whole, mut notes_only) = (0, 0);
            let mut maybe_notes = BTreeSet::new();
            for (requests, notes) in &me.refusable {
                let answered: Vec<u32> = requests.iter().map(answers).collect();
                if requests.is_empty() {
                    notes_only += 1;
                } else if answered.iter().all(|&n| n == 0) {
                    refused_whole += 1;
                } else if !answered.iter().all(|&n| n == 1) {
                    return Err(self.fail(format_args!(
                        "a refusable batch {requests:?} was answered in part: {answered:?}"
                    )));
                }
                maybe_notes.extend(notes.iter().copied());
            }
            let nulls = other.tap.null_responses;
            if nulls < refused_whole || nulls > refused_whole + notes_only {
                return Err(self.fail(format_args!(
                    "{nulls} null-id replies for {refused_whole} refused batches (+{notes_only} of notifications only)"
                )));
            }
            if !me.notes_sent.is_subset(&other.notes_received) {
                let missing: Vec<_> = me.notes_sent.difference(&other.notes_received).collect();
                return Err(self.fail(format_args!("notifications lost: {missing:?}")));
            }
            let extra: Vec<_> = other
                .notes_received
                .difference(&me.notes_sent)
                .filter(|n| !maybe_notes.contains(n))
                .collect();
            if !extra.is_empty() {
                return Err(self.fail(format_args!(
                    "notifications never sent were delivered: {extra:?}"
                )));
            }
            if !me.held.is_empty() || me.conn.inflight_len() != 0 {
                return Err(self.fail("requests left unanswered after settling"));
            }
        }
        Ok(())
    }
}

/// An inbound item copied out of the receive buffer.
enum OwnedInbound {
    Request {
        handle: RequestHandle,
        method: String,
        params: Option<String>,
        duplicate: bool,
    },
    Notification {
        method: String,
        params: Option<String>,
    },
    Response {
        token: Token,
        outcome: Result<Value, (i32, Option<Value>)>,
    },
    Problem(OwnedProblem),
}

#[derive(Debug)]
enum OwnedProblem {
    Busy,
    BatchRefusal(String),
    UnknownResponse { id: String, is_error: bool },
    Other(String),
}

fn json(raw: RawJson<'_>) -> Value {
    serde_json::from_str(raw.as_str()).unwrap_or(Value::Null)
}

impl From<Inbound<'_>> for OwnedInbound {
    fn from(item: Inbound<'_>) -> Self {
        match item {
            Inbound::Request(r) => OwnedInbound::Request {
                handle: r.handle,
                method: r.method.to_string_lossy(),
                params: r.params.map(|p| p.as_str().to_owned()),
                duplicate: r.duplicate,
            },
            Inbound::Notification(n) => OwnedInbound::Notification {
                method: n.method.to_string_lossy(),
                params: n.params.map(|p| p.as_str().to_owned()),
            },
            Inbound::Response(r) => OwnedInbound::Response {
                token: r.token,
                outcome: match r.outcome {
                    Ok(v) => Ok(json(v)),
                    Err(e) => Err((e.code.0, e.data.map(json))),
                },
            },
            Inbound::Problem(Problem::Busy(_)) => OwnedInbound::Problem(OwnedProblem::Busy),
            Inbound::Problem(p @ (Problem::BatchTooLarge { .. } | Problem::BatchRefused)) => {
                OwnedInbound::Problem(OwnedProblem::BatchRefusal(format!("{p:?}")))
            }
            // An error with id null that no single waiting request could take.
            Inbound::Problem(Problem::PeerError(_)) => {
                OwnedInbound::Problem(OwnedProblem::UnknownResponse {
                    id: "null".to_owned(),
                    is_error: true,
                })
            }
            Inbound::Problem(Problem::UnknownResponse(r)) => {
                OwnedInbound::Problem(OwnedProblem::UnknownResponse {
                    id: r.id.raw().to_owned(),
                    is_error: r.outcome.is_err(),
                })
            }
            Inbound::Problem(other) => {
                OwnedInbound::Problem(OwnedProblem::Other(format!("{other:?}")))
            }
        }
    }
}

/// Runs one scenario; a panic is turned into a failure that names the seed.
fn run_seed(seed: u64, verbose: bool) -> Result<Coverage, String> {
    let outcome = std::panic::catch_unwind(|| {
        let mut rng = SplitMix64::new(seed);
        match rng.below(3) {
            0 => Sim::<256>::new(seed, rng, verbose).run(),
            1 => Sim::<1024>::new(seed, rng, verbose).run(),
            _ => Sim::<8192>::new(seed, rng, verbose).run(),
        }
    });
    match outcome {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!(
                "sim seed {seed}: PANIC: {msg}\n  replay: RPCWIRE_SEED={seed} cargo test -p rpcwire-tests --test sim_two_peers -- --nocapture"
            ))
        }
    }
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| {
        let v = v.trim();
        match v.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16).ok(),
            None => v.parse().ok(),
        }
    })
}

/// Runs shard `shard` of the seed range and checks that it exercised everything.
fn run_shard(shard: u64) {
    if let Some(seed) = env_u64("RPCWIRE_SEED") {
        // Replay mode: one scenario with a trace (only the first shard runs it).
        if shard == 0 {
            match run_seed(seed, true) {
                Ok(cov) => println!("seed {seed} passed: {cov:?}"),
                Err(e) => panic!("{e}"),
            }
        }
        return;
    }
    let per_shard = env_u64("RPCWIRE_SIM_SCENARIOS").unwrap_or(2_500);
    let base = env_u64("RPCWIRE_SIM_BASE").unwrap_or(0x5EED_0000);
    let mut total = Coverage::default();
    let mut failures = Vec::new();
    for i in 0..per_shard {
        let seed = base + shard * 1_000_000 + i;
        match run_seed(seed, false) {
            Ok(cov) => total.add(&cov),
            Err(e) => {
                failures.push(e);
                if failures.len() >= 5 {
                    break;
                }
            }
        }
    }
    if !failures.is_empty() {
        let mut report = String::new();
        for f in &failures {
            let _ = writeln!(report, "{f}");
        }
        panic!("{} failing scenario(s):\n{report}", failures.len());
    }
    println!("shard {shard}: {total:?}");
    if per_shard >= 500 {
        // The suite must exercise every behaviour it claims to cover.
        let c = total;
        for (what, n) in [
            ("line framing", c.line),
            ("content-length framing", c.content_length),
            ("responses", c.responses),
            ("error responses", c.error_responses),
            ("busy", c.busy),
            ("timeouts", c.timeouts),
            ("cancels", c.cancels),
            ("closed failures", c.closed),
            ("batches", c.batches),
            ("refused batches", c.refused_batches),
            ("notifications", c.notifications),
            ("late responses", c.unknown_responses),
            ("deferred answers", c.deferred_answers),
            ("backpressure", c.would_block),
            ("corruption", c.corrupted),
            ("truncation", c.truncated),
            ("broken links", c.broken),
            ("parse errors", c.parse_errors),
            ("half closes", c.half_closes),
        ] {
            assert!(n > 0, "shard {shard} never exercised {what}: {c:?}");
        }
    }
}

#[test]
fn sim_shard_0() {
    run_shard(0);
}

#[test]
fn sim_shard_1() {
    run_shard(1);
}

#[test]
fn sim_shard_2() {
    run_shard(2);
}

#[test]
fn sim_shard_3() {
    run_shard(3);
}

#[test]
fn sim_is_deterministic() {
    for seed in [1, 2, 3, 0xDEAD_BEEF] {
        let a = run_seed(seed, false).map(|c| format!("{c:?}"));
        let b = run_seed(seed, false).map(|c| format!("{c:?}"));
        assert_eq!(a, b, "seed {seed} is not reproducible");
    }
}
