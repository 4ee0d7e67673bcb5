//! What the blocking [`Driver`](crate::Driver) and the async
//! `AsyncDriver` (feature `async`) have in common: everything that does no I/O.
//!
//! Both drivers are the same loop around a [`Session`] (the connection, the receive buffer,
//! the clock, and the transport error met inside a handler): [`Session::step`] feeds input to
//! the core and says what comes next, as a [`Step`]:
//! - [`Step::Transmit`]: write out the connection's queued bytes;
//! - [`Step::Handle`]: give this item to the handler (with a [`Turn`] for its context);
//! - [`Step::Done`]: everything received is handled (or input waits for the application).
//!
//! Each front end is then a few lines that perform the step with its own `read`, `write` and
//! `.await`. The order of events, automatic replies, deadlines and the retry rule are
//! written once, here, as ordinary functions. Why this and not a `macro_rules!` that expands
//! one body with and without `.await`:
//! - the logic stays plain Rust that the compiler, rustdoc and a reader see once, and the
//!   tests below drive it with no I/O at all;
//! - the firmware image is smaller, not larger: the handler is called at one place (items
//!   and events alike come out of `step`), so the compiler builds it once, inline, where the
//!   hand-written loops called it at two places and kept it out of line; a macro would have
//!   kept those two places. On `examples/firmware` the step machine, the core's drain and
//!   `poll` with one call of `process` take 364 bytes less flash than the former loops (with
//!   the same core); the async driver adds nothing to a blocking image.
//!
//! Writing out is the one part that cannot be shared as a function: the blocking driver
//! drains with the core's [`Connection::transmit_with`], whose closure cannot `.await`, so the
//! async driver runs the same `poll_transmit`/`advance_transmit` loop around its `write`
//! (`asynch::transmit`). Both classify a write's result with [`written`], and both decide
//! whether a command should be retried with the core's [`Retry`](rpcwire::Retry).

use rpcwire::storage::{Slots, Storage};
use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Input, Instant};

use crate::{Clock, Error, Incoming};

/// The state of a driver besides its I/O object. `E` is the I/O error type, `C` the clock,
/// `S` the connection's storage and `B` the receive buffer's.
pub(crate) struct Session<E, C, S: Storage, B> {
    pub(crate) clock: C,
    pub(crate) conn: Connection<S>,
    pub(crate) rx: RxBuffer<B>,
    /// A transport error met inside a handler, returned by the driver call that ran it.
    pub(crate) failed: Option<Error<E>>,
}

/// What a handler's context holds besides the I/O object: the connection, the time the item
/// was taken, and where a transport error met by the handler's commands goes.
pub(crate) struct Turn<'a, E, S: Storage> {
    pub(crate) conn: &'a mut Connection<S>,
    pub(crate) now: Instant,
    pub(crate) failed: &'a mut Option<Error<E>>,
}

/// What a driver does next (see the [module documentation](self)).
pub(crate) enum Step<'a, E, S: Storage> {
    /// Write out every queued byte, then call [`Session::step`] again.
    Transmit,
    /// Give the item to the handler, with a context over the turn; then report
    /// [`Session::check`] and call [`Session::step`] again.
    Handle(Turn<'a, E, S>, Incoming<'a>),
    /// Everything received is handled, or input is blocked until the application answers
    /// requests of a batch: the driver call ends.
    Done,
}

/// An output of the connection that the driver acts on.
enum Output {
    Event(rpcwire::Event),
    Transmit,
}

/// The outputs, in the order of `poll_output`: an event for the handler, else bytes to write,
/// else nothing. (Its deadline is not needed here: the front end asks for it once, when it is
/// about to wait.) A function of the connection alone, so that it can run while an item
/// borrows the receive buffer.
fn output<S: Storage>(conn: &mut Connection<S>) -> Option<Output> {
    match conn.poll_event() {
        Some(event) => Some(Output::Event(event)),
        None if conn.poll_transmit().is_empty() => None,
        None => Some(Output::Transmit),
    }
}

impl<E, C, S: Storage, B> Session<E, C, S, B> {
    /// A session over a connection and a receive buffer (their framings must match).
    #[inline(always)]
    pub(crate) const fn new(clock: C, conn: Connection<S>, rx: RxBuffer<B>) -> Self {
        Session {
            clock,
            conn,
            rx,
            failed: None,
        }
    }

