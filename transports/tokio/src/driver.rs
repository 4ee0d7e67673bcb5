//! The driver: one task per connection that owns the core
//! [`Connection`](rpcwire::Connection) and its receive buffer and moves bytes, time and
//! commands between tokio and the core.
//!
//! It `select!`s on: control messages (cancel, shutdown), handler completions, the socket
//! being writable (when the core has bytes to send, or a flush is due), the socket being
//! readable (straight into the core's receive buffer), client commands, and the core's next
//! deadline. After each, it runs [`Driver::step`]: feed buffered input to the core and dispatch
//! what comes out, retry answers and commands that waited for room, start queued handlers, and
//! deliver events. Reading and writing are independent, so two peers that flood each other
//! never deadlock on full socket buffers, and responses are read even when every handler slot
//! is busy.

use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Instant as StdInstant;

use rpcwire::wire::{RawJson, RxBuffer};
use rpcwire::{
    Config, ErrorCode, Event, Failure, Inbound, Input, Instant, RequestHandle, SendError, Token,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};

use crate::caller::Caller;
use crate::client::{BatchCmd, BatchItem, Command, Reply, SessionStats};
use crate::controls::{Control, ControlInbox};
use crate::handlers::{id_key, Handlers};
use crate::ratelimit::RateLimiter;
use crate::raw::Raw;
use crate::read_buffer::ReadBuffer;
use crate::router::{forbidden, rate_limited, Conn, Found, Origin, OriginId};
use crate::telemetry::{self, Rejection};
use crate::{CallError, Client, DriverError, Router, RpcError};
use std::cell::OnceCell;
use tracing::Instrument;

/// The most of our calls on the wire at once per connection (more wait in line for a free
/// slot: backpressure on the clients, never an error). The table grows only as calls are
/// made, so the limit costs nothing until used.
pub(crate) const PENDING: usize = 256;
/// The most inbound requests open at once per connection: more are answered Server busy.
/// Larger than any handler concurrency limit, so that requests beyond that limit wait in it.
pub(crate) const INFLIGHT: usize = 1024;

/// The read size, and receive buffer, of a new connection and of one quiet for
/// `Settings::idle_release`: a read needs a buffer to read into (a generic `AsyncRead` has no
/// wait for readability alone), and each of the thousands of idle connections of a server
/// keeps one. Small messages never need more; the first read that fills it goes to
/// [`READ_MIN`].
const READ_IDLE: usize = 512;
/// The read size of a connection whose reads fill their buffer; reads that fill it double it,
/// up to [`READ_MAX`], and a short read after a burst brings it back here.
const READ_MIN: usize = 4 << 10;
/// The largest read. Receive buffers above 16 KiB are given back once empty, so reads stay
/// at or below it.
const READ_MAX: usize = 32 << 10;

/// Input is handled while fewer than this many bytes wait to be written (well below the core's
/// 16 KiB of queued frames, so that an answer written in place nearly always fits).
const TX_HIGH_WATER: usize = 24 << 10;

/// A profile's cancel notification: its method and the params member naming the request's id
/// (`$/cancelRequest` / `id` for LSP, `notifications/cancelled` / `requestId` for MCP).
#[derive(Debug, Clone)]
pub(crate) struct CancelProfile {
    pub(crate) method: String,
    pub(crate) id_member: String,
    /// A request the peer cancelled still gets its handler's answer (LSP); when false it is
    /// released with none (MCP).
    pub(crate) answer: bool,
}

/// The params of a cancel notification: `{"<member>": <id>}`.
struct CancelParams<'a> {
    member: &'a str,
    id: u64,
}

impl serde::Serialize for CancelParams<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(self.member, &self.id)?;
        map.end()
    }
}

/// Everything the driver needs from the [`Builder`](crate::Builder).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) config: Config,
    pub(crate) concurrency: usize,
    pub(crate) queue_bytes: usize,
    pub(crate) idle_release: std::time::Duration,
    /// The profile's cancel notification, if any.
    pub(crate) cancel: Option<CancelProfile>,
    pub(crate) router: Option<Arc<Router>>,
    /// Who is at the other end (see [`Builder::caller`](crate::Builder::caller)).
    pub(crate) caller: Arc<Caller>,
    /// The rate limiter and this connection's key in it ([`Builder::rate_limit`](crate::Builder::rate_limit)).
    pub(crate) limiter: Option<(Arc<RateLimiter>, Box<str>)>,
    /// Where outgoing calls' trace contexts go ([`Builder::outgoing_traces`](crate::Builder::outgoing_traces)).
    pub(crate) outgoing_traces: Option<crate::trace_context::OutgoingTraces>,
    /// Whether batches get a span of their own ([`Builder::batch_spans`](crate::Builder::batch_spans)).
    pub(crate) batch_spans: bool,
}

impl Settings {
    /// Takes one call from the caller's rate-limit bucket: true when there was none left.
    fn over_rate_limit(&self) -> bool {
        self.limiter
            .as_ref()
            .is_some_and(|(limiter, key)| limiter.check(key, std::time::Instant::now()).is_err())
    }
}

/// The channels between the handles and the driver.
pub(crate) struct Channels {
    pub(crate) cmd: mpsc::Receiver<Command>,
    pub(crate) ctl: ControlInbox,
    /// Handed to handlers (set when there is a router; keeps the channels open).
    pub(crate) peer: Option<Client>,
}

/// A different first request id for every connection of every process (time, process id and
/// a counter), so that a late answer meant for an earlier process or connection on the same
/// line cannot be taken for one of ours.
fn id_seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed =
        nanos ^ (u64::from(std::process::id()) << 20) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
    // Keep ids short: 24 bits of variety are plenty to tell connections apart.
    mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40
}

