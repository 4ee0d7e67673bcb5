//! The async driver over [`embedded_io_async::Read`] + [`embedded_io_async::Write`]
//! (feature `async`), for executors such as embassy.
//!
//! It mirrors the blocking [`Driver`]: the handler is an async closure that
//! gets an [`AsyncContext`] and an [`Incoming`], and answers through the context, whose
//! commands write out (awaiting the writer) and retry when the transmit buffer is full.
//!
//! ```
//! use rpcwire::{Config, ErrorCode, Instant};
//! use rpcwire_embedded_io::asynch::AsyncDriver;
//! use rpcwire_embedded_io::Incoming;
//! # use rpcwire_embedded_io::doc_uart::Uart;
//! # let uart = Uart::new(b"{\"jsonrpc\":\"2.0\",\"method\":\"get_data\",\"id\":1}\n");
//!
//! # let run = async {
//! let mut driver: AsyncDriver<_, _> = AsyncDriver::new(uart, || Instant::ZERO, Config::default());
//! # while driver.io().has_input() {
//! // loop {
//!     driver.read_once(async |ctx, item| {
//!         if let Incoming::Request(req) = item {
//!             let _ = ctx.retry(|conn| rpcwire_demo::answer(conn, &req)).await;
//!         }
//!     }).await.unwrap();
//! # }
//! // }
//! # assert!(driver.io().written().contains(r#""result":["hello",5]"#));
//! # };
//! # rpcwire_embedded_io::asynch::block_on(run);
//! ```
//!
//! Deadlines of outgoing requests: with a clock that is also a [`Timer`],
//! [`AsyncDriver::serve_with_timer`] races every read against the next deadline (the
//! reader's `read` must then be cancel-safe, as `embedded_io_async` asks).

use core::convert::Infallible;
use core::future::{pending, poll_fn, Future};
use core::pin::pin;
use core::task::Poll;
use core::time::Duration;

use embassy_sync::blocking_mutex::raw::RawMutex;
use embedded_io_async::{Read, Write};
use rpcwire::methods::{MethodList, Methods};
use rpcwire::storage::Storage;
use rpcwire::{
    Connection, ErrorCode, Instant, RequestHandle, RespondError, Retry, SendError, Token,
};
use serde::Serialize;

use crate::driver::{Context, Driver};
use crate::outbox::Outbox;
use crate::session::{written, Step};
use crate::{Clock, DefaultStore, Error, Incoming, DEFAULT_RX};

/// A [`Clock`] that can also wait: lets [`AsyncDriver::serve_with_timer`] expire deadlines
/// while no input arrives. With embassy: `Timer::at(..).await` on the matching tick.
pub trait Timer: Clock {
    /// Completes at `at` or later.
    fn sleep_until(&mut self, at: Instant) -> impl Future<Output = ()>;
}

/// A schedule over a timer waits with the timer: the driver wakes for the next tick too.
impl<T: Timer> Timer for crate::clock::Ticker<T> {
    fn sleep_until(&mut self, at: Instant) -> impl Future<Output = ()> {
        self.inner().sleep_until(at)
    }
}

/// The front end of the async driver: [`AsyncDriver`]'s and [`AsyncContext`]'s methods await
/// [`embedded_io_async::Read`] and [`embedded_io_async::Write`].
#[derive(Debug, Clone, Copy, Default)]
pub struct Async;

/// Runs one [`Connection`] over an async byte stream: the [`Driver`] with the
/// async front end. The parameters are those of the blocking driver; its constructors and
/// accessors are the same.
pub type AsyncDriver<IO, C, S = DefaultStore, const RX: usize = { DEFAULT_RX }> =
    Driver<IO, C, S, RX, Async>;

/// What an async handler gets besides the item; see [`Context`], whose
/// commands these are, awaiting the writer instead of blocking on it.
pub type AsyncContext<'a, IO, S = DefaultStore> = Context<'a, IO, S, Async>;

