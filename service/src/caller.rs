//! What the transport knows about the caller of a message ([`Caller`]): its
//! [`Identity`], where it came from ([`Remote`]: the transport, the peer's address, the trace
//! context received beside the message), its TLS client certificate and the transport's
//! metadata (an HTTP request's headers).
//!
//! The core never sees a credential: a transport turns what it has (HTTP headers, a WebSocket
//! upgrade request, a TLS peer certificate, or for stdio and serial the trust of the local
//! process) into an identity before any session or handler state exists for the caller
//! ([`Service::admit`](crate::Service::admit)).

use std::any::Any;
use std::fmt;
use std::net::SocketAddr;
use std::sync::Arc;

use rpcwire_telemetry::{Remote, TraceContext, Transport};

use crate::auth::{Credentials, PeerCertificate};
use crate::identity::Identity;

/// Everything known about the caller of a message: its [`Identity`], the transport, the
/// peer's address, its TLS client certificate, and transport-specific metadata (the HTTP
/// transport puts the request's `http::HeaderMap` there, read with [`Caller::meta`]). One per
/// connection on stream transports, one per request on HTTP.
#[derive(Clone)]
pub struct Caller {
    identity: Identity,
    /// The transport, the peer, and the W3C trace context the transport received (HTTP
    /// headers), the parent of the calls' spans.
    remote: Remote,
    certificate: Option<Arc<PeerCertificate>>,
    meta: Option<Meta>,
}

/// A caller's transport metadata: made already, or made when first read.
#[derive(Clone)]
enum Meta {
    Made(Arc<dyn Any + Send + Sync>),
    Lazy(Arc<dyn LazyMeta>),
}

/// Transport metadata made only when something reads it: the HTTP fast path keeps a
/// request's head as bytes and makes its `http::HeaderMap` for a handler that asks, so that
/// a request nobody asks about costs no header map.
pub trait LazyMeta: Any + Send + Sync {
    /// The metadata (made on the first call, kept after).
    fn get(&self) -> &(dyn Any + Send + Sync);
}

impl Caller {
    /// A caller with this identity over `transport`.
    pub fn new(identity: Identity, transport: Transport) -> Self {
        Caller {
            identity,
            remote: Remote::new(transport),
            certificate: None,
            meta: None,
        }
    }

    /// The caller these credentials name, as `identity`: the transport, the peer and the
    /// certificate carried over.
    pub fn from_credentials(identity: Identity, credentials: &Credentials<'_>) -> Self {
        let mut caller = Caller::new(identity, credentials.transport);
        if let Some(peer) = credentials.peer {
            caller = caller.with_peer(peer);
        }
        if let Some(certificate) = credentials.certificate {
            caller = caller.with_certificate(certificate.clone());
        }
        caller
    }

    /// An anonymous caller over an unnamed transport: what a connection without an
    /// authenticator has.
    pub fn anonymous() -> Self {
        Caller::new(Identity::anonymous(), Transport::OTHER)
    }

    /// The local process over `transport` (stdio, a child's pipes, a serial line).
    pub fn local(transport: Transport) -> Self {
        Caller::new(Identity::local(), transport)
    }

    /// Over another transport (a WebSocket upgraded from the HTTP request that let it in).
    pub fn with_transport(mut self, transport: Transport) -> Self {
        self.remote = self.remote.with_transport(transport);
        self
    }

    /// With the peer's network address.
    pub fn with_peer(mut self, peer: SocketAddr) -> Self {
        self.remote = self.remote.with_peer(peer);
        self
    }

    /// With the local address the connection arrived at (a server's; the spans'
    /// `server.address` and `server.port`).
    pub fn with_local(mut self, local: SocketAddr) -> Self {
        self.remote = self.remote.with_local(local);
        self
    }

    /// Over another version of the transport's protocol (HTTP/2 for a transport over
    /// HTTP/1.1; see [`Transport::over`](rpcwire_telemetry::Transport::over)).
    pub fn with_protocol_version(mut self, version: &'static str) -> Self {
        self.remote = self.remote.with_protocol_version(version);
        self
    }

    /// With the peer's verified TLS client certificate.
    pub fn with_certificate(mut self, certificate: PeerCertificate) -> Self {
        self.certificate = Some(Arc::new(certificate));
        self
    }

    /// With transport-specific metadata (read back with [`Caller::meta`]).
    pub fn with_meta<T: Any + Send + Sync>(mut self, meta: T) -> Self {
        self.meta = Some(Meta::Made(Arc::new(meta)));
        self
    }

    /// With transport metadata made when first read ([`LazyMeta::get`]'s value is what
    /// [`Caller::meta`] finds).
    pub fn with_lazy_meta<T: LazyMeta>(mut self, meta: T) -> Self {
        self.meta = Some(Meta::Lazy(Arc::new(meta)));
        self
    }

    /// The lazy metadata given with [`Caller::with_lazy_meta`], if it is a `T` held by this
    /// caller alone: a transport that reuses a caller for its next request renews it in place.
    pub fn lazy_meta_mut<T: LazyMeta>(&mut self) -> Option<&mut T> {
        match self.meta.as_mut()? {
            Meta::Lazy(lazy) => {
                let lazy: &mut dyn Any = Arc::get_mut(lazy)?;
                lazy.downcast_mut()
            }
            Meta::Made(_) => None,
        }
    }

    /// With the W3C trace context the request came with (its `traceparent` and `tracestate`
    /// headers): the parent of its calls' spans (see [`trace_context`](rpcwire_telemetry::trace_context)).
    pub fn with_trace_context(mut self, trace: TraceContext) -> Self {
        self.remote = self.remote.with_trace_context(trace);
        self
    }

    /// Without the trace context (a batch's calls: their parent is the batch's span).
    pub fn without_trace_context(mut self) -> Self {
        self.remote = self.remote.without_trace_context();
        self
    }

    /// The W3C trace context the transport received, if any.
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.remote.trace_context()
    }

    /// With another identity (what an [`Authenticator`](crate::Authenticator) established).
    pub fn with_identity(mut self, identity: Identity) -> Self {
        self.identity = identity;
        self
    }

    /// Who the caller is.
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// The transport the call came over.
    pub fn transport(&self) -> Transport {
        self.remote.transport()
    }

    /// The peer's network address, where the transport has one.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.remote.peer()
    }

    /// Where the caller came from, as telemetry reports it.
    pub fn remote(&self) -> &Remote {
        &self.remote
    }

    /// The peer's verified TLS client certificate, with mutual TLS.
    pub fn certificate(&self) -> Option<&PeerCertificate> {
        self.certificate.as_deref()
    }

    /// The transport's metadata, if it is a `T` (the HTTP transport: `http::HeaderMap`).
    pub fn meta<T: Any + Send + Sync>(&self) -> Option<&T> {
        let meta: &dyn Any = match self.meta.as_ref()? {
            Meta::Made(made) => &**made,
            Meta::Lazy(lazy) => lazy.get(),
        };
        meta.downcast_ref()
    }
}

impl Default for Caller {
    fn default() -> Self {
        Caller::anonymous()
    }
}

impl fmt::Debug for Caller {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Caller")
            .field("identity", &self.identity)
            .field("transport", &self.remote.transport())
            .field("peer", &self.remote.peer())
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}
