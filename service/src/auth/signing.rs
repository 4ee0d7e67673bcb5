//! Signed and replay-proof requests (feature `auth`): an HMAC-SHA256 signature of the exact
//! body bytes, a timestamp window and a nonce, checked before the body is parsed.
//!
//! A client sends three headers with each request body:
//!
//! | header | value |
//! |---|---|
//! | `X-Rpcwire-Timestamp` | the time of signing, in seconds since the Unix epoch |
//! | `X-Rpcwire-Nonce` | a value never used before by this caller (1 to 128 token characters) |
//! | `X-Rpcwire-Signature` | hex of HMAC-SHA256(key, `timestamp` `\n` `nonce` `\n` `body`) |
//!
//! The signature covers the timestamp and the nonce as well as the body, so neither can be
//! changed to pass a replayed body off as new. [`RequestSigning::verify`] checks, in this
//! order: the headers' form; the signature, in constant time (before anything reads the
//! body); the timestamp, within [`RequestSigning::window`] of now; and the nonce, against a
//! cache of the nonces seen within the window, per caller. The cache is bounded in entries,
//! overall and per caller: a caller that floods it with distinct nonces is refused
//! ([`SignatureError::Busy`]) until its nonces age out, and cannot push out the nonces of
//! others; entries are 32-byte digests, so its memory is fixed by its bounds.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};

use crate::auth::Headers;

/// The header carrying the signature.
pub const SIGNATURE_HEADER: &str = "x-rpcwire-signature";
/// The header carrying the timestamp.
pub const TIMESTAMP_HEADER: &str = "x-rpcwire-timestamp";
/// The header carrying the nonce.
pub const NONCE_HEADER: &str = "x-rpcwire-nonce";
/// The longest nonce accepted.
pub const MAX_NONCE_LEN: usize = 128;

/// Why a signed request was refused. Shown to the caller only as a generic refusal.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SignatureError {
    /// A signature, timestamp or nonce header is missing.
    #[error("request not signed")]
    Missing,
    /// A header that does not read (not hex, not a number, a nonce too long).
    #[error("malformed signature headers")]
    Malformed,
    /// The signature does not match the body.
    #[error("bad signature")]
    BadSignature,
    /// The timestamp is outside the window.
    #[error("timestamp outside the window")]
    Stale,
    /// The nonce was seen before within the window.
    #[error("nonce seen before")]
    Replayed,
    /// The nonce cache holds as many of this caller's nonces (or of all callers') as it may.
    #[error("too many signed requests in the window")]
    Busy,
}

/// Entries of the nonce cache: a digest of caller and nonce, so that every entry is 32
/// bytes whatever the peer sent.
type NonceKey = [u8; 32];

/// The nonces seen within the window, bounded overall and per caller.
struct NonceCache {
    seen: HashMap<NonceKey, Arc<str>>,
    /// Insertion order with each entry's expiry: expiries grow with insertion (each is the
    /// time of insertion plus the same span), so expired entries are always at the front.
    order: VecDeque<(u64, NonceKey)>,
    per_caller: HashMap<Arc<str>, usize>,
    max_entries: usize,
    max_per_caller: usize,
}

impl NonceCache {
    fn new(max_entries: usize, max_per_caller: usize) -> Self {
        NonceCache {
            seen: HashMap::new(),
            order: VecDeque::new(),
            per_caller: HashMap::new(),
            max_entries,
            max_per_caller,
        }
    }

    fn expire(&mut self, now: u64) {
        while let Some(&(expiry, key)) = self.order.front() {
            if expiry > now {
                break;
            }
            self.order.pop_front();
            if let Some(caller) = self.seen.remove(&key) {
                if let Some(count) = self.per_caller.get_mut(&caller) {
                    *count -= 1;
                    if *count == 0 {
                        self.per_caller.remove(&caller);
                    }
                }
            }
        }
        // Give memory back after a burst.
        if self.seen.capacity() > 64 && self.seen.len() < self.seen.capacity() / 4 {
            self.seen.shrink_to(self.seen.len() * 2);
            self.order.shrink_to(self.order.len() * 2);
            self.per_caller.shrink_to(self.per_caller.len() * 2);
        }
    }

