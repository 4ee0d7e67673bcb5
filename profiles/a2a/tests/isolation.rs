//! Isolation of event logs, as a property: interleaved appends, reads and trims of several
//! tasks owned by several callers (and by nobody), against a model. A read never returns an
//! event of another task, never serves a caller a log it may not see, and a replay after any
//! event id returns exactly the events after it (or says they were trimmed). Against the
//! memory log, (feature `sqlite`) the SQLite store's, (feature `postgres`) the PostgreSQL
//! store's and (feature `redis`) the Redis store's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use rpcwire_a2a::{
    EventLog, EventLogLimits, MemoryEventLog, Message, Role, StoreError, StreamResponse, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};
use std::sync::Arc;

const TASKS: usize = 4;
/// The callers: anonymous, and two subjects.
const CALLERS: [Option<&str>; 3] = [None, Some("alice"), Some("bob")];
const LIMITS: EventLogLimits = EventLogLimits {
    max_tasks: 16,
    max_events: 6,
};

/// Task `t`'s owner: nobody, alice, bob, alice.
fn owner(t: usize) -> Option<&'static str> {
    CALLERS[[0, 1, 2, 1][t]]
}

fn task_id(t: usize) -> String {
    format!("task-{t}")
}

#[derive(Debug, Clone)]
enum Op {
    /// Task `t`'s next event, appended by `by` (its owner or not).
    Append { t: usize, by: usize },
    /// Task `t`'s events after `after` (relative: may be past the last), read by `by`.
    Read { t: usize, by: usize, after: u64 },
    /// Task `t`'s events through `through` trimmed.
    Trim { t: usize, through: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..TASKS, 0..3usize).prop_map(|(t, by)| Op::Append { t, by }),
        4 => (0..TASKS, 0..3usize, 0..16u64).prop_map(|(t, by, after)| Op::Read { t, by, after }),
        1 => (0..TASKS, 0..16u64).prop_map(|(t, through)| Op::Trim { t, through }),
    ]
}

/// An event that says which task it is of and its place: `n` is unique over the run.
fn event(t: usize, n: usize) -> StreamResponse {
    StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: task_id(t),
        context_id: "ctx".into(),
        status: TaskStatus {
            state: TaskState::Working,
            message: Some(Message::text(Role::Agent, format!("e{n}"), format!("{n}"))),
            timestamp: None,
        },
        metadata: None,
    })
}

/// What the model holds of one task's log: every event appended (id `i + 1` at `i`), and
/// the id of the first kept.
#[derive(Default, Clone)]
struct Model {
    events: Vec<StreamResponse>,
    first: u64,
    exists: bool,
}

async fn check(log: &dyn EventLog, ops: &[Op]) -> Result<(), TestCaseError> {
    let mut model: Vec<Model> = vec![
        Model {
            first: 1,
            ..Model::default()
        };
        TASKS
    ];
    for (n, op) in ops.iter().enumerate() {
        match *op {
            Op::Append { t, by } => {
                let m = &mut model[t];
                // A task's first event is its owner's (the log is made theirs); later ones
                // come from any caller, and only the owner's are taken.
                let by = if m.exists { CALLERS[by] } else { owner(t) };
                let got = log.append(&task_id(t), by, Arc::new(event(t, n))).await;
                if by != owner(t) {
                    prop_assert_eq!(got, Err(StoreError::NotOwner));
                    continue;
                }
                prop_assert_eq!(got, Ok(m.events.len() as u64 + 1));
                m.exists = true;
                m.events.push(event(t, n));
                let len = m.events.len() as u64;
                m.first = m
                    .first
                    .max((len + 1).saturating_sub(LIMITS.max_events as u64));
            }
            Op::Read { t, by, after } => {
                let m = &model[t];
                let got = log.read_after(&task_id(t), CALLERS[by], after, 100).await;
                let visible = owner(t).is_none() || owner(t) == CALLERS[by];
                if !m.exists || !visible {
                    prop_assert_eq!(got, Err(StoreError::NotFound), "op {} {:?}", n, op);
                    continue;
                }
                if after + 1 < m.first {
                    prop_assert_eq!(got, Err(StoreError::Trimmed), "op {} {:?}", n, op);
                    continue;
                }
                let got = got.unwrap();
                let want: Vec<(u64, StreamResponse)> = m
                    .events
                    .iter()
                    .enumerate()
                    .map(|(i, e)| (i as u64 + 1, e.clone()))
                    .filter(|(id, _)| *id > after)
                    .collect();
                let got: Vec<(u64, StreamResponse)> = got
                    .into_iter()
                    .map(|e| (e.id, StreamResponse::clone(&e.event)))
                    .collect();
                for (_, e) in &got {
                    let StreamResponse::StatusUpdate(u) = e else {
                        return Err(TestCaseError::fail("not a status update"));
                    };
                    prop_assert_eq!(&u.task_id, &task_id(t), "another task's event");
                }
                prop_assert_eq!(got, want, "op {} {:?}", n, op);
            }
            Op::Trim { t, through } => {
                let m = &mut model[t];
                log.trim(&task_id(t), through).await.unwrap();
                if m.exists {
                    let next = m.events.len() as u64 + 1;
                    m.first = m.first.max((through + 1).min(next));
                }
            }
        }
    }
    Ok(())
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn memory_logs_keep_tasks_and_owners_apart(ops in prop::collection::vec(op(), 1..80)) {
        let log = MemoryEventLog::new(LIMITS);
        runtime().block_on(check(&log, &ops))?;
    }
}

