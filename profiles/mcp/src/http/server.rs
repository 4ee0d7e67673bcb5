//! The MCP Streamable HTTP server: sessions or stateless, built from `rpcwire-http`'s
//! building blocks.

// Named, not the std prelude's glob: its `panic` would be ambiguous in `tokio::select!`.
use std::borrow::ToOwned;
use std::boxed::Box;
use std::string::{String, ToString};
use std::vec::Vec;

use std::borrow::Cow;
use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use rpcwire::wire::{parse, Framing, Id, Message, ParseLimits, Parsed, RawJson};
use rpcwire::ErrorCode;
use rpcwire_http::profile::{
    after_body, clean_prefix, drained, event_stream, json, parse_event_id, read_post_body, refuse,
    send_body, serve_hyper, serve_hyper_connection, sse_event, status, AcceptedMedia, Body,
    Endpoint, EventHub, ExchangeEvent, FrameWriter, HandlesIncoming, OnceReader, ParkedStreams,
    PostExchange, SessionHold, SessionLimits, SessionState, SessionTable, StreamRelay,
};
use rpcwire_http::{ConnectionError, HostPolicy, Protocol, ResponseFuture};
use rpcwire_tokio::{Authenticator, Builder, Caller, Client};
use serde_json::{json, Value};
use tokio::sync::{mpsc, Notify};

use super::auth::{owner_key, AuthSettings, Gate, ProtectedResource};
use super::stateless::{decode_value, HEADER_MISMATCH};
use crate::methods::{META_PROTOCOL_VERSION, UNSUPPORTED_PROTOCOL_VERSION};
use crate::tokio::{mcp_builder, McpServer};
use crate::{LogLevel, ProtocolVersion};

/// A notification a handler sends (`ctx.peer().notify(CLOSE_STREAM, ())`) to have its
/// request's event stream closed now, in session mode: the request goes on, and the client
/// (told where it was by the stream's event ids) gets the rest with a GET and
/// `Last-Event-ID` (SSE polling). Never forwarded to the client.
pub const CLOSE_STREAM: &str = "rpcwire/closeStream";

/// The revision the stateless mode speaks.
pub const STATELESS_VERSION: &str = "2026-07-28";
/// The session header (session mode).
pub const HEADER_SESSION_ID: &str = "mcp-session-id";
/// The protocol revision header.
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The method header (stateless mode): the body's `method`.
pub const HEADER_METHOD: &str = "mcp-method";
/// The target header (stateless mode): `params.name` of `tools/call` and `prompts/get`,
/// `params.uri` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
pub const HEADER_NAME: &str = "mcp-name";

/// Which Streamable HTTP revision the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sessions (2025-03-26 to 2025-11-25): `Mcp-Session-Id`, GET stream, DELETE.
    Sessions,
    /// Stateless (2026-07-28): no sessions, `Mcp-Method` / `Mcp-Name`, GET and DELETE 405.
    Stateless,
}

/// Settings of an MCP Streamable HTTP server, and [`build`](McpHttpServer::build) to make
/// its [`McpService`].
#[derive(Clone)]
pub struct McpHttpServer {
    builder: Builder,
    mode: Mode,
    path: String,
    endpoint: Endpoint,
    prefix: String,
    sessions: SessionLimits,
    auth: AuthSettings,
    /// Each caller's rate of requests; kept apart from the builder's, so that the sessions'
    /// connections do not count the calls a second time.
    /// Every POST signed (feature `signing`).
    #[cfg(feature = "signing")]
    signing: Option<Arc<rpcwire_tokio::signing::RequestSigning>>,
}

impl std::fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpServer")
            .field("mode", &self.mode)
            .field("path", &self.path)
            .field("hosts", self.endpoint.hosts())
            .field("prefix", &self.prefix)
            .field("sessions", &self.sessions)
            .finish_non_exhaustive()
    }
}

impl McpHttpServer {
    /// Serves `server` (its handshake checks are left to the sessions here:
    /// `strict_handshake(false)`).
    pub fn new(server: McpServer) -> Self {
        Self::from_builder(server.strict_handshake(false).builder())
    }

    /// Serves the router of `builder` (an [`mcp_builder`] with an MCP router, possibly
    /// extended with methods of its own: resources, prompts, completion).
    pub fn from_builder(builder: Builder) -> Self {
        McpHttpServer {
            builder,
            mode: Mode::Sessions,
            path: "/mcp".into(),
            endpoint: Endpoint::new(Duration::from_secs(300), 256),
            prefix: "mcp".into(),
            sessions: SessionLimits {
                max_sessions: 1024,
                idle: Duration::from_secs(600),
            },
            auth: AuthSettings::default(),
            #[cfg(feature = "signing")]
            signing: None,
        }
    }

    /// At most `limiter`'s rate of requests per caller (the authenticated subject; an
    /// unauthenticated caller by its address), checked once the caller is authenticated:
    /// beyond it, 429 with `Retry-After`, and nothing is created or run for the request.
    pub fn rate_limit(mut self, limiter: rpcwire_tokio::RateLimiter) -> Self {
        let service = self.builder.service_ref().clone().rate_limit(limiter);
        self.builder = self.builder.service(service);
        self
    }

    /// Requires every POST to be signed (feature `signing`): the HMAC-SHA256 of its exact
    /// body bytes, a timestamp and a nonce in the `X-Rpcwire-*` headers
    /// ([`rpcwire_tokio::signing`]), checked in constant time once the body is read and
    /// before it is parsed, with nonces remembered per caller. A refused request gets 401
    /// (429 while the caller's nonce cache is full): no session is created, no handler runs.
    #[cfg(feature = "signing")]
    pub fn signed(mut self, signing: Arc<rpcwire_tokio::signing::RequestSigning>) -> Self {
        self.signing = Some(signing);
        self
    }

