#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-embedded-io
//!
//! Runs an [`rpcwire::Connection`] over any [`embedded_io`] byte stream (a UART, a USB CDC
//! class, a TCP socket of an embedded network stack) with no heap and no `std`: the
//! blocking [`Driver`] over [`embedded_io::Read`] + [`embedded_io::Write`], and with the
//! `async` feature the `asynch::AsyncDriver` over `embedded_io_async`.
//!
//! The driver owns the connection, its receive buffer, the I/O object and a [`Clock`]. It
//! reads straight into the receive buffer, hands every inbound item to your handler as an
//! [`Incoming`], and writes out whatever the connection queued, so a device serves JSON-RPC
//! in a few lines. Both roles work on the same link: the device may also call or notify the
//! host ([`Driver::send_request`], [`Driver::send_notification`], or the same methods of the
//! [`Context`] inside the handler); responses and failures come back to the handler.
//!
//! Byte-at-a-time UARTs and writers that take a few bytes per call are fine: partial reads
//! go to the receive buffer, partial writes are accounted by the core's drain,
//! [`transmit_with`](rpcwire::Connection::transmit_with) (the async driver runs the same
//! loop over [`poll_transmit`](rpcwire::Connection::poll_transmit) and
//! [`advance_transmit`](rpcwire::Connection::advance_transmit) around its `await`).
//!
//! Both drivers are thin front ends over one sans-IO loop: feeding input to the core,
//! delivering items and events, the drain rule and the retry rule are written once and shared
//! by the blocking and the async driver, which only perform the reads and writes.
//!
//! ## A server loop
//!
//! ```
//! use rpcwire::{Config, ErrorCode, Instant};
//! use rpcwire_embedded_io::{Driver, Incoming};
//! # use rpcwire_embedded_io::doc_uart::Uart;
//! # let uart = Uart::new(b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[2,3],\"id\":1}\n");
//! # let ticks = || 0u64;
//!
//! // `uart` implements embedded_io::{Read, Write}; the clock is any `FnMut() -> Instant`.
//! let clock = move || Instant::from_millis(ticks());
//! let mut driver: Driver<_, _> = Driver::new(uart, clock, Config::default());
//!
//! // Tell the host we are up.
//! driver.send_notification("booted", Some(&["v1"])).unwrap();
//!
//! # while driver.io().has_input() {
//! // loop {
//!     driver.read_once(|ctx, item| match item {
//!         Incoming::Request(req) if req.method.eq_str("add") => {
//!             match req.params.map(|p| p.decode::<(i32, i32)>()) {
//!                 Some(Ok((a, b))) => { let _ = ctx.respond(req.handle, &(a + b)); }
//!                 _ => { let _ = ctx.reject(req.handle, ErrorCode::INVALID_PARAMS); }
//!             }
//!         }
//!         Incoming::Request(req) => { let _ = ctx.reject(req.handle, ErrorCode::METHOD_NOT_FOUND); }
//!         _ => {} // notifications, responses to our requests, peer problems, events
//!     }).unwrap();
//! # }
//! // }
//! # let written = driver.io().written();
//! # assert!(written.contains("\"method\":\"booted\""));
//! # assert!(written.contains("{\"jsonrpc\":\"2.0\",\"result\":5,\"id\":1}\n"));
//! ```
//!
//! [`Driver::read_once`] blocks in `read` until at least one byte arrives, so deadlines of
//! outgoing requests are only checked when input comes. A device that also sends requests
//! implements [`embedded_io::ReadReady`] and calls [`Driver::poll`], which never blocks on
//! reading and returns the next deadline (sleep until an interrupt or that deadline).
//!
//! ## Typed methods, schedules, other tasks
//!
//! - [`Methods`]: a dispatch table of typed methods (params decoded with serde-json-core,
//!   results serialized, Method not found and Invalid params answered), for either driver.
//! - [`clock::Ticker`]: a clock with a schedule; the handler gets [`Incoming::Tick`] every
//!   period and the driver's deadline covers it.
//! - `outbox::Outbox` (feature `async`): notifications other tasks send while the async driver
//!   serves.
//! - Feature `defmt` logs through defmt; feature `embedded-io-06` runs the drivers over
//!   embedded-io 0.6 I/O objects (`io06::Io06`).
//!
//! Build firmware with `opt-level = "z"`, `lto = true`, `codegen-units = 1` and
//! `panic = "abort"`: a default release build is about twice as large (the README has the
//! images' sizes).
//!
//! ## Rules the driver follows for you
//!
//! After every input and every command it drains the connection's outputs; when input
//! processing stops for lack of transmit room ([`Connection::is_input_blocked`]) it writes
//! out and resumes; when an answer or a send finds the transmit buffer full
//! (`WouldBlock`), [`Context::retry`] writes out the queued bytes and tries again.
//!
//! ## Memory
//!
//! All storage is inline: `RX` receive bytes, and the connection's `TX` transmit bytes,
//! `BATCH` batch-reply bytes and `PENDING`/`INFLIGHT` table slots. The defaults (1 KiB, 1 KiB,
//! 960 B, 4, 4) take about 3.5 KiB; to keep the driver off the stack, build it in a `static`'s
//! storage with [`Driver::new_in`], for example a `static_cell::StaticCell`'s
//! (`Driver::new_in(CELL.uninit(), ..)`) ([`Driver::new`] is also a `const fn`, but a
//! `static` initialized with it goes to `.data`: its whole image would take flash).
//!
//! [`Connection`]: rpcwire::Connection
//! [`Connection::is_input_blocked`]: rpcwire::Connection::is_input_blocked

