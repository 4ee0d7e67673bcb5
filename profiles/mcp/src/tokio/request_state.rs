//! `requestState` (2026-07-28, multi round-trip requests): the state a server hands the client
//! in an `InputRequiredResult` and gets back, unchanged, on the retry. It passes through the
//! client, so it is attacker-controlled input: [`RequestStateSeal`] protects its integrity
//! with the project's HMAC-SHA256 request signing
//! ([`RequestSigning`](rpcwire_tokio::signing::RequestSigning)), binds it to the request it
//! answers (method, target, caller), gives it an expiry, and lets each state be used once.
//!
//! A sealed state reads `v1.<payload>.<timestamp>.<nonce>.<signature>`: the payload is the
//! Base64url (no padding) of the application's JSON state, the timestamp the time of sealing
//! in seconds, the nonce a value never used before by this seal, and the signature the hex of
//! HMAC-SHA256 over the timestamp, the nonce and `method \n target \n caller \n payload`.
//! The binding is not in the token: a state sealed for `tools/call` of one tool by one caller
//! does not open for another tool, another method or another caller.
//!
//! The payload is signed, not encrypted: the client can read it. Keep secrets out of it (or
//! keep them server-side under a key the state carries).

use std::prelude::rust_2021::*;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rpcwire_tokio::signing::{
    RequestSigning, SignatureError, NONCE_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER,
};
use serde_json::Value;

/// The default time a sealed state stays valid (and the span its nonce is remembered).
pub const DEFAULT_STATE_TTL: Duration = Duration::from_secs(300);
/// The default bound on states opened and remembered (replay protection), overall.
pub const DEFAULT_MAX_OPENED: usize = 100_000;
/// The default bound on states opened and remembered per caller.
pub const DEFAULT_MAX_OPENED_PER_CALLER: usize = 10_000;
/// The default longest sealed state accepted, in bytes: a longer one is refused unread.
pub const DEFAULT_MAX_STATE_LEN: usize = 64 * 1024;

const VERSION: &str = "v1";

/// Why a `requestState` was refused. The client is told only that the state is invalid
/// (Invalid params, -32602): which check failed is for the server's log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StateError {
    /// Not a state this server seals (wrong form, too long, bad Base64, not JSON).
    #[error("requestState is malformed")]
    Malformed,
    /// The signature does not match: the state was changed, or sealed for another request,
    /// another caller, or under another key.
    #[error("requestState failed its integrity check")]
    Tampered,
    /// Sealed longer ago than the time to live.
    #[error("requestState has expired")]
    Expired,
    /// Already used once.
    #[error("requestState was already used")]
    Replayed,
    /// The replay cache is full (this caller's share, or overall): refused until entries age
    /// out, rather than forgetting states that are still valid.
    #[error("too many request states in flight")]
    Busy,
}

impl From<SignatureError> for StateError {
    fn from(e: SignatureError) -> Self {
        match e {
            SignatureError::BadSignature => StateError::Tampered,
            SignatureError::Stale => StateError::Expired,
            SignatureError::Replayed => StateError::Replayed,
            SignatureError::Busy => StateError::Busy,
            _ => StateError::Malformed,
        }
    }
}

/// What a sealed state is bound to: the request it answers and who made it.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The request's method (`tools/call`, `prompts/get`, `resources/read`).
    pub method: &'a str,
    /// Its target: the tool's or prompt's name, the resource's URI.
    pub target: &'a str,
    /// The caller's subject (the identity the transport established).
    pub caller: &'a str,
}

/// Seals and opens `requestState` values: HMAC-SHA256 (rpcwire's request signing) over the
/// state, its time of sealing, a nonce and its binding (method, target, caller); a state opens
/// once, within its time to live, for the request it was sealed for. The state reads
/// `v1.<Base64url payload>.<timestamp>.<nonce>.<hex signature>`: signed, not encrypted (the
/// client can read it). Cheap to clone: clones share the key and the replay cache.
///
/// ```
/// use rpcwire_mcp::tokio::{Binding, RequestStateSeal, StateError};
/// let seal = RequestStateSeal::new(b"a key of the server's own".to_vec());
/// let call = Binding { method: "tools/call", target: "book", caller: "alice" };
/// let state = seal.seal(&call, &serde_json::json!({"step": 2}));
/// assert_eq!(seal.open(&state, &call), Ok(serde_json::json!({"step": 2})));
/// assert_eq!(seal.open(&state, &call), Err(StateError::Replayed));
/// let other = Binding { target: "cancel", ..call };
/// assert_eq!(seal.open(&seal.seal(&call, &serde_json::json!(1)), &other), Err(StateError::Tampered));
/// ```
#[derive(Clone)]
pub struct RequestStateSeal {
    signing: RequestSigning,
    max_len: usize,
    /// Nonces: a random prefix chosen at start, then a counter.
    prefix: u64,
    counter: std::sync::Arc<AtomicU64>,
}

