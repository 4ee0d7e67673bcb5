//! Streams across replicas: two servers, each with its own `PostgresTaskStore` on one
//! database (a server of the test's own), as two replicas of an agent. A task worked on by
//! replica A is subscribed to on replica B, plainly and with `Last-Event-ID`: B's streams get
//! the events A's turn appends, each once, in order, through LISTEN/NOTIFY, and still when the
//! listening connections are cut mid-task (the streams poll until they are back). A
//! `CancelTask` on B reaches the work on A: the task ends canceled and its work stops.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_a2a::{
    A2aClient, EventLog, Message, PostgresOptions, PostgresTaskStore, Role, StoreLimits,
    StreamResponse, TaskContext, TaskState,
};
use rpcwire_tests::postgres::Postgres;

/// The steps the long turns took, all tests together (only one test sends "long").
static LONG_STEPS: AtomicUsize = AtomicUsize::new(0);

/// 12 steps 60 ms apart, then complete; for "long", 500 steps, each counted.
async fn paced(ctx: TaskContext) {
    if ctx.text() == "long" {
        for i in 0..500 {
            LONG_STEPS.fetch_add(1, Ordering::SeqCst);
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

async fn replica(url: &str) -> Arc<PostgresTaskStore> {
    let options = PostgresOptions {
        poll_interval: Duration::from_millis(100),
        ..PostgresOptions::default()
    };
    Arc::new(
        PostgresTaskStore::connect_with(url, StoreLimits::default(), options)
            .await
            .unwrap(),
    )
}

/// A server on `store`: its tasks and event log there.
async fn serve(name: &str, store: &Arc<PostgresTaskStore>) -> (String, rpcwire_a2a::A2aService) {
    let (_, url, service) = common::serve(name, paced, |s| {
        s.store(Arc::clone(store) as _)
            .event_log(Arc::clone(store) as _)
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

/// Cuts every connection that listens for the logs' news (both replicas').
async fn cut_listeners(url: &str) -> u64 {
    let (client, connection) = tokio_postgres_connect(url).await;
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

async fn tokio_postgres_connect(
    url: &str,
) -> (
    tokio_postgres::Client,
    impl std::future::Future<Output = Result<(), tokio_postgres::Error>>,
) {
    tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap()
}

/// Two replicas on one database: their stores, their servers, a client of each.
struct Replicas {
    b: Arc<PostgresTaskStore>,
    client_a: A2aClient,
    client_b: A2aClient,
    _servers: [rpcwire_a2a::A2aService; 2],
    _a: Arc<PostgresTaskStore>,
}

async fn two_replicas(url: &str) -> Replicas {
    let (a, b) = (replica(url).await, replica(url).await);
    let (url_a, sa) = serve("replica-a", &a).await;
    let (url_b, sb) = serve("replica-b", &b).await;
    Replicas {
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

async fn across_replicas(cut: bool) {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let url = pg.url();
    let Replicas {
        client_a,
        client_b,
        b,
        ..
    } = two_replicas(&url).await;
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
                cut_count = cut_listeners(&url).await;
                if cut_count >= 2 {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            assert!(cut_count >= 2, "listening connections found: {cut_count}");
            // B notices that it no longer listens (its streams poll meanwhile).
            let watch = b.watch(&task_id).unwrap();
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_on_one_replica_gets_the_events_of_a_turn_on_another() {
    across_replicas(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_listening_connections_drop_the_streams_poll() {
    across_replicas(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_on_one_replica_stops_the_work_on_another() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    let Replicas {
        client_a, client_b, ..
    } = two_replicas(&pg.url()).await;
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
        let steps = LONG_STEPS.load(Ordering::SeqCst);
        assert!(steps < 500, "the work ran to its end: {steps} steps");
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(LONG_STEPS.load(Ordering::SeqCst), steps, "the work went on");
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
