#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-service
//!
//! The service layer of rpcwire: everything that decides how a JSON-RPC request is run, the
//! same on every transport and for every profile.
//!
//! - [`Router`]: handlers by method name with typed params, their [`Context`], access rules
//!   ([`Router::require`], [`Policy`]), `rpc.discover`, error hygiene
//!   ([`Router::show_error_details`]).
//! - Callers: the [`Identity`] an [`Authenticator`] establishes at a transport's edge
//!   ([`Service::admit`]), and the [`Caller`] a handler sees (identity, transport, peer, TLS
//!   client certificate, transport metadata). Built-in schemes: `StaticTokens` (feature
//!   `auth`), `jwt` (feature `jwt`), `signing` (feature `auth`).
//! - [`RateLimiter`]: per-caller token buckets, counted once per call.
//! - [`Service`]: the router and those policies together: what a transport serves.
//! - [`Dispatcher`]: **the one place a request is run.** A transport hands it each inbound
//!   message its core [`Connection`](rpcwire::Connection) gives out; it checks the caller's
//!   access and rate limit, starts the call's span and metrics (through
//!   [`rpcwire_telemetry`]), runs the handler (in place when it finishes at once, in a task
//!   under the concurrency limit when it waits), writes the answer into the connection, and
//!   handles the connection's own calls ([`Client`]). Stream transports keep one per
//!   connection; [`Responder`] keeps a few for request/response transports (an HTTP POST, a
//!   broker message), one body at a time.
//!
//! A transport moves bytes and reports what only it knows ([`Remote`], the bytes it moved);
//! it never authorizes and never calls a handler.
//!
//! ```
//! use rpcwire_service::{Responder, Router, RpcError, Service};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let router = Router::new()
//!     .method("subtract", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a - b) });
//! let responder = Responder::new(Service::new(router), rpcwire::Config::default());
//! let mut answer = Vec::new();
//! responder
//!     .respond(br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#, &mut answer)
//!     .await;
//! assert_eq!(answer, br#"{"jsonrpc":"2.0","result":19,"id":1}"#);
//! # }
//! ```

mod accept;
mod access;
mod auth;
mod caller;
mod client;
pub mod deadline;
mod dispatch;
mod error;
mod identity;
mod ids;
mod messages;
pub mod pipe;
mod ratelimit;
mod refusal_log;
mod responder;
pub mod resumable;
mod router;
mod service;
mod shutdown;
mod undelivered;

pub use accept::{accept_loop, Slot};
pub use access::{Policy, DISCOVER_METHOD, FORBIDDEN, FORBIDDEN_MESSAGE};
#[cfg(feature = "jwt")]
pub use auth::jwt;
#[cfg(feature = "auth")]
pub use auth::signing;
pub use auth::{
    AuthError, AuthFuture, Authenticator, Credentials, Headers, PeerCertificate, ReadyFuture,
};
#[cfg(feature = "auth")]
pub use auth::{StaticTokens, TokenFileError, TokenTableError, MAX_TOKEN_LEN};
pub use caller::{Caller, LazyMeta};
pub use client::{Batch, BatchResults, Client, Hub, SessionStats, DEFAULT_HUB_SEND_TIMEOUT};
pub use dispatch::{ClientSettings, Dispatcher, Wake, Woke, MAX_PENDING_CALLS};
pub use error::{CallError, RpcError};
pub use identity::Identity;
pub use ids::random_id;
pub use messages::{AnswerSlot, MessageAnswers, TIMED_OUT};
pub use ratelimit::{RateLimiter, RATE_LIMITED, RATE_LIMITED_MESSAGE};
pub use refusal_log::RefusalLogLimit;
pub use responder::{Exchange, Responder, Sent};
pub use router::{Cancellation, Context, Router};
pub use rpcwire::ErrorCode;
pub use rpcwire_telemetry::{Remote, Transport};
pub use service::{CancelProfile, Service, DEFAULT_HANDSHAKE_TIMEOUT, MAX_INFLIGHT};
pub use shutdown::{
    Drained, Shutdown, Tracked, DEFAULT_DRAIN_DEADLINE, SHUTTING_DOWN, SHUTTING_DOWN_MESSAGE,
};
pub use undelivered::undelivered;

/// The core connection every transport runs for the service: heap storage that grows on
/// demand and shrinks back.
pub type Conn = rpcwire::Connection<rpcwire::storage::Heap>;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
