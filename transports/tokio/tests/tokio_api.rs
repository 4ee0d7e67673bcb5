//! The API a server needs beyond handlers: shared state for a router, and a client handle per
//! accepted connection to call or notify it outside any handler.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::bounded;
use rpcwire_tokio::{Builder, Client, ErrorCode, Router, RpcError, Session};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};
use tokio::sync::mpsc;

struct Counter(AtomicU64);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_is_shared_and_accepted_connections_can_be_notified() {
    bounded(async {
        let router = Router::new()
            .with_state(Counter(AtomicU64::new(0)))
            .method_with_context("next", |ctx, _: ()| async move {
                let counter = ctx
                    .state::<Counter>()
                    .ok_or_else(|| RpcError::standard(ErrorCode::INTERNAL_ERROR))?;
                Ok::<_, RpcError>(counter.0.fetch_add(1, Ordering::Relaxed))
            });
        let accepted: Arc<Mutex<Vec<Client>>> = Arc::default();
        let keep = Arc::clone(&accepted);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .router(router)
                .on_connect(move |client, _| keep.lock().unwrap().push(client))
                .serve_tcp(listener),
        );

        // Two clients that listen for the server's `tick` notification.
        let (seen_tx, mut seen_rx) = mpsc::unbounded_channel();
        let mut sessions = Vec::new();
        for who in 0..2u64 {
            let seen = seen_tx.clone();
            let router = Router::new().notification("tick", move |n: (u64,)| {
                let seen = seen.clone();
                async move {
                    let _ = seen.send((who, n.0));
                }
            });
            sessions.push(
                Builder::new()
                    .router(router)
                    .connect_tcp(addr)
                    .await
                    .unwrap(),
            );
        }
        // The state is one for the router, across connections.
        let a: u64 = sessions[0].client().call("next", ()).await.unwrap();
        let b: u64 = sessions[1].client().call("next", ()).await.unwrap();
        assert_eq!((a, b), (0, 1));

        // Outside any handler, the server notifies every accepted connection.
        let clients: Vec<Client> = accepted.lock().unwrap().clone();
        assert_eq!(clients.len(), 2);
        for client in &clients {
            client.notify("tick", [7]).await.unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..2 {
            got.push(
                tokio::time::timeout(Duration::from_secs(5), seen_rx.recv())
                    .await
                    .unwrap()
                    .unwrap(),
            );
        }
        got.sort_unstable();
        assert_eq!(got, [(0, 7), (1, 7)]);

        for s in sessions {
            s.close().await.unwrap();
        }
        server.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_results_decode_by_the_index_each_call_returned() {
    bounded(async {
        let router = Router::new()
            .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
            .sync_method("name", |_: ()| Ok::<_, RpcError>("rpcwire"));
        let (server, client) = Builder::new().router(router).duplex(Builder::new(), 4096);
        let mut batch = client.client().batch();
        let sum = batch.call("add", [40, 2]).unwrap();
        batch.notify("ignored", ()).unwrap();
        let name = batch.call("name", ()).unwrap();
        let missing = batch.call("missing", ()).unwrap();
        let results = batch.send().await.unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results.get::<i64>(sum).unwrap(), 42);
        assert_eq!(results.get::<String>(name).unwrap(), "rpcwire");
        let err = results.get::<i64>(missing).unwrap_err();
        assert_eq!(err.rpc().map(|e| e.code), Some(-32601));
        assert!(results.get::<i64>(9).is_err(), "no call number 9");
        assert!(results.get::<String>(sum).is_err(), "42 is no string");
        client.close().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

/// With a cancel profile on both sides, a call that times out (or whose future is dropped)
/// cancels the peer's handler: its `Context::cancelled` completes, and it stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_given_up_on_cancels_the_peers_handler() {
    bounded(async {
        let (stopped_tx, mut stopped) = mpsc::unbounded_channel();
        let router = Router::new().method_with_context("work", move |ctx, (tag,): (u64,)| {
            let stopped = stopped_tx.clone();
            async move {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(30)) => Ok::<_, RpcError>(tag),
                    () = ctx.cancelled() => {
                        assert!(ctx.is_cancelled());
                        let _ = stopped.send(tag);
                        Err(RpcError::new(ErrorCode(-32800), "cancelled"))
                    }
                }
            }
        });
        let lsp = |b: Builder| b.map_service(|s| s.cancel_notification("$/cancelRequest", "id"));
        let (server, client) = lsp(Builder::new().router(router)).duplex(lsp(Builder::new()), 4096);
        let c = client.client();

        // A timeout.
        let late = c
            .call_with_timeout::<_, u64>("work", [1], Duration::from_millis(100))
            .await;
        assert!(
            matches!(late, Err(rpcwire_tokio::CallError::Timeout)),
            "{late:?}"
        );
        let tag = tokio::time::timeout(Duration::from_secs(5), stopped.recv()).await;
        assert_eq!(tag.unwrap(), Some(1), "the handler saw the cancellation");

        // A dropped call future.
        let call = c.call::<_, u64>("work", [2]);
        let _ = tokio::time::timeout(Duration::from_millis(100), call).await;
        let tag = tokio::time::timeout(Duration::from_secs(5), stopped.recv()).await;
        assert_eq!(tag.unwrap(), Some(2), "the handler saw the cancellation");

        client.close().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

/// A client that also serves (has a router, so the peer may call it) ends with `join` when it
/// opened the connection itself: its owner is done with it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn join_ends_a_connection_this_side_opened_even_with_a_router() {
    bounded(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(
            Builder::new()
                .router(Router::new().sync_method("one", |_: ()| Ok::<_, RpcError>(1)))
                .serve_tcp(listener),
        );
        let session = Builder::new()
            .router(Router::new().notification("tick", |_: ()| async {}))
            .connect_tcp(addr)
            .await
            .unwrap();
        let one: i64 = session.client().call("one", ()).await.unwrap();
        assert_eq!(one, 1);
        tokio::time::timeout(Duration::from_secs(5), session.join())
            .await
            .expect("join ended the connection")
            .unwrap();
        server.abort();
    })
    .await;
}

/// A raw peer's side of an in-memory pipe: the lines it reads, and its writer.
type RawLines = Lines<BufReader<ReadHalf<DuplexStream>>>;

/// Runs `builder` on one end of an in-memory pipe; the other end is a raw peer that writes
/// and reads JSON text lines.
fn raw_peer(builder: Builder) -> (Session, RawLines, WriteHalf<DuplexStream>) {
    let (ours, theirs) = tokio::io::duplex(4096);
    let (r, w) = tokio::io::split(ours);
    let session = builder.run(r, w);
    let (r, w) = tokio::io::split(theirs);
    (session, BufReader::new(r).lines(), w)
}

/// `work` waits 30 s for its tag, or stops at a cancellation (-32800), telling `started` its
/// tag first; `now` answers its tag at once.
fn cancellable(started: mpsc::UnboundedSender<u64>) -> Router {
    Router::new()
        .method_with_context("work", move |ctx, (tag,): (u64,)| {
            let started = started.clone();
            async move {
                let _ = started.send(tag);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(30)) => Ok::<_, RpcError>(tag),
                    () = ctx.cancelled() => Err(RpcError::new(ErrorCode(-32800), "cancelled")),
                }
            }
        })
        .method(
            "now",
            |(tag,): (u64,)| async move { Ok::<_, RpcError>(tag) },
        )
}

/// MCP's cancel notification for the request with this id (its JSON text), as a line.
fn cancel_line(id: &str) -> String {
    format!(
        "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id}}}}}\n"
    )
}

/// MCP's rule (`answer_cancelled(false)`): a request the peer cancelled gets no answer, alone
/// or in a batch, while LSP's (the default) answers it with what its handler returns. Seen on
/// the wire, with a raw peer.
#[tokio::test]
async fn a_cancelled_request_is_answered_or_released_as_the_profile_says() {
    for answer in [true, false] {
        bounded(async {
            let (started, _) = mpsc::unbounded_channel();
            let (server, mut lines, mut w) = raw_peer(
                Builder::new()
                    .router(cancellable(started))
                    .map_service(|s| s.cancel_notification("notifications/cancelled", "requestId"))
                    .map_service(|s| s.answer_cancelled(answer)),
            );
            // Alone: cancelled (the id written with an escape, the cancellation naming it
            // plainly: the same id), then a request that answers at once.
            w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":\"\\u0061\",\"method\":\"work\",\"params\":[1]}\n")
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            w.write_all(cancel_line("\"a\"").as_bytes()).await.unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"now\",\"params\":[2]}\n")
                .await
                .unwrap();
            let mut got = vec![lines.next_line().await.unwrap().unwrap()];
            if answer {
                got.push(lines.next_line().await.unwrap().unwrap());
                assert!(got[0].contains("-32800") && got[0].contains(r#""id":"\u0061""#), "{got:?}");
            }
            assert_eq!(
                got.last().unwrap(),
                "{\"jsonrpc\":\"2.0\",\"result\":2,\"id\":2}",
                "answer {answer}: {got:?}"
            );
            // In a batch: the cancelled member is left out (or answered), the other one stays.
            w.write_all(b"[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"work\",\"params\":[3]},{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"now\",\"params\":[4]}]\n")
                .await
                .unwrap();
            tokio::time::sleep(Duration::from_millis(50)).await;
            w.write_all(cancel_line("3").as_bytes()).await.unwrap();
            let batch = lines.next_line().await.unwrap().unwrap();
            let v: serde_json::Value = serde_json::from_str(&batch).unwrap();
            let ids: Vec<_> = v.as_array().unwrap().iter().map(|e| e["id"].clone()).collect();
            let want = if answer {
                vec![serde_json::json!(4), serde_json::json!(3)]
            } else {
                vec![serde_json::json!(4)]
            };
            assert_eq!(ids, want, "answer {answer}: {batch}");
            // Our side ends: the connection ends too, with nothing more written.
            w.shutdown().await.unwrap();
            assert_eq!(lines.next_line().await.unwrap(), None);
            server.join().await.unwrap();
        })
        .await;
    }
}

/// Once the peer's input has ended, a running handler's notifications still go out (before
/// its answer), while its calls to the peer fail at once: nothing could answer them.
#[tokio::test]
async fn after_the_peers_input_ends_notifications_still_go_out_and_calls_fail() {
    bounded(async {
        let router = Router::new().method_with_context("work", |ctx, _: ()| async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let noted = ctx.peer().notify("progress", [1]).await.is_ok();
            let asked = ctx.peer().call::<_, u64>("ask", [2]).await;
            Ok::<_, RpcError>((
                noted,
                matches!(asked, Err(rpcwire_tokio::CallError::Closed)),
            ))
        });
        let (server, mut lines, mut w) = raw_peer(Builder::new().router(router));
        w.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"work\"}\n")
            .await
            .unwrap();
        w.shutdown().await.unwrap();
        let mut got = Vec::new();
        while let Some(line) = lines.next_line().await.unwrap() {
            got.push(line);
        }
        assert_eq!(
            got,
            [
                "{\"jsonrpc\":\"2.0\",\"method\":\"progress\",\"params\":[1]}",
                "{\"jsonrpc\":\"2.0\",\"result\":[true,true],\"id\":1}",
            ]
        );
        server.join().await.unwrap();
    })
    .await;
}