/// An inbound request or notification waiting for a handler slot.
struct Job {
    /// `None` for a notification.
    handle: Option<RequestHandle>,
    id: Option<String>,
    method: String,
    params: Option<String>,
    /// Bytes it holds (counted against the queue budget).
    cost: usize,
    /// The batch it came in, when batches are traced (see `batch_trace`).
    batch: Option<crate::batch_trace::Member>,
}

/// Why input stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputState {
    Open,
    /// End of stream or shutdown: answer what was received, then close.
    Draining,
}

/// The steps after input ends, taken once everything buffered has been decoded (the buffer
/// may hold complete frames that wait for transmit room).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Nothing (input is open, or the steps are done).
    No,
    /// Mark the receive buffer's end ([`RxBuffer::finish`]), then decode again.
    Finish,
    /// Fail our pending calls
    /// ([`Connection::fail_pending`](rpcwire::Connection::fail_pending)): their responses
    /// could only have been in what was buffered.
    FailPending,
}

struct Driver {
    conn: Conn,
    /// The core's receive buffer: what the core takes the copying way (a batch, a partial
    /// frame, content-length framing; see `read_buffer`).
    rx: RxBuffer<Vec<u8>>,
    /// What was read and not yet given to the core.
    read: ReadBuffer,
    /// The bytes last given to the core ended with a blank line: with line framing that may
    /// be the end of a `Content-Length` block, whose body need not end with a line end (so
    /// the next bytes are given whole, see `process_input`).
    after_blank_line: bool,
    /// The next read size (adaptive: [`READ_IDLE`], then [`READ_MIN`] to [`READ_MAX`] while
    /// reads fill it).
    read_size: usize,
    origin: StdInstant,
    settings: Settings,
    peer: Option<Client>,
    /// Our calls on the wire, by token.
    calls: HashMap<Token, oneshot::Sender<Reply>>,
    /// A command that found no room (pending table or transmit buffer full), retried after
    /// progress; while it waits, no further commands are taken (backpressure on clients).
    stalled: Option<Command>,
    queue: VecDeque<Job>,
    queued_bytes: usize,
    /// Handlers not finished, and answers waiting for transmit room.
    handlers: Handlers,
    input: InputState,
    /// What is left to do once everything buffered is decoded after input ended.
    ending: Ending,
    /// Bytes written since the last flush.
    dirty: bool,
    /// Position in the router of the method called last (see `process_input`).
    last_method: Option<usize>,
    /// The first frame that was not JSON has been logged at warn level.
    warned_garbage: bool,
    /// The span of the batch being received (while spans are listened to), and the sizes of
    /// the batches received, for their histogram (while metrics are recorded).
    batch_trace: crate::batch_trace::BatchTrace,
    /// Since when nothing is buffered, queued or running (memory is given back after
    /// `Settings::idle_release` of it).
    idle_since: Option<StdInstant>,
}

async fn write_or_flush<W: AsyncWrite + Unpin>(w: &mut W, buf: &[u8]) -> io::Result<usize> {
    if buf.is_empty() {
        w.flush().await?;
        return Ok(0);
    }
    match w.write(buf).await? {
        0 => Err(io::ErrorKind::WriteZero.into()),
        n => Ok(n),
    }
}

