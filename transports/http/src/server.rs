//! The server: JSON-RPC over HTTP POST, answers as JSON or Server-Sent Events, the GET event
//! stream, as a tower `Service` and a `serve` loop on hyper.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Collected, Limited};
use rpcwire_service::{ClientSettings, Exchange, Responder, Sent, Service};
use rpcwire_telemetry::trace_context::TraceContext;
use rpcwire_telemetry::{self as telemetry, ConnectionScope};
use rpcwire_tokio::{Builder, Caller, Client, Credentials, Transport};
use tokio::sync::{mpsc, watch};

use crate::body::Body;
use crate::endpoint::Endpoint;
use crate::stream::{EventHub, VecSink};
use rpcwire::wire::classify::{classify, BodyKind};

/// The default largest request body (4 MiB).
pub const DEFAULT_MAX_BODY: usize = 4 << 20;

/// A future that answers one request.
pub type ResponseFuture = Pin<Box<dyn Future<Output = Response<Body>> + Send + 'static>>;

/// What takes a request asking for `Upgrade: websocket` (the WebSocket transport plugs in
/// here). It gets the request's head; its extensions still hold hyper's upgrade handle
/// (`hyper::upgrade::on(&mut request)`).
pub type UpgradeHook = Arc<dyn Fn(Request<()>) -> ResponseFuture + Send + Sync>;

/// A check run on every request's head before anything else (a profile's header rules,
/// such as MCP's `Mcp-Session-Id` and `MCP-Protocol-Version`): `Err` is the answer sent
/// instead.
pub type RequestCheck =
    Arc<dyn Fn(&http::request::Parts) -> Result<(), Box<Response<Body>>> + Send + Sync>;

/// A check run on every POST body once read, before it is answered (a profile's rules that
/// tie headers to the body, such as MCP's `Mcp-Method` and `Mcp-Name`): `Err` is the answer
/// sent instead.
pub type BodyCheck =
    Arc<dyn Fn(&http::request::Parts, &[u8]) -> Result<(), Box<Response<Body>>> + Send + Sync>;

/// Which `Host` and `Origin` headers are accepted (DNS-rebinding protection).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostPolicy {
    /// Any host and origin.
    Any,
    /// Only these host names (without port; `localhost`, `127.0.0.1`, `[::1]` and the like),
    /// in `Host` and, when present, in `Origin`.
    Names(Vec<String>),
}

impl HostPolicy {
    /// `localhost`, `127.0.0.1` and `[::1]`, any port: the default.
    pub fn loopback() -> Self {
        HostPolicy::Names(vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()])
    }

    pub(crate) fn allows_host(&self, host: &str) -> bool {
        self.allows_host_bytes(host.as_bytes())
    }

    /// [`allows_host`](Self::allows_host) of a header value's bytes.
    pub(crate) fn allows_host_bytes(&self, host: &[u8]) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(names) => {
                let name = strip_port(host);
                // Exact first (clients send names as typed, and loopback ones are digits or
                // lower case): one comparison, before the byte-wise case folding; the first
                // bytes and lengths tell most other names apart without either.
                names.iter().any(|n| {
                    let n = n.as_bytes();
                    n.len() == name.len()
                        && n.first().map(u8::to_ascii_lowercase)
                            == name.first().map(u8::to_ascii_lowercase)
                        && (n == name || n.eq_ignore_ascii_case(name))
                })
            }
        }
    }

    pub(crate) fn allows_origin(&self, origin: &str) -> bool {
        match self {
            HostPolicy::Any => true,
            HostPolicy::Names(_) => match origin.split_once("://") {
                Some((scheme, rest)) if scheme == "http" || scheme == "https" => {
                    self.allows_host(rest.split('/').next().unwrap_or(""))
                }
                _ => false,
            },
        }
    }
}

/// `host:port` → `host` (IPv6 literals keep their brackets). Byte searches: this runs for
/// every request.
fn strip_port(host: &[u8]) -> &[u8] {
    let end = if host.first() == Some(&b'[') {
        host.iter()
            .position(|&b| b == b']')
            .map_or(host.len(), |e| e + 1)
    } else {
        host.iter().position(|&b| b == b':').unwrap_or(host.len())
    };
    host.get(..end).unwrap_or(host)
}

/// Settings of an HTTP JSON-RPC server, and [`build`](HttpServer::build) to make its
/// [`RpcService`].
///
/// ```
/// use rpcwire_http::HttpServer;
/// use rpcwire_tokio::{Builder, Router, RpcError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let router = Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
/// let service = HttpServer::new(Builder::new().router(router))
///     .path("/rpc")
///     .max_body(1 << 20)
///     .build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// tokio::spawn(rpcwire_http::serve(listener, service));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct HttpServer {
    builder: Builder,
    path: Option<String>,
    endpoint: Endpoint,
    max_batch: usize,
    sse: bool,
    get_stream: bool,
    upgrade: Option<UpgradeHook>,
    check: Option<RequestCheck>,
    check_body: Option<BodyCheck>,
    fast_path: bool,
    console: bool,
}

impl std::fmt::Debug for HttpServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpServer")
            .field("path", &self.path)
            .field("max_body", &self.endpoint.max_body)
            .field("timeout", &self.endpoint.timeout)
            .field("hosts", &self.endpoint.hosts)
            .finish_non_exhaustive()
    }
}

impl HttpServer {
    /// A server whose requests run on connections made by `builder` (its [`Router`],
    /// batch and depth limits, concurrency; the framing is set here). Defaults: any path,
    /// 4 MiB bodies, 30 s per request, loopback hosts only, SSE answers and the GET stream on.
    ///
    /// [`Router`]: rpcwire_tokio::Router
    pub fn new(builder: Builder) -> Self {
        HttpServer {
            builder,
            path: None,
            endpoint: Endpoint::new(Duration::from_secs(30), 1024),
            max_batch: 1024,
            sse: true,
            get_stream: true,
            upgrade: None,
            check: None,
            check_body: None,
            fast_path: true,
            console: false,
        }
    }

    /// Also serve the browser console on `GET /console` (before any other rule: the path,
    /// hosts and credentials apply to the JSON-RPC endpoint): the page opens its WebSocket on
    /// this server's path (so give the server a WebSocket transport: `websocket`, feature
    /// `ws`), and
    /// with the feature `metrics` draws the live view from `GET /console/stats` (see
    /// `ws::WsServer::console`, feature `ws`, which turns it on the same way).
    pub fn console(mut self, on: bool) -> Self {
        self.console = on;
        if on {
            crate::console::enable_live_view();
        }
        self
    }

