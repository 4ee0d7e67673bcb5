//! The driver: one task per connection that owns the core
//! [`Connection`](rpcwire::Connection), its receive buffer and the connection's
//! [`Dispatcher`], and moves bytes and time between tokio and them.
//!
//! It `select!`s on: what the dispatcher waits for (handlers finishing, client commands,
//! control requests), the socket being writable (when the core has bytes to send, or a flush
//! is due), the socket being readable (straight into the read buffer), and the core's next
//! deadline. After each, it runs [`Driver::step`]: settle the dispatcher, feed buffered input
//! to the core and hand each message to the dispatcher, settle again. Reading and writing are
//! independent, so two peers that flood each other never deadlock on full socket buffers, and
//! responses are read even when every handler slot is busy.
//!
//! Everything about running a request (the router, access, rate limits, handlers, telemetry)
//! is the dispatcher's; the driver only reads, writes and keeps time.

use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Instant as StdInstant;

use rpcwire::read_buffer::ReadBuffer;
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Inbound, Input};
use rpcwire_service::{Caller, ClientSettings, Conn, Dispatcher, Service, Woke};
use rpcwire_telemetry::{self as telemetry, Received};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tracing::Instrument;

use crate::{Client, DriverError};

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

/// Everything the driver needs from the [`Builder`](crate::Builder).
pub(crate) struct Settings {
    pub(crate) config: Config,
    pub(crate) service: Service,
    pub(crate) caller: Arc<Caller>,
    pub(crate) client: ClientSettings,
    pub(crate) idle_release: std::time::Duration,
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
    /// frame, content-length framing; see `rpcwire::read_buffer`).
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
    dispatcher: Dispatcher,
    idle_release: std::time::Duration,
    input: InputState,
    /// What is left to do once everything buffered is decoded after input ended.
    ending: Ending,
    /// Bytes written since the last flush.
    dirty: bool,
    /// The first frame that was not JSON has been logged at warn level.
    warned_garbage: bool,
    /// Since when nothing is buffered, queued or running (memory is given back after
    /// `idle_release` of it).
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

/// Starts a connection: its [`Client`], and the driver's future, which runs it to its end.
///
/// Not an `async fn`: the driver is built here and moved into the returned future, which then
/// holds it once. An `async fn` keeps its arguments for its whole life, beside the driver they
/// were moved into: 968 bytes more in every open connection's task.
pub(crate) fn run<R, W>(
    settings: Settings,
    mut reader: R,
    mut writer: W,
) -> (Client, impl Future<Output = Result<(), DriverError>> + Send)
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let Settings {
        config,
        service,
        caller,
        client,
        idle_release,
    } = settings;
    let conn = service.connection(config);
    let rx = conn.rx_buffer();
    let (scope, span) = telemetry::ConnectionScope::open(caller.remote());
    let (dispatcher, client) = Dispatcher::new(&service, caller, client);
    let mut d = Driver {
        conn,
        rx,
        // The first read's storage from the start: a connection holds the same when fresh as
        // when idle (`release_idle` keeps this much for the read that waits).
        read: ReadBuffer::with_capacity(READ_IDLE),
        after_blank_line: false,
        read_size: READ_IDLE,
        dispatcher,
        idle_release,
        input: InputState::Open,
        ending: Ending::No,
        dirty: false,
        warned_garbage: false,
        idle_since: None,
    };
    let driver = async move {
        let _scope = scope;
        loop {
            // Controls first: a setting changed by a handler applies to all input read after
            // it.
            if let Woke::EndOfInput(why) = d.dispatcher.take_controls(&mut d.conn) {
                d.end_of_input(why);
            }
            d.step();
            if d.finished() {
                break;
            }
            let mut release_at = d.idle_release_at();
            if release_at.is_some() && d.idle_release.is_zero() {
                // Zero: give it back as soon as the connection is quiet, with no timer
                // (short-lived connections).
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
            let origin = d.dispatcher.origin();
            let deadline = d
                .conn
                .poll_timeout()
                .map(|at| at.to_std(origin))
                .into_iter()
                .chain(release_at)
                .min()
                .map(tokio::time::Instant::from_std);

            tokio::select! {
                wake = d.dispatcher.wait() => {
                    let buffered = d.rx.capacity() + d.read.capacity();
                    if let Woke::EndOfInput(why) = d.dispatcher.on_wake(&mut d.conn, wake, buffered) {
                        d.end_of_input(why);
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
                        // The peer closed both directions after its last message: what is left
                        // to write has no reader. That is the peer leaving, not a failure. The
                        // write may find it gone before the read sees its end of stream (both
                        // are ready at once), so an open input is looked at once more, without
                        // waiting.
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
                () = sleep_until(deadline), if deadline.is_some() => {
                    let now = d.dispatcher.now();
                    d.conn.handle_timeout(now);
                    if release_at.is_some_and(|at| telemetry::now() >= at) {
                        d.release_idle();
                    }
                },
            }
        }
        d.dispatcher.close(&mut d.conn);
        if let Err(e) = writer.shutdown().await {
            tracing::debug!(error = %e, "shutdown of the write side failed");
        }
        Ok(())
    }
    .instrument(span);
    (client, driver)
}

impl Driver {
    /// When to give back the memory of an idle connection: `idle_release` after it last had
    /// anything buffered, queued or running, if it holds more than an idle one needs.
    fn idle_release_at(&mut self) -> Option<StdInstant> {
        let quiet = self.rx.buffered() == 0
            && self.read.pending() == 0
            && self.conn.poll_transmit().is_empty()
            && self.dispatcher.is_idle()
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
        let since = *self.idle_since.get_or_insert_with(telemetry::now);
        Some(since + self.idle_release)
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

    /// Everything that needs no waiting.
    fn step(&mut self) {
        self.dispatcher.settle(&mut self.conn);
        self.process_input();
        self.dispatcher.settle(&mut self.conn);
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
            && self.dispatcher.is_idle()
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

    /// Feeds buffered input to the core and hands every inbound message to the dispatcher.
    ///
    /// Inlined into its one caller whatever else the binary holds (the `metrics` feature's
    /// code made the compiler keep it apart).
    #[inline(always)]
    fn process_input(&mut self) {
        // Also the start of the calls handled in place below (their durations are timed from
        // the read that brought them): one clock read per wakeup, not one per call.
        let read_at = telemetry::now();
        let now = rpcwire::Instant::from_std(self.dispatcher.origin(), read_at);
        let received = Received::at(read_at);
        let Driver {
            conn,
            rx,
            read,
            after_blank_line,
            dispatcher,
            ending,
            warned_garbage,
            ..
        } = self;
        // With line framing the core is given whole lines only: a line cut by the end of the
        // last read waits here for the rest (see `rpcwire::read_buffer`), unless it is already
        // longer than a read may be (the core's receive buffer then takes it, and judges its
        // length), the core may be in the middle of a frame (part of it in the receive buffer,
        // or a `Content-Length` block read, which line framing reads too, and its body to come:
        // the bytes go after it, line end or not), or input has ended (a last line without its
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
                        dispatcher.input_waits(conn);
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
            // Bytes that are not JSON-RPC: logged here, where they are, once the dispatcher
            // has counted them. `Some(None)`: a header block without `Content-Length`.
            let garbage = match &item {
                Inbound::Problem(rpcwire::Problem::ParseError(e)) => Some(Some(*e)),
                Inbound::Problem(rpcwire::Problem::BadHeader) => Some(None),
                _ => None,
            };
            dispatcher.inbound(conn, item, &received);
            if let Some(parse_error) = garbage {
                // The frame is in the receive buffer, or was parsed where it lay.
                let line = || {
                    let line = &before[..before.len() - input.len()];
                    let line = line.strip_suffix(b"\n").unwrap_or(line);
                    line.strip_suffix(b"\r").unwrap_or(line)
                };
                log_garbage(warned_garbage, parse_error, || {
                    rx.held().unwrap_or_else(line)
                });
            }
        }
    }

    /// Stops reading: our pending calls can no longer be answered and fail once what is
    /// buffered is decoded; the requests already received are still answered before the
    /// connection closes.
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
        self.dispatcher.end_of_input();
    }

    /// The byte stream failed: everything ends now.
    fn fail(mut self, e: io::Error) -> Result<(), DriverError> {
        tracing::debug!(error = %e, "connection failed");
        self.dispatcher.fail(&mut self.conn);
        Err(DriverError::Io(e))
    }
}

/// Logs bytes that are not JSON-RPC the peer sent: the first at warn level with what came (a
/// peer that is not a JSON-RPC peer at all, a wrong command or port, is then obvious), the
/// rest at debug level. Other problems are the dispatcher's to count and log.
fn log_garbage<'a>(
    warned: &mut bool,
    parse_error: Option<rpcwire::wire::scan::ScanError>,
    frame: impl FnOnce() -> &'a [u8],
) {
    match parse_error {
        Some(e) if *warned => {
            tracing::debug!(error = %e, "the peer sent bytes that are not JSON");
        }
        Some(e) => {
            *warned = true;
            let received = preview(frame());
            tracing::warn!(
                error = %e,
                received,
                "the peer sent bytes that are not JSON (answered Parse error; \
                 more are logged at debug level)"
            );
        }
        // Most often the two sides disagree on framing: said once.
        None if *warned => {
            tracing::debug!("the peer sent a header block without Content-Length");
        }
        None => {
            *warned = true;
            tracing::warn!(
                "the peer sent bytes that are not a Content-Length header block \
                 (skipped; does it frame messages one per line?)"
            );
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
    /// With the service layer, the dispatcher holds the service as one pointer and the core's
    /// settings stay in the connection alone: 1 816 bytes, 1 896 with `metrics`.
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
            1_824
        };
        assert!(
            size <= bound,
            "the driver's future is {size} bytes (bound {bound})"
        );
    }
}
