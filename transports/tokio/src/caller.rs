//! Who is calling: the caller's [`Identity`], established once per connection (or per HTTP
//! request) at the transport's edge by an [`Authenticator`], and what the transport knows
//! about the call ([`Caller`]). Handlers read both from their
//! [`Context`](crate::Context); the router's access rules ([`Router::require`](crate::Router::require))
//! decide from the identity which methods a caller may call.
//!
//! The core never sees a credential: a transport turns what it has (HTTP headers, a WebSocket
//! upgrade request, a TLS peer certificate, or for stdio and serial the trust of the local
//! process) into an identity before any session or handler state exists for the caller.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::SystemTime;

/// Who a caller is: a subject, the roles (or OAuth scopes) it holds, and the claims it was
/// established with. Cheap to clone (shared).
///
/// ```
/// use rpcwire_tokio::Identity;
/// let alice = Identity::new("alice").with_roles(["user", "admin"]);
/// assert!(alice.has_role("admin"));
/// assert!(alice.is_authenticated());
/// assert!(!Identity::anonymous().is_authenticated());
/// ```
#[derive(Clone, PartialEq)]
pub struct Identity(Arc<IdentityInner>);

#[derive(Clone, PartialEq)]
struct IdentityInner {
    subject: Box<str>,
    roles: Box<[Box<str>]>,
    claims: serde_json::Value,
    kind: Kind,
    /// When the credentials it was established with stop being valid.
    expires: Option<SystemTime>,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Anonymous,
    Authenticated,
    /// The local process (stdio, a serial line, a child process): passes every role check.
    Local,
}

impl Identity {
    /// An authenticated identity named `subject`, with no roles yet.
    pub fn new(subject: impl Into<String>) -> Self {
        Identity::build(
            subject.into(),
            Vec::new(),
            serde_json::Value::Null,
            Kind::Authenticated,
        )
    }

    /// Nobody in particular: the identity of a caller on a transport with no authenticator.
    /// It holds no role, so a method that requires one is refused to it.
    pub fn anonymous() -> Self {
        // One shared value: every unauthenticated connection holds the same one.
        static ANONYMOUS: std::sync::OnceLock<Identity> = std::sync::OnceLock::new();
        ANONYMOUS
            .get_or_init(|| {
                Identity::build(
                    "anonymous".to_owned(),
                    Vec::new(),
                    serde_json::Value::Null,
                    Kind::Anonymous,
                )
            })
            .clone()
    }

    /// The local process at the other end of stdio, a serial line or a child process's pipes:
    /// trusted as the process itself is, so it passes every role check (a
    /// [`Router::policy`](crate::Router::policy) function still sees it and may refuse).
    pub fn local() -> Self {
        Identity::build(
            "local".to_owned(),
            Vec::new(),
            serde_json::Value::Null,
            Kind::Local,
        )
    }

    fn build(subject: String, roles: Vec<Box<str>>, claims: serde_json::Value, kind: Kind) -> Self {
        Identity(Arc::new(IdentityInner {
            subject: subject.into_boxed_str(),
            roles: roles.into_boxed_slice(),
            claims,
            kind,
            expires: None,
        }))
    }

    /// This identity with `roles` (or scopes) added.
    pub fn with_roles<I, S>(self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let inner = Arc::unwrap_or_clone(self.0);
        let mut all = inner.roles.into_vec();
        for role in roles {
            let role: Box<str> = role.into().into_boxed_str();
            if !all.contains(&role) {
                all.push(role);
            }
        }
        let expires = inner.expires;
        Identity::build(inner.subject.into_string(), all, inner.claims, inner.kind)
            .expiring(expires)
    }

    /// This identity with the claims it was established with (a JWT's payload, say).
    pub fn with_claims(self, claims: serde_json::Value) -> Self {
        let inner = Arc::unwrap_or_clone(self.0);
        Identity::build(
            inner.subject.into_string(),
            inner.roles.into_vec(),
            claims,
            inner.kind,
        )
        .expiring(inner.expires)
    }

    /// This identity, valid until `at` (a JWT's `exp`, say): a transport that keeps an
    /// identity for a connection's later requests ([`Authenticator::credential_header`]) asks
    /// its authenticator again from then on.
    pub fn with_expiry(self, at: SystemTime) -> Self {
        self.expiring(Some(at))
    }

    fn expiring(self, expires: Option<SystemTime>) -> Self {
        if self.0.expires == expires {
            return self;
        }
        let mut inner = Arc::unwrap_or_clone(self.0);
        inner.expires = expires;
        Identity(Arc::new(inner))
    }

