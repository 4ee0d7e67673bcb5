//! The service's policies through the A2A endpoint, as over every other transport: the
//! authenticator's identity reaches the agent, a role-restricted method answers Forbidden
//! (-32040) without running, a rate limit of N lets exactly N of N + k calls through (a
//! streaming call counting once, as any other), and a panicking agent answers the generic
//! internal error.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_a2a::{
    A2aClient, A2aServer, Agent, Authenticator, ClientError, Identity, ListTasksRequest, Message,
    RateLimiter, Role, StreamResponse, TaskContext, TaskState, TurnFuture,
};
use rpcwire_service::{AuthError, AuthFuture, Credentials};
use rpcwire_tests::raw_http::{exchange, header, json_post, status};
use serde_json::{json, Value};

mod common;

/// Bearer tokens: `alice` (a user), `olga` (an operator).
struct Tokens;

impl Authenticator for Tokens {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let token = credentials.bearer();
        Box::pin(async move {
            match token? {
                Some("alice") => Ok(Identity::new("alice").with_roles(["user"])),
                Some("olga") => Ok(Identity::new("olga").with_roles(["user", "operator"])),
                Some(_) => Err(AuthError::Invalid("unknown token")),
                None => Err(AuthError::Missing),
            }
        })
    }
}

/// `whoami` completes with the caller's subject as its artifact; `panic` panics; anything
/// else completes at once.
async fn agent(ctx: TaskContext) {
    match ctx.text().as_str() {
        "whoami" => {
            ctx.text_artifact("who", ctx.identity().subject());
        }
        "panic" => panic!("the agent's bug"),
        _ => {}
    }
    ctx.complete(None);
}

/// A server built by `configure`: its address and its JSON-RPC URL.
async fn start(configure: impl FnOnce(A2aServer) -> A2aServer) -> (std::net::SocketAddr, String) {
    let (addr, url, _) = common::serve("policies", agent, configure).await;
    (addr, url)
}

/// A POST of `method` with `params` and the bearer `token` (none: no `Authorization`):
/// (status, `WWW-Authenticate`, the JSON answer or `null`).
async fn call(
    addr: std::net::SocketAddr,
    token: Option<&str>,
    method: &str,
    params: Value,
) -> (u16, String, Value) {
    let mut headers = vec![("A2A-Version".to_owned(), "1.0".to_owned())];
    if let Some(t) = token {
        headers.push(("Authorization".to_owned(), format!("Bearer {t}")));
    }
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let request = json_post("/", &headers, &body.to_string());
    let (head, body) = exchange(addr, &[request]).await.remove(0);
    let answer = serde_json::from_str(&body).unwrap_or(Value::Null);
    (
        status(&head),
        header(&head, "www-authenticate").to_owned(),
        answer,
    )
}

fn send(text: &str) -> Value {
    json!({"message": {
        "messageId": format!("m-{text}"),
        "role": "ROLE_USER",
        "parts": [{"text": text}],
    }})
}

#[tokio::test]
async fn the_authenticated_identity_reaches_the_agent() {
    let (addr, _) = start(|s| s.authenticator(Tokens)).await;
    let (code, _, answer) = call(addr, Some("alice"), "SendMessage", send("whoami")).await;
    assert_eq!(code, 200);
    let task = &answer["result"]["task"];
    assert_eq!(task["status"]["state"], "TASK_STATE_COMPLETED", "{answer}");
    assert_eq!(task["artifacts"][0]["parts"][0]["text"], "alice");

    // No token, or one nobody issued: refused at the edge, nothing run.
    for token in [None, Some("mallory")] {
        let (code, challenge, _) = call(addr, token, "SendMessage", send("whoami")).await;
        assert_eq!(code, 401, "{token:?}");
        // (The raw client reads heads in lower case.)
        assert!(challenge.starts_with("bearer"), "{challenge}");
    }
    // The card stays public.
    let client = A2aClient::discover(&format!("http://{addr}"))
        .await
        .unwrap();
    assert_eq!(client.card().unwrap().name, "policies");
}