/// Writes every queued byte (partial writes accounted), then flushes the writer. True when
/// anything was written.
///
/// The core's [`Connection::transmit_with`] loop, which the blocking driver uses, written
/// out here because its closure cannot `.await` the write; every write-out of this driver
/// goes through this one function.
async fn transmit<IO: Write, S: Storage>(
    conn: &mut Connection<S>,
    io: &mut IO,
) -> Result<bool, Error<IO::Error>> {
    let mut wrote = false;
    loop {
        let bytes = conn.poll_transmit();
        if bytes.is_empty() {
            break;
        }
        let n = written(io.write(bytes).await)?;
        conn.advance_transmit(n);
        wrote = true;
    }
    if wrote {
        io.flush().await.map_err(Error::Io)?;
    }
    Ok(wrote)
}

impl<IO: Write, S: Storage> AsyncContext<'_, IO, S> {
    /// Writes out every queued byte now; false when nothing was written (empty queue, or a
    /// transport failure that the driver reports after the handler).
    pub async fn flush(&mut self) -> bool {
        // After a transport error met by the handler's commands, nothing more is written.
        if self.turn.failed.is_some() {
            return false;
        }
        let outcome = transmit(self.turn.conn, self.io).await;
        self.turn.wrote(outcome)
    }

    /// Runs a command; while it would block, writes out and runs it again
    /// ([`Context::retry`](crate::Context::retry)).
    pub async fn retry<T, R: Retry>(
        &mut self,
        mut command: impl FnMut(&mut Connection<S>) -> Result<T, R>,
    ) -> Result<T, R> {
        loop {
            let outcome = command(self.turn.conn);
            if !outcome.would_block() || !self.flush().await {
                return outcome;
            }
        }
    }

    /// Answers a request with `result`.
    pub async fn respond<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.retry(|conn| conn.respond(handle, result)).await
    }

    /// Answers a request with an error.
    pub async fn respond_error<D: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        code: ErrorCode,
        message: Option<&str>,
        data: Option<&D>,
    ) -> Result<(), RespondError> {
        self.retry(|conn| conn.respond_error(handle, code, message, data))
            .await
    }

    /// Sends a request; its response or failure comes back to the handler with `token`.
    pub async fn send_request<P: Serialize + ?Sized>(
        &mut self,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), SendError> {
        let now = self.turn.now;
        self.retry(|conn| conn.send_request(now, token, method, params, timeout))
            .await
    }

    /// Sends a notification.
    pub async fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), SendError> {
        self.retry(|conn| conn.send_notification(method, params))
            .await
    }

    /// Runs the method `item` calls from a dispatch table ([`Methods::dispatch`]): writes out
    /// what the handler queued before, so that the answer finds the transmit buffer empty and
    /// is never told to wait (an answer longer than the whole buffer is answered with Internal
    /// error by the connection), then answers through the connection. Returns the items the
    /// table does not take.
    pub async fn dispatch<'i, T, L: MethodList<T>>(
        &mut self,
        methods: &mut Methods<T, L>,
        state: &mut T,
        item: Incoming<'i>,
    ) -> Option<Incoming<'i>> {
        if let Incoming::Request(_) = item {
            self.flush().await;
        }
        methods.dispatch(state, self.turn.conn, item)
    }
}

impl<IO: Write, C: Clock, S: Storage, const RX: usize> AsyncDriver<IO, C, S, RX> {
    /// Runs `command`, writing out and retrying while it would block
    /// ([`AsyncContext::retry`]), then writes out what it queued.
    async fn command<T>(
        &mut self,
        mut command: impl FnMut(&mut Connection<S>, Instant) -> Result<T, SendError>,
    ) -> Result<T, Error<IO::Error>> {
        let turn = self.session.turn()?;
        let now = turn.now;
        let mut ctx: AsyncContext<'_, IO, S> = Context::new(turn, &mut self.io);
        let outcome = ctx.retry(|conn| command(conn, now)).await;
        ctx.flush().await;
        // A transport failure comes first: it is why a command would have blocked.
        self.session.check()?;
        outcome.map_err(Error::Send)
    }

