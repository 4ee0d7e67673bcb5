//! # rpcwire-mcp
//!
//! The [Model Context Protocol](https://modelcontextprotocol.io) as a profile over
//! [`rpcwire`]: MCP's rules on top of a core `Connection`, not a fork of it.
//!
//! The default build is `no_std` with no heap (it builds for `thumbv6m-none-eabi`), for a
//! firmware serving MCP tools over a UART:
//! - [`ProtocolVersion`]: the revisions (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25),
//!   negotiation, and which refuse batches;
//! - [`Handshake`]: `initialize` → result → `notifications/initialized`, and what is taken
//!   before it;
//! - [`methods`]: method names;
//! - [`Tool`], [`find_tool`]: a static tools table with JSON Schemas as `&'static str`;
//! - [`Reply`], [`Notice`], [`Text`]: results and notification params, written by rpcwire's
//!   own serializer (schemas and other fixed fragments verbatim);
//! - [`Requests`]: progress-token and cancellation bookkeeping of running requests;
//! - [`LogLevel`]: `notifications/message` levels and `logging/setLevel`;
//! - [`Server`]: all of it over a `Connection`; the application only runs tool calls
//!   ([`Step::Call`]);
//! - 2026-07-28 beside the session revisions, per request: [`classify`] reads a request's
//!   `_meta` ([`RequestRevision`], [`MetaProblem`]); [`Server`] then answers
//!   `server/discover` ([`Reply::Discover`], [`SUPPORTED_VERSIONS`]) and `tools/list` with no
//!   handshake, refuses the [`REMOVED_METHODS`], and adds `resultType` to its results
//!   ([`Reply::write_completed`]).
//!
//!
//! With feature `tokio`, the `tokio` module gives an async server (a tool is an
//! async fn with typed arguments) that builds into an `rpcwire_tokio::Router`, and a client.
//! With feature `http`, the `http` module serves it over MCP Streamable HTTP (sessions and
//! stateless) and gives the matching client (`https://` with feature `tls`), built from
//! `rpcwire-http`'s building blocks.
//!
//! ## A firmware's loop
//!
//! ```
//! use rpcwire::{Connection, Inbound, Input, Instant, storage::Inline, wire::RxBuffer};
//! use rpcwire_mcp::{LogLevel, Server, ServerInfo, Step, Text, Tool};
//!
//! static INFO: ServerInfo<'static> = ServerInfo {
//!     name: "blinky", version: "0.1.0", instructions: Some("A board with a LED."), logging: true,
//! };
//! static TOOLS: &[Tool<'static>] = &[
//!     Tool { name: "set_led", description: "Turns the LED on or off.",
//!            input_schema: r#"{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}"# },
//! ];
//!
//! let mut conn: Connection<Inline<1024, 512, 2, 2>> = Connection::new(Default::default());
//! let mut rx: RxBuffer<[u8; 512]> = conn.rx_buffer();
//! let mut server: Server<'static, 2> = Server::new(&INFO, TOOLS);
//! # let mut input: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"set_led\",\"arguments\":{\"on\":true}}}\n";
//! # let mut uart = Vec::new();
//! while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
//!     match server.handle(&mut conn, item) {
//!         Ok(Step::Call(call)) => {
//!             // TOOLS[call.tool]; its arguments: call.arguments (zero-copy).
//!             let on = call.arguments
//!                 .and_then(|a| rpcwire_mcp::member(a, "on"))
//!                 .map(|v| v.as_bytes() == b"true");
//!             let (text, failed) = match on {
//!                 Some(true) => (Text::Json(b"\"LED on\""), false),
//!                 Some(false) => (Text::Json(b"\"LED off\""), false),
//!                 None => (Text::Json(b"\"expected {on: boolean}\""), true),
//!             };
//!             let _ = server.log(&mut conn, LogLevel::Info, None, text);
//!             let _ = server.respond_tool(&mut conn, call.handle, text, failed);
//!         }
//!         Ok(Step::Request(req)) => {
//!             let _ = conn.reject(req.handle, rpcwire::ErrorCode::METHOD_NOT_FOUND);
//!             server.finish(req.handle);
//!         }
//!         _ => {}
//!     }
//!     conn.transmit_with(|b| { uart.extend_from_slice(b); Ok::<_, ()>(b.len()) }).unwrap();
//! }
//! # let out = String::from_utf8(uart).unwrap();
//! # assert!(out.contains(r#""text":"LED on"}],"isError":false"#), "{out}");
//! ```
//!
//! Batches: start the connection with `Config::batches = false`; once `initialize` is
//! answered, [`Server`] switches them as the negotiated revision says
//! ([`ProtocolVersion::refuses_batches`]: refused from 2025-06-18 on).
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![cfg_attr(
    not(test),
    deny(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic
    )
)]

#[cfg(feature = "tokio")]
#[macro_use]
extern crate std;

mod handshake;
mod log;
pub mod methods;
mod msg;
mod server;
mod stateless;
mod track;
mod version;
mod writer;

#[cfg(feature = "tokio")]
pub mod tokio;

#[cfg(feature = "http")]
pub mod http;

pub use handshake::{Handshake, Phase, Refusal};
pub use log::LogLevel;
pub use msg::{
    cancelled_request_id, find_tool, member, progress_token, set_level, CallParams,
    InitializeParams, Notice, Raw, Reply, ServerInfo, Text, Tool,
};
pub use server::{Server, Step, ToolCall, DEFAULT_OUT};
pub use stateless::{
    classify, is_removed, MetaProblem, RequestRevision, REMOVED_METHODS, STATELESS_VERSION,
    SUPPORTED_VERSIONS,
};
pub use track::{Requests, MAX_KEY_LEN};
pub use version::ProtocolVersion;
pub use writer::Writer;
