//! JWT access tokens (feature `jwt`): an [`Authenticator`] that verifies
//! `Authorization: Bearer <JWT>` with the `jsonwebtoken` crate against a key set ([`KeySource`]:
//! fixed keys, [`StaticKeys`], or an authorization server's JSON Web Key Set, [`JwksKeys`]),
//! checks `iss`, `aud`, `exp` and `nbf` with a small leeway, and caches a verified token for
//! its lifetime so a keep-alive connection does not verify it per call.
//!
//! Refused: `alg: none` (not an algorithm the crate reads), any algorithm not allowed
//! (RS256, ES256 and EdDSA by default; HS256 only with a configured shared secret, and then
//! checked only against that secret, so a public key can never be used as an HMAC secret),
//! a key whose type does not match the token's algorithm, an unknown `kid` (after one
//! refresh of the key set), a bad signature, a wrong issuer or audience, an expired token or
//! one not valid yet.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use crate::auth::{AuthError, AuthFuture, Authenticator, Credentials};
use crate::identity::Identity;

pub use jsonwebtoken;

/// A boxed future of a key set.
pub type KeysFuture<'a> = Pin<Box<dyn Future<Output = Result<Arc<JwkSet>, AuthError>> + Send + 'a>>;

/// Where the verification keys come from: a fixed set, or a JWKS URL (`rpcwire-http`).
pub trait KeySource: Send + Sync + 'static {
    /// The key set: the one held when `refresh` is false (fetched the first time), fetched
    /// again when true (a token names a `kid` the held set lacks).
    fn keys(&self, refresh: bool) -> KeysFuture<'_>;
}

/// A fixed key set.
#[derive(Debug, Clone)]
pub struct StaticKeys(pub Arc<JwkSet>);

impl KeySource for StaticKeys {
    fn keys(&self, _refresh: bool) -> KeysFuture<'_> {
        let keys = Arc::clone(&self.0);
        Box::pin(async move { Ok(keys) })
    }
}

/// The default limit on a JWKS document (64 KiB: a few dozen keys).
pub const DEFAULT_MAX_JWKS_BYTES: usize = 64 << 10;
/// The default period after which a JWKS document is fetched again (10 min).
pub const DEFAULT_REFRESH: Duration = Duration::from_secs(600);
/// The default least time between two fetches of a JWKS document (10 s).
pub const DEFAULT_MIN_INTERVAL: Duration = Duration::from_secs(10);
/// The default time a fetch of a JWKS document may take (5 s).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// Why a JSON Web Key Set could not be had.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwksError {
    /// The request failed (connection refused, a certificate not trusted...).
    #[error("JWKS request failed: {0}")]
    Request(String),
    /// The fetch took longer than its timeout.
    #[error("JWKS request timed out")]
    TimedOut,
    /// The server answered with another status than 200.
    #[error("JWKS request answered {0}")]
    Status(u16),
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

/// A boxed future of a JWKS document's bytes, as [`FetchJwks::fetch`] returns.
pub type FetchFuture<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, JwksError>> + Send + 'a>>;

/// How a [`JwksKeys`] gets its document: `rpcwire-http`'s `jwks::JwksUrl` fetches a JWKS URL
/// over HTTP(S); implement it for any other way. Its `Debug` names the source in the log.
pub trait FetchJwks: fmt::Debug + Send + Sync + 'static {
    /// The document's bytes; [`JwksError::TooLarge`] past `max_bytes` (read no further).
    fn fetch(&self, max_bytes: usize) -> FetchFuture<'_>;
}

/// Keys from a JSON Web Key Set that an authorization server publishes: fetched on first use
/// through a [`FetchJwks`] and kept, and fetched again
///
/// - when it is older than the refresh period (default 10 min), on the next verification that
///   needs a key (a failed refresh keeps the keys held, and is tried again after the least
///   interval);
/// - when a token names a `kid` the held set lacks (key rotation): the authenticator asks,
///   and the fetch happens at most once per least interval (default 10 s), so a flood of
///   tokens with made-up `kid`s cannot make the server fetch in a loop.
///
/// One fetch runs at a time; verifications that need the keys meanwhile wait for it. A
/// document over the size limit (default 64 KiB), a failed fetch or a body that is not a key
/// set is refused ([`JwksError`]), and a caller then gets "authentication unavailable"
/// ([`AuthError::Unavailable`]: HTTP 503) rather than a verdict. Cheap to clone (shared).
#[derive(Clone)]
pub struct JwksKeys {
    inner: Arc<Jwks>,
}

