//! The caller a request runs as, made at the transport's edge from what only the transport
//! knows: the connection's peer and TLS client certificate ([`ConnectionInfo`], in the
//! request's extensions), its headers (credentials for [`Service::admit`], the W3C trace
//! context).

use std::sync::Arc;

use http::header::{HeaderMap, HeaderValue};
use http::{Request, Response};
use rpcwire_service::Service;
use rpcwire_telemetry::trace_context::TraceContext;
use rpcwire_tokio::{Caller, Credentials, Transport};

use crate::body::Body;

/// The caller of a request (an HTTP request, a WebSocket upgrade) with these headers over
/// `transport` from `peer` (and its TLS client certificate): [`Service::admit`] with the
/// headers, or the refusal (401 with the challenge, 400, 503:
/// [`unauthenticated`](crate::unauthenticated)). Counted and logged with its reason
/// by the service, never the credentials. A profile's server admits each request's caller
/// with it, as this crate's servers do.
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
    with_trace(
        caller,
        peer,
        &LocalEnd::default(),
        values("traceparent"),
        values("tracestate"),
    )
}

/// [`traced_caller`] for `req`, with everything its connection told it: the peer
/// ([`connection_peer`]) and the server's end (the local address and the HTTP version: the
/// calls' spans' `server.address`, `server.port`, `network.protocol.version`), and the
/// request's W3C trace context. What a profile's server does for each request while a
/// subscriber listens to call spans; without one (or from an accept loop that told the
/// request nothing) it is [`traced_caller`] with the peer alone.
pub fn traced_request_caller<B>(caller: Caller, req: &Request<B>) -> Caller {
    let caller = with_local_end(caller, &connection_end(req));
    traced_caller(caller, req.headers(), connection_peer(req))
}

/// [`traced_caller`] from the values of the `traceparent` and `tracestate` fields, each
/// field's in order (the HTTP/1.1 fast path finds them in its own head parse).
pub(crate) fn with_trace<'a>(
    mut caller: Caller,
    peer: Option<std::net::SocketAddr>,
    end: &LocalEnd,
    traceparent: impl Iterator<Item = &'a [u8]>,
    tracestate: impl Iterator<Item = &'a [u8]>,
) -> Caller {
    if let Some(peer) = peer {
        caller = caller.with_peer(peer);
    }
    caller = with_local_end(caller, end);
    match TraceContext::from_headers(traceparent, tracestate) {
        Some(cx) => caller.with_trace_context(cx),
        None => caller,
    }
}

/// The server's end of a connection: the local address it arrived at and whether it speaks
/// HTTP/2 (its calls' spans' `server.address`, `server.port`, `network.protocol.version`).
/// Made only while a subscriber listens to call spans (else empty: nothing allocated), and a
/// pointer's size in every connection's future.
#[derive(Debug, Clone, Default)]
pub(crate) struct LocalEnd(Option<Arc<(Option<std::net::SocketAddr>, bool)>>);

impl LocalEnd {
    /// The end at `local`, speaking HTTP/2 or not, while spans are listened to.
    pub(crate) fn told(local: Option<std::net::SocketAddr>, http2: bool) -> Self {
        if !rpcwire_telemetry::spans_enabled() {
            return LocalEnd(None);
        }
        LocalEnd(Some(Arc::new((local, http2))))
    }
}

/// `caller` with what `end` knows.
pub(crate) fn with_local_end(mut caller: Caller, end: &LocalEnd) -> Caller {
    let Some((local, http2)) = end.0.as_deref() else {
        return caller;
    };
    if let Some(local) = local {
        caller = caller.with_local(*local);
    }
    if *http2 {
        caller = caller.with_protocol_version("2");
    }
    caller
}

/// The server's end of the connection `req` came on, when the accept loop told it.
pub(crate) fn connection_end<B>(req: &Request<B>) -> LocalEnd {
    req.extensions()
        .get::<ConnectionInfo>()
        .map_or_else(LocalEnd::default, |info| info.end.clone())
}

/// What a request's connection tells it (in the request's extensions, when it
/// [is told](ConnectionInfo::is_told)): its peer, the server's end, and its TLS client
/// certificate under mutual TLS.
#[derive(Debug, Clone)]
pub(crate) struct ConnectionInfo {
    pub(crate) peer: Option<std::net::SocketAddr>,
    pub(crate) end: LocalEnd,
    pub(crate) certificate: Option<Arc<rpcwire_tokio::PeerCertificate>>,
}

/// The peer of the connection `req` came on, when the server's accept loop told it (while a
/// subscriber listens to call spans, or the service rate-limits:
/// [`serve_profile`](crate::profile::serve_profile) and the
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

/// An `http::HeaderMap` as an authenticator reads it.
pub(crate) struct HeaderLookup<'a>(pub(crate) &'a HeaderMap);

impl rpcwire_tokio::Headers for HeaderLookup<'_> {
    fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(HeaderValue::as_bytes)
    }
}

impl ConnectionInfo {
    /// What a connection from `peer` with no client certificate knows.
    pub(crate) fn of_peer(peer: Option<std::net::SocketAddr>) -> Self {
        ConnectionInfo {
            peer,
            end: LocalEnd::default(),
            certificate: None,
        }
    }

    /// Whether the connection's requests are told what it knows: always under mutual TLS
    /// (the certificate may be the caller's identity), and its peer while a subscriber
    /// listens to call spans (their `network.peer.*`) or the service `wants_peer` (the key of
    /// an anonymous caller's rate-limit bucket). Telling a request costs an allocation.
    pub(crate) fn is_told(&self, wants_peer: bool) -> bool {
        self.certificate.is_some()
            || (self.peer.is_some() && (wants_peer || rpcwire_telemetry::spans_enabled()))
    }
}