    /// Authenticates every request with `authenticator` (a
    /// [`JwtAuthenticator`](rpcwire_tokio::jwt::JwtAuthenticator) for OAuth access tokens),
    /// before anything else is done for it: a request refused gets 401 (400 for a malformed
    /// `Authorization` header, 503 when the authenticator cannot decide) with a
    /// `WWW-Authenticate: Bearer` challenge, and no session or handler state exists for it.
    /// Handlers see the caller's identity in their context; a session is bound to the
    /// identity that created it (another identity presenting its id gets 404). An access
    /// token in the query string is refused (400), never read.
    pub fn authenticator(mut self, authenticator: impl Authenticator) -> Self {
        let service = self
            .builder
            .service_ref()
            .clone()
            .authenticator(authenticator);
        self.builder = self.builder.service(service);
        self
    }

    /// Serves RFC 9728 protected resource metadata for `resource` (at
    /// `/.well-known/oauth-protected-resource` and the form suffixed with the endpoint's
    /// path), and names its URL in every challenge (`resource_metadata="..."`), so that a
    /// client finds the authorization server.
    pub fn protected_resource(mut self, resource: ProtectedResource) -> Self {
        self.auth.resource = Some(resource);
        self
    }

    /// Scopes every request's token must hold (403 `insufficient_scope` otherwise); named
    /// in the 401 challenge's `scope`.
    pub fn required_scopes(mut self, scopes: &[&str]) -> Self {
        self.auth.required = scopes.iter().map(|s| (*s).to_owned()).collect();
        self
    }

    /// Scopes a request for `method` (`tools/call`, say) must hold besides the required
    /// ones (403 `insufficient_scope` otherwise).
    pub fn method_scopes(mut self, method: &str, scopes: &[&str]) -> Self {
        self.auth.by_method.insert(
            method.to_owned(),
            scopes.iter().map(|s| (*s).to_owned()).collect(),
        );
        self
    }

    /// The most connections [`serve`] holds at once (default 10 000, at least 1); more wait
    /// in the listen backlog.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// How long [`serve`] keeps a connection with no request under way (default 90 s, as
    /// [`HttpServer::idle_connection_timeout`](rpcwire_http::HttpServer::idle_connection_timeout)):
    /// one that sends nothing after connecting, an idle keep-alive connection, or an HTTP/2
    /// connection with no stream under way (shut down with GOAWAY; an open event stream
    /// counts as a stream). The same timer bounds a request's head (hyper's header read
    /// timeout). Not the session's idle time ([`idle_timeout`](McpHttpServer::idle_timeout)):
    /// a session outlives its connections.
    pub fn idle_connection_timeout(mut self, idle: Duration) -> Self {
        self.endpoint.set_idle_connection(idle);
        self
    }

    /// Sessions (default) or stateless.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// The endpoint's path (default `/mcp`); other paths get 404.
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// Which `Host` and `Origin` values are accepted (others get 403). Default: loopback.
    pub fn hosts(mut self, policy: HostPolicy) -> Self {
        self.endpoint.set_hosts(policy);
        self
    }

    /// The prefix of the session ids this server creates (`PREFIX-<32 hex digits>`), so that
    /// a load balancer can route each session to the server that holds it. Characters other
    /// than ASCII letters, digits, `.` and `_` are replaced with `_`. Default `mcp`.
    pub fn session_prefix(mut self, prefix: &str) -> Self {
        self.prefix = clean_prefix(prefix);
        self
    }

    /// The most sessions held at once (default 1024, at least 1); an `initialize` beyond it
    /// gets 503 once idle sessions have been ended.
    pub fn max_sessions(mut self, n: usize) -> Self {
        self.sessions.max_sessions = n.max(1);
        self
    }

    /// How long a session with no request and no open stream lives (default 10 min).
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.sessions.idle = idle.max(Duration::from_millis(10));
        self
    }

    /// The largest request body (default 4 MiB, at least 1024); larger ones get 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.endpoint.set_max_body(bytes);
        self
    }

    /// The longest one request may run (default 5 min); past it its stream ends (or 503).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.set_timeout(timeout);
        self
    }

    /// The GET stream's resumption buffer per session (default 256 events, 1 MiB).
    pub fn stream_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.endpoint.set_stream_buffer(events, bytes);
        self
    }

    /// The reconnection time event-stream clients are told (`retry:`; default 1 s): how long
    /// they wait before resuming a closed stream.
    pub fn retry(mut self, after: Duration) -> Self {
        self.endpoint.set_retry(after);
        self
    }

    /// The keep-alive comment interval of idle GET streams (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.endpoint.set_keep_alive(every);
        self
    }

    /// Makes the service; starts the idle-session sweeper, so call it within a tokio runtime.
    pub fn build(self) -> McpService {
        let builder = self
            .builder
            .framing(Framing::ContentLength)
            .max_frame(self.endpoint.max_body())
            .idle_release(Duration::ZERO);
        let sessions = SessionTable::new(&self.prefix, self.sessions);
        sessions.count_as(rpcwire_telemetry::names::MCP_SESSIONS);
        sessions.start_sweeper();
        let gate = Gate::new(builder.service_ref().clone(), self.auth, &self.path);
        let inner = Arc::new(Inner {
            gate,
            #[cfg(feature = "signing")]
            signing: self.signing,
            batch_builder: builder.clone().batches(true),
            builder,
            mode: self.mode,
            path: self.path,
            endpoint: self.endpoint,
            sessions,
            pending: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
        });
        McpService { inner }
    }
}

/// What an MCP session keeps: its revision, its log level, its GET streams' hub, and its
/// request streams whose clients went away.
struct McpSession {
    /// The identity that created it (issuer and subject), when requests are authenticated:
    /// only it may use the session.
    owner: Option<String>,
    version: Mutex<Option<ProtocolVersion>>,
    /// The level `logging/setLevel` set: log messages below it are not sent (each POST runs
    /// on a connection of its own, so the level is kept here, for the whole session).
    level: Mutex<Option<LogLevel>>,
    hub: Arc<EventHub>,
    /// Request streams whose clients went away, for resumption.
    detached: ParkedStreams,
    /// Numbers the session's request streams.
    next_stream: AtomicU64,
}

