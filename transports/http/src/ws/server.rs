//! The WebSocket server: the upgrade (from any hyper service, or from its own listener), and
//! the connections it holds (in the service layer's [`Hub`], which reaches all of them).

use std::convert::Infallible;
use std::sync::Arc;

use http_body_util::Full;
use hyper::body::Bytes;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use rpcwire_service::Hub;
use rpcwire_tokio::{Builder, Caller, Client, Identity};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

use super::config::WsConfig;
use super::handshake::{chosen, is_upgrade};
use crate::HostPolicy;

/// What a server calls for each connection it accepts.
type ConnectHook = Arc<dyn Fn(Client) + Send + Sync>;

/// A JSON-RPC WebSocket server: the upgrade, the connections' settings and limits, its [`Hub`],
/// and (optionally) the browser console page. Cheap to clone (clones share the hub and the
/// connection limit).
#[derive(Clone)]
pub struct WsServer {
    builder: Builder,
    config: WsConfig,
    hub: Hub,
    slots: Arc<Semaphore>,
    max_connections: usize,
    console: bool,
    hosts: HostPolicy,
    on_connect: Option<ConnectHook>,
}

impl std::fmt::Debug for WsServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsServer")
            .field("config", &self.config)
            .field("connections", &self.hub.len())
            .field("max_connections", &self.max_connections)
            .field("console", &self.console)
            .finish()
    }
}

impl WsServer {
    /// A server whose connections run with `builder`'s settings (its router, concurrency,
    /// timeouts; framing and maximum frame come from `config`) and `config`'s WebSocket
    /// limits. At most [`rpcwire_tokio::DEFAULT_MAX_CONNECTIONS`] connections.
    pub fn new(builder: Builder, config: WsConfig) -> Self {
        let hub = Hub::new();
        hub.set_send_timeout(config.send_timeout);
        WsServer {
            builder: config.driver(builder),
            config,
            hub,
            slots: Arc::new(Semaphore::new(rpcwire_tokio::DEFAULT_MAX_CONNECTIONS)),
            max_connections: rpcwire_tokio::DEFAULT_MAX_CONNECTIONS,
            console: false,
            hosts: HostPolicy::loopback(),
            on_connect: None,
        }
    }

    /// Which `Host` and `Origin` values [`serve_tcp`](Self::serve_tcp) accepts (default: the
    /// loopback names, as the HTTP server's): any other request, an upgrade or the console
    /// page, gets 403 before anything else, so that a web page cannot reach the server
    /// through a rebound DNS name or open a socket from another site. Upgrades that an
    /// [`HttpServer`](crate::HttpServer) hands over have passed its own rule.
    pub fn hosts(mut self, hosts: HostPolicy) -> Self {
        self.hosts = hosts;
        self
    }

    /// The most connections held at once (at least 1); an upgrade beyond it is answered 503.
    pub fn max_connections(mut self, limit: usize) -> Self {
        let limit = limit.max(1);
        self.slots = Arc::new(Semaphore::new(limit));
        self.max_connections = limit;
        self
    }

    /// Uses `hub` for this server's connections (to share it with handlers made before the
    /// server, such as a method that broadcasts).
    pub fn with_hub(mut self, hub: Hub) -> Self {
        hub.set_send_timeout(self.config.send_timeout);
        self.hub = hub;
        self
    }

    /// The hub of this server's connections.
    pub fn hub(&self) -> &Hub {
        &self.hub
    }

    /// Also serve the browser console on `GET /` (and `/console`) of
    /// [`serve_tcp`](WsServer::serve_tcp) and [`handle`](WsServer::handle): one static page,
    /// embedded in the binary, that connects back over WebSocket, lists the methods from
    /// `rpc.discover`, calls them, and shows every message. With the feature `metrics` it
    /// also draws the live view: calls per second, latency percentiles and errors by method,
    /// open connections, read from `/console/stats`; turning the console on turns on the
    /// process's [`live_stats`](rpcwire_telemetry::live_stats) (off until then, and never off
    /// again).
    pub fn console(mut self, on: bool) -> Self {
        self.console = on;
        if on {
            crate::console::enable_live_view();
        }
        self
    }

    /// Calls `hook` with a [`Client`] for each connection, when it opens (to call that client
    /// or send it notifications later).
    pub fn on_connect(mut self, hook: impl Fn(Client) + Send + Sync + 'static) -> Self {
        self.on_connect = Some(Arc::new(hook));
        self
    }