/// Logs through `defmt` with feature `defmt`; compiles to nothing without it (the arguments
/// are not evaluated, so they must have no side effects).
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {{
        #[cfg(feature = "defmt")]
        defmt::$level!($($arg)+);
    }};
}

mod blocking;
pub mod clock;
mod driver;
mod error;
mod incoming;
#[cfg(feature = "embedded-io-06")]
pub mod io06;
mod session;

#[cfg(feature = "async")]
pub mod asynch;
#[cfg(feature = "async")]
pub mod outbox;

pub use clock::Clock;
pub use driver::{Blocking, Context, Driver};
/// The `embedded-io` version this crate implements against.
pub use embedded_io;
/// The `embedded-io-async` version this crate implements against.
#[cfg(feature = "async")]
pub use embedded_io_async;
pub use error::Error;
pub use incoming::Incoming;
/// The core's dispatch table of typed methods ([`rpcwire::methods`]), answered through either
/// driver's context.
pub use rpcwire::methods;
pub use rpcwire::methods::{MethodError, Methods};
/// Inline connection storage, sized by const parameters: the `S` of [`Driver`] and
/// [`Context`] (`Inline<TX, BATCH, PENDING, INFLIGHT>`).
pub use rpcwire::storage::Inline;
/// The core's retry rule of commands ([`rpcwire::Retry`]), which [`Context::retry`] follows.
pub use rpcwire::Retry;

/// The receive buffer size of a [`Driver`] when none is given.
pub const DEFAULT_RX: usize = 1024;
/// The transmit buffer size of a [`Driver`] when none is given.
pub const DEFAULT_TX: usize = 1024;
/// The batch-reply buffer size of a [`Driver`] when none is given.
pub const DEFAULT_BATCH: usize = 960;
/// The pending-request slots of a [`Driver`] when none is given.
pub const DEFAULT_PENDING: usize = 4;
/// The in-flight inbound request slots of a [`Driver`] when none is given.
pub const DEFAULT_INFLIGHT: usize = 4;

/// The connection storage of a [`Driver`] when none is given: [`DEFAULT_TX`] transmit
/// bytes, [`DEFAULT_BATCH`] batch-reply bytes, [`DEFAULT_PENDING`] pending and
/// [`DEFAULT_INFLIGHT`] in-flight slots.
pub type DefaultStore = Inline<DEFAULT_TX, DEFAULT_BATCH, DEFAULT_PENDING, DEFAULT_INFLIGHT>;

/// An in-memory UART for the documentation examples (not part of the API).
#[doc(hidden)]
pub mod doc_uart {
    /// Delivers a fixed input one byte per read and records what is written (up to 512
    /// bytes, three bytes per write).
    pub struct Uart {
        input: &'static [u8],
        out: [u8; 512],
        len: usize,
    }

    impl Uart {
        /// A UART that will deliver `input`.
        pub fn new(input: &'static [u8]) -> Self {
            Uart {
                input,
                out: [0; 512],
                len: 0,
            }
        }

        /// True while input remains.
        pub fn has_input(&self) -> bool {
            !self.input.is_empty()
        }

        /// What was written so far.
        pub fn written(&self) -> &str {
            core::str::from_utf8(&self.out[..self.len]).unwrap_or("")
        }
    }

    impl embedded_io::ErrorType for Uart {
        type Error = core::convert::Infallible;
    }

    impl embedded_io::Read for Uart {
        fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
            match (self.input.split_first(), buf.first_mut()) {
                (Some((b, rest)), Some(slot)) => {
                    *slot = *b;
                    self.input = rest;
                    Ok(1)
                }
                // A real UART would block; this one reports the end of its input.
                _ => Ok(0),
            }
        }
    }

    impl embedded_io::ReadReady for Uart {
        fn read_ready(&mut self) -> Result<bool, Self::Error> {
            Ok(!self.input.is_empty())
        }
    }

    impl embedded_io::Write for Uart {
        fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
            let n = buf.len().min(3);
            let keep = n.min(self.out.len() - self.len);
            self.out[self.len..self.len + keep].copy_from_slice(&buf[..keep]);
            self.len += keep;
            Ok(n)
        }

        fn flush(&mut self) -> Result<(), Self::Error> {
            Ok(())
        }
    }
}
