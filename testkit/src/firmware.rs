//! The harness for a firmware handler: a core [`Connection`] with the storage the firmware
//! uses (inline, no heap), driven synchronously, byte chunk by byte chunk; or the
//! rpcwire-embedded-io [`Driver`] itself, running a handler written against its [`Context`].

use std::cell::Cell;
use std::convert::Infallible;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::rc::Rc;
use std::sync::Arc;

use rpcwire::storage::{Inline, Storage};
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Inbound, Input, Instant, Output};
use rpcwire_embedded_io::{embedded_io, Clock, Context, Driver, Incoming};

use crate::check::{exchange, Seen};
use crate::model::{owed, Limits};
use crate::oracle::Oracle;
use crate::report::Reproduce;
use crate::{panics, Case, Model, Violation};

/// How many times in a row the input may report [`Input::Blocked`] with nothing to write
/// before the harness calls it a stall.
const MAX_IDLE_SPINS: usize = 64;

/// Runs [`Case`]s through a firmware handler on a connection with storage `S` (default
/// [`Inline`]) and a receive buffer of `RX` bytes, and checks the same invariants as
/// [`Harness`](crate::Harness): one valid answer per request, none per notification, batches
/// as the specification says, no stall, no panic, and afterwards no pending or in-flight
/// entry, nothing left to transmit and no more storage than a fresh connection.
///
/// Two kinds of handler:
/// - [`Firmware::driver`]: a handler written against the rpcwire-embedded-io driver,
///   `FnMut(&mut Context<'_, IO, S>, Incoming<'_>)`, run as written by a real
///   [`Driver`] over a [`FirmwareUart`] (bytes fed as an interrupt handler would, with
///   [`Driver::handle_bytes`]; writes of a few bytes at a time). Each item reaches the
///   handler once, so side effects run once per request.
/// - [`Firmware::new`]: a handler over the core connection, `handler(&mut conn, item)`.
///
/// ```
/// use rpcwire::{Config, Inbound};
/// use rpcwire_testkit::{Case, Firmware, Frame, Message};
///
/// let fw: Firmware<_> = Firmware::new(Config::default(), |conn, item| {
///     let _ = rpcwire_demo::handle(conn, item);
/// });
/// let case = Case::new(vec![Frame::Single(Message::request("sum", serde_json::json!([1, 2]), 1))]);
/// assert_eq!(fw.check(&case), Ok(()));
/// ```
///
/// The same [`Model`] checks as [`Harness`](crate::Harness) ([`Firmware::model`]), and with
/// feature `proptest` the same helpers: `Firmware::run_proptest` and `Firmware::proptest`.
pub struct Firmware<H, S: Storage = Inline, const RX: usize = 1024> {
    config: Config,
    handler: std::cell::RefCell<H>,
    _storage: std::marker::PhantomData<S>,
    model: Option<Arc<dyn Oracle>>,
    pub(crate) reproduce: Reproduce,
}

/// A handler written against the embedded-io driver's [`Context`] (see
/// [`Firmware::driver`]).
#[derive(Debug)]
pub struct DriverHandler<H>(H);

/// What runs a case's bytes through a handler: the core connection, or the embedded-io
/// driver.
pub trait Serve<S: Storage, const RX: usize> {
    /// Feeds `case` in its chunks; the bytes written, and whether the connection ended
    /// idle.
    fn serve(&mut self, config: Config, case: &Case) -> (Vec<u8>, Result<(), Violation>);
}

impl<H, S: Storage, const RX: usize> std::fmt::Debug for Firmware<H, S, RX> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Firmware")
            .field("config", &self.config)
            .finish()
    }
}

