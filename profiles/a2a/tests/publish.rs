//! A task's events reach its streams only once its event log has them, with their id there,
//! when the log is slow (an append that waits on the runtime, as a database's does): on a
//! current-thread runtime and a multi-thread one, a stream cut and resumed with
//! `Last-Event-ID` gets every event once, in order, ids without a gap, the same the log
//! holds; past `TaskLimits::max_pending_events` progress events are refused, the turn's
//! first and last still sent; and with a slow store, a busy turn's events reach its stream
//! while it runs (each waits for its own snapshot's write, not for the store to be idle).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire_a2a::{
    A2aClient, EventLog, EventLogLimits, Lease, ListTasksRequest, ListTasksResponse, LoggedEvent,
    MemoryEventLog, MemoryTaskStore, Message, Role, StoreFuture, StoreLimits, StreamResponse, Task,
    TaskContext, TaskLimits, TaskStore,
};
use tokio::sync::watch;

/// A memory log whose appends wait: for `delay` on the runtime's timer, and until `open` is
/// true. It never answers at once, as a database's log does not.
struct SlowLog {
    inner: MemoryEventLog,
    delay: Duration,
    open: watch::Receiver<bool>,
}

impl SlowLog {
    fn new(delay: Duration, open: watch::Receiver<bool>) -> Arc<Self> {
        Arc::new(SlowLog {
            inner: MemoryEventLog::new(EventLogLimits {
                max_tasks: 16,
                max_events: 1024,
            }),
            delay,
            open,
        })
    }
}

impl EventLog for SlowLog {
    fn append<'a>(
        &'a self,
        task_id: &'a str,
        owner: Option<&'a str>,
        event: Arc<StreamResponse>,
    ) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            let mut open = self.open.clone();
            open.wait_for(|o| *o).await.unwrap();
            self.inner.append_now(task_id, owner, event)
        })
    }

    fn read_after<'a>(
        &'a self,
        task_id: &'a str,
        caller: Option<&'a str>,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Vec<LoggedEvent>> {
        self.inner.read_after(task_id, caller, after, max)
    }

    fn trim<'a>(&'a self, task_id: &'a str, through: u64) -> StoreFuture<'a, usize> {
        self.inner.trim(task_id, through)
    }

    fn forget<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, ()> {
        self.inner.forget(task_id)
    }
}

/// 24 steps and 4 artifacts without a pause, then complete: faster than the log.
async fn burst(ctx: TaskContext) {
    for i in 0..24 {
        assert!(ctx.working(Some(&format!("step {i}"))));
        if i % 6 == 5 {
            ctx.text_artifact(&format!("a{i}"), "part");
        }
    }
    ctx.complete(Some("done"));
}

/// What a stream event says, to compare events: its kind and its text.
fn describe(e: &StreamResponse) -> String {
    match e {
        StreamResponse::Task(t) => format!("task {:?}", t.status.state),
        StreamResponse::StatusUpdate(u) => format!(
            "status {:?} {}",
            u.status.state,
            u.status
                .message
                .as_ref()
                .map(Message::joined_text)
                .unwrap_or_default()
        ),
        StreamResponse::ArtifactUpdate(a) => format!("artifact {}", a.artifact.artifact_id),
        StreamResponse::Message(m) => format!("message {}", m.joined_text()),
    }
}