    /// When the credentials this identity was established with stop being valid (`None`:
    /// not known to expire).
    pub fn expires(&self) -> Option<SystemTime> {
        self.0.expires
    }

    /// The subject: a user, a service, a certificate's subject.
    pub fn subject(&self) -> &str {
        &self.0.subject
    }

    /// The roles or scopes held.
    pub fn roles(&self) -> impl Iterator<Item = &str> {
        self.0.roles.iter().map(|r| &**r)
    }

    /// True when this identity holds `role` (the local process holds every role).
    pub fn has_role(&self, role: &str) -> bool {
        self.0.kind == Kind::Local || self.0.roles.iter().any(|r| &**r == role)
    }

    /// True when it holds at least one of `roles` (an empty list: true).
    pub fn has_any_role<S: AsRef<str>>(&self, roles: &[S]) -> bool {
        roles.is_empty() || roles.iter().any(|r| self.has_role(r.as_ref()))
    }

    /// The claims it was established with (`null` when none).
    pub fn claims(&self) -> &serde_json::Value {
        &self.0.claims
    }

    /// False for [`Identity::anonymous`], true otherwise.
    pub fn is_authenticated(&self) -> bool {
        self.0.kind != Kind::Anonymous
    }

    /// True for [`Identity::local`].
    pub fn is_local(&self) -> bool {
        self.0.kind == Kind::Local
    }
}

impl Default for Identity {
    fn default() -> Self {
        Identity::anonymous()
    }
}

/// The claims are left out: they may hold what a log must not show.
impl fmt::Debug for Identity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("subject", &self.0.subject)
            .field("roles", &self.0.roles)
            .field("kind", &self.0.kind)
            .field("expires", &self.0.expires)
            .finish()
    }
}

/// The kind of transport a call came over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Transport {
    /// This process's stdin and stdout.
    Stdio,
    /// A child process's pipes.
    ChildProcess,
    /// A plain TCP connection.
    Tcp,
    /// TCP with TLS.
    Tls,
    /// An HTTP request (POST or an event stream).
    Http,
    /// A WebSocket connection.
    WebSocket,
    /// A serial line.
    Serial,
    /// An in-memory pipe, or a stream the application gave ([`Builder::run`](crate::Builder::run)).
    Other,
}

impl Transport {
    /// The OpenTelemetry `network.transport` value: `tcp` for TCP, TLS, HTTP and WebSocket,
    /// `pipe` for the others (stdio, child processes, serial lines, in-memory links).
    pub fn network_transport(self) -> &'static str {
        match self {
            Transport::Tcp | Transport::Tls | Transport::Http | Transport::WebSocket => "tcp",
            _ => "pipe",
        }
    }
}

/// A verified TLS client certificate (mutual TLS): its subject and subject alternative names,
/// and the DER bytes for anything else.
#[derive(Clone, PartialEq, Eq)]
pub struct PeerCertificate {
    /// The subject's distinguished name (`CN=client,O=Example`).
    pub subject: String,
    /// The subject alternative names (DNS names, IP addresses, e-mail addresses, URIs).
    pub sans: Vec<String>,
    /// The certificate as received (DER).
    pub der: Vec<u8>,
}

impl fmt::Debug for PeerCertificate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PeerCertificate")
            .field("subject", &self.subject)
            .field("sans", &self.sans)
            .field("der_len", &self.der.len())
            .finish()
    }
}

/// Everything known about the caller of a message: its [`Identity`], the transport, the
/// peer's address, its TLS client certificate, and transport-specific metadata (the HTTP
/// transport puts the request's `http::HeaderMap` there, read with [`Caller::meta`]). One per
/// connection on stream transports, one per request on HTTP.
#[derive(Clone)]
pub struct Caller {
    identity: Identity,
    transport: Transport,
    peer: Option<SocketAddr>,
    certificate: Option<Arc<PeerCertificate>>,
    meta: Option<Meta>,
    /// The W3C trace context the transport received (HTTP headers), the parent of the calls'
    /// spans.
    trace: Option<Arc<crate::trace_context::TraceContext>>,
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
            transport,
            peer: None,
            certificate: None,
            meta: None,
            trace: None,
        }
    }

    /// An anonymous caller over an unnamed transport: what a connection without an
    /// authenticator has.
    pub fn anonymous() -> Self {
        Caller::new(Identity::anonymous(), Transport::Other)
    }

    /// The local process over `transport` (stdio, a child's pipes, a serial line).
    pub fn local(transport: Transport) -> Self {
        Caller::new(Identity::local(), transport)
    }

    /// With the peer's network address.
    pub fn with_peer(mut self, peer: SocketAddr) -> Self {
        self.peer = Some(peer);
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
    /// headers): the parent of its calls' spans (see [`trace_context`](crate::trace_context)).
    pub fn with_trace_context(mut self, trace: crate::trace_context::TraceContext) -> Self {
        self.trace = Some(Arc::new(trace));
        self
    }

    /// Without the trace context (a batch's calls: their parent is the batch's span).
    pub fn without_trace_context(mut self) -> Self {
        self.trace = None;
        self
    }

    /// The W3C trace context the transport received, if any.
    pub fn trace_context(&self) -> Option<&crate::trace_context::TraceContext> {
        self.trace.as_deref()
    }

    /// With another identity (what an [`Authenticator`] established).
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
        self.transport
    }

    /// The peer's network address, where the transport has one.
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.peer
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
            .field("transport", &self.transport)
            .field("peer", &self.peer)
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