    /// Serve only this path (others get 404); by default every path is served (the service
    /// mounted in a router decides).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = Some(path.into());
        self
    }

    /// The most elements in a batch (default 1024; the connections' limit is set to it too);
    /// a longer batch gets 413 with the Invalid Request error the core would send.
    pub fn max_batch_len(mut self, len: usize) -> Self {
        self.max_batch = len.max(1);
        self
    }

    /// The largest request body in bytes (at least 1024); larger ones get 413.
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.endpoint.set_max_body(bytes);
        self
    }

    /// The time a request may take, body reading and handlers included; past it the answer
    /// is 503 (or an event stream ends) and the handlers are dropped. With [`serve`], a
    /// request head begun and not whole within it closes the connection.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.timeout = timeout;
        self
    }

    /// Which `Host` and `Origin` values are accepted (others get 403). Default: loopback.
    pub fn hosts(mut self, policy: HostPolicy) -> Self {
        self.endpoint.hosts = policy;
        self
    }

    /// Whether a request whose handlers send messages before the answer is answered as an
    /// event stream when the client accepts one (default on).
    pub fn sse(mut self, on: bool) -> Self {
        self.sse = on;
        self
    }

    /// Whether GET opens the server's event stream (default on; off: 405).
    pub fn get_stream(mut self, on: bool) -> Self {
        self.get_stream = on;
        self
    }

    /// The event stream's resumption buffer: the most events and bytes kept (the oldest go
    /// first). Defaults: 1024 events, 1 MiB.
    pub fn stream_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.endpoint.set_stream_buffer(events, bytes);
        self
    }

    /// The keep-alive comment interval of idle event streams (default 15 s).
    pub fn keep_alive(mut self, every: Duration) -> Self {
        self.endpoint.set_keep_alive(every);
        self
    }

    /// The reconnection time sent to event-stream clients (`retry:`; default 1 s).
    pub fn retry(mut self, after: Duration) -> Self {
        self.endpoint.streams.retry = after;
        self
    }

    /// Requests with `Upgrade: websocket` go to `hook` (the WebSocket transport).
    pub fn upgrade(mut self, hook: UpgradeHook) -> Self {
        self.upgrade = Some(hook);
        self
    }

    /// A check every request's head passes first (a profile's header rules).
    pub fn check(mut self, check: RequestCheck) -> Self {
        self.check = Some(check);
        self
    }

    /// A check every POST body passes once read (a profile's rules tying headers to it).
    pub fn check_body(mut self, check: BodyCheck) -> Self {
        self.check_body = Some(check);
        self
    }

    /// Requires every POST to be signed (feature `signing`): the HMAC-SHA256 of its exact
    /// body bytes, a timestamp and a nonce in the `X-Rpcwire-*` headers
    /// ([`rpcwire_tokio::signing`]), checked in constant time once the body is read and
    /// before it is parsed; nonces are remembered per caller (the authenticated subject),
    /// within the signing's bounds. A refused request gets 401 (429 while the caller's nonce
    /// cache is full), and the reason goes to the log only. Replaces any
    /// [`check_body`](Self::check_body).
    #[cfg(feature = "signing")]
    pub fn signed(self, signing: Arc<rpcwire_tokio::signing::RequestSigning>) -> Self {
        self.check_body(Arc::new(move |parts, body| {
            let caller = parts.extensions.get::<Arc<Caller>>();
            crate::guard::signature_refused(&signing, caller, &parts.headers, body)
        }))
    }

    /// The most connections [`serve`] holds at once (default 10 000); more wait in the
    /// listen backlog.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// How long [`serve`] keeps an HTTP/1.1 connection that has no request under way (default
    /// 90 s): one that sends nothing after connecting, or an idle keep-alive connection. It
    /// is closed then, so that idle clients cannot hold every slot of
    /// [`max_connections`](HttpServer::max_connections). The default outlasts the idle time of
    /// proxies' upstream connections (nginx and AWS load balancers: 60 s), so that a proxy
    /// never sends a request on a connection the server is closing; clients' pools give idle
    /// connections up sooner (undici 4 s, httpx 5 s) or send again on a fresh one when the
    /// server has closed theirs (hyper, reqwest). On a connection hyper serves (after the
    /// first request the fast path does not take), this one timer also bounds the next
    /// request's head (hyper's header read timeout). An HTTP/2 connection is shut down
    /// gracefully (GOAWAY) once it has had no stream under way for this long; an open event
    /// stream counts as one.
    pub fn idle_connection_timeout(mut self, idle: Duration) -> Self {
        self.endpoint.set_idle_connection(idle);
        self
    }

    /// Whether [`serve`] and [`serve_connection`] answer plain-JSON POSTs on HTTP/1.1 with
    /// their fast path (default on). Off, hyper serves every request: the answers are the same
    /// (a test compares the two over random requests), but each call costs more CPU and an
    /// idle keep-alive connection holds hyper's connection state, which is larger than the
    /// fast path's 2 KiB buffer. For comparing the two, or to rule the fast path out when
    /// chasing a problem.
    pub fn fast_path(mut self, on: bool) -> Self {
        self.fast_path = on;
        self
    }

    /// Makes the service. Starts the event stream's connection, so call it within a tokio
    /// runtime.
    pub fn build(self) -> RpcService {
        let config = rpcwire::Config {
            max_frame: self.endpoint.max_body,
            max_batch_len: self.max_batch,
            ..self.builder.config()
        };
        let service = self.builder.service_ref().clone();
        // Every POST body runs through the service's dispatcher on a pooled core connection
        // ([`Responder`]), in the request's task.
        let responder =
            Responder::with_settings(service.clone(), config, ClientSettings::default());
        let hub = EventHub::start(
            Builder::new(),
            self.endpoint.max_body,
            self.endpoint.streams,
        );
        // Request deadlines are checked on the ticks of one clock for the whole service, not
        // with a timer per request (each would cost a registration, often a wake-up).
        let (tick_tx, clock) = watch::channel(());
        let granularity = (self.endpoint.timeout / 8)
            .clamp(Duration::from_millis(10), Duration::from_millis(250));
        tokio::spawn(async move {
            let mut every = tokio::time::interval(granularity);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                if tick_tx.send(()).is_err() {
                    return; // the service is gone
                }
            }
        });
        RpcService {
            inner: Arc::new(Inner {
                credential_header: service
                    .authenticator_ref()
                    .and_then(|a| a.credential_header())
                    .map(str::to_ascii_lowercase)
                    // The fast path compares names a word at a time ([`crate::fast::field_is`]),
                    // exact for these characters; another name is asked about per request.
                    .filter(|name| {
                        name.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    })
                    .map(|name| name.into_bytes().into()),
                service,
                responder,
                path: self.path,
                endpoint: self.endpoint,
                sse: self.sse,
                get_stream: self.get_stream,
                upgrade: self.upgrade,
                check: self.check,
                check_body: self.check_body,
                fast_path: self.fast_path,
                console: self.console,
                hub,
                clock,
            }),
        }
    }
}

pub(crate) struct Inner {
    /// The service: its authenticator establishes each request's caller
    /// ([`Service::admit`]); its dispatcher runs the calls.
    pub(crate) service: Service,
    /// The authenticator's [`Authenticator::credential_header`](rpcwire_tokio::Authenticator::credential_header),
    /// lower-case (letters, digits and `-` only): the fast path keeps a connection's caller
    /// for that header's value.
    pub(crate) credential_header: Option<Box<[u8]>>,
    /// Answers every POST body, through the service's dispatcher.
    responder: Responder,
    pub(crate) path: Option<String>,
    /// Hosts, body size and time limits, `serve`'s connections.
    pub(crate) endpoint: Endpoint,
    sse: bool,
    get_stream: bool,
    pub(crate) upgrade: Option<UpgradeHook>,
    pub(crate) check: Option<RequestCheck>,
    pub(crate) check_body: Option<BodyCheck>,
    /// See [`HttpServer::fast_path`].
    pub(crate) fast_path: bool,
    /// See [`HttpServer::console`].
    console: bool,
    hub: Arc<EventHub>,
    /// Ticks a few times per request timeout.
    clock: watch::Receiver<()>,
}

