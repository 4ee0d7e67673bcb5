//! Authentication and ownership against a real authorization server: npm
//! `oauth2-mock-server` (`.ci/install/oauth-interop.sh`) signs RS256 JWTs for two callers,
//! alice and bob, and the server verifies them against its JWKS URL
//! (`authenticator_with_scheme`). No token: 401 with a `Bearer` challenge; the card is public
//! and declares the scheme; the extended card only with a token; bob cannot get, list,
//! cancel, continue or subscribe to alice's tasks (each is "not found" to him), while alice
//! can. Without the authorization server the first test prints `SKIPPED:` (a failure under
//! `CI=true`); the second needs nothing external.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;

use rpcwire_a2a::{
    A2aServer, AgentCapabilities, AgentCard, AgentInterface, SecurityScheme, TaskContext,
};
use rpcwire_service::jwt::JwtAuthenticator;
use rpcwire_tests::oauth::Issuer;
use rpcwire_tests::raw_http::{exchange, header, json_post, status};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const AUDIENCE: &str = "https://agent.test/a2a";

/// `ask` waits for input; anything else completes.
async fn agent(ctx: TaskContext) {
    if ctx.text() == "ask" && !ctx.is_continuation() {
        ctx.input_required("more?");
    } else {
        ctx.complete(None);
    }
}

fn card(name: &str, url: &str) -> AgentCard {
    AgentCard {
        name: name.into(),
        supported_interfaces: vec![AgentInterface {
            url: url.into(),
            protocol_binding: "JSONRPC".into(),
            protocol_version: "1.0".into(),
            ..AgentInterface::default()
        }],
        capabilities: AgentCapabilities {
            streaming: true,
            ..AgentCapabilities::default()
        },
        ..AgentCard::default()
    }
}

async fn start(configure: impl FnOnce(A2aServer) -> A2aServer) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let url = format!("http://{addr}/");
    let server = configure(A2aServer::new(card("public", &url), agent))
        .extended_card(card("extended", &url));
    tokio::spawn(rpcwire_a2a::serve(listener, server.build()));
    addr
}

/// A POST of `method` with `params` and the bearer `token`: (status, `WWW-Authenticate`,
/// the JSON answer or `null`).
async fn call(
    addr: SocketAddr,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, String, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let mut headers = vec![("A2A-Version".to_owned(), "1.0".to_owned())];
    if let Some(t) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {t}")));
    }
    let answers = exchange(addr, &[json_post("/", &headers, &body.to_string())]).await;
    let (head, body) = &answers[0];
    let value = serde_json::from_str(body).unwrap_or(Value::Null);
    (
        status(head),
        header(head, "www-authenticate").to_owned(),
        value,
    )
}

fn send(text: &str, id: &str) -> Value {
    json!({"message": {"messageId": id, "role": "ROLE_USER", "parts": [{"text": text}]}})
}

