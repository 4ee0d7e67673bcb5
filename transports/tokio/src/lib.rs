#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-tokio
//!
//! Runs an [`rpcwire`] JSON-RPC 2.0 [`Connection`](rpcwire::Connection) over any tokio
//! `AsyncRead + AsyncWrite`: this process's stdio (MCP servers), TCP and TLS (connect or
//! serve), Unix sockets, a child process's stdio (MCP hosts, language clients), or an
//! in-memory duplex pipe. All protocol logic (framing, validation, id correlation, batches,
//! timeouts, limits) lives in the core, and everything about running a request (the router,
//! identities, access rules, rate limits, handlers, telemetry) in the service layer
//! ([`rpcwire_service`], whose [`Dispatcher`](rpcwire_service::Dispatcher) every connection
//! hands its messages to); this crate moves bytes and time between tokio and them.
//!
//! - [`Builder`]: the framing and limits of a connection and the [`Service`] it serves; its
//!   constructors start a connection and return a [`Session`].
//! - [`Client`]: a cloneable handle to call the peer (typed [`call`](Client::call) with a
//!   timeout, [`notify`](Client::notify), [`batch`](Client::batch)); dropping a call's future
//!   cancels it; when the connection ends every pending call fails with [`CallError::Closed`].
//! - [`Router`]: async handlers by method name with typed params (re-exported from
//!   [`rpcwire_service`], as are the other service types). Either side may call the other on
//!   the same connection.
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
//! One task per connection owns the core connection (heap storage), its receive buffer and
//! its dispatcher, and `select!`s on: the socket being readable (bytes go straight into the
//! driver's read buffer, so partial frames survive any branch winning), the socket being
//! writable (when the core has output; all queued frames are written together and flushed
//! only when no more output is ready), what the dispatcher waits for (client commands through
//! a bounded channel, handler completions), and the core's next deadline.
//!
//! A request is handled where it lies: the dispatcher looks its method up once, by the name's
//! bytes; its params are decoded from the receive buffer; a handler that finishes at once runs
//! in the driver, with no task, and its result is serialized straight into the transmit
//! queue. Only a handler that waits is spawned, under the concurrency limit; requests beyond
//! it wait in a bounded queue. Responses from the peer are read even when every handler slot
//! is busy, so two peers calling each other never deadlock.
//!
//! ## Memory
//!
//! A connection costs what it uses: its buffers and tables start empty, grow while a large
//! frame or a burst needs them (up to [`Builder::max_frame`] and the table limits), give a
//! large frame's memory back as soon as it has gone, and the rest after the connection has
//! been idle for [`Builder::idle_release`]: an idle TCP connection holds about 5 KiB of heap.
//! The command channel is bounded, requests waiting for a handler slot are bounded in bytes
//! ([`Service::queue_bytes`]; beyond it they are answered Server busy, -32001), a server holds
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
//! Each connection runs in an `rpc.connection` span; its calls' spans and metrics are the
//! dispatcher's (see [`rpcwire_telemetry`]).

mod accept;
mod driver;
mod messages;
mod stdio;

/// This process's stdin and stdout as the async streams [`Builder::stdio`] runs over (on the
/// runtime's own threads wherever the kind of descriptor allows): for a program that wraps one
/// of them before [`Builder::run`] (to watch its writes, say) and runs as `stdio` would, with
/// [`Caller::local`]`(`[`transport::STDIO`]`)` as its caller.
pub fn stdio_streams() -> (
    Box<dyn tokio::io::AsyncRead + Unpin + Send>,
    Box<dyn tokio::io::AsyncWrite + Unpin + Send>,
) {
    stdio::streams()
}
#[cfg(feature = "tls")]
pub mod tls;

use std::io;
use std::sync::Arc;
use std::time::Duration;

use rpcwire::Config;
use rpcwire_service::ClientSettings;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpStream, ToSocketAddrs};
use tokio::task::JoinHandle;

