//! The authentication matrix against a real authorization server: npm `oauth2-mock-server`
//! (`.ci/install/oauth-interop.sh`) signs RS256 tokens, and `rpcwire serve --http --jwks`
//! verifies them against its JWKS URL, over HTTP POST and a WebSocket upgrade on the same
//! port. No token: 401 with the challenge (no 101 for an upgrade); wrong audience, wrong
//! issuer, expired, `alg: none`, a tampered signature: 401 `invalid_token`; a token without
//! the method's scope: JSON-RPC -32040; a valid token: answered; a token in the query
//! string: refused, not read; malformed and oversized `Authorization` headers: 400 (or 431
//! from the HTTP layer for a head over its limit), and the server goes on. (MCP Streamable
//! HTTP's matrix is `examples/mcp-server/tests/oauth.rs`.) The standalone WebSocket server
//! (`rpcwire serve --ws --jwks`) likewise: no 101 without a valid token, access rules per
//! call, the caller's identity in its handlers.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;

use common::{bounded, serve, serve_ws};
use futures_util::{SinkExt, StreamExt};
use rpcwire_tests::oauth::Issuer;
use rpcwire_tests::pki::Scratch;
use rpcwire_tests::raw_http::{self, header, status};
use serde_json::json;
use tokio::io::AsyncWriteExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;

const AUDIENCE: &str = "https://rpc.test/rpc";
const CALL: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

/// The tokens of the matrix: a valid one, one without the scope, and those to refuse.
fn tokens(issuer: &mut Issuer) -> (String, String, Vec<(&'static str, String)>) {
    let valid = issuer.token(
        json!({"sub": "alice", "aud": AUDIENCE, "scope": "calc"}),
        600,
    );
    let no_scope = issuer.token(json!({"sub": "bob", "aud": AUDIENCE, "scope": "read"}), 600);
    let bad = issuer.bad_tokens(AUDIENCE, "calc", &valid);
    (valid, no_scope, bad)
}

/// `serve`'s options for the issuer's JWTs and this policy file.
fn jwt_args<'a>(issuer: &'a Issuer, policy: &'a std::path::Path) -> [&'a str; 8] {
    [
        "--jwks",
        &issuer.jwks,
        "--issuer",
        &issuer.issuer,
        "--audience",
        AUDIENCE,
        "--policy",
        policy.to_str().unwrap(),
    ]
}

fn post(path: &str, authorization: Option<&str>) -> String {
    let auth = authorization.map_or(String::new(), |a| format!("Authorization: {a}\r\n"));
    format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n{auth}Content-Length: {}\r\n\r\n{CALL}",
        CALL.len()
    )
}

/// Each request on one keep-alive connection: (status, `www-authenticate`, body).
async fn exchange(addr: SocketAddr, requests: &[String]) -> Vec<(u16, String, String)> {
    raw_http::exchange(addr, requests)
        .await
        .into_iter()
        .map(|(head, body)| {
            (
                status(&head),
                header(&head, "www-authenticate").to_owned(),
                body,
            )
        })
        .collect()
}

/// A WebSocket upgrade with this `Authorization` (or none): the call's answer, or the
/// refusal's status.
async fn ws_call(url: &str, authorization: Option<&str>) -> Result<String, u16> {
    ws_calls(url, authorization, &[CALL])
        .await
        .map(|mut answers| answers.remove(0))
}

/// A WebSocket upgrade with this `Authorization` (or none), then `calls` one after another
/// on the connection: their answers, or the refusal's status (and `WWW-Authenticate`).
async fn ws_calls(
    url: &str,
    authorization: Option<&str>,
    calls: &[&str],
) -> Result<Vec<String>, u16> {
    ws_upgrade(url, authorization, calls)
        .await
        .map_err(|(status, _)| status)
}

async fn ws_upgrade(
    url: &str,
    authorization: Option<&str>,
    calls: &[&str],
) -> Result<Vec<String>, (u16, String)> {
    let headers: Vec<(&str, String)> = authorization
        .map(|a| ("authorization", a.to_owned()))
        .into_iter()
        .collect();
    ws_upgrade_with(url, &headers, calls)
        .await
        .map(|(answers, _)| answers)
}

/// The subprotocols a browser offers to carry `token` (what the console sends).
fn browser_offer(token: &str) -> String {
    use base64::Engine as _;
    let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token);
    format!("rpcwire.jsonrpc, rpcwire.bearer.{encoded}")
}

