//! Three agents on one shared store behind nginx round-robin with no affinity
//! (`.ci/install/http-interop.sh`), as a deployment of replicas; once with
//! `--store postgres:URL` on a PostgreSQL server of the test's own (`.ci/install/postgres.sh`),
//! once with `--store redis:URL` on a Redis server of its own (`.ci/install/redis.sh`):
//!
//! - the official Python SDK client (`tests/py/sdk_replicas.py`, `.ci/install/a2a-interop.sh`),
//!   every call through nginx: a long task streamed, its connection cut, resumed with
//!   `Last-Event-ID` on each replica in turn, every event once, in order; `GetTask` and
//!   `ListTasks` on each replica; `CancelTask` on a replica other than the one running the
//!   task reaches the work;
//! - a cancel sent straight to one replica for a task running on another stops that work
//!   (its process says where its count stopped);
//! - one replica killed (SIGKILL) mid-task: its task ends `failed` within the lease, read
//!   through nginx, while the other two replicas' tasks go on.
//!
//! Skips with a visible `SKIPPED:` line when nginx, PostgreSQL, Redis or the SDK is missing,
//! unless `CI=true`.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rpcwire_a2a::{A2aClient, Message, Role, StreamResponse, TaskState};
use rpcwire_tests::interop::{assert_passed, run_bounded, venv_python, Server};
use rpcwire_tests::nginx;
use rpcwire_tests::postgres::Postgres;
use rpcwire_tests::redis::Redis;

const AGENT: &str = env!("CARGO_BIN_EXE_a2a-agent");

/// One replica on `store` (its `--store`): counts a step every 100 ms, leases of 800 ms
/// renewed every 100 ms.
fn replica(store: &str) -> Server {
    Server::start(
        Command::new(AGENT).args([
            "--http",
            "127.0.0.1:0",
            "--store",
            store,
            "--step-ms",
            "100",
            "--lease-ms",
            "800",
            "--lease-renew-ms",
            "100",
        ]),
        "listening ",
        Duration::from_secs(20),
    )
}

/// `http://127.0.0.1:PORT/` → `127.0.0.1:PORT`.
fn host_port(address: &str) -> &str {
    address.trim_start_matches("http://").trim_end_matches('/')
}

