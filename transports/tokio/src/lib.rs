#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-tokio
//!
//! Runs an [`rpcwire`] JSON-RPC 2.0 [`Connection`](rpcwire::Connection) over any tokio
//! `AsyncRead + AsyncWrite`: this process's stdio (MCP servers), TCP (connect or serve), a child
//! process's stdio (MCP hosts, language clients), or an in-memory duplex pipe. All protocol
//! logic (framing, validation, id correlation, batches, timeouts, limits) lives in the core;
//! this crate moves bytes, time and commands between tokio and it.
//!
//! - [`Builder`]: framing, limits and the [`Router`]; its constructors start a connection and
//!   return a [`Session`].
//! - [`Client`]: a cloneable handle to call the peer (typed [`call`](Client::call) with a
//!   timeout, [`notify`](Client::notify), [`batch`](Client::batch)); dropping a call's future
//!   cancels it; when the connection ends every pending call fails with [`CallError::Closed`].
//! - [`Router`]: async handlers by method name with typed params, run under a per-connection
//!   concurrency limit. Either side may call the other on the same connection.
//!
//! ```
//! use rpcwire_tokio::{Builder, Router, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new()
//!     .method("subtract", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a - b) });
//! // A server and a client joined by an in-memory pipe.
//! let (server, client) = Builder::new().router(router).duplex(Builder::new(), 64 << 10);
//! let diff: i64 = client.client().call("subtract", [42, 23]).await?;
//! assert_eq!(diff, 19);
//! let err = client.client().call::<_, i64>("divide", [1, 0]).await.unwrap_err();
//! assert_eq!(err.rpc().map(|e| e.code), Some(-32601)); // Method not found
//! client.join().await?; // closes our side; the server sees the end and finishes
//! server.join().await?;
//! # Ok(()) }
//! ```
//!
//! ## How the driver works
//!
//! One task per connection owns the core connection (heap storage) and its receive buffer, and
//! `select!`s on: the socket being readable (bytes go straight into the core's receive
//! buffer, so partial frames survive any branch winning), the socket being writable (when the
//! core has output; all queued frames are written together and flushed only when no more
//! output is ready), client commands (a bounded channel: a full pending table is
//! backpressure), handler completions, and the core's next deadline.
//!
//! A request is handled where it lies: its method is looked up once, by the name's bytes;
//! its params are decoded from the receive buffer; a handler that finishes at once (every
//! [`Router::raw_method`] and [`Router::sync_method`], and an async one that never waits) runs
//! in the driver, with no task, and its result is serialized straight into the transmit
//! queue. Only a handler that waits is spawned, under the concurrency limit; requests beyond it
//! wait in a bounded queue. Responses from the peer are read even when every handler slot is
//! busy, so two peers calling each other never deadlock.
//!
//! ## Memory
//!
//! A connection costs what it uses: its buffers and tables start empty, grow while a large
//! frame or a burst needs them (up to [`Builder::max_frame`] and the table limits), give a
//! large frame's memory back as soon as it has gone, and the rest after the connection has
//! been idle for [`Builder::idle_release`]: an idle TCP connection holds about 12 KiB of heap.
//! The command channel is bounded, requests waiting for a handler slot are bounded in bytes
//! ([`Builder::queue_bytes`]; beyond it they are answered Server busy, -32001), a server holds
//! at most [`Builder::max_connections`] connections, and a peer that stops reading makes the
//! driver stop reading too, never grow.
//!
//! ## Closing
//!
//! When the peer closes its side (end of stream), pending calls fail with
//! [`CallError::Closed`], the requests already received are still answered, then the write
//! side is shut down and the driver ends. [`Client::shutdown`] does the same on request. A
//! write failure ends everything at once.
//!
//! ## Tracing
//!
//! Each inbound request runs in an `rpc.server.call` span and each call in an
//! `rpc.client.call` span, with the attributes of the OpenTelemetry semantic conventions for
//! JSON-RPC; each connection runs in an `rpc.connection` span; with the feature `metrics`,
//! calls and connections are measured through the `metrics` facade (see [`telemetry`]).
//! Inbound notifications run in an `rpc.request` span (`method`). Call spans can be head
//! sampled ([`telemetry::set_sample_ratio`]): an unsampled call builds no span.