/// [`ws_upgrade`] with these header fields: the answers and the subprotocol the server
/// chose ("" for none), or the refusal's status and `WWW-Authenticate`.
async fn ws_upgrade_with(
    url: &str,
    headers: &[(&str, String)],
    calls: &[&str],
) -> Result<(Vec<String>, String), (u16, String)> {
    let mut request = url.into_client_request().unwrap();
    for (name, value) in headers {
        let name =
            tokio_tungstenite::tungstenite::http::HeaderName::from_bytes(name.as_bytes()).unwrap();
        request.headers_mut().insert(name, value.parse().unwrap());
    }
    let (mut ws, response) = match tokio_tungstenite::connect_async(request).await {
        Ok(connected) => connected,
        Err(tokio_tungstenite::tungstenite::Error::Http(r)) => {
            let challenge = r
                .headers()
                .get("www-authenticate")
                .and_then(|v| v.to_str().ok())
                .unwrap_or_default()
                .to_owned();
            return Err((r.status().as_u16(), challenge));
        }
        Err(e) => panic!("{e}"),
    };
    assert_eq!(response.status(), 101);
    let chosen = response
        .headers()
        .get("sec-websocket-protocol")
        .map_or_else(String::new, |v| v.to_str().unwrap().to_owned());
    let mut answers = Vec::new();
    for call in calls {
        ws.send(Message::text(*call)).await.unwrap();
        let answer = ws.next().await.unwrap().unwrap();
        answers.push(answer.into_text().unwrap().to_string());
    }
    Ok((answers, chosen))
}