/// The server as a tower `Service<http::Request<B>>` (cheap to clone: every clone serves the
/// same handlers and event stream). Mount it in axum with `Router::route_service`, or run it
/// with [`serve`].
#[derive(Clone)]
pub struct RpcService {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for RpcService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RpcService").finish_non_exhaustive()
    }
}

impl RpcService {
    /// The client of the server's event stream: its notifications and calls go to every
    /// client listening with GET (and are kept for resumption); the answers to its calls come
    /// back as POSTed responses.
    pub fn stream_client(&self) -> &Client {
        self.inner.hub.client()
    }

    /// Ends every open GET event stream (clients reconnect and resume with `Last-Event-ID`
    /// from the buffer): before a restart, or to spread clients again behind a balancer.
    pub fn end_streams(&self) {
        self.inner.hub.end_streams();
    }

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
}

impl<B> tower_service::Service<Request<B>> for RpcService
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

/// A response with a status, no body.
pub fn status(code: StatusCode) -> Response<Body> {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// A response with a status and a short plain-text reason.
pub fn refuse(code: StatusCode, why: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::full(Bytes::from_static(why.as_bytes())));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A 200 response with this JSON body (`application/json`).
pub fn json(body: Bytes) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A 200 `text/event-stream` response whose body is the chunks sent on `rx`'s channel
/// (encoded events: [`sse_event`], [`stream_event`](crate::profile::stream_event)), uncached
/// and unbuffered by proxies; it ends when every sender is gone.
pub fn event_stream(rx: mpsc::Receiver<Bytes>) -> Response<Body> {
    let mut r = Response::new(Body::stream(rx));
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    // nginx: pass events on as they come.
    h.insert("x-accel-buffering", HeaderValue::from_static("no"));
    r
}

/// What the client's `Accept` allows: (JSON, event stream). No header means JSON.
fn accepts(headers: &HeaderMap) -> (bool, bool) {
    accepts_values(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

/// [`accepts`] over the `Accept` values (those that are text).
pub(crate) fn accepts_values<'a>(values: impl Iterator<Item = &'a str>) -> (bool, bool) {
    match accepted_media(values) {
        None => (true, false),
        Some(AcceptedMedia { json, sse, any }) => (json || any, sse),
    }
}

/// The media ranges an `Accept` header names, of those an answer can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedMedia {
    /// `application/json` or `application/*`.
    pub json: bool,
    /// `text/event-stream` or `text/*`.
    pub sse: bool,
    /// `*/*`.
    pub any: bool,
}

impl AcceptedMedia {
    /// What a request's `Accept` headers name ([`accepted_media`] of their text values).
    pub fn of(headers: &HeaderMap) -> Option<Self> {
        accepted_media(
            headers
                .get_all(header::ACCEPT)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )
    }
}

/// What the `Accept` values name (ranges with `q=0` are refused ones, not counted); `None`
/// when there is no `Accept` value at all.
pub fn accepted_media<'a>(values: impl Iterator<Item = &'a str>) -> Option<AcceptedMedia> {
    let mut media = AcceptedMedia {
        json: false,
        sse: false,
        any: false,
    };
    let mut seen = false;
    for value in values {
        for item in value.split(',') {
            seen = true;
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or("").trim();
            // `q=0` means "not acceptable".
            if parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            }) {
                continue;
            }
            let is = |name: &str| range.eq_ignore_ascii_case(name);
            if is("*/*") {
                media.any = true;
            } else if is("application/*") || is("application/json") {
                media.json = true;
            } else if is("text/*") || is("text/event-stream") {
                media.sse = true;
            }
        }
    }
    seen.then_some(media)
}

fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media)
}

/// The refusal a POST gets from its head alone, before its body is read: 415 without a JSON
/// body, 406 when the client accepts no answer this server gives (`answerable` false), 413
/// when the declared length is over `max_body`. `None` when the head passes. The JSON-RPC
/// server and the profiles' servers ([`read_post_body`]) check the same, in this order.
pub(crate) fn refuse_post_head(
    headers: &HeaderMap,
    answerable: bool,
    max_body: usize,
) -> Option<Response<Body>> {
    if !is_json_content_type(headers) {
        return Some(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send application/json\n",
        ));
    }
    if !answerable {
        return Some(refuse(
            StatusCode::NOT_ACCEPTABLE,
            "answers are application/json or text/event-stream\n",
        ));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body as u64) {
        // Not read: `after_body` answers `connection: close` on HTTP/1.
        return Some(refuse(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n"));
    }
    None
}

/// What reading a body through `Limited` fails with.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A POST's body read for a profile's server: the head checked as every POST's is
/// (`Content-Type` JSON or 415, `answerable` or 406: the client accepts an answer the server
/// can give, a declared length within `max_body` or 413), then the body read within
/// `max_body` (413) and `timeout` (408, with `connection: close`). `Err` is the refusal to
/// send, given once a refused body has been read past, so that a keep-alive connection
/// carries the next request.
pub async fn read_post_body<B>(
    parts: http::request::Parts,
    body: B,
    answerable: bool,
    max_body: usize,
    timeout: Duration,
) -> Result<(http::request::Parts, Bytes), Box<Response<Body>>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let in_time = |read| async move { tokio::time::timeout(timeout, read).await.map_err(|_| ()) };
    post_body(parts, body, answerable, max_body, timeout, in_time).await
}

/// A POST's body, once its head has passed the checks every POST passes
/// ([`refuse_post_head`]; `answerable`: the client accepts an answer this server can give),
/// read within `max_body` and the time `in_time` allows (it resolves to `Err(())` when the
/// read took too long). `Err` is the refusal, sent after reading past the body when the head
/// was refused. Both servers' POSTs start here.
pub(crate) async fn post_body<B, T>(
    parts: http::request::Parts,
    body: B,
    answerable: bool,
    max_body: usize,
    timeout: Duration,
    in_time: impl FnOnce(http_body_util::combinators::Collect<Limited<B>>) -> T,
) -> Result<(http::request::Parts, Bytes), Box<Response<Body>>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T: Future<Output = Result<Result<Collected<B::Data>, BoxError>, ()>>,
{
    if let Some(r) = refuse_post_head(&parts.headers, answerable, max_body) {
        let req = Request::from_parts(parts, body);
        return Err(Box::new(after_body(req, max_body, timeout, r).await));
    }
    let collected = in_time(Limited::new(body, max_body).collect()).await;
    Ok((parts, read_body(collected)?))
}

/// A POST body read within its limit and time (`Err(())`: too slow), or its refusal: 413
/// over the limit, 400 unreadable, 408 too slow.
fn read_body<D: Buf>(
    collected: Result<Result<Collected<D>, BoxError>, ()>,
) -> Result<Bytes, Box<Response<Body>>> {
    match collected {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Box::new(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body too large\n",
        ))),
        Ok(Err(_)) => Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            "body could not be read\n",
        ))),
        Err(()) => {
            // The rest of the body may still come, and would be read as the next request:
            // the connection ends with this answer (as on the fast path).
            let mut r = refuse(StatusCode::REQUEST_TIMEOUT, "body too slow\n");
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(Box::new(r))
        }
    }
}

/// Whether a `Content-Type` value is `application/json` (parameters such as a charset allowed).
pub(crate) fn is_json_media(value: &str) -> bool {
    is_json_media_bytes(value.as_bytes())
}

