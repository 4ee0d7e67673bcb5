//! The blocking driver over [`embedded_io::Read`] + [`embedded_io::Write`].

use core::convert::Infallible;
use core::mem::MaybeUninit;
use core::time::Duration;

use embedded_io::{ErrorType, Read, ReadReady, Write};
use rpcwire::storage::{Inline, Storage};
use rpcwire::wire::RxBuffer;
use rpcwire::{
    CancelError, Config, Connection, ErrorCode, Instant, RequestHandle, RespondError, SendError,
    Token,
};
use serde::Serialize;

use crate::session::{retry_after_flush, written, Session, Step, Turn};
use crate::{Clock, DefaultStore, Error, Incoming, Retry, DEFAULT_RX};
use rpcwire::methods::{Answer, MethodError};

/// Runs one [`Connection`] over a blocking byte stream.
///
/// `IO` is the stream (a UART, ...), `C` the [`Clock`], `S` the connection's storage
/// ([`Inline`](crate::Inline)`<TX, BATCH, PENDING, INFLIGHT>`: transmit bytes, batch-reply
/// bytes, pending and in-flight slots; see [`Connection`]) and `RX` the receive buffer's
/// bytes (the longest inbound frame is `RX - 2` bytes). A firmware names its driver and its
/// handler's context once:
///
/// ```
/// # use rpcwire_embedded_io::doc_uart::Uart;
/// use rpcwire_embedded_io::{clock::NoClock, Context, Driver, Inline};
///
/// type Store = Inline<1024, 960, 2, 2>;
/// type Firmware = Driver<Uart, NoClock, Store, 1024>;
/// type Ctx<'a> = Context<'a, Uart, Store>;
/// ```
///
/// A handler that should also run under a test harness (over another I/O type) is generic
/// over the I/O only: `fn handle<IO: embedded_io::Write>(ctx: &mut Context<'_, IO, Store>,
/// item: Incoming<'_>)`.
///
/// Which method to call in the main loop:
/// - [`serve`](Driver::serve) or [`read_once`](Driver::read_once): a server whose reads may
///   block;
/// - [`poll`](Driver::poll): never blocks on reading (needs [`ReadReady`]); use it when the
///   device sends requests, so their deadlines expire even when the host is silent;
/// - [`handle_bytes`](Driver::handle_bytes): bytes collected elsewhere (an interrupt
///   handler's ring buffer, a DMA buffer).
///
/// See the [crate documentation](crate) for an example.
pub struct Driver<IO: ErrorType, C, S: Storage = DefaultStore, const RX: usize = { DEFAULT_RX }> {
    io: IO,
    /// Everything but the I/O object, and the loop that needs no I/O (shared with the async
    /// driver).
    session: Session<IO::Error, C, S, [u8; RX]>,
}

/// What a handler gets besides the item: the connection, with commands that write out and
/// retry when the transmit buffer is full.
///
/// Commands return the core's errors. When the transport fails while writing, the command
/// returns `WouldBlock` (the request stays open) and the driver call that ran the handler
/// returns the transport error.
pub struct Context<'a, IO: ErrorType, S: Storage = DefaultStore> {
    turn: Turn<'a, IO::Error, S>,
    io: &'a mut IO,
}

/// Writes every queued byte with the core's drain (partial writes accounted), then flushes
/// the writer. True when anything was written.
fn transmit<IO: Write, S: Storage>(
    conn: &mut Connection<S>,
    io: &mut IO,
) -> Result<bool, Error<IO::Error>> {
    let wrote = conn.transmit_with(|bytes| written(io.write(bytes)))? > 0;
    if wrote {
        io.flush().map_err(Error::Io)?;
    }
    Ok(wrote)
}

impl<'a, IO: Write, S: Storage> Context<'a, IO, S> {
    /// The time the driver read when it took this item.
    pub fn now(&self) -> Instant {
        self.turn.now
    }

    /// The connection, for anything the context does not wrap (statistics, batches,
    /// configuration). After a command on it that returned `WouldBlock`, use
    /// [`retry`](Context::retry) or [`flush`](Context::flush).
    pub fn conn(&mut self) -> &mut Connection<S> {
        self.turn.conn
    }