/// Header lookup for an [`Authenticator`]: what an HTTP request or a WebSocket upgrade
/// carried. Names are compared without regard to case.
pub trait Headers: Sync {
    /// The first value of the header `name`, as bytes.
    fn get(&self, name: &str) -> Option<&[u8]>;
}

/// No headers (a stream transport).
impl Headers for () {
    fn get(&self, _name: &str) -> Option<&[u8]> {
        None
    }
}

fn find_pair<'a, N: AsRef<str>, V: AsRef<[u8]>>(
    pairs: &'a [(N, V)],
    name: &str,
) -> Option<&'a [u8]> {
    pairs
        .iter()
        .find(|(n, _)| n.as_ref().eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_ref())
}

/// Header pairs in an array (tests, and transports that keep their own list).
impl<N: AsRef<str> + Sync, V: AsRef<[u8]> + Sync, const K: usize> Headers for [(N, V); K] {
    fn get(&self, name: &str) -> Option<&[u8]> {
        find_pair(self, name)
    }
}

/// Header pairs in a vector.
impl<N: AsRef<str> + Sync, V: AsRef<[u8]> + Sync> Headers for Vec<(N, V)> {
    fn get(&self, name: &str) -> Option<&[u8]> {
        find_pair(self, name)
    }
}

/// What a transport knows about a caller before it is let in, handed to an
/// [`Authenticator`].
#[derive(Clone, Copy)]
pub struct Credentials<'a> {
    /// The transport.
    pub transport: Transport,
    /// The peer's network address.
    pub peer: Option<SocketAddr>,
    /// The request's (or WebSocket upgrade's) headers; none on stream transports.
    pub headers: &'a dyn Headers,
    /// The peer's verified TLS client certificate, with mutual TLS.
    pub certificate: Option<&'a PeerCertificate>,
}

impl<'a> Credentials<'a> {
    /// Credentials with no headers and no certificate.
    pub fn new(transport: Transport, peer: Option<SocketAddr>) -> Self {
        Credentials {
            transport,
            peer,
            headers: &(),
            certificate: None,
        }
    }

    /// The token of an `Authorization: Bearer <token>` header (scheme compared without
    /// regard to case).
    ///
    /// - `Ok(None)`: no `Authorization` header;
    /// - `Err(AuthError::Malformed)`: a header that is not a bearer token (another scheme,
    ///   no token, bytes that are not a token's).
    pub fn bearer(&self) -> Result<Option<&'a str>, AuthError> {
        let Some(value) = self.headers.get("authorization") else {
            return Ok(None);
        };
        bearer_token(value).map(Some)
    }
}

/// The bytes of RFC 6750's `b64token`: letters, digits and `-._~+/=`. A table, as a token is
/// checked on every request and may be a kilobyte long.
const B64TOKEN: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 256 {
        let c = b as u8;
        table[b] = c.is_ascii_alphanumeric()
            || matches!(c, b'-' | b'.' | b'_' | b'~' | b'+' | b'/' | b'=');
        b += 1;
    }
    table
};

/// The token of an `Authorization` value `Bearer <token>` (RFC 6750: `b64token` characters,
/// one space after the scheme; surrounding spaces tolerated).
pub(crate) fn bearer_token(value: &[u8]) -> Result<&str, AuthError> {
    let text = std::str::from_utf8(value).map_err(|_| AuthError::Malformed)?;
    let text = text.trim_matches(' ');
    let (scheme, token) = text.split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed);
    }
    let token = token.trim_start_matches(' ');
    if token.is_empty() || !token.bytes().all(|b| B64TOKEN[usize::from(b)]) {
        return Err(AuthError::Malformed);
    }
    Ok(token)
}

impl fmt::Debug for Credentials<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Headers left out: they carry the credentials themselves.
        f.debug_struct("Credentials")
            .field("transport", &self.transport)
            .field("peer", &self.peer)
            .field("certificate", &self.certificate)
            .finish_non_exhaustive()
    }
}

