//! Verification keys from a JWKS URL (feature `jwks`): a [`KeySource`] for
//! [`JwtAuthenticator`](rpcwire_tokio::jwt::JwtAuthenticator) that fetches an authorization
//! server's JSON Web Key Set over `http://` or `https://` (feature `tls`) with the crate's
//! pooled client, keeps it, and fetches it again:
//!
//! - when it is older than the refresh period (default 10 min), on the next verification
//!   that needs a key (a failed refresh keeps the keys held, and is tried again after the
//!   least interval);
//! - when a token names a `kid` the held set lacks (key rotation): the authenticator asks,
//!   and the fetch happens at most once per least interval (default 10 s), so a flood of
//!   tokens with made-up `kid`s cannot make the server fetch in a loop.
//!
//! One fetch runs at a time; verifications that need the keys meanwhile wait for it. A
//! document over the size limit (default 64 KiB), a status other than 200, or a body that is
//! not a key set is refused ([`JwksError`]), and a caller then gets 503 (authentication
//! unavailable) rather than a verdict. Verified tokens are cached by the authenticator, so a
//! keep-alive caller costs no key lookup per call.
//!
//! ```no_run
//! use rpcwire_http::jwks::JwksKeys;
//! use rpcwire_tokio::jwt::JwtAuthenticator;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = JwksKeys::new("https://auth.example.com/.well-known/jwks.json")?;
//! let auth = JwtAuthenticator::new(keys)
//!     .issuer("https://auth.example.com")
//!     .audience("https://rpc.example.com/mcp");
//! let builder = rpcwire_tokio::Builder::new().map_service(|s| s.authenticator(auth));
//! # drop(builder);
//! # Ok(()) }
//! ```

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use rpcwire_tokio::jwt::jsonwebtoken::jwk::JwkSet;
use rpcwire_tokio::jwt::{KeySource, KeysFuture};
use rpcwire_tokio::AuthError;

use crate::connect::{error_chain, hyper_client, no_tls, parse_url, HyperClient, Tls, UrlError};