/// [`is_json_media`] of a header value's bytes.
pub(crate) fn is_json_media_bytes(value: &[u8]) -> bool {
    // The value nearly every client sends, told in one comparison: this runs per request.
    if value == b"application/json" {
        return true;
    }
    let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
    value
        .get(..end)
        .unwrap_or(value)
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}

impl Inner {
    async fn handle<B>(
        self: Arc<Self>,
        // Mutable only for the WebSocket upgrade, which moves a subprotocol bearer token into
        // `Authorization` before the request is authenticated.
        #[cfg_attr(not(feature = "ws"), allow(unused_mut))] mut req: Request<B>,
    ) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if self.console && req.method() == Method::GET {
            let ws_path = self.path.as_deref().unwrap_or("/");
            if let Some((kind, body)) =
                crate::console::answer(req.uri().path(), &["/console"], ws_path)
            {
                // The hosts rule applies: the numbers are not for any site's scripts.
                if let Some(why) = self.endpoint.refusal(&req) {
                    return refuse(StatusCode::FORBIDDEN, why);
                }
                let mut r = Response::new(Body::full(body));
                crate::console::headers(r.headers_mut(), kind);
                return r;
            }
        }
        if let Some(path) = &self.path {
            if req.uri().path() != path {
                let r = refuse(StatusCode::NOT_FOUND, "no JSON-RPC endpoint here\n");
                return after_body(req, self.endpoint.max_body, self.endpoint.timeout, r).await;
            }
        }
        if let Some(why) = self.endpoint.refusal(&req) {
            let r = refuse(StatusCode::FORBIDDEN, why);
            return after_body(req, self.endpoint.max_body, self.endpoint.timeout, r).await;
        }
        if self.service.authenticator_ref().is_some()
            && crate::challenge::has_query_token(req.uri())
        {
            // Never read: a URL ends up in logs and histories.
            let r = crate::challenge::BearerChallenge::default().token_in_query();
            return after_body(req, self.endpoint.max_body, self.endpoint.timeout, r).await;
        }
        // A browser's upgrade names its token as a subprotocol (it cannot set the header).
        #[cfg(feature = "ws")]
        if self.service.authenticator_ref().is_some()
            && crate::ws::is_upgrade(&req)
            && crate::ws::bearer_to_authorization(req.headers_mut()).is_err()
        {
            let r = crate::challenge::unauthenticated(&rpcwire_tokio::AuthError::Malformed);
            return after_body(req, self.endpoint.max_body, self.endpoint.timeout, r).await;
        }
        let peer = connection_peer(&req);
        let certificate = connection_certificate(&req);
        let caller = match self.admit(req.headers(), peer, certificate).await {
            Ok(caller) => caller,
            Err(refusal) => {
                return after_body(req, self.endpoint.max_body, self.endpoint.timeout, *refusal)
                    .await
            }
        };
        let (mut parts, body) = req.into_parts();
        if let Some(caller) = &caller {
            // For the WebSocket upgrade hook: the connection runs as this caller.
            parts.extensions.insert(Arc::clone(caller));
        }
        if let Some(check) = &self.check {
            if let Err(response) = check(&parts) {
                return *response;
            }
        }
        let upgrade = parts
            .headers
            .get(header::UPGRADE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        if upgrade {
            if let Some(hook) = &self.upgrade {
                return hook(Request::from_parts(parts, ())).await;
            }
        }
        match parts.method {
            Method::POST => self.post(parts, body, caller).await,
            Method::GET if self.get_stream => self.get(&parts),
            _ => {
                let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "use POST\n");
                let allow = if self.get_stream { "GET, POST" } else { "POST" };
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static(allow));
                after_body(
                    Request::from_parts(parts, body),
                    self.endpoint.max_body,
                    self.endpoint.timeout,
                    r,
                )
                .await
            }
        }
    }

    /// The request's caller, when the service has an authenticator or a rate limit, the
    /// connection a client certificate, or a subscriber listens to call spans (`None`
    /// otherwise: handlers see an anonymous caller, at no cost per request), or the refusal:
    /// 400 for credentials in a form not understood, 401 with `WWW-Authenticate: Bearer` for
    /// none or invalid ones (RFC 6750), 503 when the authenticator cannot decide. Why is
    /// logged, never the credentials.
    ///
    /// A caller carries the connection's `peer` (the rate limit's key for anonymous callers,
    /// and the spans' `network.peer.*`) and, while a subscriber listens to call spans, the
    /// request's W3C trace context (the `traceparent` and `tracestate` headers, the parent of
    /// its calls' spans).
    async fn admit(
        &self,
        headers: &HeaderMap,
        peer: Option<std::net::SocketAddr>,
        certificate: Option<&rpcwire_tokio::PeerCertificate>,
    ) -> Result<Option<Arc<Caller>>, Box<Response<Body>>> {
        let traced = telemetry::spans_enabled();
        if self.service.authenticator_ref().is_none()
            && self.service.rate_limiter().is_none()
            && certificate.is_none()
            && !traced
        {
            return Ok(None);
        }
        let caller = admit(
            &self.service,
            headers,
            crate::transport::HTTP,
            peer,
            certificate,
        )
        .await
        .map_err(Box::new)?
        .with_meta(headers.clone());
        let caller = if traced {
            traced_caller(caller, headers, None)
        } else {
            caller
        };
        Ok(Some(Arc::new(caller)))
    }

    fn get(&self, parts: &http::request::Parts) -> Response<Body> {
        let (_, sse) = accepts(&parts.headers);
        if !sse {
            return refuse(
                StatusCode::NOT_ACCEPTABLE,
                "GET opens an event stream: accept text/event-stream\n",
            );
        }
        let last = parts
            .headers
            .get("last-event-id")
            .and_then(|v| v.to_str().ok());
        let cursor = self.hub.start_after(last);
        let (tx, rx) = mpsc::channel(8);
        tokio::spawn(Arc::clone(&self.hub).serve_stream(cursor, tx));
        event_stream(rx)
    }

    async fn post<B>(
        &self,
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
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout;
        let in_time = |read| before(&self.clock, deadline, read);
        let answerable = json_ok || sse_ok;
        let (parts, body) = match post_body(
            parts,
            body,
            answerable,
            self.endpoint.max_body,
            self.endpoint.timeout,
            in_time,
        )
        .await
        {
            Ok(read) => read,
            Err(refusal) => return *refusal,
        };
        if let Some(check) = &self.check_body {
            if let Err(response) = check(&parts, &body) {
                return *response;
            }
        }
        self.answer(&body, json_ok, sse_ok, deadline, caller.as_ref())
            .await
            .into_response()
    }

    /// The answer to a POST body whose head passed every check, shared by hyper's path and
    /// the fast path: the body runs through the service's dispatcher ([`Responder`]); what its
    /// handlers send the client before the answer makes it an event stream when the client
    /// accepts one (else it is dropped).
    pub(crate) async fn answer(
        &self,
        body: &[u8],
        json_ok: bool,
        sse_ok: bool,
        deadline: tokio::time::Instant,
        caller: Option<&Arc<Caller>>,
    ) -> Reply {
        let caller = caller.unwrap_or_else(|| self.responder.caller());
        let mut exchange = self.responder.exchange(caller, body);
        let streaming = self.sse && sse_ok;
        loop {
            let next = match before(&self.clock, deadline, exchange.next()).await {
                Ok(next) => next,
                Err(()) => {
                    return Reply::Refused(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n")
                }
            };
            return match next {
                Some(Sent::Answer(answer)) if json_ok || !sse_ok => Reply::Json(answer.into()),
                // Only an event stream is acceptable: one event.
                Some(Sent::Answer(answer)) => Reply::OneEvent(answer.into()),
                Some(Sent::Message(message)) if streaming => {
                    Reply::Events(message.into(), exchange, deadline, self.clock.clone())
                }
                // Plain JSON: messages before the answer have no place; dropped.
                Some(Sent::Message(_)) => continue,
                None => {
                    // No answer: notifications (their handlers run on), or responses, which
                    // answer the event stream's calls and go to its connection.
                    if classify(body, 128) != BodyKind::Notifications {
                        // Boxed: a connection's task holds its largest state for its whole
                        // life.
                        Box::pin(self.hub.deliver(Bytes::copy_from_slice(body))).await;
                    }
                    Reply::Accepted
                }
            };
        }
    }
}

