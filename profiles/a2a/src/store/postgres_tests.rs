//! The PostgreSQL store's own checks: schema names, migrations, and the bounds at their
//! edges, against a server of the test's own (`rpcwire_tests::postgres`).
use super::*;
use crate::types::Message;

#[test]
fn schema_names_are_plain_identifiers() {
    for good in ["a", "_x", "agent_1", &"s".repeat(63)] {
        assert!(plain_identifier(good), "{good}");
    }
    for bad in ["", "1a", "A", "a-b", "a;drop", "a b", "é", &"s".repeat(64)] {
        assert!(!plain_identifier(bad), "{bad}");
    }
}

#[tokio::test(flavor = "current_thread")]
async fn migrations_run_once_and_a_newer_schema_is_refused() {
    let Some(pg) = tokio::task::spawn_blocking(rpcwire_tests::postgres::Postgres::start)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let url = pg.url();
    let open = || PostgresTaskStore::connect(&url, StoreLimits::default());
    let store = open().await.unwrap_or_else(|e| panic!("{e}"));
    // A second open finds nothing to do (running the migrations again would fail).
    drop(open().await.unwrap_or_else(|e| panic!("{e}")));
    let mut c = store.pool.get().await.unwrap_or_else(|e| panic!("{e}"));
    let version = |row: Row| row.get::<_, i64>(0);
    let at = c
        .client()
        .query_one("SELECT version FROM rpcwire_a2a_schema", &[])
        .await
        .map(version)
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(at, MIGRATIONS.len() as i64);
    c.client()
        .execute("UPDATE rpcwire_a2a_schema SET version = version + 1", &[])
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(matches!(
        open().await,
        Err(PostgresError::NewerSchema(v)) if v == at + 1
    ));
    // A schema name that is not an identifier never reaches SQL.
    let bad = PostgresOptions {
        schema: Some("x; DROP TABLE tasks".into()),
        ..PostgresOptions::default()
    };
    assert!(matches!(
        PostgresTaskStore::connect_with(&url, StoreLimits::default(), bad).await,
        Err(PostgresError::BadSchema(_))
    ));
}

/// A store in schema `schema` of `url` with these limits.
async fn store_in(url: &str, schema: &str, limits: StoreLimits) -> PostgresTaskStore {
    let options = PostgresOptions {
        pool_size: 2,
        schema: Some(schema.into()),
        ..PostgresOptions::default()
    };
    PostgresTaskStore::connect_with(url, limits, options)
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

fn event(n: usize) -> std::sync::Arc<StreamResponse> {
    std::sync::Arc::new(StreamResponse::Message(Message::text(
        crate::types::Role::Agent,
        format!("m{n}"),
        "x",
    )))
}

/// The bounds at their edges, as the SQLite store's: a full store makes room from
/// finished tasks only (their push configs with them); a log past its events trims the
/// oldest; a log past the number of logs forgets the oldest log.
#[tokio::test(flavor = "current_thread")]
async fn the_bounds_hold_at_their_edges() {
    let Some(pg) = tokio::task::spawn_blocking(rpcwire_tests::postgres::Postgres::start)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let limits = StoreLimits {
        max_tasks: 2,
        max_finished: 10,
        finished_ttl: std::time::Duration::from_secs(60),
    };
    // A keyword as a schema name: quoted, it works.
    let store = store_in(&pg.url(), "full", limits).await;
    super::super::bound_checks::a_full_store_makes_room_from_finished_tasks_only(&store).await;

    let logs = store_in(&pg.url(), "logs", StoreLimits::default())
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
    assert!(logs.read_after("y", None, 0, 10).await.is_ok());
    // `max` bounds a read.
    let one = logs.read_after("y", None, 0, 0).await.unwrap_or_default();
    assert!(one.is_empty());
}

/// A call that waits on a lock longer than the statement timeout fails (a `Backend` error)
/// instead of hanging; once the lock is free, the same call succeeds.
#[tokio::test(flavor = "current_thread")]
async fn a_stuck_database_fails_a_call_after_the_statement_timeout() {
    let Some(pg) = tokio::task::spawn_blocking(rpcwire_tests::postgres::Postgres::start)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    let options = PostgresOptions {
        pool_size: 2,
        statement_timeout: std::time::Duration::from_millis(200),
        ..PostgresOptions::default()
    };
    let store = PostgresTaskStore::connect_with(&pg.url(), StoreLimits::default(), options)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    // Another session holds the tasks table.
    let holder = PostgresTaskStore::connect(&pg.url(), StoreLimits::default())
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mut c = holder.pool.get().await.unwrap_or_else(|e| panic!("{e}"));
    let tx = c
        .client()
        .transaction()
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    tx.batch_execute("LOCK TABLE tasks IN ACCESS EXCLUSIVE MODE")
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let started = std::time::Instant::now();
    let put = store.put(task("new", TaskState::Working), None).await;
    assert!(matches!(put, Err(StoreError::Backend(_))), "{put:?}");
    let waited = started.elapsed();
    assert!(
        waited >= std::time::Duration::from_millis(200)
            && waited < std::time::Duration::from_secs(10),
        "{waited:?}"
    );
    assert!(put
        .map_err(|e| e.to_string())
        .err()
        .is_some_and(|e| e.contains("statement timeout")));
    tx.rollback().await.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        store.put(task("new", TaskState::Working), None).await,
        Ok(())
    );
}

