//! An unsampled call sends its trace on to the calls its handler makes, one trace for all of
//! them: those made in the handler's first poll (in place, in the connection's driver) and
//! those made after it waited (in its task). At ratio 0 with a subscriber listening, a root
//! call to A makes two calls to B (`params._meta` carries their `traceparent`), one before its
//! first wait and one after; B answers each with the `traceparent` it got. In a test binary of
//! its own: the sample ratio is the process's.
#![cfg(feature = "otel")]
#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_telemetry::trace_context::TraceContext;
use rpcwire_telemetry::{set_sample_ratio, SampleRatio};
use rpcwire_tests::spans::Spans;
use rpcwire_tokio::{Builder, Router, RpcError};
use serde_json::Value;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "current_thread")]
async fn an_unsampled_root_sends_one_trace_on_before_and_after_it_waits() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    set_sample_ratio(SampleRatio::NEVER);

    // B: answers with the traceparent of the call's `_meta`.
    let (to_b, b_side) = tokio::io::duplex(1 << 16);
    let b_router = Router::new().method("echo", |params: Value| async move {
        Ok::<_, RpcError>(
            params["_meta"]["traceparent"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        )
    });
    let b = Builder::new().router(b_router).run_io(b_side);
    let (b_client, a_to_b) = Builder::new().meta_traces(true).run_io(to_b).into_parts();

    // A: calls B twice, the first call started in the handler's first poll.
    let (to_a, a_side) = tokio::io::duplex(1 << 16);
    let a_router = Router::new().method("twice", move |(): ()| {
        let b = b_client.clone();
        async move {
            let first: String = b.call("echo", serde_json::json!({})).await?;
            let second: String = b.call("echo", serde_json::json!({})).await?;
            Ok::<_, RpcError>((first, second))
        }
    });
    let a = Builder::new().router(a_router).run_io(a_side);
    let front = Builder::new().run_io(to_a);

    for _ in 0..3 {
        let (first, second): (String, String) = front.client().call("twice", ()).await.unwrap();
        let first = TraceContext::parse(&first, None).expect("a traceparent in the first call");
        let second = TraceContext::parse(&second, None).expect("a traceparent in the second");
        assert!(
            !first.sampled() && !second.sampled(),
            "{first:?} {second:?}"
        );
        assert_eq!(
            first.trace_id_hex(),
            second.trace_id_hex(),
            "one trace for the calls before and after the handler waited"
        );
    }
    // Nothing was recorded: every call unsampled.
    assert!(spans.named("rpc.server.call").is_empty());
    assert!(spans.named("rpc.client.call").is_empty());

    drop(front);
    let _ = a.join().await;
    a_to_b.abort();
    let _ = b.join().await;
}