/// Why a caller was not let in. The transport answers with a generic refusal (HTTP 401 with
/// `WWW-Authenticate`, a closed connection); the reason goes to the server's log only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// No credentials at all.
    #[error("no credentials")]
    Missing,
    /// Credentials in a form this authenticator does not read (a malformed header).
    #[error("malformed credentials")]
    Malformed,
    /// Credentials that are not valid (unknown token, bad signature, wrong audience or
    /// issuer, refused algorithm).
    #[error("invalid credentials: {0}")]
    Invalid(&'static str),
    /// Credentials that have expired (or are not valid yet).
    #[error("expired credentials")]
    Expired,
    /// The authenticator could not decide (its key set could not be fetched, say).
    #[error("authentication unavailable: {0}")]
    Unavailable(String),
}

/// A boxed future, as [`Authenticator::authenticate`] returns.
pub type AuthFuture<'a> = Pin<Box<dyn Future<Output = Result<Identity, AuthError>> + Send + 'a>>;

/// Turns what a transport knows about a caller into an [`Identity`], once per connection or
/// HTTP request, before any session or handler state is created for the caller. Implement
/// it for any scheme; `StaticTokens` (feature `auth`) is the built-in one for API keys
/// and bearer tokens.
///
/// ```
/// use rpcwire_tokio::{AuthError, AuthFuture, Authenticator, Credentials, Identity};
///
/// /// Lets in callers from loopback addresses only.
/// struct LoopbackOnly;
///
/// impl Authenticator for LoopbackOnly {
///     fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
///         let loopback = credentials.peer.is_some_and(|p| p.ip().is_loopback());
///         Box::pin(async move {
///             if loopback { Ok(Identity::new("loopback")) } else { Err(AuthError::Invalid("not loopback")) }
///         })
///     }
/// }
/// ```
pub trait Authenticator: Send + Sync + 'static {
    /// The caller's identity, or why it is refused.
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a>;

    /// The one request header (lower-case name) whose value alone decides this
    /// authenticator's answer, if there is one (`authorization` for a bearer token).
    ///
    /// With `Some`, a transport may keep an identity this authenticator gave for the exact
    /// bytes of that header's value and give it to later requests on the same connection
    /// that carry the same bytes, until the identity's [`Identity::expires`], without asking
    /// again: a keep-alive connection then pays a byte comparison per request. `None` (the
    /// default): every request is authenticated.
    fn credential_header(&self) -> Option<&str> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roles_are_added_once_and_the_local_process_holds_every_role() {
        let id = Identity::new("alice")
            .with_roles(["user"])
            .with_roles(["user", "admin"]);
        assert_eq!(id.roles().collect::<Vec<_>>(), ["user", "admin"]);
        assert!(id.has_any_role(&["ops", "admin"]));
        assert!(!id.has_any_role(&["ops"]));
        assert!(Identity::local().has_role("anything"));
        assert!(!Identity::anonymous().has_role("user"));
        assert!(Identity::anonymous().has_any_role::<&str>(&[]));
    }

    #[test]
    fn bearer_tokens_are_read_strictly() {
        let headers = [("Authorization", "Bearer abc.DEF-123_~+/=")];
        let creds = Credentials {
            headers: &headers,
            ..Credentials::new(Transport::Http, None)
        };
        assert_eq!(creds.bearer(), Ok(Some("abc.DEF-123_~+/=")));
        for bad in [
            "Basic dXNlcjpwYXNz",
            "Bearer",
            "Bearer ",
            "Bearer a b",
            "Bearer tök",
            "Bearerabc",
        ] {
            let headers = [("authorization", bad)];
            let creds = Credentials {
                headers: &headers,
                ..Credentials::new(Transport::Http, None)
            };
            assert_eq!(creds.bearer(), Err(AuthError::Malformed), "{bad:?}");
        }
        assert_eq!(Credentials::new(Transport::Tcp, None).bearer(), Ok(None));
        assert_eq!(bearer_token(b"bearer  tok"), Ok("tok"));
        assert_eq!(bearer_token(&[0xff, 0xfe]), Err(AuthError::Malformed));
    }

    #[test]
    fn debug_output_shows_no_claims_or_headers() {
        let id = Identity::new("bob").with_claims(serde_json::json!({"secret": "x"}));
        assert!(!format!("{id:?}").contains("secret"));
        let headers = [("authorization", "Bearer topsecret")];
        let creds = Credentials {
            headers: &headers,
            ..Credentials::new(Transport::Http, None)
        };
        assert!(!format!("{creds:?}").contains("topsecret"));
    }
}