/// The bounds between passes, at their edges ([`PostgresOptions::evict_every`]): one store
/// never goes over `max_tasks`; three stores, each counting only its own writes between
/// passes, go over by at most `evict_every` each (here: one fills the store under the lock,
/// the two others, last counted empty, insert `evict_every` each before a pass shows them
/// the store full); finished tasks and logs go over their bounds by fewer than `evict_every`
/// and are back at them after the pass.
#[tokio::test(flavor = "current_thread")]
async fn the_bounds_between_passes_hold_at_their_edges() {
    let Some(pg) = tokio::task::spawn_blocking(rpcwire_tests::postgres::Postgres::start)
        .await
        .unwrap_or_else(|e| panic!("{e}"))
    else {
        return;
    };
    const EVERY: usize = 2;
    let options = PostgresOptions {
        pool_size: 1,
        schema: Some("passes".into()),
        evict_every: EVERY,
        evict_interval: std::time::Duration::from_secs(3600),
        ..PostgresOptions::default()
    };
    // Above 4 × EVERY: far from full, inserts do not count.
    let limits = StoreLimits {
        max_tasks: 20,
        max_finished: 12,
        finished_ttl: std::time::Duration::from_secs(3600),
    };
    let url = pg.url();
    let connect = || PostgresTaskStore::connect_with(&url, limits, options.clone());
    let (a, b, c) = (connect().await, connect().await, connect().await);
    let (a, b, c) = (
        a.unwrap_or_else(|e| panic!("{e}")),
        b.unwrap_or_else(|e| panic!("{e}")),
        c.unwrap_or_else(|e| panic!("{e}")),
    );
    // One store alone: exactly max_tasks, then refused.
    for i in 0..20 {
        let put = a
            .put(task(&format!("a{i}"), TaskState::Working), None)
            .await;
        assert_eq!(put, Ok(()), "a{i}");
    }
    assert_eq!(
        a.put(task("a20", TaskState::Working), None).await,
        Err(StoreError::Full)
    );
    assert_eq!(held(&a).await, 20);
    // The two others last counted at connect (0): `EVERY` each, then a pass shows them full.
    for (name, store) in [("b", &b), ("c", &c)] {
        for i in 0..EVERY {
            let put = store.put(task(&format!("{name}{i}"), TaskState::Working), None);
            assert_eq!(put.await, Ok(()), "{name}{i}");
        }
        assert_eq!(
            store.put(task("refused", TaskState::Working), None).await,
            Err(StoreError::Full)
        );
    }
    assert_eq!(held(&a).await, (20 + 2 * EVERY) as i32);

    // Finished tasks: over max_finished by fewer than EVERY between passes of one store.
    let d = PostgresTaskStore::connect_with(
        &pg.url(),
        StoreLimits {
            max_tasks: 1000,
            ..limits
        },
        PostgresOptions {
            schema: Some("finished".into()),
            ..options.clone()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    // Created working (a write each), then finished one by one (a write each): a pass after
    // every second finish, so that the finished tasks are one over their bound in between.
    for i in 0..40 {
        d.put(task(&format!("f{i}"), TaskState::Working), None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let mut most = 0;
    for i in 0..40 {
        d.put(task(&format!("f{i}"), TaskState::Completed), None)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        most = most.max(finished(&d).await);
    }
    assert_eq!(most, (limits.max_finished + EVERY - 1) as i32);
    assert_eq!(finished(&d).await, limits.max_finished as i32);
    assert_eq!(d.get("f39").await.map(|t| t.is_some()), Ok(true));
    assert_eq!(held(&d).await, limits.max_finished as i32);
    assert_eq!(d.get("f0").await, Ok(None), "the oldest go first");

    // Logs: over their number by fewer than EVERY, the oldest go in the pass.
    let logs = PostgresTaskStore::connect_with(
        &pg.url(),
        limits,
        PostgresOptions {
            schema: Some("logs".into()),
            ..options.clone()
        },
    )
    .await
    .unwrap_or_else(|e| panic!("{e}"))
    .event_limits(EventLogLimits {
        max_tasks: 10,
        max_events: 3,
    });
    for i in 0..11 {
        logs.append(&format!("l{i}"), None, event(i))
            .await
            .unwrap_or_else(|e| panic!("{e}"));
    }
    // 11 logs made, the 10th's pass kept 10: 11 held, one over (fewer than EVERY).
    assert_eq!(held_logs(&logs).await, 11);
    logs.append("l11", None, event(11))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(held_logs(&logs).await, 10);
    assert_eq!(logs.last_id("l1", None).await, Err(StoreError::NotFound));
    assert_eq!(logs.last_id("l2", None).await, Ok(1));
}

/// How many tasks `store` holds.
async fn held(store: &PostgresTaskStore) -> i32 {
    let query = ListTasksRequest::default();
    store
        .list(&query, None, 100)
        .await
        .map_or(-1, |l| l.total_size)
}

/// How many completed tasks `store` holds.
async fn finished(store: &PostgresTaskStore) -> i32 {
    let query = ListTasksRequest {
        status: Some(TaskState::Completed),
        ..ListTasksRequest::default()
    };
    store
        .list(&query, None, 100)
        .await
        .map_or(-1, |l| l.total_size)
}

/// How many of the logs `l0`..`l11` `store` holds.
async fn held_logs(store: &PostgresTaskStore) -> usize {
    let mut n = 0;
    for i in 0..12 {
        n += usize::from(store.last_id(&format!("l{i}"), None).await.is_ok());
    }
    n
}