impl std::fmt::Debug for RequestStateSeal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestStateSeal")
            .field("signing", &self.signing)
            .field("max_len", &self.max_len)
            .finish_non_exhaustive()
    }
}

impl RequestStateSeal {
    /// A seal with this key: states valid for [`DEFAULT_STATE_TTL`], at most
    /// [`DEFAULT_MAX_OPENED`] remembered ([`DEFAULT_MAX_OPENED_PER_CALLER`] per caller), at
    /// most [`DEFAULT_MAX_STATE_LEN`] bytes long. Servers that share clients (behind a load
    /// balancer) share the key.
    pub fn new(key: Vec<u8>) -> Self {
        RequestStateSeal {
            signing: RequestSigning::new(key)
                .window(DEFAULT_STATE_TTL)
                .max_nonces(DEFAULT_MAX_OPENED, DEFAULT_MAX_OPENED_PER_CALLER),
            max_len: DEFAULT_MAX_STATE_LEN,
            prefix: random_u64(),
            counter: std::sync::Arc::default(),
        }
    }

    /// A seal with a random 32-byte key from the operating system's secure source (states
    /// then open only in this process, and not after a restart); `None` when the system has
    /// no such source (a guessable key would make the seal worthless).
    pub fn random() -> Option<Self> {
        let mut key = vec![0u8; 32];
        getrandom::fill(&mut key).ok()?;
        Some(RequestStateSeal::new(key))
    }

    /// How long a state stays valid (at least 1 s); an opened state is remembered about twice
    /// as long (the replay cache keeps every nonce whose state could still be valid).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.signing = self.signing.window(ttl);
        self
    }

    /// The bounds of the replay cache: states remembered overall and per caller (each at
    /// least 1). When full, a state is refused ([`StateError::Busy`]) until entries age out.
    pub fn max_opened(mut self, overall: usize, per_caller: usize) -> Self {
        self.signing = self.signing.max_nonces(overall, per_caller);
        self
    }

    /// The longest sealed state accepted, in bytes; a longer one is refused before any other
    /// work.
    pub fn max_len(mut self, bytes: usize) -> Self {
        self.max_len = bytes;
        self
    }

    /// How many opened states the replay cache remembers now.
    pub fn remembered(&self) -> usize {
        self.signing.cached_nonces()
    }

    /// Seals `state` for `binding`, now.
    pub fn seal(&self, binding: &Binding<'_>, state: &Value) -> String {
        self.seal_at(binding, state, SystemTime::now())
    }

    /// Seals `state` for `binding` as if at `at` (for tests of expiry).
    pub fn seal_at(&self, binding: &Binding<'_>, state: &Value, at: SystemTime) -> String {
        let payload = URL_SAFE_NO_PAD.encode(state.to_string());
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let nonce = format!("{:016x}{n:x}", self.prefix);
        let headers = self
            .signing
            .sign(&signed_bytes(binding, &payload), at, &nonce);
        let get = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map_or("", |(_, v)| v.as_str())
        };
        format!(
            "{VERSION}.{payload}.{}.{nonce}.{}",
            get(TIMESTAMP_HEADER),
            get(SIGNATURE_HEADER)
        )
    }

    /// Opens a state the client sent back on a request with `binding`, now: its form, its
    /// signature (in constant time, before its payload is decoded), its age, and that it was
    /// not opened before (it is remembered until it would have expired). The state as sealed.
    pub fn open(&self, token: &str, binding: &Binding<'_>) -> Result<Value, StateError> {
        self.open_at(token, binding, SystemTime::now())
    }

    /// [`open`](RequestStateSeal::open) as if at `now`.
    pub fn open_at(
        &self,
        token: &str,
        binding: &Binding<'_>,
        now: SystemTime,
    ) -> Result<Value, StateError> {
        if token.len() > self.max_len {
            return Err(StateError::Malformed);
        }
        let mut parts = token.split('.');
        let (Some(VERSION), Some(payload), Some(timestamp), Some(nonce), Some(signature), None) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return Err(StateError::Malformed);
        };
        let headers = vec![
            (TIMESTAMP_HEADER, timestamp),
            (NONCE_HEADER, nonce),
            (SIGNATURE_HEADER, signature),
        ];
        self.signing.verify(
            binding.caller,
            &headers,
            &signed_bytes(binding, payload),
            now,
        )?;
        let json = URL_SAFE_NO_PAD
            .decode(payload)
            .map_err(|_| StateError::Malformed)?;
        serde_json::from_slice(&json).map_err(|_| StateError::Malformed)
    }
}

/// What the signature covers besides the timestamp and the nonce. The binding's parts cannot
/// run into each other: a method and a caller hold no newline that matters (a newline in
/// either only makes another binding that no honest request has), and the payload is
/// Base64url.
fn signed_bytes(binding: &Binding<'_>, payload: &str) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(
        binding.method.len() + binding.target.len() + binding.caller.len() + payload.len() + 3,
    );
    for part in [binding.method, binding.target, binding.caller] {
        // Lengths first, so that no two bindings give the same bytes.
        bytes.extend_from_slice(part.len().to_string().as_bytes());
        bytes.push(b':');
        bytes.extend_from_slice(part.as_bytes());
        bytes.push(b'\n');
    }
    bytes.extend_from_slice(payload.as_bytes());
    bytes
}