    /// Sends a request and writes it out; its response or failure comes back to a later
    /// handler call with `token`.
    pub async fn send_request<P: Serialize + ?Sized>(
        &mut self,
        token: Token,
        method: &str,
        params: Option<&P>,
        timeout: Option<Duration>,
    ) -> Result<(), Error<IO::Error>> {
        self.command(|conn, now| conn.send_request(now, token, method, params, timeout))
            .await
    }

    /// Sends a notification and writes it out.
    pub async fn send_notification<P: Serialize + ?Sized>(
        &mut self,
        method: &str,
        params: Option<&P>,
    ) -> Result<(), Error<IO::Error>> {
        self.command(|conn, _| conn.send_notification(method, params))
            .await
    }

    /// Expires due deadlines and handles everything already received, without reading.
    pub async fn process<F>(&mut self, handler: F) -> Result<(), Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        self.handle_bytes(&[], handler).await.map(|_| ())
    }

    /// Feeds bytes received elsewhere and handles everything they complete; returns how
    /// many were taken ([`Driver::handle_bytes`](crate::Driver::handle_bytes)).
    pub async fn handle_bytes<F>(
        &mut self,
        bytes: &[u8],
        mut handler: F,
    ) -> Result<usize, Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        self.session.begin()?;
        let mut input = bytes;
        loop {
            match self.session.step(&mut input) {
                Step::Transmit => {
                    transmit(&mut self.session.conn, &mut self.io).await?;
                }
                Step::Handle(turn, item) => {
                    handler(&mut Context::new(turn, &mut self.io), item).await;
                    self.session.check()?;
                }
                Step::Done => return Ok(bytes.len() - input.len()),
            }
        }
    }
}

impl<IO: Read + Write, C: Clock, S: Storage, const RX: usize> AsyncDriver<IO, C, S, RX> {
    /// Reads once (awaiting at least one byte), then handles everything received.
    pub async fn read_once<F>(&mut self, mut handler: F) -> Result<(), Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        self.process(&mut handler).await?;
        let spare = self.session.rx.spare();
        if spare.is_empty() {
            return Ok(());
        }
        let read = self.io.read(spare).await;
        self.session.received(read)?;
        self.process(&mut handler).await
    }

    /// Serves forever ([`read_once`](AsyncDriver::read_once) in a loop); returns only on a
    /// transport error. Deadlines expire only when input arrives: see
    /// [`serve_with_timer`](AsyncDriver::serve_with_timer).
    pub async fn serve<F>(&mut self, mut handler: F) -> Result<Infallible, Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        loop {
            self.read_once(&mut handler).await?;
        }
    }
}

impl<IO: Read + Write, C: Timer, S: Storage, const RX: usize> AsyncDriver<IO, C, S, RX> {
    /// Waits for whichever comes first: input (read into the receive buffer), the next
    /// deadline (a pending request's or a tick's), or `other`, whose output it returns. The
    /// futures that lose are dropped: the reader's `read` must be cancel-safe, as
    /// `embedded_io_async` asks. While input is blocked (the receive buffer is full until the
    /// handler answers), nothing is read.
    async fn wait_for<T>(
        &mut self,
        other: impl Future<Output = T>,
    ) -> Result<Option<T>, Error<IO::Error>> {
        let deadline = self.session.deadline();
        let spare = self.session.rx.spare();
        let blocked = spare.is_empty();
        let io = &mut self.io;
        let read = async move {
            match blocked {
                true => pending().await,
                false => io.read(spare).await,
            }
        };
        let clock = &mut self.session.clock;
        let sleep = async move {
            match deadline {
                Some(at) => clock.sleep_until(at).await,
                None => pending().await,
            }
        };
        match race(read, sleep, other).await {
            Woke::Read(read) => self.session.received(read).map(|()| None),
            Woke::Deadline => Ok(None),
            Woke::Other(out) => Ok(Some(out)),
        }
    }

