//! Streams across replicas: two servers, each with its own store on one database (a server
//! of the test's own; `PostgresTaskStore` with feature `postgres`, `RedisTaskStore` with
//! feature `redis`), as two replicas of an agent. A task worked on by replica A is subscribed
//! to on replica B, plainly and with `Last-Event-ID`: B's streams get the events A's turn
//! appends, each once, in order, through LISTEN/NOTIFY (PostgreSQL) or pub/sub (Redis), and
//! still when the listening connections are cut mid-task (the streams poll until they are
//! back). A `CancelTask` on B reaches the work on A: the task ends canceled and its work stops.
#![cfg(any(feature = "postgres", feature = "redis"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

#[macro_use]
mod shared;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_a2a::{
    A2aClient, EventLog, Message, Role, StoreLimits, StreamResponse, TaskContext, TaskState,
    TaskStore,
};
use shared::Server;

/// 12 steps 60 ms apart, then complete; for "long", 500 steps, each counted in `steps` (the
/// long turns' steps of one test's replicas).
async fn paced(ctx: TaskContext, steps: Arc<AtomicUsize>) {
    if ctx.text() == "long" {
        for i in 0..500 {
            steps.fetch_add(1, Ordering::SeqCst);
            ctx.working(Some(&format!("step {i}")));
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        ctx.complete(None);
        return;
    }
    for i in 0..12 {
        ctx.working(Some(&format!("step {i}")));
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    ctx.complete(Some("done"));
}

/// A replica's store, as the server takes it: its tasks and its event log.
struct Store {
    tasks: Arc<dyn TaskStore>,
    log: Arc<dyn EventLog>,
}

impl Store {
    fn of<S: TaskStore + EventLog>(store: S) -> Self {
        let store = Arc::new(store);
        Store {
            tasks: Arc::clone(&store) as _,
            log: store,
        }
    }
}

impl Server {
    /// A replica's store on this server; its streams poll every 100 ms while its listening
    /// connection is down.
    async fn connect(&self) -> Store {
        let poll_interval = Duration::from_millis(100);
        match self {
            #[cfg(feature = "postgres")]
            Server::Postgres(pg) => {
                let options = rpcwire_a2a::PostgresOptions {
                    poll_interval,
                    ..rpcwire_a2a::PostgresOptions::default()
                };
                Store::of(
                    rpcwire_a2a::PostgresTaskStore::connect_with(
                        &pg.url(),
                        StoreLimits::default(),
                        options,
                    )
                    .await
                    .unwrap(),
                )
            }
            #[cfg(feature = "redis")]
            Server::Redis(redis) => {
                let options = rpcwire_a2a::RedisOptions {
                    poll_interval,
                    ..rpcwire_a2a::RedisOptions::default()
                };
                Store::of(
                    rpcwire_a2a::RedisTaskStore::connect_with(
                        &redis.url(),
                        StoreLimits::default(),
                        options,
                    )
                    .await
                    .unwrap(),
                )
            }
        }
    }

    /// Cuts every connection that listens for the logs' news (every replica's): how many.
    async fn cut_listeners(&self) -> u64 {
        match self {
            #[cfg(feature = "postgres")]
            Server::Postgres(pg) => {
                let (client, connection) =
                    tokio_postgres::connect(&pg.url(), tokio_postgres::NoTls)
                        .await
                        .unwrap();
                tokio::spawn(connection);
                let rows = client
                    .query(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity
                         WHERE query LIKE 'LISTEN %' AND pid <> pg_backend_pid()",
                        &[],
                    )
                    .await
                    .unwrap();
                rows.len() as u64
            }
            #[cfg(feature = "redis")]
            Server::Redis(redis) => {
                let client = ::redis::Client::open(redis.url()).unwrap();
                let mut conn = client.get_multiplexed_async_connection().await.unwrap();
                ::redis::cmd("CLIENT")
                    .arg(&["KILL", "TYPE", "pubsub"][..])
                    .query_async(&mut conn)
                    .await
                    .unwrap()
            }
        }
    }
}

on_every_store!(a_stream_on_one_replica_gets_the_events_of_a_turn_on_another);
on_every_store!(when_the_listening_connections_drop_the_streams_poll);
on_every_store!(a_cancel_on_one_replica_stops_the_work_on_another);

/// A server on `store`: its tasks and event log there; its long turns count their steps in
/// `steps`.
async fn serve(
    name: &str,
    store: &Store,
    steps: &Arc<AtomicUsize>,
) -> (String, rpcwire_a2a::A2aService) {
    let steps = Arc::clone(steps);
    let agent = move |ctx| paced(ctx, Arc::clone(&steps));
    let (_, url, service) = common::serve(name, agent, |s| {
        s.store(Arc::clone(&store.tasks))
            .event_log(Arc::clone(&store.log))
    })
    .await;
    (url, service)
}

/// Reads `stream` to its end: each event's SSE id (empty: none) and its state.
async fn read_all(mut stream: rpcwire_a2a::EventStream) -> Vec<(String, Option<TaskState>)> {
    let mut seen = Vec::new();
    while let Some(e) = stream.next().await {
        let e = e.unwrap();
        seen.push((stream.last_event_id().to_owned(), e.state()));
    }
    seen
}

/// Ids as numbers, checked strictly increasing by one from `from`.
fn assert_consecutive(seen: &[(String, Option<TaskState>)], from: u64) {
    let ids: Vec<u64> = seen.iter().map(|(id, _)| id.parse().unwrap()).collect();
    let expected: Vec<u64> = (from..from + ids.len() as u64).collect();
    assert_eq!(ids, expected, "{seen:?}");
}

/// Two replicas on one database: their stores, their servers, a client of each.
struct Replicas {
    b: Store,
    /// The steps the long turns of both took.
    long_steps: Arc<AtomicUsize>,
    client_a: A2aClient,
    client_b: A2aClient,
    _servers: [rpcwire_a2a::A2aService; 2],
    _a: Store,
}

async fn two_replicas(server: &Server) -> Replicas {
    let (a, b) = (server.connect().await, server.connect().await);
    let long_steps = Arc::new(AtomicUsize::new(0));
    let (url_a, sa) = serve("replica-a", &a, &long_steps).await;
    let (url_b, sb) = serve("replica-b", &b, &long_steps).await;
    Replicas {
        long_steps,
        client_a: A2aClient::new(&url_a).unwrap(),
        client_b: A2aClient::new(&url_b).unwrap(),
        _servers: [sa, sb],
        _a: a,
        b,
    }
}

/// Reads `n` events of `stream`, the first the task: its id.
async fn read_first(stream: &mut rpcwire_a2a::EventStream, n: usize) -> String {
    let mut task_id = String::new();
    for _ in 0..n {
        if let StreamResponse::Task(t) = stream.next().await.unwrap().unwrap() {
            task_id = t.id;
        }
    }
    task_id
}

async fn across_replicas(server: &Server, cut: bool) {
    let Replicas {
        client_a,
        client_b,
        b,
        ..
    } = two_replicas(server).await;
    let run = async {
        let mut on_a = client_a
            .send_streaming(Message::text(Role::User, "m-1", "go"))
            .await
            .unwrap();
        let task_id = read_first(&mut on_a, 3).await;
        let last: u64 = on_a.last_event_id().parse().unwrap();
        // On B: a plain subscription, and one resumed after A's third event.
        let plain = client_b.subscribe(&task_id).await.unwrap();
        let resumed = client_b
            .resubscribe(&task_id, &last.to_string())
            .await
            .unwrap();
        let (plain, resumed) = (
            tokio::spawn(read_all(plain)),
            tokio::spawn(read_all(resumed)),
        );
        if cut {
            // Until both replicas' listening connections are up, then cut them mid-task.
            let mut cut_count = 0;
            for _ in 0..100 {
                cut_count = server.cut_listeners().await;
                if cut_count >= 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(cut_count >= 2, "listening connections found: {cut_count}");
            // B notices that it no longer listens (its streams poll meanwhile).
            let watch = b.log.watch(&task_id).unwrap();
            let mut listening = watch.listening.clone();
            tokio::time::timeout(Duration::from_secs(5), listening.wait_for(|l| !*l))
                .await
                .unwrap()
                .unwrap();
        }
        let rest_a = read_all(on_a).await;
        (
            last,
            rest_a,
            plain.await.unwrap(),
            resumed.await.unwrap(),
            task_id,
        )
    };
    let (last, rest_a, plain, resumed, task_id) =
        tokio::time::timeout(Duration::from_secs(30), run)
            .await
            .unwrap();
    // A's own stream: 1 task event + 12 steps + completed = 14 events.
    assert_consecutive(&rest_a, last + 1);
    assert_eq!(last + rest_a.len() as u64, 14);
    // B's resumed stream: exactly the events after `last`, as A's stream had them.
    assert_eq!(resumed, rest_a);
    // B's plain one: the task as it is (no id), then consecutive ids to the end.
    assert_eq!(plain[0].0, "");
    assert_consecutive(&plain[1..], plain[1].0.parse().unwrap());
    assert_eq!(
        plain.last().unwrap(),
        &("14".to_owned(), Some(TaskState::Completed))
    );
    // And GetTask on B says what A did.
    let task = client_b.get_task(&task_id, None).await.unwrap();
    assert_eq!(task.status.state, TaskState::Completed);
    // Resumed after the task's last event: nothing more, and the stream ends.
    let done = client_b.resubscribe(&task_id, "14").await.unwrap();
    let more = tokio::time::timeout(Duration::from_secs(5), read_all(done))
        .await
        .unwrap();
    assert_eq!(more, []);
}

async fn a_stream_on_one_replica_gets_the_events_of_a_turn_on_another(server: &Server) {
    across_replicas(server, false).await;
}

async fn when_the_listening_connections_drop_the_streams_poll(server: &Server) {
    across_replicas(server, true).await;
}

async fn a_cancel_on_one_replica_stops_the_work_on_another(server: &Server) {
    let Replicas {
        client_a,
        client_b,
        long_steps,
        ..
    } = two_replicas(server).await;
    let run = async {
        let mut on_a = client_a
            .send_streaming(Message::text(Role::User, "m-long", "long"))
            .await
            .unwrap();
        let task_id = read_first(&mut on_a, 4).await;
        let canceled = client_b.cancel_task(&task_id).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled);
        // A's stream ends canceled; A's work stopped.
        let rest = read_all(on_a).await;
        assert_eq!(
            rest.last().unwrap().1,
            Some(TaskState::Canceled),
            "{rest:?}"
        );
        let steps = long_steps.load(Ordering::SeqCst);
        assert!(steps < 500, "the work ran to its end: {steps} steps");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(long_steps.load(Ordering::SeqCst), steps, "the work went on");
        // Both replicas read it canceled; a second cancel is refused.
        for client in [&client_a, &client_b] {
            let task = client.get_task(&task_id, None).await.unwrap();
            assert_eq!(task.status.state, TaskState::Canceled);
        }
        assert!(client_a.cancel_task(&task_id).await.is_err());
    };
    tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap();
}
