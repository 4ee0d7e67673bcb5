//! The span of a batch a driver connection receives (`rpc.batch`, with `jsonrpc.batch.size`):
//! a child of the connection's span, the parent of its members' call spans, whether they run
//! at once or wait in the queue for a handler slot; calls alone stay the connection's
//! children, and a refused batch gets no span. Its own test binary: it installs the process's
//! `tracing` subscriber.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rpcwire_tests::spans::{Seen, Spans};
use rpcwire_tokio::{Builder, Caller, Identity, Router, RpcError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tracing_subscriber::layer::SubscriberExt;

fn router() -> Router {
    Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .method("slow", |ms: (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms.0)).await;
            Ok::<_, RpcError>(ms.0)
        })
}

fn id_of(span: &Seen) -> &str {
    span.fields
        .get("jsonrpc.request.id")
        .map_or("", String::as_str)
}

#[tokio::test(flavor = "current_thread")]
async fn batch_members_are_children_of_the_batch_span() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();

    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let peer = "127.0.0.1:40000".parse().unwrap();
    // One handler at a time: the batch's later members wait in the queue.
    let _server = Builder::new()
        .router(router())
        .map_service(|s| s.concurrency(1))
        .max_batch_len(4)
        .caller(Caller::new(Identity::anonymous(), rpcwire_tokio::transport::TCP).with_peer(peer))
        .run_io(theirs);
    let (read, mut write) = tokio::io::split(ours);
    let mut answers = BufReader::new(read).lines();
    let lines = [
        r#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":"alone-1"}"#,
        r#"[{"jsonrpc":"2.0","method":"slow","params":[20],"id":"m-1"},{"jsonrpc":"2.0","method":"add","params":[2,2],"id":"m-2"},{"jsonrpc":"2.0","method":"slow","params":[1],"id":"m-3"},{"jsonrpc":"2.0","method":"nope","id":"m-4"}]"#,
        r#"{"jsonrpc":"2.0","method":"add","params":[3,3],"id":"alone-2"}"#,
        // Over `max_batch_len`: refused whole, no span.
        r#"[{"jsonrpc":"2.0","method":"add","params":[1,1],"id":"r-1"},{"jsonrpc":"2.0","method":"add","params":[1,1],"id":"r-2"},{"jsonrpc":"2.0","method":"add","params":[1,1],"id":"r-3"},{"jsonrpc":"2.0","method":"add","params":[1,1],"id":"r-4"},{"jsonrpc":"2.0","method":"add","params":[1,1],"id":"r-5"}]"#,
        r#"[{"jsonrpc":"2.0","method":"add","params":[5,5],"id":"n-1"}]"#,
    ];
    for line in lines {
        write.write_all(line.as_bytes()).await.unwrap();
        write.write_all(b"\n").await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(10), answers.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(answer.contains(r#""jsonrpc":"2.0""#), "{answer}");
    }

    let batches = spans.named("rpc.batch");
    assert_eq!(batches.len(), 2, "{batches:#?}");
    let conn = spans.named("rpc.connection");
    assert_eq!(conn.len(), 1);
    for (batch, size) in batches.iter().zip(["4", "1"]) {
        assert_eq!(batch.fields["otel.name"], "batch");
        assert_eq!(batch.fields["otel.kind"], "server");
        assert_eq!(batch.fields["rpc.system.name"], "jsonrpc");
        assert_eq!(batch.fields["network.transport"], "tcp");
        assert_eq!(batch.fields["network.peer.address"], "127.0.0.1");
        assert_eq!(batch.fields["jsonrpc.batch.size"], size, "{batch:?}");
        assert_eq!(spans.get(batch.parent.unwrap()).name, "rpc.connection");
    }
    let calls = spans.named("rpc.server.call");
    let parent_of = |id: &str| -> Seen {
        let call = calls
            .iter()
            .find(|s| id_of(s) == id)
            .unwrap_or_else(|| panic!("no span of {id}: {calls:#?}"));
        spans.get(call.parent.expect("a parent"))
    };
    for id in ["m-1", "m-2", "m-3", "m-4"] {
        let parent = parent_of(id);
        assert_eq!(parent.name, "rpc.batch", "{id}");
        assert_eq!(parent.fields["jsonrpc.batch.size"], "4", "{id}");
    }
    assert_eq!(parent_of("n-1").fields["jsonrpc.batch.size"], "1");
    for id in ["alone-1", "alone-2"] {
        assert_eq!(parent_of(id).name, "rpc.connection", "{id}");
    }
    assert!(calls.iter().all(|s| !id_of(s).starts_with("r-")));
}