impl McpSession {
    fn version(&self) -> Option<ProtocolVersion> {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SessionState for McpSession {
    /// The session's GET streams end with it.
    fn on_end(&self) {
        self.hub.end_streams();
    }
}

/// A session in the table.
type Session = rpcwire_http::profile::Session<McpSession>;
/// Holds a session active (a running request or an open GET stream).
type Active = SessionHold<McpSession>;

/// A request the server sent to the client from one POST's connection, waiting for its answer.
struct Pending {
    /// The session it belongs to ("" when stateless).
    session: String,
    /// The connection's input.
    input: mpsc::Sender<Bytes>,
    /// The id the connection gave it (the wire carries a server-wide unique one).
    original: Value,
}

struct Inner {
    /// Authentication and scopes, before anything else.
    gate: Gate,
    /// Every POST signed ([`McpHttpServer::signed`]).
    #[cfg(feature = "signing")]
    signing: Option<Arc<rpcwire_tokio::signing::RequestSigning>>,
    builder: Builder,
    /// For sessions of revisions that take batches (2025-03-26 and older).
    batch_builder: Builder,
    mode: Mode,
    path: String,
    /// Hosts, body size and time limits, event streams, `serve`'s connections.
    endpoint: Endpoint,
    /// The sessions, bounded, ended when idle; their ids' prefix also starts the wire ids of
    /// the server's requests.
    sessions: SessionTable<McpSession>,
    /// Server-to-client requests by their wire id.
    pending: Mutex<HashMap<String, Pending>>,
    /// Running requests by (session, request id as JSON text), for
    /// `notifications/cancelled`.
    running: Mutex<HashMap<(String, String), Running>>,
    counter: AtomicU64,
}

/// The MCP server as a tower `Service<http::Request<B>>` (cheap to clone). Run it with
/// [`serve`] or mount it in axum with `Router::route_service`.
#[derive(Clone)]
pub struct McpService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("mode", &self.inner.mode)
            .field("sessions", &self.session_count())
            .finish()
    }
}

impl McpService {
    /// Answers one request.
    pub fn handle<B>(&self, req: Request<B>) -> ResponseFuture
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.handle(req).await })
    }

    /// The number of sessions held.
    pub fn session_count(&self) -> usize {
        self.inner.sessions.len()
    }

    /// The ids of the sessions held.
    pub fn session_ids(&self) -> Vec<String> {
        self.inner.sessions.ids()
    }

    /// A client that sends on the session's GET stream (server-initiated notifications and
    /// requests; their answers come back by POST), if the session exists.
    pub fn session_client(&self, id: &str) -> Option<Client> {
        self.inner.sessions.get(id).map(|s| s.hub.client().clone())
    }
}

impl<B> tower_service::Service<Request<B>> for McpService
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, Infallible>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let fut = self.handle(req);
        Box::pin(async move { Ok(fut.await) })
    }
}

/// Serves `service` on every connection accepted on `listener` (HTTP/1.1, and HTTP/2 with
/// prior knowledge), at most [`McpHttpServer::max_connections`] at once, until the future is
/// dropped. A connection with no request under way (on HTTP/2: no stream) is closed after
/// [`McpHttpServer::idle_connection_timeout`].
pub async fn serve(listener: tokio::net::TcpListener, service: McpService) {
    let endpoint = &service.inner.endpoint;
    let (limit, idle) = (endpoint.max_connections(), endpoint.idle_connection());
    serve_hyper(listener, service, limit, idle).await;
}

/// Serves `service` over TLS on `listener` (feature `tls`): HTTPS with HTTP/2 or HTTP/1.1
/// by ALPN (give `tls` the ALPN protocols `h2` and `http/1.1`), each handshake within
/// `handshake_timeout`, the certificate reloaded as `tls` says.
#[cfg(feature = "tls")]
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    service: McpService,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
) {
    let endpoint = &service.inner.endpoint;
    let (limit, idle) = (endpoint.max_connections(), endpoint.idle_connection());
    rpcwire_http::profile::serve_hyper_tls(listener, service, tls, handshake_timeout, limit, idle)
        .await;
}

/// Serves `service` on one connection accepted by your own code (a TLS stream, say), until it
/// ends: see [`rpcwire_http::serve_connection`], whose example this follows.
pub async fn serve_connection<I>(
    io: I,
    service: McpService,
    protocol: Protocol,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let idle = service.inner.endpoint.idle_connection();
    serve_hyper_connection(io, service, protocol, idle).await
}

impl HandlesIncoming for McpService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }

    fn wants_peer(&self) -> bool {
        self.inner.builder.service_ref().rate_limiter().is_some()
    }
}

// ---- responses ----

/// An HTTP error with a JSON-RPC error object as its body (what MCP SDKs show), for a body
/// whose id is not known (`null`).
fn rpc_error(code: StatusCode, rpc_code: i32, message: &str) -> Response<Body> {
    rpc_error_to(code, None, ErrorCode(rpc_code), message, None)
}

/// An HTTP error whose body answers the request `id` (`null` for anything but a request) with
/// a JSON-RPC error.
fn rpc_error_to(
    status: StatusCode,
    id: Option<&Id<'_>>,
    code: ErrorCode,
    message: &str,
    data: Option<Value>,
) -> Response<Body> {
    let id = id
        .and_then(|id| serde_json::from_str::<Value>(id.raw()).ok())
        .unwrap_or(Value::Null);
    let mut error = json!({"code": code.0, "message": message});
    if let Some(data) = data {
        error["data"] = data;
    }
    let body = json!({"jsonrpc": "2.0", "id": id, "error": error});
    let mut r = json(Bytes::from(body.to_string()));
    *r.status_mut() = status;
    r
}

/// What the client's `Accept` allows: (JSON, event stream). No header means JSON; `*/*` means
/// both (an MCP client that takes anything takes an event stream too).
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    match AcceptedMedia::of(headers) {
        None => (true, false),
        Some(m) => (m.json || m.any, m.sse || m.any),
    }
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// The member of `params` that the `Mcp-Name` header must repeat for `method` (stateless
/// mode), if the method has one.
pub(crate) fn name_member(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" | "resources/subscribe" | "resources/unsubscribe" => Some("uri"),
        _ => None,
    }
}

