#![no_std]
#![forbid(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
// The docs name `Heap` storage and serde_json decoding, which exist with feature `alloc`; built
// without it (a firmware's own `cargo doc`), those links have no target and stay plain text.
#![cfg_attr(not(feature = "alloc"), allow(rustdoc::broken_intra_doc_links))]
// No panics reachable from input: no unwrap, expect, panic or unchecked indexing outside tests.
// Modules that index by construction say why where they opt out.
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]
//! # rpcwire
//!
//! A JSON-RPC 2.0 engine that does no I/O: bytes and time in; inbound messages, events and
//! outgoing frames out. It frames (newline-delimited and `Content-Length`), validates,
//! correlates ids, answers batches, expires deadlines and enforces limits, `#![no_std]`, with
//! heap allocation only where the caller picks heap storage ([`storage`]). The same
//! [`Connection`] runs in firmware over a UART, inside a tokio service, and in fuzz and
//! property-test harnesses.
//!
//! - [`wire`]: usable on its own: a strict JSON scanner, zero-copy message views, an encoder
//!   into caller buffers, and the framings.
//! - [`Connection`]: one per byte stream, both roles at once (either side may send requests,
//!   notifications and responses).
//! - [`methods`]: a dispatch table of typed methods for firmware (no heap), over a
//!   connection or a driver's context.
//!
//! ## The run loop
//!
//! Feed input, handle what comes out, give commands, and after every input or command drain
//! the outputs until [`Output::Timeout`] or [`Output::Idle`]. The loop below is correct under
//! backpressure: when the transmit queue is full, [`Input::Blocked`] and
//! [`RespondError::WouldBlock`] say "write out, then go on", and no received byte is lost.
//!
//! ```
//! use rpcwire::{Connection, Config, ErrorCode, Inbound, Input, Instant, Output, RespondError, Token};
//! use rpcwire::storage::Inline;
//! use rpcwire::wire::{RxBuffer, NO_PARAMS};
//!
//! // Inline storage: 4 KiB transmit queue, no heap (with the `alloc` feature,
//! // `Connection<rpcwire::storage::Heap>` and `RxBuffer<Vec<u8>>` grow on demand instead).
//! let mut conn: Connection<Inline> = Connection::new(Config::default());
//! let mut rx: RxBuffer<[u8; 4096]> = conn.rx_buffer();
//! let mut wire_out = Vec::new(); // stands for a socket, a pipe or a UART
//!
//! // Writes out what is queued (a real driver writes and reports what was written).
//! fn drain(conn: &mut Connection, wire_out: &mut Vec<u8>) {
//!     conn.transmit_with(|bytes| {
//!         wire_out.extend_from_slice(bytes);
//!         Ok::<_, ()>(bytes.len())
//!     })
//!     .unwrap();
//! }
//!
//! // Bytes arrived (in any chunks).
//! let received = b"{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":1}\n\
//!                  {\"jsonrpc\":\"2.0\",\"method\":\"foobar\",\"id\":\"2\"}\n";
//! let now = Instant::from_millis(5);
//! let mut input = &received[..];
//! loop {
//!     let item = match conn.handle_input(now, &mut rx, &mut input) {
//!         Input::Item(item) => item,
//!         // A reply waits for transmit room: write out, then go on with the same input.
//!         Input::Blocked => { drain(&mut conn, &mut wire_out); continue }
//!         Input::NeedMore | Input::Closed => break,
//!     };
//!     match item {
//!         Inbound::Request(req) if req.method.eq_str("subtract") => {
//!             let Some(Ok((a, b))) = req.params.map(|p| p.decode::<(i64, i64)>()) else {
//!                 conn.reject(req.handle, ErrorCode::INVALID_PARAMS).unwrap(); // never blocks
//!                 continue;
//!             };
//!             while let Err(RespondError::WouldBlock { .. }) = conn.respond(req.handle, &(a - b)) {
//!                 drain(&mut conn, &mut wire_out);
//!             }
//!         }
//!         Inbound::Request(req) => conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND).unwrap(),
//!         Inbound::Notification(_) => {}
//!         Inbound::Response(resp) => println!("token {:?} answered", resp.token),
//!         Inbound::Problem(p) => eprintln!("peer problem: {p:?}"),
//!     }
//! }
//!
//! // A command: call the peer, with a 2 s timeout.
//! conn.send_request(now, Token(7), "ping", NO_PARAMS, Some(core::time::Duration::from_secs(2)))
//!     .unwrap();
//!
//! // Drain.
//! let next_deadline = loop {
//!     match conn.poll_output() {
//!         Output::Transmit(bytes) => {
//!             let n = bytes.len(); // a real driver writes and reports what was written
//!             wire_out.extend_from_slice(bytes);
//!             conn.advance_transmit(n);
//!         }
//!         Output::Event(e) => println!("{e:?}"),
//!         Output::Timeout(at) => break Some(at),
//!         Output::Idle => break None,
//!     }
//! };
//! assert_eq!(next_deadline, Some(Instant::from_millis(2005)));
//! let text = String::from_utf8(wire_out).unwrap();
//! assert!(text.contains(r#"{"jsonrpc":"2.0","result":19,"id":1}"#));
//! assert!(text.contains(r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":"2"}"#));
//! assert!(text.contains(r#""method":"ping""#));
//! ```
//!
//! ## Guarantees
//!
//! - No input can panic, hang or grow memory without bound: every buffer and table has a
//!   limit (the array's size, or the configured limit of growing storage), and peer garbage becomes a [`Problem`] plus the reply the specification requires.
//! - Every outgoing request's [`Token`] comes back exactly once: with its response, as
//!   [`Event::RequestFailed`] (timeout or close), or as the `Ok` of [`Connection::cancel`].
//! - Ids of every legal kind are echoed byte-exact; a notification is never answered.
//!
//! ## Features
//!
//! `default = ["content-length"]`; every feature set is no_std and needs no heap unless it
//! says so. `content-length`: LSP-style framing (`wire::Framing::ContentLength`); a firmware
//! that speaks newline-delimited JSON only turns defaults off and saves about 1 KiB of flash.
//! `alloc`: heap storage that grows and shrinks (`storage::Heap`, `RxBuffer<Vec<u8>>`, a host
//! driver's [`read_buffer`]) and serde_json decoding (`wire::RawJson::deserialize`). `std`: `std::time::Instant`
//! conversions (`Instant::from_std`) and SIMD frame search. Every error type implements
//! `core::error::Error` in every feature set. `defmt`: `defmt::Format` on errors and events.
//! `arbitrary`: `Arbitrary` on configuration types, for fuzzing.

#[cfg(feature = "alloc")]
extern crate alloc;
#[cfg(any(feature = "std", test, doctest))]
extern crate std;

mod bytes;
mod code;
pub mod conn;
pub mod methods;
#[cfg(feature = "alloc")]
pub mod read_buffer;
mod records;
mod slots;
pub mod storage;
mod time;
mod token;
pub mod wire;

pub use code::ErrorCode;
pub use conn::{
    CancelError, Config, Connection, DuplicateIdPolicy, Event, Failure, Inbound, InboundRequest,
    InboundResponse, Input, OutgoingBatch, Output, Problem, RequestHandle, RespondError, Retry,
    SendError, Stats, Token, DEFAULT_MAX_FRAME,
};
pub use time::{Instant, Schedule};
