//! The harness for a firmware handler: a core [`Connection`] with the storage the firmware
//! uses (inline, no heap), driven synchronously, byte chunk by byte chunk.

use std::panic::{catch_unwind, AssertUnwindSafe};

use rpcwire::storage::{Inline, Storage};
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Inbound, Input, Instant, Output};

use crate::model::Limits;
use crate::{check_exchange, panics, Case, Violation};

/// How many times in a row the input may report [`Input::Blocked`] with nothing to write
/// before the harness calls it a stall.
const MAX_IDLE_SPINS: usize = 64;

/// Runs [`Case`]s through a firmware handler (`handler(&mut conn, item)` for each inbound
/// item, as a firmware's serve loop calls it) on a core connection with storage `S`
/// (default [`Inline`]) and a receive buffer of `RX` bytes, and checks the same invariants as
/// [`Harness`](crate::Harness): one valid answer per request, none per notification, batches
/// as the specification says, no stall, no panic, and afterwards no pending or in-flight
/// entry, nothing left to transmit and no more storage than a fresh connection.
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
pub struct Firmware<H, S: Storage = Inline, const RX: usize = 1024> {
    config: Config,
    handler: std::cell::RefCell<H>,
    _storage: std::marker::PhantomData<S>,
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
    /// A harness for `handler` on connections made with `config`.
    pub fn new(config: Config, handler: H) -> Self {
        Firmware {
            config,
            handler: std::cell::RefCell::new(handler),
            _storage: std::marker::PhantomData,
        }
    }

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

    /// Runs one case; the first broken invariant, if any.
    pub fn check(&self, case: &Case) -> Result<(), Violation> {
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
        check_exchange(&input, &output, &limits)?;
        if let Some(message) = panic {
            return Err(Violation::Panic { message });
        }
        after
    }

    fn run(&self, case: &Case) -> (Vec<u8>, Result<(), Violation>) {
        let mut handler = self.handler.borrow_mut();
        let mut conn: Connection<S> = Connection::new(self.config);
        let fresh = conn.storage_bytes();
        let mut rx: RxBuffer<[u8; RX]> = conn.rx_buffer();
        let mut out = Vec::new();
        let mut now = Instant::ZERO;
        for write in case.writes(self.config.framing) {
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
        let held = [
            ("pending requests", conn.pending_len()),
            ("in-flight requests", conn.inflight_len()),
            ("bytes to transmit", conn.transmit_len()),
        ];
        let after = match held.iter().find(|(_, n)| *n > 0) {
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
        };
        (out, after)
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
