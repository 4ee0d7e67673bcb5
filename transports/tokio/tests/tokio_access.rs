//! Caller identity and per-method authorization: the router's rules refuse calls before their
//! handler runs, member by member in a batch, on connections and in the responder alike, and
//! `rpc.discover` shows each caller only what it may call.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use common::bounded;
use rpcwire_tokio::{
    AuthError, AuthFuture, Authenticator, Builder, Caller, Credentials, Identity, Router, RpcError,
    Transport, FORBIDDEN,
};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error>>;

/// A router with a public method, an admin method that counts its runs, and a notification
/// that counts too.
fn guarded(runs: &Arc<AtomicUsize>) -> Router {
    let admin_runs = Arc::clone(runs);
    let notify_runs = Arc::clone(runs);
    Router::new()
        .sync_method("status", |_: ()| Ok::<_, RpcError>("ok"))
        .method_with_context("whoami", |ctx, _: ()| async move {
            Ok::<_, RpcError>(ctx.identity().subject().to_owned())
        })
        .sync_method("admin.reset", move |_: ()| {
            admin_runs.fetch_add(1, Ordering::SeqCst);
            Ok::<_, RpcError>("reset")
        })
        .notification("admin.note", move |_: ()| {
            notify_runs.fetch_add(100, Ordering::SeqCst);
            async {}
        })
        .require("admin.reset", ["admin"])
        .require("admin.note", ["admin"])
}

fn as_subject(subject: &str, roles: &[&str]) -> Caller {
    Caller::new(
        Identity::new(subject).with_roles(roles.iter().copied()),
        Transport::OTHER,
    )
}

/// Sends raw lines to a server built from `server` and returns its answer lines.
async fn exchange(server: Builder, lines: &[&str], answers: usize) -> Result<Vec<Value>> {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let session = server.run_io(theirs);
    let (read, mut write) = tokio::io::split(ours);
    for line in lines {
        write.write_all(line.as_bytes()).await?;
        write.write_all(b"\n").await?;
    }
    let mut reader = BufReader::new(read).lines();
    let mut out = Vec::new();
    while out.len() < answers {
        let line = bounded(reader.next_line()).await?.ok_or("closed early")?;
        out.push(serde_json::from_str(&line)?);
    }
    drop(write);
    drop(reader);
    let _ = session.join().await;
    Ok(out)
}

#[tokio::test]
async fn a_user_is_refused_an_admin_method_and_its_handler_never_runs() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Builder::new()
        .router(guarded(&runs))
        .caller(as_subject("bob", &["user"]));
    let answers = exchange(
        server,
        &[
            r#"{"jsonrpc":"2.0","method":"admin.note"}"#,
            r#"{"jsonrpc":"2.0","method":"admin.reset","id":1}"#,
            r#"{"jsonrpc":"2.0","method":"status","id":2}"#,
            r#"{"jsonrpc":"2.0","method":"nope","id":3}"#,
        ],
        3,
    )
    .await?;
    assert_eq!(answers[0]["error"]["code"], FORBIDDEN.0);
    assert_eq!(answers[0]["error"]["message"], "Forbidden");
    assert!(
        answers[0]["error"].get("data").is_none(),
        "no detail to the caller"
    );
    assert_eq!(answers[0]["id"], 1);
    assert_eq!(answers[1]["result"], "ok");
    assert_eq!(
        answers[2]["error"]["code"], -32601,
        "unknown stays Method not found"
    );
    assert_eq!(runs.load(Ordering::SeqCst), 0, "neither admin handler ran");
    Ok(())
}

