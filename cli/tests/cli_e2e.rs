//! The tokio client against `rpcwire serve --stdio` running as a child process.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::{bin, bounded};
use rpcwire_tokio::{Builder, CallError, Session};
use serde_json::{json, Value};
use tokio::process::{Child, Command};
use tokio::task::JoinSet;

fn child(builder: Builder) -> (Session, Child) {
    let mut cmd = Command::new(bin());
    cmd.args(["serve", "--stdio"]);
    builder.spawn_child(&mut cmd).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_pipelined_calls_to_a_child_process() {
    bounded(async {
        let (session, mut proc) = child(Builder::new());
        let started = Instant::now();
        let mut set = JoinSet::new();
        for i in 0..1000u64 {
            let c = session.client().clone();
            set.spawn(async move { (i, c.call::<_, Value>("sum", [i, 1]).await.unwrap()) });
        }
        let mut seen = vec![false; 1000];
        while let Some(joined) = set.join_next().await {
            let (i, v) = joined.unwrap();
            assert_eq!(v, json!(i + 1));
            assert!(
                !std::mem::replace(&mut seen[i as usize], true),
                "answered twice"
            );
        }
        println!(
            "child stdio: 1000 pipelined calls in {:?}",
            started.elapsed()
        );
        session.join().await.unwrap(); // closes the child's stdin
        let status = proc.wait().await.unwrap();
        assert!(status.success(), "the child exits 0 when its stdin closes");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sleeps_to_a_child_return_out_of_order() {
    bounded(async {
        let (session, _proc) = child(Builder::new());
        let order = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut set = JoinSet::new();
        for i in 0..50u64 {
            let ms = (50 - i) * 20;
            let (c, order) = (session.client().clone(), order.clone());
            set.spawn(async move {
                let started = Instant::now();
                let v: Value = c.call("sleep", json!({ "ms": ms })).await.unwrap();
                assert_eq!(v, Value::Null);
                assert!(
                    started.elapsed() >= Duration::from_millis(ms),
                    "too early: wrong caller"
                );
                order.lock().unwrap().push(ms);
            });
        }
        while let Some(joined) = set.join_next().await {
            joined.unwrap();
        }
        let order = order.lock().unwrap().clone();
        let swaps = order.windows(2).filter(|w| w[0] > w[1]).count();
        assert!(swaps <= 10, "shortest first: {order:?}");
        assert!(order[0] <= 200 && order[49] >= 800, "{order:?}");
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_child_fails_every_pending_call_promptly() {
    bounded(async {
        let (session, mut proc) = child(Builder::new().request_timeout(None));
        let mut set = JoinSet::new();
        for _ in 0..5 {
            let c = session.client().clone();
            set.spawn(async move { c.call::<_, Value>("sleep", json!({"ms": 60_000})).await });
        }
        // Make sure the calls are out.
        assert_eq!(
            session
                .client()
                .call::<_, Value>("get_data", ())
                .await
                .unwrap(),
            json!(["hello", 5])
        );
        proc.kill().await.unwrap();
        let killed = Instant::now();
        while let Some(joined) = set.join_next().await {
            assert!(matches!(joined.unwrap(), Err(CallError::Closed)));
        }
        assert!(killed.elapsed() < Duration::from_secs(2));
        session.join().await.unwrap();
    })
    .await;
}