/// One member of a message's `params`.
fn member<'a>(params: Option<RawJson<'a>>, key: &str) -> Option<RawJson<'a>> {
    params?
        .members()
        .find(|(k, _)| k.eq_str(key))
        .map(|(_, v)| v)
}

/// One string member of a message's `params`, unescaped.
fn member_str<'a>(params: Option<RawJson<'a>>, key: &str) -> Option<Cow<'a, str>> {
    member(params, key)?.as_json_str().map(|s| s.to_str())
}

/// A POSTed body, sorted by the core's parser: the JSON-RPC rules live there, so a body
/// means here what it means on every other transport.
enum Posted<'a> {
    /// An array (an empty one included).
    Batch,
    Request {
        id: Id<'a>,
        method: Cow<'a, str>,
        params: Option<RawJson<'a>>,
    },
    Notification {
        method: Cow<'a, str>,
        params: Option<RawJson<'a>>,
    },
    /// A response, or a malformed one: never answered.
    Response,
    /// Not a valid message: the core answers it (Invalid Request).
    Invalid,
}

impl<'a> Posted<'a> {
    /// Sorts `body`; `None` when it is not JSON (a parse error).
    fn of(body: &'a [u8]) -> Option<Self> {
        Some(match parse(body, ParseLimits::default()).ok()? {
            Parsed::Batch(_) | Parsed::EmptyBatch => Posted::Batch,
            Parsed::Single(Ok(Message::Request(r))) => Posted::Request {
                id: r.id,
                method: r.method.to_str(),
                params: r.params,
            },
            Parsed::Single(Ok(Message::Notification(n))) => Posted::Notification {
                method: n.method.to_str(),
                params: n.params,
            },
            Parsed::Single(Ok(Message::Response(_))) => Posted::Response,
            Parsed::Single(Err(invalid)) if !invalid.needs_reply() => Posted::Response,
            Parsed::Single(Err(_)) => Posted::Invalid,
        })
    }

    /// The method, for a request or a notification.
    fn method(&self) -> Option<&str> {
        match self {
            Posted::Request { method, .. } | Posted::Notification { method, .. } => Some(method),
            _ => None,
        }
    }

    /// `params`, for a request or a notification.
    fn params(&self) -> Option<RawJson<'a>> {
        match self {
            Posted::Request { params, .. } | Posted::Notification { params, .. } => *params,
            _ => None,
        }
    }
}

/// True for an error response with code `-32601` (Method not found). Parsed only when the
/// code's digits are in it: this looks at every stateless JSON answer, tool results included.
fn is_method_not_found(answer: &[u8]) -> bool {
    answer.windows(6).any(|w| w == b"-32601")
        && matches!(
            parse(answer, ParseLimits::default()),
            Ok(Parsed::Single(Ok(Message::Response(r))))
                if r.outcome.is_err_and(|e| e.code == ErrorCode::METHOD_NOT_FOUND)
        )
}

/// True for the [`CLOSE_STREAM`] notification.
fn is_close(m: &[u8]) -> bool {
    m.windows(CLOSE_STREAM.len())
        .any(|w| w == CLOSE_STREAM.as_bytes())
        && serde_json::from_slice::<Value>(m)
            .is_ok_and(|v| v["method"] == CLOSE_STREAM && v.get("id").is_none())
}

/// A running request, as `notifications/cancelled` finds it.
#[derive(Clone)]
struct Running {
    /// Its connection's input: the cancellation goes there, to stop the handler.
    input: mpsc::Sender<Bytes>,
    /// Told of the cancellation, so that the request's exchange ends with no answer.
    cancelled: Arc<Notify>,
}

/// Removes a POST's registrations (its running entry and its pending requests) when the
/// exchange ends, so that nothing holds its connection's input open.
struct Registration {
    inner: Arc<Inner>,
    running: Option<(String, String)>,
    pending: Vec<String>,
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(key) = self.running.take() {
            self.inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
        if !self.pending.is_empty() {
            let mut pending = self
                .inner
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for id in self.pending.drain(..) {
                pending.remove(&id);
            }
        }
    }
}

/// What one POST asks of [`Inner::exchange`].
struct Call {
    /// The request's id as a `notifications/cancelled` finds it (`Id::match_key`: the same
    /// JSON value, the same key); none for a batch or an invalid message.
    id: Option<String>,
    /// The client accepts JSON.
    json_ok: bool,
    /// The client accepts an event stream.
    sse_ok: bool,
    /// A batch (a session of a revision that takes them).
    batch: bool,
    /// `initialize` creating a session.
    init: bool,
    /// Who sent it, when requests are authenticated.
    caller: Option<Arc<Caller>>,
}

/// One POST's connection ([`PostExchange`]) with what MCP adds: its registrations, the
/// session's log level, the stream-closing signal, the server's requests given wire ids.
struct Exchange {
    post: PostExchange,
    registration: Option<Registration>,
    session: String,
    /// The session's log level (messages below it are dropped).
    level: Option<Arc<Session>>,
}

enum Next {
    /// A message for the client (server requests already given their wire id).
    Message(Bytes),
    /// The answer (the last message).
    Answer(Bytes),
    /// A handler asked for its stream to be closed ([`CLOSE_STREAM`]).
    Close,
    End,
    TimedOut,
}

impl Exchange {
    async fn next(&mut self) -> Next {
        loop {
            return match self.post.next().await {
                ExchangeEvent::Answer(m) => {
                    // Answered: nothing waits for the client any more.
                    self.registration = None;
                    Next::Answer(m)
                }
                ExchangeEvent::Message(m) if self.filtered(&m) => continue,
                ExchangeEvent::Message(m) if is_close(&m) => Next::Close,
                ExchangeEvent::Message(m) => Next::Message(self.outgoing(m)),
                ExchangeEvent::Cancelled => {
                    // MCP leaves a cancelled request unanswered (the connection releases it
                    // once its handler stops); its registrations, which hold the
                    // connection's input, go now, so that the exchange ends with the handler.
                    self.registration = None;
                    continue;
                }
                ExchangeEvent::End => Next::End,
                ExchangeEvent::TimedOut => Next::TimedOut,
            };
        }
    }