pub use accept::{accept_loop, Listener, Slot};
pub use messages::{Incoming, Messages};
pub use rpcwire::wire::Framing;
pub use rpcwire::ErrorCode;
#[cfg(feature = "jwt")]
pub use rpcwire_service::jwt;
#[cfg(feature = "auth")]
pub use rpcwire_service::signing;
pub use rpcwire_service::{
    AuthError, AuthFuture, Authenticator, Batch, BatchResults, CallError, Caller, Cancellation,
    Client, Context, Credentials, Drained, Headers, Identity, LazyMeta, PeerCertificate, Policy,
    RateLimiter, RefusalLogLimit, Router, RpcError, Service, SessionStats, Shutdown, Transport,
    DISCOVER_METHOD, FORBIDDEN, FORBIDDEN_MESSAGE, MAX_INFLIGHT, MAX_PENDING_CALLS, RATE_LIMITED,
    RATE_LIMITED_MESSAGE, SHUTTING_DOWN,
};
#[cfg(feature = "auth")]
pub use rpcwire_service::{StaticTokens, TokenFileError, TokenTableError, MAX_TOKEN_LEN};
pub use rpcwire_telemetry::trace_context;

/// The transports of this crate, as callers' [`Caller::transport`] names them.
pub mod transport {
    use super::Transport;

    /// This process's stdin and stdout.
    pub const STDIO: Transport = Transport::new("stdio", "pipe");
    /// A child process's pipes.
    pub const CHILD_PROCESS: Transport = Transport::new("child", "pipe");
    /// A plain TCP connection.
    pub const TCP: Transport = Transport::new("tcp", "tcp");
    /// TCP with TLS.
    pub const TLS: Transport = Transport::new("tls", "tcp");
    /// A Unix domain socket.
    pub const UNIX: Transport = Transport::new("unix", "unix");
}

/// The default maximum frame (4 MiB).
pub const DEFAULT_MAX_FRAME: usize = 4 << 20;

/// The default limit on connections a server holds at once ([`Builder::max_connections`]).
pub const DEFAULT_MAX_CONNECTIONS: usize = 10_000;

/// Why a connection's driver stopped with an error (a peer closing its side is not an error).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// Reading or writing the byte stream failed.
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The driver task panicked or was aborted.
    #[error("driver task failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Settings of a connection, and its constructors: the core's framing and limits, the
/// [`Service`] it serves (the router and the policies the dispatcher applies), who is at the
/// other end, and a server's limits.
///
/// ```
/// use std::time::Duration;
/// use rpcwire_tokio::{Builder, Framing, Router, Service};
///
/// let builder = Builder::new()
///     .framing(Framing::ContentLength)   // LSP style; the default is one JSON text per line
///     .max_frame(1 << 20)                // larger frames are answered with an error and skipped
///     .request_timeout(Some(Duration::from_secs(5)))
///     .max_connections(1000)             // a server holds at most this many connections
///     .service(Service::new(Router::new()).concurrency(8)); // handlers running at once
/// ```
#[derive(Clone, Debug)]
pub struct Builder {
    config: Config,
    service: Service,
    client: ClientSettings,
    max_connections: usize,
    idle_release: Duration,
    on_connect: Option<ConnectHook>,
    /// Who is at the other end ([`Builder::caller`]); `None`: what the constructor implies.
    caller: Option<Arc<Caller>>,
}

/// What a server calls for each connection it accepts (see [`Builder::on_connect`]).
#[derive(Clone)]
struct ConnectHook(Arc<dyn Fn(Client, std::net::SocketAddr) + Send + Sync>);

impl std::fmt::Debug for ConnectHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ConnectHook")
    }
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

impl Builder {
    /// Line framing, 4 MiB frames, 30 s call timeout, batches accepted, and a [`Service`]
    /// with no router (64 concurrent handlers, 16 MiB of queued requests).
    pub fn new() -> Self {
        Builder {
            config: Config {
                max_frame: DEFAULT_MAX_FRAME,
                max_pending: MAX_PENDING_CALLS,
                max_inflight: MAX_INFLIGHT,
                ..Config::default()
            },
            service: Service::client_only(),
            client: ClientSettings::default(),
            max_connections: DEFAULT_MAX_CONNECTIONS,
            idle_release: Duration::from_secs(1),
            on_connect: None,
            caller: None,
        }
    }

