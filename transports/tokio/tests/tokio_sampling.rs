//! Head sampling of call spans (`telemetry::set_sample_ratio`), read back from a `tracing`
//! layer that records every span: root client calls and server calls without a remote parent
//! are sampled by the ratio, a client call made within a span follows that span, and ratio 1
//! records every call. One test: the ratio is the process's (and `tracing` caches callsite
//! interest per process: a test binary of its own).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use rpcwire_telemetry::{set_sample_ratio, SampleRatio};
use rpcwire_tests::spans::Spans;
use rpcwire_tokio::{Builder, Router, RpcError};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

#[tokio::test(flavor = "current_thread")]
async fn calls_are_sampled_by_the_ratio() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    let server = Builder::new().router(router).run_io(theirs);
    let client = Builder::new().run_io(ours);
    let c = client.client();
    let count = |name: &str| spans.named(name).len();

    // Ratio 0: no span for the root calls, nor for the server calls they make.
    set_sample_ratio(SampleRatio::NEVER);
    for i in 0..20 {
        let sum: i64 = c.call("add", (i, 1)).await.unwrap();
        assert_eq!(sum, i + 1);
    }
    assert_eq!((count("rpc.client.call"), count("rpc.server.call")), (0, 0));
    // Within a span, a client call follows it (recorded).
    let sum: i64 = c
        .call("add", (1, 1))
        .instrument(tracing::info_span!("outer"))
        .await
        .unwrap();
    assert_eq!(sum, 2);
    assert_eq!(count("rpc.client.call"), 1);

    // Ratio 1: every call.
    set_sample_ratio(SampleRatio::ALWAYS);
    for i in 0..20 {
        let _: i64 = c.call("add", (i, 1)).await.unwrap();
    }
    assert_eq!(
        (count("rpc.client.call"), count("rpc.server.call")),
        (21, 20)
    );

    // Ratio 1/2: about half of each, drawn on their own (1 000 calls: 500 ± 5 standard
    // deviations, 79).
    set_sample_ratio(SampleRatio::new(0.5).unwrap());
    for i in 0..1000 {
        let _: i64 = c.call("add", (i, 1)).await.unwrap();
    }
    set_sample_ratio(SampleRatio::ALWAYS);
    let client_spans = count("rpc.client.call") - 21;
    let server_spans = count("rpc.server.call") - 20;
    assert!((421..=579).contains(&client_spans), "{client_spans}");
    assert!((421..=579).contains(&server_spans), "{server_spans}");

    drop(client);
    let _ = server.join().await;
}
