#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-testkit
//!
//! Test your own service built on rpcwire: strategies for JSON-RPC traffic (valid calls over
//! your methods, and hostile input), deterministic in-memory harnesses that send it to your
//! service and check the protocol's invariants, and the pieces of a cargo-fuzz target.
//!
//! - [`Harness`]: runs a `rpcwire_tokio` [`Router`](rpcwire_tokio::Router) (or any
//!   [`Target`]: a [`Builder`](rpcwire_tokio::Builder) with its settings, a [`RawServer`]
//!   written over the bytes, an MCP server with feature `mcp`) on one in-memory connection,
//!   on a paused clock, and checks every [`Case`]: exactly one valid answer per request id,
//!   none for notifications, batches answered as the specification says, no stall, no panic,
//!   memory back to its idle size afterwards. [`Harness::check`] returns the first
//!   [`Violation`]; with feature `proptest`, `Harness::proptest` runs many cases and
//!   reports the first failing one shrunk.
//! - [`Model`]: what each method should answer, as a function of its params (and of a model
//!   of the service's state); a harness given one checks every answer against it, so a wrong
//!   result fails a case like a protocol violation does, and shrinks to a minimal sequence.
//!   A failure prints its seed (`RPCWIRE_TESTKIT_SEED` replays it) and the case as a
//!   ready-to-paste `#[test]`; a run returns its [`Coverage`].
//! - [`Firmware`]: the same checks for a firmware handler: one written against the
//!   rpcwire-embedded-io driver, run by the driver itself ([`Firmware::driver`]), or one on a
//!   core [`Connection`](rpcwire::Connection) with inline storage.
//! - `strategy` (feature `proptest`) and `Arbitrary` impls (feature `arbitrary`) for
//!   [`Case`], [`Frame`] and [`Message`]; [`seeds`]: a fuzzer's seed corpus and dictionary
//!   from a router; [`check_exchange`] checks any byte exchange against the reference model.
//!
//! The reference model works the specification's answers out with serde_json, independently
//! of rpcwire's own parser. Where the specification leaves a choice it follows rpcwire's
//! documented rules: an invalid request's id is echoed when it is a valid id; a frame refused
//! whole (unparseable, too deep, too long, an empty or refused batch) gets one error with id
//! `null`.
//!
//! Defects the [`Router`](rpcwire_tokio::Router) API rules out (two answers to one request,
//! an answer with another id, a batch answer split in two) cannot be planted in a router;
//! the harness still catches them in a server written over the bytes ([`RawServer`]), or in
//! any exchange given to [`check_exchange`].
//!
//! ```
//! use rpcwire_testkit::{Case, Frame, Harness, Message, Violation};
//! use rpcwire_tokio::{Router, RpcError};
//! use serde_json::json;
//!
//! let router = Router::new()
//!     .method("add", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a.wrapping_add(b)) })
//!     .method("hang", |_: Vec<i64>| std::future::pending::<Result<(), RpcError>>());
//! let harness = Harness::new(router);
//! let add = Case::new(vec![Frame::Single(Message::request("add", json!([1, 2]), 1))]);
//! assert_eq!(harness.check(&add), Ok(()));
//! let hang = Case::new(vec![Frame::Single(Message::request("hang", json!([]), 7))]);
//! assert!(matches!(harness.check(&hang), Err(Violation::Missing { .. })));
//! ```
// The README's example is a `#[test]`, as it is written in a user's crate: here it is
// compiled (the doctest does not run it; tests/planted.rs and tests/demo.rs run the same calls).
#![cfg_attr(feature = "proptest", allow(clippy::test_attr_in_doctest))]
#![cfg_attr(feature = "proptest", doc = "")]
#![cfg_attr(feature = "proptest", doc = include_str!("../README.md"))]

#[cfg(feature = "arbitrary")]
mod arbitrary;
mod case;
mod check;
mod firmware;
mod harness;
#[cfg(feature = "mcp")]
mod mcp;
mod model;
mod oracle;
mod panics;
mod report;
#[cfg(feature = "proptest")]
mod run;
mod rust;
pub mod seeds;
#[cfg(feature = "proptest")]
pub mod strategy;
mod violation;

pub use case::{Case, Frame, Id, Message};
pub use check::check_exchange;
pub use firmware::{DriverHandler, Firmware, FirmwareUart, Serve};
pub use harness::{Harness, PerCase, RawServer, ServerTask, Target};
#[cfg(feature = "mcp")]
pub use mcp::MCP_REVISION;
pub use model::Limits;
pub use oracle::{Expected, Model};
pub use report::{Coverage, CASES_VAR, SEED_VAR};
pub use rpcwire::ErrorCode;
#[cfg(feature = "proptest")]
pub use run::Failure;
pub use violation::Violation;