    /// Writes out every queued byte now. Returns false when nothing was written (the queue
    /// was empty, or the transport failed: the driver reports that after the handler).
    pub fn flush(&mut self) -> bool {
        if !self.turn.can_write() {
            return false;
        }
        let outcome = transmit(self.turn.conn, self.io);
        self.turn.wrote(outcome)
    }

    /// Runs a command on the connection; while it reports that the transmit buffer is full,
    /// writes out the queued bytes and runs it again. For commands of other crates that take
    /// a connection, such as a service's `answer` function:
    ///
    /// ```
    /// # use rpcwire::{Config, Instant};
    /// # use rpcwire_embedded_io::{Driver, Incoming};
    /// # use rpcwire_embedded_io::doc_uart::Uart;
    /// # let uart = Uart::new(b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n");
    /// let mut driver: Driver<_, _> = Driver::new(uart, || Instant::ZERO, Config::default());
    /// # while driver.io().has_input() {
    /// driver.read_once(|ctx, item| {
    ///     if let Incoming::Request(req) = item {
    ///         let _ = ctx.retry(|conn| rpcwire_demo::answer(conn, &req));
    ///     }
    /// })?;
    /// # }
    /// # assert!(driver.io().written().contains(r#""result":["hello",5]"#));
    /// # Ok::<(), rpcwire_embedded_io::Error<core::convert::Infallible>>(())
    /// ```
    pub fn retry<T, R: Retry>(
        &mut self,
        mut command: impl FnMut(&mut Connection<S>) -> Result<T, R>,
    ) -> Result<T, R> {
        loop {
            let outcome = command(self.turn.conn);
            if !retry_after_flush(&outcome) || !self.flush() {
                return outcome;
            }
        }
    }

    /// Answers a request with `result` ([`Connection::respond`]).
    pub fn respond<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.retry(|conn| conn.respond(handle, result))
    }

    /// Answers a request with an error ([`Connection::respond_error`]).
    pub fn respond_error<D: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        code: ErrorCode,
        message: Option<&str>,
        data: Option<&D>,
    ) -> Result<(), RespondError> {
        self.retry(|conn| conn.respond_error(handle, code, message, data))
    }

    /// Answers a request with a standard error ([`Connection::reject`]).
    pub fn reject(&mut self, handle: RequestHandle, code: ErrorCode) -> Result<(), RespondError> {
        self.turn.conn.reject(handle, code)
    }

    /// Sends a request to the peer ([`Connection::send_request`]); its response or failure
    /// comes back to the handler with `token`.
    pub fn send_request<P: Serialize + ?Sized>(
        &mut self,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        let now = self.turn.now;
        self.retry(|conn| conn.send_request(now, token, method, params, timeout))
    }

    /// Sends a notification to the peer ([`Connection::send_notification`]).
    pub fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SendError> {
        self.retry(|conn| conn.send_notification(method, params))
    }

    /// Forgets a pending request ([`Connection::cancel`]).
    pub fn cancel(&mut self, token: Token) -> Result<(), CancelError> {
        self.turn.conn.cancel(token)
    }
}

impl<
        IO: ErrorType,
        C: Clock,
        const TX: usize,
        const BATCH: usize,
        const PENDING: usize,
        const INFLIGHT: usize,
        const RX: usize,
    > Driver<IO, C, Inline<TX, BATCH, PENDING, INFLIGHT>, RX>
{
    /// A driver with a new connection and receive buffer (both use `config.framing`).
    ///
    /// A `const fn`: a driver can be the initial value of a `static`. Its connection holds
    /// non-zero fields (the configuration, sequence numbers), so such a static goes to
    /// `.data` and its whole image (buffers included) to flash; to keep the buffers in
    /// `.bss`, build it at run time in place with [`new_in`](Self::new_in).
    #[inline(always)]
    pub const fn new(io: IO, clock: C, config: Config) -> Self {
        Self::from_parts(
            io,
            clock,
            Connection::const_new(config),
            RxBuffer::const_with_max_frame(config.framing, config.max_frame),
        )
    }

    /// Builds a driver in `slot` (typically a `static`'s storage in `.bss`) and returns it.
    ///
    /// Out of line, so that the construction's stack use stays in this call rather than in
    /// the caller's frame (a `main` that builds a driver keeps that frame for ever). With
    /// optimizations the compiler writes the transmit buffer and most fields straight into
    /// `slot`, but may still assemble the receive and batch-reply buffers in stack
    /// temporaries and copy them: about `RX + BATCH` bytes of stack, once (2.3 KiB in
    /// `examples/firmware`, against 4.4 KiB for `slot.write(Driver::new(..))` in `main`).
    #[inline(never)]
    pub fn new_in(slot: &mut MaybeUninit<Self>, io: IO, clock: C, config: Config) -> &mut Self {
        slot.write(Self::new(io, clock, config))
    }
}

