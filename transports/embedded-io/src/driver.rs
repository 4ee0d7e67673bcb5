//! The driver and its handler's context: the types both front ends share.
//!
//! The blocking [`Driver`] and the async `asynch::AsyncDriver` (feature `async`) are one type,
//! [`Driver`], told apart by its last parameter: [`Blocking`] (the default) or `asynch::Async`
//! (`AsyncDriver` names it). So are their handlers' contexts ([`Context`] and
//! `asynch::AsyncContext`). What does no I/O is written here once, for both: building a
//! driver, taking it apart, its accessors, and the context's commands that never wait for
//! the writer (`now`, `conn`, `reject`, `cancel`). What performs I/O is written per front end,
//! in `blocking` and `asynch`, around the shared [`Session`] loop.

use core::marker::PhantomData;
use core::mem::MaybeUninit;

use embedded_io::ErrorType;
use rpcwire::storage::{Inline, Storage};
use rpcwire::wire::RxBuffer;
use rpcwire::Token;
use rpcwire::{CancelError, Config, Connection, ErrorCode, Instant, RequestHandle, RespondError};

use crate::session::{Session, Turn};
use crate::{Clock, DefaultStore, DEFAULT_RX};

/// The front end of the blocking driver, [`Driver`]'s default: its methods block on
/// [`embedded_io::Read`] and [`embedded_io::Write`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Blocking;

/// Runs one [`Connection`] over a byte stream.
///
/// `IO` is the stream (a UART, ...), `C` the [`Clock`], `S` the connection's storage
/// ([`Inline`](crate::Inline)`<TX, BATCH, PENDING, INFLIGHT>`: transmit bytes, batch-reply
/// bytes, pending and in-flight slots; see [`Connection`]) and `RX` the receive buffer's
/// bytes (the longest inbound frame is `RX - 2` bytes). `M` is the front end: [`Blocking`]
/// (the default: blocking reads and writes) or, with feature `async`, `asynch::Async` (the
/// `asynch::AsyncDriver`, which awaits them). A firmware names its driver and its handler's
/// context once:
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
/// Which method of the blocking driver to call in the main loop:
/// - [`serve`](Driver::serve) or [`read_once`](Driver::read_once): a server whose reads may
///   block;
/// - [`poll`](Driver::poll): never blocks on reading (needs [`embedded_io::ReadReady`]); use
///   it when the device sends requests, so their deadlines expire even when the host is
///   silent;
/// - [`handle_bytes`](Driver::handle_bytes): bytes collected elsewhere (an interrupt
///   handler's ring buffer, a DMA buffer).
///
/// See the [crate documentation](crate) for an example.
pub struct Driver<
    IO: ErrorType,
    C,
    S: Storage = DefaultStore,
    const RX: usize = { DEFAULT_RX },
    M = Blocking,
> {
    pub(crate) io: IO,
    /// Everything but the I/O object, and the loop that needs no I/O (shared by both front
    /// ends).
    pub(crate) session: Session<IO::Error, C, S, [u8; RX]>,
    _front: PhantomData<M>,
}

/// What a handler gets besides the item: the connection, with commands that write out and
/// retry when the transmit buffer is full (blocking, or awaiting the writer with
/// `asynch::AsyncContext`).
///
/// Commands return the core's errors. When the transport fails while writing, the command
/// returns `WouldBlock` (the request stays open) and the driver call that ran the handler
/// returns the transport error.
pub struct Context<'a, IO: ErrorType, S: Storage = DefaultStore, M = Blocking> {
    pub(crate) turn: Turn<'a, IO::Error, S>,
    pub(crate) io: &'a mut IO,
    pub(crate) front: PhantomData<M>,
}

impl<'a, IO: ErrorType, S: Storage, M> Context<'a, IO, S, M> {
    /// A context over a turn of the session.
    #[inline(always)]
    pub(crate) fn new(turn: Turn<'a, IO::Error, S>, io: &'a mut IO) -> Self {
        Context {
            turn,
            io,
            front: PhantomData,
        }
    }

    /// The time the driver read when it took this item.
    pub fn now(&self) -> Instant {
        self.turn.now
    }

    /// The connection, for anything the context does not wrap (statistics, batches,
    /// configuration). After a command on it that returned `WouldBlock`, use the context's
    /// `retry` or `flush`.
    pub fn conn(&mut self) -> &mut Connection<S> {
        self.turn.conn
    }

    /// Answers a request with a standard error ([`Connection::reject`]; it never waits for
    /// transmit room).
    pub fn reject(&mut self, handle: RequestHandle, code: ErrorCode) -> Result<(), RespondError> {
        self.turn.conn.reject(handle, code)
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
        M,
    > Driver<IO, C, Inline<TX, BATCH, PENDING, INFLIGHT>, RX, M>
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

impl<IO: ErrorType, C: Clock, S: Storage, const RX: usize, M> Driver<IO, C, S, RX, M> {
    /// A driver over an existing connection and receive buffer (their framings must match).
    #[inline(always)]
    pub const fn from_parts(io: IO, clock: C, conn: Connection<S>, rx: RxBuffer<[u8; RX]>) -> Self {
        Driver {
            io,
            session: Session::new(clock, conn, rx),
            _front: PhantomData,
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
    /// ([`Ticker`](crate::clock::Ticker)): call the driver's `poll` (or `process`) by then.
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

impl<IO: ErrorType, C, S: Storage, const RX: usize, M> core::fmt::Debug
    for Driver<IO, C, S, RX, M>
{
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Driver")
            .field("conn", &self.session.conn)
            .field("rx", &self.session.rx)
            .finish_non_exhaustive()
    }
}
