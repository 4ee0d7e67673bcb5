//! Authentication at a transport's edge: what a transport knows about a caller before it is
//! let in ([`Credentials`]), the [`Authenticator`] that turns it into an
//! [`Identity`](crate::Identity), and the built-in schemes: static API keys and bearer tokens
//! (feature `auth`), JWT access tokens (feature `jwt`), signed and replay-proof requests
//! (feature `auth`, module `signing`).

use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;

use rpcwire_telemetry::Transport;

use crate::identity::Identity;

#[cfg(feature = "jwt")]
pub mod jwt;
#[cfg(feature = "auth")]
pub mod signing;
#[cfg(feature = "auth")]
pub(crate) mod tokens;

#[cfg(feature = "auth")]
pub use tokens::{StaticTokens, TokenFileError, TokenTableError, MAX_TOKEN_LEN};

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
/// use rpcwire_service::{AuthError, AuthFuture, Authenticator, Credentials, Identity};
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

    /// Whether it can let callers in now (a server's readiness probe asks): `false` while
    /// what it needs has never been had (a JWT authenticator's key set never fetched: asking
    /// fetches it). Always ready by default.
    fn ready(&self) -> ReadyFuture<'_> {
        Box::pin(std::future::ready(true))
    }
}

/// What [`Authenticator::ready`] returns.
pub type ReadyFuture<'a> = Pin<Box<dyn Future<Output = bool> + Send + 'a>>;

#[cfg(test)]
mod tests {
    use super::*;

    const HTTP: Transport = Transport::new("http", "tcp");

    #[test]
    fn bearer_tokens_are_read_strictly() {
        let headers = [("Authorization", "Bearer abc.DEF-123_~+/=")];
        let creds = Credentials {
            headers: &headers,
            ..Credentials::new(HTTP, None)
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
                ..Credentials::new(HTTP, None)
            };
            assert_eq!(creds.bearer(), Err(AuthError::Malformed), "{bad:?}");
        }
        assert_eq!(Credentials::new(HTTP, None).bearer(), Ok(None));
        assert_eq!(bearer_token(b"bearer  tok"), Ok("tok"));
        assert_eq!(bearer_token(&[0xff, 0xfe]), Err(AuthError::Malformed));
    }

    #[test]
    fn debug_output_shows_no_headers() {
        let headers = [("authorization", "Bearer topsecret")];
        let creds = Credentials {
            headers: &headers,
            ..Credentials::new(HTTP, None)
        };
        assert!(!format!("{creds:?}").contains("topsecret"));
    }
}