async fn a_stream_cut_and_resumed_gets_every_event_once_in_order() {
    let (_open_tx, open) = watch::channel(true);
    let log = SlowLog::new(Duration::from_millis(2), open);
    let (_, url, _service) =
        common::serve("slow-log", burst, |s| s.event_log(Arc::clone(&log) as _)).await;
    let client = A2aClient::new(&url).unwrap();
    let run = async {
        let mut stream = client
            .send_streaming(Message::text(Role::User, "m-burst", "go"))
            .await
            .unwrap();
        let mut seen = Vec::new();
        let mut task_id = String::new();
        for _ in 0..5 {
            let e = stream.next().await.unwrap().unwrap();
            if let StreamResponse::Task(t) = &e {
                task_id.clone_from(&t.id);
            }
            seen.push((stream.last_event_id().to_owned(), describe(&e)));
        }
        let last = stream.last_event_id().to_owned();
        drop(stream);
        let mut resumed = client.resubscribe(&task_id, &last).await.unwrap();
        while let Some(e) = resumed.next().await {
            seen.push((resumed.last_event_id().to_owned(), describe(&e.unwrap())));
        }
        (task_id, seen)
    };
    let (task_id, seen) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap();
    // 1 task event, 24 steps, 4 artifacts, completed.
    assert_eq!(seen.len(), 30, "{seen:#?}");
    let ids: Vec<String> = seen.iter().map(|(id, _)| id.clone()).collect();
    let expected: Vec<String> = (1..=30).map(|i: u64| i.to_string()).collect();
    assert_eq!(ids, expected);
    // The agent's order, and what the log holds.
    let logged = log.inner.read_after_now(&task_id, None, 0, 100).unwrap();
    let logged: Vec<(String, String)> = logged
        .iter()
        .map(|e| (e.id.to_string(), describe(&e.event)))
        .collect();
    assert_eq!(seen, logged);
    let steps: Vec<&str> = seen
        .iter()
        .filter_map(|(_, d)| d.strip_prefix("status Working "))
        .collect();
    let expected: Vec<String> = (0..24).map(|i| format!("step {i}")).collect();
    assert_eq!(steps, expected);
    assert_eq!(seen[0].1, "task Submitted");
    assert_eq!(seen[29].1, "status Completed done");
}

#[tokio::test]
async fn a_slow_log_on_a_current_thread_runtime() {
    a_stream_cut_and_resumed_gets_every_event_once_in_order().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_log_on_a_multi_thread_runtime() {
    a_stream_cut_and_resumed_gets_every_event_once_in_order().await;
}

/// With the log held, an agent's progress events past `max_pending_events` are refused (the
/// task event already waits: one less working status than the bound); its final state is
/// not; once the log moves, the stream gets exactly the events accepted, ids 1 to the bound
/// plus one.
async fn past_the_bound_progress_is_refused_and_the_turn_still_ends() {
    const BOUND: usize = 8;
    let (open_tx, open) = watch::channel(false);
    let log = SlowLog::new(Duration::ZERO, open);
    let accepted = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&accepted);
    let agent = move |ctx: TaskContext| {
        let counted = Arc::clone(&counted);
        async move {
            for i in 0..3 * BOUND {
                if ctx.working(Some(&format!("step {i}"))) {
                    counted.fetch_add(1, Ordering::SeqCst);
                }
            }
            assert!(ctx.complete(Some("done")));
        }
    };
    let limits = TaskLimits {
        max_pending_events: BOUND,
        event_buffer: 64,
        ..TaskLimits::default()
    };
    let (_, url, _service) = common::serve("held-log", agent, |s| {
        s.event_log(Arc::clone(&log) as _).task_limits(limits)
    })
    .await;
    let client = A2aClient::new(&url).unwrap();
    let run = async {
        // Answered once the turn is over (its first event waits for the log).
        let mut stream = client
            .send_streaming(Message::text(Role::User, "m-held", "go"))
            .await
            .unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), BOUND - 1);
        open_tx.send(true).unwrap();
        let mut seen = Vec::new();
        let mut task_id = String::new();
        while let Some(e) = stream.next().await {
            let e = e.unwrap();
            if let StreamResponse::Task(t) = &e {
                task_id.clone_from(&t.id);
            }
            seen.push((stream.last_event_id().to_owned(), describe(&e)));
        }
        // A refused event left the task as it was: its history has the accepted steps.
        let task = client.get_task(&task_id, None).await.unwrap();
        let history: Vec<String> = task.history.iter().map(Message::joined_text).collect();
        let mut expected = vec!["go".to_owned()];
        expected.extend((0..BOUND - 1).map(|i| format!("step {i}")));
        expected.push("done".to_owned());
        assert_eq!(history, expected);
        seen
    };
    let seen = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap();
    let ids: Vec<String> = seen.iter().map(|(id, _)| id.clone()).collect();
    let expected: Vec<String> = (1..=BOUND as u64 + 1).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected, "{seen:#?}");
    assert_eq!(seen[0].1, "task Submitted");
    for (i, (_, d)) in seen[1..BOUND].iter().enumerate() {
        assert_eq!(d, &format!("status Working step {i}"));
    }
    assert_eq!(seen[BOUND].1, "status Completed done");
}

