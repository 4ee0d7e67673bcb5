//! The Redis store's own checks: the bounds at their edges, against a server of the test's
//! own (`rpcwire_tests::redis`), each store under a prefix of its own.
use super::*;
use crate::store::EventLog;
use crate::types::{Message, StreamResponse};

async fn redis() -> Option<rpcwire_tests::redis::Redis> {
    tokio::task::spawn_blocking(rpcwire_tests::redis::Redis::start)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

/// A store under `prefix` of `url` with these limits.
async fn store_in(url: &str, prefix: &str, limits: StoreLimits) -> RedisTaskStore {
    let options = RedisOptions {
        prefix: prefix.into(),
        ..RedisOptions::default()
    };
    RedisTaskStore::connect_with(url, limits, options)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
}

fn task(id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        status: crate::types::TaskStatus {
            state,
            ..Default::default()
        },
        ..Task::default()
    }
}

fn event(n: usize) -> Arc<StreamResponse> {
    Arc::new(StreamResponse::Message(Message::text(
        crate::types::Role::Agent,
        format!("m{n}"),
        "x",
    )))
}

/// The bounds at their edges, as the SQL stores': a full store makes room from finished
/// tasks only (their push configs with them); a log past its events trims the oldest; a log
/// past the number of logs forgets the oldest log; two prefixes are two stores.
#[tokio::test(flavor = "current_thread")]
async fn the_bounds_hold_at_their_edges() {
    let Some(redis) = redis().await else {
        return;
    };
    let limits = StoreLimits {
        max_tasks: 2,
        max_finished: 10,
        finished_ttl: Duration::from_secs(60),
    };
    let store = store_in(&redis.url(), "full", limits).await;
    super::super::bound_checks::a_full_store_makes_room_from_finished_tasks_only(&store).await;
    // Another prefix is another store: empty, with its own bound.
    let other = store_in(&redis.url(), "other", limits).await;
    assert_eq!(other.get("a").await, Ok(None));
    assert_eq!(other.put(task("x", TaskState::Working), None).await, Ok(()));
    assert_eq!(other.put(task("y", TaskState::Working), None).await, Ok(()));

    let logs = store_in(&redis.url(), "logs", StoreLimits::default())
        .await
        .event_limits(EventLogLimits {
            max_tasks: 2,
            max_events: 3,
        });
    for n in 0..4 {
        assert_eq!(logs.append("x", None, event(n)).await, Ok(n as u64 + 1));
    }
    // 4 appended, 3 kept: after 0 is trimmed, after 1 is the first kept.
    assert_eq!(
        logs.read_after("x", None, 0, 10).await,
        Err(StoreError::Trimmed)
    );
    let kept = logs.read_after("x", None, 1, 10).await.unwrap_or_default();
    assert_eq!(kept.iter().map(|e| e.id).collect::<Vec<_>>(), [2, 3, 4]);
    assert_eq!(kept[0].event, event(1));
    assert_eq!(logs.last_id("x", None).await, Ok(4));
    // A second log fits; a third forgets the oldest (x).
    logs.append("y", None, event(0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(logs.read_after("x", None, 1, 10).await.is_ok());
    logs.append("z", None, event(0))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        logs.read_after("x", None, 1, 10).await,
        Err(StoreError::NotFound)
    );
    assert_eq!(logs.last_id("x", None).await, Err(StoreError::NotFound));
    assert!(logs.read_after("y", None, 0, 10).await.is_ok());
    // `max` bounds a read; an id past the last reads nothing.
    assert_eq!(logs.read_after("y", None, 0, 0).await, Ok(Vec::new()));
    assert_eq!(
        logs.read_after("y", None, u64::MAX, 10).await,
        Ok(Vec::new())
    );
    // A trim drops through its id, and never past the next id.
    assert_eq!(logs.trim("z", 5).await, Ok(1));
    assert_eq!(logs.append("z", None, event(1)).await, Ok(2));
    assert_eq!(
        logs.read_after("z", None, 1, 10).await.map(|e| e.len()),
        Ok(1)
    );
}

/// Finished tasks go past their count and their age, oldest first; unfinished ones stay.
#[tokio::test(flavor = "current_thread")]
async fn finished_tasks_are_evicted_past_the_count_and_the_age() {
    let Some(redis) = redis().await else {
        return;
    };
    let counted = store_in(
        &redis.url(),
        "count",
        StoreLimits {
            max_tasks: 100,
            max_finished: 2,
            finished_ttl: Duration::from_secs(60),
        },
    )
    .await;
    for i in 0..5 {
        let id = format!("t{i}");
        assert_eq!(
            counted.put(task(&id, TaskState::Completed), None).await,
            Ok(())
        );
    }
    let held = |id: &'static str| {
        let store = &counted;
        async move { store.get(id).await.ok().flatten().is_some() }
    };
    assert_eq!(
        (held("t2").await, held("t3").await, held("t4").await),
        (false, true, true)
    );
    let aged = store_in(
        &redis.url(),
        "age",
        StoreLimits {
            max_tasks: 100,
            max_finished: 100,
            finished_ttl: Duration::from_millis(1),
        },
    )
    .await;
    assert_eq!(
        aged.put(task("done", TaskState::Completed), None).await,
        Ok(())
    );
    assert_eq!(
        aged.put(task("running", TaskState::Working), None).await,
        Ok(())
    );
    tokio::time::sleep(Duration::from_millis(5)).await;
    // The next finishing write evicts it.
    assert_eq!(
        aged.put(task("next", TaskState::Failed), None).await,
        Ok(())
    );
    assert_eq!(aged.get("done").await, Ok(None));
    assert!(aged.get("running").await.is_ok_and(|t| t.is_some()));
}