struct Jwks {
    fetch: Box<dyn FetchJwks>,
    max_bytes: usize,
    refresh: Duration,
    min_interval: Duration,
    timeout: Duration,
    held: Mutex<Held>,
    /// One fetch at a time: the others wait and take its result.
    fetching: tokio::sync::Mutex<()>,
    fetches: AtomicU64,
}

/// The key set held, when it was last fetched, and when a fetch was last tried.
#[derive(Clone, Default)]
struct Held {
    keys: Option<Arc<JwkSet>>,
    fetched: Option<Instant>,
    tried: Option<Instant>,
}

impl fmt::Debug for JwksKeys {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwksKeys")
            .field("fetch", &self.inner.fetch)
            .field("max_bytes", &self.inner.max_bytes)
            .field("refresh", &self.inner.refresh)
            .finish_non_exhaustive()
    }
}

/// Settings of a [`JwksKeys`].
#[derive(Debug)]
pub struct JwksKeysBuilder {
    fetch: Box<dyn FetchJwks>,
    max_bytes: usize,
    refresh: Duration,
    min_interval: Duration,
    timeout: Duration,
}

impl JwksKeysBuilder {
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
    pub fn build(self) -> JwksKeys {
        JwksKeys {
            inner: Arc::new(Jwks {
                fetch: self.fetch,
                max_bytes: self.max_bytes,
                refresh: self.refresh,
                min_interval: self.min_interval,
                timeout: self.timeout,
                held: Mutex::new(Held::default()),
                fetching: tokio::sync::Mutex::new(()),
                fetches: AtomicU64::new(0),
            }),
        }
    }
}

impl JwksKeys {
    /// Keys from what `fetch` gets, with the default settings.
    pub fn new(fetch: impl FetchJwks) -> Self {
        Self::builder(fetch).build()
    }

    /// Settings for keys from what `fetch` gets.
    pub fn builder(fetch: impl FetchJwks) -> JwksKeysBuilder {
        JwksKeysBuilder {
            fetch: Box::new(fetch),
            max_bytes: DEFAULT_MAX_JWKS_BYTES,
            refresh: DEFAULT_REFRESH,
            min_interval: DEFAULT_MIN_INTERVAL,
            timeout: DEFAULT_FETCH_TIMEOUT,
        }
    }

    /// How many fetches were made (successful or not).
    pub fn fetches(&self) -> u64 {
        self.inner.fetches.load(Ordering::Relaxed)
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
        if held
            .tried
            .is_some_and(|at| at.elapsed() < inner.min_interval)
        {
            // Too soon to fetch again: the keys held, stale or not, or none yet.
            return held.keys.ok_or(JwksError::NotYet);
        }
        inner.set(|h| h.tried = Some(Instant::now()));
        inner.fetches.fetch_add(1, Ordering::Relaxed);
        let fetched = match tokio::time::timeout(inner.timeout, inner.fetch()).await {
            Ok(fetched) => fetched,
            Err(_elapsed) => Err(JwksError::TimedOut),
        };
        match fetched {
            Ok(keys) => {
                let keys = Arc::new(keys);
                inner.set(|h| {
                    h.keys = Some(Arc::clone(&keys));
                    h.fetched = Some(Instant::now());
                });
                Ok(keys)
            }
            // A failed fetch: the keys held go on serving (logged); with none, the error.
            Err(error) => {
                tracing::warn!(source = ?inner.fetch, %error, "JWKS fetch failed");
                held.keys.ok_or(error)
            }
        }
    }
}