/// Runs a connection to its end.
///
/// Not an `async fn`: the driver is built here and moved into the returned future, which then
/// holds it once. An `async fn` keeps its arguments for its whole life, beside the driver they
/// were moved into: 968 bytes more in every open connection's task.
pub(crate) fn run<R, W>(
    settings: Settings,
    mut reader: R,
    mut writer: W,
    channels: Channels,
) -> impl Future<Output = Result<(), DriverError>> + Send
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    // With a cancel profile the clients keep every deadline (they already time every call
    // from the moment it is made): a call given up on then reaches the driver as a
    // cancellation while still pending, so that the peer can be told which request to drop.
    let config = match settings.cancel {
        Some(_) => rpcwire::Config {
            request_timeout: None,
            ..settings.config
        },
        None => settings.config,
    };
    let mut conn = Conn::new(config);
    conn.seed_ids(id_seed());
    let rx = conn.rx_buffer();
    let Channels {
        cmd: mut cmd_rx,
        ctl: ctl_rx,
        peer,
    } = channels;
    let handlers = Handlers::new(settings.cancel.as_ref().is_none_or(|c| c.answer));
    let batch_trace = crate::batch_trace::BatchTrace::new(settings.batch_spans);
    let mut d = Driver {
        conn,
        rx,
        // The first read's storage from the start: a connection holds the same when fresh as
        // when idle (`release_idle` keeps this much for the read that waits).
        read: ReadBuffer::with_capacity(READ_IDLE),
        after_blank_line: false,
        read_size: READ_IDLE,
        origin: clock_now(),
        settings,
        peer,
        calls: HashMap::new(),
        stalled: None,
        queue: VecDeque::new(),
        queued_bytes: 0,
        handlers,
        input: InputState::Open,
        ending: Ending::No,
        dirty: false,
        last_method: None,
        warned_garbage: false,
        batch_trace,
        idle_since: None,
    };
    let (scope, span) = telemetry::ConnectionScope::open(&d.settings.caller);
    async move {
        let _scope = scope;
        let mut cmd_open = true;
        loop {
            // Controls first (as `Control` promises): a setting changed by a handler applies to
            // all input read after it.
            while let Some(ctl) = ctl_rx.try_recv() {
                d.on_control(ctl);
            }
            d.step();
            if d.finished() {
                break;
            }
            let mut release_at = d.idle_release_at();
            if release_at.is_some() && d.settings.idle_release.is_zero() {
                // Zero: give it back as soon as the connection is quiet, with no timer (short-lived
                // connections, such as one HTTP request's).
                d.release_idle();
                release_at = None;
            }
            let has_tx = !d.conn.poll_transmit().is_empty();
            let want_write = has_tx || d.dirty;
            // Reading goes on while handling is paused for transmit room (up to what the receive
            // buffer may hold): two peers that flood each other must not both stop reading.
            let can_read = d.input == InputState::Open
                && !d.conn.is_input_blocked()
                && d.read.pending() < d.read_limit();
            let deadline = d
                .conn
                .poll_timeout()
                .map(|at| at.to_std(d.origin))
                .into_iter()
                .chain(release_at)
                .min()
                .map(tokio::time::Instant::from_std);
            let take_cmds = cmd_open && d.stalled.is_none();
            let has_tasks = !d.handlers.tasks().is_empty();

            tokio::select! {
                // Taken at the top of the loop.
                () = ctl_rx.queued() => {}
                done = d.handlers.tasks().join_next(), if has_tasks => {
                    if let Some(done) = done {
                        d.handlers.finished(done);
                    }
                    while let Some(done) = d.handlers.tasks().try_join_next() {
                        d.handlers.finished(done);
                    }
                },
                res = write_or_flush(&mut writer, d.conn.poll_transmit()), if want_write => {
                    match res {
                        Ok(0) => d.dirty = false,
                        Ok(n) => {
                            d.conn.advance_transmit(n);
                            telemetry::bytes_out(n);
                            d.dirty = true;
                        }
                        // The peer closed both directions after its last message: what is left to
                        // write has no reader. That is the peer leaving, not a failure. The write
                        // may find it gone before the read sees its end of stream (both are ready
                        // at once), so an open input is looked at once more, without waiting.
                        Err(e)
                            if peer_gone(&e)
                                && (d.input == InputState::Draining || input_ended(&mut reader)) =>
                        {
                            tracing::debug!(error = %e, "the peer left before reading our last answers");
                            let _ = d.fail(e);
                            return Ok(());
                        }
                        Err(e) => return d.fail(e),
                    }
                },
                res = read_some(&mut reader, &mut d.read, d.read_size), if can_read => match res {
                    Ok(0) => d.end_of_input("end of stream"),
                    Ok(n) => {
                        telemetry::bytes_in(n);
                        d.on_read(n);
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        tracing::debug!(error = %e, "read failed");
                        d.end_of_input("read error");
                    }
                },
                cmd = cmd_rx.recv(), if take_cmds => match cmd {
                    Some(cmd) => {
                        d.on_command(cmd);
                        // Take what else is queued, up to a bound, before writing.
                        for _ in 0..64 {
                            if d.stalled.is_some() {
                                break;
                            }
                            match cmd_rx.try_recv() {
                                Ok(cmd) => d.on_command(cmd),
                                Err(_) => break,
                            }
                        }
                    }
                    None => {
                        cmd_open = false;
                        // Every client is gone and nobody can call us: finish.
                        if d.peer.is_none() {
                            d.end_of_input("all clients dropped");
                        }
                    }
                },
                () = sleep_until(deadline), if deadline.is_some() => {
                    let now = d.now();
                    d.conn.handle_timeout(now);
                    if release_at.is_some_and(|at| clock_now() >= at) {
                        d.release_idle();
                    }
                },
                else => {
                    // Unreachable by construction (finished() ends the loop first); never spin.
                    tracing::warn!("connection has nothing left to wait for");
                    break;
                }
            }
        }
        d.conn.close();
        d.deliver_events();
        if let Err(e) = writer.shutdown().await {
            tracing::debug!(error = %e, "shutdown of the write side failed");
        }
        Ok(())
    }
    .instrument(span)
}

/// Writes a whole batch into the core, or nothing (an unfinished batch sends nothing).
fn encode_batch(
    conn: &mut Conn,
    now: Instant,
    items: &[BatchItem],
    client_deadlines: bool,
) -> Result<(), SendError> {
    let mut batch = conn.start_batch(now)?;
    for item in items {
        match item {
            BatchItem::Call(c) => {
                let params = c.params.as_deref().map(Raw);
                let timeout = if client_deadlines { None } else { c.timeout };
                batch.request(c.token, &c.method, params.as_ref(), timeout)?;
            }
            BatchItem::Notify { method, params } => {
                let params = params.as_deref().map(Raw);
                batch.notification(method, params.as_ref())?;
            }
        }
    }
    batch.finish();
    Ok(())
}

/// A write error that says the peer has gone (closed its reading side).
fn peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::ConnectionReset
    )
}

/// Whether the peer's input has ended, read without waiting: after a write found the peer
/// gone, a peer that closed the whole connection shows its end of stream at once; one that
/// still writes (it closed only its reading side), or reset the connection, does not. What it
/// sent before its end is dropped unread: no answer to it could reach the peer. At most
/// `INPUT_ENDED_MAX` bytes are read. Not `async`: the scratch buffer stays off the driver's
/// future.
fn input_ended<R: AsyncRead + Unpin>(reader: &mut R) -> bool {
    const INPUT_ENDED_MAX: usize = 64 << 10;
    let mut scratch = [0u8; 512];
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..INPUT_ENDED_MAX / scratch.len() {
        let mut buf = tokio::io::ReadBuf::new(&mut scratch);
        match std::pin::Pin::new(&mut *reader).poll_read(&mut cx, &mut buf) {
            std::task::Poll::Ready(Ok(())) if buf.filled().is_empty() => return true,
            std::task::Poll::Ready(Ok(())) => {}
            std::task::Poll::Ready(Err(_)) | std::task::Poll::Pending => return false,
        }
    }
    false
}

