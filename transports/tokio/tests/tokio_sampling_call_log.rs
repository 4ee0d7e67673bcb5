//! A call not sampled is still logged by the call log (target `telemetry::CALL_LOG`) while
//! the call log is on, with no span; a sampled one is logged and has its span. A test binary
//! of its own: the ratio is the process's, and `tracing` caches callsite interest per
//! process.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};

use rpcwire_telemetry::{set_sample_ratio, SampleRatio, CALL_LOG};
use rpcwire_tests::spans::Spans;
use rpcwire_tokio::{Builder, Router, RpcError};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// The `method` of each call log line.
#[derive(Clone, Default)]
struct CallLog(Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> Layer<S> for CallLog {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        struct Method(Option<String>);
        impl tracing::field::Visit for Method {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "method" {
                    self.0 = Some(format!("{value:?}"));
                }
            }
        }
        if event.metadata().target() == CALL_LOG {
            let mut method = Method(None);
            event.record(&mut method);
            self.0.lock().unwrap().push(method.0.unwrap_or_default());
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn unsampled_calls_are_still_logged() {
    let spans = Spans::default();
    let log = CallLog::default();
    let subscriber = tracing_subscriber::registry()
        .with(spans.clone())
        .with(log.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("echo", |p: serde_json::Value| Ok::<_, RpcError>(p));
    let server = Builder::new().router(router).run_io(theirs);
    let client = Builder::new().run_io(ours);
    let c = client.client();

    // Ratio 0: every call logged, none with a span.
    set_sample_ratio(SampleRatio::NEVER);
    for i in 0..5 {
        let sum: i64 = c.call("add", (i, 1)).await.unwrap();
        assert_eq!(sum, i + 1);
    }
    // Params with a `_` but no `_meta` trace context (looked for, out of line): a root all
    // the same.
    let named = serde_json::json!({"a_b": 1, "_meta": {"progressToken": 7}});
    let back: serde_json::Value = c.call("echo", named.clone()).await.unwrap();
    assert_eq!(back, named);
    assert_eq!(spans.named("rpc.server.call").len(), 0);
    assert_eq!(
        *log.0.lock().unwrap(),
        [vec!["add"; 5], vec!["echo"]].concat()
    );

    // Ratio 1: logged, and with their spans.
    set_sample_ratio(SampleRatio::ALWAYS);
    for i in 0..3 {
        let _: i64 = c.call("add", (i, 1)).await.unwrap();
    }
    assert_eq!(spans.named("rpc.server.call").len(), 3);
    assert_eq!(log.0.lock().unwrap().len(), 9);

    drop(client);
    let _ = server.join().await;
}