/// Under MCP's rule, a request cancelled while it waits for a handler slot (`concurrency`) is
/// let go of before it runs: its handler never starts and nothing answers it.
#[tokio::test]
async fn a_queued_request_cancelled_under_mcps_rule_never_runs() {
    bounded(async {
        let (started_tx, mut started) = mpsc::unbounded_channel::<u64>();
        let (server, mut lines, mut w) = raw_peer(
            Builder::new()
                .router(cancellable(started_tx))
                .map_service(|s| s.concurrency(1))
                .map_service(|s| s.cancel_notification("notifications/cancelled", "requestId"))
                .map_service(|s| s.answer_cancelled(false)),
        );
        let line = |s: &str| format!("{s}\n");
        // 1 runs and holds the only slot; 2 waits for it.
        for id in [1, 2] {
            let call = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"work\",\"params\":[{id}]}}"
            );
            w.write_all(line(&call).as_bytes()).await.unwrap();
        }
        assert_eq!(started.recv().await, Some(1));
        w.write_all(cancel_line("2").as_bytes()).await.unwrap();
        w.write_all(cancel_line("1").as_bytes()).await.unwrap();
        w.write_all(line(r#"{"jsonrpc":"2.0","id":3,"method":"now","params":[3]}"#).as_bytes())
            .await
            .unwrap();
        // The first answer written is 3's: neither 1 nor 2 is answered.
        assert_eq!(
            lines.next_line().await.unwrap().unwrap(),
            r#"{"jsonrpc":"2.0","result":3,"id":3}"#
        );
        w.shutdown().await.unwrap();
        assert_eq!(lines.next_line().await.unwrap(), None);
        server.join().await.unwrap();
        // 2's handler never started.
        assert_eq!(started.try_recv().ok(), None);
    })
    .await;
}

/// How a peer's input behaves once our write to it has failed.
#[derive(Clone, Copy)]
enum AfterWrite {
    /// It ended: the peer closed the whole connection.
    Ends,
    /// It stays open: the peer closed only its reading side.
    StaysOpen,
    /// It was reset.
    Resets,
}

/// A peer that has sent `input` and then gone: every write to it fails with `BrokenPipe`, and
/// only after that does its input show how it left. The order is the one a driver meets when
/// the peer's end of stream and its closed reading side are both there to be found and the
/// write is tried first.
struct GonePeer {
    input: &'static [u8],
    written_to: Arc<std::sync::atomic::AtomicBool>,
    after: AfterWrite,
}

impl tokio::io::AsyncRead for GonePeer {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        use std::task::Poll;
        if !self.input.is_empty() {
            let n = self.input.len().min(buf.remaining());
            buf.put_slice(&self.input[..n]);
            self.input = &self.input[n..];
            return Poll::Ready(Ok(()));
        }
        if !self.written_to.load(Ordering::SeqCst) {
            // Woken by nothing: the driver's failed write ends the wait.
            return Poll::Pending;
        }
        match self.after {
            AfterWrite::Ends => Poll::Ready(Ok(())),
            AfterWrite::StaysOpen => Poll::Pending,
            AfterWrite::Resets => Poll::Ready(Err(std::io::ErrorKind::ConnectionReset.into())),
        }
    }
}