/// 128 random bits from the system's secure source, as hex (task ids): ids no client can
/// guess. Falls back to a clock-and-counter id only when the system has no such source (the
/// id still names one task; tasks also belong to their caller).
pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        return format!("{nanos:x}-{n:x}");
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_u64() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::time::UNIX_EPOCH;

    const CALL: Binding<'static> = Binding {
        method: "tools/call",
        target: "book",
        caller: "alice",
    };

    fn at(s: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn a_state_opens_once_for_its_own_request() {
        let seal = RequestStateSeal::new(b"k".to_vec());
        let token = seal.seal_at(&CALL, &json!({"round": 1}), at(1_000_000));
        assert_eq!(
            seal.open_at(&token, &CALL, at(1_000_010)),
            Ok(json!({"round": 1}))
        );
        assert_eq!(
            seal.open_at(&token, &CALL, at(1_000_011)),
            Err(StateError::Replayed)
        );
        assert_eq!(seal.remembered(), 1);
    }

    #[test]
    fn a_changed_state_or_another_binding_is_tampered() {
        let seal = RequestStateSeal::new(b"k".to_vec());
        let now = at(1_000_000);
        let token = seal.seal_at(&CALL, &json!({"admin": false}), now);
        // The payload swapped for another (valid Base64 of valid JSON).
        let mut parts: Vec<&str> = token.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(json!({"admin": true}).to_string());
        parts[1] = &forged;
        assert_eq!(
            seal.open_at(&parts.join("."), &CALL, now),
            Err(StateError::Tampered)
        );
        // Appended to, as the conformance suite does.
        assert_eq!(
            seal.open_at(&format!("{token}-TAMPERED"), &CALL, now),
            Err(StateError::Malformed)
        );
        for other in [
            Binding {
                target: "cancel",
                ..CALL
            },
            Binding {
                method: "prompts/get",
                ..CALL
            },
            Binding {
                caller: "mallory",
                ..CALL
            },
        ] {
            assert_eq!(seal.open_at(&token, &other, now), Err(StateError::Tampered));
        }
        // Another key.
        let other_key = RequestStateSeal::new(b"k2".to_vec());
        assert_eq!(
            other_key.open_at(&token, &CALL, now),
            Err(StateError::Tampered)
        );
        // Still opens, once, for its own request: the refusals consumed nothing.
        assert!(seal.open_at(&token, &CALL, now).is_ok());
    }

    #[test]
    fn expiry_is_at_the_ttl_edge() {
        let seal = RequestStateSeal::new(b"k".to_vec()).ttl(Duration::from_secs(60));
        let sealed = at(1_000_000);
        let a = seal.seal_at(&CALL, &json!(1), sealed);
        let b = seal.seal_at(&CALL, &json!(2), sealed);
        assert_eq!(seal.open_at(&a, &CALL, at(1_000_060)), Ok(json!(1)));
        assert_eq!(
            seal.open_at(&b, &CALL, at(1_000_061)),
            Err(StateError::Expired)
        );
    }

    #[test]
    fn malformed_and_oversized_states_are_refused_unread() {
        let seal = RequestStateSeal::new(b"k".to_vec()).max_len(200);
        let now = at(1_000_000);
        for bad in ["", "v1", "v2.a.1.n.00", "v1.a.b.c.d.e", "v1..1.n.zz"] {
            assert_eq!(
                seal.open_at(bad, &CALL, now),
                Err(StateError::Malformed),
                "{bad}"
            );
        }
        let big = seal.seal_at(&CALL, &json!("x".repeat(300)), now);
        assert_eq!(seal.open_at(&big, &CALL, now), Err(StateError::Malformed));
        let small = seal.seal_at(&CALL, &json!("x".repeat(10)), now);
        assert!(small.len() <= 200);
        assert!(seal.open_at(&small, &CALL, now).is_ok());
    }

    #[test]
    fn a_full_replay_cache_refuses_instead_of_forgetting() {
        let seal = RequestStateSeal::new(b"k".to_vec()).max_opened(2, 2);
        let now = at(1_000_000);
        let tokens: Vec<String> = (0..3)
            .map(|i| seal.seal_at(&CALL, &json!(i), now))
            .collect();
        assert!(seal.open_at(&tokens[0], &CALL, now).is_ok());
        assert!(seal.open_at(&tokens[1], &CALL, now).is_ok());
        assert_eq!(seal.open_at(&tokens[2], &CALL, now), Err(StateError::Busy));
        // The first two are still remembered.
        assert_eq!(
            seal.open_at(&tokens[0], &CALL, now),
            Err(StateError::Replayed)
        );
    }
}