#[tokio::test]
async fn a_role_restricted_method_is_forbidden_without_running() {
    let (addr, _) = start(|s| {
        s.authenticator(Tokens).map_router(|r| {
            r.require("SendStreamingMessage", ["operator"])
                .require("CancelTask", ["operator"])
        })
    })
    .await;
    let forbidden = json!({"code": -32040, "message": "Forbidden"});
    let calls = [
        ("SendStreamingMessage", send("whoami")),
        ("CancelTask", json!({"id": "no-such-task"})),
    ];
    for (method, params) in &calls {
        let (code, _, answer) = call(addr, Some("alice"), method, params.clone()).await;
        assert_eq!((code, &answer["error"]), (200, &forbidden), "{method}");
    }
    // `rpc.discover` shows each caller what it may call.
    for (token, shown) in [("alice", false), ("olga", true)] {
        let (_, _, doc) = call(addr, Some(token), "rpc.discover", json!({})).await;
        let names: Vec<&str> = doc["result"]["methods"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|m| m["name"].as_str())
            .collect();
        assert!(names.contains(&"SendMessage"), "{names:?}");
        assert_eq!(names.contains(&"CancelTask"), shown, "{token}: {names:?}");
        assert_eq!(doc["result"]["info"]["title"], "policies");
    }
    // Refused before it ran: alice's streaming message started no task.
    let (_, _, page) = call(addr, Some("alice"), "ListTasks", json!({})).await;
    assert_eq!(page["result"]["totalSize"], 0, "{page}");
    // An operator passes the rule: the methods themselves answer.
    let (_, _, answer) = call(addr, Some("olga"), "CancelTask", calls[1].1.clone()).await;
    assert_eq!(answer["error"]["code"], -32001, "{answer}");
    let (code, _, _) = call(
        addr,
        Some("olga"),
        "SendStreamingMessage",
        calls[0].1.clone(),
    )
    .await;
    assert_eq!(code, 200);
    let (_, _, page) = call(addr, Some("olga"), "ListTasks", json!({})).await;
    assert_eq!(page["result"]["totalSize"], 1, "{page}");
}

#[tokio::test]
async fn a_rate_limit_of_n_lets_exactly_n_calls_through() {
    const N: u32 = 3;
    // Refilled once an hour: nothing comes back during the test.
    let (_, url) = start(|s| s.rate_limit(RateLimiter::new(1.0 / 3600.0, N))).await;
    let client = A2aClient::new(&url).unwrap();
    let mut streams = Vec::new();
    let mut limited = 0;
    for i in 0..N + 2 {
        let message = Message::text(Role::User, format!("m{i}"), "done");
        match client.send_streaming(message).await {
            Ok(stream) => streams.push(stream),
            Err(ClientError::OtherError { code: -32041, .. }) => limited += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((streams.len(), limited), (N as usize, 2));
    // Each stream, counted once when it was opened, runs to its end.
    for mut stream in streams {
        let mut last = None;
        while let Some(event) = stream.next().await {
            last = event.unwrap().state();
        }
        assert_eq!(last, Some(TaskState::Completed));
    }
    // Any other call is over the limit too.
    let e = client.get_task("t", None).await.unwrap_err();
    assert!(
        matches!(e, ClientError::OtherError { code: -32041, .. }),
        "{e}"
    );
}

#[tokio::test]
async fn a_panicking_agent_answers_the_generic_internal_error() {
    let (addr, url) = start(|s| s).await;
    let (code, _, answer) = call(addr, None, "SendMessage", send("panic")).await;
    assert_eq!(code, 200);
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "error": {"code": -32603, "message": "Internal error"}, "id": 1})
    );
    // The task failed, saying nothing of the panic; the server goes on.
    let client = A2aClient::new(&url).unwrap();
    let page = client
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    let task = &page.tasks[0];
    assert_eq!(task.status.state, TaskState::Failed);
    let said = task.status.message.as_ref().map(Message::joined_text);
    assert_eq!(said.as_deref(), Some("the agent failed"));
    // A streaming turn that panics ends its stream with the failed state.
    let mut stream = client
        .send_streaming(Message::text(Role::User, "m2", "panic"))
        .await
        .unwrap();
    let mut last = None;
    while let Some(event) = stream.next().await {
        last = Some(event.unwrap());
    }
    let failed = matches!(&last, Some(StreamResponse::StatusUpdate(s))
        if s.status.state == TaskState::Failed);
    assert!(failed, "{last:?}");
}

/// An agent that panics before its turn's future exists.
struct Broken;

impl Agent for Broken {
    fn execute(&self, _: TaskContext) -> TurnFuture {
        panic!("the agent's bug, before any future")
    }
}

#[tokio::test]
async fn an_agent_that_panics_at_once_leaves_no_turn_running() {
    let (addr, _, service) = common::serve("broken", Broken, |s| s).await;
    let (_, _, answer) = call(addr, None, "SendMessage", send("hi")).await;
    assert_eq!(
        answer["error"],
        json!({"code": -32603, "message": "Internal error"})
    );
    assert_eq!(service.running_tasks(), 0);
    let (_, _, page) = call(addr, None, "ListTasks", json!({})).await;
    let task = &page["result"]["tasks"][0];
    assert_eq!(task["status"]["state"], "TASK_STATE_FAILED", "{page}");
}