#[tokio::test]
async fn the_bound_on_a_current_thread_runtime() {
    past_the_bound_progress_is_refused_and_the_turn_still_ends().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bound_on_a_multi_thread_runtime() {
    past_the_bound_progress_is_refused_and_the_turn_still_ends().await;
}

/// A memory store whose every snapshot write takes `delay` (a database's round trip).
struct SlowStore {
    inner: MemoryTaskStore,
    delay: Duration,
}

impl TaskStore for SlowStore {
    fn put(&self, task: Task, lease: Option<Lease>) -> StoreFuture<'_, ()> {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            self.inner.put_now(task, lease)
        })
    }

    fn get<'a>(&'a self, id: &'a str) -> StoreFuture<'a, Option<Task>> {
        self.inner.get(id)
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, ()> {
        self.inner.remove(id)
    }

    fn list<'a>(
        &'a self,
        query: &'a ListTasksRequest,
        caller: Option<&'a str>,
        max_page: usize,
    ) -> StoreFuture<'a, ListTasksResponse> {
        self.inner.list(query, caller, max_page)
    }

    fn renew<'a>(&'a self, lease: &'a Lease, ids: &'a [String]) -> StoreFuture<'a, usize> {
        self.inner.renew(lease, ids)
    }

    fn fail_lapsed<'a>(
        &'a self,
        now: std::time::SystemTime,
        holder: &'a str,
        reason: &'a str,
    ) -> StoreFuture<'a, Vec<Task>> {
        self.inner.fail_lapsed(now, holder, reason)
    }
}

/// With snapshot writes of 40 ms and a turn that changes its task every 5 ms for 400 ms (the
/// store never idle meanwhile), the stream has its tenth event while the turn still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_turns_events_reach_its_stream_while_it_runs() {
    let (_open_tx, open) = watch::channel(true);
    let log = SlowLog::new(Duration::ZERO, open);
    let store = Arc::new(SlowStore {
        inner: MemoryTaskStore::new(StoreLimits::default()),
        delay: Duration::from_millis(40),
    });
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = Arc::clone(&finished);
    let agent = move |ctx: TaskContext| {
        let flag = Arc::clone(&flag);
        async move {
            for i in 0..80 {
                ctx.working(Some(&format!("step {i}")));
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            flag.store(true, Ordering::SeqCst);
            ctx.complete(None);
        }
    };
    let (_, url, _service) = common::serve("busy", agent, |s| {
        s.store(Arc::clone(&store) as _)
            .event_log(Arc::clone(&log) as _)
    })
    .await;
    let client = A2aClient::new(&url).unwrap();
    let run = async {
        let mut stream = client
            .send_streaming(Message::text(Role::User, "m-busy", "go"))
            .await
            .unwrap();
        for _ in 0..10 {
            stream.next().await.unwrap().unwrap();
        }
        let during = !finished.load(Ordering::SeqCst);
        let mut ids = vec![];
        while let Some(e) = stream.next().await {
            e.unwrap();
            ids.push(stream.last_event_id().parse::<u64>().unwrap());
        }
        (during, ids)
    };
    let (during, ids) = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .unwrap();
    assert!(
        during,
        "the stream's first ten events came only after the turn ended"
    );
    // Task, 80 steps, completed: ids 11 to 82 after the first ten.
    assert_eq!(ids, (11..=82).collect::<Vec<u64>>());
}