#[tokio::test]
async fn jwt_callers_see_only_their_own_tasks() {
    let Some(mut issuer) = Issuer::start() else {
        return;
    };
    let alice = issuer.token(json!({"sub": "alice", "aud": AUDIENCE}), 600);
    let bob = issuer.token(json!({"sub": "bob", "aud": AUDIENCE}), 600);
    let keys = rpcwire_http::jwks::keys(&issuer.jwks).unwrap();
    let auth = JwtAuthenticator::new(keys)
        .issuer(&issuer.issuer)
        .audience(AUDIENCE);
    let addr =
        start(|s| s.authenticator_with_scheme(auth, "jwt", SecurityScheme::bearer("JWT"))).await;

    // No token, or a bad one: 401 with the challenge, nothing runs.
    let (code, challenge, _) = call(addr, None, "SendMessage", send("done", "m0")).await;
    assert_eq!(code, 401);
    // Heads are read lower case.
    assert!(challenge.starts_with("bearer"), "{challenge:?}");
    let (code, _, _) = call(addr, Some("not-a-jwt"), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(code, 401);

    // The public card says how to authenticate, and that an extended card exists.
    let answers = exchange(
        addr,
        &["GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_owned()],
    )
    .await;
    let public: Value = serde_json::from_str(&answers[0].1).unwrap();
    assert_eq!(
        public["securitySchemes"]["jwt"],
        json!({"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}})
    );
    assert_eq!(
        public["securityRequirements"],
        json!([{"schemes": {"jwt": {"list": []}}}])
    );
    assert_eq!(public["capabilities"]["extendedAgentCard"], true);

    // The extended card, with a token.
    let (code, _, extended) = call(addr, Some(&alice), "GetExtendedAgentCard", json!({})).await;
    assert_eq!(code, 200);
    assert_eq!(extended["result"]["name"], "extended", "{extended}");
    assert_eq!(
        extended["result"]["securitySchemes"],
        public["securitySchemes"]
    );

    // Alice's tasks: one waiting for input, one done.
    let (_, _, waiting) = call(addr, Some(&alice), "SendMessage", send("ask", "a1")).await;
    let waiting = waiting["result"]["task"]["id"].as_str().unwrap().to_owned();
    let (_, _, done) = call(addr, Some(&alice), "SendMessage", send("done", "a2")).await;
    assert_eq!(
        done["result"]["task"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );
    // No owner leaks onto the wire.
    assert!(done["result"]["task"].get("owner").is_none(), "{done}");

    // Bob: each of alice's tasks does not exist for him.
    let by_id = json!({"id": waiting});
    for method in ["GetTask", "CancelTask", "SubscribeToTask"] {
        let (code, _, answer) = call(addr, Some(&bob), method, by_id.clone()).await;
        assert_eq!(
            (code, answer["error"]["code"].as_i64()),
            (200, Some(-32001)),
            "{method}: {answer}"
        );
    }
    let mut continued = send("more", "b1");
    continued["message"]["taskId"] = json!(waiting);
    let (_, _, answer) = call(addr, Some(&bob), "SendMessage", continued.clone()).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let (_, _, page) = call(addr, Some(&bob), "ListTasks", json!({})).await;
    assert_eq!(page["result"]["totalSize"], 0, "{page}");
    let (_, _, mine) = call(addr, Some(&bob), "SendMessage", send("done", "b2")).await;
    let bobs = mine["result"]["task"]["id"].as_str().unwrap().to_owned();

    // Alice: hers, and not bob's.
    let (_, _, got) = call(addr, Some(&alice), "GetTask", by_id.clone()).await;
    assert_eq!(
        got["result"]["status"]["state"], "TASK_STATE_INPUT_REQUIRED",
        "{got}"
    );
    let (_, _, page) = call(addr, Some(&alice), "ListTasks", json!({})).await;
    assert_eq!(page["result"]["totalSize"], 2, "{page}");
    let (_, _, answer) = call(addr, Some(&alice), "GetTask", json!({"id": bobs})).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    continued["message"]["messageId"] = json!("a3");
    let (_, _, answer) = call(addr, Some(&alice), "SendMessage", continued).await;
    assert_eq!(
        answer["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answer}"
    );
    let (_, _, answer) = call(addr, Some(&alice), "CancelTask", by_id).await;
    assert_eq!(answer["error"]["code"], -32002, "finished now: {answer}");
}

#[tokio::test]
async fn the_extended_card_is_not_served_to_anonymous_callers() {
    let addr = start(|s| s).await;
    let (code, _, answer) = call(addr, None, "GetExtendedAgentCard", json!({})).await;
    assert_eq!(
        (code, answer["error"]["code"].as_i64()),
        (200, Some(-32004)),
        "{answer}"
    );
}

/// `SubscribeToTask` with `Last-Event-ID: last` and the bearer `token`: (status, body).
async fn resume(addr: SocketAddr, token: &str, task: &str, last: &str) -> (u16, String) {
    let params = json!({"id": task});
    stream(addr, token, "SubscribeToTask", params, Some(last)).await
}

/// A streaming `method` called with the bearer `token` (and `Last-Event-ID: last`), read to
/// the end: (status, body).
async fn stream(
    addr: SocketAddr,
    token: &str,
    method: &str,
    params: Value,
    last: Option<&str>,
) -> (u16, String) {
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params});
    let mut headers = vec![
        ("A2A-Version".to_owned(), "1.0".to_owned()),
        ("Authorization".to_owned(), format!("Bearer {token}")),
    ];
    if let Some(last) = last {
        headers.push(("Last-Event-ID".to_owned(), last.to_owned()));
    }
    // Read to the end of the answer by hand: an event stream's body is chunked.
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = json_post("/", &headers, &body.to_string());
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut read = Vec::new();
    let ended = |b: &[u8]| {
        let text = String::from_utf8_lossy(b);
        let Some((head, body)) = text.split_once("\r\n\r\n") else {
            return false;
        };
        match head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            true => body.ends_with("0\r\n\r\n"),
            false => head
                .to_ascii_lowercase()
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .and_then(|n| n.trim().parse::<usize>().ok())
                .is_some_and(|n| body.len() >= n),
        }
    };
    while !ended(&read) {
        let mut chunk = [0u8; 4096];
        let n = tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut chunk))
            .await
            .expect("an answer in time")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&read));
        read.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&read).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_default();
    (status(head), body.to_owned())
}

#[tokio::test]
async fn a_task_s_logged_events_are_resumed_by_its_owner_only() {
    let tokens: rpcwire_service::StaticTokens = "alice-token @alice user\nbob-token @bob user"
        .parse()
        .unwrap();
    let addr = start(|s| s.authenticator(tokens)).await;
    // Streamed: its events are logged with the ids the stream sent (1: the task).
    let (code, body) = stream(
        addr,
        "alice-token",
        "SendStreamingMessage",
        send("hi", "m1"),
        None,
    )
    .await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("id: 1\n"), "{body}");
    let first = body.lines().find_map(|l| l.strip_prefix("data:")).unwrap();
    let first: Value = serde_json::from_str(first.trim()).unwrap();
    let task = first["result"]["task"]["id"].as_str().unwrap().to_owned();
    // Alice: her task's log after event 1 (the task): its final status, with id 2.
    let (code, body) = resume(addr, "alice-token", &task, "1").await;
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("id: 2\n"), "{body}");
    assert!(body.contains("TASK_STATE_COMPLETED"), "{body}");
    assert!(!body.contains("id: 1\n"), "only the events after 1: {body}");
    // Bob: no such task, and none of its events.
    let (code, body) = resume(addr, "bob-token", &task, "0").await;
    assert_eq!(code, 200, "{body}");
    let answer: Value = serde_json::from_str(body.trim()).unwrap_or(Value::Null);
    assert_eq!(answer["error"]["code"].as_i64(), Some(-32001), "{body}");
    assert!(!body.contains("TASK_STATE"), "{body}");
}