#[tokio::test(flavor = "multi_thread")]
async fn jwts_of_a_real_authorization_server_over_http_and_websocket() {
    let Some(mut issuer) = tokio::task::block_in_place(Issuer::start) else {
        return;
    };
    let (valid, no_scope, bad) = tokio::task::block_in_place(|| tokens(&mut issuer));
    bounded(async {
        let scratch = Scratch::new("cli-auth-matrix").unwrap();
        let policy = scratch.write("policy", "* calc\n").unwrap();
        let (_server, url) = serve("--http", &jwt_args(&issuer, &policy)).await;
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/rpc")
            .parse()
            .unwrap();
        let bearer = |t: &str| format!("Bearer {t}");

        // HTTP POST.
        let mut requests = vec![
            post("/rpc", None),
            post("/rpc", Some(&bearer(&valid))),
            post("/rpc", Some(&bearer(&no_scope))),
            post(&format!("/rpc?access_token={valid}"), None),
            post("/rpc", Some("Basic dXNlcjpwYXNz")),
            post("/rpc", Some("Bearer")),
            post("/rpc", Some(&bearer(&"A".repeat(20_000)))),
        ];
        requests.extend(bad.iter().map(|(_, t)| post("/rpc", Some(&bearer(t)))));
        let answers = exchange(addr, &requests).await;
        assert_eq!((answers[0].0, answers[0].1.as_str()), (401, "bearer"));
        assert_eq!(answers[1].0, 200);
        assert!(answers[1].2.contains(r#""result":19"#), "{}", answers[1].2);
        assert_eq!(answers[2].0, 200);
        assert!(
            answers[2].2.contains(r#""code":-32040"#),
            "{}",
            answers[2].2
        );
        assert_eq!(answers[3].0, 400, "a query-string token is refused");
        for (status, _, body) in &answers[4..7] {
            assert_eq!(*status, 400, "malformed or oversized: {body}");
        }
        for ((name, _), (status, challenge, _)) in bad.iter().zip(&answers[7..]) {
            assert_eq!(*status, 401, "{name}");
            assert_eq!(challenge, "bearer error=\"invalid_token\"", "{name}");
        }
        // A head far over the HTTP layer's limit: refused there, and the server goes on.
        let huge = post("/rpc", Some(&bearer(&"A".repeat(1 << 20))));
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        let _ = s.write_all(huge.as_bytes()).await;
        drop(s);
        assert_eq!(
            exchange(addr, &[post("/rpc", Some(&bearer(&valid)))]).await[0].0,
            200
        );

        // WebSocket on the same port and path.
        let ws_url = url.replace("http://", "ws://");
        assert_eq!(
            ws_call(&ws_url, None).await,
            Err(401),
            "no 101 without a token"
        );
        for (name, token) in &bad {
            assert_eq!(
                ws_call(&ws_url, Some(&bearer(token))).await,
                Err(401),
                "{name}"
            );
        }
        let with_query = format!("{ws_url}?access_token={valid}");
        assert_eq!(ws_call(&with_query, None).await, Err(400));
        let answer = ws_call(&ws_url, Some(&bearer(&valid))).await.unwrap();
        assert!(answer.contains(r#""result":19"#), "{answer}");
        let answer = ws_call(&ws_url, Some(&bearer(&no_scope))).await.unwrap();
        assert!(answer.contains(r#""code":-32040"#), "{answer}");
    })
    .await;
}

/// `rpcwire serve --ws --jwks`: the standalone WebSocket server asks the authenticator at
/// the upgrade. No token, and every bad one: 401 with the challenge, never a 101; a token in
/// the query string: 400; a malformed header: 400; a token without the scope: the upgrade
/// succeeds and the call gets -32040 (access rules per call); a valid token: answered, and
/// `whoami` shows the token's subject and scopes to the handler.
#[tokio::test(flavor = "multi_thread")]
async fn jwts_of_a_real_authorization_server_on_the_websocket_server() {
    let Some(mut issuer) = tokio::task::block_in_place(Issuer::start) else {
        return;
    };
    let (valid, no_scope, bad) = tokio::task::block_in_place(|| tokens(&mut issuer));
    bounded(async {
        let scratch = Scratch::new("cli-auth-matrix-ws").unwrap();
        let policy = scratch.write("policy", "* calc\nwhoami\n").unwrap();
        let (_server, url) = serve_ws(&jwt_args(&issuer, &policy)).await;
        let bearer = |t: &str| format!("Bearer {t}");
        assert_eq!(
            ws_upgrade(&url, None, &[CALL]).await,
            Err((401, "Bearer".to_owned())),
            "no 101 without a token"
        );
        for (name, token) in &bad {
            assert_eq!(
                ws_upgrade(&url, Some(&bearer(token)), &[CALL]).await,
                Err((401, "Bearer error=\"invalid_token\"".to_owned())),
                "{name}"
            );
        }
        for malformed in ["Basic dXNlcjpwYXNz", "Bearer"] {
            assert_eq!(
                ws_calls(&url, Some(malformed), &[CALL]).await,
                Err(400),
                "{malformed}"
            );
        }
        let with_query = format!("{url}?access_token={valid}");
        assert_eq!(ws_calls(&with_query, None, &[CALL]).await, Err(400));

        let whoami = r#"{"jsonrpc":"2.0","method":"whoami","id":2}"#;
        let answers = ws_calls(&url, Some(&bearer(&valid)), &[CALL, whoami, CALL])
            .await
            .unwrap();
        assert!(answers[0].contains(r#""result":19"#), "{}", answers[0]);
        let me: serde_json::Value = serde_json::from_str(&answers[1]).unwrap();
        assert_eq!(
            me["result"],
            json!({"subject": "alice", "roles": ["calc"], "authenticated": true})
        );
        assert!(answers[2].contains(r#""result":19"#), "{}", answers[2]);
        let answers = ws_calls(&url, Some(&bearer(&no_scope)), &[CALL, whoami])
            .await
            .unwrap();
        assert!(answers[0].contains(r#""code":-32040"#), "{}", answers[0]);
        assert!(answers[1].contains(r#""subject":"bob""#), "{}", answers[1]);

        // A browser's token, offered as a subprotocol: the same decisions.
        let offer = |token: &str| vec![("sec-websocket-protocol", browser_offer(token))];
        let (answers, chosen) = ws_upgrade_with(&url, &offer(&valid), &[whoami])
            .await
            .unwrap();
        assert_eq!(chosen, "rpcwire.jsonrpc");
        assert!(
            answers[0].contains(r#""subject":"alice""#),
            "{}",
            answers[0]
        );
        assert_eq!(
            ws_upgrade_with(&url, &offer(&bad[0].1), &[CALL])
                .await
                .unwrap_err(),
            (401, "Bearer error=\"invalid_token\"".to_owned()),
            "{}",
            bad[0].0
        );
        let not_base64 = vec![("sec-websocket-protocol", "rpcwire.bearer.%%".to_owned())];
        let mut beside = offer(&valid);
        beside.push(("authorization", bearer(&valid)));
        for refused in [not_base64, beside] {
            let got = ws_upgrade_with(&url, &refused, &[CALL]).await;
            assert_eq!(got.unwrap_err().0, 400, "{refused:?}");
        }
    })
    .await;
}

/// Debug and trace logs of the server (`rpcwire -vv serve`) and of the client
/// (`rpcwire -vv call --bearer`) while good, bad and refused tokens come and go: neither the
/// `Authorization` values nor any token appears in them.
#[tokio::test(flavor = "multi_thread")]
async fn tokens_never_reach_the_logs() {
    let Some(mut issuer) = tokio::task::block_in_place(Issuer::start) else {
        return;
    };
    let (valid, no_scope, bad) = tokio::task::block_in_place(|| tokens(&mut issuer));
    bounded(async {
        let mut server = tokio::process::Command::new(common::bin())
            .args(["-vv", "serve", "--http", "127.0.0.1:0"])
            .args([
                "--jwks",
                &issuer.jwks,
                "--issuer",
                &issuer.issuer,
                "--audience",
                AUDIENCE,
            ])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let stderr = server.stderr.take().unwrap();
        let (tx, rx) = tokio::sync::oneshot::channel();
        let log = tokio::spawn(async move {
            use tokio::io::{AsyncBufReadExt, BufReader};
            let mut lines = BufReader::new(stderr).lines();
            let mut all = String::new();
            let mut tx = Some(tx);
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line
                    .strip_prefix("rpcwire: serving")
                    .and_then(|l| l.rsplit(' ').next())
                {
                    if let Some(tx) = tx.take() {
                        let _ = tx.send(url.to_owned());
                    }
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        });
        let url = rx.await.unwrap();
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/rpc")
            .parse()
            .unwrap();
        let bearer = |t: &str| format!("Bearer {t}");
        let mut sent: Vec<&str> = vec![&valid, &no_scope];
        sent.extend(bad.iter().map(|(_, t)| t.as_str()));
        let mut requests: Vec<String> = sent
            .iter()
            .map(|t| post("/rpc", Some(&bearer(t))))
            .collect();
        requests.push(post(&format!("/rpc?access_token={valid}"), None));
        requests.push(post("/rpc", Some("Basic c2VjcmV0LXBhc3N3b3Jk")));
        let answers = exchange(addr, &requests).await;
        assert_eq!(answers[0].0, 200, "the valid token is served");
        let ws_url = url.replace("http://", "ws://");
        assert!(ws_call(&ws_url, Some(&bearer(&valid))).await.is_ok());
        assert_eq!(ws_call(&ws_url, Some(&bearer(&bad[0].1))).await, Err(401));
        // The same tokens as a browser offers them (base64url in a subprotocol).
        let offered: Vec<String> = [&valid, &bad[0].1].map(|t| browser_offer(t)).into();
        for offer in &offered {
            let headers = [("sec-websocket-protocol", offer.clone())];
            let _ = ws_upgrade_with(&ws_url, &headers, &[CALL]).await;
        }
        let client = common::rpcwire(&[
            "-vv", "call", "--http", &url, "--bearer", &valid, "subtract", "[42, 23]",
        ])
        .await;
        assert_eq!(client.stdout.trim(), "19", "{}", client.stderr);

        server.kill().await.unwrap();
        let server_log = log.await.unwrap();
        assert!(
            server_log.contains("DEBUG"),
            "the server logged at debug level"
        );
        assert!(
            server_log.contains("authentication failed"),
            "refusals are logged (their reasons)"
        );
        for (who, text) in [("server", &server_log), ("client", &client.stderr)] {
            for token in &sent {
                // Any of a token's parts, not only the whole of it.
                for part in token.split('.').filter(|p| p.len() > 8) {
                    assert!(!text.contains(part), "{who} log holds a token part {part}");
                }
            }
            assert!(
                !text.contains("c2VjcmV0LXBhc3N3b3Jk"),
                "{who} log holds a Basic credential"
            );
            for offer in &offered {
                let encoded = offer.rsplit('.').next().unwrap();
                assert!(
                    !text.contains(&encoded[..16]),
                    "{who} log holds a token offered as a subprotocol"
                );
            }
            assert!(
                !text.to_ascii_lowercase().contains("bearer "),
                "{who} log holds a bearer value"
            );
        }
    })
    .await;
}
