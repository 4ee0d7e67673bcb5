//! The responder: a whole body answered in the caller's task gets the same answer as on a
//! connection of its own; handlers that wait are awaited within the concurrency limit; bodies
//! whose handlers read a context are not taken. (A dropped answer: the unit tests.)
#![allow(missing_docs, clippy::unwrap_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    let responder = builder().responder();
    for body in BODIES {
        assert!(responder.takes(body.as_bytes()), "{body}");
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
    let responder = builder().max_frame(1024).responder();
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
    let responder = Builder::new()
        .router(router(Arc::clone(&running), Arc::clone(&peak)))
        .concurrency(2)
        .responder();
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
async fn bodies_whose_handlers_read_a_context_are_not_taken() {
    let responder = builder().responder();
    let whoami = br#"{"jsonrpc":"2.0","method":"whoami","id":7}"#;
    assert!(!responder.takes(whoami));
    assert!(!responder.takes(
        br#"[{"jsonrpc":"2.0","method":"subtract","params":[1,2],"id":1},{"jsonrpc":"2.0","method":"whoami","id":7}]"#
    ));
    // Answered anyway when asked: the handler's context works, its peer has no connection.
    let mut answer = Vec::new();
    responder.respond(whoami, &mut answer).await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"7","id":7}"#);

    let calls_back = Builder::new()
        .router(
            Router::new().method_with_context("ask", |ctx, (): ()| async move {
                match ctx.peer().call::<_, i64>("x", ()).await {
                    Err(CallError::Closed) => Ok::<_, RpcError>("closed"),
                    other => Err(RpcError::internal(format!("{other:?}"))),
                }
            }),
        )
        .responder();
    let mut answer = Vec::new();
    calls_back
        .respond(br#"{"jsonrpc":"2.0","method":"ask","id":1}"#, &mut answer)
        .await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"closed","id":1}"#);

    // The fallback reads a context too; asked anyway, it gets the method as sent.
    let fallback = Builder::new()
        .router(Router::new().fallback_method(|ctx, _params| async move {
            Ok::<_, RpcError>(ctx.method().to_owned())
        }))
        .responder();
    let any = br#"{"jsonrpc":"2.0","method":"any/thing","id":2}"#;
    assert!(!fallback.takes(any));
    let mut answer = Vec::new();
    fallback.respond(any, &mut answer).await;
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":"any/thing","id":2}"#);

    // A profile's cancel notification needs the connection its request runs on.
    let mcp = builder()
        .cancel_notification("notifications/cancelled", "requestId")
        .responder();
    assert!(!mcp.takes(
        br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}"#
    ));
    assert!(mcp.takes(br#"{"jsonrpc":"2.0","method":"subtract","params":[1,2],"id":1}"#));
}

#[tokio::test]
async fn waiting_notification_handlers_run_on() {
    let done = Arc::new(tokio::sync::Notify::new());
    let signal = Arc::clone(&done);
    let responder = Builder::new()
        .router(Router::new().notification("later", move |(): ()| {
            let signal = Arc::clone(&signal);
            async move {
                tokio::time::sleep(Duration::from_millis(10)).await;
                signal.notify_one();
            }
        }))
        .responder();
    let mut answer = Vec::new();
    responder
        .respond(br#"{"jsonrpc":"2.0","method":"later"}"#, &mut answer)
        .await;
    assert!(answer.is_empty(), "a notification has no answer");
    tokio::time::timeout(Duration::from_secs(5), done.notified())
        .await
        .unwrap();
}

/// `respond_if_taken`: one parse for what `takes` and `respond` do in two. A single message
/// it takes is answered as `respond` answers it; one whose handler reads a context, and a
/// batch (with such a router), are let go with nothing run or written.
#[tokio::test]
async fn respond_if_taken_answers_what_takes_takes_and_lets_the_rest_go() {
    let responder = builder().responder();
    assert!(!responder.takes_every_body());
    for body in BODIES {
        let mut answer = b"kept".to_vec();
        let taken = responder
            .respond_if_taken(body.as_bytes(), &mut answer)
            .await;
        if body.starts_with('[') {
            assert!(!taken, "a batch is let go: {body}");
            assert_eq!(answer, b"kept");
            continue;
        }
        assert!(taken, "{body}");
        let expected = on_connection(builder(), body.as_bytes()).await;
        assert_eq!(
            String::from_utf8_lossy(&answer[4..]),
            String::from_utf8_lossy(&expected),
            "body {body}"
        );
    }
    let whoami = br#"{"jsonrpc":"2.0","method":"whoami","id":7}"#;
    let mut answer = Vec::new();
    assert!(!responder.respond_if_taken(whoami, &mut answer).await);
    assert!(answer.is_empty(), "nothing written for a body let go");
    // The connection it used answers the next body as if nothing had happened.
    let w1 = br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":7}"#;
    assert!(responder.respond_if_taken(w1, &mut answer).await);
    assert_eq!(answer, br#"{"jsonrpc":"2.0","result":19,"id":7}"#);

    // Notifications: a handler with a context, and the profile's cancel notification, are
    // let go without running; a plain one runs.
    let ran = Arc::new(AtomicUsize::new(0));
    let (with_context, plain) = (Arc::clone(&ran), Arc::clone(&ran));
    let responder = Builder::new()
        .router(
            Router::new()
                .notification_with_context("progress", move |_ctx, _: Vec<i64>| {
                    with_context.fetch_add(100, Ordering::SeqCst);
                    async {}
                })
                .notification("note", move |_: Vec<i64>| {
                    plain.fetch_add(1, Ordering::SeqCst);
                    async {}
                }),
        )
        .cancel_notification("$/cancelRequest", "id")
        .responder();
    for (body, taken) in [
        (
            &br#"{"jsonrpc":"2.0","method":"progress","params":[1]}"#[..],
            false,
        ),
        (
            br#"{"jsonrpc":"2.0","method":"$/cancelRequest","params":{"id":1}}"#,
            false,
        ),
        (br#"{"jsonrpc":"2.0","method":"note","params":[1]}"#, true),
    ] {
        let mut answer = Vec::new();
        assert_eq!(
            responder.respond_if_taken(body, &mut answer).await,
            taken,
            "{}",
            String::from_utf8_lossy(body)
        );
        assert!(answer.is_empty());
    }
    assert_eq!(
        ran.load(Ordering::SeqCst),
        1,
        "only the plain notification ran"
    );

    // A router that reads no context anywhere takes batches too.
    let plain = Builder::new()
        .router(
            Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b)),
        )
        .responder();
    assert!(plain.takes_every_body());
    let batch = br#"[{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":1}]"#;
    let mut answer = Vec::new();
    assert!(plain.respond_if_taken(batch, &mut answer).await);
    assert_eq!(answer, br#"[{"jsonrpc":"2.0","result":2,"id":1}]"#);
}
