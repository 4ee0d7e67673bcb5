//! JWT access tokens (feature `jwt`): an [`Authenticator`] that verifies
//! `Authorization: Bearer <JWT>` with the `jsonwebtoken` crate against a key set ([`KeySource`]:
//! fixed keys here, a JWKS URL fetched and cached in `rpcwire-http`), checks `iss`, `aud`,
//! `exp` and `nbf` with a small leeway, and caches a verified token for its lifetime so a
//! keep-alive connection does not verify it per call.
//!
//! Refused: `alg: none` (not an algorithm the crate reads), any algorithm not allowed
//! (RS256, ES256 and EdDSA by default; HS256 only with a configured shared secret, and then
//! checked only against that secret, so a public key can never be used as an HMAC secret),
//! a key whose type does not match the token's algorithm, an unknown `kid` (after one
//! refresh of the key set), a bad signature, a wrong issuer or audience, an expired token or
//! one not valid yet.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
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
    checked: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for JwtAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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
            checked: std::sync::atomic::AtomicU64::new(0),
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
        self.checked.load(std::sync::atomic::Ordering::Relaxed)
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
        self.checked
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
}
