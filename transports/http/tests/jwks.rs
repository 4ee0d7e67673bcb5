//! Keys from a JWKS URL over a real local HTTP server: fetched and kept, fetched again for an
//! unknown `kid`, and refused when the status is not 200, the document is too large (by its
//! declared length or chunked) or not a key set, or the URL is not one the client takes. The
//! service layer's `JwksKeys` tests its cache, refresh and rate of refetch with a fake source.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rpcwire_http::jwks::{JwksError, JwksKeys, JwksUrl};
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
async fn keys_are_fetched_over_http_once_and_again_for_a_new_kid() -> Result {
    let (k1, jwk1) = es256("k1")?;
    let (k2, jwk2) = es256("k2")?;
    let server = JwksServer::start(jwks(&[&jwk1])).await?;
    let keys = JwksKeys::builder(JwksUrl::new(&server.url)?)
        .min_interval(Duration::ZERO)
        .build();
    let auth = authenticator(keys.clone());

    assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
    assert_eq!(check(&auth, &token(&k1, "k1")?).await?.subject(), "alice");
    assert_eq!(server.hits(), 1, "the key set is fetched once and kept");

    // Key rotation: a token names a kid the held set lacks, and the set is fetched again.
    server.serve(200, jwks(&[&jwk1, &jwk2]), false);
    assert_eq!(check(&auth, &token(&k2, "k2")?).await?.subject(), "alice");
    assert_eq!(server.hits(), 2);
    assert_eq!(keys.fetches(), 2);
    // The convenience constructor fetches the same way.
    assert_eq!(
        rpcwire_http::jwks::keys(&server.url)?
            .get(false)
            .await?
            .keys
            .len(),
        2
    );
    Ok(())
}

#[tokio::test]
async fn documents_over_the_limit_not_key_sets_or_not_200_are_refused() -> Result {
    let (_, jwk1) = es256("k1")?;
    let body = jwks(&[&jwk1]);
    let server = JwksServer::start(body.clone()).await?;
    let sized = |max: usize| -> Result<JwksKeys> {
        Ok(JwksKeys::builder(JwksUrl::new(&server.url)?)
            .max_bytes(max)
            .min_interval(Duration::ZERO)
            .build())
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
    assert_eq!(
        sized(1024)?.get(false).await.err(),
        Some(JwksError::Status(404))
    );
    // Through the authenticator: 503-worthy, not a verdict on the token.
    let (k1, _) = es256("k1")?;
    let auth = authenticator(sized(1024)?);
    assert!(matches!(
        check(&auth, &token(&k1, "k1")?).await,
        Err(AuthError::Unavailable(_))
    ));
    assert!(matches!(
        JwksUrl::new("ftp://example.com/jwks"),
        Err(rpcwire_http::ClientError::BadUrl(_))
    ));
    Ok(())
}