    /// Answers a WebSocket upgrade request (see [`is_upgrade`]): `101 Switching Protocols`,
    /// after which the connection runs in a task of its own on the upgraded stream (so the
    /// hyper connection must be served `with_upgrades()`). A request that is not a valid
    /// WebSocket handshake gets 400; beyond the connection limit, 503.
    pub fn upgrade<B>(&self, req: Request<B>) -> Response<Full<Bytes>> {
        self.answer_upgrade(req).map(Full::new)
    }

    /// [`upgrade`](Self::upgrade) with the answer's body as plain bytes, for any body type.
    pub(crate) fn answer_upgrade<B>(&self, mut req: Request<B>) -> Response<Bytes> {
        let version_ok = req
            .headers()
            .get(header::SEC_WEBSOCKET_VERSION)
            .is_some_and(|v| v == "13");
        let key = req.headers().get(header::SEC_WEBSOCKET_KEY).cloned();
        let key = match key {
            Some(key) if version_ok && req.method() == Method::GET && is_upgrade(&req) => key,
            _ => {
                return plain(
                    StatusCode::BAD_REQUEST,
                    "not a WebSocket handshake (GET with Upgrade: websocket, Sec-WebSocket-Version: 13 and a key)\n",
                )
            }
        };
        let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() else {
            tracing::warn!(
                limit = self.max_connections,
                "WebSocket connection limit reached"
            );
            return plain(StatusCode::SERVICE_UNAVAILABLE, "too many connections\n");
        };
        let on_upgrade = hyper::upgrade::on(&mut req);
        let server = self.clone();
        // The caller the HTTP server established for this request, if it did, now over the
        // WebSocket (the upgrade's `traceparent` stays the parent of the connection's calls).
        let caller = match req.extensions().get::<Arc<Caller>>() {
            Some(caller) => Caller::clone(caller).with_transport(crate::transport::WEBSOCKET),
            None => {
                let caller = Caller::new(Identity::anonymous(), crate::transport::WEBSOCKET);
                let caller =
                    crate::caller::with_local_end(caller, &crate::caller::connection_end(&req));
                match crate::caller::connection_peer(&req) {
                    Some(peer) => caller.with_peer(peer),
                    None => caller,
                }
            }
        };
        let caller = Some(Arc::new(caller));
        tokio::spawn(async move {
            match on_upgrade.await {
                Ok(upgraded) => server.run_stream_as(TokioIo::new(upgraded), caller).await,
                Err(e) => tracing::debug!(error = %e, "WebSocket upgrade failed"),
            }
            drop(permit);
        });
        let mut res = Response::new(Bytes::new());
        *res.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
        let h = res.headers_mut();
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
        if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
            h.insert(header::SEC_WEBSOCKET_ACCEPT, accept);
        }
        if let Some(protocol) = chosen(req.headers()) {
            h.insert(header::SEC_WEBSOCKET_PROTOCOL, protocol);
        }
        res
    }

    /// Runs one JSON-RPC connection over a stream whose WebSocket handshake is already done
    /// (server role), until it ends.
    pub async fn run_stream<S>(&self, stream: S)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        self.run_stream_as(stream, None).await
    }

    /// [`run_stream`](Self::run_stream) for a connection whose caller was established by
    /// the HTTP server at the upgrade (its handlers see it, and the router's access rules
    /// decide by it).
    pub async fn run_stream_as<S>(&self, stream: S, caller: Option<Arc<Caller>>)
    where
        S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        let ws =
            WebSocketStream::from_raw_socket(stream, Role::Server, Some(self.config.tungstenite()))
                .await;
        let mut builder = self.builder.clone();
        let expires = caller.as_ref().and_then(|c| c.identity().expires());
        if let Some(caller) = caller {
            builder = builder.shared_caller(caller);
        }
        let session = super::io::run(ws, builder, &self.config, expires);
        let id = self.hub.add(session.client().clone());
        if let Some(hook) = &self.on_connect {
            hook(session.client().clone());
        }
        let shutdown = self.builder.service_ref().shutdown_ref().clone();
        match session.join_or_drain(&shutdown).await {
            Ok(()) => tracing::debug!("WebSocket connection ended"),
            Err(e) => tracing::debug!(error = %e, "WebSocket connection failed"),
        }
        self.hub.remove(id);
    }

    /// Answers one HTTP request as the standalone server does: a WebSocket upgrade, the
    /// console page (if enabled) on `GET /` or `/console`, otherwise 426 Upgrade Required.
    pub fn handle<B>(&self, req: Request<B>) -> Response<Full<Bytes>> {
        if is_upgrade(&req) {
            return self.upgrade(req);
        }
        let path = req.uri().path();
        if self.console && req.method() == Method::GET {
            if let Some((kind, body)) = crate::console::answer(path, &["/", "/console"], "/") {
                let mut res = Response::new(Full::new(body));
                crate::console::headers(res.headers_mut(), kind);
                return res;
            }
        }
        let mut res = plain(
            StatusCode::UPGRADE_REQUIRED,
            "this is a JSON-RPC WebSocket endpoint: connect with a WebSocket client\n",
        );
        res.headers_mut()
            .insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        res.map(Full::new)
    }

    /// [`handle`](Self::handle) for a request from `peer`, its `Host` and `Origin` checked
    /// first ([`hosts`](Self::hosts)), an upgrade's caller established
    /// first as the HTTP server establishes a request's ([`admit`](crate::profile::admit), the
    /// bearer subprotocol and the query checked before): a caller the builder's authenticator
    /// refuses gets the refusal (401 with `WWW-Authenticate: Bearer`, 400 for a malformed
    /// `Authorization` header or a token in the query string), never a 101; one it lets in runs
    /// the connection as that caller (its identity and the upgrade's headers in the handlers'
    /// `Context`).
    async fn handle_from<B>(
        &self,
        mut req: Request<B>,
        peer: Option<std::net::SocketAddr>,
    ) -> Response<Full<Bytes>> {
        if let Some(why) = self.hosts.refusal(&req) {
            return plain(StatusCode::FORBIDDEN, why).map(Full::new);
        }
        if !is_upgrade(&req) {
            return self.handle(req);
        }
        let refused = |r: Response<crate::body::Body>| {
            r.map(|b| Full::new(b.into_full().unwrap_or_default()))
        };
        let service = self.builder.service_ref();
        if let Some(r) = crate::challenge::misplaced_credentials(service, &mut req) {
            return refused(r);
        }
        let transport = crate::transport::WEBSOCKET;
        match crate::caller::admit(service, req.headers(), transport, peer, None).await {
            Ok(caller) => {
                let end = crate::caller::connection_end(&req);
                let caller = crate::caller::with_local_end(caller, &end);
                let caller = caller.with_meta(req.headers().clone());
                req.extensions_mut().insert(Arc::new(caller));
            }
            Err(refusal) => return refused(refusal),
        }
        self.handle(req)
    }

    /// Accepts connections on `listener` and serves each over HTTP/1.1 with
    /// [`handle`](WsServer::handle) (WebSocket upgrades on any path), the builder's
    /// service's [`authenticator`](rpcwire_tokio::Service::authenticator) asked about each
    /// upgrade first. Runs until the future is
    /// dropped; connections already open go on.
    pub async fn serve_tcp(self, listener: TcpListener) {
        // No bound on TCP connections here: the limit applies to upgrades (503 past it).
        let unbounded = tokio::sync::Semaphore::MAX_PERMITS;
        let handshake = self.config.handshake_timeout;
        let shutdown = self.builder.service_ref().shutdown_ref().clone();
        rpcwire_tokio::accept_loop(
            listener,
            unbounded,
            &shutdown,
            move |stream, peer, permit| {
                let server = self.clone();
                // What the connection tells its requests: the server's end (spans' `server.*`).
                let info = crate::caller::ConnectionInfo {
                    end: crate::caller::LocalEnd::told(stream.local_addr().ok(), false),
                    ..crate::caller::ConnectionInfo::of_peer(peer)
                };
                tokio::spawn(async move {
                    let _permit = permit;
                    let service = hyper::service::service_fn(
                        move |mut req: Request<hyper::body::Incoming>| {
                            req.extensions_mut().insert(info.clone());
                            let server = server.clone();
                            async move { Ok::<_, Infallible>(server.handle_from(req, peer).await) }
                        },
                    );
                    let conn = crate::on_hyper::http1_builder(handshake)
                        .serve_connection(TokioIo::new(stream), service)
                        .with_upgrades();
                    if let Err(e) = conn.await {
                        tracing::debug!(?peer, error = %e, "HTTP connection failed");
                    }
                });
            },
        )
        .await;
    }
}

fn plain(status: StatusCode, text: &'static str) -> Response<Bytes> {
    let mut res = Response::new(Bytes::from_static(text.as_bytes()));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}
