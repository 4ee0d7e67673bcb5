//! The blocking driver over [`embedded_io::Read`] + [`embedded_io::Write`].

use core::convert::Infallible;
use core::marker::PhantomData;
use core::time::Duration;

use embedded_io::{Read, ReadReady, Write};
use rpcwire::methods::{Answer, MethodError};
use rpcwire::storage::Storage;
use rpcwire::{
    Connection, ErrorCode, Instant, RequestHandle, RespondError, Retry, SendError, Token,
};
use serde::Serialize;

use crate::driver::{Blocking, Context, Driver};
use crate::session::{written, Step};
use crate::{Clock, Error, Incoming};

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

impl<IO: Write, S: Storage> Context<'_, IO, S, Blocking> {
    /// Writes out every queued byte now. Returns false when nothing was written (the queue
    /// was empty, or the transport failed: the driver reports that after the handler).
    pub fn flush(&mut self) -> bool {
        // After a transport error met by the handler's commands, nothing more is written.
        if self.turn.failed.is_some() {
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
            if !outcome.would_block() || !self.flush() {
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
}

/// A dispatch table's answers: the connection's ([`Answer`] for [`Connection`]), written out
/// and retried like [`Context::respond`].
impl<IO: Write, S: Storage> Answer for Context<'_, IO, S, Blocking> {
    fn result<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.retry(|conn| conn.result(handle, result))
    }

    fn error(&mut self, handle: RequestHandle, error: MethodError) -> Result<(), RespondError> {
        self.retry(|conn| conn.error(handle, error))
    }
}

impl<IO: Write, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX, Blocking> {
    /// Runs `command` on the connection, writing out and retrying while it would block
    /// ([`Context::retry`]), then writes out what it queued.
    fn command<T>(
        &mut self,
        mut command: impl FnMut(&mut Connection<S>, Instant) -> Result<T, SendError>,
    ) -> Result<T, Error<IO::Error>> {
        let turn = self.session.turn()?;
        let now = turn.now;
        // Built in place, not by `Context::new`: the firmware image is 12 bytes smaller.
        let mut ctx: Context<'_, IO, S> = Context {
            turn,
            io: &mut self.io,
            front: PhantomData,
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
                    handler(&mut Context::new(turn, &mut self.io), item);
                    self.session.check()?;
                }
                Step::Done => return Ok(bytes.len() - input.len()),
            }
        }
    }
}

impl<IO: Read + Write, C: Clock, S: Storage, const RX: usize> Driver<IO, C, S, RX, Blocking> {
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

impl<IO: Read + Write + ReadReady, C: Clock, S: Storage, const RX: usize>
    Driver<IO, C, S, RX, Blocking>
{
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
