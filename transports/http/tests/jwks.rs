//! Keys from a JWKS URL: fetched once and cached, fetched again on a period and for an
//! unknown `kid` (at most once per least interval, whatever a flood of made-up `kid`s asks),
//! kept when a refresh fails, and refused when the document is too large or not a key set.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rpcwire_http::jwks::{JwksError, JwksKeys};
use rpcwire_tokio::jwt::jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use rpcwire_tokio::jwt::JwtAuthenticator;
use rpcwire_tokio::{AuthError, Authenticator, Credentials, Identity};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// What the JWKS server answers: a status, a body, and whether the body is chunked.
#[derive(Clone)]
struct Answer {
    status: u16,
    body: String,
    chunked: bool,
}

/// A JWKS server on 127.0.0.1 that counts its requests.
struct JwksServer {
    url: String,
    answer: Arc<Mutex<Answer>>,
    hits: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl JwksServer {
    async fn start(body: String) -> Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/jwks.json", listener.local_addr()?);
        let answer = Arc::new(Mutex::new(Answer {
            status: 200,
            body,
            chunked: false,
        }));
        let hits = Arc::new(AtomicUsize::new(0));
        let (a, h) = (Arc::clone(&answer), Arc::clone(&hits));
        let task = tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                let answer = a.lock().map(|a| a.clone()).ok();
                h.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
                        match s.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    let Some(a) = answer else { return };
                    let out = if a.chunked {
                        format!(
                            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n{:x}\r\n{}\r\n0\r\n\r\n",
                            a.status,
                            a.body.len(),
                            a.body
                        )
                    } else {
                        format!(
                            "HTTP/1.1 {} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{}",
                            a.status,
                            a.body.len(),
                            a.body
                        )
                    };
                    let _ = s.write_all(out.as_bytes()).await;
                    let _ = s.shutdown().await;
                });
            }
        });
        Ok(JwksServer {
            url,
            answer,
            hits,
            task,
        })
    }

    fn serve(&self, status: u16, body: String, chunked: bool) {
        if let Ok(mut a) = self.answer.lock() {
            *a = Answer {
                status,
                body,
                chunked,
            };
        }
    }

    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }
}

impl Drop for JwksServer {
    fn drop(&mut self) {
        self.task.abort();
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

async fn check(auth: &JwtAuthenticator, token: &str) -> std::result::Result<Identity, AuthError> {
    let value = format!("Bearer {token}");
    let headers = [("authorization", value.as_str())];
    auth.authenticate(Credentials {
        headers: &headers,
        ..Credentials::new(rpcwire_http::transport::HTTP, None)
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
    let server = JwksServer::start(jwks(&[&jwk1])).await?;
    let keys = JwksKeys::builder(&server.url)
        .min_interval(Duration::ZERO)
        .build()?;
    let auth = authenticator(keys.clone());

    let t1 = token(&k1, "k1")?;
    assert_eq!(check(&auth, &t1).await?.subject(), "alice");
    assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
    assert_eq!(server.hits(), 1, "the key set is fetched once and kept");

    // Key rotation: a token names a kid the held set lacks, and the set is fetched again.
    server.serve(200, jwks(&[&jwk1, &jwk2]), false);
    assert_eq!(check(&auth, &token(&k2, "k2")?).await?.subject(), "alice");
    assert_eq!(server.hits(), 2);

    // A flood of made-up kids, with a least interval of 1 h: no fetch at all.
    let keys = JwksKeys::builder(&server.url)
        .min_interval(Duration::from_secs(3600))
        .build()?;
    let auth = authenticator(keys.clone());
    assert!(check(&auth, &t1).await.is_ok());
    let before = server.hits();
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
    assert_eq!(server.hits(), before, "unknown kids made no fetch");
    assert_eq!(keys.fetches(), 1);
    Ok(())
}

#[tokio::test]
async fn a_stale_set_is_fetched_again_and_kept_when_the_refresh_fails() -> Result {
    let (k1, jwk1) = es256("k1")?;
    let server = JwksServer::start(jwks(&[&jwk1])).await?;
    let keys = JwksKeys::builder(&server.url)
        .refresh(Duration::from_millis(1))
        .min_interval(Duration::ZERO)
        .build()?;
    keys.get(false).await?;
    tokio::time::sleep(Duration::from_millis(20)).await;
    keys.get(false).await?;
    assert_eq!(server.hits(), 2, "a stale set is fetched again");

    // The authorization server fails: the keys held go on verifying.
    server.serve(500, "oops".into(), false);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let auth = authenticator(keys.clone()).max_cached(0);
    assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
    assert_eq!(server.hits(), 3);
    Ok(())
}

#[tokio::test]
async fn documents_over_the_limit_or_not_key_sets_are_refused() -> Result {
    let (_, jwk1) = es256("k1")?;
    let body = jwks(&[&jwk1]);
    let server = JwksServer::start(body.clone()).await?;
    let sized = |max: usize| {
        JwksKeys::builder(&server.url)
            .max_bytes(max)
            .min_interval(Duration::ZERO)
            .build()
    };
    // At the limit: read. One byte under the document's size: refused, with a declared
    // length and chunked.
    assert_eq!(sized(body.len())?.get(false).await?.keys.len(), 1);
    for chunked in [false, true] {
        server.serve(200, body.clone(), chunked);
        match sized(body.len() - 1)?.get(false).await {
            Err(JwksError::TooLarge(n)) => assert_eq!(n, body.len() - 1),
            other => panic!("chunked {chunked}: {other:?}"),
        }
    }
    server.serve(200, "[1,2,3]".into(), false);
    assert!(matches!(
        sized(1024)?.get(false).await,
        Err(JwksError::Invalid(_))
    ));
    server.serve(404, "{}".into(), false);
    assert!(matches!(
        sized(1024)?.get(false).await,
        Err(JwksError::Status(s)) if s == 404
    ));
    // Through the authenticator: 503-worthy, not a verdict on the token.
    let (k1, _) = es256("k1")?;
    let auth = authenticator(sized(1024)?);
    assert!(matches!(
        check(&auth, &token(&k1, "k1")?).await,
        Err(AuthError::Unavailable(_))
    ));
    assert!(matches!(
        JwksKeys::new("ftp://example.com/jwks"),
        Err(JwksError::Url(_))
    ));
    Ok(())
}
