//! Every task store behaves alike: the same checks against the memory store and (feature
//! `sqlite`) the SQLite store, (feature `postgres`) the PostgreSQL store and (feature `redis`)
//! the Redis store, on servers of the test's own: tasks with their history, artifacts and owner; leases renewed
//! by their holder only and failed once lapsed, at the edge of their time; and a server whose
//! store holds a task of a process that died fails it within the lease, while its own long
//! turns, renewed, are never failed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

#[cfg(not(feature = "postgres"))]
/// Stands for the PostgreSQL server when the feature is off.
struct Postgres;
#[cfg(feature = "postgres")]
use rpcwire_tests::postgres::Postgres;
#[cfg(not(feature = "redis"))]
/// Stands for the Redis server when the feature is off.
struct Redis;
#[cfg(feature = "redis")]
use rpcwire_tests::redis::Redis;

use rpcwire_a2a::{
    A2aClient, Artifact, Lease, LeaseConfig, ListTasksRequest, MemoryTaskStore, Message, Part,
    Role, StoreLimits, Task, TaskContext, TaskState, TaskStatus, TaskStore,
};

/// The servers the stores under test live in (features `postgres`, `redis`), stopped when
/// dropped.
type Servers = (Option<Postgres>, Option<Redis>);

/// The stores under test, fresh, with the servers theirs live in.
async fn stores() -> (Vec<(&'static str, Arc<dyn TaskStore>)>, Servers) {
    #[allow(unused_mut)]
    let mut stores: Vec<(&'static str, Arc<dyn TaskStore>)> = vec![(
        "memory",
        Arc::new(MemoryTaskStore::new(StoreLimits::default())),
    )];
    #[cfg(feature = "sqlite")]
    stores.push((
        "sqlite",
        Arc::new(rpcwire_a2a::SqliteTaskStore::open_in_memory(StoreLimits::default()).unwrap()),
    ));
    #[allow(unused_mut)]
    let mut servers: Servers = (None, None);
    #[cfg(feature = "postgres")]
    {
        servers.0 = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
        if let Some(pg) = &servers.0 {
            let store = rpcwire_a2a::PostgresTaskStore::connect(&pg.url(), StoreLimits::default())
                .await
                .unwrap();
            stores.push(("postgres", Arc::new(store)));
        }
    }
    #[cfg(feature = "redis")]
    {
        servers.1 = tokio::task::spawn_blocking(Redis::start).await.unwrap();
        if let Some(redis) = &servers.1 {
            let store = rpcwire_a2a::RedisTaskStore::connect(&redis.url(), StoreLimits::default())
                .await
                .unwrap();
            stores.push(("redis", Arc::new(store)));
        }
    }
    (stores, servers)
}

fn task(id: &str, state: TaskState) -> Task {
    Task {
        id: id.into(),
        context_id: "ctx".into(),
        status: TaskStatus {
            state,
            message: None,
            timestamp: Some(rpcwire_a2a::now_rfc3339()),
        },
        history: vec![Message::text(Role::User, format!("{id}-m"), "hello")],
        artifacts: vec![Artifact {
            artifact_id: "a".into(),
            parts: vec![Part::text(format!("out of {id}"))],
            ..Artifact::default()
        }],
        ..Task::default()
    }
}

