//! The service's responder: a whole body answered in the caller's task gets the same answer
//! as on a stream connection of its own (both go through the one dispatcher); handlers that
//! wait are awaited within the concurrency limit; a handler that reads its context gets a
//! peer whose messages come out before the answer. (A dropped answer: the unit tests.)
#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_service::{Responder, Sent};
use rpcwire_tokio::{Builder, CallError, Framing, Router, RpcError};
use tokio::io::AsyncReadExt;

/// Handlers of every kind the responder takes, and one that reads a context.
fn router(running: Arc<AtomicUsize>, peak: Arc<AtomicUsize>) -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method("sum", |v: Vec<i64>| async move {
            Ok::<_, RpcError>(v.iter().sum::<i64>())
        })
        .method("slow", move |ms: (u64,)| {
            let (running, peak) = (Arc::clone(&running), Arc::clone(&peak));
            async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(ms.0)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                Ok::<_, RpcError>(ms.0)
            }
        })
        .sync_method("boom", |(): ()| -> Result<(), RpcError> {
            panic!("handler bug")
        })
        .method("fails", |(): ()| async {
            Err::<(), _>(RpcError::invalid_params("always"))
        })
        .notification("note", |_: Vec<i64>| async {})
        .method_with_context("whoami", |ctx, (): ()| async move {
            Ok::<_, RpcError>(ctx.id().unwrap_or("").to_owned())
        })
}

fn builder() -> Builder {
    let counters = (Arc::default(), Arc::default());
    Builder::new().router(router(counters.0, counters.1))
}

/// The responder of `builder`'s service and limits.
fn responder_of(builder: &Builder) -> Responder {
    Responder::new(builder.service_ref().clone(), builder.config())
}

/// The answer a connection of its own gives `body` (framed by its length, as HTTP does).
async fn on_connection(builder: Builder, body: &[u8]) -> Vec<u8> {
    let framed = [
        format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes(),
        body.to_vec(),
    ]
    .concat();
    let (writer, mut output) = tokio::io::duplex(1 << 20);
    let (_client, driver) = builder
        .framing(Framing::ContentLength)
        .run_inline(std::io::Cursor::new(framed), writer);
    driver.await.unwrap();
    let mut out = Vec::new();
    output.read_to_end(&mut out).await.unwrap();
    // Without its framing: the header ends at the first blank line.
    match out.windows(4).position(|w| w == b"\r\n\r\n") {
        Some(end) => out[end + 4..].to_vec(),
        None => Vec::new(),
    }
}

const BODIES: &[&str] = &[
    r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
    r#"{"jsonrpc":"2.0","method":"subtract","params":{"a":1},"id":"x"}"#,
    r#"{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":2}"#,
    r#"{"jsonrpc":"2.0","method":"fails","id":3}"#,
    r#"{"jsonrpc":"2.0","method":"nope","id":4}"#,
    r#"{"jsonrpc":"2.0","method":"note","params":[1]}"#,
    r#"{"jsonrpc":"2.0","method":"boom","id":5}"#,
    r#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
    r#"{"jsonrpc":"2.0","method":1,"params":"bar"}"#,
    "[]",
    "[1]",
    "[1,2,3]",
    "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"subtract\",\n  \"params\": [1, 2],\n  \"id\": 6\n}",
    r#"[{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"1"},{"jsonrpc":"2.0","method":"note","params":[7]},{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"2"},{"foo":"boo"},{"jsonrpc":"2.0","method":"foo.get","params":{"name":"myself"},"id":"5"},{"jsonrpc":"2.0","method":"slow","params":[5],"id":"9"}]"#,
    r#"[{"jsonrpc":"2.0","method":"note","params":[1]},{"jsonrpc":"2.0","method":"note","params":[2]}]"#,
    r#"{"jsonrpc":"2.0","method":"subtract","params":[1,2],"id":1,"id":2}"#,
];