/// The `http { }` block: round-robin over the three, no affinity, streams unbuffered.
fn config(port: u16, upstreams: &[&str]) -> String {
    let servers: String = upstreams.iter().map(|u| format!("server {u}; ")).collect();
    format!(
        r#"    upstream agents {{ {servers}keepalive 8; }}
    server {{
        listen 127.0.0.1:{port};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 1h;
        location / {{ proxy_pass http://agents; }}
    }}
"#
    )
}

/// A task started on `client` counting to `n`: its id (the stream is dropped once the task
/// exists; the work goes on).
async fn start_count(client: &A2aClient, n: u32) -> String {
    let message = Message::text(
        Role::User,
        format!("m-{n}-{}", rand_suffix()),
        format!("count {n}"),
    );
    let mut events = client.send_streaming(message).await.unwrap();
    match events.next().await {
        Some(Ok(StreamResponse::Task(t))) => t.id,
        other => panic!("the task first, not {other:?}"),
    }
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// nginx and the Python SDK's interpreter, when both are installed (else skipped).
fn prerequisites() -> Option<(PathBuf, PathBuf)> {
    let Some(nginx_bin) = nginx::find() else {
        rpcwire_tests::skip("no nginx: run .ci/install/http-interop.sh");
        return None;
    };
    let python = venv_python("a2a", "a2a.client")?;
    Some((nginx_bin, python))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_postgres_behind_nginx_round_robin() {
    let Some(tools) = prerequisites() else {
        return;
    };
    let Some(pg) = tokio::task::spawn_blocking(Postgres::start).await.unwrap() else {
        return;
    };
    three_replicas_behind_nginx_round_robin(tools, &format!("postgres:{}", pg.url())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_replicas_on_redis_behind_nginx_round_robin() {
    let Some(tools) = prerequisites() else {
        return;
    };
    let Some(redis) = tokio::task::spawn_blocking(Redis::start).await.unwrap() else {
        return;
    };
    three_replicas_behind_nginx_round_robin(tools, &format!("redis:{}", redis.url())).await;
}

/// The checks of the module's docs, the replicas on `store` (their `--store`).
async fn three_replicas_behind_nginx_round_robin(
    (nginx_bin, python): (PathBuf, PathBuf),
    store: &str,
) {
    let replicas = [replica(store), replica(store), replica(store)];
    let upstreams: Vec<&str> = replicas.iter().map(|r| host_port(&r.address)).collect();
    // The upstreams answer before nginx sees traffic (one probed too early is marked down).
    for u in &upstreams {
        std::net::TcpStream::connect(u).unwrap();
    }
    let proxy = nginx::start(&nginx_bin, "a2a-replicas", |port| config(port, &upstreams));
    let front = format!("http://{}/", proxy.front);

    // The Python SDK through nginx.
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/py/sdk_replicas.py");
    let out = tokio::task::spawn_blocking(move || {
        run_bounded(
            Command::new(python).arg(script).arg(&front),
            Duration::from_secs(120),
        )
    })
    .await
    .unwrap();
    assert_passed(&out, "all ok");

    let clients: Vec<A2aClient> = replicas
        .iter()
        .map(|r| A2aClient::new(&format!("{}/", r.address)).unwrap())
        .collect();
    let through_nginx = A2aClient::new(&format!("http://{}/", proxy.front)).unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        // A cancel sent to replica 1 for a task on replica 0: the work on 0 stops.
        let id = start_count(&clients[0], 1000).await;
        tokio::time::sleep(Duration::from_millis(300)).await;
        let canceled = clients[1].cancel_task(&id).await.unwrap();
        assert_eq!(canceled.status.state, TaskState::Canceled);
        let start = Instant::now();
        while !replicas[0].stderr().contains("count stopped at") {
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "the work on replica 0 went on"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }

        // A long task on each; replica 0 killed (SIGKILL).
        let mut ids = Vec::new();
        for client in &clients {
            ids.push(start_count(client, 1000).await);
        }
        let [killed, rest @ ..] = replicas;
        drop(killed);
        let at = Instant::now();
        let failed = loop {
            let t = through_nginx.get_task(&ids[0], None).await.unwrap();
            if t.status.state != TaskState::Working {
                break t;
            }
            // The lease (800 ms) plus a renewal round (100 ms), with room for a busy machine.
            assert!(
                at.elapsed() < Duration::from_secs(10),
                "still working 10 s after its replica died"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        println!("failed {:?} after the kill", at.elapsed());
        assert_eq!(failed.status.state, TaskState::Failed, "{failed:?}");
        let why = failed.status.message.as_ref().map(Message::joined_text);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("lease lapsed")),
            "{why:?}"
        );
        // The others go on: still working, their counts growing.
        let before: Vec<usize> = chunk_counts(&through_nginx, &ids[1..]).await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        let after: Vec<usize> = chunk_counts(&through_nginx, &ids[1..]).await;
        for ((b, a), id) in before.iter().zip(&after).zip(&ids[1..]) {
            assert!(a > b, "task {id} stopped: {b} then {a} chunks");
            let t = through_nginx.get_task(id, None).await.unwrap();
            assert_eq!(t.status.state, TaskState::Working, "{t:?}");
        }
        drop(rest);
    })
    .await
    .expect("within 60 s");
}

/// How many chunks each task's count artifact has, read through `client`.
async fn chunk_counts(client: &A2aClient, ids: &[String]) -> Vec<usize> {
    let mut lens = Vec::new();
    for id in ids {
        let t = client.get_task(id, None).await.unwrap();
        lens.push(t.artifacts.first().map_or(0, |a| a.parts.len()));
    }
    lens
}