/// The caller of a request (an HTTP request, a WebSocket upgrade) with these headers over
/// `transport` from `peer` (and its TLS client certificate): [`Service::admit`] with the
/// headers, or the refusal (401 with the challenge, 400, 503: [`crate::unauthenticated`]).
/// Counted and logged with its reason by the service, never the credentials. A profile's
/// server admits each request's caller with it, as this crate's servers do.
///
/// ```
/// use rpcwire_http::profile::admit;
/// use rpcwire_tokio::{Router, Service};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// // No authenticator: every caller is let in, anonymous.
/// let service = Service::new(Router::new());
/// let headers = http::HeaderMap::new();
/// let peer = Some(std::net::SocketAddr::from(([127, 0, 0, 1], 4711)));
/// let Ok(caller) = admit(&service, &headers, rpcwire_http::transport::HTTP, peer, None).await else {
///     panic!("refused")
/// };
/// assert!(!caller.identity().is_authenticated());
/// assert_eq!(caller.peer_addr(), peer);
/// # }
/// ```
pub async fn admit(
    service: &Service,
    headers: &HeaderMap,
    transport: Transport,
    peer: Option<std::net::SocketAddr>,
    certificate: Option<&rpcwire_tokio::PeerCertificate>,
) -> Result<Caller, Response<Body>> {
    let lookup = HeaderLookup(headers);
    let credentials = Credentials {
        headers: &lookup,
        certificate,
        ..Credentials::new(transport, peer)
    };
    service
        .admit(credentials, rpcwire_tokio::Identity::anonymous)
        .await
        .map_err(|reason| crate::challenge::unauthenticated(&reason))
}

/// `caller` with the connection's `peer` and the request's W3C trace context (a repeated,
/// malformed or oversized `traceparent` is ignored with a debug log): what a server does for
/// a request while a subscriber listens to call spans
/// ([`telemetry::spans_enabled`](rpcwire_telemetry::spans_enabled)). `peer` is
/// [`connection_peer`] of the request.
pub fn traced_caller(
    caller: Caller,
    headers: &HeaderMap,
    peer: Option<std::net::SocketAddr>,
) -> Caller {
    let values = |name| headers.get_all(name).into_iter().map(HeaderValue::as_bytes);
    with_trace(caller, peer, values("traceparent"), values("tracestate"))
}

/// [`traced_caller`] from the values of the `traceparent` and `tracestate` fields, each
/// field's in order (the HTTP/1.1 fast path finds them in its own head parse).
pub(crate) fn with_trace<'a>(
    mut caller: Caller,
    peer: Option<std::net::SocketAddr>,
    traceparent: impl Iterator<Item = &'a [u8]>,
    tracestate: impl Iterator<Item = &'a [u8]>,
) -> Caller {
    if let Some(peer) = peer {
        caller = caller.with_peer(peer);
    }
    match TraceContext::from_headers(traceparent, tracestate) {
        Some(cx) => caller.with_trace_context(cx),
        None => caller,
    }
}

/// What a request's connection tells it (in the request's extensions, see
/// [`serve_connection_from`]): its peer, and its TLS client certificate under mutual TLS.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionInfo {
    pub(crate) peer: Option<std::net::SocketAddr>,
    pub(crate) certificate: Option<Arc<rpcwire_tokio::PeerCertificate>>,
}

/// The peer of the connection `req` came on, when the server's accept loop told it (while a
/// subscriber listens to call spans, or the service rate-limits: [`serve_hyper`] and the
/// crate's servers do).
pub fn connection_peer<B>(req: &Request<B>) -> Option<std::net::SocketAddr> {
    req.extensions().get::<ConnectionInfo>()?.peer
}

/// The verified TLS client certificate of the connection `req` came on (mutual TLS: the
/// crate's TLS servers tell every request of such a connection).
pub fn connection_certificate<B>(req: &Request<B>) -> Option<&rpcwire_tokio::PeerCertificate> {
    req.extensions()
        .get::<ConnectionInfo>()?
        .certificate
        .as_deref()
}

/// A service that tells each request what its connection knows.
#[derive(Clone)]
pub(crate) struct WithConnection<S> {
    pub(crate) service: S,
    pub(crate) info: ConnectionInfo,
}

impl<S: HandlesIncoming> HandlesIncoming for WithConnection<S> {
    fn handle_incoming(&self, mut req: Request<hyper::body::Incoming>) -> ResponseFuture {
        req.extensions_mut().insert(self.info.clone());
        self.service.handle_incoming(req)
    }
}

/// An `http::HeaderMap` as an authenticator reads it.
pub(crate) struct HeaderLookup<'a>(pub(crate) &'a HeaderMap);

impl rpcwire_tokio::Headers for HeaderLookup<'_> {
    fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(HeaderValue::as_bytes)
    }
}

/// Sends a refusal once the request's body has been read and dropped (at most
/// `max_body` bytes, within the request time limit), so that its keep-alive connection
/// carries the next request: hyper closes a connection whose request body was left
/// unread, and a client that has already sent its next request on it sees that request
/// dropped unanswered. A body too large or too slow to read is left alone, and an
/// HTTP/1 answer then says `connection: close`.
pub async fn after_body<B>(
    req: Request<B>,
    max_body: usize,
    timeout: Duration,
    mut response: Response<Body>,
) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let h1 = req.version() <= http::Version::HTTP_11;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // A timer of its own: refusals are rare, the service's clock is for the requests.
    let drained = declared.is_none_or(|n| n <= max_body as u64)
        && matches!(
            tokio::time::timeout(timeout, Limited::new(req.into_body(), max_body).collect()).await,
            Ok(Ok(_))
        );
    if !drained && h1 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// The body of the 413 answer to a batch longer than the limit.
pub(crate) const BATCH_TOO_LONG: &[u8] = br#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request","data":"batch too large"},"id":null}"#;

