//! JSON-RPC 2.0 over [NATS](https://nats.io), on the official `async-nats` client.
//!
//! - [`NatsServer`] serves a [`Router`](rpcwire_tokio::Router) (any
//!   [`Builder`](rpcwire_tokio::Builder)'s service) on a subject, in a queue group: N instances
//!   share the load and any one may answer. Each NATS message is one JSON-RPC message (a call,
//!   a notification or a batch), answered on its reply subject as the specification says
//!   (nothing for notifications). The service is registered with NATS's service API, so
//!   `$SRV.PING`, `$SRV.INFO` and `$SRV.STATS` show it, its endpoint and its statistics.
//! - [`NatsClient`] calls such a service over request/reply with the whole of
//!   [`Client`](rpcwire_tokio::Client)'s API (calls with deadlines, notifications as plain
//!   publishes, batches), and receives the server's notifications on the subjects it listens
//!   to. A call nobody can receive ends at once with [`NO_RESPONDERS`].
//!
//! The bodies run through the service layer's one dispatcher (the service's `Responder` on
//! the server, a `rpcwire-tokio` connection on the client): every protocol rule, limit and
//! policy holds as on any other transport.
//!
//! ```no_run
//! use rpcwire_nats::{NatsClient, NatsServer};
//! use rpcwire_tokio::{Builder, Router, RpcError};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let nats = async_nats::connect("127.0.0.1:4222").await?;
//! let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
//! let server = NatsServer {
//!     queue_group: Some("math".into()),
//!     ..NatsServer::new("math")
//! };
//! tokio::spawn(server.serve(nats.clone(), Builder::new().router(router)));
//!
//! let session = NatsClient::new("math").start(nats, Builder::new()).await?;
//! let sum: i64 = session.client().call("add", [1, 2]).await?;
//! assert_eq!(sum, 3);
//! # Ok(()) }
//! ```

mod client;
mod server;

/// The NATS client this crate is built on (connect with it).
pub use async_nats;

pub use client::{is_no_responders, NatsClient, MAX_WAIT, NOT_SENT, NO_RESPONDERS};
pub use server::{NatsServer, TIMED_OUT};

/// A message over NATS, as callers' [`Caller::transport`](rpcwire_tokio::Caller::transport)
/// names it.
pub const NATS: rpcwire_tokio::Transport = rpcwire_tokio::Transport::new("nats", "tcp");

/// Why a server or a client could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NatsError {
    /// The NATS service (its `$SRV` subscriptions) or its endpoint could not be added.
    #[error("cannot start the NATS service: {0}")]
    Service(#[source] async_nats::Error),
    /// A subscription could not be made.
    #[error("cannot subscribe: {0}")]
    Subscribe(#[from] async_nats::SubscribeError),
}
