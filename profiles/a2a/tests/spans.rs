//! The dispatcher's span through the A2A endpoint: one `rpc.server.call` span (kind server)
//! per call, a streaming call's included, with no span of the profile's own around it; the
//! request's `traceparent` reaches the call (the remote parent of its span) and the agent.
//!
//! Its own test binary: `tracing` caches callsite interest per process, and this one installs
//! a global subscriber.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_a2a::{A2aClient, Message, Role, TaskContext, TaskState};
use rpcwire_tests::raw_http::{exchange, json_post};
use rpcwire_tests::spans::Spans;
use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

mod common;

const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Completes with the trace context its caller came with as its artifact.
async fn agent(ctx: TaskContext) {
    let traceparent = ctx.caller().trace_context().map(|t| t.traceparent());
    ctx.text_artifact("trace", traceparent.unwrap_or_default());
    ctx.complete(None);
}

#[tokio::test]
async fn one_server_span_per_call_with_the_callers_trace_context() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();
    let (addr, url, _) = common::serve("spans", agent, |s| s).await;

    // SendMessage with a `traceparent`: the agent sees it.
    let headers = [
        ("A2A-Version".to_owned(), "1.0".to_owned()),
        ("traceparent".to_owned(), TP.to_owned()),
    ];
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params":
        {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let (_, answer) = exchange(addr, &[json_post("/", &headers, &body.to_string())])
        .await
        .remove(0);
    let answer: Value = serde_json::from_str(&answer).unwrap();
    let artifact = &answer["result"]["task"]["artifacts"][0]["parts"][0]["text"];
    assert_eq!(artifact, TP, "{answer}");

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
    assert_eq!(methods, ["SendMessage", "SendStreamingMessage", "GetTask"]);
    for call in &calls {
        assert_eq!(call.fields["otel.kind"], "server", "{call:?}");
        // Nothing of the profile's between the call and the request: at most the
        // connection's span above it.
        if let Some(parent) = call.parent {
            assert_eq!(spans.get(parent).name, "rpc.connection", "{call:?}");
        }
    }
}