    /// The service the connections serve: its router and the policies every call goes through
    /// (authentication, access, rate limits, handler concurrency, the cancel notification).
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, RateLimiter, Router, Service};
    /// let service = Service::new(Router::new()).rate_limit(RateLimiter::new(50.0, 100));
    /// let builder = Builder::new().service(service);
    /// ```
    pub fn service(mut self, service: Service) -> Self {
        self.service = service;
        self
    }

    /// The service changed by `f`: a policy added to what the builder already serves.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, RateLimiter, Router};
    /// let builder = Builder::new()
    ///     .router(Router::new())
    ///     .map_service(|s| s.concurrency(8).rate_limit(RateLimiter::new(50.0, 100)));
    /// assert_eq!(builder.service_ref().concurrency_limit(), 8);
    /// ```
    pub fn map_service(mut self, f: impl FnOnce(Service) -> Service) -> Self {
        self.service = f(self.service);
        self
    }

    /// The service.
    pub fn service_ref(&self) -> &Service {
        &self.service
    }

    /// The handlers for inbound requests and notifications: the service's router (without
    /// one, every request is answered Method not found). The router is given an
    /// `rpc.discover` method unless it has its own ([`Router::discoverable`]).
    pub fn router(mut self, router: Router) -> Self {
        self.service = self.service.router(router);
        self
    }

    /// Who is at the other end of the connections this builder starts: handlers read it from
    /// their [`Context`] and the router's access rules ([`Router::require`]) decide by its
    /// identity. Without one, [`stdio`](Builder::stdio) and [`spawn_child`](Builder::spawn_child)
    /// connections are the local process ([`Identity::local`], trusted with every role), a
    /// server's ([`serve_tcp`](Builder::serve_tcp)) are what the service's authenticator says
    /// (anonymous without one), and any other is anonymous.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Caller, Identity, Transport};
    /// const SERIAL: Transport = Transport::new("serial", "pipe");
    /// let builder = Builder::new()
    ///     .caller(Caller::new(Identity::new("device-7").with_roles(["device"]), SERIAL));
    /// ```
    pub fn caller(self, caller: Caller) -> Self {
        self.shared_caller(Arc::new(caller))
    }

    /// [`caller`](Builder::caller) already shared.
    pub fn shared_caller(mut self, caller: Arc<Caller>) -> Self {
        self.caller = Some(caller);
        self
    }

    /// The builder's caller, or the anonymous one (shared: no allocation per connection).
    fn caller_or_anonymous(&self) -> Arc<Caller> {
        static ANONYMOUS: std::sync::OnceLock<Arc<Caller>> = std::sync::OnceLock::new();
        self.caller
            .clone()
            .unwrap_or_else(|| Arc::clone(ANONYMOUS.get_or_init(|| Arc::new(Caller::anonymous()))))
    }

    /// This builder with `caller` unless it has one of its own: for a transport that knows
    /// what its connections are when the application did not say who calls.
    pub fn caller_if_unset(mut self, caller: impl FnOnce() -> Caller) -> Self {
        if self.caller.is_none() {
            self.caller = Some(Arc::new(caller()));
        }
        self
    }

    /// Whether each batch a connection receives gets a span of its own (`rpc.batch`, the
    /// parent of its calls' spans), made only while a subscriber listens to spans; on by
    /// default.
    pub fn batch_spans(mut self, on: bool) -> Self {
        self.client.batch_spans = on;
        self
    }

    /// Puts the W3C trace context of each outgoing call's span in `table`, by request id,
    /// while a subscriber listens (feature `otel`): for a transport that sends it beside the
    /// message (the HTTP client's `traceparent` header). See [`trace_context`].
    pub fn outgoing_traces(mut self, table: trace_context::OutgoingTraces) -> Self {
        self.client.outgoing_traces = Some(table);
        self
    }

    /// Whether the client's calls carry the W3C trace context of their span in
    /// `params._meta` (`traceparent`, `tracestate`), as MCP does: only while a subscriber
    /// listens (feature `otel`); params given as an array, and a `_meta.traceparent` already
    /// there, are left as they are.
    pub fn meta_traces(mut self, on: bool) -> Self {
        self.client.meta_traces = on;
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
        self.client.request_timeout = timeout;
        self
    }

    /// The core's settings of each connection (framing and limits).
    pub fn config(&self) -> Config {
        self.config
    }

    /// The settings of each connection's own [`Client`] (the peer handlers get): its call
    /// timeout, command capacity, trace context in `_meta` or beside the message, batch
    /// spans. With [`service_ref`](Builder::service_ref) and [`config`](Builder::config), what
    /// a [`Responder`](rpcwire_service::Responder) needs to answer bodies as this builder's
    /// connections would.
    pub fn client_settings(&self) -> &ClientSettings {
        &self.client
    }

    /// Capacity of the channel from [`Client`]s to the driver (default 256).
    pub fn command_capacity(mut self, capacity: usize) -> Self {
        self.client.command_capacity = capacity.max(1);
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

    /// Like [`run`](Builder::run), but hands the driver back as a future instead of spawning
    /// it: the caller polls it in its own task, beside the code that feeds `reader` and
    /// drains `writer`, with no hand-off between tasks. The future ends as `run`'s task does;
    /// dropping it ends the connection at once.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    /// let input: &'static [u8] = b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":1}\n";
    /// let (writer, mut output) = tokio::io::duplex(4096);
    /// let (_client, driver) = Builder::new().router(router).run_inline(input, writer);
    /// driver.await?; // end of input: answers what it read, then ends
    /// let mut answer = String::new();
    /// tokio::io::AsyncReadExt::read_to_string(&mut output, &mut answer).await?;
    /// assert_eq!(answer, "{\"jsonrpc\":\"2.0\",\"result\":3,\"id\":1}\n");
    /// # Ok(()) }
    /// ```
    pub fn run_inline<R, W>(
        self,
        reader: R,
        writer: W,
    ) -> (
        Client,
        impl std::future::Future<Output = Result<(), DriverError>> + Send,
    )
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let caller = self.caller_or_anonymous();
        let settings = driver::Settings {
            config: self.config,
            service: self.service,
            caller,
            client: self.client,
            idle_release: self.idle_release,
        };
        driver::run(settings, reader, writer)
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
        let (reader, writer) = stdio_streams();
        self.caller_if_unset(|| Caller::local(transport::STDIO))
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
            .caller_if_unset(|| Caller::new(Identity::anonymous(), transport::TCP).with_peer(peer))
            .run(reader, writer);
        session.ends_on_join = true;
        Ok(session)
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
            .caller_if_unset(|| Caller::new(Identity::anonymous(), transport::TLS).with_peer(addr))
            .run(reader, writer);
        session.ends_on_join = true;
        Ok(session)
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
            .caller_if_unset(|| Caller::local(transport::CHILD_PROCESS))
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

    /// [`join`](Session::join) of a server's connection under a drain: once `shutdown` is
    /// triggered, the connection goes on answering (refusing what arrives) until no handler
    /// runs, then closes ([`Client::shutdown_when_idle`]).
    pub async fn join_or_drain(self, shutdown: &Shutdown) -> Result<(), DriverError> {
        let client = self.client.clone();
        let join = self.join();
        tokio::pin!(join);
        tokio::select! {
            ended = &mut join => return ended,
            () = shutdown.draining() => client.shutdown_when_idle(),
        }
        drop(client);
        join.await
    }

    /// Ends the connection from this side and waits for it: stops reading, fails our pending
    /// calls with [`CallError::Closed`], answers the requests already received, flushes, and
    /// closes the write side. The way to finish a client that also serves (has a router).
    pub async fn close(self) -> Result<(), DriverError> {
        self.client.shutdown();
        self.join().await
    }
}
