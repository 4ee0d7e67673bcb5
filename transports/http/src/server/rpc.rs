//! [`RpcService`]: the JSON-RPC server as a service. Every request passes the same rules in
//! [`Inner::handle`] (the console, the path, `Host` and `Origin`, credentials, the profile
//! checks, upgrades, the method), and every POST body is answered by [`Inner::answer`]
//! through the service's dispatcher, on hyper's path and on the fast path alike.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Method, Request, Response, StatusCode};
use rpcwire::wire::classify::{classify, BodyKind};
use rpcwire_service::{Responder, Sent, Service};
use rpcwire_telemetry as telemetry;
use rpcwire_tokio::{Caller, Client};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::body::Body;
use crate::caller::{admit, connection_certificate, connection_peer, traced_caller};
use crate::endpoint::Endpoint;
use crate::fast::{Answer, Posts};
use crate::handles::{HandlesIncoming, HandlesWhole, ResponseFuture};
use crate::media::accepts;
use crate::post::{after_body, post_body};
use crate::response::{event_stream, refuse};
use crate::stream::EventHub;
use rpcwire_service::deadline::before;

use super::reply::Reply;

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

pub(crate) struct Inner {
    /// The service: its authenticator establishes each request's caller
    /// ([`Service::admit`]); its dispatcher runs the calls.
    pub(crate) service: Service,
    /// The authenticator's
    /// [`Authenticator::credential_header`](rpcwire_tokio::Authenticator::credential_header),
    /// lower-case (letters, digits and `-` only): the fast path keeps a connection's caller for
    /// that header's value.
    pub(crate) credential_header: Option<Box<[u8]>>,
    /// Answers every POST body, through the service's dispatcher.
    pub(super) responder: Responder,
    pub(crate) path: Option<String>,
    /// Hosts, body size and time limits, `serve`'s connections.
    pub(crate) endpoint: Endpoint,
    pub(super) sse: bool,
    pub(super) get_stream: bool,
    pub(crate) upgrade: Option<UpgradeHook>,
    pub(crate) check: Option<RequestCheck>,
    pub(crate) check_body: Option<BodyCheck>,
    /// See [`HttpServer::fast_path`](crate::HttpServer::fast_path).
    pub(crate) fast_path: bool,
    /// See [`HttpServer::console`](crate::HttpServer::console).
    pub(super) console: bool,
    /// See [`HttpServer::liveness`](crate::HttpServer::liveness) and `readiness`.
    pub(super) probes: (Option<String>, Option<String>),
    pub(super) hub: Arc<EventHub>,
    /// Ticks a few times per request timeout.
    pub(super) clock: watch::Receiver<()>,
}

/// The server as a tower `Service<http::Request<B>>` (cheap to clone: every clone serves the
/// same handlers and event stream). Mount it in axum with `Router::route_service`, or run it
/// with [`serve`](crate::serve).
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

impl HandlesIncoming for RpcService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }

    fn wants_peer(&self) -> bool {
        self.inner.service.rate_limiter().is_some()
    }
}

impl HandlesWhole for RpcService {
    fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture {
        self.handle(req)
    }
}