/// What a POST body gets, before it is made an HTTP response (by hyper's path or the fast
/// path, the same for both).
pub(crate) enum Reply {
    /// 202, no body.
    Accepted,
    /// A status with a short plain-text reason.
    Refused(StatusCode, &'static str),
    /// 200 with this JSON (413 for the core's answer to a batch over the limit, 429 with
    /// `Retry-After` for a call refused by the rate limit alone).
    Json(Bytes),
    /// 200, an event stream of this one message (the client accepts only event streams).
    OneEvent(Bytes),
    /// 200, an event stream: this message, then the exchange's next ones, the answer last,
    /// within the deadline (seen on the ticks of the clock).
    Events(Bytes, Exchange, tokio::time::Instant, watch::Receiver<()>),
}

/// The answer of a single call refused by the rate limit (`-32041`): HTTP says it with 429.
const RATE_LIMITED_ANSWER: &[u8] = br#"{"jsonrpc":"2.0","error":{"code":-32041,"#;

impl Reply {
    /// The status of a JSON answer: the body's own for the core's answer to a batch over the
    /// limit (413) and for a call refused by the rate limit alone (429), else 200.
    pub(crate) fn json_status(message: &[u8]) -> StatusCode {
        if message == BATCH_TOO_LONG {
            StatusCode::PAYLOAD_TOO_LARGE
        } else if message.starts_with(RATE_LIMITED_ANSWER) {
            StatusCode::TOO_MANY_REQUESTS
        } else {
            StatusCode::OK
        }
    }

    fn into_response(self) -> Response<Body> {
        match self {
            Reply::Accepted => status(StatusCode::ACCEPTED),
            Reply::Refused(code, why) => refuse(code, why),
            Reply::Json(message) => {
                let code = Reply::json_status(&message);
                let mut r = json(message);
                *r.status_mut() = code;
                if code == StatusCode::TOO_MANY_REQUESTS {
                    r.headers_mut()
                        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
                }
                r
            }
            Reply::OneEvent(message) => {
                let (tx, rx) = mpsc::channel(1);
                let _ = tx.try_send(sse_event(&message));
                event_stream(rx)
            }
            Reply::Events(first, mut exchange, deadline, clock) => {
                // An event stream: these messages first, the answer last, then the end.
                let (out_tx, out_rx) = mpsc::channel(8);
                tokio::spawn(async move {
                    let mut message = first;
                    loop {
                        if out_tx.send(sse_event(&message)).await.is_err() {
                            return; // the client left: dropping the exchange ends the handlers
                        }
                        match before(&clock, deadline, exchange.next()).await {
                            Ok(Some(Sent::Message(m) | Sent::Answer(m))) => message = m.into(),
                            Ok(None) | Err(()) => return,
                        }
                    }
                });
                event_stream(out_rx)
            }
        }
    }
}

/// `fut`'s output, or `Err` once `deadline` has passed (seen on a tick of `clock`).
fn before<F: Future>(
    clock: &watch::Receiver<()>,
    deadline: tokio::time::Instant,
    fut: F,
) -> Before<'_, F> {
    Before {
        fut,
        clock,
        deadline,
        expiry: None,
    }
}

pin_project_lite::pin_project! {
    /// [`before`]'s future. `fut` is polled first; the deadline's watch is set up only if it
    /// waits, boxed: a call answered at once (a handler that does not wait) clones no watch
    /// and allocates nothing, and an idle connection's task, which holds the
    /// room of its largest request future, keeps a pointer for it.
    pub(crate) struct Before<'a, F> {
        #[pin]
        fut: F,
        clock: &'a watch::Receiver<()>,
        deadline: tokio::time::Instant,
        expiry: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    }
}

impl<F: Future> Future for Before<'_, F> {
    type Output = Result<F::Output, ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.fut.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        let (clock, deadline) = (*this.clock, *this.deadline);
        this.expiry
            .get_or_insert_with(|| Box::pin(expires(clock.clone(), deadline)))
            .as_mut()
            .poll(cx)
            .map(Err)
    }
}

/// Ends on the first tick of `clock` at or past `deadline` (or when the clock is gone).
async fn expires(mut clock: watch::Receiver<()>, deadline: tokio::time::Instant) {
    while clock.changed().await.is_ok() {
        if tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}

/// One `message` event carrying `message`, with no id, encoded.
pub fn sse_event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    let data = std::str::from_utf8(message).unwrap_or("");
    rpcwire::wire::sse::write_event(&mut VecSink(&mut out), Some("message"), None, data);
    Bytes::from(out)
}

/// The default of [`HttpServer::idle_connection_timeout`] (and of [`profile::Endpoint`](crate::profile::Endpoint)).
pub const DEFAULT_IDLE_CONNECTION: Duration = Duration::from_secs(90);

/// The first bytes of an HTTP/2 connection with prior knowledge.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Serves `service` on every connection accepted on `listener` (HTTP/1.1 with keep-alive and
/// upgrades, and HTTP/2 with prior knowledge), at most [`HttpServer::max_connections`] at
/// once. Runs until the future is dropped.
///
/// Each connection's protocol is told from its first bytes, then the connection runs in a
/// task holding only that protocol's state. On HTTP/1.1, plain-JSON POSTs are answered by a
/// fast path in the connection's own task (the same answers as through hyper, with no hyper
/// state: an idle keep-alive connection holds its socket and a 2 KiB buffer); the first
/// request it does not take (GET, event streams, upgrades, chunked bodies, refusals...) hands
/// the connection, with the bytes already read, to hyper. A request head, once begun, must
/// arrive whole within [`HttpServer::timeout`] on the fast path, and a connection with no
/// request under way (on HTTP/2: no stream) is closed after
/// [`HttpServer::idle_connection_timeout`].
pub async fn serve(listener: tokio::net::TcpListener, service: RpcService) {
    let limit = service.inner.endpoint.max_connections;
    accept_loop(listener, limit, move |stream, peer, permit| {
        let service = service.clone();
        tokio::spawn(async move {
            let protocol = match is_h2(&stream, service.inner.endpoint.idle_connection).await {
                Some(true) => Protocol::Http2,
                Some(false) => Protocol::Http1,
                None => return,
            };
            // A task of its own: it holds only that protocol's state, not the sniffing's.
            tokio::spawn(serve_accepted(stream, protocol, service, peer, permit));
        });
    })
    .await;
}

/// [`serve`] over TLS (feature `tls`): HTTPS with HTTP/2 or HTTP/1.1 by ALPN, and WSS on the
/// same port through the service's upgrade hook. Each connection's handshake must finish
/// within `handshake_timeout`; certificates come from `tls` and reload as
/// [`ServerTls`](rpcwire_tokio::tls::ServerTls) says (open connections keep theirs). A
/// client certificate verified under mutual TLS is logged by subject; identities for calls
/// come from the builder's authenticator.
///
/// ```no_run
/// use rpcwire_http::HttpServer;
/// use rpcwire_tokio::tls::{ServerTls, TlsFiles};
/// use rpcwire_tokio::{Builder, Router};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let files = TlsFiles { cert: "server.pem".into(), key: "server.key".into(), client_ca: None };
/// let tls = ServerTls::with_alpn(files, &[b"h2", b"http/1.1"])?;
/// tls.watch(std::time::Duration::from_secs(2));
/// let service = HttpServer::new(Builder::new().router(Router::new())).path("/rpc").build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
/// rpcwire_http::serve_tls(listener, service, tls, std::time::Duration::from_secs(10)).await;
/// # Ok(()) }
/// ```
#[cfg(feature = "tls")]
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    service: RpcService,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
) {
    let limit = service.inner.endpoint.max_connections;
    accept_loop(listener, limit, move |stream, peer, permit| {
        let (service, tls) = (service.clone(), tls.clone());
        tokio::spawn(async move {
            let Some((stream, protocol, certificate)) =
                handshake(&tls, stream, peer, handshake_timeout).await
            else {
                return;
            };
            let info = ConnectionInfo {
                peer: Some(peer),
                certificate: certificate.map(Arc::new),
            };
            // A task of its own: it holds only the connection's state, not the handshake's.
            tokio::spawn(async move {
                if let Err(e) = serve_connection_from(stream, service, protocol, info).await {
                    tracing::debug!(%peer, error = %e, "connection failed");
                }
                drop(permit);
            });
        });
    })
    .await;
}