mod access;
mod batch_trace;
pub mod body_log;
mod caller;
mod client;
mod controls;
mod discover;
mod driver;
#[cfg(feature = "metrics")]
pub mod durations;
mod error;
mod handlers;
mod inline;
#[cfg(feature = "jwt")]
pub mod jwt;
#[cfg(feature = "metrics")]
pub mod live_stats;
mod ratelimit;
mod raw;
mod read_buffer;
mod responder;
mod router;
mod sampling;
#[cfg(feature = "auth")]
pub mod signing;
mod stdio;
pub mod telemetry;
#[cfg(feature = "tls")]
pub mod tls;
#[cfg(feature = "auth")]
mod tokens;
pub mod trace_context;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rpcwire::Config;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream, ToSocketAddrs};
use tokio::task::JoinHandle;

pub use access::{Policy, FORBIDDEN, FORBIDDEN_MESSAGE};
pub use caller::{
    AuthError, AuthFuture, Authenticator, Caller, Credentials, Headers, Identity, LazyMeta,
    PeerCertificate, Transport,
};
pub use client::{Batch, BatchResults, Client, SessionStats};
pub use discover::DISCOVER_METHOD;
pub use error::{CallError, DriverError, RpcError};
pub use ratelimit::{RateLimiter, RATE_LIMITED, RATE_LIMITED_MESSAGE};
pub use responder::Responder;
pub use router::{Cancellation, Context, Router};
pub use rpcwire::wire::Framing;
pub use rpcwire::ErrorCode;
#[cfg(feature = "auth")]
pub use tokens::{StaticTokens, TokenFileError, TokenTableError, MAX_TOKEN_LEN};

/// The default maximum frame (4 MiB).
pub const DEFAULT_MAX_FRAME: usize = 4 << 20;
/// How many of our calls may be on the wire at once per connection (more wait in line for a
/// free slot); also the most calls one [`Batch`] may hold.
pub const MAX_PENDING_CALLS: usize = driver::PENDING;
/// How many inbound requests may be open at once per connection (more are answered Server
/// busy); the handler concurrency limit is at most half of it.
pub const MAX_INFLIGHT: usize = driver::INFLIGHT;

/// Settings of a connection, and its constructors.
///
/// ```
/// use std::time::Duration;
/// use rpcwire_tokio::{Builder, Framing, Router};
///
/// let builder = Builder::new()
///     .framing(Framing::ContentLength)   // LSP style; the default is one JSON text per line
///     .max_frame(1 << 20)                // larger frames are answered with an error and skipped
///     .concurrency(8)                    // handlers running at once
///     .request_timeout(Some(Duration::from_secs(5)))
///     .max_connections(1000)          // a server holds at most this many connections
///     .router(Router::new());
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    config: Config,
    concurrency: usize,
    queue_bytes: usize,
    command_capacity: usize,
    max_connections: usize,
    idle_release: Duration,
    router: Option<Arc<Router>>,
    on_connect: Option<ConnectHook>,
    cancel: Option<driver::CancelProfile>,
    /// See [`Builder::answer_cancelled`] (kept apart so that the call order does not matter).
    answer_cancelled: bool,
    /// Who is at the other end ([`Builder::caller`]); `None`: what the constructor implies.
    caller: Option<Arc<Caller>>,
    /// Lets callers of a server in ([`Builder::authenticator`]).
    authenticator: Option<AuthHook>,
    /// How long a server waits for a new connection's TLS handshake and authentication.
    handshake_timeout: Duration,
    /// Rate limits per caller ([`Builder::rate_limit`]).
    rate_limit: Option<Arc<RateLimiter>>,
    /// Where outgoing calls' trace contexts go ([`Builder::outgoing_traces`]).
    outgoing_traces: Option<trace_context::OutgoingTraces>,
    /// See [`Builder::meta_traces`].
    meta_traces: bool,
    /// See [`Builder::batch_spans`].
    batch_spans: bool,
}

/// A server's authenticator (see [`Builder::authenticator`]).
#[derive(Clone)]
struct AuthHook(Arc<dyn Authenticator>);

impl std::fmt::Debug for AuthHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Authenticator")
    }
}

/// What a server calls for each connection it accepts (see [`Builder::on_connect`]).
#[derive(Clone)]
struct ConnectHook(Arc<dyn Fn(Client, std::net::SocketAddr) + Send + Sync>);

impl std::fmt::Debug for ConnectHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectHook")
    }
}

