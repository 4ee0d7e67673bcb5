//! Two stores on one database (PostgreSQL, feature `postgres`; Redis, feature `redis`), as two
//! replicas of an agent: each sees the other's tasks and event logs, and a lapsed lease of one
//! is failed by the other exactly once, even when both sweep at the same time, many times
//! over. Each check runs against every store, on a server of the test's own.
#![cfg(any(feature = "postgres", feature = "redis"))]
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[macro_use]
mod shared;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rpcwire_a2a::{
    EventLog, Lease, ListTasksRequest, StoreLimits, StreamResponse, Task, TaskState, TaskStatus,
    TaskStore,
};
use shared::Server;

/// What replicas share: tasks and event logs in one store.
trait Shared: TaskStore + EventLog {}
impl<T: TaskStore + EventLog> Shared for T {}

impl Server {
    /// A replica's store on this server, with these limits.
    async fn connect(&self, limits: StoreLimits) -> Arc<dyn Shared> {
        match self {
            #[cfg(feature = "postgres")]
            Server::Postgres(pg) => {
                let options = rpcwire_a2a::PostgresOptions {
                    pool_size: 4,
                    ..rpcwire_a2a::PostgresOptions::default()
                };
                Arc::new(
                    rpcwire_a2a::PostgresTaskStore::connect_with(&pg.url(), limits, options)
                        .await
                        .unwrap(),
                )
            }
            #[cfg(feature = "redis")]
            Server::Redis(redis) => Arc::new(
                rpcwire_a2a::RedisTaskStore::connect(&redis.url(), limits)
                    .await
                    .unwrap(),
            ),
        }
    }
}

fn working(id: &str) -> Task {
    Task {
        id: id.into(),
        context_id: "ctx".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: None,
            timestamp: Some(rpcwire_a2a::now_rfc3339()),
        },
        ..Task::default()
    }
}

on_every_store!(replicas_share_tasks_and_fail_each_others_lapsed_leases_once);
on_every_store!(replicas_append_to_one_log_without_sharing_an_id);
on_every_store!(replicas_at_the_limit_never_both_take_the_last_place);

async fn replicas_share_tasks_and_fail_each_others_lapsed_leases_once(server: &Server) {
    // Both start at once: (PostgreSQL) the migrations run once (under their lock), neither
    // fails.
    let limits = StoreLimits::default();
    let (a, b) = tokio::join!(server.connect(limits), server.connect(limits));

    // A's tasks are B's to read and list. The sweeps below are given their time (`now`), so
    // that nothing here depends on how fast the machine runs.
    let soon = SystemTime::now() + Duration::from_secs(60);
    const N: usize = 20;
    for i in 0..N {
        let lease = Lease {
            holder: "replica-a".into(),
            until: soon,
        };
        a.put(working(&format!("t{i}")), Some(lease)).await.unwrap();
    }
    assert_eq!(b.get("t3").await.unwrap().unwrap().id, "t3");
    let listed = b
        .list(&ListTasksRequest::default(), None, 100)
        .await
        .unwrap();
    assert_eq!(listed.total_size, N as i32);

    // Before the leases lapse, B's sweep takes nothing; A's own sweep never does.
    assert!(b
        .fail_lapsed(soon, "replica-b", "gone")
        .await
        .unwrap()
        .is_empty());
    // A renews half of them, then dies: the other half lapses.
    let renewed = Lease {
        holder: "replica-a".into(),
        until: soon + Duration::from_secs(600),
    };
    let kept: Vec<String> = (0..N / 2).map(|i| format!("t{i}")).collect();
    assert_eq!(a.renew(&renewed, &kept).await.unwrap(), N / 2);
    drop(a);
    let lapsed_at = soon + Duration::from_millis(1);
    assert!(b
        .fail_lapsed(lapsed_at, "replica-a", "own")
        .await
        .unwrap()
        .is_empty());

    // B and a third replica C sweep together, 8 sweeps each at once: every lapsed task is
    // failed by exactly one of them, once.
    let c = server.connect(limits).await;
    let now = lapsed_at;
    let mut sweeps = Vec::new();
    for k in 0..16 {
        let (store, holder) = if k % 2 == 0 {
            (Arc::clone(&b), "replica-b")
        } else {
            (Arc::clone(&c), "replica-c")
        };
        sweeps.push(tokio::spawn(async move {
            store
                .fail_lapsed(now, holder, "its replica stopped renewing")
                .await
                .unwrap()
        }));
    }
    let mut failed = Vec::new();
    for sweep in sweeps {
        failed.extend(sweep.await.unwrap().into_iter().map(|t| t.id));
    }
    failed.sort();
    let mut lapsed: Vec<String> = (N / 2..N).map(|i| format!("t{i}")).collect();
    lapsed.sort();
    assert_eq!(failed, lapsed, "each lapsed task failed exactly once");
    for id in &lapsed {
        let t = c.get(id).await.unwrap().unwrap();
        assert_eq!(t.status.state, TaskState::Failed);
        // One failure message in its history, not one per sweep.
        let notes = t
            .history
            .iter()
            .filter(|m| m.message_id.starts_with("lease-lapsed-"))
            .count();
        assert_eq!(notes, 1, "{id}");
    }
    for id in &kept {
        assert_eq!(
            b.get(id).await.unwrap().unwrap().status.state,
            TaskState::Working
        );
    }
}

