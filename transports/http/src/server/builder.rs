//! [`HttpServer`]: the JSON-RPC server's settings, and [`build`](HttpServer::build) to make its
//! [`RpcService`].

use std::sync::Arc;
use std::time::Duration;

use rpcwire_service::{ClientSettings, Responder};
use rpcwire_tokio::Builder;

use crate::endpoint::Endpoint;
use crate::endpoint::HostPolicy;
use crate::stream::EventHub;

use super::rpc::{BodyCheck, Inner, RequestCheck, RpcService, UpgradeHook};

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
    /// The liveness and readiness probes' paths.
    probes: (Option<String>, Option<String>),
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
            probes: (None, None),
        }
    }

    /// Answers `GET path` (say `/healthz`) 200 `ok` while the process serves: a liveness
    /// probe, before any other rule (the path, hosts, credentials). While the server drains,
    /// every request is answered 503 (see [`serve`](crate::serve)).
    pub fn liveness(mut self, path: impl Into<String>) -> Self {
        self.probes.0 = Some(path.into());
        self
    }

    /// Answers `GET path` (say `/readyz`) 200 `ready` when the service takes new callers, 503
    /// `not ready` when not ([`Service::ready`](rpcwire_tokio::Service::ready): not while it
    /// drains, nor while its authenticator is not ready, such as a JWT authenticator whose
    /// key set was never fetched); before any other rule, as [`liveness`](Self::liveness).
    pub fn readiness(mut self, path: impl Into<String>) -> Self {
        self.probes.1 = Some(path.into());
        self
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

    /// The time a request may take, body reading and handlers included; past it the answer is 503
    /// (or an event stream ends) and the handlers are dropped. With [`serve`](crate::serve), a
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
            let caller = parts.extensions.get::<Arc<rpcwire_tokio::Caller>>();
            crate::guard::signature_refused(&signing, caller, &parts.headers, body)
        }))
    }

    /// The most connections [`serve`](crate::serve) holds at once (default 10 000); more wait in
    /// the listen backlog.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// How long [`serve`](crate::serve) keeps an HTTP/1.1 connection that has no request under way
    /// (default 90 s): one that sends nothing after connecting, or an idle keep-alive connection.
    /// It is closed then, so that idle clients cannot hold every slot of
    /// [`max_connections`](HttpServer::max_connections). The default outlasts the idle time of
    /// proxies' upstream connections (nginx and AWS load balancers: 60 s), so that a proxy never
    /// sends a request on a connection the server is closing; clients' pools give idle connections
    /// up sooner (undici 4 s, httpx 5 s) or send again on a fresh one when the server has closed
    /// theirs (hyper, reqwest). On a connection hyper serves (after the first request the fast path
    /// does not take), this one timer also bounds the next request's head (hyper's header read
    /// timeout). An HTTP/2 connection is shut down gracefully (GOAWAY) once it has had no stream
    /// under way for this long; an open event stream counts as one.
    pub fn idle_connection_timeout(mut self, idle: Duration) -> Self {
        self.endpoint.set_idle_connection(idle);
        self
    }

    /// Whether [`serve`](crate::serve) and [`serve_connection`](crate::serve_connection) serve
    /// HTTP/1.1 on their fast path (default on): plain-JSON POSTs answered with no HTTP machinery
    /// in between, and the other requests read whole (an event stream then holds no hyper buffers).
    /// Off, hyper serves every request: the answers are the same (a test compares the two over
    /// random requests), but each call costs more CPU and an idle keep-alive connection holds
    /// hyper's connection state, which is larger than the fast path's 2 KiB buffer. For comparing
    /// the two, or to rule the fast path out when chasing a problem.
    pub fn fast_path(mut self, on: bool) -> Self {
        self.fast_path = on;
        self
    }

    /// Serves WebSocket on the same port and path as the POST transport: a request with
    /// `Upgrade: websocket` becomes a WebSocket connection run by `ws` (its own `Router`,
    /// limits and hub), every other request is answered as before.
    ///
    /// ```
    /// use rpcwire_http::ws::{WsConfig, WsServer};
    /// use rpcwire_http::HttpServer;
    /// use rpcwire_tokio::{Builder, Router};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let router = || Router::new().sync_method("ping", |(): ()| Ok::<_, rpcwire_tokio::RpcError>("pong"));
    /// let ws = WsServer::new(Builder::new().router(router()), WsConfig::default());
    /// let service = HttpServer::new(Builder::new().router(router()))
    ///     .path("/rpc")
    ///     .websocket(ws) // ws://host/rpc and POST http://host/rpc
    ///     .build();
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    /// tokio::spawn(rpcwire_http::serve(listener, service));
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "ws")]
    pub fn websocket(self, ws: crate::ws::WsServer) -> Self {
        self.upgrade(Arc::new(move |req: http::Request<()>| {
            let answer = ws.answer_upgrade(req).map(crate::body::Body::full);
            Box::pin(std::future::ready(answer))
        }))
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
        hub.end_streams_on(service.shutdown_ref());
        let mut endpoint = self.endpoint;
        endpoint.set_shutdown(service.shutdown_ref());
        let clock = rpcwire_service::deadline::clock(endpoint.timeout);
        RpcService {
            inner: Arc::new(Inner {
                credential_header: service
                    .authenticator_ref()
                    .and_then(|a| a.credential_header())
                    .map(str::to_ascii_lowercase)
                    // The fast path compares names a word at a time (see `fast::head`),
                    // exact for these characters; another name is asked about per request.
                    .filter(|name| {
                        name.bytes()
                            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    })
                    .map(|name| name.into_bytes().into()),
                service,
                responder,
                path: self.path,
                endpoint,
                sse: self.sse,
                get_stream: self.get_stream,
                upgrade: self.upgrade,
                check: self.check,
                check_body: self.check_body,
                fast_path: self.fast_path,
                console: self.console,
                probes: self.probes,
                hub,
                clock,
            }),
        }
    }
}