fn lease(holder: &str, from_now: Duration) -> Lease {
    Lease {
        holder: holder.into(),
        until: SystemTime::now() + from_now,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_come_back_whole() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        let mut t = task("t1", TaskState::Completed);
        t.owner = Some("alice".into());
        store.put(t.clone(), None).await.unwrap();
        assert_eq!(store.get("t1").await.unwrap(), Some(t.clone()), "{name}");
        assert_eq!(store.get("nope").await.unwrap(), None, "{name}");
        // The owner is kept: bob does not list alice's task.
        let page = |caller: &'static str| {
            let store = Arc::clone(&store);
            async move {
                store
                    .list(&ListTasksRequest::default(), Some(caller), 100)
                    .await
                    .unwrap()
                    .total_size
            }
        };
        assert_eq!((page("alice").await, page("bob").await), (1, 0), "{name}");
        store.remove("t1").await.unwrap();
        assert_eq!(store.get("t1").await.unwrap(), None, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_pages_and_filters_alike() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        for i in 0..5 {
            let mut t = task(&format!("t{i}"), TaskState::Working);
            t.status.timestamp = Some(format!("2026-01-01T00:00:0{i}Z"));
            t.context_id = if i % 2 == 0 { "even" } else { "odd" }.into();
            store.put(t, None).await.unwrap();
        }
        let q = ListTasksRequest {
            page_size: Some(2),
            ..ListTasksRequest::default()
        };
        let first = store.list(&q, None, 100).await.unwrap();
        let ids = |p: &rpcwire_a2a::ListTasksResponse| {
            p.tasks.iter().map(|t| t.id.clone()).collect::<Vec<_>>()
        };
        assert_eq!(ids(&first), ["t4", "t3"], "{name}");
        assert_eq!(first.total_size, 5, "{name}");
        let second = store
            .list(
                &ListTasksRequest {
                    page_token: first.next_page_token.clone(),
                    ..q.clone()
                },
                None,
                100,
            )
            .await
            .unwrap();
        assert_eq!(ids(&second), ["t2", "t1"], "{name}");
        let even = store
            .list(
                &ListTasksRequest {
                    context_id: "even".into(),
                    status_timestamp_after: Some("2026-01-01T00:00:00Z".into()),
                    ..ListTasksRequest::default()
                },
                None,
                100,
            )
            .await
            .unwrap();
        assert_eq!(ids(&even), ["t4", "t2"], "{name}");
        let bad = ListTasksRequest {
            page_token: "zz".into(),
            ..ListTasksRequest::default()
        };
        assert!(store.list(&bad, None, 100).await.is_err(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_lapse_at_their_time_and_not_before() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        let until = SystemTime::now() + Duration::from_secs(60);
        let held = Lease {
            holder: "dead".into(),
            until,
        };
        store
            .put(task("w", TaskState::Working), Some(held.clone()))
            .await
            .unwrap();
        // At its very time it holds (a lease lapses after `until`, not at it).
        let at = store.fail_lapsed(until, "live", "gone").await.unwrap();
        assert!(at.is_empty(), "{name}: failed at the lease's own time");
        // Its holder's own sweep never fails it.
        let own = store
            .fail_lapsed(until + Duration::from_secs(1), "dead", "gone")
            .await
            .unwrap();
        assert!(own.is_empty(), "{name}: a holder failed its own task");
        // Another holder cannot renew it; its holder can.
        let later = until + Duration::from_secs(60);
        let other = Lease {
            holder: "live".into(),
            until: later,
        };
        assert_eq!(
            store.renew(&other, &["w".to_owned()]).await.unwrap(),
            0,
            "{name}"
        );
        let renewed = Lease {
            holder: "dead".into(),
            until: later,
        };
        assert_eq!(
            store
                .renew(&renewed, &["w".to_owned(), "none".to_owned()])
                .await
                .unwrap(),
            1,
            "{name}"
        );
        let before = store
            .fail_lapsed(until + Duration::from_secs(1), "live", "gone")
            .await
            .unwrap();
        assert!(before.is_empty(), "{name}: failed before its renewed time");
        // One microsecond past it: failed, with the reason, in its status and history.
        let failed = store
            .fail_lapsed(later + Duration::from_micros(1), "live", "the process died")
            .await
            .unwrap();
        assert_eq!(failed.len(), 1, "{name}");
        let t = store.get("w").await.unwrap().unwrap();
        assert_eq!(t.status.state, TaskState::Failed, "{name}");
        let why = t.status.message.as_ref().map(Message::joined_text);
        assert_eq!(why.as_deref(), Some("the process died"), "{name}");
        assert_eq!(t.history.last().map(Message::joined_text), why, "{name}");
        assert_eq!(t.artifacts.len(), 1, "{name}: artifacts kept");
        // Once failed it holds no lease: a second sweep finds nothing.
        let again = store
            .fail_lapsed(later + Duration::from_secs(1), "live", "x")
            .await
            .unwrap();
        assert!(again.is_empty(), "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_that_stops_working_drops_its_lease() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        let past = lease("dead", Duration::ZERO);
        for (id, then) in [
            ("done", TaskState::Completed),
            ("asks", TaskState::InputRequired),
            ("still", TaskState::Working),
        ] {
            store
                .put(task(id, TaskState::Working), Some(past.clone()))
                .await
                .unwrap();
            // A snapshot without a lease: a working task keeps the one it has.
            store.put(task(id, then), None).await.unwrap();
        }
        let failed = store
            .fail_lapsed(SystemTime::now() + Duration::from_secs(1), "live", "gone")
            .await
            .unwrap();
        let ids: Vec<String> = failed.into_iter().map(|t| t.id).collect();
        assert_eq!(ids, ["still"], "{name}");
        let state = |id: &'static str| {
            let store = Arc::clone(&store);
            async move { store.get(id).await.unwrap().unwrap().status.state }
        };
        assert_eq!(state("done").await, TaskState::Completed, "{name}");
        assert_eq!(state("asks").await, TaskState::InputRequired, "{name}");
    }
}

/// An agent counting to `n` steps of 40 ms, an artifact chunk each.
async fn slow(ctx: TaskContext) {
    for i in 0..8 {
        ctx.working(Some(&format!("step {i}")));
        tokio::time::sleep(Duration::from_millis(40)).await;
    }
    ctx.text_artifact("out", "counted");
    ctx.complete(None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_fails_the_tasks_of_a_dead_process_and_keeps_its_own() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        // A task a process that died left working, its lease 1.5 s from now.
        let put_at = std::time::Instant::now();
        store
            .put(
                task("orphan", TaskState::Working),
                Some(lease("dead", Duration::from_millis(1500))),
            )
            .await
            .unwrap();
        // Leases of 100 ms, shorter than the agent's turn (320 ms): renewal keeps them.
        let leases = LeaseConfig {
            duration: Duration::from_millis(100),
            renew_every: Duration::from_millis(20),
        };
        let shared = Arc::clone(&store);
        let (_, url, _service) = common::serve("leases", slow, move |s| {
            s.store(shared)
                .leases(leases)
                .send_wait(Duration::from_secs(5))
        })
        .await;
        let client = A2aClient::new(&url).unwrap();
        // Within its lease it is left alone (this call also starts the server's sweeps).
        let early = client.get_task("orphan", None).await.unwrap();
        assert_eq!(early.status.state, TaskState::Working, "{name}");
        // A subscriber to it gets the task, then its failure once the lease lapses.
        let mut watch = client.subscribe("orphan").await.unwrap();
        let watched = tokio::spawn(async move {
            let mut states = Vec::new();
            while let Some(Ok(event)) = watch.next().await {
                states.extend(event.state());
            }
            states
        });
        let rpcwire_a2a::SendMessageResponse::Task(own) = client
            .send_message(Message::text(Role::User, "m1", "go"))
            .await
            .unwrap()
        else {
            panic!("{name}: a task")
        };
        assert_eq!(own.status.state, TaskState::Completed, "{name}");
        let own = client.get_task(&own.id, None).await.unwrap();
        assert_eq!(own.status.state, TaskState::Completed, "{name}: renewed");
        // The orphan: working until its lease lapses, failed at most a sweep after.
        let started = std::time::Instant::now();
        let orphan = loop {
            let t = client.get_task("orphan", None).await.unwrap();
            if t.status.state != TaskState::Working {
                break t;
            }
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{name}: never failed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert_eq!(orphan.status.state, TaskState::Failed, "{name}");
        let states = tokio::time::timeout(Duration::from_secs(5), watched)
            .await
            .expect("the subscription ends")
            .unwrap();
        assert_eq!(states, [TaskState::Working, TaskState::Failed], "{name}");
        // Not before its lease lapsed.
        assert!(
            put_at.elapsed() >= Duration::from_millis(1500),
            "{name}: failed {:?} after the put, within its lease",
            put_at.elapsed()
        );
        assert!(
            orphan
                .status
                .message
                .as_ref()
                .is_some_and(|m| m.joined_text().contains("lease lapsed")),
            "{name}: {orphan:?}"
        );
    }
}

/// Asks for a name, then greets it (the greeting an artifact).
async fn greet(ctx: TaskContext) {
    if ctx.is_continuation() {
        ctx.text_artifact("greeting", format!("Hello, {}!", ctx.text()));
        ctx.complete(None);
    } else {
        ctx.input_required("What is your name?");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_continuation_right_after_its_question_is_stored_after_it() {
    let (stores, _servers) = stores().await;
    for (name, store) in stores {
        let shared = Arc::clone(&store);
        let (_, url, _service) = common::serve("greet", greet, move |s| s.store(shared)).await;
        let client = A2aClient::new(&url).unwrap();
        for i in 0..20 {
            let rpcwire_a2a::SendMessageResponse::Task(asked) = client
                .send_message(Message::text(Role::User, format!("q{i}"), "greet"))
                .await
                .unwrap()
            else {
                panic!("{name}: a task")
            };
            assert_eq!(asked.status.state, TaskState::InputRequired, "{name}");
            let mut answer = Message::text(Role::User, format!("a{i}"), format!("n{i}"));
            answer.task_id.clone_from(&asked.id);
            let rpcwire_a2a::SendMessageResponse::Task(done) =
                client.send_message(answer).await.unwrap()
            else {
                panic!("{name}: a task")
            };
            assert_eq!(done.status.state, TaskState::Completed, "{name}");
            // The store ends with the last turn's task, whatever order its writes ran in.
            let started = std::time::Instant::now();
            loop {
                let stored = store.get(&done.id).await.unwrap().unwrap();
                if stored == done {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(5),
                    "{name}: the store holds {stored:?}, not {done:?}"
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            assert_eq!(
                client.get_task(&done.id, None).await.unwrap(),
                done,
                "{name}"
            );
        }
    }
}

/// A stream of `slow` cut after its third event and resumed with `Last-Event-ID`, the
/// server's event log the SQLite store's, on a runtime of `flavor`: every event after the
/// cut, once each, in order, ids without a gap.
#[cfg(feature = "sqlite")]
async fn a_stream_resumes_from_the_sqlite_log() {
    use rpcwire_a2a::StreamResponse;
    let sqlite =
        Arc::new(rpcwire_a2a::SqliteTaskStore::open_in_memory(StoreLimits::default()).unwrap());
    let (_, url, _service) = common::serve("sqlite-log", slow, |s| {
        s.store(Arc::clone(&sqlite) as _)
            .event_log(Arc::clone(&sqlite) as _)
    })
    .await;
    let client = A2aClient::new(&url).unwrap();
    let message = Message::text(Role::User, "m-slow", "slow");
    let mut stream = client.send_streaming(message).await.unwrap();
    let mut ids = Vec::new();
    let mut task_id = String::new();
    for _ in 0..3 {
        if let StreamResponse::Task(t) = stream.next().await.unwrap().unwrap() {
            task_id = t.id;
        }
        ids.push(stream.last_event_id().to_owned());
    }
    let last = stream.last_event_id().to_owned();
    drop(stream);
    let mut resumed = client.resubscribe(&task_id, &last).await.unwrap();
    let mut end = None;
    let read = async {
        while let Some(e) = resumed.next().await {
            end = e.unwrap().state();
            ids.push(resumed.last_event_id().to_owned());
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .unwrap();
    let expected: Vec<String> = (1..=ids.len()).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    assert!(ids.len() > 3, "events after the cut: {ids:?}");
    assert_eq!(end, Some(TaskState::Completed));
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_resumes_from_the_sqlite_log_on_a_multi_thread_runtime() {
    a_stream_resumes_from_the_sqlite_log().await;
}

#[cfg(feature = "sqlite")]
#[tokio::test]
async fn a_stream_resumes_from_the_sqlite_log_on_a_current_thread_runtime() {
    a_stream_resumes_from_the_sqlite_log().await;
}
