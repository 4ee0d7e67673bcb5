//! JWT access tokens: a key made here signs tokens that are verified against its JWK; every
//! way a token can be wrong is refused for the right reason, and a verified token is cached.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rpcwire_tokio::jwt::jsonwebtoken::jwk::JwkSet;
use rpcwire_tokio::jwt::jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use rpcwire_tokio::jwt::{JwtAuthenticator, KeySource, KeysFuture, StaticKeys};
use rpcwire_tokio::{AuthError, Authenticator, Credentials, Identity, Transport};
use serde_json::{json, Value};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

const ISSUER: &str = "https://issuer.test";
const AUDIENCE: &str = "https://rpc.test/mcp";

/// An ES256 signing key and its JWK set (kid `k1`).
fn es256() -> Result<(EncodingKey, JwkSet)> {
    let key = rcgen::KeyPair::generate()?;
    let raw = key.public_key_raw();
    let (x, y) = (&raw[1..33], &raw[33..65]);
    let jwks: JwkSet = serde_json::from_value(json!({"keys": [{
        "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
        "x": URL_SAFE_NO_PAD.encode(x), "y": URL_SAFE_NO_PAD.encode(y),
    }]}))?;
    Ok((EncodingKey::from_ec_der(&key.serialize_der()), jwks))
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn claims(extra: Value) -> Value {
    let mut claims = json!({
        "sub": "user-42", "iss": ISSUER, "aud": AUDIENCE,
        "exp": now() + 600, "iat": now(), "scope": "tools:read tools:call",
    });
    if let (Some(c), Some(e)) = (claims.as_object_mut(), extra.as_object()) {
        c.extend(e.clone());
    }
    claims
}

fn sign(key: &EncodingKey, alg: Algorithm, kid: Option<&str>, claims: &Value) -> Result<String> {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    Ok(encode(&header, claims, key)?)
}

async fn check(auth: &JwtAuthenticator, token: &str) -> std::result::Result<Identity, AuthError> {
    let value = format!("Bearer {token}");
    let headers = [("authorization", value.as_str())];
    auth.authenticate(Credentials {
        headers: &headers,
        ..Credentials::new(Transport::new("http", "tcp"), None)
    })
    .await
}

/// Counts how often the key set is asked for.
struct Counting(Arc<JwkSet>, Arc<AtomicUsize>);

impl KeySource for Counting {
    fn keys(&self, _refresh: bool) -> KeysFuture<'_> {
        self.1.fetch_add(1, Ordering::SeqCst);
        let keys = Arc::clone(&self.0);
        Box::pin(async move { Ok(keys) })
    }
}

#[tokio::test]
async fn a_valid_token_names_its_subject_and_scopes_and_is_cached() -> Result {
    let (key, jwks) = es256()?;
    let fetches = Arc::new(AtomicUsize::new(0));
    let auth = JwtAuthenticator::new(Counting(Arc::new(jwks), Arc::clone(&fetches)))
        .issuer(ISSUER)
        .audience(AUDIENCE);
    let token = sign(&key, Algorithm::ES256, Some("k1"), &claims(json!({})))?;
    let id = check(&auth, &token).await?;
    assert_eq!(id.subject(), "user-42");
    assert!(id.has_role("tools:call") && id.has_role("tools:read"));
    assert_eq!(id.claims()["iss"], ISSUER);
    for _ in 0..5 {
        assert_eq!(check(&auth, &token).await?.subject(), "user-42");
    }
    assert_eq!(
        fetches.load(Ordering::SeqCst),
        1,
        "verified once, then cached"
    );
    assert_eq!(auth.cached(), 1);
    Ok(())
}

/// A key set that is asked for at once and answers only once the gate opens (a JWKS fetch
/// in flight), counting the requests that waited for it.
struct Gated(Arc<JwkSet>, Arc<tokio::sync::Semaphore>, Arc<AtomicUsize>);

impl KeySource for Gated {
    fn keys(&self, _refresh: bool) -> KeysFuture<'_> {
        self.2.fetch_add(1, Ordering::SeqCst);
        let (keys, gate) = (Arc::clone(&self.0), Arc::clone(&self.1));
        Box::pin(async move {
            let _open = gate.acquire().await;
            Ok(keys)
        })
    }
}

/// Requests with one new token on many connections, all waiting for the same key fetch: the
/// signature is checked once, the others find the identity in the cache.
#[tokio::test]
async fn one_new_token_waiting_for_the_keys_on_many_connections_is_checked_once() -> Result {
    let (key, jwks) = es256()?;
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let waited = Arc::new(AtomicUsize::new(0));
    let auth = JwtAuthenticator::new(Gated(
        Arc::new(jwks),
        Arc::clone(&gate),
        Arc::clone(&waited),
    ))
    .issuer(ISSUER)
    .audience(AUDIENCE);
    let token = sign(&key, Algorithm::ES256, Some("k1"), &claims(json!({})))?;
    let checks = (0..16).map(|_| check(&auth, &token));
    let all = start_all_then_open(checks.collect(), || {
        gate.add_permits(Semaphore::MAX_PERMITS / 2);
    });
    for answer in all.await {
        assert_eq!(answer?.subject(), "user-42");
    }
    assert_eq!(waited.load(Ordering::SeqCst), 16, "all waited for the keys");
    assert_eq!(auth.signatures_checked(), 1);
    Ok(())
}

use tokio::sync::Semaphore;