impl Jwks {
    fn held(&self) -> Held {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn set(&self, f: impl FnOnce(&mut Held)) {
        f(&mut self.held.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// The keys held, if fresh and no refresh is asked for.
    fn usable(&self, refresh: bool) -> Option<Arc<JwkSet>> {
        let held = self.held();
        let fresh = held.fetched.is_some_and(|at| at.elapsed() < self.refresh);
        held.keys.filter(|_| fresh && !refresh)
    }

    /// The document fetched and read as a key set.
    async fn fetch(&self) -> Result<JwkSet, JwksError> {
        let body = self.fetch.fetch(self.max_bytes).await?;
        if body.len() > self.max_bytes {
            return Err(JwksError::TooLarge(self.max_bytes));
        }
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

/// The default leeway for `exp` and `nbf` (30 s).
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(30);
/// The default bound on verified tokens cached at once.
pub const DEFAULT_CACHE_ENTRIES: usize = 10_000;
/// The most bytes of token text the cache holds at once, whatever the count: past it, tokens
/// are verified on every call until cached ones expire.
pub const MAX_CACHED_TOKEN_BYTES: usize = 8 << 20;
/// The longest token read (an `Authorization` value longer than this is refused unread).
pub const MAX_JWT_LEN: usize = 16 << 10;

/// Verified tokens by their text. Keyed by the text itself, compared whole: a lookup costs a
/// SipHash and one comparison of the token (not a SHA-256 of it, which cost four times the
/// rest of a call), and no collision can stand one token for another. The tokens held are
/// bounded in count and bytes.
#[derive(Default)]
struct TokenCache {
    tokens: HashMap<Box<str>, Cached>,
    /// The bytes of token text in `tokens`.
    bytes: usize,
}

/// A verified token: who it stands for, until when (Unix seconds, leeway included).
struct Cached {
    identity: Identity,
    until: u64,
}

/// Verifies JWT access tokens (see the module documentation).
///
/// ```
/// use std::sync::Arc;
/// use rpcwire_service::jwt::{JwtAuthenticator, StaticKeys, jsonwebtoken::jwk::JwkSet};
///
/// let keys: JwkSet = serde_json::from_str(r#"{"keys":[]}"#).unwrap();
/// let auth = JwtAuthenticator::new(StaticKeys(Arc::new(keys)))
///     .issuer("https://auth.example.com")
///     .audience("https://rpc.example.com/mcp");
/// ```
pub struct JwtAuthenticator {
    keys: Box<dyn KeySource>,
    issuer: Option<String>,
    audience: Vec<String>,
    leeway: Duration,
    algorithms: Vec<Algorithm>,
    secret: Option<Vec<u8>>,
    cache: Mutex<TokenCache>,
    max_cached: usize,
    /// When the key set was last fetched again for an unknown `kid`.
    refreshed: Mutex<Option<Instant>>,
    min_refresh: Duration,
    /// Signatures checked so far (tokens not found in the cache).
    checked: AtomicU64,
}

impl fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JwtAuthenticator")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("algorithms", &self.algorithms)
            .finish_non_exhaustive()
    }
}

impl JwtAuthenticator {
    /// Verifies tokens signed by a key of `keys`, with RS256, ES256 or EdDSA.
    pub fn new(keys: impl KeySource) -> Self {
        JwtAuthenticator {
            keys: Box::new(keys),
            issuer: None,
            audience: Vec::new(),
            leeway: DEFAULT_LEEWAY,
            algorithms: vec![Algorithm::RS256, Algorithm::ES256, Algorithm::EdDSA],
            secret: None,
            cache: Mutex::new(TokenCache::default()),
            max_cached: DEFAULT_CACHE_ENTRIES,
            refreshed: Mutex::new(None),
            min_refresh: Duration::from_secs(30),
            checked: AtomicU64::new(0),
        }
    }

    /// The issuer tokens must name (`iss`).
    pub fn issuer(mut self, issuer: &str) -> Self {
        self.issuer = Some(issuer.to_owned());
        self
    }

    /// An audience tokens may name (`aud`; RFC 8707 resource indicators: the server's own
    /// URL). With none, `aud` is not checked; give one for anything facing the internet.
    pub fn audience(mut self, audience: &str) -> Self {
        self.audience.push(audience.to_owned());
        self
    }

    /// The leeway for `exp` and `nbf` (default 30 s).
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// The asymmetric algorithms accepted (default RS256, ES256, EdDSA). Symmetric ones
    /// listed here are ignored: HS256 comes only with [`shared_secret`](Self::shared_secret).
    pub fn algorithms(mut self, algorithms: &[Algorithm]) -> Self {
        self.algorithms = algorithms
            .iter()
            .copied()
            .filter(|a| !matches!(a, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512))
            .collect();
        self
    }

    /// Also accepts HS256 tokens signed with this secret (and verifies HS256 with nothing
    /// else).
    pub fn shared_secret(mut self, secret: &[u8]) -> Self {
        self.secret = Some(secret.to_vec());
        self
    }

    /// At most this many verified tokens cached at once (default 10 000; 0: none).
    pub fn max_cached(mut self, entries: usize) -> Self {
        self.max_cached = entries;
        self
    }

    /// The least time between two fetches of the key set for unknown `kid`s (default
    /// 30 s), so that tokens naming made-up keys cannot make the server fetch without end.
    pub fn min_refresh(mut self, interval: Duration) -> Self {
        self.min_refresh = interval;
        self
    }

    /// How many token signatures have been checked: a token found in the cache is not
    /// checked again, nor one that a request waiting for the same key fetch has checked.
    pub fn signatures_checked(&self) -> u64 {
        self.checked.load(Ordering::Relaxed)
    }

    /// How many verified tokens are cached now.
    pub fn cached(&self) -> usize {
        self.cache.lock().map_or(0, |c| c.tokens.len())
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    fn validation(&self, algorithm: Algorithm) -> Validation {
        let mut validation = Validation::new(algorithm);
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_required_spec_claims(&["exp"]);
        match &self.issuer {
            Some(issuer) => validation.set_issuer(&[issuer]),
            None => validation.iss = None,
        }
        if self.audience.is_empty() {
            validation.validate_aud = false;
        } else {
            validation.set_audience(&self.audience);
        }
        validation
    }

    /// The key for a token with this header: HS256 only with the secret; otherwise a key of
    /// the set named by `kid` (or the set's only key), refreshing the set once if the `kid`
    /// is unknown.
    async fn key_for(&self, header: &jsonwebtoken::Header) -> Result<DecodingKey, AuthError> {
        if header.alg == Algorithm::HS256 {
            return match &self.secret {
                Some(secret) => Ok(DecodingKey::from_secret(secret)),
                None => Err(AuthError::Invalid("algorithm not allowed")),
            };
        }
        if !self.algorithms.contains(&header.alg) {
            return Err(AuthError::Invalid("algorithm not allowed"));
        }
        let keys = self.keys.keys(false).await?;
        let found = |set: &JwkSet| match &header.kid {
            Some(kid) => set.find(kid).cloned(),
            None if set.keys.len() == 1 => set.keys.first().cloned(),
            None => None,
        };
        let jwk = match found(&keys) {
            Some(jwk) => jwk,
            None => {
                let may_refresh = self.refreshed.lock().is_ok_and(|mut last| {
                    let due = last.is_none_or(|at| at.elapsed() >= self.min_refresh);
                    if due {
                        *last = Some(Instant::now());
                    }
                    due
                });
                if !may_refresh {
                    return Err(AuthError::Invalid("unknown key"));
                }
                let keys = self.keys.keys(true).await?;
                found(&keys).ok_or(AuthError::Invalid("unknown key"))?
            }
        };
        DecodingKey::from_jwk(&jwk).map_err(|_| AuthError::Invalid("unusable key"))
    }

    /// The identity of `token` verified before and not expired at `now`.
    fn cached_identity(&self, token: &str, now: u64) -> Option<Identity> {
        let cache = self.cache.lock().ok()?;
        let hit = cache.tokens.get(token).filter(|c| c.until > now)?;
        Some(hit.identity.clone())
    }

    async fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        let now = Self::now();
        if let Some(identity) = self.cached_identity(token, now) {
            return Ok(identity);
        }
        // `alg: none` and unknown algorithms fail here: the crate has no such algorithm. A
        // token (unlike the header carrying it) that does not read is an invalid token
        // (RFC 6750: 401 `invalid_token`, not 400).
        let header =
            jsonwebtoken::decode_header(token).map_err(|_| AuthError::Invalid("header refused"))?;
        let key = self.key_for(&header).await?;
        // The key may have come from a fetch this request waited for, while requests with
        // the same token on other connections waited too: the first of them to go on
        // verifies it, the others find it here (one signature check, not one per connection).
        if let Some(identity) = self.cached_identity(token, now) {
            return Ok(identity);
        }
        self.checked.fetch_add(1, Ordering::Relaxed);
        let data =
            jsonwebtoken::decode::<serde_json::Value>(token, &key, &self.validation(header.alg))
                .map_err(|e| match e.kind() {
                    ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => {
                        AuthError::Expired
                    }
                    ErrorKind::InvalidIssuer => AuthError::Invalid("wrong issuer"),
                    ErrorKind::InvalidAudience => AuthError::Invalid("wrong audience"),
                    ErrorKind::InvalidSignature => AuthError::Invalid("bad signature"),
                    ErrorKind::InvalidAlgorithm | ErrorKind::InvalidAlgorithmName => {
                        AuthError::Invalid("algorithm does not match the key")
                    }
                    ErrorKind::MissingRequiredClaim(_) => AuthError::Invalid("missing claim"),
                    _ => AuthError::Invalid("invalid token"),
                })?;
        let identity = identity_from(data.claims);
        let until = identity
            .claims()
            .get("exp")
            .and_then(serde_json::Value::as_u64)
            .unwrap_or(now)
            .saturating_add(self.leeway.as_secs());
        // What a transport that keeps the identity for a connection checks (see
        // `credential_header`): the same instant as this cache's.
        let identity = match UNIX_EPOCH.checked_add(Duration::from_secs(until)) {
            Some(at) => identity.with_expiry(at),
            None => identity,
        };
        self.remember(token, &identity, until, now);
        Ok(identity)
    }

    fn remember(&self, token: &str, identity: &Identity, until: u64, now: u64) {
        let Ok(mut cache) = self.cache.lock() else {
            return;
        };
        let full = |c: &TokenCache| {
            c.tokens.len() >= self.max_cached
                || c.bytes.saturating_add(token.len()) > MAX_CACHED_TOKEN_BYTES
        };
        if full(&cache) {
            cache.tokens.retain(|_, c| c.until > now);
            cache.bytes = cache.tokens.keys().map(|t| t.len()).sum();
        }
        if !full(&cache) && !cache.tokens.contains_key(token) {
            cache.bytes += token.len();
            let cached = Cached {
                identity: identity.clone(),
                until,
            };
            cache.tokens.insert(token.into(), cached);
        }
    }
}

/// The identity a token's claims stand for: `sub` as the subject, and as roles the scopes
/// (`scope`, space-separated, or `scp`) and `roles`.
fn identity_from(claims: serde_json::Value) -> Identity {
    let subject = claims
        .get("sub")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("unknown")
        .to_owned();
    let mut roles: Vec<String> = Vec::new();
    if let Some(scope) = claims.get("scope").and_then(serde_json::Value::as_str) {
        roles.extend(scope.split_whitespace().map(str::to_owned));
    }
    for list in ["scp", "roles"] {
        if let Some(values) = claims.get(list).and_then(serde_json::Value::as_array) {
            roles.extend(values.iter().filter_map(|v| v.as_str().map(str::to_owned)));
        }
    }
    Identity::new(subject).with_roles(roles).with_claims(claims)
}

impl Authenticator for JwtAuthenticator {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = credentials.bearer()?.ok_or(AuthError::Missing)?;
            if token.len() > MAX_JWT_LEN {
                return Err(AuthError::Malformed);
            }
            self.verify(token).await
        })
    }