    fn insert(
        &mut self,
        caller: &str,
        nonce: &str,
        now: u64,
        keep: u64,
    ) -> Result<(), SignatureError> {
        self.expire(now);
        let mut hasher = Sha256::new();
        hasher.update(caller.as_bytes());
        hasher.update([0]);
        hasher.update(nonce.as_bytes());
        let key: NonceKey = hasher.finalize().into();
        if self.seen.contains_key(&key) {
            return Err(SignatureError::Replayed);
        }
        let count = self.per_caller.get(caller).copied().unwrap_or(0);
        if count >= self.max_per_caller || self.seen.len() >= self.max_entries {
            return Err(SignatureError::Busy);
        }
        let caller: Arc<str> = match self.per_caller.get_key_value(caller) {
            Some((shared, _)) => Arc::clone(shared),
            None => Arc::from(caller),
        };
        self.per_caller.insert(Arc::clone(&caller), count + 1);
        self.seen.insert(key, caller);
        self.order.push_back((now + keep, key));
        Ok(())
    }

    fn len(&self) -> usize {
        self.seen.len()
    }
}

/// Verifies signed requests (see the module documentation). Cheap to clone (shared).
///
/// ```
/// use std::time::SystemTime;
/// use rpcwire_service::signing::{RequestSigning, SignatureError};
///
/// let signing = RequestSigning::new(b"shared secret".to_vec());
/// let body = br#"{"jsonrpc":"2.0","method":"transfer","params":[100],"id":1}"#;
/// let now = SystemTime::now();
/// let headers = signing.sign(body, now, "n-0001");
/// assert_eq!(signing.verify("alice", &headers, body, now), Ok(()));
/// // The same request again is a replay.
/// assert_eq!(signing.verify("alice", &headers, body, now), Err(SignatureError::Replayed));
/// ```
#[derive(Clone)]
pub struct RequestSigning {
    key: Arc<[u8]>,
    window: Duration,
    nonces: Arc<Mutex<NonceCache>>,
}

impl std::fmt::Debug for RequestSigning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestSigning")
            .field("window", &self.window)
            .field("nonces", &self.cached_nonces())
            .finish_non_exhaustive()
    }
}

/// The default timestamp window (5 minutes each way).
pub const DEFAULT_WINDOW: Duration = Duration::from_secs(300);
/// The default bound on cached nonces, overall.
pub const DEFAULT_MAX_NONCES: usize = 100_000;
/// The default bound on cached nonces per caller.
pub const DEFAULT_MAX_NONCES_PER_CALLER: usize = 10_000;

impl RequestSigning {
    /// Verifies with `key`: a 5-minute window, at most 100 000 nonces cached (10 000 per
    /// caller).
    pub fn new(key: Vec<u8>) -> Self {
        RequestSigning {
            key: key.into(),
            window: DEFAULT_WINDOW,
            nonces: Arc::new(Mutex::new(NonceCache::new(
                DEFAULT_MAX_NONCES,
                DEFAULT_MAX_NONCES_PER_CALLER,
            ))),
        }
    }

    /// How far a timestamp may be from now, either way (at least 1 s).
    pub fn window(mut self, window: Duration) -> Self {
        self.window = window.max(Duration::from_secs(1));
        self
    }

    /// The bounds of the nonce cache: entries overall and per caller (each at least 1).
    pub fn max_nonces(self, overall: usize, per_caller: usize) -> Self {
        let cache = NonceCache::new(overall.max(1), per_caller.max(1));
        RequestSigning {
            nonces: Arc::new(Mutex::new(cache)),
            ..self
        }
    }

    /// How many nonces the cache holds now.
    pub fn cached_nonces(&self) -> usize {
        self.nonces.lock().map_or(0, |c| c.len())
    }