/// The default limit on a JWKS document (64 KiB: a few dozen keys).
pub const DEFAULT_MAX_JWKS_BYTES: usize = 64 << 10;
/// The default period after which the key set is fetched again (10 min).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(600);
/// The default least time between two fetches (10 s).
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(10);
/// The default time a fetch may take (5 s).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a key set could not be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The URL is not an `http://` (or, with `tls`, `https://`) URL.
    #[error(transparent)]
    Url(#[from] UrlError),
    /// The TLS settings were refused.
    #[error(transparent)]
    Tls(#[from] crate::connect::TlsError),
    /// The request failed (connection refused, a certificate not trusted...).
    #[error("JWKS request failed: {0}")]
    Request(String),
    /// The fetch took longer than its timeout.
    #[error("JWKS request timed out")]
    TimedOut,
    /// The server answered with another status than 200.
    #[error("JWKS request answered {0}")]
    Status(StatusCode),
    /// The document is larger than the limit.
    #[error("JWKS document larger than {0} bytes")]
    TooLarge(usize),
    /// The document is not a JSON Web Key Set.
    #[error("not a JWKS document: {0}")]
    Invalid(String),
    /// A fetch failed not long ago: the next try waits for the least interval.
    #[error("no JWKS keys yet (the last fetch failed; the next try waits)")]
    NotYet,
}

/// The key set held, and when it was last fetched (or tried).
#[derive(Default)]
struct Held {
    keys: Option<Arc<JwkSet>>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

/// Keys from a JWKS URL (see the module documentation). Cheap to clone (shared).
#[derive(Clone)]
pub struct JwksKeys {
    inner: Arc<Inner>,
}

struct Inner {
    url: Uri,
    client: HyperClient,
    max_bytes: usize,
    refresh: Duration,
    min_interval: Duration,
    timeout: Duration,
    held: Mutex<Held>,
    /// One fetch at a time: the others wait and take its result.
    fetching: tokio::sync::Mutex<()>,
    fetches: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for JwksKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksKeys")
            .field("url", &self.inner.url)
            .field("max_bytes", &self.inner.max_bytes)
            .field("refresh", &self.inner.refresh)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`JwksKeys`].
#[derive(Debug, Clone)]
pub struct JwksKeysBuilder {
    url: String,
    tls: Tls,
    max_bytes: usize,
    refresh: Duration,
    min_interval: Duration,
    timeout: Duration,
}

impl JwksKeysBuilder {
    /// Trust these TLS settings for an `https://` URL (feature `tls`; default: Mozilla's
    /// roots).
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// The largest JWKS document read (default 64 KiB); a larger one is refused.
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// How old the key set may grow before it is fetched again (default 10 min).
    pub fn refresh(mut self, every: Duration) -> Self {
        self.refresh = every;
        self
    }

    /// The least time between two fetches (default 10 s): bounds the fetches a flood of
    /// unknown `kid`s, or an authorization server that is down, can cause.
    pub fn min_interval(mut self, interval: Duration) -> Self {
        self.min_interval = interval;
        self
    }

    /// How long a fetch may take (default 5 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The key source (fetches nothing yet: the first verification does).
    pub fn build(self) -> Result<JwksKeys, JwksError> {
        let url = parse_url(&self.url)?;
        let client = hyper_client::<crate::connect::TlsError>(self.tls)?;
        Ok(JwksKeys {
            inner: Arc::new(Inner {
                url,
                client,
                max_bytes: self.max_bytes,
                refresh: self.refresh,
                min_interval: self.min_interval,
                timeout: self.timeout,
                held: Mutex::new(Held::default()),
                fetching: tokio::sync::Mutex::new(()),
                fetches: std::sync::atomic::AtomicU64::new(0),
            }),
        })
    }
}

impl JwksKeys {
    /// Keys from `url` with the default settings.
    pub fn new(url: &str) -> Result<Self, JwksError> {
        Self::builder(url).build()
    }

    /// Settings for keys from `url`.
    pub fn builder(url: &str) -> JwksKeysBuilder {
        JwksKeysBuilder {
            url: url.to_owned(),
            tls: no_tls(),
            max_bytes: DEFAULT_MAX_JWKS_BYTES,
            refresh: DEFAULT_REFRESH,
            min_interval: DEFAULT_MIN_INTERVAL,
            timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }

    /// How many fetches were made (successful or not).
    pub fn fetches(&self) -> u64 {
        self.inner
            .fetches
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The key set: the one held while fresh (`refresh` false), fetched again when it is
    /// stale or `refresh` asks, at most once per least interval.
    pub async fn get(&self, refresh: bool) -> Result<Arc<JwkSet>, JwksError> {
        let inner = &self.inner;
        if let Some(keys) = inner.usable(refresh) {
            return Ok(keys);
        }
        let _one = inner.fetching.lock().await;
        // Another fetch may have ended while this one waited.
        if let Some(keys) = inner.usable(refresh) {
            return Ok(keys);
        }
        let held = inner.held();
        let may_try = held
            .tried
            .is_none_or(|at| at.elapsed() >= inner.min_interval);
        if !may_try {
            // Too soon to fetch again: the keys held, stale or not, or none yet.
            return held.keys.ok_or(JwksError::NotYet);
        }
        inner.set(|h| h.tried = Some(Instant::now()));
        inner
            .fetches
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        match tokio::time::timeout(inner.timeout, inner.fetch()).await {
            Ok(Ok(keys)) => {
                let keys = Arc::new(keys);
                inner.set(|h| {
                    h.keys = Some(Arc::clone(&keys));
                    h.fetched = Some(Instant::now());
                });
                Ok(keys)
            }
            Ok(Err(e)) => inner.fall_back(e, held.keys),
            Err(_elapsed) => inner.fall_back(JwksError::TimedOut, held.keys),
        }
    }
}

struct Snapshot {
    keys: Option<Arc<JwkSet>>,
    tried: Option<Instant>,
}

impl Inner {
    fn held(&self) -> Snapshot {
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        Snapshot {
            keys: held.keys.clone(),
            tried: held.tried,
        }
    }

    fn set(&self, f: impl FnOnce(&mut Held)) {
        f(&mut self.held.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The keys held, if fresh and no refresh is asked for.
    fn usable(&self, refresh: bool) -> Option<Arc<JwkSet>> {
        if refresh {
            return None;
        }
        let held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        let fresh = held.fetched.is_some_and(|at| at.elapsed() < self.refresh);
        held.keys.clone().filter(|_| fresh)
    }

    /// A failed fetch: the keys held go on serving (logged); with none, the error.
    fn fall_back(
        &self,
        error: JwksError,
        held: Option<Arc<JwkSet>>,
    ) -> Result<Arc<JwkSet>, JwksError> {
        tracing::warn!(url = %self.url, %error, "JWKS fetch failed");
        held.ok_or(error)
    }

    async fn fetch(&self) -> Result<JwkSet, JwksError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(self.url.clone())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .body(Full::new(Bytes::new()))
            .map_err(|e| JwksError::Request(e.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| JwksError::Request(error_chain(&e)))?;
        if response.status() != StatusCode::OK {
            return Err(JwksError::Status(response.status()));
        }
        let declared = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > self.max_bytes as u64) {
            return Err(JwksError::TooLarge(self.max_bytes));
        }
        let body = http_body_util::Limited::new(response.into_body(), self.max_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    JwksError::TooLarge(self.max_bytes)
                } else {
                    JwksError::Request(e.to_string())
                }
            })?
            .to_bytes();
        serde_json::from_slice(&body).map_err(|e| JwksError::Invalid(e.to_string()))
    }
}

impl KeySource for JwksKeys {
    fn keys(&self, refresh: bool) -> KeysFuture<'_> {
        Box::pin(async move {
            self.get(refresh)
                .await
                .map_err(|e| AuthError::Unavailable(e.to_string()))
        })
    }
}