/// Polls every future once (each reaches the gate), calls `open`, then awaits them all.
async fn start_all_then_open<F: std::future::Future>(
    futures: Vec<F>,
    open: impl FnOnce(),
) -> Vec<F::Output> {
    let mut futures: Vec<_> = futures.into_iter().map(Box::pin).collect();
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut done: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    for (f, d) in futures.iter_mut().zip(done.iter_mut()) {
        if let std::task::Poll::Ready(out) = f.as_mut().poll(&mut cx) {
            *d = Some(out);
        }
    }
    open();
    let mut outputs = Vec::new();
    for (f, d) in futures.into_iter().zip(done) {
        outputs.push(match d {
            Some(out) => out,
            None => f.await,
        });
    }
    outputs
}

#[tokio::test]
async fn every_kind_of_bad_token_is_refused() -> Result {
    let (key, jwks) = es256()?;
    let auth = JwtAuthenticator::new(StaticKeys(Arc::new(jwks)))
        .issuer(ISSUER)
        .audience(AUDIENCE);
    let t = |extra: Value| sign(&key, Algorithm::ES256, Some("k1"), &claims(extra));

    let expired = t(json!({"exp": now() - 3600}))?;
    assert_eq!(check(&auth, &expired).await, Err(AuthError::Expired));
    let not_yet = t(json!({"nbf": now() + 3600}))?;
    assert_eq!(check(&auth, &not_yet).await, Err(AuthError::Expired));
    let wrong_aud = t(json!({"aud": "https://elsewhere.test"}))?;
    assert_eq!(
        check(&auth, &wrong_aud).await,
        Err(AuthError::Invalid("wrong audience"))
    );
    let wrong_iss = t(json!({"iss": "https://evil.test"}))?;
    assert_eq!(
        check(&auth, &wrong_iss).await,
        Err(AuthError::Invalid("wrong issuer"))
    );
    let unknown_kid = sign(&key, Algorithm::ES256, Some("k9"), &claims(json!({})))?;
    assert_eq!(
        check(&auth, &unknown_kid).await,
        Err(AuthError::Invalid("unknown key"))
    );

    // A tampered signature (and a tampered payload under the old signature).
    let good = t(json!({}))?;
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    let mut sig = URL_SAFE_NO_PAD.decode(&parts[2])?;
    sig[10] ^= 1;
    parts[2] = URL_SAFE_NO_PAD.encode(&sig);
    assert_eq!(
        check(&auth, &parts.join(".")).await,
        Err(AuthError::Invalid("bad signature"))
    );
    let mut payload: Value = serde_json::from_slice(
        &URL_SAFE_NO_PAD.decode(good.split('.').nth(1).ok_or("no payload")?)?,
    )?;
    payload["scope"] = json!("admin");
    let forged = format!(
        "{}.{}.{}",
        good.split('.').next().ok_or("no header")?,
        URL_SAFE_NO_PAD.encode(payload.to_string()),
        good.split('.').nth(2).ok_or("no signature")?
    );
    assert_eq!(
        check(&auth, &forged).await,
        Err(AuthError::Invalid("bad signature"))
    );

    // `alg: none`.
    let none = format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims(json!({})).to_string())
    );
    assert_eq!(
        check(&auth, &none).await,
        Err(AuthError::Invalid("header refused"))
    );

    // HS256 is not allowed without a shared secret: not even with the public key as secret.
    let public_as_secret = EncodingKey::from_secret(b"whatever the public key is");
    let hs = sign(
        &public_as_secret,
        Algorithm::HS256,
        Some("k1"),
        &claims(json!({})),
    )?;
    assert_eq!(
        check(&auth, &hs).await,
        Err(AuthError::Invalid("algorithm not allowed"))
    );
    // Signed by another key under the known kid.
    let (other_key, _) = es256()?;
    let impostor = sign(&other_key, Algorithm::ES256, Some("k1"), &claims(json!({})))?;
    assert_eq!(
        check(&auth, &impostor).await,
        Err(AuthError::Invalid("bad signature"))
    );

    // Garbage and other schemes.
    assert_eq!(
        check(&auth, "not.a.jwt").await,
        Err(AuthError::Invalid("header refused"))
    );
    let basic = [("authorization", "Basic dTpw")];
    let basic = auth
        .authenticate(Credentials {
            headers: &basic,
            ..Credentials::new(Transport::new("http", "tcp"), None)
        })
        .await;
    assert_eq!(basic, Err(AuthError::Malformed));
    let none_given = auth
        .authenticate(Credentials::new(Transport::new("http", "tcp"), None))
        .await;
    assert_eq!(none_given, Err(AuthError::Missing));
    let huge = "a".repeat(20_000);
    assert_eq!(check(&auth, &huge).await, Err(AuthError::Malformed));
    assert_eq!(auth.cached(), 0, "nothing refused is cached");
    Ok(())
}

#[tokio::test]
async fn hs256_with_a_configured_secret_and_nothing_else() -> Result {
    let (_, jwks) = es256()?;
    let auth = JwtAuthenticator::new(StaticKeys(Arc::new(jwks)))
        .issuer(ISSUER)
        .audience(AUDIENCE)
        .shared_secret(b"the shared secret");
    let good = sign(
        &EncodingKey::from_secret(b"the shared secret"),
        Algorithm::HS256,
        None,
        &claims(json!({})),
    )?;
    assert_eq!(check(&auth, &good).await?.subject(), "user-42");
    let other = sign(
        &EncodingKey::from_secret(b"another secret"),
        Algorithm::HS256,
        None,
        &claims(json!({})),
    )?;
    assert_eq!(
        check(&auth, &other).await,
        Err(AuthError::Invalid("bad signature"))
    );
    Ok(())
}