    /// True for a log message below the session's level.
    fn filtered(&self, m: &[u8]) -> bool {
        let Some(session) = &self.level else {
            return false;
        };
        let Some(min) = *session.level.lock().unwrap_or_else(PoisonError::into_inner) else {
            return false;
        };
        // Only log messages are looked at closely.
        if !m.windows(21).any(|w| w == b"notifications/message") {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<Value>(m) else {
            return false;
        };
        v["method"] == "notifications/message"
            && v["params"]["level"]
                .as_str()
                .and_then(|l| LogLevel::from_bytes(l.as_bytes()))
                .is_some_and(|l| l < min)
    }

    /// A request to the client gets a server-wide unique id, remembered with this
    /// connection's input so that the answer finds its way back.
    fn outgoing(&mut self, m: Bytes) -> Bytes {
        let (Some(registration), Some(input)) = (&mut self.registration, self.post.input()) else {
            return m;
        };
        if !matches!(Posted::of(&m), Some(Posted::Request { .. })) {
            return m;
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(&m) else {
            return m;
        };
        let inner = &registration.inner;
        let wire = format!(
            "{}-s{}",
            inner.sessions.prefix(),
            inner.counter.fetch_add(1, Ordering::Relaxed)
        );
        let original = v["id"].take();
        v["id"] = Value::String(wire.clone());
        inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                wire.clone(),
                Pending {
                    session: self.session.clone(),
                    input: input.clone(),
                    original,
                },
            );
        registration.pending.push(wire);
        Bytes::from(v.to_string())
    }
}

/// Whose a session is: an authenticated caller's, or nobody's (an anonymous caller: the
/// one a traced server makes for every request, as well as an authenticator's).
fn session_owner(caller: Option<&Arc<Caller>>) -> Option<String> {
    caller
        .filter(|c| c.identity().is_authenticated())
        .map(|c| owner_key(c.identity()))
}

impl Inner {
    /// A new session, or why there is none (the table is full of active sessions, or no id
    /// could be made).
    fn create_session(
        &self,
        caller: Option<&Arc<Caller>>,
    ) -> Result<Arc<Session>, rpcwire_http::profile::SessionError> {
        let (max_body, streams) = (self.endpoint.max_body(), self.endpoint.streams());
        let owner = session_owner(caller);
        self.sessions.create(|_id| McpSession {
            owner,
            version: Mutex::new(None),
            level: Mutex::new(None),
            detached: ParkedStreams::default(),
            next_stream: AtomicU64::new(0),
            hub: EventHub::start(mcp_builder(), max_body, streams),
        })
    }

