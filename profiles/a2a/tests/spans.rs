//! The dispatcher's span through the A2A endpoint: one `rpc.server.call` span (kind server)
//! per call, a streaming call's included, with no span of the profile's own around it; the
//! request's `traceparent` reaches the call's caller (the remote parent of its span); each
//! span names the server's end of its connection (`server.address`, `server.port`).
//!
//! Its own test binary: `tracing` caches callsite interest per process, and this one installs
//! a global subscriber.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_a2a::{A2aClient, Message, Role, TaskContext, TaskState};
use rpcwire_service::{Context, RpcError};
use rpcwire_tests::raw_http::{exchange, json_post};
use rpcwire_tests::spans::Spans;
use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

mod common;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

async fn agent(ctx: TaskContext) {
    ctx.complete(None);
}

#[tokio::test]
async fn one_server_span_per_call_with_the_callers_trace_context() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();
    // A method of the application's beside A2A's: the trace context its call was given.
    let traceparent = |ctx: Context, _: Option<Value>| async move {
        let trace = ctx.caller().trace_context().map(|t| t.traceparent());
        Ok::<_, RpcError>(trace)
    };
    let (addr, url, _) = common::serve("spans", agent, |s| {
        s.map_router(move |r| r.method_with_context("traceparent", traceparent))
    })
    .await;

    // With a `traceparent` header: the call has it.
    let headers = [
        ("A2A-Version".to_owned(), "1.0".to_owned()),
        ("traceparent".to_owned(), TP.to_owned()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "traceparent"});
    let (_, answer) = exchange(addr, &[json_post("/", &headers, &body.to_string())])
        .await
        .remove(0);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    assert_eq!(answer["result"], TP, "{answer}");
    let body = json!({"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params":
        {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    exchange(addr, &[json_post("/", &headers, &body.to_string())]).await;

    // A streaming call, read to its end, then a GetTask.
    let client = A2aClient::new(&url).unwrap();
    let mut stream = client
        .send_streaming(Message::text(Role::User, "m2", "hi"))
        .await
        .unwrap();
    let mut task_id = String::new();
    let mut last = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        if let rpcwire_a2a::StreamResponse::Task(t) = &event {
            task_id.clone_from(&t.id);
        }
        last = event.state();
    }
    assert_eq!(last, Some(TaskState::Completed));
    client.get_task(&task_id, None).await.unwrap();

    let calls = spans.named("rpc.server.call");
    let methods: Vec<&str> = calls
        .iter()
        .map(|c| c.fields["rpc.method"].as_str())
        .collect();
    assert_eq!(
        methods,
        [
            "traceparent",
            "SendMessage",
            "SendStreamingMessage",
            "GetTask"
        ]
    );
    for call in &calls {
        assert_eq!(call.fields["otel.kind"], "server", "{call:?}");
        // The server's end of the connection, as on the HTTP server's spans.
        assert_eq!(
            call.fields.get("server.address").map(String::as_str),
            Some("127.0.0.1"),
            "{call:?}"
        );
        assert_eq!(
            call.fields.get("server.port"),
            Some(&addr.port().to_string()),
            "{call:?}"
        );
        // Nothing of the profile's between the call and the request: at most the
        // connection's span above it.
        if let Some(parent) = call.parent {
            assert_eq!(spans.get(parent).name, "rpc.connection", "{call:?}");
        }
    }
}