    /// Reads once or until the next deadline, whichever comes first, then handles what is
    /// due. The reader's `read` must be cancel-safe.
    pub async fn read_once_or_deadline<F>(&mut self, mut handler: F) -> Result<(), Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        self.process(&mut handler).await?;
        self.wait_for(pending::<Infallible>()).await?;
        self.process(&mut handler).await
    }

    /// Serves forever, expiring deadlines on time; returns only on a transport error.
    pub async fn serve_with_timer<F>(
        &mut self,
        mut handler: F,
    ) -> Result<Infallible, Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        loop {
            self.read_once_or_deadline(&mut handler).await?;
        }
    }

    /// Like [`read_once_or_deadline`](AsyncDriver::read_once_or_deadline), and also wakes
    /// for a notification another task put in `outbox`, which it sends (writing out what is
    /// queued first when the transmit buffer is full).
    ///
    /// A notification the connection refuses (one longer than the transmit buffer: size the
    /// outbox's `P` below `TX` less the method and envelope) is returned as
    /// [`Error::Send`]; the driver keeps serving when called again.
    pub async fn wait_once<F, M: RawMutex, const N: usize, const P: usize>(
        &mut self,
        outbox: &Outbox<M, N, P>,
        mut handler: F,
    ) -> Result<(), Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        self.process(&mut handler).await?;
        if let Some(note) = self.wait_for(outbox.next()).await? {
            log!(trace, "rpcwire: notification from the outbox");
            self.send_notification(note.method, note.params().as_ref())
                .await?;
        }
        self.process(&mut handler).await
    }

    /// Serves forever ([`wait_once`](AsyncDriver::wait_once) in a loop): answers the host,
    /// expires deadlines and ticks on time, and sends what other tasks put in `outbox`.
    /// Returns on a transport error, or a notification the connection refused.
    pub async fn serve_with_outbox<F, M: RawMutex, const N: usize, const P: usize>(
        &mut self,
        outbox: &Outbox<M, N, P>,
        mut handler: F,
    ) -> Result<Infallible, Error<IO::Error>>
    where
        F: AsyncFnMut(&mut AsyncContext<'_, IO, S>, Incoming<'_>),
    {
        loop {
            self.wait_once(outbox, &mut handler).await?;
        }
    }
}

/// Which of [`race`]'s futures completed first.
enum Woke<R, T> {
    Read(R),
    Deadline,
    Other(T),
}

/// Polls `read`, `other` and `sleep` together (in that order: a ready input or note goes
/// before a deadline, which the next driver call expires anyway) until one completes; the
/// others are dropped.
async fn race<R, T>(
    read: impl Future<Output = R>,
    sleep: impl Future<Output = ()>,
    other: impl Future<Output = T>,
) -> Woke<R, T> {
    let mut read = pin!(read);
    let mut sleep = pin!(sleep);
    let mut other = pin!(other);
    poll_fn(|cx| {
        if let Poll::Ready(v) = read.as_mut().poll(cx) {
            return Poll::Ready(Woke::Read(v));
        }
        if let Poll::Ready(v) = other.as_mut().poll(cx) {
            return Poll::Ready(Woke::Other(v));
        }
        if sleep.as_mut().poll(cx).is_ready() {
            return Poll::Ready(Woke::Deadline);
        }
        Poll::Pending
    })
    .await
}

/// Runs a future to completion on the current thread by polling it in a loop with a no-op
/// waker. Enough for tests, documentation and futures over I/O that is always ready; not an
/// executor.
#[doc(hidden)]
pub fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = core::task::Context::from_waker(core::task::Waker::noop());
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

impl embedded_io_async::Read for crate::doc_uart::Uart {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        embedded_io::Read::read(self, buf)
    }
}

impl embedded_io_async::Write for crate::doc_uart::Uart {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        embedded_io::Write::write(self, buf)
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}