/// A dispatch table's answers, written out and retried like [`Context::respond`].
impl<IO: Write, S: Storage> Answer for Context<'_, IO, S> {
    fn result<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.respond(handle, result)
    }

    fn error(&mut self, handle: RequestHandle, error: MethodError) -> Result<(), RespondError> {
        match error.message {
            // A standard reply: a small record that never waits for transmit room.
            None => self.reject(handle, error.code),
            Some(message) => self.respond_error(handle, error.code, Some(message), None::<&()>),
        }
    }
}

impl<IO: ErrorType, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX> {
    /// A driver over an existing connection and receive buffer (their framings must match).
    #[inline(always)]
    pub const fn from_parts(io: IO, clock: C, conn: Connection<S>, rx: RxBuffer<[u8; RX]>) -> Self {
        Driver {
            io,
            session: Session::new(clock, conn, rx),
        }
    }

    /// Takes the driver apart.
    pub fn into_parts(self) -> (IO, C, Connection<S>, RxBuffer<[u8; RX]>) {
        let Session {
            clock, conn, rx, ..
        } = self.session;
        (self.io, clock, conn, rx)
    }

    /// The I/O object.
    pub fn io(&self) -> &IO {
        &self.io
    }

    /// The I/O object, mutably (to change a baud rate, say).
    pub fn io_mut(&mut self) -> &mut IO {
        &mut self.io
    }

    /// The connection (statistics, configuration).
    pub fn conn(&self) -> &Connection<S> {
        &self.session.conn
    }

    /// The connection, mutably. After commands on it, the next driver call writes out.
    pub fn conn_mut(&mut self) -> &mut Connection<S> {
        &mut self.session.conn
    }

    /// The earliest deadline of a pending request or of the clock's next tick
    /// ([`Ticker`](crate::clock::Ticker)): call [`poll`](Driver::poll) (or
    /// [`process`](Driver::process)) by then.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.session.deadline()
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.session.clock
    }

    /// The clock, mutably: to change the period of a [`Ticker`](crate::clock::Ticker).
    pub fn clock_mut(&mut self) -> &mut C {
        &mut self.session.clock
    }
}

impl<IO: Write, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX> {
    /// Runs `command` on the connection, writing out and retrying while it would block
    /// ([`Context::retry`]), then writes out what it queued.
    fn command<T>(
        &mut self,
        mut command: impl FnMut(&mut Connection<S>, Instant) -> Result<T, SendError>,
    ) -> Result<T, Error<IO::Error>> {
        let turn = self.session.turn()?;
        let now = turn.now;
        let mut ctx = Context {
            turn,
            io: &mut self.io,
        };
        let outcome = ctx.retry(|conn| command(conn, now));
        ctx.flush();
        // A transport failure comes first: it is why a command would have blocked.
        self.session.check()?;
        outcome.map_err(Error::Send)
    }

    /// Sends a request to the peer and writes it out. Its response (or its failure: timeout,
    /// close) comes back to a later handler call as [`Incoming::Response`] (or
    /// [`Incoming::Event`]) with `token`.
    pub fn send_request<P: Serialize + ?Sized>(
        &mut self,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), Error<IO::Error>> {
        self.command(|conn, now| conn.send_request(now, token, method, params, timeout))
    }