/// How long a server waits for a new connection's TLS handshake and authentication by
/// default ([`Builder::handshake_timeout`]).
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The default limit on connections a server holds at once ([`Builder::max_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Line framing, 4 MiB frames, 30 s call timeout, 64 concurrent handlers, 16 MiB of queued
    /// requests, batches accepted, no router.
    pub fn new() -> Self {
        Builder {
            config: Config {
                max_frame: DEFAULT_MAX_FRAME,
                max_pending: driver::PENDING,
                max_inflight: driver::INFLIGHT,
                ..Config::default()
            },
            concurrency: 64,
            queue_bytes: 16 << 20,
            command_capacity: 256,
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_release: Duration::from_secs(1),
            router: None,
            on_connect: None,
            cancel: None,
            answer_cancelled: true,
            caller: None,
            authenticator: None,
            handshake_timeout: DEFAULT_HANDSHAKE_TIMEOUT,
            rate_limit: None,
            outgoing_traces: None,
            meta_traces: false,
            batch_spans: true,
        }
    }

    /// Limits each caller's calls with `limiter` (off by default), shared by every connection
    /// this builder starts: callers are told apart by identity (anonymous ones by address). A
    /// request over the limit is answered [`RATE_LIMITED`] (-32041, `"Too many requests"`)
    /// without its handler running; a notification over it is dropped.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, RateLimiter};
    /// let builder = Builder::new().rate_limit(RateLimiter::new(50.0, 100)); // 50/s, bursts of 100
    /// ```
    pub fn rate_limit(mut self, limiter: RateLimiter) -> Self {
        self.rate_limit = Some(Arc::new(limiter));
        self
    }

    /// [`rate_limit`](Builder::rate_limit) with a limiter shared with other builders (one
    /// budget per caller across several servers).
    pub fn rate_limit_shared(mut self, limiter: Arc<RateLimiter>) -> Self {
        self.rate_limit = Some(limiter);
        self
    }

    /// The builder's rate limiter, for transports that apply it themselves (HTTP answers
    /// 429 with `Retry-After`).
    pub fn rate_limiter(&self) -> Option<&Arc<RateLimiter>> {
        self.rate_limit.as_ref()
    }

    /// Who is at the other end of the connections this builder starts: handlers read it from
    /// their [`Context`] and the router's access rules ([`Router::require`]) decide by its
    /// identity. Without one, [`stdio`](Builder::stdio) and [`spawn_child`](Builder::spawn_child)
    /// connections are the local process ([`Identity::local`], trusted with every role), a
    /// server's ([`serve_tcp`](Builder::serve_tcp)) are what its
    /// [`authenticator`](Builder::authenticator) says (anonymous without one), and any other
    /// is anonymous.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Caller, Identity, Transport};
    /// let builder = Builder::new()
    ///     .caller(Caller::new(Identity::new("device-7").with_roles(["device"]), Transport::Serial));
    /// ```
    pub fn caller(mut self, caller: Caller) -> Self {
        self.caller = Some(Arc::new(caller));
        self
    }

    /// Whether each batch a connection receives gets a span of its own (`rpc.batch`, the
    /// parent of its calls' spans), made only while a subscriber listens to spans; on by
    /// default. A transport that makes a batch's span itself around the connection turns it
    /// off (the HTTP server does, for a batch body it runs on a connection of its own), so
    /// that a batch has one span.
    pub fn batch_spans(mut self, on: bool) -> Self {
        self.batch_spans = on;
        self
    }

    /// Puts the W3C trace context of each outgoing call's span in `table`, by request id,
    /// while a subscriber listens (feature `otel`): for a transport that sends it beside the
    /// message (the HTTP client's `traceparent` header). See
    /// [`trace_context`].
    pub fn outgoing_traces(mut self, table: trace_context::OutgoingTraces) -> Self {
        self.outgoing_traces = Some(table);
        self
    }

    /// [`caller`](Builder::caller) already shared (one HTTP request's caller, handed to the
    /// connection that answers it).
    pub fn shared_caller(mut self, caller: Arc<Caller>) -> Self {
        self.caller = Some(caller);
        self
    }

    /// Lets a server's callers in: [`serve_tcp`](Builder::serve_tcp) (and the TLS and HTTP
    /// servers built on this builder) asks `authenticator` for each new connection's
    /// identity, from what the transport knows (the peer's address, its TLS client
    /// certificate, HTTP headers), before any handler state exists for it; a connection it
    /// refuses is closed at once, and the reason logged (never the credentials).
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(AuthHook(Arc::new(authenticator)));
        self
    }

    /// The builder's [`authenticator`](Builder::authenticator), for transports built on this
    /// crate that establish identities themselves (the HTTP server).
    pub fn authenticator_ref(&self) -> Option<&Arc<dyn Authenticator>> {
        self.authenticator.as_ref().map(|hook| &hook.0)
    }

    /// The caller of a connection a server accepted: the authenticator's identity (or the
    /// builder's, or anonymous), the transport and the peer. `None` when the authenticator
    /// refuses it or does not answer within the handshake timeout (logged, without the
    /// credentials).
    pub async fn admit(&self, credentials: Credentials<'_>) -> Option<Caller> {
        let identity = match &self.authenticator {
            Some(hook) => {
                let decided =
                    tokio::time::timeout(self.handshake_timeout, hook.0.authenticate(credentials))
                        .await;
                match decided {
                    Ok(Ok(identity)) => identity,
                    Ok(Err(reason)) => {
                        tracing::warn!(peer = ?credentials.peer, %reason, "connection refused: authentication failed");
                        return None;
                    }
                    Err(_) => {
                        tracing::warn!(peer = ?credentials.peer, "connection refused: authentication timed out");
                        return None;
                    }
                }
            }
            None => self.identity_without_authenticator(&credentials),
        };
        Some(Builder::caller_from(identity, &credentials))
    }

    /// [`admit`](Builder::admit) when there is no authenticator, at once (`None` when there
    /// is one: ask it with `admit`).
    fn admit_at_once(&self, credentials: &Credentials<'_>) -> Option<Caller> {
        if self.authenticator.is_some() {
            return None;
        }
        let identity = self.identity_without_authenticator(credentials);
        Some(Builder::caller_from(identity, credentials))
    }

    /// Without an authenticator: a verified client certificate names the caller; else the
    /// builder's identity, else anonymous.
    fn identity_without_authenticator(&self, credentials: &Credentials<'_>) -> Identity {
        match (credentials.certificate, &self.caller) {
            (Some(certificate), _) => Identity::new(certificate.subject.clone()),
            (None, Some(caller)) => caller.identity().clone(),
            (None, None) => Identity::anonymous(),
        }
    }

    fn caller_from(identity: Identity, credentials: &Credentials<'_>) -> Caller {
        let mut caller = Caller::new(identity, credentials.transport);
        if let Some(peer) = credentials.peer {
            caller = caller.with_peer(peer);
        }
        if let Some(certificate) = credentials.certificate {
            caller = caller.with_certificate(certificate.clone());
        }
        caller
    }

    /// How long a server waits for a new connection's TLS handshake and authentication
    /// before closing it (default 10 s).
    pub fn handshake_timeout(mut self, timeout: Duration) -> Self {
        self.handshake_timeout = timeout;
        self
    }

    /// The builder's caller, or the anonymous one (shared: no allocation per connection).
    pub(crate) fn caller_or_anonymous(&self) -> Arc<Caller> {
        static ANONYMOUS: std::sync::OnceLock<Arc<Caller>> = std::sync::OnceLock::new();
        self.caller
            .clone()
            .unwrap_or_else(|| Arc::clone(ANONYMOUS.get_or_init(|| Arc::new(Caller::anonymous()))))
    }

    /// This builder with `caller` unless it has one of its own.
    fn caller_if_unset(mut self, caller: impl FnOnce() -> Caller) -> Self {
        if self.caller.is_none() {
            self.caller = Some(Arc::new(caller()));
        }
        self
    }

    /// LSP's settings: `Content-Length` framing and `$/cancelRequest` (`id`) as the cancel
    /// notification both ways ([`cancel_notification`](Builder::cancel_notification)), so
    /// that a call that times out or is dropped cancels the peer's handler, and a peer's
    /// cancel reaches ours ([`Context::cancelled`]); a cancelled request is still answered.
    ///
    /// ```
    /// let lsp = rpcwire_tokio::Builder::lsp().max_frame(1 << 20);
    /// # let _ = lsp;
    /// ```
    pub fn lsp() -> Self {
        Builder::new()
            .framing(Framing::ContentLength)
            .cancel_notification("$/cancelRequest", "id")
    }

    /// MCP's connection settings over a byte stream (line framing):
    /// `notifications/cancelled` (`requestId`) as the cancel notification both ways, so that
    /// a call that times out or is dropped cancels the peer's handler, and a cancelled
    /// request left unanswered ([`answer_cancelled`](Builder::answer_cancelled)`(false)`).
    /// `rpcwire_mcp::tokio::mcp_builder` adds MCP's batch rule on top.
    /// Its calls carry their span's W3C trace context in `params._meta` (MCP's place for it;
    /// see [`meta_traces`](Builder::meta_traces)).
    pub fn mcp() -> Self {
        Builder::new()
            .cancel_notification("notifications/cancelled", "requestId")
            .answer_cancelled(false)
            .meta_traces(true)
    }

    /// Whether the client's calls carry the W3C trace context of their span in
    /// `params._meta` (`traceparent`, `tracestate`), as MCP does: only while a subscriber
    /// listens (feature `otel`); params given as an array, and a `_meta.traceparent` already
    /// there, are left as they are. [`Builder::mcp`] turns it on.
    pub fn meta_traces(mut self, on: bool) -> Self {
        self.meta_traces = on;
        self
    }

    /// The framing (default [`Framing::Line`]).
    pub fn framing(mut self, framing: Framing) -> Self {
        self.config.framing = framing;
        self
    }

    /// The maximum frame length in bytes (at least 1024; any size above, 256 MiB say). A
    /// longer frame is answered with Invalid Request (`data: "frame too large"`) and skipped;
    /// the connection goes on. Memory follows the frames actually held: buffers start at a
    /// few KiB, grow while a large frame is received or sent, and are given back after it.
    pub fn max_frame(mut self, bytes: usize) -> Self {
        self.config.max_frame = bytes.max(1024);
        self
    }

    /// The maximum nesting depth of inbound JSON (the core clamps it to its own limit).
    pub fn max_depth(mut self, depth: usize) -> Self {
        self.config.max_depth = depth;
        self
    }

    /// The maximum number of elements in an inbound batch.
    pub fn max_batch_len(mut self, len: usize) -> Self {
        self.config.max_batch_len = len;
        self
    }

    /// Accept inbound batches (default true; MCP 2025-06-18 refuses them).
    pub fn batches(mut self, accept: bool) -> Self {
        self.config.batches = accept;
        self
    }

    /// The timeout of a call that gives none (`None`: wait until the connection ends).
    pub fn request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.config.request_timeout = timeout;
        self
    }

    /// How many handlers may run at once on this connection (clamped to
    /// `1..=`[`MAX_INFLIGHT`]` / 2`). Requests beyond it wait.
    pub fn concurrency(mut self, limit: usize) -> Self {
        self.concurrency = limit.clamp(1, MAX_INFLIGHT / 2);
        self
    }

    /// Bytes of method names and params that requests waiting for a handler slot may hold;
    /// a request beyond it is answered Server busy (-32001). Default 16 MiB.
    pub fn queue_bytes(mut self, bytes: usize) -> Self {
        self.queue_bytes = bytes;
        self
    }

    /// Capacity of the channel from [`Client`]s to the driver (default 256).
    pub fn command_capacity(mut self, capacity: usize) -> Self {
        self.command_capacity = capacity.max(1);
        self
    }

    /// The most connections a server ([`serve_tcp`](Builder::serve_tcp)) holds at once
    /// (default 10 000, at least 1). At the limit it stops accepting, with a warning in the
    /// log: new clients wait in the listener's backlog (and may time out there) until a
    /// connection ends, while those already open are served as before. An idle connection
    /// holds a few KiB; this bounds what a flood of clients can take.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.max_connections = limit.max(1);
        self
    }

    /// How long a connection stays idle (nothing received, queued or running) before it gives
    /// back the memory its last burst made it take (default 1 s): its tables and transmit
    /// queue entirely, its receive buffer down to the 512 bytes a new connection reads into.
    /// A busy connection keeps its buffers; one that enlarged them for a large frame gives
    /// that back at once. Zero gives it back as soon as the connection is quiet, with no
    /// timer.
    pub fn idle_release(mut self, after: Duration) -> Self {
        self.idle_release = after;
        self
    }

    /// Calls `hook` with a [`Client`] for each connection a server accepts (and the peer's
    /// address), so that the application can call or notify that client outside any handler,
    /// for example keep the clients to push notifications to all of them. A kept `Client`
    /// does not hold the connection open: when the peer leaves, its calls fail with
    /// [`CallError::Closed`] and [`Client::is_closed`] turns true.
    ///
    /// ```no_run
    /// use std::sync::{Arc, Mutex};
    /// use rpcwire_tokio::{Builder, Client, Router};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> std::io::Result<()> {
    /// let clients: Arc<Mutex<Vec<Client>>> = Arc::default();
    /// let keep = Arc::clone(&clients);
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:4000").await?;
    /// let server = Builder::new()
    ///     .router(Router::new())
    ///     .on_connect(move |client, _peer| keep.lock().unwrap().push(client))
    ///     .serve_tcp(listener);
    /// tokio::spawn(server);
    /// // Later: notify every connected client.
    /// for client in clients.lock().unwrap().iter().filter(|c| !c.is_closed()) {
    ///     let client = client.clone();
    ///     tokio::spawn(async move { client.notify("tick", [1]).await });
    /// }
    /// # Ok(()) }
    /// ```
    pub fn on_connect(
        mut self,
        hook: impl Fn(Client, std::net::SocketAddr) + Send + Sync + 'static,
    ) -> Self {
        self.on_connect = Some(ConnectHook(Arc::new(hook)));
        self
    }

    /// The profile's cancel notification: `method` with params `{"<id_member>": <id>}` (for
    /// example `("$/cancelRequest", "id")` for LSP, `("notifications/cancelled", "requestId")`
    /// for MCP). Both directions: when one of our calls times out or its future is dropped,
    /// the peer is sent this notification for it; when the peer sends it for a request whose
    /// handler is running, that handler's [`Context::cancelled`] completes. Plain JSON-RPC has
    /// none (the default).
    ///
    /// A cancelled request is still answered with whatever its handler returns, as LSP
    /// requires; [`Builder::answer_cancelled`] turns that off.
    pub fn cancel_notification(mut self, method: &str, id_member: &str) -> Self {
        self.cancel = Some(driver::CancelProfile {
            method: method.to_owned(),
            id_member: id_member.to_owned(),
            answer: self.answer_cancelled,
        });
        self
    }

    /// Whether a request the peer cancelled with the profile's cancel notification
    /// ([`Builder::cancel_notification`]) still gets an answer (default: yes, LSP's rule).
    /// With `false` (MCP's rule: a receiver should not answer a cancelled request), whatever
    /// the handler returns after the cancellation is dropped and the request is released
    /// with nothing written; in a batch, the reply leaves it out. A request still waiting for
    /// a handler slot ([`Builder::concurrency`]) is released at once, its handler never
    /// started. A request whose answer was already written is not affected. Without a cancel
    /// notification this changes nothing.
    ///
    /// ```
    /// use rpcwire_tokio::Builder;
    /// let mcp = Builder::new()
    ///     .cancel_notification("notifications/cancelled", "requestId")
    ///     .answer_cancelled(false);
    /// ```
    pub fn answer_cancelled(mut self, answer: bool) -> Self {
        self.answer_cancelled = answer;
        if let Some(profile) = &mut self.cancel {
            profile.answer = answer;
        }
        self
    }

    /// The handlers for inbound requests and notifications (without one, every request is
    /// answered Method not found). The router is given an `rpc.discover` method (an OpenRPC
    /// document listing its methods, see [`Router::discoverable`]) unless it has its own.
    pub fn router(mut self, router: Router) -> Self {
        self.router = Some(Arc::new(router.discoverable()));
        self
    }

    /// Starts a connection over a reader and a writer. Must be called inside a tokio runtime.
    ///
    /// The connection runs until the peer closes its side, [`Client::shutdown`] is called,
    /// the stream fails, or (for a connection without a router, which nobody can call) every
    /// [`Client`] is dropped.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // Any reader and writer: here, the two ends of two in-memory pipes.
    /// let (server_in, client_out) = tokio::io::simplex(4096);
    /// let (client_in, server_out) = tokio::io::simplex(4096);
    /// let router = Router::new().method("echo", |p: Vec<i64>| async move { Ok::<_, RpcError>(p) });
    /// let server = Builder::new().router(router).run(server_in, server_out);
    /// let client = Builder::new().run(client_in, client_out);
    /// let back: Vec<i64> = client.client().call("echo", [1, 2, 3]).await?;
    /// assert_eq!(back, [1, 2, 3]);
    /// client.join().await?;
    /// server.join().await?;
    /// # Ok(()) }
    /// ```
    pub fn run<R, W>(self, reader: R, writer: W) -> Session
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let (client, driver) = self.run_inline(reader, writer);
        let task = tokio::spawn(driver);
        Session {
            client,
            task,
            ends_on_join: false,
        }
    }

    /// Starts a connection over one bidirectional stream (split into halves).
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// // For example a Unix socket.
    /// let stream = tokio::net::UnixStream::connect("/tmp/service.sock").await?;
    /// let session = rpcwire_tokio::Builder::new().run_io(stream);
    /// let data: (String, i64) = session.client().call("get_data", ()).await?;
    /// # Ok(()) }
    /// ```
    pub fn run_io<T>(self, io: T) -> Session
    where
        T: AsyncRead + AsyncWrite + Send + 'static,
    {
        let (reader, writer) = tokio::io::split(io);
        self.run(reader, writer)
    }

    /// Serves this process's stdin and stdout (an MCP or LSP server). When stdin closes, the
    /// answers to requests already received are still written.
    ///
    /// On unix, where stdin or stdout is a pipe (as under MCP hosts and language clients) or a
    /// socket, it is set non-blocking and served on the runtime's event loop; a regular file
    /// (`serve < requests.ndjson`) is read and written in place on the runtime's thread. A
    /// terminal, another device, or a platform without unix descriptors goes through tokio's
    /// blocking-thread streams. Write nothing else to stdout while the session runs (it is the
    /// wire; logs belong on stderr).
    ///
    /// ```no_run
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), rpcwire_tokio::DriverError> {
    /// let router = Router::new().method("ping", |_: ()| async { Ok::<_, RpcError>("pong") });
    /// Builder::new().router(router).stdio().join().await
    /// # }
    /// ```
    pub fn stdio(self) -> Session {
        let (reader, writer) = stdio::streams();
        self.caller_if_unset(|| Caller::local(Transport::Stdio))
            .run(reader, writer)
    }

    /// Connects to a TCP server.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let session = rpcwire_tokio::Builder::new().connect_tcp("127.0.0.1:4000").await?;
    /// let sum: i64 = session.client().call("sum", [1, 2, 4]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn connect_tcp<A: ToSocketAddrs>(self, addr: A) -> io::Result<Session> {
        let stream = TcpStream::connect(addr).await?;
        stream.set_nodelay(true)?;
        let peer = stream.peer_addr()?;
        let (reader, writer) = stream.into_split();
        let mut session = self
            .caller_if_unset(|| Caller::new(Identity::anonymous(), Transport::Tcp).with_peer(peer))
            .run(reader, writer);
        session.ends_on_join = true;
        Ok(session)
    }

    /// Serves every connection accepted on `listener`, each with its own driver and these
    /// settings. Runs until the future is dropped (connections already accepted go on). A
    /// client that half-closes still gets its answers; the server goes on accepting.
    ///
    /// ```no_run
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:4000").await?;
    /// let router = Router::new().method("ping", |_: ()| async { Ok::<_, RpcError>("pong") });
    /// Builder::new().router(router).serve_tcp(listener).await;
    /// # Ok(()) }
    /// ```
    pub async fn serve_tcp(self, listener: TcpListener) {
        self.accept_loop(listener, |builder, stream, peer, permit| {
            let credentials = Credentials::new(Transport::Tcp, Some(peer));
            // Without an authenticator nothing waits: no task beyond the connection's.
            if let Some(caller) = builder.admit_at_once(&credentials) {
                let (reader, writer) = stream.into_split();
                builder.serve_accepted(caller, peer, reader, writer, permit);
                return;
            }
            tokio::spawn(async move {
                if let Some(caller) = builder.admit(credentials).await {
                    let (reader, writer) = stream.into_split();
                    builder.serve_accepted(caller, peer, reader, writer, permit);
                }
            });
        })
        .await
    }

    /// Serves JSON-RPC over TLS on every connection accepted on `listener` (feature `tls`),
    /// as [`serve_tcp`](Builder::serve_tcp) does over plain TCP. Each connection's handshake
    /// and authentication must finish within [`handshake_timeout`](Builder::handshake_timeout);
    /// with mutual TLS the client's verified certificate is in its
    /// [`Caller`](Caller::certificate), and without an [`authenticator`](Builder::authenticator)
    /// its subject is the caller's identity. Certificates reload as [`tls::ServerTls`] says.
    #[cfg(feature = "tls")]
    pub async fn serve_tls(self, listener: TcpListener, tls: tls::ServerTls) {
        self.accept_loop(listener, move |builder, stream, peer, permit| {
            let tls = tls.clone();
            // The handshake and the authenticator wait in a task of their own, which ends
            // once the connection runs (its future, sized for the handshake, is not kept).
            tokio::spawn(async move {
                let (stream, certificate) =
                    match tls.accept(stream, builder.handshake_timeout).await {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                let credentials = Credentials {
                    certificate: certificate.as_ref(),
                    ..Credentials::new(Transport::Tls, Some(peer))
                };
                let Some(caller) = builder.admit(credentials).await else {
                    return;
                };
                let (reader, writer) = tokio::io::split(stream);
                builder.serve_accepted(caller, peer, reader, writer, permit);
            });
        })
        .await
    }

    /// Connects to a JSON-RPC server over TLS (feature `tls`), checking its certificate for
    /// `server_name` with `config` (see [`tls::client_config`]).
    #[cfg(feature = "tls")]
    pub async fn connect_tls(
        self,
        addr: std::net::SocketAddr,
        server_name: &str,
        config: Arc<tls::rustls::ClientConfig>,
    ) -> io::Result<Session> {
        let stream = tls::connect(addr, server_name, config).await?;
        let (reader, writer) = tokio::io::split(stream);
        let mut session = self
            .caller_if_unset(|| Caller::new(Identity::anonymous(), Transport::Tls).with_peer(addr))
            .run(reader, writer);
        session.ends_on_join = true;
        Ok(session)
    }

    /// Accepts connections on `listener` under the connection limit, each handed to `serve`
    /// with the permit it holds until it ends; runs until dropped.
    async fn accept_loop<F>(self, listener: TcpListener, serve: F)
    where
        F: Fn(Builder, TcpStream, std::net::SocketAddr, tokio::sync::OwnedSemaphorePermit),
    {
        let slots = Arc::new(tokio::sync::Semaphore::new(self.max_connections));
        loop {
            let permit = match Arc::clone(&slots).try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    tracing::warn!(
                        limit = self.max_connections,
                        "connection limit reached: new connections wait until one ends"
                    );
                    match Arc::clone(&slots).acquire_owned().await {
                        Ok(permit) => permit,
                        // The semaphore is never closed.
                        Err(_) => return,
                    }
                }
            };
            let (stream, peer) = match listener.accept().await {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of descriptors and the like: wait and go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let _ = stream.set_nodelay(true);
            serve(self.clone(), stream, peer, permit);
        }
    }

    /// Runs one connection a server accepted and admitted, in tasks of its own: its driver,
    /// and a small one that waits for it and then gives back its slot.
    fn serve_accepted<R, W>(
        mut self,
        caller: Caller,
        peer: std::net::SocketAddr,
        reader: R,
        writer: W,
        permit: tokio::sync::OwnedSemaphorePermit,
    ) where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        self.caller = Some(Arc::new(caller));
        let on_connect = self.on_connect.take();
        let session = self.run(reader, writer);
        if let Some(hook) = on_connect {
            (hook.0)(session.client().clone(), peer);
        }
        tokio::spawn(async move {
            match session.join().await {
                Ok(()) => tracing::debug!(%peer, "connection ended"),
                Err(e) => tracing::debug!(%peer, error = %e, "connection failed"),
            }
            drop(permit);
        });
    }

    /// Spawns a server program and talks to it over its stdin and stdout (as MCP hosts and
    /// language clients do). Its stderr is inherited; it is killed when the returned
    /// [`Child`](tokio::process::Child) is dropped.
    ///
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let mut cmd = tokio::process::Command::new("rpcwire");
    /// cmd.args(["serve", "--stdio"]);
    /// let (session, mut child) = rpcwire_tokio::Builder::new().spawn_child(&mut cmd)?;
    /// let data: (String, i64) = session.client().call("get_data", ()).await?;
    /// session.join().await?;       // closes the child's stdin
    /// child.wait().await?;
    /// # Ok(()) }
    /// ```
    pub fn spawn_child(
        self,
        command: &mut tokio::process::Command,
    ) -> io::Result<(Session, tokio::process::Child)> {
        command
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(io::Error::other("child stdio not captured"));
        };
        let mut session = self
            .caller_if_unset(|| Caller::local(Transport::ChildProcess))
            .run(stdout, stdin);
        session.ends_on_join = true;
        Ok((session, child))
    }

    /// Two connections joined by an in-memory pipe of `buffer` bytes each way: this one and
    /// `other`. Handy for tests and for in-process services.
    pub fn duplex(self, other: Builder, buffer: usize) -> (Session, Session) {
        let (a, b) = tokio::io::duplex(buffer.max(1));
        (self.run_io(a), other.run_io(b))
    }
}