/// A server that stops answering fails a call after the store's timeout, not never.
#[tokio::test(flavor = "current_thread")]
async fn a_stuck_server_fails_a_call_after_the_timeout() {
    let Some(redis) = redis().await else {
        return;
    };
    let options = RedisOptions {
        prefix: "stuck".into(),
        timeout: Duration::from_millis(300),
        ..RedisOptions::default()
    };
    let store = RedisTaskStore::connect_with(&redis.url(), StoreLimits::default(), options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Another client pauses every client's commands for 3 s.
    let client = ::redis::Client::open(redis.url()).unwrap_or_else(|e| panic!("{e}"));
    let mut other = client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    ::redis::cmd("CLIENT")
        .arg(&["PAUSE", "3000", "ALL"][..])
        .query_async::<()>(&mut other)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = std::time::Instant::now();
    let got = store.get("any").await;
    assert!(matches!(got, Err(StoreError::Backend(_))), "{got:?}");
    let waited = started.elapsed();
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    ::redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query_async::<()>(&mut other)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(store.get("any").await, Ok(None));
}

/// The store's connection killed by the server (as a restart or a proxy would): a call may
/// fail once, then the store has a new connection and goes on, its data intact.
#[tokio::test(flavor = "current_thread")]
async fn a_killed_connection_is_opened_again() {
    let Some(redis) = redis().await else {
        return;
    };
    let store = store_in(&redis.url(), "killed", StoreLimits::default()).await;
    assert_eq!(store.put(task("a", TaskState::Working), None).await, Ok(()));
    let client = ::redis::Client::open(redis.url()).unwrap_or_else(|e| panic!("{e}"));
    let mut other = client
        .get_multiplexed_async_connection()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    for round in 0..3 {
        let killed: i64 = ::redis::cmd("CLIENT")
            .arg(&["KILL", "TYPE", "normal", "SKIPME", "yes"][..])
            .query_async(&mut other)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(killed >= 1, "round {round}: no connection killed");
        let mut failures = 0;
        let got = loop {
            match store.get("a").await {
                Ok(got) => break got,
                Err(e) => {
                    failures += 1;
                    assert!(failures < 3, "round {round}: still failing: {e}");
                }
            }
        };
        assert_eq!(got.map(|t| t.id), Some("a".to_owned()), "round {round}");
    }
}
