//! End-to-end behaviour of the tokio driver over in-memory duplex pipes and TCP loopback.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{bounded, pair, router, Link};
use rpcwire_tokio::{Builder, CallError, Client, Framing, Router, RpcError, SessionStats};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinSet;

/// Polls the client's stats until `done` holds (bounded: 5 s), returning the last snapshot.
async fn settle(c: &Client, done: impl Fn(&SessionStats) -> bool) -> SessionStats {
    let mut stats = c.stats().await.unwrap();
    for _ in 0..500 {
        if done(&stats) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        stats = c.stats().await.unwrap();
    }
    stats
}

async fn pipelined(link: Link, n: usize) {
    let (server, client) = pair(link, Builder::new().router(router()), Builder::new()).await;
    let c = client.client().clone();
    let started = Instant::now();
    let mut set = JoinSet::new();
    for i in 0..n {
        let c = c.clone();
        set.spawn(async move { (i, c.call::<_, Vec<usize>>("echo", [i]).await) });
    }
    let mut seen = vec![false; n];
    while let Some(joined) = set.join_next().await {
        let (i, got) = joined.unwrap();
        assert_eq!(got.unwrap(), vec![i], "call {i} got another call's answer");
        assert!(!seen[i], "call {i} answered twice");
        seen[i] = true;
    }
    assert!(seen.iter().all(|s| *s));
    let elapsed = started.elapsed();
    let stats = server.client().stats().await.unwrap();
    assert_eq!(stats.core.frames_out, n as u64, "one answer per request");
    assert_eq!(c.stats().await.unwrap().pending_calls, 0);
    println!(
        "{link:?}: {n} pipelined calls in {:?} ({:.0} calls/s)",
        elapsed,
        n as f64 / elapsed.as_secs_f64()
    );
    drop(c);
    client.join().await.unwrap();
    server.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_pipelined_calls_duplex() {
    bounded(pipelined(Link::Duplex, 1000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_pipelined_calls_tcp() {
    bounded(pipelined(Link::Tcp, 1000)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throughput_tcp_loopback() {
    // A measurement, not a timed assertion: printed with --nocapture.
    bounded(pipelined(Link::Tcp, 20_000)).await;
}

async fn sleeps_out_of_order(link: Link) {
    let (server, client) = pair(link, Builder::new().router(router()), Builder::new()).await;
    let c = client.client().clone();
    let started = Instant::now();
    let order = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut set = JoinSet::new();
    for i in 0..50u64 {
        let ms = (50 - i) * 20; // decreasing: the first sent finishes last
        let (c, order) = (c.clone(), Arc::clone(&order));
        set.spawn(async move {
            let got: u64 = c.call("sleep", json!({ "ms": ms })).await.unwrap();
            order.lock().unwrap().push(ms);
            (ms, got, started.elapsed())
        });
    }
    while let Some(joined) = set.join_next().await {
        let (ms, got, at) = joined.unwrap();
        assert_eq!(got, ms, "a caller got another caller's answer");
        assert!(
            at >= Duration::from_millis(ms),
            "answered before its sleep ended"
        );
    }
    // Completion order follows the durations, not the sending order (a few neighbours may
    // swap under heavy load: they are 20 ms apart).
    let order = order.lock().unwrap().clone();
    let swaps = order.windows(2).filter(|w| w[0] > w[1]).count();
    assert!(
        swaps <= 10,
        "answers should arrive shortest sleep first: {order:?}"
    );
    assert!(order[0] <= 200 && order[49] >= 800, "{order:?}");
    drop(c);
    client.join().await.unwrap();
    server.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sleeps_return_out_of_order_duplex() {
    bounded(sleeps_out_of_order(Link::Duplex)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sleeps_return_out_of_order_tcp() {
    bounded(sleeps_out_of_order(Link::Tcp)).await;
}

async fn flood_each_other(link: Link) {
    // Both sides serve and call, one handler at a time, with payloads far larger than the
    // pipe: a driver that stopped reading while writing would deadlock here.
    let side = || {
        Builder::new()
            .router(router())
            .map_service(|s| s.concurrency(1))
    };
    let (a, b) = match link {
        Link::Duplex => side().duplex(side(), 1024),
        Link::Tcp => pair(link, side(), side()).await,
    };
    let payload = "x".repeat(16 << 10);
    let mut set = JoinSet::new();
    for (name, session) in [("a", &a), ("b", &b)] {
        for i in 0..100usize {
            let c = session.client().clone();
            let p = payload.clone();
            set.spawn(async move {
                let got: (usize, String) = c.call("echo", (i, &p)).await.unwrap();
                assert_eq!(got, (i, p), "{name}: wrong answer");
            });
        }
    }
    while let Some(joined) = set.join_next().await {
        joined.unwrap();
    }
    a.client().shutdown();
    b.client().shutdown();
    a.join().await.unwrap();
    b.join().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_call_each_other_with_concurrency_one_duplex() {
    bounded(flood_each_other(Link::Duplex)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_sides_call_each_other_with_concurrency_one_tcp() {
    bounded(flood_each_other(Link::Tcp)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_are_read_while_every_handler_slot_is_busy() {
    bounded(async {
        // A's only handler slot is taken by `ask`, which waits for B's answer: A must keep
        // reading B's responses while 19 more `ask` requests wait for that slot.
        let a = Builder::new()
            .router(router())
            .map_service(|s| s.concurrency(1));
        let b = Builder::new().router(router());
        let (a, b) = a.duplex(b, 4096);
        let mut set = JoinSet::new();
        for i in 0..20 {
            let c = b.client().clone();
            set.spawn(async move {
                let got: Vec<i32> = c.call("ask", [i]).await.unwrap();
                assert_eq!(got, vec![i]);
            });
        }
        while let Some(joined) = set.join_next().await {
            joined.unwrap();
        }
        a.client().shutdown();
        a.join().await.unwrap();
        b.client().shutdown();
        b.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_killed_mid_call_fails_every_pending_call_promptly() {
    bounded(async {
        // The "server" reads the requests and then vanishes (its socket is dropped).
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let killer = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut lines = 0;
            while lines < 5 {
                let n = s.read(&mut buf).await.unwrap();
                lines += buf[..n].iter().filter(|b| **b == b'\n').count();
            }
            drop(s);
        });
        let session = Builder::new()
            .request_timeout(None) // only the close can end these calls
            .connect_tcp(addr)
            .await
            .unwrap();
        let mut set = JoinSet::new();
        for i in 0..5 {
            let c = session.client().clone();
            set.spawn(async move {
                c.call::<_, Value>("sleep", json!({ "ms": 60_000 + i }))
                    .await
            });
        }
        killer.await.unwrap();
        let killed = Instant::now();
        while let Some(joined) = set.join_next().await {
            assert!(matches!(joined.unwrap(), Err(CallError::Closed)));
        }
        assert!(
            killed.elapsed() < Duration::from_secs(2),
            "calls failed too slowly"
        );
        // New calls fail at once too.
        let late = session.client().call::<_, Value>("echo", [1]).await;
        assert!(matches!(late, Err(CallError::Closed)));
        session.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aborted_server_task_fails_pending_calls() {
    bounded(async {
        let (server, client) =
            pair(Link::Tcp, Builder::new().router(router()), Builder::new()).await;
        let c = client.client().clone();
        let call =
            tokio::spawn(async move { c.call::<_, Value>("sleep", json!({"ms": 60_000})).await });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let (_server_client, task) = server.into_parts();
        task.abort(); // the driver and its socket are dropped: like a killed process
        let outcome = call.await.unwrap();
        assert!(matches!(outcome, Err(CallError::Closed)), "{outcome:?}");
        client.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_timeout_then_connection_goes_on() {
    bounded(async {
        let (server, client) = pair(
            Link::Duplex,
            Builder::new().router(router()),
            Builder::new(),
        )
        .await;
        let c = client.client();
        let started = Instant::now();
        let r = c
            .call_with_timeout::<_, u64>("sleep", json!({"ms": 1000}), Duration::from_millis(50))
            .await;
        assert!(matches!(r, Err(CallError::Timeout)), "{r:?}");
        // Far below the handler's sleep, so that a loaded machine's scheduling delays cannot
        // make the timely timeout look late.
        assert!(
            started.elapsed() < Duration::from_millis(900),
            "did not wait for the answer"
        );
        assert_eq!(c.call::<_, i64>("add", [2, 3]).await.unwrap(), 5);
        // The late answer arrives and is ignored.
        let stats = settle(c, |s| s.core.unknown_responses == 1).await;
        assert_eq!(stats.core.unknown_responses, 1);
        // Which timer ends the call is a race, both correct: the core's deadline (counted in
        // `timeouts`) or the call's own guard, which cancels it in the driver (not counted).
        assert!(stats.core.timeouts <= 1, "{stats:?}");
        assert_eq!(stats.pending_calls, 0);
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_a_call_future_cancels_it() {
    bounded(async {
        let (server, client) = pair(
            Link::Duplex,
            Builder::new().router(router()),
            Builder::new(),
        )
        .await;
        let c = client.client();
        let call = {
            let c = c.clone();
            tokio::spawn(async move { c.call::<_, u64>("sleep", json!({"ms": 200})).await })
        };
        // Once the server runs the handler, the request is surely on the wire.
        settle(server.client(), |s| s.running == 1).await;
        call.abort(); // drops the call's future
        assert!(call.await.unwrap_err().is_cancelled());
        settle(c, |s| s.pending_calls == 0).await;
        assert_eq!(
            c.stats().await.unwrap().pending_calls,
            0,
            "cancel reached the driver"
        );
        let stats = settle(c, |s| s.core.unknown_responses == 1).await;
        assert_eq!(
            stats.core.unknown_responses, 1,
            "the late answer is ignored"
        );
        assert_eq!(c.call::<_, i64>("add", [1, 1]).await.unwrap(), 2);
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn router_errors_keep_their_codes_and_panics_do_not_kill_the_connection() {
    bounded(async {
        let (server, client) =
            pair(Link::Tcp, Builder::new().router(router()), Builder::new()).await;
        let c = client.client();
        let e = c.call::<_, Value>("nope", ()).await.unwrap_err();
        assert_eq!(e.rpc().unwrap().code, -32601);
        assert_eq!(e.rpc().unwrap().message, "Method not found");

        let e = c.call::<_, Value>("add", ("one", 2)).await.unwrap_err();
        let rpc = e.rpc().unwrap();
        assert_eq!(rpc.code, -32602);
        let data: String = serde_json::from_str(rpc.data.as_ref().unwrap().get()).unwrap();
        assert!(data.contains("invalid type"), "useful data: {data}");
        let e = c.call::<_, Value>("add", ()).await.unwrap_err();
        assert_eq!(e.rpc().unwrap().code, -32602);

        let e = c.call::<_, Value>("fail", ()).await.unwrap_err();
        let rpc = e.rpc().unwrap();
        assert_eq!((rpc.code, rpc.message.as_str()), (-32000, "it failed"));
        assert_eq!(rpc.data.as_ref().unwrap().get(), r#"{"why":"always"}"#);

        for _ in 0..3 {
            let e = c.call::<_, Value>("panic", ()).await.unwrap_err();
            assert_eq!(e.rpc().unwrap().code, -32603);
        }
        assert_eq!(c.call::<_, i64>("add", [40, 2]).await.unwrap(), 42);
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batches_and_notifications() {
    bounded(async {
        let hits = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&hits);
        let r = router().notification("hit", move |n: [usize; 1]| {
            let counter = Arc::clone(&counter);
            async move {
                counter.fetch_add(n[0], Ordering::SeqCst);
            }
        });
        let (server, client) = pair(Link::Duplex, Builder::new().router(r), Builder::new()).await;
        let c = client.client();
        let mut batch = c.batch();
        assert_eq!(batch.call("add", [1, 2]).unwrap(), 0);
        batch.notify("hit", [5]).unwrap();
        assert_eq!(batch.call("nope", ()).unwrap(), 1);
        assert_eq!(
            batch
                .call("echo", json!({"k": [1.5, -0, 9007199254740993u64]}))
                .unwrap(),
            2
        );
        let results = batch.send().await.unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0].as_ref().unwrap().get(), "3");
        assert_eq!(results[1].as_ref().unwrap_err().rpc().unwrap().code, -32601);
        assert_eq!(
            results[2].as_ref().unwrap().get(),
            r#"{"k":[1.5,0,9007199254740993]}"#
        );
        for _ in 0..10 {
            c.notify("hit", [1]).await.unwrap();
        }
        // Notifications are never answered; wait for the handlers.
        for _ in 0..100 {
            if hits.load(Ordering::SeqCst) == 15 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(hits.load(Ordering::SeqCst), 15);
        assert_eq!(server.client().stats().await.unwrap().core.frames_out, 1);
        // Params must be structured.
        assert!(matches!(
            c.call::<_, Value>("echo", 5).await,
            Err(CallError::ParamsNotStructured)
        ));
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graceful_shutdown_answers_requests_in_flight() {
    bounded(async {
        let (server, client) =
            pair(Link::Tcp, Builder::new().router(router()), Builder::new()).await;
        let c = client.client().clone();
        let slow = tokio::spawn(async move { c.call::<_, u64>("sleep", json!({"ms": 200})).await });
        settle(server.client(), |s| s.running == 1).await;
        server.client().shutdown();
        assert_eq!(
            slow.await.unwrap().unwrap(),
            200,
            "in-flight answer still written"
        );
        server.join().await.unwrap();
        // The server closed: the client sees the end.
        let after = client.client().call::<_, i64>("add", [1, 2]).await;
        assert!(matches!(after, Err(CallError::Closed)), "{after:?}");
        client.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tcp_half_close_still_gets_answers_and_server_keeps_accepting() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let server = tokio::spawn(Builder::new().router(router()).serve_tcp(listener));
        for round in 0..3 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(
                b"{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":{\"ms\":100},\"id\":1}\n\
                  {\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":{\"ms\":10},\"id\":2}\n\
                  {\"jsonrpc\":\"2.0\",\"method\":\"add\",\"params\":[1,2],\"id\":3}",
            )
            .await
            .unwrap();
            s.shutdown().await.unwrap(); // half-close; the last line has no newline
            let mut out = String::new();
            s.read_to_string(&mut out).await.unwrap();
            let lines: Vec<Value> = out
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            assert_eq!(lines.len(), 3, "round {round}: {out}");
            let mut ids: Vec<i64> = lines.iter().map(|l| l["id"].as_i64().unwrap()).collect();
            ids.sort_unstable();
            assert_eq!(ids, [1, 2, 3]);
        }
        server.abort();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_length_framing_round_trip() {
    bounded(async {
        let cl = || Builder::new().framing(Framing::ContentLength);
        let (server, client) = pair(Link::Tcp, cl().router(router()), cl()).await;
        let c = client.client();
        assert_eq!(c.call::<_, i64>("add", [20, 22]).await.unwrap(), 42);
        let text = "line one\nline two\r\n";
        assert_eq!(
            c.call::<_, Vec<String>>("echo", [text]).await.unwrap(),
            vec![text]
        );
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_without_router_answers_method_not_found_and_ends_when_dropped() {
    bounded(async {
        let (a, b) = Builder::new().duplex(Builder::new(), 1024);
        let e = a
            .client()
            .call::<_, Value>("anything", ())
            .await
            .unwrap_err();
        assert_eq!(e.rpc().unwrap().code, -32601);
        a.join().await.unwrap();
        b.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handlers_call_back_the_peer_on_the_same_connection() {
    bounded(async {
        let greeter =
            Router::new().method_with_context("greet", |ctx, (name,): (String,)| async move {
                let title: String = ctx
                    .peer()
                    .call("title_of", [&name])
                    .await
                    .map_err(RpcError::internal)?;
                Ok::<_, RpcError>(format!("hello, {title} {name}"))
            });
        let asker = Router::new().method("title_of", |(_name,): (String,)| async move {
            Ok::<_, RpcError>("Dr.")
        });
        let (server, client) = Builder::new()
            .router(greeter)
            .duplex(Builder::new().router(asker), 4096);
        let got: String = client.client().call("greet", ["Ada"]).await.unwrap();
        assert_eq!(got, "hello, Dr. Ada");
        client.client().shutdown();
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn echo_keeps_raw_params_byte_exact() {
    bounded(async {
        let (server, client) = pair(
            Link::Duplex,
            Builder::new().router(router()),
            Builder::new(),
        )
        .await;
        let params = RawValue::from_string(r#"[1.0, -0, 1e400, "\u00e9"]"#.into()).unwrap();
        let got = client
            .client()
            .call_json("echo", Some(&params), None)
            .await
            .unwrap();
        assert_eq!(got.get(), r#"[1.0, -0, 1e400, "\u00e9"]"#);
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}

/// The peer half-closes right after its last bytes: a response on an unterminated last line
/// still resolves its call; the calls it left unanswered fail with `Closed` at once (not at
/// their timeout); and a request it sent before closing is still answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peer_half_close_resolves_every_pending_call_and_answers_its_requests() {
    bounded(async {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (accepted, session) = tokio::join!(
            listener.accept(),
            Builder::new()
                .router(router())
                .request_timeout(Some(Duration::from_secs(50)))
                .connect_tcp(addr)
        );
        let session = session.unwrap();
        let (raw, _) = accepted.unwrap();
        let (r, mut w) = raw.into_split();
        let mut lines = tokio::io::BufReader::new(r).lines();
        let c = session.client().clone();
        let answered = tokio::spawn({
            let c = c.clone();
            async move { c.call::<_, Value>("first", [1]).await }
        });
        let unanswered = tokio::spawn({
            let c = c.clone();
            async move { c.call::<_, Value>("second", [2]).await }
        });
        let mut ids = std::collections::HashMap::new();
        for _ in 0..2 {
            let line = lines.next_line().await.unwrap().unwrap();
            let req: Value = serde_json::from_str(&line).unwrap();
            ids.insert(req["method"].as_str().unwrap().to_owned(), req["id"].clone());
        }
        let started = Instant::now();
        let last = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"sleep\",\"params\":{{\"ms\":50}},\"id\":\"mine\"}}\n\
             {{\"jsonrpc\":\"2.0\",\"result\":\"one\",\"id\":{}}}",
            ids["first"]
        );
        w.write_all(last.as_bytes()).await.unwrap();
        w.shutdown().await.unwrap();
        assert_eq!(answered.await.unwrap().unwrap(), "one");
        assert!(matches!(
            unanswered.await.unwrap(),
            Err(CallError::Closed)
        ));
        assert!(started.elapsed() < Duration::from_secs(10));
        let line = lines.next_line().await.unwrap().expect("our answer");
        let answer: Value = serde_json::from_str(&line).unwrap();
        assert_eq!((answer["id"].as_str(), answer["result"].as_u64()), (Some("mine"), Some(50)));
        assert_eq!(lines.next_line().await.unwrap(), None, "then the stream ends");
        drop(c);
        session.join().await.unwrap();
    })
    .await;
}

/// A batch of responses (the answer to our own batch) is accepted even by a connection that
/// refuses inbound batches (MCP 2025-06-18) or limits their length.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_replies_are_accepted_whatever_the_batch_limits() {
    bounded(async {
        for client in [
            Builder::new().batches(false),
            Builder::new().max_batch_len(1),
        ] {
            let (server, client) = pair(Link::Tcp, Builder::new().router(router()), client).await;
            let mut batch = client.client().batch();
            for i in 0..4 {
                batch.call("add", [i, 10]).unwrap();
            }
            let results = batch.send().await.unwrap();
            let sums: Vec<String> = results
                .iter()
                .map(|r| r.as_ref().unwrap().get().to_owned())
                .collect();
            assert_eq!(sums, ["10", "11", "12", "13"]);
            client.join().await.unwrap();
            server.join().await.unwrap();
        }
    })
    .await;
}

/// More calls at once than the pending table holds: the extra ones wait for free slots (never
/// fail, never hang), including when the last answers free every slot in one read and nothing
/// else wakes the driver.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_calls_than_pending_slots_wait_for_room() {
    bounded(async {
        let n = 4 * rpcwire_tokio::MAX_PENDING_CALLS + 10;
        for link in [Link::Duplex, Link::Tcp] {
            let server = Builder::new()
                .router(router())
                .map_service(|s| s.concurrency(usize::MAX));
            let (server, client) = pair(link, server, Builder::new()).await;
            let c = client.client().clone();
            let mut set = JoinSet::new();
            for i in 0..n {
                let c = c.clone();
                set.spawn(async move { (i, c.call::<_, Vec<usize>>("echo", [i]).await) });
            }
            while let Some(joined) = set.join_next().await {
                let (i, got) = joined.unwrap();
                assert_eq!(got.unwrap_or_else(|e| panic!("call {i}: {e}")), [i]);
            }
            drop(c);
            client.join().await.unwrap();
            server.join().await.unwrap();
        }
    })
    .await;
}

/// A batch may hold up to `MAX_PENDING_CALLS` calls; one more is refused before sending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_holds_at_most_max_pending_calls() {
    bounded(async {
        let max = rpcwire_tokio::MAX_PENDING_CALLS;
        let (server, client) =
            pair(
            Link::Duplex,
            // The server's own batch limit (default 64 elements) must admit it.
            Builder::new().router(router()).max_batch_len(2 * max),
            Builder::new(),
        )
        .await;
        let c = client.client();
        let mut batch = c.batch();
        for i in 0..max {
            batch.call("add", [i, 1]).unwrap();
        }
        let results = batch.send().await.unwrap();
        assert_eq!(results.len(), max);
        assert_eq!(results[max - 1].as_ref().unwrap().get(), max.to_string());
        let mut batch = c.batch();
        for i in 0..=max {
            batch.call("add", [i, 1]).unwrap();
        }
        let err = batch.send().await.unwrap_err();
        assert!(
            matches!(err, CallError::BatchTooLarge { calls, capacity } if calls == max + 1 && capacity == max),
            "{err:?}"
        );
        assert_eq!(c.call::<_, i64>("add", [1, 1]).await.unwrap(), 2, "the connection goes on");
        client.join().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}
