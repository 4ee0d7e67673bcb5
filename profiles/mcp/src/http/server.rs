//! The MCP Streamable HTTP server as a service ([`McpService`]): what every request goes
//! through (the endpoint's path, the `Host` / `Origin` check, authentication, the revision
//! header), the GET stream and DELETE of a session, and the serve loops. POSTs are answered
//! in `post`.

// Named, not the std prelude's glob: its `panic` would be ambiguous in `tokio::select!`.
use std::borrow::ToOwned;
use std::boxed::Box;
use std::string::String;
use std::vec::Vec;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http::header::{self, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use rpcwire_http::profile::{
    after_body, connection_peer, event_stream, parse_event_id, refuse, serve_hyper_connection,
    serve_profile, status, traced_request_caller, Body, Endpoint, HandlesIncoming, HandlesWhole,
};
use rpcwire_http::{ConnectionError, Protocol, ResponseFuture};
use rpcwire_service::Responder;
use rpcwire_tokio::{Caller, Client, Identity};
use tokio::sync::mpsc;

use super::auth::Gate;
use super::replies::{accepts, header_str, rpc_error};
use super::routes::Routes;
use super::session::{self, Sessions};
use super::shared_stream;
use super::store::{SharedStore, StreamKey};
use super::wire::{Mode, HEADER_PROTOCOL_VERSION};
use crate::ProtocolVersion;

/// What a built server holds (see [`McpHttpServer::build`](super::McpHttpServer::build)).
pub(crate) struct Inner {
    /// Authentication and scopes, before anything else.
    pub(crate) gate: Gate,
    /// Every POST signed ([`McpHttpServer::signed`](super::McpHttpServer::signed)).
    #[cfg(feature = "signing")]
    pub(crate) signing: Option<Arc<rpcwire_tokio::signing::RequestSigning>>,
    /// Answers POST bodies (batches refused by the core).
    pub(crate) responder: Responder,
    /// Answers the batches of sessions whose revision takes them (2025-03-26 and older).
    pub(crate) batch_responder: Responder,
    pub(crate) mode: Mode,
    pub(crate) path: String,
    /// Hosts, body size and time limits, event streams, `serve`'s connections.
    pub(crate) endpoint: Endpoint,
    /// The sessions, bounded, ended when idle.
    pub(crate) sessions: Sessions,
    /// Where the client's answers to the server's requests, and cancellations, go.
    pub(crate) routes: Arc<Routes>,
    /// The store replicas share sessions and event logs through
    /// ([`McpHttpServer::store`](super::McpHttpServer::store)); none by default.
    pub(crate) store: Option<SharedStore>,
    /// The most request streams per session parked for resumption
    /// ([`McpHttpServer::max_parked_streams`](super::McpHttpServer::max_parked_streams)).
    pub(crate) max_parked: usize,
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
    pub(crate) fn new(inner: Inner) -> Self {
        McpService {
            inner: Arc::new(inner),
        }
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
/// prior knowledge), at most
/// [`McpHttpServer::max_connections`](super::McpHttpServer::max_connections) at once, until
/// the future is dropped: HTTP/1.1 requests within the body limit read whole and answered
/// without a hyper connection under each (an open stream holds no hyper buffers), HTTP/2 and
/// the rest through hyper ([`serve_profile`]). A connection with no request under way (on
/// HTTP/2: no stream) is closed after
/// [`McpHttpServer::idle_connection_timeout`](super::McpHttpServer::idle_connection_timeout).
pub async fn serve(listener: tokio::net::TcpListener, service: McpService) {
    serve_profile(listener, service).await;
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
    rpcwire_http::profile::serve_profile_tls(listener, service, tls, handshake_timeout).await;
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
    let idle: Duration = service.inner.endpoint.idle_connection();
    serve_hyper_connection(io, service, protocol, idle).await
}

impl HandlesIncoming for McpService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }

    /// The peer's address, for a rate limit that counts unauthenticated callers by it.
    fn wants_peer(&self) -> bool {
        self.inner.responder.service().rate_limiter().is_some()
    }
}

impl HandlesWhole for McpService {
    fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture {
        self.handle(req)
    }
}

impl Inner {
    async fn handle<B>(self: Arc<Self>, req: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (max_body, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        if req.method() == Method::GET {
            if let Some(r) = self.gate.metadata(req.uri().path()) {
                return after_body(req, max_body, timeout, r).await;
            }
        }
        if req.uri().path() != self.path {
            let r = refuse(StatusCode::NOT_FOUND, "no MCP endpoint here\n");
            return after_body(req, max_body, timeout, r).await;
        }
        if let Some(why) = self.endpoint.refusal(&req) {
            let r = refuse(StatusCode::FORBIDDEN, why);
            return after_body(req, max_body, timeout, r).await;
        }
        // Authentication first: nothing is created, nothing run, for a request refused.
        let caller = match self.gate.admit(req.uri(), req.headers()).await {
            Ok(caller) => caller,
            Err(r) => return after_body(req, max_body, timeout, *r).await,
        };
        let caller = with_peer_and_trace(caller, &req);
        // A revision header, when sent, must name a revision this server speaks. (Stateless
        // mode checks it with the POST's other headers against the body, in
        // `stateless_headers`, and answers with the request's id.)
        // A POST with no session id may be of the stateless revision, which a session server
        // serves too: `post` checks its headers.
        let sessionless_post = req.method() == Method::POST
            && !req.headers().contains_key(super::wire::HEADER_SESSION_ID);
        if let Some(v) = req.headers().get(HEADER_PROTOCOL_VERSION) {
            if self.mode == Mode::Sessions
                && !sessionless_post
                && ProtocolVersion::from_bytes(v.as_bytes()).is_none()
            {
                let r = rpc_error(
                    StatusCode::BAD_REQUEST,
                    -32600,
                    "unsupported MCP-Protocol-Version",
                );
                return after_body(req, max_body, timeout, r).await;
            }
        }
        let (parts, body) = req.into_parts();
        let response = match (self.mode, &parts.method) {
            (_, &Method::POST) => return self.post(parts, body, caller).await,
            (Mode::Sessions, &Method::GET) => self.get(&parts, caller.as_ref()).await,
            (Mode::Sessions, &Method::DELETE) => self.delete(&parts, caller.as_ref()).await,
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
            max_body,
            timeout,
            response,
        )
        .await
    }

    /// The session a request names (see [`session::named`]).
    pub(crate) async fn named(
        &self,
        headers: &http::HeaderMap,
        caller: Option<&Arc<Caller>>,
    ) -> Result<Arc<session::Session>, Box<Response<Body>>> {
        session::named(
            &self.sessions,
            self.store.as_ref(),
            (&self.endpoint, self.max_parked),
            headers,
            caller,
        )
        .await
    }

    async fn get(
        &self,
        parts: &http::request::Parts,
        caller: Option<&Arc<Caller>>,
    ) -> Response<Body> {
        let (_, sse_ok) = accepts(&parts.headers);
        if !sse_ok {
            return refuse(
                StatusCode::NOT_ACCEPTABLE,
                "GET opens an event stream: accept text/event-stream\n",
            );
        }
        let session = match self.named(&parts.headers, caller).await {
            Ok(s) => s,
            Err(r) => return *r,
        };
        let last = header_str(&parts.headers, "last-event-id");
        if let Some((stream_id, seq)) = last.and_then(parse_event_id) {
            // The rest of a request's stream (SSE polling, or a broken connection).
            let (tx, rx) = mpsc::channel(8);
            if let Some(store) = &self.store {
                // From the shared log, wherever the request runs: the key names this
                // session, so no other session's events can come.
                let key = StreamKey {
                    session: session.id().to_owned(),
                    stream: stream_id,
                };
                let (log, active) = (Arc::clone(&store.events), session.hold());
                let reading = shared_stream::Reading {
                    reread: store.reread,
                    batch: store.read_batch,
                };
                tokio::spawn(async move {
                    let _active = active;
                    shared_stream::resume(log, key, seq, tx, reading).await;
                });
            } else if let Some(stream) = session.detached.get(&stream_id) {
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
        let watch = self
            .store
            .clone()
            .map(|store| (store, self.sessions.clone(), session.id().to_owned()));
        tokio::spawn(async move {
            let _active = active;
            match watch {
                // With a shared store the stream keeps the session alive there too, and
                // ends when another replica ends the session (DELETE) or it expired.
                Some((store, sessions, id)) => tokio::select! {
                    () = hub.serve_stream(cursor, tx) => {}
                    () = session::until_ended(&store, &sessions, &id) => {
                        sessions.remove(&id);
                    }
                },
                None => hub.serve_stream(cursor, tx).await,
            }
        });
        event_stream(rx)
    }

    async fn delete(
        &self,
        parts: &http::request::Parts,
        caller: Option<&Arc<Caller>>,
    ) -> Response<Body> {
        let session = match self.named(&parts.headers, caller).await {
            Ok(session) => session,
            Err(r) => return *r,
        };
        if session::end(&self.sessions, self.store.as_ref(), session.id()).await {
            status(StatusCode::OK)
        } else {
            rpc_error(StatusCode::NOT_FOUND, -32001, "Session not found")
        }
    }
}

/// The request's caller with what its connection and headers say of it, when anything
/// reads it: its peer (known while a subscriber listens to call spans, or a rate limit
/// counts unauthenticated callers by address) and its W3C trace context (the parent of its
/// calls' spans), and the headers (handlers and the calls' spans read the session id and
/// the revision from them). `None` (the responder's anonymous caller) when nothing does.
fn with_peer_and_trace<B>(caller: Option<Arc<Caller>>, req: &Request<B>) -> Option<Arc<Caller>> {
    let peer = connection_peer(req);
    if peer.is_none() && !rpcwire_telemetry::spans_enabled() {
        return caller;
    }
    let base = caller.map_or_else(
        || {
            Caller::new(Identity::anonymous(), rpcwire_http::transport::HTTP)
                .with_meta(req.headers().clone())
        },
        |c| (*c).clone(),
    );
    Some(Arc::new(traced_request_caller(base, req)))
}