#[tokio::test]
async fn in_a_batch_only_the_refused_members_are_refused() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Builder::new()
        .router(guarded(&runs))
        .caller(as_subject("bob", &["user"]));
    let batch = r#"[{"jsonrpc":"2.0","method":"status","id":1},{"jsonrpc":"2.0","method":"admin.reset","id":2},{"jsonrpc":"2.0","method":"whoami","id":3},{"jsonrpc":"2.0","method":"admin.note"}]"#;
    let answers = exchange(server, &[batch], 1).await?;
    let replies = answers[0].as_array().ok_or("not an array")?;
    assert_eq!(
        replies.len(),
        3,
        "the notification gets no reply: {replies:?}"
    );
    let by_id = |id: i64| {
        replies
            .iter()
            .find(|r| r["id"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(by_id(1)["result"], "ok");
    assert_eq!(by_id(2)["error"]["code"], FORBIDDEN.0);
    assert_eq!(by_id(3)["result"], "bob");
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn an_admin_is_let_through() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let server = Builder::new()
        .router(guarded(&runs))
        .caller(as_subject("alice", &["user", "admin"]));
    let answers = exchange(
        server,
        &[
            r#"{"jsonrpc":"2.0","method":"admin.note"}"#,
            r#"{"jsonrpc":"2.0","method":"admin.reset","id":1}"#,
        ],
        1,
    )
    .await?;
    assert_eq!(answers[0]["result"], "reset");
    // The notification ran too (100), before or after the call (1).
    bounded(async {
        while runs.load(Ordering::SeqCst) != 101 {
            tokio::task::yield_now().await;
        }
    })
    .await;
    Ok(())
}

fn method_names(doc: &Value, list: &str) -> Vec<String> {
    doc[list]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn rpc_discover_differs_by_role() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let ask = r#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#;
    let user = exchange(
        Builder::new()
            .router(guarded(&runs))
            .caller(as_subject("bob", &["user"])),
        &[ask],
        1,
    )
    .await?;
    let admin = exchange(
        Builder::new()
            .router(guarded(&runs))
            .caller(as_subject("alice", &["admin"])),
        &[ask],
        1,
    )
    .await?;
    let user_doc = &user[0]["result"];
    let admin_doc = &admin[0]["result"];
    assert_eq!(method_names(user_doc, "methods"), ["status", "whoami"]);
    assert_eq!(
        method_names(admin_doc, "methods"),
        ["admin.reset", "status", "whoami"]
    );
    assert!(method_names(user_doc, "x-notifications").is_empty());
    assert_eq!(method_names(admin_doc, "x-notifications"), ["admin.note"]);
    Ok(())
}

#[tokio::test]
async fn require_by_default_and_a_policy_combine() -> Result {
    let router = Router::new()
        .sync_method("read", |_: ()| Ok::<_, RpcError>(1))
        .sync_method("public", |_: ()| Ok::<_, RpcError>(2))
        .require_by_default(["user"])
        .require("public", Vec::<String>::new())
        .policy(|identity, method| method != "read" || identity.subject() != "mallory");
    let lines = [
        r#"{"jsonrpc":"2.0","method":"read","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"public","id":2}"#,
    ];
    let anon = exchange(Builder::new().router(router.clone()), &lines, 2).await?;
    assert_eq!(
        anon[0]["error"]["code"], FORBIDDEN.0,
        "anonymous holds no role"
    );
    assert_eq!(anon[1]["result"], 2);
    let mallory = exchange(
        Builder::new()
            .router(router.clone())
            .caller(as_subject("mallory", &["user"])),
        &lines,
        2,
    )
    .await?;
    assert_eq!(
        mallory[0]["error"]["code"], FORBIDDEN.0,
        "the policy refuses"
    );
    let carol = exchange(
        Builder::new()
            .router(router)
            .caller(as_subject("carol", &["user"])),
        &lines,
        2,
    )
    .await?;
    assert_eq!(carol[0]["result"], 1);
    Ok(())
}

#[tokio::test]
async fn the_responder_checks_each_bodys_caller() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let builder = Builder::new().router(guarded(&runs));
    let responder =
        rpcwire_service::Responder::new(builder.service_ref().clone(), builder.config());
    let body = br#"{"jsonrpc":"2.0","method":"admin.reset","id":7}"#;
    let user = Arc::new(as_subject("bob", &["user"]));
    let admin = Arc::new(as_subject("alice", &["admin"]));
    let mut answer = Vec::new();
    responder.respond_as(&user, body, &mut answer).await;
    let refused: Value = serde_json::from_slice(&answer)?;
    assert_eq!(refused["error"]["code"], FORBIDDEN.0);
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    answer.clear();
    responder.respond_as(&admin, body, &mut answer).await;
    let answered: Value = serde_json::from_slice(&answer)?;
    assert_eq!(answered["result"], "reset");
    answer.clear();
    // Without a caller: anonymous, refused.
    responder.respond(body, &mut answer).await;
    let anon: Value = serde_json::from_slice(&answer)?;
    assert_eq!(anon["error"]["code"], FORBIDDEN.0);
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    Ok(())
}

/// Lets in loopback peers as `tcp-user`, with the role `user`.
struct LoopbackUsers;

impl Authenticator for LoopbackUsers {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let decided = match credentials.peer {
            Some(peer)
                if peer.ip().is_loopback()
                    && credentials.transport == rpcwire_tokio::transport::TCP =>
            {
                Ok(Identity::new("tcp-user").with_roles(["user"]))
            }
            _ => Err(AuthError::Invalid("not a loopback TCP peer")),
        };
        Box::pin(std::future::ready(decided))
    }
}