    /// The answer depends on the `Authorization` value alone (and on time: the identity
    /// expires with the token).
    fn credential_header(&self) -> Option<&str> {
        Some("authorization")
    }

    /// Ready once its key set has been had: the held one while fresh, else fetched (at most
    /// once per `min_interval` of a [`JwksKeys`]).
    fn ready(&self) -> super::ReadyFuture<'_> {
        Box::pin(async move { self.keys.keys(false).await.is_ok() })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine;
    use jsonwebtoken::{encode, EncodingKey, Header};
    use serde_json::{json, Value};

    use super::*;
    use crate::Transport;

    type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

    /// A JWKS source that answers what it is told to and counts its fetches.
    #[derive(Debug, Clone)]
    struct Source {
        answer: Arc<Mutex<std::result::Result<Vec<u8>, JwksError>>>,
        hits: Arc<AtomicUsize>,
    }

    impl Source {
        fn new(body: String) -> Self {
            Source {
                answer: Arc::new(Mutex::new(Ok(body.into_bytes()))),
                hits: Arc::new(AtomicUsize::new(0)),
            }
        }

        fn serve(&self, answer: std::result::Result<String, JwksError>) {
            *self.answer.lock().unwrap() = answer.map(String::into_bytes);
        }

        fn hits(&self) -> usize {
            self.hits.load(Ordering::SeqCst)
        }
    }

