//! Call spans with the OpenTelemetry JSON-RPC attributes, read back from a `tracing` layer that
//! records every span's fields: server spans (in place, in a task, refused, unknown methods as
//! `_OTHER`), client spans, and the connection span they run in.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rpcwire_tests::spans::{Seen, Spans};
use rpcwire_tokio::{Builder, Caller, ErrorCode, Identity, Router, RpcError};
use tracing_subscriber::layer::SubscriberExt;

fn router() -> Router {
    Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("fail", |()| {
            Err::<(), _>(RpcError::new(ErrorCode::INVALID_PARAMS, "no"))
        })
        .method("slow", |ms: (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms.0)).await;
            Ok::<_, RpcError>(ms.0)
        })
}

#[tokio::test(flavor = "current_thread")]
async fn spans_carry_the_json_rpc_attributes() {
    let spans = Spans::default();
    let subscriber = tracing_subscriber::registry().with(spans.clone());
    let _default = tracing::subscriber::set_default(subscriber);

    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let peer = "127.0.0.1:40000".parse().unwrap();
    let server = Builder::new()
        .router(router())
        .caller(Caller::new(Identity::anonymous(), rpcwire_tokio::transport::TCP).with_peer(peer))
        .run_io(theirs);
    let client = Builder::new().run_io(ours);
    let c = client.client();

    let sum: i64 = c.call("add", (2, 3)).await.unwrap();
    assert_eq!(sum, 5);
    let err = c.call::<_, ()>("fail", ()).await.unwrap_err();
    assert!(err.to_string().contains("no"), "{err}");
    let slow: u64 = c.call("slow", (5u64,)).await.unwrap();
    assert_eq!(slow, 5);
    for i in 0..50 {
        let e = c
            .call::<_, ()>(&format!("made-up-{i}"), ())
            .await
            .unwrap_err();
        assert!(e.to_string().contains("-32601") || e.to_string().contains("not found"));
    }

    let server_spans = spans.named("rpc.server.call");
    assert_eq!(server_spans.len(), 53, "{server_spans:#?}");
    let by_method = |m: &str| -> Vec<Seen> {
        server_spans
            .iter()
            .filter(|s| s.fields.get("rpc.method").map(String::as_str) == Some(m))
            .cloned()
            .collect()
    };
    let add = &by_method("add")[0];
    let f = &add.fields;
    assert_eq!(f["otel.name"], "add");
    assert_eq!(f["otel.kind"], "server");
    assert_eq!(f["rpc.system.name"], "jsonrpc");
    assert_eq!(f["jsonrpc.protocol.version"], "2.0");
    assert!(f["jsonrpc.request.id"].parse::<u64>().is_ok(), "{f:?}");
    assert_eq!(f["network.peer.address"], "127.0.0.1");
    assert_eq!(f["network.peer.port"], "40000");
    assert_eq!(f["network.transport"], "tcp");
    assert!(!f.contains_key("error.type"), "{f:?}");
    assert!(!f.contains_key("rpc.response.status_code"), "{f:?}");
    // The call ran in its connection's span.
    let conn = spans.get(add.parent.expect("a parent span"));
    assert_eq!(conn.name, "rpc.connection");
    assert_eq!(conn.fields["network.transport"], "tcp");

    let fail = &by_method("fail")[0].fields;
    assert_eq!(fail["rpc.response.status_code"], "-32602");
    assert_eq!(fail["error.type"], "-32602");
    assert_eq!(fail["otel.status_code"], "ERROR");

    // In a task: the same span, ended when the task answered.
    let slow = &by_method("slow")[0].fields;
    assert_eq!(slow["otel.name"], "slow");
    assert!(!slow.contains_key("error.type"));

    // Made-up names: one bounded name, the original beside it.
    let other = by_method("_OTHER");
    assert_eq!(other.len(), 50);
    assert_eq!(other[7].fields["otel.name"], "_OTHER");
    assert_eq!(other[7].fields["rpc.method_original"], "made-up-7");
    assert_eq!(other[7].fields["error.type"], "-32601");

    let client_spans = spans.named("rpc.client.call");
    assert_eq!(client_spans.len(), 53);
    let fail = client_spans
        .iter()
        .find(|s| s.fields["rpc.method"] == "fail")
        .unwrap();
    assert_eq!(fail.fields["otel.kind"], "client");
    assert_eq!(fail.fields["error.type"], "-32602");
    assert_eq!(fail.fields["rpc.response.status_code"], "-32602");

    drop(client);
    let _ = server.join().await;
}

#[tokio::test(flavor = "current_thread")]
async fn a_null_id_is_left_out() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let spans = Spans::default();
    let _default =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(spans.clone()));
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let server = Builder::new().router(router()).run_io(theirs);
    let (read, mut write) = tokio::io::split(ours);
    write
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,1],\"id\":null}\n\
              {\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,1],\"id\":\"a-b\"}\n",
        )
        .await
        .unwrap();
    let mut lines = BufReader::new(read).lines();
    for _ in 0..2 {
        lines.next_line().await.unwrap().unwrap();
    }
    let server_spans = spans.named("rpc.server.call");
    assert_eq!(server_spans.len(), 2);
    assert!(!server_spans[0].fields.contains_key("jsonrpc.request.id"));
    assert_eq!(server_spans[1].fields["jsonrpc.request.id"], "a-b");
    assert_eq!(server_spans[0].fields["network.transport"], "pipe");
    drop(write);
    drop(lines);
    let _ = server.join().await;
}