/// Refuses everyone.
struct Nobody;

impl Authenticator for Nobody {
    fn authenticate<'a>(&'a self, _: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(std::future::ready(Err(AuthError::Missing)))
    }
}

#[tokio::test]
async fn a_tcp_server_asks_its_authenticator_once_per_connection() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let router = guarded(&runs).method_with_context("peer", |ctx, _: ()| async move {
        let caller = ctx.caller();
        Ok::<_, RpcError>(format!(
            "{:?} {}",
            caller.transport(),
            caller.peer_addr().is_some_and(|p| p.ip().is_loopback())
        ))
    });
    let server = tokio::spawn(
        Builder::new()
            .router(router)
            .map_service(|s| s.authenticator(LoopbackUsers))
            .serve_tcp(listener),
    );
    let session = Builder::new().connect_tcp(addr).await?;
    let who: String = bounded(session.client().call("whoami", ())).await?;
    assert_eq!(who, "tcp-user");
    let peer: String = bounded(session.client().call("peer", ())).await?;
    assert_eq!(peer, "tcp true");
    let refused = bounded(session.client().call::<_, String>("admin.reset", ()))
        .await
        .err()
        .and_then(|e| e.rpc().map(|e| e.code));
    assert_eq!(refused, Some(FORBIDDEN.0));
    session.join().await?;
    server.abort();

    // A refusing authenticator closes the connection before anything is answered.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(
        Builder::new()
            .router(guarded(&runs))
            .map_service(|s| s.authenticator(Nobody))
            .serve_tcp(listener),
    );
    let session = Builder::new().connect_tcp(addr).await?;
    let closed = bounded(session.client().call::<_, String>("status", ())).await;
    assert!(closed.is_err(), "a refused connection answers nothing");
    let _ = session.join().await;
    server.abort();
    assert_eq!(runs.load(Ordering::SeqCst), 0);
    Ok(())
}