impl<H, S, const RX: usize> Firmware<H, S, RX>
where
    H: FnMut(&mut Connection<S>, Inbound<'_>),
    S: Storage,
{
    /// A harness for `handler` over a core connection made with `config`.
    pub fn new(config: Config, handler: H) -> Self {
        Firmware {
            config,
            handler: std::cell::RefCell::new(handler),
            _storage: std::marker::PhantomData,
            model: None,
            reproduce: Reproduce::new("firmware()"),
        }
    }
}

impl<H, S, const RX: usize> Firmware<DriverHandler<H>, S, RX>
where
    H: FnMut(&mut Context<'_, FirmwareUart, S>, Incoming<'_>),
    S: Storage,
{
    /// A harness for a handler of the embedded-io driver, run by a [`Driver`] with a
    /// connection made with `config`. Write the firmware's handler generic over the I/O
    /// object (`fn handle<IO: embedded_io::Write>(ctx: &mut Context<'_, IO, Store>, item:
    /// Incoming<'_>)`) and the firmware and this harness run the same code.
    ///
    /// ```
    /// use rpcwire::Config;
    /// use rpcwire_embedded_io::methods::{MethodError, Methods};
    /// use rpcwire_embedded_io::{Incoming, Inline};
    /// use rpcwire_testkit::{Case, Firmware, Frame, Message};
    ///
    /// let mut presses = 0u32;
    /// let mut methods = Methods::new().method("press", |n: &mut u32, _: ()| {
    ///     *n += 1; // the side effect: once per request
    ///     Ok::<_, MethodError>(*n)
    /// });
    /// let fw: Firmware<_, Inline<1024, 960, 4, 4>> =
    ///     Firmware::driver(Config::default(), |ctx, item| {
    ///         methods.dispatch(&mut presses, ctx, item);
    ///     });
    /// let case = Case::new(vec![Frame::Single(Message::Request {
    ///     method: "press".into(), params: None, id: rpcwire_testkit::Id::Num(1),
    /// })]);
    /// assert_eq!(fw.check(&case), Ok(()));
    /// # drop(fw);
    /// # assert_eq!(presses, 1);
    /// ```
    pub fn driver(config: Config, handler: H) -> Self {
        Firmware {
            config,
            handler: std::cell::RefCell::new(DriverHandler(handler)),
            _storage: std::marker::PhantomData,
            model: None,
            reproduce: Reproduce::new("firmware()"),
        }
    }
}

impl<H, S, const RX: usize> Firmware<H, S, RX>
where
    H: Serve<S, RX>,
    S: Storage,
{
    /// The limits the reference model applies: the config's (a frame is also bounded by the
    /// receive buffer).
    pub fn limits(&self) -> Limits {
        Limits {
            framing: self.config.framing,
            max_frame: self.config.max_frame.min(RX),
            max_depth: self.config.max_depth,
            max_batch_len: self.config.max_batch_len,
            batches: self.config.batches,
        }
    }

    /// Checks every answer to the methods `model` names against it (see [`Model`]). The
    /// handler runs the calls in the order sent, as the model does.
    pub fn model<M: Clone + Send + Sync + 'static>(mut self, model: Model<M>) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// The expression a printed regression test gets its harness from (default
    /// `firmware()`).
    pub fn reproduce_with(mut self, expression: &str) -> Self {
        self.reproduce.expression = expression.to_owned();
        self
    }

    /// The seed of `run_proptest` when the environment variable `RPCWIRE_TESTKIT_SEED` does
    /// not give one (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.reproduce.seed = Some(seed);
        self
    }

    /// The method names the [`Coverage`](crate::Coverage) summary lists as never called when
    /// the traffic did not reach them (a firmware handler has no list of its own).
    pub fn methods(mut self, names: &[&str]) -> Self {
        self.reproduce.methods = names.iter().map(|n| (*n).to_owned()).collect();
        self
    }

    /// Runs one case; the first broken invariant, if any.
    pub fn check(&self, case: &Case) -> Result<(), Violation> {
        self.check_seen(case).map(drop)
    }

    /// Runs one case; what it showed, or the first broken invariant.
    pub(crate) fn check_seen(&self, case: &Case) -> Result<Seen, Violation> {
        case.vacuous()?;
        let limits = self.limits();
        let input = case.bytes(limits.framing);
        let (outcome, panic) = panics::watch(|| catch_unwind(AssertUnwindSafe(|| self.run(case))));
        let (output, after) = match outcome {
            Ok(result) => result,
            Err(_) => {
                return Err(Violation::Panic {
                    message: panic.unwrap_or_else(|| "unknown".into()),
                })
            }
        };
        let mut owed = owed(&input, &limits);
        if let Some(model) = &self.model {
            owed.expect(&mut *model.start());
        }
        let seen = exchange(owed, &output, limits.framing)?;
        if let Some(message) = panic {
            return Err(Violation::Panic { message });
        }
        after.map(|()| seen)
    }

    fn run(&self, case: &Case) -> (Vec<u8>, Result<(), Violation>) {
        self.handler.borrow_mut().serve(self.config, case)
    }
}