    fn mac(&self, timestamp: &[u8], nonce: &[u8], body: &[u8]) -> Hmac<Sha256> {
        // HMAC takes a key of any length.
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.key)
            .unwrap_or_else(|_| unreachable!("HMAC accepts every key length"));
        mac.update(timestamp);
        mac.update(b"\n");
        mac.update(nonce);
        mac.update(b"\n");
        mac.update(body);
        mac
    }

    /// The three headers a client sends with `body` signed at `at` with `nonce` (for
    /// clients and tests).
    pub fn sign(&self, body: &[u8], at: SystemTime, nonce: &str) -> Vec<(String, String)> {
        let timestamp = at
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
            .to_string();
        let signature = self
            .mac(timestamp.as_bytes(), nonce.as_bytes(), body)
            .finalize()
            .into_bytes();
        vec![
            (TIMESTAMP_HEADER.to_owned(), timestamp),
            (NONCE_HEADER.to_owned(), nonce.to_owned()),
            (SIGNATURE_HEADER.to_owned(), hex(&signature)),
        ]
    }

    /// Checks a signed request from `caller` (the identity's subject: nonces are kept per
    /// caller) at `now`: its headers, its signature over `body`, its timestamp and its nonce.
    /// A request that passes has its nonce remembered until the window has passed.
    pub fn verify(
        &self,
        caller: &str,
        headers: &dyn Headers,
        body: &[u8],
        now: SystemTime,
    ) -> Result<(), SignatureError> {
        let signature = headers
            .get(SIGNATURE_HEADER)
            .ok_or(SignatureError::Missing)?;
        let timestamp = headers
            .get(TIMESTAMP_HEADER)
            .ok_or(SignatureError::Missing)?;
        let nonce = headers.get(NONCE_HEADER).ok_or(SignatureError::Missing)?;
        let signature = unhex(signature).ok_or(SignatureError::Malformed)?;
        let nonce = std::str::from_utf8(nonce).map_err(|_| SignatureError::Malformed)?;
        let token = |c: char| c.is_ascii_alphanumeric() || "-._~+/=".contains(c);
        if nonce.is_empty() || nonce.len() > MAX_NONCE_LEN || !nonce.chars().all(token) {
            return Err(SignatureError::Malformed);
        }
        let seconds: u64 = std::str::from_utf8(timestamp)
            .ok()
            .filter(|t| !t.is_empty() && t.len() <= 20 && t.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|t| t.parse().ok())
            .ok_or(SignatureError::Malformed)?;
        // Constant time: `verify_slice` compares every byte.
        self.mac(timestamp, nonce.as_bytes(), body)
            .verify_slice(&signature)
            .map_err(|_| SignatureError::BadSignature)?;
        let now = now.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let window = self.window.as_secs();
        if seconds.abs_diff(now) > window {
            return Err(SignatureError::Stale);
        }
        // Kept until no timestamp it could carry is in the window any more.
        let keep = 2 * window + 1;
        let mut cache = self.nonces.lock().map_err(|_| SignatureError::Busy)?;
        cache.insert(caller, nonce, now, keep)
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// 32 bytes from 64 hex digits (either case), else `None`.
fn unhex(text: &[u8]) -> Option<[u8; 32]> {
    if text.len() != 64 {
        return None;
    }
    let digit = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = digit(pair[0])? << 4 | digit(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(seconds)
    }

    #[test]
    fn a_signed_request_passes_once_and_a_changed_one_never() {
        let signing = RequestSigning::new(b"k".to_vec());
        let body = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":1}";
        let headers = signing.sign(body, at(1_000_000), "abc");
        assert_eq!(signing.verify("a", &headers, body, at(1_000_010)), Ok(()));
        assert_eq!(
            signing.verify("a", &headers, body, at(1_000_010)),
            Err(SignatureError::Replayed)
        );
        // Another caller's nonces are its own.
        assert_eq!(signing.verify("b", &headers, body, at(1_000_010)), Ok(()));
        let changed = b"{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":2}";
        assert_eq!(
            signing.verify("c", &headers, changed, at(1_000_010)),
            Err(SignatureError::BadSignature)
        );
        // A new nonce in the header without a new signature.
        let mut forged = headers.clone();
        forged[1].1 = "abd".to_owned();
        assert_eq!(
            signing.verify("c", &forged, body, at(1_000_010)),
            Err(SignatureError::BadSignature)
        );
        let other_key = RequestSigning::new(b"other".to_vec());
        assert_eq!(
            other_key.verify("c", &headers, body, at(1_000_010)),
            Err(SignatureError::BadSignature)
        );
    }

    #[test]
    fn timestamps_outside_the_window_are_stale() {
        let signing = RequestSigning::new(b"k".to_vec()).window(Duration::from_secs(60));
        let headers = signing.sign(b"x", at(10_000), "n1");
        assert_eq!(
            signing.verify("a", &headers, b"x", at(10_061)),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            signing.verify("a", &headers, b"x", at(9_939)),
            Err(SignatureError::Stale)
        );
        assert_eq!(signing.verify("a", &headers, b"x", at(10_060)), Ok(()));
    }

    #[test]
    fn malformed_headers_are_refused_before_any_hashing() {
        let signing = RequestSigning::new(b"k".to_vec());
        let good = signing.sign(b"x", at(5), "n");
        let mut cases = Vec::new();
        for (index, bad) in [
            (0, "12a"),
            (0, ""),
            (0, "99999999999999999999999"),
            (1, ""),
            (1, "has space"),
            (2, "zz"),
        ] {
            let mut headers = good.clone();
            headers[index].1 = bad.to_owned();
            cases.push(headers);
        }
        let mut long = good.clone();
        long[1].1 = "n".repeat(MAX_NONCE_LEN + 1);
        cases.push(long);
        for headers in cases {
            assert_eq!(
                signing.verify("a", &headers, b"x", at(5)),
                Err(SignatureError::Malformed),
                "{headers:?}"
            );
        }
        assert_eq!(
            signing.verify("a", &good[..2].to_vec(), b"x", at(5)),
            Err(SignatureError::Missing)
        );
    }

    #[test]
    fn the_cache_is_bounded_per_caller_and_overall_and_empties_after_the_window() {
        let signing = RequestSigning::new(b"k".to_vec())
            .window(Duration::from_secs(10))
            .max_nonces(5, 3);
        let sign = |n: usize| signing.sign(b"x", at(100), &format!("n{n}"));
        for n in 0..3 {
            assert_eq!(signing.verify("flood", &sign(n), b"x", at(100)), Ok(()));
        }
        assert_eq!(
            signing.verify("flood", &sign(3), b"x", at(100)),
            Err(SignatureError::Busy)
        );
        // Others still get in, up to the overall bound.
        assert_eq!(signing.verify("b", &sign(0), b"x", at(100)), Ok(()));
        assert_eq!(signing.verify("c", &sign(0), b"x", at(100)), Ok(()));
        assert_eq!(
            signing.verify("d", &sign(0), b"x", at(100)),
            Err(SignatureError::Busy)
        );
        assert_eq!(signing.cached_nonces(), 5);
        // After the window (twice over), everything has aged out.
        let later = signing.sign(b"x", at(200), "fresh");
        assert_eq!(signing.verify("flood", &later, b"x", at(200)), Ok(()));
        assert_eq!(signing.cached_nonces(), 1);
    }

    #[test]
    fn hex_round_trips() {
        let bytes: [u8; 32] = std::array::from_fn(|i| (i * 7) as u8);
        assert_eq!(unhex(hex(&bytes).as_bytes()), Some(bytes));
        assert_eq!(unhex(hex(&bytes).to_uppercase().as_bytes()), Some(bytes));
        assert_eq!(unhex(b"0"), None);
    }
}
