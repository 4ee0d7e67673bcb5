//! Two agents on one shared store, as two replicas (once with `--store postgres:URL`, once with
//! `--store redis:URL`): a task started on
//! one is read and listed from the other, as are push configs set on it; an echo answered by
//! the second is read from the first right after its answer (no stale read); the first killed with SIGKILL mid-task, the second
//! fails its task, with the reason, once the lease lapses, while its own tasks stay as they
//! were. Over the agents' real JSON-RPC HTTP interface, on loopback, against a PostgreSQL
//! server (`.ci/install/postgres.sh`) or a Redis server (`.ci/install/redis.sh`) of the test's
//! own.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::process::Command;
use std::time::{Duration, Instant};

use rpcwire_a2a::{
    A2aClient, ListTasksRequest, Message, Role, SendMessageResponse, StreamResponse,
    TaskPushNotificationConfig, TaskState,
};
use rpcwire_tests::interop::Server;
use rpcwire_tests::postgres::Postgres;
use rpcwire_tests::redis::Redis;

const AGENT: &str = env!("CARGO_BIN_EXE_a2a-agent");

/// An agent on `store` (its `--store`) and a client of it.
fn agent(store: &str) -> (Server, A2aClient) {
    let server = Server::start(
        Command::new(AGENT).args([
            "--http",
            "127.0.0.1:0",
            "--store",
            store,
            "--step-ms",
            "200",
            "--lease-ms",
            "800",
            "--lease-renew-ms",
            "100",
            "--webhook-allow",
            "127.0.0.1",
        ]),
        "listening ",
        Duration::from_secs(20),
    );
    let client = A2aClient::new(&format!("{}/", server.address)).unwrap();
    (server, client)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_postgres_share_tasks_and_fail_a_dead_ones_work_within_the_lease() {
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    replicas_share_tasks_and_fail_a_dead_ones_work_within_the_lease(&format!(
        "postgres:{}",
        pg.url()
    ))
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_on_redis_share_tasks_and_fail_a_dead_ones_work_within_the_lease() {
    let Some(redis) = tokio::task::spawn_blocking(Redis::start).await.unwrap() else {
        return;
    };
    replicas_share_tasks_and_fail_a_dead_ones_work_within_the_lease(&format!(
        "redis:{}",
        redis.url()
    ))
    .await;
}

/// The checks of the module's docs, the agents on `store` (their `--store`).
async fn replicas_share_tasks_and_fail_a_dead_ones_work_within_the_lease(store: &str) {
    let (a, client_a) = agent(store);
    let (_b, client_b) = agent(store);

    // A long count on A; the stream dropped once the task exists (the work goes on).
    let message = Message::text(Role::User, "count-a", "count 1000");
    let mut events = client_a.send_streaming(message).await.unwrap();
    let counting = match events.next().await {
        Some(Ok(StreamResponse::Task(t))) => t.id,
        other => panic!("the task first, not {other:?}"),
    };
    drop(events);
    // An echo on B.
    let echoed = match client_b
        .send_message(Message::text(Role::User, "echo-b", "echo hello"))
        .await
        .unwrap()
    {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a task, not {m:?}"),
    };
    assert_eq!(echoed.status.state, TaskState::Completed);
    // Each replica reads the other's.
    let seen = client_b.get_task(&counting, None).await.unwrap();
    assert_eq!(seen.status.state, TaskState::Working, "{seen:?}");
    // The answer went out once the store had the task as answered: the other replica reads
    // the finished echo at once, right after the answer.
    assert_eq!(client_a.get_task(&echoed.id, None).await.unwrap(), echoed);
    for client in [&client_a, &client_b] {
        let listed = client
            .list_tasks(&ListTasksRequest::default())
            .await
            .unwrap();
        assert_eq!(listed.total_size, 2);
    }
    // A push config set on A is listed by B.
    let config = TaskPushNotificationConfig {
        task_id: counting.clone(),
        url: "http://127.0.0.1:9/hook".into(),
        ..TaskPushNotificationConfig::default()
    };
    let kept = client_a.create_push_config(&config).await.unwrap();
    let listed = client_b.list_push_configs(&counting).await.unwrap();
    assert_eq!(listed.configs, [kept]);

    // A stays alive past several leases: its renewals keep B from failing its task.
    tokio::time::sleep(Duration::from_millis(2000)).await;
    let still = client_b.get_task(&counting, None).await.unwrap();
    assert_eq!(still.status.state, TaskState::Working, "{still:?}");

    // A killed (SIGKILL): B fails its task once the lease lapses (bounded wait).
    drop(a);
    let killed = Instant::now();
    let t = loop {
        let t = client_b.get_task(&counting, None).await.unwrap();
        if t.status.state != TaskState::Working {
            break t;
        }
        assert!(
            killed.elapsed() < Duration::from_secs(20),
            "still working 20 s after its replica was killed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(t.status.state, TaskState::Failed, "{t:?}");
    let why = t.status.message.as_ref().map(Message::joined_text);
    assert!(
        why.as_deref().is_some_and(|w| w.contains("lease lapsed")),
        "{why:?}"
    );
    assert!(
        !t.artifacts.is_empty(),
        "the count's chunks are kept: {t:?}"
    );
    assert_eq!(client_b.get_task(&echoed.id, None).await.unwrap(), echoed);
}
