//! A WebSocket outlives its credential by no more than `WsConfig::credential_leeway`: a
//! connection opened with a 3-second JWT is closed with 1008 ("credential expired") at the
//! token's `exp` plus the leeway, and a call under way then is never answered.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use rpcwire_http::ws::{WsConfig, WsServer};
use rpcwire_http::HttpServer;
use rpcwire_tokio::jwt::jsonwebtoken::jwk::JwkSet;
use rpcwire_tokio::jwt::jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
use rpcwire_tokio::jwt::{JwtAuthenticator, StaticKeys};
use rpcwire_tokio::{Builder, Router, RpcError};
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

const SECRET: &[u8] = b"the shared secret";
const LEEWAY: Duration = Duration::from_millis(500);

fn unix_now() -> Duration {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap()
}

#[tokio::test]
async fn a_websocket_is_closed_1008_when_its_token_expires() {
    let router = Router::new()
        .method("echo", |v: Value| async move { Ok::<_, RpcError>(v) })
        .method("slow", |(ms,): (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>("late")
        });
    let auth = JwtAuthenticator::new(StaticKeys(Arc::new(JwkSet { keys: vec![] })))
        .issuer("https://issuer.example")
        .audience("rpcwire")
        // The identity expires at `exp` plus this leeway of the authenticator's (30 s by
        // default): none here, the connection's own leeway alone.
        .leeway(Duration::ZERO)
        .shared_secret(SECRET);
    let builder = Builder::new()
        .router(router)
        .map_service(|s| s.authenticator(auth));
    let config = WsConfig {
        credential_leeway: Some(LEEWAY),
        ..WsConfig::default()
    };
    let service = HttpServer::new(builder.clone())
        .path("/rpc")
        .websocket(WsServer::new(builder, config))
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(rpcwire_http::serve(listener, service));

    let exp = unix_now().as_secs() + 3;
    let claims = json!({
        "sub": "user-42", "iss": "https://issuer.example", "aud": "rpcwire",
        "exp": exp, "iat": exp - 3,
    });
    let token = encode(
        &Header::new(Algorithm::HS256),
        &claims,
        &EncodingKey::from_secret(SECRET),
    )
    .unwrap();
    let mut request = format!("ws://{addr}/rpc").into_client_request().unwrap();
    request
        .headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
    let call = |id: u64, method: &str, params: Value| {
        Message::text(json!({"jsonrpc":"2.0","method":method,"params":params,"id":id}).to_string())
    };
    ws.send(call(1, "echo", json!(["hi"]))).await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), ws.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(
        serde_json::from_str::<Value>(answer.to_text().unwrap()).unwrap()["result"],
        json!(["hi"])
    );

    // A call whose answer would come after the expiry plus the leeway.
    let deadline = Duration::from_secs(exp) + LEEWAY;
    tokio::time::sleep((deadline - Duration::from_millis(700)).saturating_sub(unix_now())).await;
    ws.send(call(2, "slow", json!([1_500]))).await.unwrap();

    let mut texts = Vec::new();
    let mut close = None;
    while let Ok(Some(message)) = tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
        match message {
            Ok(Message::Text(text)) => texts.push(text.to_string()),
            Ok(Message::Close(frame)) => {
                close = Some((frame.unwrap(), unix_now()));
            }
            Ok(_) => {}
            Err(_) => break,
        }
    }
    let (frame, at) = close.expect("a close frame");
    assert_eq!(frame.code, CloseCode::Policy);
    assert_eq!(frame.reason.as_str(), "credential expired");
    assert!(
        at + Duration::from_millis(50) >= deadline,
        "closed {:?} before the expiry plus the leeway",
        deadline - at
    );
    assert!(at < deadline + Duration::from_secs(2), "closed late");
    assert!(texts.is_empty(), "answered after its credential: {texts:?}");
}