/// The start of a frame, for a log line: at most 80 characters, control characters escaped.
fn preview(frame: &[u8]) -> String {
    let text = String::from_utf8_lossy(frame.get(..80).unwrap_or(frame));
    let mut shown: String = text.escape_debug().collect();
    if frame.len() > 80 {
        shown.push_str("...");
    }
    shown
}

/// Whether `bytes` end with a blank line (`None` when empty): with line framing, perhaps the
/// end of a `Content-Length` block.
fn ends_with_blank_line(bytes: &[u8]) -> Option<bool> {
    let (&last, before) = bytes.split_last()?;
    let before = before.strip_suffix(b"\r").unwrap_or(before);
    Some(last == b'\n' && (before.is_empty() || before.ends_with(b"\n")))
}

/// How many bytes of `fed` the core took (those before `left`), noting whether they ended
/// with a blank line.
fn given(after_blank_line: &mut bool, fed: &[u8], left: &[u8]) -> usize {
    let taken = fed.len() - left.len();
    if let Some(blank) = ends_with_blank_line(&fed[..taken]) {
        *after_blank_line = blank;
    }
    taken
}

/// Reads at most `max` bytes into the read buffer. An `async fn`, so that the room is made
/// only when the read is polled (`select!` builds the future of a disabled branch too).
async fn read_some<R: AsyncRead + Unpin>(
    reader: &mut R,
    read: &mut ReadBuffer,
    max: usize,
) -> io::Result<usize> {
    reader.read(read.spare(max)).await
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// The driver's clock: tokio's, so that a paused test clock (`tokio::time::pause`, as
/// rpcwire-testkit runs) drives timeouts and idle release as it drives the timers they wait
/// on. Reading the system clock instead made a timer that fired in virtual time find its
/// deadline not yet reached in real time, and the loop spin until it was.
pub(crate) fn clock_now() -> StdInstant {
    tokio::time::Instant::now().into_std()
}

impl Driver {
    fn now(&self) -> Instant {
        Instant::from_std(self.origin, clock_now())
    }

    /// When to give back the memory of an idle connection: `idle_release` after it last had
    /// anything buffered, queued or running, if it holds more than an idle one needs.
    fn idle_release_at(&mut self) -> Option<StdInstant> {
        let quiet = self.rx.buffered() == 0
            && self.read.pending() == 0
            && self.conn.poll_transmit().is_empty()
            && self.handlers.running() == 0
            && self.queue.is_empty()
            && self.conn.inflight_len() == 0;
        if !quiet {
            self.idle_since = None;
            return None;
        }
        let holding = self.read.capacity() > READ_IDLE
            || self.rx.capacity() > 0
            || self.conn.storage_bytes() > 0;
        if !holding {
            return None;
        }
        let since = *self.idle_since.get_or_insert_with(clock_now);
        Some(since + self.settings.idle_release)
    }

    /// Gives back what an idle connection does not need: the transmit queue, tables and
    /// batch buffer entirely, the receive buffer down to one small read.
    fn release_idle(&mut self) {
        self.conn.shrink();
        // Reads go into the read buffer: the receive buffer needs no room of its own.
        self.rx.shrink(0);
        self.read.shrink(READ_IDLE);
        self.read_size = READ_IDLE;
        self.idle_since = None;
    }

    /// Everything that needs no waiting, until nothing moves.
    fn step(&mut self) {
        self.deliver_events();
        self.handlers.write_answers(&mut self.conn);
        self.retry_stalled();
        self.process_input();
        self.start_jobs();
        self.handlers.write_answers(&mut self.conn);
        self.deliver_events();
        // Responses and events just freed pending slots: a command that waited for one must
        // be retried now, as nothing else may wake the driver (no answer is due any more).
        self.retry_stalled();
    }

    /// The most bytes read and not yet given to the core before reading stops: as many as the
    /// receive buffer may hold (a frame of the largest size and its line end), and a few
    /// reads' worth at least. (Counted apart from the receive buffer's: a line longer than a
    /// read goes there and is skipped only once it is over the maximum, so the two together
    /// must be able to hold more than a maximum frame.)
    fn read_limit(&self) -> usize {
        self.rx.max_frame().saturating_add(2).max(2 * READ_MAX)
    }

    /// Input has ended and everything received is answered and flushed.
    fn finished(&mut self) -> bool {
        self.input == InputState::Draining
            && self.ending == Ending::No
            && self.queue.is_empty()
            && self.handlers.running() == 0
            && !self.dirty
            && self.conn.poll_transmit().is_empty()
    }

    /// A read of `n` bytes arrived: commit it, and read more at once next time if it filled
    /// the buffer (a peer that pipelines).
    fn on_read(&mut self, n: usize) {
        self.read.commit(n);
        if n >= self.read_size {
            self.read_size = (self.read_size * 2).clamp(READ_MIN, READ_MAX);
        } else if n < self.read_size / 2 {
            // The burst is over: smaller reads again (the buffer itself is given back once the
            // connection is idle).
            self.read_size = self.read_size.min(READ_MIN);
        }
    }

    /// Feeds buffered input to the core and dispatches every inbound item.
    ///
    /// A request is handled in place when a handler slot is free: its params are decoded
    /// from the receive buffer and a handler that finishes at once writes its result straight
    /// into the transmit queue. Only handlers that wait get a task; requests beyond the
    /// concurrency limit wait in a queue (as owned copies).
    ///
    /// Inlined into its one caller whatever else the binary holds (the `metrics` feature's
    /// code made the compiler keep it apart).
    #[inline(always)]
    fn process_input(&mut self) {
        // Also the start of the calls handled in place below (their durations are timed from
        // the read that brought them): one clock read per wakeup, not one per call.
        let received = clock_now();
        let now = Instant::from_std(self.origin, received);
        let received = telemetry::Received::at(received);
        let Driver {
            conn,
            rx,
            read,
            after_blank_line,
            settings,
            peer,
            calls,
            queue,
            queued_bytes,
            ending,
            handlers,
            last_method,
            warned_garbage,
            batch_trace,
            ..
        } = self;
        // With line framing the core is given whole lines only: a line cut by the end of the
        // last read waits here for the rest (see `read_buffer`), unless it is already longer
        // than a read may be (the core's receive buffer then takes it, and judges its length),
        // the core may be in the middle of a frame (part of it in the receive buffer, or a
        // `Content-Length` block read, which line framing reads too, and its body to come: the
        // bytes go after it, line end or not), or input has ended (a last line without its
        // newline is still a line).
        let whole_lines = *ending == Ending::No
            && rx.framing() == rpcwire::wire::Framing::Line
            && rx.buffered() == 0
            && !*after_blank_line
            && read.partial() <= READ_MAX;
        let mut fed = read.input(whole_lines);
        let mut input = fed;
        // What the receive buffer holds comes before `input`: it is decoded first, until it
        // asks for more.
        let mut rx_first = true;
        loop {
            if conn.transmit_len() >= TX_HIGH_WATER {
                // Answers are written straight into the transmit queue: handle more input once
                // it has been written out, so that answers never wait as copies. Reading goes
                // on into the read buffer, up to its limit: a peer that does not read stops
                // being read then.
                read.consume(given(after_blank_line, fed, input));
                return;
            }
            let from_rx = rx_first && rx.buffered() > 0;
            // The bytes of a line parsed where it lies (for the log of a parse error).
            let before = input;
            // Everything buffered is decoded (or input waits for transmit room).
            let taken = if from_rx {
                conn.handle_input(now, rx, &mut &[][..])
            } else {
                conn.handle_input_borrowed(now, rx, &mut input)
            };
            let item = match taken {
                Input::Item(item) => {
                    rx_first = true;
                    batch_trace.observe(|| conn.stats(), &settings.caller, false);
                    item
                }
                Input::Blocked | Input::Closed => {
                    read.consume(given(after_blank_line, fed, input));
                    return;
                }
                Input::NeedMore if from_rx => {
                    // The receive buffer holds part of a frame: the read bytes go after it.
                    rx_first = false;
                    continue;
                }
                Input::NeedMore => match *ending {
                    Ending::No
                        if fed.len() < read.pending()
                            && (rx.buffered() > 0
                                || ends_with_blank_line(&fed[..fed.len() - input.len()])
                                    .unwrap_or(*after_blank_line)) =>
                    {
                        // The core may be in the middle of a frame, which need not end with a
                        // line end (a `Content-Length` block's body, which line framing reads
                        // too): what is left of the read goes after it.
                        let taken = fed.len() - input.len();
                        fed = read.input(false);
                        input = &fed[taken..];
                        continue;
                    }
                    Ending::No => {
                        batch_trace.observe(|| conn.stats(), &settings.caller, true);
                        read.consume(given(after_blank_line, fed, input));
                        return;
                    }
                    Ending::Finish => {
                        // A last line without its newline is still a line: decode it too.
                        rx.finish();
                        *ending = Ending::FailPending;
                        continue;
                    }
                    Ending::FailPending => {
                        // Nothing can answer our calls any more. Inbound requests stay open
                        // so that their answers are still written.
                        conn.fail_pending();
                        *ending = Ending::No;
                        read.consume(given(after_blank_line, fed, input));
                        return;
                    }
                },
            };
            // A batch member's spans are children of its batch's span.
            let _in_batch = batch_trace.span().map(tracing::Span::enter);
            let caller = batch_trace.caller().unwrap_or(&settings.caller);
            match item {
                Inbound::Request(req) => {
                    let found = settings
                        .router
                        .as_ref()
                        .and_then(|r| r.request_handler(req.method.escaped_bytes(), *last_method));
                    let wire_name;
                    let found = match found {
                        Some(Found::Named {
                            at,
                            name,
                            run,
                            meter,
                        }) => {
                            *last_method = Some(at);
                            Some((name, run, Some(meter)))
                        }
                        Some(Found::Fallback(run)) => {
                            wire_name = req.method.to_str();
                            Some((&*wire_name, run, None))
                        }
                        None => None,
                    };
                    let (Some((method, handler, meter)), Some(peer)) = (found, peer.as_ref())
                    else {
                        let method = req.method.to_str();
                        tracing::debug!(%method, id = %req.id, "method not found");
                        let _ = conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND);
                        telemetry::not_found(&method, req.id.raw(), caller);
                        continue;
                    };
                    let params = req.params;
                    let permitted = settings
                        .router
                        .as_ref()
                        .is_none_or(|r| r.permits(settings.caller.identity(), method));
                    let limited = permitted && settings.over_rate_limit();
                    if !permitted
                        || limited
                        || (queue.is_empty() && handlers.running() < settings.concurrency)
                    {
                        let origin = Origin {
                            peer,
                            cancel: OnceCell::new(),
                            state: settings.router.as_ref().and_then(|r| r.state()),
                            details: settings.router.as_ref().and_then(|r| r.details()),
                            id: Some(OriginId::Wire(req.id)),
                            method,
                            caller,
                            unsampled: std::cell::Cell::new(0),
                        };
                        // A refused request is answered at once, never queued.
                        let handler = match (permitted, limited) {
                            (false, _) => {
                                telemetry::reject(Rejection::Authorization);
                                forbidden()
                            }
                            (true, true) => {
                                telemetry::reject(Rejection::Overload);
                                rate_limited()
                            }
                            (true, false) => handler,
                        };
                        let handle = req.handle;
                        let at = Some(&received);
                        handlers.start_request(handler, &origin, params, conn, handle, meter, at);
                        continue;
                    }
                    let id = req.id.raw().to_owned();
                    let params = params.map(|p| p.as_str().to_owned());
                    let cost =
                        64 + method.len() + id.len() + params.as_ref().map_or(0, String::len);
                    if *queued_bytes + cost > settings.queue_bytes {
                        tracing::warn!(%method, id, "request queue full: answering Server busy");
                        let _ = conn.reject(req.handle, ErrorCode::SERVER_BUSY);
                        telemetry::reject(Rejection::Overload);
                        continue;
                    }
                    *queued_bytes += cost;
                    queue.push_back(Job {
                        handle: Some(req.handle),
                        id: Some(id),
                        method: method.to_owned(),
                        params,
                        cost,
                        batch: batch_trace.member(),
                    });
                }
                Inbound::Notification(n) => {
                    if let Some(profile) = &settings.cancel {
                        if n.method.eq_str(&profile.method) {
                            let id = n.params.and_then(|p| {
                                p.members()
                                    .find(|(k, _)| k.eq_str(&profile.id_member))
                                    .map(|(_, v)| v)
                            });
                            let Some(id) = id.map(|id| id.as_str()) else {
                                tracing::debug!("cancel naming no request");
                                continue;
                            };
                            if handlers.cancel(id) {
                                tracing::debug!("request cancelled by the peer");
                                continue;
                            }
                            // Not started yet (waiting for a handler slot): under a rule that
                            // leaves cancelled requests unanswered, it is let go of now.
                            let key = id_key(id);
                            let queued = queue.iter().position(|job| {
                                job.handle.is_some()
                                    && job.id.as_deref().is_some_and(|j| id_key(j) == key)
                            });
                            match queued
                                .filter(|_| !profile.answer)
                                .and_then(|at| queue.remove(at))
                            {
                                Some(job) => {
                                    tracing::debug!("queued request cancelled by the peer");
                                    *queued_bytes -= job.cost;
                                    if let Some(handle) = job.handle {
                                        let _ = conn.release(handle);
                                    }
                                }
                                None => tracing::debug!("cancel for no running request"),
                            }
                            continue;
                        }
                    }
                    let method = n.method.to_str();
                    let handler = settings
                        .router
                        .as_ref()
                        .and_then(|r| r.get_notification(&method));
                    let (Some(handler), Some(peer)) = (handler, peer.as_ref()) else {
                        tracing::debug!(%method, "notification ignored: no handler");
                        continue;
                    };
                    if !settings
                        .router
                        .as_ref()
                        .is_none_or(|r| r.permits(settings.caller.identity(), &method))
                    {
                        tracing::debug!(
                            %method,
                            subject = settings.caller.identity().subject(),
                            "notification refused by the access rules: dropped"
                        );
                        continue;
                    }
                    if settings.over_rate_limit() {
                        tracing::debug!(%method, "notification over the rate limit: dropped");
                        continue;
                    }
                    let params = n.params;
                    if queue.is_empty() && handlers.running() < settings.concurrency {
                        let origin = Origin {
                            peer,
                            cancel: OnceCell::new(),
                            state: settings.router.as_ref().and_then(|r| r.state()),
                            details: settings.router.as_ref().and_then(|r| r.details()),
                            id: None,
                            method: &method,
                            caller,
                            unsampled: std::cell::Cell::new(0),
                        };
                        handlers.start_notification(handler, &origin, params);
                        continue;
                    }
                    let params = params.map(|p| p.as_str().to_owned());
                    let cost = 64 + method.len() + params.as_ref().map_or(0, String::len);
                    if *queued_bytes + cost > settings.queue_bytes {
                        tracing::warn!(%method, "request queue full: notification dropped");
                        continue;
                    }
                    *queued_bytes += cost;
                    queue.push_back(Job {
                        handle: None,
                        id: None,
                        method: method.into_owned(),
                        params,
                        cost,
                        batch: batch_trace.member(),
                    });
                }
                Inbound::Response(resp) => {
                    if let Some(reply) = calls.remove(&resp.token) {
                        let outcome = match resp.outcome {
                            Ok(result) => Ok(result.as_str().to_owned()),
                            Err(e) => Err(CallError::Rpc(RpcError::from_wire(&e))),
                        };
                        let _ = reply.send(outcome);
                    }
                }
                Inbound::Problem(rpcwire::Problem::ParseError(e)) => {
                    telemetry::reject(Rejection::Parse);
                    // Said once per connection, with what came: a peer that is not a JSON-RPC
                    // peer at all (a wrong command, a wrong port) is then obvious.
                    if *warned_garbage {
                        tracing::debug!(error = %e, "the peer sent bytes that are not JSON");
                    } else {
                        *warned_garbage = true;
                        // The frame is in the receive buffer, or was parsed where it lay.
                        let line = || {
                            let line = &before[..before.len() - input.len()];
                            let line = line.strip_suffix(b"\n").unwrap_or(line);
                            line.strip_suffix(b"\r").unwrap_or(line)
                        };
                        let received = preview(rx.held().unwrap_or_else(line));
                        tracing::warn!(
                            error = %e,
                            received,
                            "the peer sent bytes that are not JSON (answered Parse error; \
                             more are logged at debug level)"
                        );
                    }
                }
                Inbound::Problem(rpcwire::Problem::BadHeader) => {
                    // Most often the two sides disagree on framing: say so once.
                    if *warned_garbage {
                        tracing::debug!("the peer sent a header block without Content-Length");
                    } else {
                        *warned_garbage = true;
                        tracing::warn!(
                            "the peer sent bytes that are not a Content-Length header block \
                             (skipped; does it frame messages one per line?)"
                        );
                    }
                }
                Inbound::Problem(rpcwire::Problem::PeerError(e)) => {
                    // Not tied to one call (several were waiting): the application sees it
                    // here, and the calls end at their deadlines.
                    tracing::warn!(
                        code = e.code.0,
                        message = %e.message,
                        "the peer could not read one of our messages"
                    );
                }
                Inbound::Problem(p) => {
                    telemetry::problem(&p);
                    tracing::debug!(problem = ?p, replied = p.replied(), "peer problem");
                }
            }
        }
    }

    /// Starts queued handlers while slots are free.
    fn start_jobs(&mut self) {
        let (Some(router), Some(peer)) = (self.settings.router.clone(), self.peer.clone()) else {
            return;
        };
        while self.handlers.running() < self.settings.concurrency {
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            self.queued_bytes -= job.cost;
            // A batch member started late is still its batch's child.
            let _in_batch = job.batch.as_ref().map(|b| b.0.enter());
            let caller = job.batch.as_ref().and_then(|b| b.1.as_ref());
            let origin = Origin {
                peer: &peer,
                cancel: OnceCell::new(),
                state: router.state(),
                details: router.details(),
                id: job.id.as_deref().map(OriginId::Text),
                method: &job.method,
                caller: caller.unwrap_or(&self.settings.caller),
                unsampled: std::cell::Cell::new(0),
            };
            // Validated when received; parsed again only to get the view back.
            let params = job
                .params
                .as_deref()
                .and_then(|p| RawJson::parse(p, rpcwire::wire::scan::MAX_DEPTH_LIMIT).ok());
            match job.handle {
                Some(handle) => match router.request_handler(job.method.as_bytes(), None) {
                    Some(found) => {
                        let meter = match &found {
                            Found::Named { meter, .. } => Some(*meter),
                            Found::Fallback(_) => None,
                        };
                        // Timed from now: its wait in the queue is not the handler's time.
                        self.handlers.start_request(
                            found.run(),
                            &origin,
                            params,
                            &mut self.conn,
                            handle,
                            meter,
                            None,
                        );
                    }
                    None => {
                        let _ = self.conn.reject(handle, ErrorCode::METHOD_NOT_FOUND);
                    }
                },
                None => {
                    if let Some(handler) = router.get_notification(&job.method) {
                        self.handlers.start_notification(handler, &origin, params);
                    }
                }
            }
        }
    }

    /// Resolves calls that ended without a response.
    fn deliver_events(&mut self) {
        while let Some(event) = self.conn.poll_event() {
            match event {
                Event::RequestFailed { token, reason } => {
                    if let Some(reply) = self.calls.remove(&token) {
                        let _ = reply.send(Err(match reason {
                            Failure::TimedOut => CallError::Timeout,
                            Failure::Closed => CallError::Closed,
                        }));
                    }
                }
            }
        }
    }

    fn on_control(&mut self, ctl: Control) {
        match ctl {
            Control::Cancel(token) => {
                if self.calls.remove(&token).is_some() {
                    // Tell the peer, in its profile's words, so its handler can stop.
                    let id = self.conn.request_id(token);
                    let _ = self.conn.cancel(token);
                    if let (Some(profile), Some(id)) = (&self.settings.cancel, id) {
                        let params = CancelParams {
                            member: &profile.id_member,
                            id,
                        };
                        if let Err(e) = self.conn.send_notification(&profile.method, Some(&params))
                        {
                            tracing::debug!(error = %e, "cancel notification not sent");
                        }
                    }
                }
                if matches!(&self.stalled, Some(Command::Call(c)) if c.token == token) {
                    self.stalled = None;
                }
            }
            Control::Shutdown => self.end_of_input("shutdown"),
            Control::SetBatches(accept) => self.conn.set_batches(accept),
        }
    }

    fn on_command(&mut self, cmd: Command) {
        if let Command::Stats(reply) = cmd {
            let _ = reply.send(self.stats());
            return;
        }
        // Input has ended: a call could never be answered, so it fails now. A notification
        // still goes out while the connection writes: the handlers of the requests already
        // received run on, and their progress and log messages belong with their answers.
        if self.input == InputState::Draining && !matches!(cmd, Command::Notify(_)) {
            cmd.fail(|| CallError::Closed);
            return;
        }
        if let Err(cmd) = self.try_command(cmd) {
            self.stalled = Some(cmd);
        }
    }

    fn retry_stalled(&mut self) {
        if let Some(cmd) = self.stalled.take() {
            self.on_command(cmd);
        }
    }

    /// Gives a command to the core; `Err` hands it back when there is no room yet.
    fn try_command(&mut self, cmd: Command) -> Result<(), Command> {
        let now = self.now();
        let conn = &mut self.conn;
        match cmd {
            Command::Call(c) => {
                if c.reply.is_closed() {
                    return Ok(());
                }
                let params = c.params.as_deref().map(Raw);
                // With a cancel profile the client keeps the deadline (see `run`).
                let timeout = if self.settings.cancel.is_some() {
                    None
                } else {
                    c.timeout
                };
                match conn.send_request(now, c.token, &c.method, params.as_ref(), timeout) {
                    Ok(()) => {
                        if let (Some(cx), Some(table)) = (c.trace, &self.settings.outgoing_traces) {
                            if let Some(id) = conn.request_id(c.token) {
                                table.put(id, *cx);
                            }
                        }
                        self.calls.insert(c.token, c.reply);
                        Ok(())
                    }
                    Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {
                        Err(Command::Call(c))
                    }
                    Err(e) => {
                        let _ = c.reply.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Notify(n) => {
                let raw = n.params.as_deref().map(Raw);
                match conn.send_notification(&n.method, raw.as_ref()) {
                    Ok(()) => {
                        let _ = n.done.send(Ok(()));
                        Ok(())
                    }
                    Err(SendError::WouldBlock { .. }) => Err(Command::Notify(n)),
                    Err(e) => {
                        let _ = n.done.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Batch(b) => self.try_batch(now, b),
            Command::Stats(reply) => {
                let _ = reply.send(self.stats());
                Ok(())
            }
        }
    }

    fn try_batch(&mut self, now: Instant, batch: Box<BatchCmd>) -> Result<(), Command> {
        let calls = batch
            .items
            .iter()
            .filter(|i| matches!(i, BatchItem::Call(_)))
            .count();
        if calls > PENDING {
            let err = || CallError::BatchTooLarge {
                calls,
                capacity: PENDING,
            };
            Command::Batch(batch).fail(err);
            return Ok(());
        }
        let cancel = self.settings.cancel.is_some();
        match encode_batch(&mut self.conn, now, &batch.items, cancel) {
            Ok(()) => {
                let BatchCmd { items, done } = *batch;
                for item in items {
                    if let BatchItem::Call(c) = item {
                        self.calls.insert(c.token, c.reply);
                    }
                }
                let _ = done.send(Ok(()));
                Ok(())
            }
            Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {
                Err(Command::Batch(batch))
            }
            Err(e) => {
                Command::Batch(batch).fail(|| CallError::from_send(e));
                Ok(())
            }
        }
    }

    /// Stops reading: our pending calls can no longer be answered and fail now; the requests
    /// already received are still answered before the connection closes.
    fn end_of_input(&mut self, why: &'static str) {
        if self.input == InputState::Draining {
            return;
        }
        tracing::debug!(why, "input ended");
        self.input = InputState::Draining;
        // The next `process_input` decodes what is buffered (and a last line without its
        // newline), then fails the calls still pending: their `RequestFailed` events resolve
        // them as `CallError::Closed`.
        self.ending = Ending::Finish;
        match self.stalled.take() {
            Some(cmd @ Command::Notify(_)) => self.stalled = Some(cmd),
            Some(cmd) => cmd.fail(|| CallError::Closed),
            None => {}
        }
    }

    /// The byte stream failed: everything ends now.
    fn fail(mut self, e: io::Error) -> Result<(), DriverError> {
        tracing::debug!(error = %e, "connection failed");
        self.conn.close();
        for (_, reply) in self.calls.drain() {
            let _ = reply.send(Err(CallError::Closed));
        }
        self.deliver_events();
        if let Some(cmd) = self.stalled.take() {
            cmd.fail(|| CallError::Closed);
        }
        self.handlers.abort_all();
        Err(DriverError::Io(e))
    }

    fn stats(&self) -> SessionStats {
        SessionStats {
            core: self.conn.stats(),
            pending_calls: self.calls.len(),
            inflight: self.conn.inflight_len(),
            queued: self.queue.len(),
            queued_bytes: self.queued_bytes,
            running: self.handlers.running(),
            buffer_bytes: self.conn.storage_bytes() + self.rx.capacity() + self.read.capacity(),
        }
    }
}

#[cfg(test)]
mod tests {
    /// Every open connection keeps its driver's future (in its task) for as long as it is
    /// open: a change that makes it larger costs that much per connection. `run` builds the
    /// driver before its `async` block for this reason: an `async fn` kept its arguments
    /// beside the driver they were moved into (2 600 bytes, against 1 632). Raise the bound
    /// knowingly: it went from 1 700 to 1 800 for the core's counters by message kind, batches
    /// and high-water marks (88 bytes) and the connection's span (40 bytes), then to 1 808 for
    /// the table of outgoing calls' trace contexts (`Builder::outgoing_traces`, a pointer);
    /// the `metrics` feature adds 32 (the connection's place in the open-connections gauge),
    /// then 40 more (the batch sizes' counters, 32, and the connection's place in the live
    /// view, 8); then 8 for the span of the batch being received (`batch_trace`, a pointer);
    /// then 56 for the driver's own read buffer (a `Vec` and three offsets, 48, and the
    /// read's future), which lets the core parse whole lines where they were read; then 24
    /// for the core's record of a batch's parsed elements (heap storage: a boxed run of slots
    /// and its state), which spares a batch's second walk. The batch sizes' counters then
    /// moved into the box of the batch spans' state (`batch_trace`): 64 less with the feature.
    #[test]
    fn an_open_connection_keeps_a_small_driver() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("runtime");
        let _inside = rt.enter();
        let (ours, _peer) = tokio::io::duplex(64);
        let (reader, writer) = tokio::io::split(ours);
        let (_client, driver) = crate::Builder::new().run_inline(reader, writer);
        let size = std::mem::size_of_val(&driver);
        println!("the driver's future: {size} bytes");
        let bound = if cfg!(feature = "metrics") {
            1_904
        } else {
            1_896
        };
        assert!(
            size <= bound,
            "the driver's future is {size} bytes (bound {bound})"
        );
    }
}