/// [`serve_hyper`] over TLS (feature `tls`): each connection's handshake within
/// `handshake_timeout`, HTTP/2 or HTTP/1.1 as ALPN chose, at most `max_connections` at once.
#[cfg(feature = "tls")]
pub async fn serve_hyper_tls<S: HandlesIncoming>(
    listener: tokio::net::TcpListener,
    service: S,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
    max_connections: usize,
    idle: Duration,
) {
    accept_loop(
        listener,
        max_connections.max(1),
        move |stream, peer, permit| {
            let (service, tls) = (service.clone(), tls.clone());
            tokio::spawn(async move {
                let Some((stream, protocol, certificate)) =
                    handshake(&tls, stream, peer, handshake_timeout).await
                else {
                    return;
                };
                let info = ConnectionInfo {
                    peer: Some(peer),
                    certificate: certificate.map(Arc::new),
                };
                tokio::spawn(async move {
                    let served = serve_hyper_connection_from(stream, service, protocol, idle, info);
                    if let Err(e) = served.await {
                        tracing::debug!(%peer, error = %e, "connection failed");
                    }
                    drop(permit);
                });
            });
        },
    )
    .await;
}

/// A TLS handshake within `timeout`: the stream, the protocol ALPN chose and the client's
/// verified certificate (mutual TLS), or `None` (logged).
#[cfg(feature = "tls")]
async fn handshake(
    tls: &rpcwire_tokio::tls::ServerTls,
    stream: tokio::net::TcpStream,
    peer: std::net::SocketAddr,
    timeout: Duration,
) -> Option<(
    rpcwire_tokio::tls::TlsStream<tokio::net::TcpStream>,
    Protocol,
    Option<rpcwire_tokio::PeerCertificate>,
)> {
    let (stream, certificate) = match tls.accept(stream, timeout).await {
        Ok(accepted) => accepted,
        Err(e) => {
            tracing::debug!(%peer, error = %e, "TLS handshake failed");
            return None;
        }
    };
    let protocol = Protocol::from_alpn(stream.get_ref().1.alpn_protocol());
    Some((stream, protocol, certificate))
}

/// Accepts connections on `listener` and hands each to `start` with a permit held while it
/// lives: at most `max_connections` are open at once, and at the limit new clients wait in
/// the backlog. A failed accept (out of file descriptors, say) is logged and retried after
/// 50 ms.
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    max_connections: usize,
    start: impl Fn(tokio::net::TcpStream, std::net::SocketAddr, tokio::sync::OwnedSemaphorePermit),
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        start(stream, peer, permit);
    }
}

/// Whether the connection starts with the HTTP/2 preface (`None`: it closed first, or sent
/// nothing within `idle`, and is closed).
pub(crate) async fn is_h2(stream: &tokio::net::TcpStream, idle: Duration) -> Option<bool> {
    let sniff = async {
        let mut buf = [0u8; 24];
        for _ in 0..1000 {
            let n = stream.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if buf[..n] != H2_PREFACE[..n] {
                return Some(false);
            }
            if n == H2_PREFACE.len() {
                return Some(true);
            }
            // Part of the preface so far: wait for the rest.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Some(false)
    };
    match tokio::time::timeout(idle, sniff).await {
        Ok(h2) => h2,
        Err(_) => {
            tracing::debug!("a connection sent nothing in time: closed");
            None
        }
    }
}

/// hyper's HTTP/1.1 settings for the crate's servers. `idle` is hyper's header read timeout:
/// it runs from the moment a connection waits for a request until that request's head is
/// whole, so it closes both a slow head and an idle keep-alive connection.
pub(crate) fn http1_builder(idle: Duration) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(idle);
    builder
}

/// hyper's HTTP/2 settings for the crate's servers.
pub(crate) fn http2_builder() -> hyper::server::conn::http2::Builder<hyper_util::rt::TokioExecutor>
{
    let mut builder =
        hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        // Each stream may hold a request's connection or an event stream: bound them.
        .max_concurrent_streams(256);
    builder
}

/// A server's service as hyper calls it: every server of the crate, and a profile's, answers
/// with a [`ResponseFuture`]. Implement it to run a service with
/// [`serve_hyper`](crate::profile::serve_hyper) and
/// [`serve_hyper_connection`](crate::profile::serve_hyper_connection).
pub trait HandlesIncoming: Clone + Send + Sync + 'static {
    /// Answers one request.
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture;

    /// Whether every request must carry its connection's peer address
    /// ([`connection_peer`]) even while no subscriber listens to call spans (which always
    /// get it): a service that rate-limits anonymous callers by address says yes. No by
    /// default: telling each request costs an allocation.
    fn wants_peer(&self) -> bool {
        false
    }
}

impl HandlesIncoming for RpcService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }

    fn wants_peer(&self) -> bool {
        self.inner.service.rate_limiter().is_some()
    }
}

/// `service` as hyper's service, its future named `Send` (a closure's inferred one is not
/// proved `Send` under the HTTP/2 idle watch's higher-ranked bounds).
pub(crate) fn hyper_service<S: HandlesIncoming>(
    service: S,
) -> impl hyper::service::Service<
    Request<hyper::body::Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let fut = service.handle_incoming(req);
        async move { Ok::<_, Infallible>(fut.await) }
    })
}

/// The HTTP version of a connection handed to [`serve_connection`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (keep-alive, upgrades).
    Http1,
    /// HTTP/2.
    Http2,
}

impl Protocol {
    /// The protocol a TLS handshake's ALPN chose: `h2` is HTTP/2, anything else (none
    /// included) HTTP/1.1.
    pub fn from_alpn(alpn: Option<&[u8]>) -> Self {
        if alpn == Some(b"h2") {
            Protocol::Http2
        } else {
            Protocol::Http1
        }
    }
}

/// Serves `service` on one connection accepted by your own code, until it ends: a TLS stream
/// (tokio-rustls, with [`Protocol::from_alpn`]), a Unix socket, an in-memory pipe. HTTP/1.1
/// runs as on [`serve`]'s connections: the fast path for plain-JSON POSTs, hyper for the rest;
/// the idle limit is [`HttpServer::idle_connection_timeout`]. Bound the number of connections
/// in the accept loop, as [`serve`] does with [`HttpServer::max_connections`].
///
/// ```no_run
/// use rpcwire_http::{serve_connection, HttpServer, Protocol};
///
/// # async fn run(acceptor: tokio_rustls::TlsAcceptor) -> std::io::Result<()> {
/// let service = HttpServer::new(rpcwire_tokio::Builder::new()).build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
/// loop {
///     let (tcp, _) = listener.accept().await?;
///     let (acceptor, service) = (acceptor.clone(), service.clone());
///     tokio::spawn(async move {
///         let Ok(tls) = acceptor.accept(tcp).await else { return };
///         let protocol = Protocol::from_alpn(tls.get_ref().1.alpn_protocol());
///         let _ = serve_connection(tls, service, protocol).await;
///     });
/// }
/// # }
/// ```
pub fn serve_connection<I>(
    io: I,
    service: RpcService,
    protocol: Protocol,
) -> impl Future<Output = Result<(), ConnectionError>> + Send
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    serve_connection_from(
        io,
        service,
        protocol,
        ConnectionInfo {
            peer: None,
            certificate: None,
        },
    )
}