impl Inner {
    async fn handle<B>(
        self: Arc<Self>,
        // Mutable for the WebSocket upgrade, which moves a subprotocol bearer token into
        // `Authorization` before the request is authenticated.
        mut req: Request<B>,
    ) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        if req.method() == Method::GET {
            let path = Some(req.uri().path());
            if self.probes.0.as_deref() == path {
                return refuse(StatusCode::OK, "ok\n");
            }
            if self.probes.1.as_deref() == path {
                return match self.service.ready().await {
                    true => refuse(StatusCode::OK, "ready\n"),
                    false => refuse(StatusCode::SERVICE_UNAVAILABLE, "not ready\n"),
                };
            }
        }
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
                return self.after_body(req, r).await;
            }
        }
        if let Some(why) = self.endpoint.refusal(&req) {
            let r = refuse(StatusCode::FORBIDDEN, why);
            return self.after_body(req, r).await;
        }
        if let Some(r) = crate::challenge::misplaced_credentials(&self.service, &mut req) {
            return self.after_body(req, r).await;
        }
        let peer = connection_peer(&req);
        let end = crate::caller::connection_end(&req);
        let certificate = connection_certificate(&req);
        let caller = match self.admit(req.headers(), peer, end, certificate).await {
            Ok(caller) => caller,
            Err(refusal) => return self.after_body(req, *refusal).await,
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
                self.after_body(Request::from_parts(parts, body), r).await
            }
        }
    }

    /// [`after_body`] within the server's limits: `response`, once `req`'s body has been read
    /// past (or `connection: close`).
    async fn after_body<B>(&self, req: Request<B>, response: Response<Body>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (max, timeout) = (self.endpoint.max_body, self.endpoint.timeout);
        after_body(req, max, timeout, response).await
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
        end: crate::caller::LocalEnd,
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
            crate::caller::with_local_end(traced_caller(caller, headers, None), &end)
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

    /// A POST that got no answer: notifications (their handlers run on), or responses, which
    /// answer the event stream's calls and go to its connection.
    async fn accepted(&self, body: &[u8]) -> Reply {
        if classify(body, 128) != BodyKind::Notifications {
            // Boxed: a connection's task holds its largest state for its whole life.
            Box::pin(self.hub.deliver(Bytes::copy_from_slice(body))).await;
        }
        Reply::Accepted
    }

    /// The answer to a POST body whose head passed every check, shared by hyper's path and
    /// the fast path: the body runs through the service's dispatcher ([`Responder`]); what its
    /// handlers send the client before the answer makes it an event stream when the client
    /// accepts one (else it is dropped).
    async fn answer(
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
            let Ok(next) = before(&self.clock, deadline, exchange.next()).await else {
                return Reply::TIMED_OUT;
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
                None => self.accepted(body).await,
            };
        }
    }
}

/// The fast path's plain lane: POSTs of JSON to the served path from clients that accept
/// plain JSON alone, answered by [`Inner::answer`] as on hyper's path.
impl Posts for Inner {
    fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    fn credential_header(&self) -> Option<&[u8]> {
        self.credential_header.as_deref()
    }

    fn service(&self) -> &Service {
        &self.service
    }

    fn respond<'a>(
        &'a self,
        body: &'a [u8],
        deadline: Instant,
        caller: Option<&'a Arc<Caller>>,
    ) -> impl Future<Output = Answer> + Send + 'a {
        self.answer_plain(body, deadline, caller)
    }
}

impl Inner {
    /// [`Inner::answer`] for a client that accepts plain JSON alone, written out rather than
    /// awaiting `answer`: the fast path's per-call cost. Awaited, `answer`'s future (shared
    /// with hyper's path) is polled as a future of its own and moved into this one, about 50
    /// instructions a call (measured with `bench/callgrind-http.sh`, BENCHMARKS.md).
    async fn answer_plain(
        &self,
        body: &[u8],
        deadline: Instant,
        caller: Option<&Arc<Caller>>,
    ) -> Answer {
        let caller = caller.unwrap_or_else(|| self.responder.caller());
        let mut exchange = self.responder.exchange(caller, body);
        let reply = loop {
            match before(&self.clock, deadline, exchange.next()).await {
                Ok(Some(Sent::Answer(answer))) => {
                    let message: Bytes = answer.into();
                    if Reply::json_status(&message) == StatusCode::OK {
                        return Answer::Json(message);
                    }
                    break Reply::Json(message);
                }
                // Plain JSON: messages before the answer have no place; dropped.
                Ok(Some(Sent::Message(_))) => continue,
                // Notifications or responses, as in `answer`.
                Ok(None) => break self.accepted(body).await,
                Err(()) => break Reply::TIMED_OUT,
            }
        };
        Answer::Other(Box::new(reply.into_response()))
    }
}