async fn replicas_append_to_one_log_without_sharing_an_id(server: &Server) {
    let limits = StoreLimits::default();
    let (a, b) = tokio::join!(server.connect(limits), server.connect(limits));
    let event = |n: usize| {
        StreamResponse::Message(rpcwire_a2a::Message::text(
            rpcwire_a2a::Role::Agent,
            format!("m{n}"),
            "x",
        ))
    };
    // 2 × 20 appends at once from both replicas: ids 1..=40, each once.
    let mut appends = Vec::new();
    for n in 0..40 {
        let store = if n % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        appends.push(tokio::spawn(async move {
            store
                .append("t", Some("alice"), Arc::new(event(n)))
                .await
                .unwrap()
        }));
    }
    let mut ids = Vec::new();
    for append in appends {
        ids.push(append.await.unwrap());
    }
    ids.sort_unstable();
    assert_eq!(ids, (1..=40).collect::<Vec<u64>>());
    // A reader on either replica resumes after any id with the rest (the log keeps 64).
    let after = b.read_after("t", Some("alice"), 25, 100).await.unwrap();
    assert_eq!(
        after.iter().map(|e| e.id).collect::<Vec<_>>(),
        (26..=40).collect::<Vec<u64>>()
    );
    assert_eq!(
        a.read_after("t", Some("bob"), 0, 100).await,
        Err(rpcwire_a2a::StoreError::NotFound)
    );
}

/// At the store's limit, two replicas inserting at once: exactly `max_tasks` are kept, the
/// rest refused as full (the last free place is never taken twice).
async fn replicas_at_the_limit_never_both_take_the_last_place(server: &Server) {
    let limits = StoreLimits {
        max_tasks: 10,
        ..StoreLimits::default()
    };
    let (a, b) = tokio::join!(server.connect(limits), server.connect(limits));
    let mut puts = Vec::new();
    for i in 0..30 {
        let store = if i % 2 == 0 {
            Arc::clone(&a)
        } else {
            Arc::clone(&b)
        };
        puts.push(tokio::spawn(async move {
            store.put(working(&format!("t{i}")), None).await
        }));
    }
    let (mut stored, mut full) = (0, 0);
    for put in puts {
        match put.await.unwrap() {
            Ok(()) => stored += 1,
            Err(rpcwire_a2a::StoreError::Full) => full += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((stored, full), (10, 20));
    let listed = a
        .list(&ListTasksRequest::default(), None, 100)
        .await
        .unwrap();
    assert_eq!(listed.total_size, 10);
}