struct GoneWriter(Arc<std::sync::atomic::AtomicBool>);

impl tokio::io::AsyncWrite for GoneWriter {
    fn poll_write(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
        _: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        self.0.store(true, Ordering::SeqCst);
        std::task::Poll::Ready(Err(std::io::ErrorKind::BrokenPipe.into()))
    }
    fn poll_flush(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
    fn poll_shutdown(
        self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::task::Poll::Ready(Ok(()))
    }
}

/// A peer that closed the whole connection before reading our answer has left: `join` ends
/// with `Ok` even when the failed write is seen before the end of its input. A peer that only
/// stopped reading, or reset the connection, is a failure.
#[tokio::test]
async fn a_peer_gone_before_our_answer_has_left_unless_its_input_stays_open() {
    for (after, left) in [
        (AfterWrite::Ends, true),
        (AfterWrite::StaysOpen, false),
        (AfterWrite::Resets, false),
    ] {
        bounded(async {
            let written_to = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let reader = GonePeer {
                input: b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"one\"}\n",
                written_to: Arc::clone(&written_to),
                after,
            };
            let server = Builder::new()
                .router(Router::new().sync_method("one", |_: ()| Ok::<_, RpcError>(1)))
                .run(reader, GoneWriter(Arc::clone(&written_to)));
            let ended = server.join().await;
            assert!(written_to.load(Ordering::SeqCst), "the answer was tried");
            if left {
                assert!(ended.is_ok(), "{ended:?}");
            } else {
                assert!(
                    matches!(&ended, Err(rpcwire_tokio::DriverError::Io(e)) if e.kind() == std::io::ErrorKind::BrokenPipe),
                    "{ended:?}"
                );
            }
        })
        .await;
    }
}