#[cfg(feature = "sqlite")]
proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn sqlite_logs_keep_tasks_and_owners_apart(ops in prop::collection::vec(op(), 1..80)) {
        let store = rpcwire_a2a::SqliteTaskStore::open_in_memory(rpcwire_a2a::StoreLimits::default())
            .unwrap()
            .event_limits(LIMITS);
        let store: std::sync::Arc<dyn EventLog> = std::sync::Arc::new(store);
        runtime().block_on(check(&*store, &ops))?;
    }
}

/// The same log, reopened: a SQLite file keeps its logs, their owners and ids.
#[cfg(feature = "sqlite")]
#[test]
fn sqlite_logs_outlive_the_connection() {
    let path = std::env::temp_dir().join(format!(
        "rpcwire-a2a-events-{}-{}.sqlite",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    let open =
        || rpcwire_a2a::SqliteTaskStore::open(&path, rpcwire_a2a::StoreLimits::default()).unwrap();
    runtime().block_on(async {
        let store = open();
        for n in 0..3 {
            store
                .append("t", Some("alice"), Arc::new(event(0, n)))
                .await
                .unwrap();
        }
        drop(store);
        let store = open();
        let after_one = store.read_after("t", Some("alice"), 1, 10).await.unwrap();
        assert_eq!(after_one.iter().map(|e| e.id).collect::<Vec<_>>(), [2, 3]);
        assert_eq!(*after_one[1].event, event(0, 2));
        assert_eq!(
            store.read_after("t", Some("bob"), 0, 10).await,
            Err(StoreError::NotFound)
        );
        assert_eq!(
            store
                .append("t", Some("alice"), Arc::new(event(0, 9)))
                .await,
            Ok(4)
        );
    });
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
}

/// The same property against the PostgreSQL store: one server for every case, a schema of
/// its own for each (so that each case starts from empty logs).
#[cfg(feature = "postgres")]
#[test]
fn postgres_logs_keep_tasks_and_owners_apart() {
    use proptest::test_runner::{Config, TestRunner};
    let Some(pg) = rpcwire_tests::postgres::Postgres::start() else {
        return;
    };
    let url = pg.url();
    let case = std::sync::atomic::AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config::with_cases(48));
    let result = runner.run(&prop::collection::vec(op(), 1..80), |ops| {
        let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        runtime().block_on(async {
            let store = rpcwire_a2a::PostgresTaskStore::connect_with(
                &url,
                rpcwire_a2a::StoreLimits::default(),
                rpcwire_a2a::PostgresOptions {
                    pool_size: 2,
                    schema: Some(format!("case_{n}")),
                    ..rpcwire_a2a::PostgresOptions::default()
                },
            )
            .await
            .unwrap()
            .event_limits(LIMITS);
            check(&store, &ops).await
        })
    });
    drop(pg);
    if let Err(e) = result {
        panic!("{e}");
    }
}

/// The same property against the Redis store: one server for every case, a key prefix of its
/// own for each (so that each case starts from empty logs).
#[cfg(feature = "redis")]
#[test]
fn redis_logs_keep_tasks_and_owners_apart() {
    use proptest::test_runner::{Config, TestRunner};
    let Some(redis) = rpcwire_tests::redis::Redis::start() else {
        return;
    };
    let url = redis.url();
    let case = std::sync::atomic::AtomicUsize::new(0);
    let mut runner = TestRunner::new(Config::with_cases(128));
    let result = runner.run(&prop::collection::vec(op(), 1..80), |ops| {
        let n = case.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        runtime().block_on(async {
            let store = rpcwire_a2a::RedisTaskStore::connect_with(
                &url,
                rpcwire_a2a::StoreLimits::default(),
                rpcwire_a2a::RedisOptions {
                    prefix: format!("case{n}"),
                    ..rpcwire_a2a::RedisOptions::default()
                },
            )
            .await
            .unwrap()
            .event_limits(LIMITS);
            check(&store, &ops).await
        })
    });
    drop(redis);
    if let Err(e) = result {
        panic!("{e}");
    }
}
