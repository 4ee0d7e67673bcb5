//! What the `metrics` feature records, read back from `metrics-util`'s debugging recorder
//! (installed for this test binary alone): the size of each batch a driver connection
//! receives, refused batches left out, and nothing for single messages; and the calls in
//! flight counted in process (`durations`), which are the calls whose handlers wait.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use rpcwire_telemetry::{self as telemetry, names};
use rpcwire_tokio::{Builder, Router, RpcError};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn req(id: u32) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"add","params":[{id},1],"id":{id}}}"#)
}

#[tokio::test(flavor = "current_thread")]
async fn batch_sizes_are_recorded() {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().unwrap();
    telemetry::enable_metrics();

    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .notification("note", |_: Option<serde_json::Value>| async {});
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let server = Builder::new()
        .router(router)
        .max_batch_len(8)
        .run_io(theirs);
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();

    let note = r#"{"jsonrpc":"2.0","method":"note"}"#;
    let batches = [
        // 3 requests.
        format!("[{},{},{}]", req(1), req(2), req(3)),
        // A single request: no batch.
        req(4),
        // 4 requests, a notification and an invalid element: 6 messages.
        format!("[{},{},{},{},{note},7]", req(5), req(6), req(7), req(8)),
        // Over the limit of 8: refused whole, not counted.
        format!("[{}]", (10..20).map(req).collect::<Vec<_>>().join(",")),
        // 1 request in a batch.
        format!("[{}]", req(30)),
    ];
    for frame in &batches {
        write.write_all(frame.as_bytes()).await.unwrap();
        write.write_all(b"\n").await.unwrap();
        // One answer line per frame (a batch's answers come as one array).
        let answer = lines.next_line().await.unwrap().unwrap();
        assert!(answer.contains("\"jsonrpc\""), "{answer}");
    }
    // Pipelined in one write: frames of one message before, between and after batches, an
    // invalid element first in a batch (counted: 3 messages), batches back to back.
    let pipelined = [
        req(40),
        format!("[7,{},{}]", req(41), req(42)),
        req(43),
        format!("[{}]", req(44)),
        format!("[{},{}]", req(45), req(46)),
        req(47),
    ];
    write
        .write_all(format!("{}\n", pipelined.join("\n")).as_bytes())
        .await
        .unwrap();
    for _ in &pipelined {
        let answer = lines.next_line().await.unwrap().unwrap();
        assert!(answer.contains("\"jsonrpc\""), "{answer}");
    }
    drop(write);
    drop(lines);
    let _ = server.join().await;

    let sizes: Vec<f64> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .find(|(key, ..)| key.key().name() == names::BATCH_SIZE)
        .map(|(.., value)| match value {
            DebugValue::Histogram(values) => values.into_iter().map(|v| v.into_inner()).collect(),
            other => panic!("not a histogram: {other:?}"),
        })
        .expect("batch sizes recorded");
    assert_eq!(sizes, [3.0, 6.0, 1.0, 3.0, 1.0, 2.0]);
}

/// The calls in flight are the calls whose handlers wait (in tasks): one while a handler
/// waits, none once it answered; a handler that answers at once is never counted (it runs
/// within its connection's driver). Counted in process (`durations::aggregate`), as
/// `rpcwire serve --metrics` counts them. The gauge is the process's: the other test of this
/// binary calls only handlers that answer at once, and notifications, neither counted.
#[tokio::test(flavor = "current_thread")]
async fn calls_in_flight_are_the_handlers_that_wait() {
    rpcwire_telemetry::durations::aggregate();
    telemetry::enable_metrics();
    let gate = std::sync::Arc::new(tokio::sync::Notify::new());
    let opened = gate.clone();
    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .method("wait", move |_: Option<serde_json::Value>| {
            let gate = opened.clone();
            async move {
                gate.notified().await;
                Ok::<_, RpcError>(1)
            }
        });
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let server = Builder::new().router(router).run_io(theirs);
    let (read, mut write) = tokio::io::split(ours);
    let mut lines = BufReader::new(read).lines();
    let in_flight = || rpcwire_telemetry::durations::in_flight().expect("counted in process");
    // The calls in flight once they are `want`, or after a bounded number of yields to the
    // tasks on this thread (the driver and the handlers').
    let settle = |want: i64| async move {
        for _ in 0..1000 {
            if in_flight() == want {
                break;
            }
            tokio::task::yield_now().await;
        }
        in_flight()
    };

    write
        .write_all(format!("{}\n", req(1)).as_bytes())
        .await
        .unwrap();
    let answer = lines.next_line().await.unwrap().unwrap();
    assert!(answer.contains("\"result\":2"), "{answer}");
    assert_eq!(in_flight(), 0, "a handler that answered at once");

    let wait = r#"{"jsonrpc":"2.0","method":"wait","id":2}"#;
    write
        .write_all(format!("{wait}\n").as_bytes())
        .await
        .unwrap();
    // The driver runs on this thread: yield until it has started the handler.
    assert_eq!(settle(1).await, 1, "a handler that waits");
    gate.notify_one();
    let answer = lines.next_line().await.unwrap().unwrap();
    assert!(answer.contains("\"result\":1"), "{answer}");
    assert_eq!(in_flight(), 0, "its answer written");

    // A handler still waiting when its connection's driver is stopped (a write to a peer
    // that has gone fails, or the server shuts down): the driver's tasks are aborted, and
    // the call is counted out all the same.
    write
        .write_all(format!("{wait}\n").as_bytes())
        .await
        .unwrap();
    assert_eq!(settle(1).await, 1, "a second handler that waits");
    let (_client, driver) = server.into_parts();
    driver.abort();
    assert!(driver.await.unwrap_err().is_cancelled());
    // An aborted task's future is dropped when the runtime next runs it.
    assert_eq!(
        settle(0).await,
        0,
        "a waiting handler whose connection closed"
    );
}