    /// Sends a notification to the peer and writes it out.
    pub fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error<IO::Error>> {
        self.command(|conn, _| conn.send_notification(method, params))
    }

    /// Expires due deadlines and handles everything already received, without reading:
    /// each inbound item and event goes to `handler`, and queued bytes are written out after
    /// each one.
    pub fn process<F>(&mut self, handler: F) -> Result<(), Error<IO::Error>>
    where
        F: FnMut(&mut Context<'_, IO, S>, Incoming<'_>),
    {
        self.handle_bytes(&[], handler).map(|_| ())
    }

    /// Feeds bytes received elsewhere (an interrupt's ring buffer, say) and handles
    /// everything they complete, like [`process`](Driver::process). Returns how many bytes
    /// were taken: all of them, unless input is blocked because the handler left requests
    /// of a batch unanswered (answer them, then feed the rest).
    pub fn handle_bytes<F>(
        &mut self,
        bytes: &[u8],
        mut handler: F,
    ) -> Result<usize, Error<IO::Error>>
    where
        F: FnMut(&mut Context<'_, IO, S>, Incoming<'_>),
    {
        self.session.begin()?;
        let mut input = bytes;
        loop {
            match self.session.step(&mut input) {
                Step::Transmit => {
                    transmit(&mut self.session.conn, &mut self.io)?;
                }
                Step::Handle(turn, item) => {
                    handler(
                        &mut Context {
                            turn,
                            io: &mut self.io,
                        },
                        item,
                    );
                    self.session.check()?;
                }
                Step::Done => return Ok(bytes.len() - input.len()),
            }
        }
    }
}

impl<IO: Read + Write, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX> {
    /// Reads once into the receive buffer; false when it has no room (input is blocked).
    fn read_some(&mut self) -> Result<bool, Error<IO::Error>> {
        let spare = self.session.rx.spare();
        if spare.is_empty() {
            return Ok(false);
        }
        let read = self.io.read(spare);
        self.session.received(read)?;
        Ok(true)
    }

    /// Reads once (blocking until at least one byte arrives, as `embedded_io::Read` does),
    /// then handles everything received like [`process`](Driver::process).
    pub fn read_once<F>(&mut self, mut handler: F) -> Result<(), Error<IO::Error>>
    where
        F: FnMut(&mut Context<'_, IO, S>, Incoming<'_>),
    {
        self.process(&mut handler)?;
        if self.read_some()? {
            self.process(&mut handler)?;
        }
        Ok(())
    }

    /// Serves forever with blocking reads ([`read_once`](Driver::read_once) in a loop);
    /// returns only on a transport error.
    pub fn serve<F>(&mut self, mut handler: F) -> Result<Infallible, Error<IO::Error>>
    where
        F: FnMut(&mut Context<'_, IO, S>, Incoming<'_>),
    {
        loop {
            self.read_once(&mut handler)?;
        }
    }
}

impl<IO: Read + Write + ReadReady, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX> {
    /// Expires due deadlines, reads whatever is ready without blocking, and handles it.
    /// Returns the next deadline: call `poll` again by then, or when input arrives (a UART
    /// interrupt), sleeping in between if you like.
    pub fn poll<F>(&mut self, mut handler: F) -> Result<Option<Instant>, Error<IO::Error>>
    where
        F: FnMut(&mut Context<'_, IO, S>, Incoming<'_>),
    {
        // One call of `process`, in the loop: a single call site is compiled inline (in the
        // example firmware, into `main`, where the driver's address is a constant), which
        // saves about 150 bytes of flash over a call before the loop and one in it.
        loop {
            self.process(&mut handler)?;
            // Until nothing is ready, or the receive buffer is full (input blocked).
            if !self.io.read_ready().map_err(Error::Io)? || !self.read_some()? {
                return Ok(self.session.deadline());
            }
        }
    }
}

impl<IO: ErrorType, C, S: Storage, const RX: usize> core::fmt::Debug for Driver<IO, C, S, RX> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Driver")
            .field("conn", &self.session.conn)
            .field("rx", &self.session.rx)
            .finish_non_exhaustive()
    }
}