impl<H, S, const RX: usize> Serve<S, RX> for H
where
    H: FnMut(&mut Connection<S>, Inbound<'_>),
    S: Storage,
{
    fn serve(&mut self, config: Config, case: &Case) -> (Vec<u8>, Result<(), Violation>) {
        let handler = self;
        let mut conn: Connection<S> = Connection::new(config);
        let fresh = conn.storage_bytes();
        let mut rx: RxBuffer<[u8; RX]> = conn.rx_buffer();
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        for write in case.writes(config.framing) {
            let mut input = &write[..];
            let mut idle_spins = 0;
            loop {
                match conn.handle_input(now, &mut rx, &mut input) {
                    Input::Item(item) => (*handler)(&mut conn, item),
                    Input::Blocked => {
                        if drain(&mut conn, &mut out) == 0 {
                            idle_spins += 1;
                            if idle_spins > MAX_IDLE_SPINS {
                                return (out, Err(Violation::NoEnd));
                            }
                        }
                        continue;
                    }
                    Input::NeedMore | Input::Closed => break,
                }
                idle_spins = 0;
                drain(&mut conn, &mut out);
            }
            drain(&mut conn, &mut out);
            now = now + std::time::Duration::from_millis(1);
        }
        drain(&mut conn, &mut out);
        (out, idle(&conn, fresh))
    }
}

impl<H, S, const RX: usize> Serve<S, RX> for DriverHandler<H>
where
    H: FnMut(&mut Context<'_, FirmwareUart, S>, Incoming<'_>),
    S: Storage,
{
    fn serve(&mut self, config: Config, case: &Case) -> (Vec<u8>, Result<(), Violation>) {
        let handler = &mut self.0;
        let conn: Connection<S> = Connection::new(config);
        let fresh = conn.storage_bytes();
        let rx: RxBuffer<[u8; RX]> = conn.rx_buffer();
        let clock = HarnessClock::default();
        let mut driver: Driver<FirmwareUart, HarnessClock, S, RX> =
            Driver::from_parts(FirmwareUart::default(), clock.clone(), conn, rx);
        for write in case.writes(config.framing) {
            let mut input = &write[..];
            let mut idle_spins = 0;
            while !input.is_empty() {
                // Bytes as an interrupt handler collects them; fewer are taken while the
                // handler leaves requests of a batch unanswered.
                let taken = match driver.handle_bytes(input, &mut *handler) {
                    Ok(taken) => taken,
                    Err(e) => return driver_failed(&mut driver, e),
                };
                input = &input[taken..];
                idle_spins = if taken == 0 { idle_spins + 1 } else { 0 };
                if idle_spins > MAX_IDLE_SPINS {
                    return (driver.io().out.clone(), Err(Violation::NoEnd));
                }
            }
            clock.0.set(clock.0.get() + 1);
        }
        if let Err(e) = driver.process(&mut *handler) {
            return driver_failed(&mut driver, e);
        }
        let after = idle(driver.conn(), fresh);
        (std::mem::take(&mut driver.io_mut().out), after)
    }
}

/// What was written before the driver failed, and the failure (the harness's UART cannot fail:
/// a command the handler's connection refused, for one).
fn driver_failed<S: Storage, const RX: usize>(
    driver: &mut Driver<FirmwareUart, HarnessClock, S, RX>,
    e: rpcwire_embedded_io::Error<Infallible>,
) -> (Vec<u8>, Result<(), Violation>) {
    let out = std::mem::take(&mut driver.io_mut().out);
    let error = format!("the driver failed: {e}");
    (out, Err(Violation::ServerFailed { error }))
}

/// Whether a connection is back to idle after a case: nothing pending, in flight or left to
/// transmit, and no more storage than `fresh`.
fn idle<S: Storage>(conn: &Connection<S>, fresh: usize) -> Result<(), Violation> {
    let held = [
        ("pending requests", conn.pending_len()),
        ("in-flight requests", conn.inflight_len()),
        ("bytes to transmit", conn.transmit_len()),
    ];
    match held.iter().find(|(_, n)| *n > 0) {
        Some((what, n)) => Err(Violation::NotIdle {
            detail: format!("{n} {what} left"),
        }),
        None if conn.storage_bytes() > fresh => Err(Violation::NotIdle {
            detail: format!(
                "{} bytes of storage, {fresh} when fresh",
                conn.storage_bytes()
            ),
        }),
        None => Ok(()),
    }
}

/// The UART of [`Firmware::driver`]'s driver: keeps what the driver writes, taking at most
/// seven bytes per `write` (as a UART's FIFO does), so that partial writes are exercised.
#[derive(Debug, Default)]
pub struct FirmwareUart {
    out: Vec<u8>,
}

impl embedded_io::ErrorType for FirmwareUart {
    type Error = Infallible;
}

impl embedded_io::Write for FirmwareUart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        let n = buf.len().min(7);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

/// The driver's clock in the harness: one millisecond per chunk written.
#[derive(Debug, Clone, Default)]
struct HarnessClock(Rc<Cell<u64>>);

impl Clock for HarnessClock {
    fn now(&mut self) -> Instant {
        Instant::from_millis(self.0.get())
    }
}

/// Writes out everything the connection has to send; how many bytes.
fn drain<S: Storage>(conn: &mut Connection<S>, out: &mut Vec<u8>) -> usize {
    let mut total = 0;
    loop {
        match conn.poll_output() {
            Output::Transmit(bytes) => {
                let n = bytes.len();
                out.extend_from_slice(bytes);
                conn.advance_transmit(n);
                total += n;
            }
            Output::Event(_) => {}
            Output::Timeout(_) | Output::Idle => return total,
        }
    }
}
