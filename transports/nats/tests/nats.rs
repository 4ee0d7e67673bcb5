//! The NATS transport against a real `nats-server` on loopback: calls, notifications and
//! batches both ways, the limits at their edges, "no responders", the server's deadline, and
//! NATS's service API.

#![allow(clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rpcwire_nats::{is_no_responders, NatsClient, NatsServer, TIMED_OUT};
use rpcwire_tests::brokers::Nats;
use rpcwire_tokio::{Builder, CallError, Router, RpcError};
use serde_json::{json, Value};

async fn connect(nats: &Nats) -> async_nats::Client {
    async_nats::connect(nats.url()).await.expect("connects")
}

fn router() -> Router {
    Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("echo", |(s,): (String,)| Ok::<_, RpcError>(s))
        .method("hang", |(): ()| async {
            std::future::pending::<()>().await;
            Ok::<_, RpcError>(())
        })
}

/// Starts a server of `router` with `server`'s settings, and waits until it answers.
async fn serve(nats: &Nats, server: NatsServer, builder: Builder) -> async_nats::Client {
    let client = connect(nats).await;
    let subject = server.subject.clone();
    tokio::spawn(server.serve(connect(nats).await, builder));
    for _ in 0..200 {
        let ping = br#"{"jsonrpc":"2.0","method":"rpc.discover","id":0}"#;
        if client
            .request(subject.clone(), ping[..].into())
            .await
            .is_ok()
        {
            return client;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("the server never answered");
}

async fn raw(nats: &async_nats::Client, subject: &str, body: &[u8]) -> Value {
    let answer = nats
        .request(subject.to_owned(), body.to_vec().into())
        .await
        .expect("an answer");
    serde_json::from_slice(&answer.payload).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_notifications_and_batches_both_ways() {
    let Some(nats) = Nats::start() else { return };
    let seen = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&seen);
    let router = router().notification("seen", move |(n,): (usize,)| {
        count.fetch_add(n, Ordering::SeqCst);
        async {}
    });
    let raw_client = serve(&nats, NatsServer::new("svc"), Builder::new().router(router)).await;
    let session = NatsClient::new("svc")
        .start(connect(&nats).await, Builder::new())
        .await
        .expect("starts");
    let client = session.client();
    assert_eq!(
        client
            .call::<_, i64>("add", [40, 2])
            .await
            .expect("answered"),
        42
    );
    let mut batch = client.batch();
    batch.call("add", [1, 2]).expect("queued");
    batch.notify("seen", [5]).expect("queued");
    batch.call("nope", ()).expect("queued");
    let results = batch.send().await.expect("answered");
    assert_eq!(results.get::<i64>(0).expect("a result"), 3);
    let missing = results.get::<i64>(1).expect_err("no such method");
    assert_eq!(missing.rpc().map(|e| e.code), Some(-32601));
    client.notify("seen", [2]).await.expect("published");
    let until = Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::SeqCst) < 7 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        7,
        "both notifications ran once"
    );
    // A notification gets no reply: a request with one waits in vain.
    let note = br#"{"jsonrpc":"2.0","method":"seen","params":[0]}"#;
    let silent = raw_client.send_request(
        "svc",
        async_nats::Request::new()
            .payload(note[..].into())
            .timeout(Some(Duration::from_millis(300))),
    );
    assert_eq!(
        silent.await.expect_err("no reply").kind(),
        async_nats::RequestErrorKind::TimedOut
    );
    // The server's notifications reach a client listening on their subject, through its
    // router; the server sends them as a client of that subject.
    let (tx, mut rx) = tokio::sync::mpsc::channel(4);
    let listener = Router::new().notification("tick", move |(n,): (u32,)| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(n).await;
        }
    });
    let listening = NatsClient {
        listen: vec!["svc.events".into()],
        ..NatsClient::new("svc")
    };
    let _listening = listening
        .start(connect(&nats).await, Builder::new().router(listener))
        .await
        .expect("subscribes");
    let notifier = NatsClient::new("svc.events")
        .start(connect(&nats).await, Builder::new())
        .await
        .expect("starts");
    // The subscription is at the server when `start` returns.
    notifier
        .client()
        .notify("tick", [9])
        .await
        .expect("published");
    let tick = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
    assert_eq!(tick.expect("in time"), Some(9));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_responders_ends_a_call_at_once() {
    let Some(nats) = Nats::start() else { return };
    let session = NatsClient::new("nobody")
        .start(connect(&nats).await, Builder::new())
        .await
        .expect("starts");
    let started = Instant::now();
    let call = session
        .client()
        .call_with_timeout::<_, i64>("add", [1, 2], Duration::from_secs(20));
    let error = call.await.expect_err("nobody listens");
    assert!(is_no_responders(&error), "{error:?}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    // A batch too: each call of it.
    let mut batch = session.client().batch();
    batch.call("add", [1, 2]).expect("queued");
    batch.call("add", [3, 4]).expect("queued");
    let results = batch.send().await.expect("answered");
    for i in 0..2 {
        assert!(is_no_responders(
            &results.get::<i64>(i).expect_err("nobody")
        ));
    }
    // The client's own deadline ends a call a server takes too long for.
    let _raw = serve(
        &nats,
        NatsServer::new("nobody"),
        Builder::new().router(router()),
    )
    .await;
    let started = Instant::now();
    let hang = session
        .client()
        .call_with_timeout::<_, ()>("hang", (), Duration::from_millis(300));
    assert!(matches!(hang.await, Err(CallError::Timeout)));
    assert!(started.elapsed() < Duration::from_secs(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_message_is_answered_and_one_byte_more_is_refused() {
    let Some(nats) = Nats::start() else { return };
    const MAX: usize = 1024; // the smallest a builder takes
    let builder = Builder::new().router(router()).max_frame(MAX);
    let client = serve(&nats, NatsServer::new("limits"), builder).await;
    let frame = |pad: usize| {
        let x = "x".repeat(pad);
        format!(r#"{{"jsonrpc":"2.0","method":"echo","params":["{x}"],"id":1}}"#)
    };
    let pad = MAX - frame(0).len();
    assert_eq!(frame(pad).len(), MAX);
    let at_limit = raw(&client, "limits", frame(pad).as_bytes()).await;
    assert_eq!(at_limit["result"], json!("x".repeat(pad)), "{at_limit}");
    let over = raw(&client, "limits", frame(pad + 1).as_bytes()).await;
    assert_eq!(over["error"]["code"], json!(-32600), "{over}");
    assert_eq!(over["error"]["data"], json!("frame too large"), "{over}");
    assert_eq!(over["id"], Value::Null);
}

/// `concurrency` messages are answered at once, and not one more: the others wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_messages_than_the_limit_are_answered_at_once() {
    let Some(nats) = Nats::start() else { return };
    const LIMIT: usize = 3;
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, m) = (Arc::clone(&running), Arc::clone(&most));
    let router = Router::new().method("work", move |(): ()| {
        let (r, m) = (Arc::clone(&r), Arc::clone(&m));
        async move {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            r.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, RpcError>(now)
        }
    });
    let server = NatsServer {
        concurrency: LIMIT,
        ..NatsServer::new("busy")
    };
    let _raw = serve(&nats, server, Builder::new().router(router)).await;
    let session = NatsClient::new("busy")
        .start(connect(&nats).await, Builder::new())
        .await
        .expect("starts");
    let calls = (0..4 * LIMIT).map(|_| session.client().call::<_, usize>("work", ()));
    let started = Instant::now();
    for answer in futures_util::future::join_all(calls).await {
        assert!(answer.expect("answered") <= LIMIT);
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        LIMIT,
        "the limit is reached, never passed"
    );
    // Four rounds of 150 ms: the waiting messages were answered after the first ones.
    assert!(started.elapsed() >= Duration::from_millis(4 * 150 - 50));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_past_the_servers_deadline_is_an_error() {
    let Some(nats) = Nats::start() else { return };
    let server = NatsServer {
        timeout: Duration::from_millis(200),
        ..NatsServer::new("slow")
    };
    let client = serve(&nats, server, Builder::new().router(router())).await;
    let started = Instant::now();
    let body = br#"[{"jsonrpc":"2.0","method":"hang","id":"a"},{"jsonrpc":"2.0","method":"hang"}]"#;
    let answer = raw(&client, "slow", body).await;
    assert_eq!(answer[0]["error"]["code"], json!(TIMED_OUT), "{answer}");
    assert_eq!(answer[0]["id"], json!("a"));
    assert_eq!(answer.as_array().map(Vec::len), Some(1));
    assert!(started.elapsed() < Duration::from_secs(2));
}

/// NATS's service API shows the service, its endpoint on the subject with its queue group,
/// and the endpoint's statistics; `rpc.discover` lists the methods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_api_shows_the_service_and_its_endpoint() {
    let Some(nats) = Nats::start() else { return };
    let server = NatsServer {
        queue_group: Some("workers".into()),
        name: "calc".into(),
        version: "1.2.3".into(),
        ..NatsServer::new("calc.rpc")
    };
    let client = serve(&nats, server, Builder::new().router(router())).await;
    for _ in 0..5 {
        raw(
            &client,
            "calc.rpc",
            br#"{"jsonrpc":"2.0","method":"add","params":[1,1],"id":1}"#,
        )
        .await;
    }
    let info = raw(&client, "$SRV.INFO.calc", b"").await;
    assert_eq!(info["name"], json!("calc"), "{info}");
    assert_eq!(info["version"], json!("1.2.3"));
    assert_eq!(info["endpoints"][0]["name"], json!("jsonrpc"));
    assert_eq!(info["endpoints"][0]["subject"], json!("calc.rpc"));
    assert_eq!(info["endpoints"][0]["queue_group"], json!("workers"));
    let ping = raw(&client, "$SRV.PING", b"").await;
    assert_eq!(ping["name"], json!("calc"));
    let stats = raw(&client, "$SRV.STATS.calc", b"").await;
    // The five calls and `serve`'s first `rpc.discover`.
    assert_eq!(stats["endpoints"][0]["num_requests"], json!(6), "{stats}");
    let discover = raw(
        &client,
        "calc.rpc",
        br#"{"jsonrpc":"2.0","method":"rpc.discover","id":1}"#,
    )
    .await;
    let mut names: Vec<&str> = discover["result"]["methods"]
        .as_array()
        .expect("methods")
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    names.sort_unstable();
    assert_eq!(names, ["add", "echo", "hang"]);
    // A subscription to every instance's answers: one here.
    let inbox = client.new_inbox();
    let mut answers = client.subscribe(inbox.clone()).await.expect("subscribes");
    client
        .publish_with_reply("$SRV.PING.calc", inbox, "".into())
        .await
        .expect("sent");
    let one = tokio::time::timeout(Duration::from_secs(2), answers.next()).await;
    assert!(one.expect("in time").is_some());
}