/// A running connection: its [`Client`] and its driver task.
#[derive(Debug)]
pub struct Session {
    client: Client,
    task: JoinHandle<Result<(), DriverError>>,
    /// A connection this side opened (`connect_tcp`, `spawn_child`): `join` ends it.
    ends_on_join: bool,
}

impl Session {
    /// The client handle (clone it freely).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Splits into the client and the driver task.
    pub fn into_parts(self) -> (Client, JoinHandle<Result<(), DriverError>>) {
        let Session { client, task, .. } = self;
        (client, task)
    }

    /// Waits for the connection to end, and ends it first if this side opened it:
    /// - a connection opened here ([`Builder::connect_tcp`], [`Builder::spawn_child`]) is
    ///   closed as by [`close`](Session::close): its owner is done with it, router or not;
    /// - any other (a server's: [`Builder::stdio`], an accepted TCP connection, [`Builder::run`])
    ///   drops this session's client and waits: it ends once no other [`Client`] clone is alive
    ///   if it has no router, and when the peer closes its side (or on [`Client::shutdown`]) if
    ///   it has one.
    pub async fn join(self) -> Result<(), DriverError> {
        if self.ends_on_join {
            self.client.shutdown();
        }
        drop(self.client);
        self.task.await?
    }

    /// Ends the connection from this side and waits for it: stops reading, fails our pending
    /// calls with [`CallError::Closed`], answers the requests already received, flushes, and
    /// closes the write side. The way to finish a client that also serves (has a router).
    pub async fn close(self) -> Result<(), DriverError> {
        self.client.shutdown();
        self.join().await
    }
}