    /// Reports (once) a transport error met inside a handler.
    pub(crate) fn check(&mut self) -> Result<(), Error<E>> {
        match self.failed.take() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

impl<E, C: Clock, S: Storage, B: Slots<u8>> Session<E, C, S, B> {
    /// The earliest instant the driver must run again: a pending request's deadline or the
    /// clock's next tick ([`Ticker`](crate::clock::Ticker)).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        match (self.conn.poll_timeout(), self.clock.next_tick()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Starts a driver call that handles input: reports an earlier transport error and
    /// expires due deadlines (their failures come out of the next steps, before new input).
    pub(crate) fn begin(&mut self) -> Result<(), Error<E>> {
        self.check()?;
        let now = self.clock.now();
        self.conn.handle_timeout(now);
        Ok(())
    }

    /// Starts a command of the driver itself (`send_request`, ...): reports an earlier
    /// transport error and reads the clock. The front end runs the command through a context
    /// over the returned turn, writes out, then reports [`check`](Session::check).
    pub(crate) fn turn(&mut self) -> Result<Turn<'_, E, S>, Error<E>> {
        self.check()?;
        let now = self.clock.now();
        Ok(Turn {
            conn: &mut self.conn,
            now,
            failed: &mut self.failed,
        })
    }

    /// Feeds the rest of `input` (after what the receive buffer holds) and says what to do
    /// next. The drain rule, in this order: events first, then queued bytes, then a due tick,
    /// then the next inbound item; when input stops (handled, blocked for transmit room,
    /// closed), the events and bytes it left are drained and input resumes, until nothing is
    /// left.
    pub(crate) fn step(&mut self, input: &mut &[u8]) -> Step<'_, E, S> {
        let now = self.clock.now();
        let item = match output(&mut self.conn) {
            Some(Output::Transmit) => return Step::Transmit,
            Some(Output::Event(event)) => Incoming::Event(event),
            // A clock without a schedule says `None` here, inline: no code in its images.
            None => match self.clock.tick(now) {
                Some(due) => Incoming::Tick(due),
                None => match self.conn.handle_input(now, &mut self.rx, input) {
                    Input::Item(item) => item.into(),
                    // Everything buffered is handled, or input waits for transmit room: drain
                    // what that left; after writing something out there may be more to do.
                    Input::NeedMore | Input::Blocked | Input::Closed => {
                        match output(&mut self.conn) {
                            Some(Output::Transmit) => return Step::Transmit,
                            Some(Output::Event(event)) => Incoming::Event(event),
                            None => return Step::Done,
                        }
                    }
                },
            },
        };
        log_item(&item);
        let turn = Turn {
            conn: &mut self.conn,
            now,
            failed: &mut self.failed,
        };
        Step::Handle(turn, item)
    }

    /// Accounts one read into [`RxBuffer::spare`]: `Ok(0)` is the end of the stream.
    pub(crate) fn received(&mut self, read: Result<usize, E>) -> Result<(), Error<E>> {
        let read = read.map_err(|e| {
            log!(warn, "rpcwire: read failed");
            Error::Io(e)
        });
        match read? {
            0 => {
                log!(warn, "rpcwire: end of stream");
                Err(Error::Eof)
            }
            n => {
                self.rx.commit(n);
                Ok(())
            }
        }
    }
}

impl<E, S: Storage> Turn<'_, E, S> {
    /// Keeps the outcome of a write-out done for a handler: true when bytes were written;
    /// a transport error is kept for the driver call to return after the handler.
    pub(crate) fn wrote(&mut self, outcome: Result<bool, Error<E>>) -> bool {
        match outcome {
            Ok(wrote) => wrote,
            Err(e) => {
                *self.failed = Some(e);
                false
            }
        }
    }
}

/// The result of one `write` during a drain: how many bytes it took, a writer that takes
/// none of a non-empty buffer being an error (the drain would never end).
pub(crate) fn written<E>(write: Result<usize, E>) -> Result<usize, Error<E>> {
    match write {
        Ok(0) => {
            log!(warn, "rpcwire: the writer took no bytes");
            Err(Error::WriteZero)
        }
        Ok(n) => Ok(n),
        Err(e) => {
            log!(warn, "rpcwire: write failed");
            Err(Error::Io(e))
        }
    }
}