/// [`serve_connection`] of a connection from `peer`: while a subscriber listens to call
/// spans, every request is told its peer (on the fast path as through hyper), for the
/// `network.peer.*` of its calls' spans.
pub(crate) fn serve_connection_from<I>(
    io: I,
    service: RpcService,
    protocol: Protocol,
    info: ConnectionInfo,
) -> impl Future<Output = Result<(), ConnectionError>> + Send
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    type Boxed = Pin<Box<dyn Future<Output = Result<(), ConnectionError>> + Send>>;
    let idle = service.inner.endpoint.idle_connection;
    // Not an `async fn`: the future is the protocol's own, with no copy of the arguments
    // beside it (every idle connection holds it).
    // The fast path tells its calls their peer itself (traced calls, rate limits by
    // address); a connection with a client certificate is hyper's.
    let told = info.certificate.is_some()
        || (info.peer.is_some() && (service.wants_peer() || telemetry::spans_enabled()));
    match protocol {
        Protocol::Http1 if info.certificate.is_none() => {
            tokio_util::either::Either::Left(crate::fast::serve(io, service, info.peer))
        }
        _ if told => {
            let service = WithConnection { service, info };
            tokio_util::either::Either::Right(Box::pin(async move {
                Ok(run_hyper(io, protocol, idle, hyper_service(service)).await?)
            }) as Boxed)
        }
        _ => {
            // Boxed: an HTTP/1.1 connection's task is not sized for HTTP/2's state.
            tokio_util::either::Either::Right(Box::pin(async move {
                Ok(run_hyper(io, protocol, idle, hyper_service(service)).await?)
            }) as Boxed)
        }
    }
}

/// Why a connection served by [`serve_connection`] ended with an error (a peer that resets
/// its connection, say).
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Reading or writing the connection failed on the HTTP/1.1 fast path.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// hyper's connection failed.
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

/// hyper's connection of `protocol` over `io`, serving `service`: what every server of the
/// crate runs once a connection is not (or no longer) on the fast path.
pub(crate) async fn run_hyper<I, S>(
    io: I,
    protocol: Protocol,
    idle: Duration,
    service: S,
) -> Result<(), hyper::Error>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<Request<hyper::body::Incoming>, Response = Response<Body>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let io = hyper_util::rt::TokioIo::new(io);
    match protocol {
        Protocol::Http1 => {
            http1_builder(idle)
                .serve_connection(io, service)
                .with_upgrades()
                .await
        }
        Protocol::Http2 => {
            let activity = crate::h2_idle::Activity::new();
            let service = crate::h2_idle::CountStreams {
                service,
                activity: Arc::clone(&activity),
            };
            let conn = http2_builder().serve_connection(io, service);
            crate::h2_idle::serve_until_idle(conn, activity, idle, |conn| conn.graceful_shutdown())
                .await
        }
    }
}

/// Serves `service` on every connection accepted on `listener` (HTTP/1.1 with keep-alive and
/// upgrades, and HTTP/2 with prior knowledge, told from the first bytes), all through hyper,
/// at most `max_connections` at once (more wait in the listen backlog), until the future is
/// dropped. A connection with no request under way (on HTTP/2: no stream; an open event
/// stream counts as one) is closed after `idle`, which also bounds a request's head.
pub async fn serve_hyper<S: HandlesIncoming>(
    listener: tokio::net::TcpListener,
    service: S,
    max_connections: usize,
    idle: Duration,
) {
    accept_loop(
        listener,
        max_connections.max(1),
        move |stream, peer, permit| {
            let service = service.clone();
            tokio::spawn(async move {
                let protocol = match is_h2(&stream, idle).await {
                    None => return,
                    Some(true) => Protocol::Http2,
                    Some(false) => Protocol::Http1,
                };
                let served = serve_hyper_connection_from(
                    stream,
                    service,
                    protocol,
                    idle,
                    ConnectionInfo {
                        peer: Some(peer),
                        certificate: None,
                    },
                );
                if let Err(e) = served.await {
                    tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
                }
                drop(permit);
            });
        },
    )
    .await;
}

/// Serves `service` through hyper on one connection accepted by your own code (a TLS stream,
/// with [`Protocol::from_alpn`]), until it ends; `idle` as in
/// [`serve_hyper`](crate::profile::serve_hyper). See [`serve_connection`] for the accept loop
/// around it.
pub async fn serve_hyper_connection<I, S>(
    io: I,
    service: S,
    protocol: Protocol,
    idle: Duration,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HandlesIncoming,
{
    Ok(run_hyper(io, protocol, idle, hyper_service(service)).await?)
}

/// [`serve_hyper_connection`] of a connection from `peer`: every request is told its peer
/// ([`connection_peer`]) while a subscriber listens to call spans or the service
/// [wants it](HandlesIncoming::wants_peer).
async fn serve_hyper_connection_from<I, S>(
    io: I,
    service: S,
    protocol: Protocol,
    idle: Duration,
    info: ConnectionInfo,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HandlesIncoming,
{
    if info.certificate.is_some() || telemetry::spans_enabled() || service.wants_peer() {
        serve_hyper_connection(io, WithConnection { service, info }, protocol, idle).await
    } else {
        serve_hyper_connection(io, service, protocol, idle).await
    }
}

/// Serves one connection [`serve`] accepted, holding its connection slot while it lives.
pub(crate) fn serve_accepted(
    stream: tokio::net::TcpStream,
    protocol: Protocol,
    service: RpcService,
    peer: std::net::SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) -> impl Future<Output = ()> + Send {
    // Boxed and awaited in place: an `async` block that moved it into its `.await` would hold
    // it twice.
    let info = ConnectionInfo {
        peer: Some(peer),
        certificate: None,
    };
    let connection = Box::pin(serve_connection_from(stream, service, protocol, info));
    let (scope, span) = ConnectionScope::open_on(crate::transport::HTTP, Some(peer));
    Accepted {
        connection,
        span,
        held: Some((scope, permit)),
        peer,
        protocol,
    }
}

/// A connection [`serve_accepted`] serves: its span is the parent of its calls' and batches'
/// spans ([`telemetry::ConnectionParent`]), not entered on each poll (which cost about
/// 1 300 instructions a call while spans are listened to, sampled or not).
struct Accepted<F> {
    connection: Pin<Box<F>>,
    span: tracing::Span,
    /// Its count among the open connections and its slot, let go when it ends.
    held: Option<(ConnectionScope, tokio::sync::OwnedSemaphorePermit)>,
    peer: std::net::SocketAddr,
    protocol: Protocol,
}

impl<F: Future<Output = Result<(), ConnectionError>>> Future for Accepted<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let ended = {
            let _parent = telemetry::ConnectionParent::hold(&this.span);
            this.connection.as_mut().poll(cx)
        };
        let Poll::Ready(ended) = ended else {
            return Poll::Pending;
        };
        if let Err(e) = ended {
            let (peer, protocol) = (this.peer, this.protocol);
            this.span.in_scope(|| {
                tracing::debug!(%peer, error = %e, ?protocol, "HTTP connection ended with an error");
            });
        }
        this.held = None;
        Poll::Ready(())
    }
}