    async fn handle<B>(self: Arc<Self>, req: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if req.method() == Method::GET {
            if let Some(r) = self.gate.metadata(req.uri().path()) {
                return after_body(req, self.endpoint.max_body(), self.endpoint.timeout(), r).await;
            }
        }
        if req.uri().path() != self.path {
            let r = refuse(StatusCode::NOT_FOUND, "no MCP endpoint here\n");
            return after_body(req, self.endpoint.max_body(), self.endpoint.timeout(), r).await;
        }
        if let Some(why) = self.endpoint.refusal(&req) {
            let r = refuse(StatusCode::FORBIDDEN, why);
            return after_body(req, self.endpoint.max_body(), self.endpoint.timeout(), r).await;
        }
        // Authentication first: nothing is created, nothing run, for a request refused.
        let caller = match self.gate.admit(req.uri(), req.headers()).await {
            Ok(caller) => caller,
            Err(r) => {
                return after_body(req, self.endpoint.max_body(), self.endpoint.timeout(), *r).await
            }
        };
        // Traced: the calls' spans get the peer, the `traceparent` header as their parent and
        // the session id (`mcp.session.id`, read from the headers by the MCP server).
        let caller = if rpcwire_telemetry::spans_enabled() {
            let base = caller.map_or_else(
                || {
                    Caller::new(
                        rpcwire_tokio::Identity::anonymous(),
                        rpcwire_http::transport::HTTP,
                    )
                    .with_meta(req.headers().clone())
                },
                |c| (*c).clone(),
            );
            let peer = rpcwire_http::profile::connection_peer(&req);
            Some(Arc::new(rpcwire_http::profile::traced_caller(
                base,
                req.headers(),
                peer,
            )))
        } else {
            caller
        };
        // A revision header, when sent, must name a revision this server speaks. (Stateless
        // mode checks it with the POST's other headers against the body, in
        // `stateless_headers`, and answers with the request's id.)
        if let Some(v) = req.headers().get(HEADER_PROTOCOL_VERSION) {
            if self.mode == Mode::Sessions && ProtocolVersion::from_bytes(v.as_bytes()).is_none() {
                let r = rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "unsupported MCP-Protocol-Version",
                );
                return after_body(req, self.endpoint.max_body(), self.endpoint.timeout(), r).await;
            }
        }
        let (parts, body) = req.into_parts();
        let response = match (self.mode, &parts.method) {
            (_, &Method::POST) => return self.post(parts, body, caller).await,
            (Mode::Sessions, &Method::GET) => self.get(&parts, caller.as_ref()),
            (Mode::Sessions, &Method::DELETE) => self.delete(&parts, caller.as_ref()),
            (mode, _) => {
                let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "method not allowed\n");
                let allow = match mode {
                    Mode::Sessions => "GET, POST, DELETE",
                    Mode::Stateless => "POST",
                };
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                r
            }
        };
        // GET and DELETE carry no body as a rule; one sent anyway (and a refused request's)
        // is read past, so that the connection carries the next request.
        after_body(
            Request::from_parts(parts, body),
            self.endpoint.max_body(),
            self.endpoint.timeout(),
            response,
        )
        .await
    }

    /// The session a request names: `Err` is the answer (400 without one, 404 unknown).
    /// With authentication, a session created by another identity is answered as unknown.
    fn named_session(
        &self,
        headers: &HeaderMap,
        caller: Option<&Arc<Caller>>,
    ) -> Result<Arc<Session>, Box<Response<Body>>> {
        let Some(id) = header_str(headers, HEADER_SESSION_ID) else {
            return Err(Box::new(rpc_error(
                StatusCode::BAD_REQUEST,
                -32000,
                "Bad Request: Mcp-Session-Id header is required",
            )));
        };
        let owner = session_owner(caller);
        match self.sessions.get(id) {
            Some(session) if session.state().owner == owner => Ok(session),
            found => {
                if found.is_some() {
                    tracing::debug!("MCP request refused: a session of another identity");
                }
                Err(Box::new(rpc_error(
                    StatusCode::NOT_FOUND,
                    -32001,
                    "Session not found",
                )))
            }
        }
    }

    fn get(&self, parts: &http::request::Parts, caller: Option<&Arc<Caller>>) -> Response<Body> {
        let (_, sse_ok) = accepts(&parts.headers);
        if !sse_ok {
            return refuse(
                StatusCode::NOT_ACCEPTABLE,
                "GET opens an event stream: accept text/event-stream\n",
            );
        }
        let session = match self.named_session(&parts.headers, caller) {
            Ok(s) => s,
            Err(r) => return *r,
        };
        let last = header_str(&parts.headers, "last-event-id");
        if let Some((stream_id, seq)) = last.and_then(parse_event_id) {
            // The rest of a request's stream (SSE polling, or a broken connection).
            let (tx, rx) = mpsc::channel(8);
            if let Some(stream) = session.detached.get(&stream_id) {
                let active = session.hold();
                tokio::spawn(async move {
                    let _active = active;
                    if stream.resume(seq, tx).await {
                        session.detached.forget(&stream_id);
                    }
                });
            }
            // An unknown stream: nothing to resume, the stream ends at once.
            return event_stream(rx);
        }
        let cursor = session.hub.start_after(last);
        let (tx, rx) = mpsc::channel(8);
        let active = session.hold();
        let hub = Arc::clone(&session.hub);
        tokio::spawn(async move {
            let _active = active;
            hub.serve_stream(cursor, tx).await;
        });
        event_stream(rx)
    }

    fn delete(&self, parts: &http::request::Parts, caller: Option<&Arc<Caller>>) -> Response<Body> {
        match self.named_session(&parts.headers, caller) {
            Ok(session) if self.sessions.remove(session.id()) => status(StatusCode::OK),
            Ok(_) => rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found"),
            Err(r) => *r,
        }
    }

    async fn post<B>(
        self: Arc<Self>,
        parts: http::request::Parts,
        body: B,
        caller: Option<Arc<Caller>>,
    ) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (json_ok, sse_ok) = accepts(&parts.headers);
        let answerable = json_ok || sse_ok;
        let (parts, body) = match read_post_body(
            parts,
            body,
            answerable,
            self.endpoint.max_body(),
            self.endpoint.timeout(),
        )
        .await
        {
            Ok(read) => read,
            Err(refusal) => return *refusal,
        };
        #[cfg(feature = "signing")]
        if let Some(signing) = &self.signing {
            let checked = rpcwire_http::guard::signature_refused(
                signing,
                caller.as_ref(),
                &parts.headers,
                &body,
            );
            if let Err(r) = checked {
                return *r;
            }
        }
        // `posted` borrows a second handle on the body, so that the body itself can move on.
        let text = body.clone();
        let Some(posted) = Posted::of(&text) else {
            return rpc_error(StatusCode::BAD_REQUEST, -32700, "Parse error");
        };
        let is_initialize =
            posted.method() == Some("initialize") && matches!(posted, Posted::Request { .. });
        if let Err(r) = self.gate.method_allowed(caller.as_ref(), posted.method()) {
            return *r;
        }

        // The session (session mode) or the header checks (stateless mode).
        let mut session = None;
        match self.mode {
            Mode::Sessions if is_initialize => {}
            Mode::Sessions => match self.named_session(&parts.headers, caller.as_ref()) {
                Ok(s) => session = Some(s),
                Err(r) => return *r,
            },
            Mode::Stateless => {
                if let Err(r) = stateless_headers(&parts.headers, &posted) {
                    return *r;
                }
            }
        }
        let _active = session.as_ref().map(Session::hold);
        let session_key = session
            .as_ref()
            .map_or(String::new(), |s| s.id().to_owned());

        let mut call = Call {
            id: None,
            json_ok,
            sse_ok,
            batch: false,
            init: false,
            caller,
        };
        match posted {
            Posted::Batch => {
                // Batches: only revisions up to 2025-03-26 take them.
                let takes = session
                    .as_ref()
                    .and_then(|s| s.version())
                    .is_some_and(|v| !v.refuses_batches());
                if !takes {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        -32600,
                        "Invalid Request: this MCP revision does not take JSON-RPC batches",
                    );
                }
                call.batch = true;
                self.exchange(session, body, call).await
            }
            Posted::Response => {
                self.route_response(&session_key, &body).await;
                status(StatusCode::ACCEPTED)
            }
            Posted::Notification { method, params } => {
                if method == "notifications/cancelled" {
                    let target = member(params, "requestId")
                        .and_then(|id| Id::from_json(id.as_str()))
                        .map(|id| id.match_key().into_owned());
                    let running = target.and_then(|target| {
                        self.running
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .get(&(session_key, target))
                            .cloned()
                    });
                    if let Some(running) = running {
                        send_body(&running.input, body).await;
                        running.cancelled.notify_one();
                    }
                    return status(StatusCode::ACCEPTED);
                }
                // Other notifications run on a connection of their own; accepted at once.
                let (tx, rx) = mpsc::channel::<Bytes>(8);
                let mut builder = self.builder.clone();
                if let Some(caller) = call.caller {
                    builder = builder.shared_caller(caller);
                }
                let (_client, driver) = builder.run_inline(
                    OnceReader::new(body, None),
                    FrameWriter::new(tx, self.endpoint.max_body()),
                );
                tokio::spawn(drained(driver, rx));
                status(StatusCode::ACCEPTED)
            }
            Posted::Request { id, method, params } => {
                if method == "logging/setLevel" {
                    let level = member_str(params, "level")
                        .and_then(|l| LogLevel::from_bytes(l.as_bytes()));
                    if let (Some(s), Some(level)) = (&session, level) {
                        *s.level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
                    }
                }
                let mut session = session;
                if is_initialize && self.mode == Mode::Sessions {
                    match self.create_session(call.caller.as_ref()) {
                        Ok(s) => session = Some(s),
                        Err(why) => {
                            return rpc_error(
                                StatusCode::SERVICE_UNAVAILABLE,
                                -32000,
                                &why.to_string(),
                            )
                        }
                    }
                    call.init = true;
                }
                call.id = Some(id.match_key().into_owned());
                self.exchange(session, body, call).await
            }
            Posted::Invalid => self.exchange(session, body, call).await,
        }
    }

    /// A POSTed answer to one of the server's requests goes to the connection that asked.
    async fn route_response(&self, session: &str, body: &[u8]) {
        // The answer's id is rewritten, so it is read as a value (answers to the server's own
        // requests are few).
        let Ok(mut value) = serde_json::from_slice::<Value>(body) else {
            return;
        };
        let Some(wire) = value.get("id").and_then(Value::as_str).map(str::to_owned) else {
            return;
        };
        let pending = {
            let mut map = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match map.get(&wire) {
                Some(p) if p.session == session => map.remove(&wire),
                _ => None,
            }
        };
        let Some(pending) = pending else {
            tracing::debug!(id = %wire, "an answer to no pending request");
            return;
        };
        value["id"] = pending.original;
        send_body(&pending.input, Bytes::from(value.to_string())).await;
    }

    /// Runs one POST's request (or batch) on its own connection and answers with JSON or an
    /// event stream.
    async fn exchange(
        self: Arc<Self>,
        session: Option<Arc<Session>>,
        body: Bytes,
        call: Call,
    ) -> Response<Body> {
        let Call {
            id,
            json_ok,
            sse_ok,
            batch,
            init,
            caller,
        } = call;
        let mut builder = if batch {
            self.batch_builder.clone()
        } else {
            self.builder.clone()
        };
        if let Some(caller) = caller {
            builder = builder.shared_caller(caller);
        }
        let (max_body, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        let mut post = PostExchange::start(builder, body, max_body, timeout).await;
        let session_key = session
            .as_ref()
            .map_or(String::new(), |s| s.id().to_owned());
        let running = id.map(|id| (session_key.clone(), id));
        if let (Some(key), Some(input)) = (&running, post.input()) {
            let cancelled = Arc::new(Notify::new());
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(
                    key.clone(),
                    Running {
                        input: input.clone(),
                        cancelled: Arc::clone(&cancelled),
                    },
                );
            post.cancel_on(cancelled);
        }
        let mut exchange = Exchange {
            post,
            registration: Some(Registration {
                inner: Arc::clone(&self),
                running,
                pending: Vec::new(),
            }),
            session: session_key,
            level: session.clone(),
        };
        let session_header = session
            .as_ref()
            .and_then(|s| HeaderValue::from_str(s.id()).ok());
        let first = match exchange.next().await {
            Next::TimedOut => {
                return refuse(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n");
            }
            Next::End => return status(StatusCode::ACCEPTED),
            Next::Answer(answer) => {
                if let Some(s) = session.as_ref().filter(|_| init) {
                    if !self.note_answer(s, &answer) {
                        return json(answer);
                    }
                }
                let mut r = if json_ok || !sse_ok {
                    // The stateless revision answers a method the server does not have with
                    // 404 (its JSON-RPC error tells it from a server with no MCP endpoint).
                    let not_found = self.mode == Mode::Stateless && is_method_not_found(&answer);
                    let mut r = json(answer);
                    if not_found {
                        *r.status_mut() = StatusCode::NOT_FOUND;
                    }
                    r
                } else {
                    let (tx, rx) = mpsc::channel(1);
                    let _ = tx.try_send(sse_event(&answer));
                    event_stream(rx)
                };
                if let Some(v) = session_header {
                    r.headers_mut().insert(HEADER_SESSION_ID, v);
                }
                return r;
            }
            first @ (Next::Message(_) | Next::Close) => first,
        };
        if !sse_ok {
            // JSON only: messages before the answer have no place (nor can the client answer
            // the server's requests); wait for the answer.
            loop {
                match exchange.next().await {
                    Next::Message(_) | Next::Close => {}
                    Next::Answer(answer) => return json(answer),
                    Next::End => return status(StatusCode::ACCEPTED),
                    Next::TimedOut => {
                        return refuse(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n")
                    }
                }
            }
        }
        let (tx, rx) = mpsc::channel(8);
        let keep = session.as_ref().map(Session::hold);
        match session {
            Some(session) => {
                tokio::spawn(
                    Arc::clone(&self).session_stream(session, exchange, first, tx, init, keep),
                );
            }
            None => {
                tokio::spawn(async move {
                    let mut next = first;
                    loop {
                        match next {
                            Next::Message(m) => {
                                if tx.send(sse_event(&m)).await.is_err() {
                                    // The client closed the stream: dropping the exchange
                                    // (its driver) stops the handlers: the request is
                                    // cancelled.
                                    return;
                                }
                            }
                            Next::Answer(answer) => {
                                let _ = tx.send(sse_event(&answer)).await;
                                return;
                            }
                            // No resumption without a session: the stream stays open.
                            Next::Close => {}
                            Next::End | Next::TimedOut => return,
                        }
                        next = tokio::select! {
                            next = exchange.next() => next,
                            // The client went away while the handlers work: stop them now.
                            () = tx.closed() => return,
                        };
                    }
                });
            }
        }
        let mut r = event_stream(rx);
        if let Some(v) = session_header {
            r.headers_mut().insert(HEADER_SESSION_ID, v);
        }
        r
    }

    /// A session's request stream: a priming event, then every message with an event id,
    /// each also kept for resumption. The request goes on when the client disconnects (or a
    /// handler closes the stream, [`CLOSE_STREAM`]); a GET with `Last-Event-ID` then carries
    /// the rest. It is cancelled instead when the session already keeps the most detached
    /// streams, or when a detached stream outgrows its buffer.
    async fn session_stream(
        self: Arc<Self>,
        session: Arc<Session>,
        mut exchange: Exchange,
        mut next: Next,
        tx: mpsc::Sender<Bytes>,
        init: bool,
        keep: Option<Active>,
    ) {
        let _keep = keep;
        let id = session.next_stream.fetch_add(1, Ordering::Relaxed) + 1;
        let limits = self.endpoint.streams();
        let mut relay = StreamRelay::start(id, id, &session.detached, tx, limits).await;
        // Each `return` drops the relay (its buffer is finished) and the exchange (with no
        // client that could resume, the request is cancelled).
        loop {
            match next {
                Next::Message(m) => {
                    if !relay.send(&m).await {
                        return;
                    }
                }
                Next::Answer(answer) => {
                    if init {
                        self.note_answer(&session, &answer);
                    }
                    relay.send(&answer).await;
                    return;
                }
                Next::Close => {
                    if !relay.close() {
                        return;
                    }
                }
                Next::End | Next::TimedOut => return,
            }
            next = match relay.unless_gone(exchange.next()).await {
                Some(n) => n,
                None if relay.park() => exchange.next().await,
                None => return,
            };
        }
    }

    /// Notes what an `initialize` answer settles for its session: the revision, or (an error)
    /// that there is no session after all. False when the session was dropped.
    fn note_answer(&self, session: &Session, answer: &[u8]) -> bool {
        let Ok(v) = serde_json::from_slice::<Value>(answer) else {
            return true;
        };
        match v.pointer("/result/protocolVersion").and_then(Value::as_str) {
            Some(version) => {
                *session
                    .version
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) =
                    ProtocolVersion::from_bytes(version.as_bytes());
                true
            }
            None if v.get("error").is_some() => {
                self.sessions.remove(session.id());
                false
            }
            None => true,
        }
    }
}

/// Stateless mode: the headers that mirror the body ("Server Validation" of the 2026-07-28
/// Streamable HTTP transport). A request needs `MCP-Protocol-Version` naming this revision
/// (any other: [`UNSUPPORTED_PROTOCOL_VERSION`]), which `_meta`'s protocol version, when
/// there, must repeat; `Mcp-Method`; and `Mcp-Name` for the methods that name a target,
/// compared after decoding its sentinel form. Every other failure is [`HEADER_MISMATCH`].
/// All are answered 400, with the request's id. The revision defines no header rules for
/// notifications: theirs are checked only when sent.
fn stateless_headers(headers: &HeaderMap, posted: &Posted<'_>) -> Result<(), Box<Response<Body>>> {
    if matches!(posted, Posted::Batch) {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            -32600,
            "Invalid Request: this MCP revision does not take JSON-RPC batches",
        )));
    }
    let Some(method) = posted.method() else {
        // An answer to a server request, or an invalid message the core answers: no method
        // to name.
        return Ok(());
    };
    let id = match posted {
        Posted::Request { id, .. } => Some(id),
        _ => None,
    };
    let required = id.is_some();
    let refuse = |code, message: &str, data| {
        Box::new(rpc_error_to(
            StatusCode::BAD_REQUEST,
            id,
            code,
            message,
            data,
        ))
    };
    let mismatch = |message: &str| refuse(HEADER_MISMATCH, message, None);
    // `to_str` refuses what is not visible ASCII: such a value is malformed, like a missing one.
    let header = |name| {
        let mut values = headers.get_all(name).iter();
        match (values.next(), values.next()) {
            (Some(v), None) => Some(v.to_str().map_err(|_| ())),
            (Some(_), Some(_)) => Some(Err(())),
            (None, _) => None,
        }
    };

    match header(HEADER_PROTOCOL_VERSION) {
        Some(Ok(v)) if v == STATELESS_VERSION => {}
        Some(Ok(v)) => {
            return Err(refuse(
                UNSUPPORTED_PROTOCOL_VERSION,
                &format!(
                    "Unsupported protocol version {v}: this server speaks {STATELESS_VERSION}"
                ),
                Some(json!({"supported": [STATELESS_VERSION], "requested": v})),
            ))
        }
        Some(Err(())) => return Err(mismatch("MCP-Protocol-Version header is malformed")),
        None if required => return Err(mismatch("MCP-Protocol-Version header is required")),
        None => {}
    }
    let meta = member(posted.params(), "_meta");
    if let Some(v) = meta.and_then(|m| member_str(Some(m), META_PROTOCOL_VERSION)) {
        if v != STATELESS_VERSION {
            return Err(mismatch(&format!(
                "Header mismatch: MCP-Protocol-Version is {STATELESS_VERSION}, _meta's is {v}"
            )));
        }
    }
    match header(HEADER_METHOD) {
        Some(Ok(h)) if h == method => {}
        Some(Ok(h)) => {
            return Err(mismatch(&format!(
                "Header mismatch: Mcp-Method is '{h}', the body's method '{method}'"
            )))
        }
        Some(Err(())) => return Err(mismatch("Mcp-Method header is malformed")),
        None if required => return Err(mismatch("Mcp-Method header is required")),
        None => {}
    }
    let want = name_member(method).and_then(|key| member_str(posted.params(), key));
    match (want, header(HEADER_NAME)) {
        (None, None) => Ok(()),
        (Some(_), None) if !required => Ok(()),
        (Some(want), Some(Ok(got))) => match decode_value(got) {
            Some(got) if got == want => Ok(()),
            Some(got) => Err(mismatch(&format!(
                "Header mismatch: Mcp-Name is '{got}', the body's target '{want}'"
            ))),
            None => Err(mismatch(
                "Mcp-Name header holds no valid Base64 in its =?base64?...?= form",
            )),
        },
        (Some(_), None) => Err(mismatch("Mcp-Name header is required for this method")),
        (_, Some(Err(()))) => Err(mismatch("Mcp-Name header is malformed")),
        (None, Some(Ok(_))) => Err(mismatch(&format!(
            "Header mismatch: Mcp-Name header sent, but {method} names no target"
        ))),
    }
}