/// Logs what the handler is about to get (feature `defmt`): peer problems (already answered)
/// and events at `warn`/`debug`, the rest at `trace`.
#[cfg_attr(not(feature = "defmt"), allow(unused_variables))]
fn log_item(item: &Incoming<'_>) {
    match item {
        Incoming::Problem(rpcwire::Problem::ParseError(e)) => {
            log!(warn, "rpcwire: unparseable frame answered: {}", e);
        }
        Incoming::Problem(rpcwire::Problem::FrameTooLarge { len }) => {
            log!(
                warn,
                "rpcwire: frame of {} bytes over the limit answered",
                len
            );
        }
        Incoming::Problem(_) => log!(warn, "rpcwire: invalid message from the peer"),
        Incoming::Event(event) => log!(debug, "rpcwire: {}", event),
        Incoming::Request(_) => log!(trace, "rpcwire: request"),
        Incoming::Notification(_) => log!(trace, "rpcwire: notification"),
        Incoming::Response(r) => log!(trace, "rpcwire: response for token {}", r.token.0),
        Incoming::Tick(due) => log!(trace, "rpcwire: tick due at {} us", due.as_micros()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcwire::storage::Inline;
    use rpcwire::wire::NO_PARAMS;
    use rpcwire::{Config, Token};

    type TestSession =
        Session<core::convert::Infallible, fn() -> Instant, Inline<512, 256, 2, 2>, [u8; 256]>;

    fn session() -> TestSession {
        let config = Config::DEFAULT;
        Session::new(
            (|| Instant::ZERO) as fn() -> Instant,
            Connection::const_new(config),
            RxBuffer::const_with_max_frame(config.framing, config.max_frame),
        )
    }

    /// Drives a session with no I/O: writes are collected into `out`, handler calls counted.
    fn run(s: &mut TestSession, mut input: &[u8], out: &mut [u8; 512]) -> (usize, usize) {
        let (mut len, mut items) = (0, 0);
        assert_eq!(s.begin(), Ok(()));
        loop {
            match s.step(&mut input) {
                Step::Transmit => {
                    let bytes = s.conn.poll_transmit();
                    out[len..len + bytes.len()].copy_from_slice(bytes);
                    len += bytes.len();
                    let n = bytes.len();
                    s.conn.advance_transmit(n);
                }
                Step::Handle(turn, item) => {
                    items += 1;
                    if let Incoming::Request(req) = item {
                        let answered = turn.conn.respond(req.handle, &true);
                        assert_eq!(answered, Ok(()));
                    }
                }
                Step::Done => return (len, items),
            }
        }
    }

    #[test]
    fn steps_answer_a_request_and_end() {
        let mut s = session();
        let mut out = [0; 512];
        let (len, items) = run(
            &mut s,
            b"{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}\n",
            &mut out,
        );
        assert_eq!(items, 1);
        assert_eq!(
            &out[..len],
            b"{\"jsonrpc\":\"2.0\",\"result\":true,\"id\":1}\n"
        );
    }

    #[test]
    fn automatic_replies_are_written_before_the_call_ends() {
        let mut s = session();
        let mut out = [0; 512];
        let (len, items) = run(&mut s, b"nonsense\n", &mut out);
        assert_eq!(items, 1, "the problem goes to the handler");
        assert!(out[..len].starts_with(b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32700"));
    }

    #[test]
    fn expired_requests_come_out_as_events_first() {
        let mut s = session();
        let timeout = Some(core::time::Duration::from_millis(1));
        let sent = s
            .conn
            .send_request(Instant::ZERO, Token(7), "x", NO_PARAMS, timeout);
        assert_eq!(sent, Ok(()));
        s.conn.handle_timeout(Instant::from_millis(5));
        let mut input: &[u8] = b"";
        assert!(matches!(
            s.step(&mut input),
            Step::Handle(
                _,
                Incoming::Event(rpcwire::Event::RequestFailed {
                    token: Token(7),
                    ..
                })
            )
        ));
        assert!(matches!(s.step(&mut input), Step::Transmit));
    }

    #[test]
    fn a_write_of_nothing_is_an_error() {
        assert_eq!(written::<()>(Ok(0)), Err(Error::WriteZero));
        assert_eq!(written::<()>(Ok(3)), Ok(3));
        assert_eq!(written(Err(())), Err(Error::Io(())));
    }

    #[test]
    fn end_of_stream_and_read_errors() {
        let mut s: Session<(), _, Inline<512, 256, 2, 2>, [u8; 256]> = Session::new(
            || Instant::ZERO,
            Connection::const_new(Config::DEFAULT),
            RxBuffer::const_new(Config::DEFAULT.framing),
        );
        assert_eq!(s.received(Ok(0)), Err(Error::Eof));
        assert_eq!(s.received(Err(())), Err(Error::Io(())));
        s.rx.spare()[0] = b'\n';
        assert_eq!(s.received(Ok(1)), Ok(()));
    }
}