#[tokio::test]
async fn answers_as_a_connection_does() {
    let responder = responder_of(&builder());
    for body in BODIES
        .iter()
        .chain(&[r#"{"jsonrpc":"2.0","method":"whoami","id":7}"#])
    {
        let mut answer = b"kept".to_vec();
        responder.respond(body.as_bytes(), &mut answer).await;
        let expected = on_connection(builder(), body.as_bytes()).await;
        assert_eq!(
            String::from_utf8_lossy(&answer[4..]),
            String::from_utf8_lossy(&expected),
            "body {body}"
        );
        assert_eq!(&answer[..4], b"kept", "appended after what was there");
    }
}

/// A `sum` call of `len` bytes exactly (padded with spaces after the last member).
fn sum_call(len: usize) -> String {
    let mut body = String::from(r#"{"jsonrpc":"2.0","method":"sum","params":[1"#);
    while body.len() + 2 + r#"],"id":1}"#.len() <= len {
        body.push_str(",1");
    }
    body.push_str(r#"],"id":1"#);
    while body.len() < len - 1 {
        body.push(' ');
    }
    body.push('}');
    assert_eq!(body.len(), len);
    body
}

#[tokio::test]
async fn the_frame_limit_holds_at_its_edge() {
    let responder = responder_of(&builder().max_frame(1024));
    let at_limit = sum_call(1024);
    let mut answer = Vec::new();
    responder.respond(at_limit.as_bytes(), &mut answer).await;
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    let ones = at_limit.matches('1').count() - 1; // the id is 1 too
    assert_eq!(answer["result"], ones, "{answer}");

    let over = sum_call(1025);
    let mut answer = Vec::new();
    responder.respond(over.as_bytes(), &mut answer).await;
    let answer: serde_json::Value = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["error"]["data"], "frame too large", "{answer}");
}

#[tokio::test]
async fn waiting_handlers_run_within_the_concurrency_limit() {
    let (running, peak) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let responder = responder_of(
        &Builder::new()
            .router(router(Arc::clone(&running), Arc::clone(&peak)))
            .map_service(|s| s.concurrency(2)),
    );
    let calls: Vec<String> = (0..6)
        .map(|i| format!(r#"{{"jsonrpc":"2.0","method":"slow","params":[20],"id":{i}}}"#))
        .collect();
    let body = format!("[{}]", calls.join(","));
    let mut answer = Vec::new();
    responder.respond(body.as_bytes(), &mut answer).await;
    let answer: Vec<serde_json::Value> = serde_json::from_slice(&answer).unwrap();
    assert_eq!(answer.len(), 6);
    let mut ids: Vec<i64> = answer.iter().map(|a| a["id"].as_i64().unwrap()).collect();
    ids.sort_unstable();
    assert_eq!(ids, [0, 1, 2, 3, 4, 5]);
    assert!(answer.iter().all(|a| a["result"] == 20));
    assert_eq!(
        peak.load(Ordering::SeqCst),
        2,
        "at most two at once, and two did run"
    );
    assert_eq!(running.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn a_handler_that_reads_its_context_gets_a_peer() {
    // Its context works, and what it sends the peer comes out before the answer.
    let responder = responder_of(&Builder::new().router(Router::new().method_with_context(
        "work",
        |ctx, (): ()| async move {
            ctx.peer()
                .notify("progress", [50])
                .await
                .map_err(RpcError::from)?;
            Ok::<_, RpcError>(ctx.id().unwrap_or("").to_owned())
        },
    )));
    let caller = Arc::clone(responder.caller());
    let mut exchange = responder.exchange(&caller, br#"{"jsonrpc":"2.0","method":"work","id":7}"#);
    assert_eq!(
        exchange.next().await,
        Some(Sent::Message(
            br#"{"jsonrpc":"2.0","method":"progress","params":[50]}"#.to_vec()
        ))
    );
    assert_eq!(
        exchange.next().await,
        Some(Sent::Answer(
            br#"{"jsonrpc":"2.0","result":"7","id":7}"#.to_vec()
        ))
    );
    assert_eq!(exchange.next().await, None);
    drop(exchange);
    // `respond` drops the messages and keeps the answer.
    let mut answer = Vec::new();
    responder
        .respond(br#"{"jsonrpc":"2.0","method":"work","id":8}"#, &mut answer)
        .await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"8","id":8}"#);

    // A call to the peer of a body cannot be answered (nothing brings a response back): it
    // ends with the connection's default timeout, not never.
    let calls_back = responder_with_timeout(Router::new().method_with_context(
        "ask",
        |ctx, (): ()| async move {
            match ctx.peer().call::<_, i64>("x", ()).await {
                Err(CallError::Timeout) => Ok::<_, RpcError>("timed out"),
                other => Err(RpcError::internal(format!("{other:?}"))),
            }
        },
    ));
    let mut answer = Vec::new();
    calls_back
        .respond(br#"{"jsonrpc":"2.0","method":"ask","id":1}"#, &mut answer)
        .await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"timed out","id":1}"#);

    // The fallback gets the method as sent.
    let fallback = responder_of(&Builder::new().router(Router::new().fallback_method(
        |ctx, _params| async move { Ok::<_, RpcError>(ctx.method().to_owned()) },
    )));
    let mut answer = Vec::new();
    fallback
        .respond(
            br#"{"jsonrpc":"2.0","method":"any/thing","id":2}"#,
            &mut answer,
        )
        .await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"any/thing","id":2}"#);
}

/// A responder whose peer's calls time out after 50 ms.
fn responder_with_timeout(router: Router) -> Responder {
    let builder = Builder::new()
        .router(router)
        .request_timeout(Some(Duration::from_millis(50)));
    let settings = rpcwire_service::ClientSettings {
        request_timeout: Some(Duration::from_millis(50)),
        ..Default::default()
    };
    Responder::with_settings(builder.service_ref().clone(), builder.config(), settings)
}

/// A profile's cancel notification in a later body reaches the handler of a request still
/// running on the same exchange's connection: it is fed through the exchange's input.
#[tokio::test]
async fn a_cancel_notification_stops_its_handler() {
    let responder = responder_of(
        &Builder::new()
            .router(
                Router::new().method_with_context("wait", |ctx, (): ()| async move {
                    ctx.cancelled().await;
                    Ok::<_, RpcError>("stopped")
                }),
            )
            .map_service(|s| s.cancel_notification("$/cancelRequest", "id")),
    );
    let caller = Arc::clone(responder.caller());
    let mut exchange = responder.exchange(&caller, br#"{"jsonrpc":"2.0","method":"wait","id":3}"#);
    let input = exchange.input();
    input
        .send(br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":3}}"#.to_vec())
        .await
        .unwrap();
    assert_eq!(
        tokio::time::timeout(Duration::from_secs(5), exchange.next())
            .await
            .unwrap(),
        Some(Sent::Answer(
            br#"{"jsonrpc":"2.0","result":"stopped","id":3}"#.to_vec()
        ))
    );
}

#[tokio::test]
async fn waiting_notification_handlers_run_on() {
    let done = Arc::new(tokio::sync::Notify::new());
    let signal = Arc::clone(&done);
    let responder = responder_of(&Builder::new().router(Router::new().notification(
        "later",
        move |(): ()| {
            let signal = Arc::clone(&signal);
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                signal.notify_one();
            }
        },
    )));
    let mut answer = Vec::new();
    responder
        .respond(br#"{"jsonrpc":"2.0","method":"later"}"#, &mut answer)
        .await;
    assert!(answer.is_empty(), "a notification has no answer");
    tokio::time::timeout(Duration::from_secs(5), done.notified())
        .await
        .unwrap();
}