#[tokio::test]
async fn a_caller_over_its_rate_limit_is_answered_rate_limited_and_others_are_not() -> Result {
    let runs = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&runs);
    let router = Router::new().sync_method("ping", move |_: ()| {
        counted.fetch_add(1, Ordering::SeqCst);
        Ok::<_, RpcError>("pong")
    });
    // One call a minute, bursts of 3: the fourth in a row is over the limit.
    let limiter = Arc::new(rpcwire_tokio::RateLimiter::new(1.0 / 60.0, 3));
    let lines: Vec<String> = (1..=5)
        .map(|id| format!(r#"{{"jsonrpc":"2.0","method":"ping","id":{id}}}"#))
        .collect();
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let limited = |subject: &str| {
        Builder::new()
            .router(router.clone())
            .map_service(|s| s.shared_rate_limit(Arc::clone(&limiter)))
            .caller(as_subject(subject, &[]))
    };
    let bob = exchange(limited("bob"), &lines, 5).await?;
    let codes: Vec<Value> = bob.iter().map(|a| a["error"]["code"].clone()).collect();
    assert_eq!(
        bob[..3].iter().filter(|a| a["result"] == "pong").count(),
        3,
        "{bob:?}"
    );
    assert_eq!(codes[3], rpcwire_tokio::RATE_LIMITED.0);
    assert_eq!(codes[4], rpcwire_tokio::RATE_LIMITED.0);
    assert_eq!(bob[3]["error"]["message"], "Too many requests");
    assert_eq!(
        runs.load(Ordering::SeqCst),
        3,
        "the limited calls ran no handler"
    );
    // Another connection of bob's shares his bucket; carol has her own.
    let again = exchange(limited("bob"), &lines[..1], 1).await?;
    assert_eq!(again[0]["error"]["code"], rpcwire_tokio::RATE_LIMITED.0);
    let carol = exchange(limited("carol"), &lines[..3], 3).await?;
    assert!(carol.iter().all(|a| a["result"] == "pong"), "{carol:?}");
    Ok(())
}

#[tokio::test]
async fn internal_errors_reach_the_caller_generic_unless_it_may_see_them() -> Result {
    let router = Router::new()
        .sync_method("now", |_: ()| {
            Err::<(), _>(RpcError::internal(
                "db at 10.0.0.5:5432 refused the password",
            ))
        })
        .method("later", |_: ()| async {
            tokio::task::yield_now().await;
            Err::<(), _>(RpcError::new(
                rpcwire_tokio::ErrorCode::INTERNAL_ERROR,
                "secret path /etc/app.key unreadable",
            ))
        })
        .method("boom", |_: ()| async {
            tokio::task::yield_now().await;
            if std::hint::black_box(true) {
                panic!("invariant broken at /src/secret.rs");
            }
            Ok::<_, RpcError>(())
        })
        .sync_method("own", |_: ()| {
            Err::<(), _>(RpcError::new(
                rpcwire_tokio::ErrorCode(-32000),
                "insufficient funds",
            ))
        })
        .show_error_details(|identity| identity.has_role("operator"));
    let lines = [
        r#"{"jsonrpc":"2.0","method":"now","id":1}"#,
        r#"{"jsonrpc":"2.0","method":"later","id":2}"#,
        r#"{"jsonrpc":"2.0","method":"boom","id":3}"#,
        r#"{"jsonrpc":"2.0","method":"own","id":4}"#,
    ];
    let by_id = |answers: &[Value], id: i64| {
        answers
            .iter()
            .find(|a| a["id"] == id)
            .map(|a| a["error"].clone())
            .unwrap_or_default()
    };
    let user = exchange(
        Builder::new()
            .router(router.clone())
            .caller(as_subject("bob", &["user"])),
        &lines,
        4,
    )
    .await?;
    for id in 1..=3 {
        assert_eq!(
            by_id(&user, id),
            serde_json::json!({"code": -32603, "message": "Internal error"}),
            "id {id}: {user:?}"
        );
    }
    assert_eq!(
        by_id(&user, 4)["message"],
        "insufficient funds",
        "other codes pass"
    );
    let operator = exchange(
        Builder::new()
            .router(router)
            .caller(as_subject("ops", &["operator"])),
        &lines,
        4,
    )
    .await?;
    assert_eq!(
        by_id(&operator, 1)["data"],
        "db at 10.0.0.5:5432 refused the password"
    );
    assert_eq!(
        by_id(&operator, 2)["message"],
        "secret path /etc/app.key unreadable"
    );
    assert_eq!(
        by_id(&operator, 3)["message"],
        "Internal error",
        "a panic has no detail to show"
    );
    Ok(())
}