    impl FetchJwks for Source {
        fn fetch(&self, _max_bytes: usize) -> FetchFuture<'_> {
            self.hits.fetch_add(1, Ordering::SeqCst);
            let answer = self.answer.lock().unwrap().clone();
            Box::pin(async move { answer })
        }
    }

    /// An ES256 key and its JWK named `kid`.
    fn es256(kid: &str) -> Result<(EncodingKey, Value)> {
        let key = rcgen::KeyPair::generate()?;
        let raw = key.public_key_raw();
        let jwk = json!({
            "kty": "EC", "crv": "P-256", "kid": kid, "alg": "ES256", "use": "sig",
            "x": URL_SAFE_NO_PAD.encode(&raw[1..33]), "y": URL_SAFE_NO_PAD.encode(&raw[33..65]),
        });
        Ok((EncodingKey::from_ec_der(&key.serialize_der()), jwk))
    }

    fn jwks(keys: &[&Value]) -> String {
        json!({ "keys": keys }).to_string()
    }

    fn token(key: &EncodingKey, kid: &str) -> Result<String> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_secs();
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(kid.to_owned());
        let claims = json!({"sub": "alice", "iss": "https://as.test", "aud": "https://rs.test",
            "exp": now + 600, "scope": "rpc"});
        Ok(encode(&header, &claims, key)?)
    }

    async fn check(
        auth: &JwtAuthenticator,
        token: &str,
    ) -> std::result::Result<Identity, AuthError> {
        let value = format!("Bearer {token}");
        let headers = [("authorization", value.as_str())];
        auth.authenticate(Credentials {
            headers: &headers,
            ..Credentials::new(Transport::new("http", "tcp"), None)
        })
        .await
    }

    fn authenticator(keys: JwksKeys) -> JwtAuthenticator {
        JwtAuthenticator::new(keys)
            .issuer("https://as.test")
            .audience("https://rs.test")
            // The key source's own least interval is what bounds the fetches here.
            .min_refresh(Duration::ZERO)
    }

    #[tokio::test]
    async fn keys_are_fetched_once_and_again_for_a_new_kid_but_not_for_a_flood() -> Result {
        let (k1, jwk1) = es256("k1")?;
        let (k2, jwk2) = es256("k2")?;
        let source = Source::new(jwks(&[&jwk1]));
        let keys = JwksKeys::builder(source.clone())
            .min_interval(Duration::ZERO)
            .build();
        let auth = authenticator(keys.clone());

        let t1 = token(&k1, "k1")?;
        assert_eq!(check(&auth, &t1).await?.subject(), "alice");
        assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
        assert_eq!(source.hits(), 1, "the key set is fetched once and kept");

        // Key rotation: a token names a kid the held set lacks, and the set is fetched again.
        source.serve(Ok(jwks(&[&jwk1, &jwk2])));
        assert_eq!(check(&auth, &token(&k2, "k2")?).await?.subject(), "alice");
        assert_eq!(source.hits(), 2);

        // A flood of made-up kids, with a least interval of 1 h: no fetch at all.
        let keys = JwksKeys::builder(source.clone())
            .min_interval(Duration::from_secs(3600))
            .build();
        let auth = authenticator(keys.clone());
        assert!(check(&auth, &t1).await.is_ok());
        let before = source.hits();
        let (_, rest) = t1.split_once('.').ok_or("a JWT")?;
        for i in 0..1000 {
            // Only the header matters: the kid is looked up before any signature is checked.
            let head = json!({"alg": "ES256", "typ": "JWT", "kid": format!("made-up-{i}")});
            let bad = format!("{}.{rest}", URL_SAFE_NO_PAD.encode(head.to_string()));
            assert_eq!(
                check(&auth, &bad).await,
                Err(AuthError::Invalid("unknown key"))
            );
        }
        assert_eq!(source.hits(), before, "unknown kids made no fetch");
        assert_eq!(keys.fetches(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn a_stale_set_is_fetched_again_and_kept_when_the_refresh_fails() -> Result {
        let (k1, jwk1) = es256("k1")?;
        let source = Source::new(jwks(&[&jwk1]));
        let keys = JwksKeys::builder(source.clone())
            .refresh(Duration::from_millis(1))
            .min_interval(Duration::ZERO)
            .build();
        keys.get(false).await?;
        tokio::time::sleep(Duration::from_millis(20)).await;
        keys.get(false).await?;
        assert_eq!(source.hits(), 2, "a stale set is fetched again");

        // The authorization server fails: the keys held go on verifying.
        source.serve(Err(JwksError::Status(500)));
        tokio::time::sleep(Duration::from_millis(20)).await;
        let auth = authenticator(keys.clone()).max_cached(0);
        assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
        assert_eq!(source.hits(), 3);

        // Failing with none held: the error, then nothing fetched until the least interval.
        let keys = JwksKeys::builder(source.clone())
            .min_interval(Duration::from_secs(3600))
            .build();
        assert_eq!(keys.get(false).await.err(), Some(JwksError::Status(500)));
        assert_eq!(keys.get(true).await.err(), Some(JwksError::NotYet));
        assert_eq!(keys.fetches(), 1);
        Ok(())
    }

    #[tokio::test]
    async fn documents_over_the_limit_not_key_sets_or_late_are_refused() -> Result {
        let (k1, jwk1) = es256("k1")?;
        let body = jwks(&[&jwk1]);
        let source = Source::new(body.clone());
        let sized = |max: usize| {
            JwksKeys::builder(source.clone())
                .max_bytes(max)
                .min_interval(Duration::ZERO)
                .build()
        };
        assert_eq!(sized(body.len()).get(false).await?.keys.len(), 1);
        // A source that reads past the limit is refused all the same.
        let over = sized(body.len() - 1).get(false).await;
        assert_eq!(over.err(), Some(JwksError::TooLarge(body.len() - 1)));
        source.serve(Ok("[1,2,3]".into()));
        assert!(matches!(
            sized(1024).get(false).await,
            Err(JwksError::Invalid(_))
        ));
        // Through the authenticator: 503-worthy, not a verdict on the token.
        let auth = authenticator(sized(1024));
        assert!(matches!(
            check(&auth, &token(&k1, "k1")?).await,
            Err(AuthError::Unavailable(_))
        ));

        /// A source that never answers.
        #[derive(Debug)]
        struct Silent;
        impl FetchJwks for Silent {
            fn fetch(&self, _max_bytes: usize) -> FetchFuture<'_> {
                Box::pin(std::future::pending())
            }
        }
        let late = JwksKeys::builder(Silent)
            .timeout(Duration::from_millis(10))
            .build();
        assert_eq!(late.get(false).await.err(), Some(JwksError::TimedOut));
        Ok(())
    }
}
