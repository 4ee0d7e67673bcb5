//! The agent with `--store sqlite:PATH` killed with SIGKILL while it holds 100 finished and
//! 10 running tasks, then started again on the same file: every finished task comes back
//! from `GetTask` and `ListTasks` as it was, history and artifacts included, and the 10 it was
//! working on are `failed`, with the reason, once their lease lapses; push notification
//! configs set before the kill are listed after it. A stream cut mid-task before the kill
//! resumes after it with `Last-Event-ID` from the file's event log: every event after the
//! last it had, once each, in order, to the lease's failure. Over the agent's real
//! JSON-RPC HTTP interface, on loopback.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use rpcwire_a2a::{
    A2aClient, ListTasksRequest, Message, Role, SendMessageResponse, StreamResponse, Task,
    TaskPushNotificationConfig, TaskState,
};
use rpcwire_tests::interop::Server;

const AGENT: &str = env!("CARGO_BIN_EXE_a2a-agent");
/// The lease of a running task: short, so that the test waits little for it to lapse.
const LEASE_MS: &str = "800";

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
            LEASE_MS,
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

async fn send(client: &A2aClient, text: &str, task_id: Option<&str>) -> Task {
    let mut message = Message::text(Role::User, format!("m-{text}-{task_id:?}"), text);
    if let Some(id) = task_id {
        message.task_id = id.to_owned();
    }
    match client.send_message(message).await.unwrap() {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a task, not {m:?}"),
    }
}

/// Every task of the listing, page by page, with artifacts.
async fn list_all(client: &A2aClient) -> Vec<Task> {
    let mut all = Vec::new();
    let mut query = ListTasksRequest {
        page_size: Some(40),
        include_artifacts: true,
        ..ListTasksRequest::default()
    };
    for _ in 0..20 {
        let page = client.list_tasks(&query).await.unwrap();
        all.extend(page.tasks);
        if page.next_page_token.is_empty() {
            return all;
        }
        query.page_token = page.next_page_token;
    }
    panic!("more pages than tasks");
}

struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        for suffix in ["", "-wal", "-shm"] {
            let mut p = self.0.clone().into_os_string();
            p.push(suffix);
            let _ = std::fs::remove_file(p);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn finished_tasks_survive_a_kill_and_running_ones_fail_when_their_lease_lapses() {
    let file = TempFile(std::env::temp_dir().join(format!(
        "rpcwire-a2a-restart-{}-{}.sqlite",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )));
    let store = format!("sqlite:{}", file.0.display());
    let (server, client) = agent(&store);

    // 100 finished: 90 echoes (one turn), 10 greetings (two turns: the question, the name).
    let mut finished = Vec::new();
    for i in 0..90 {
        let t = send(&client, &format!("echo number {i}"), None).await;
        assert_eq!(t.status.state, TaskState::Completed);
        finished.push(t.id);
    }
    for i in 0..10 {
        let asked = send(&client, "greet", None).await;
        assert_eq!(asked.status.state, TaskState::InputRequired);
        let t = send(&client, &format!("name{i}"), Some(&asked.id)).await;
        assert_eq!(t.status.state, TaskState::Completed);
        finished.push(t.id);
    }
    // 10 running: counts to 1 000 at a step per 200 ms; the streams are dropped once the
    // task exists (the work goes on).
    let mut running = Vec::new();
    for i in 0..10 {
        let message = Message::text(Role::User, format!("count-{i}"), "count 1000");
        let mut events = client.send_streaming(message).await.unwrap();
        match events.next().await {
            Some(Ok(StreamResponse::Task(t))) => running.push(t.id),
            other => panic!("the task first, not {other:?}"),
        }
    }
    // A push config on each of 5 finished tasks (never delivered to: they are final).
    let mut configs = HashMap::new();
    for (i, id) in finished.iter().take(5).enumerate() {
        let config = TaskPushNotificationConfig {
            task_id: id.clone(),
            url: format!("http://127.0.0.1:9/hook{i}"),
            token: format!("token{i}"),
            ..TaskPushNotificationConfig::default()
        };
        let kept = client.create_push_config(&config).await.unwrap();
        assert!(!kept.id.is_empty());
        configs.insert(id.clone(), kept);
    }
    // As they were before the kill, from the server itself.
    let mut before: HashMap<String, Task> = HashMap::new();
    for id in &finished {
        let t = client.get_task(id, None).await.unwrap();
        assert!(!t.artifacts.is_empty() && !t.history.is_empty(), "{t:?}");
        before.insert(id.clone(), t);
    }
    for id in &running {
        let t = client.get_task(id, None).await.unwrap();
        assert_eq!(t.status.state, TaskState::Working, "{t:?}");
    }
    // Some steps of every count are in the file (artifact chunks).
    tokio::time::sleep(Duration::from_millis(500)).await;
    drop(server); // `Child::kill`: SIGKILL on Unix.

    let (_server, client) = agent(&store);
    for (id, was) in &before {
        let now = client.get_task(id, None).await.unwrap();
        assert_eq!(&now, was, "GetTask after the restart");
    }
    for (id, config) in &configs {
        let listed = client.list_push_configs(id).await.unwrap();
        assert_eq!(
            listed.configs,
            std::slice::from_ref(config),
            "push configs after the restart"
        );
    }
    // The running ones: failed, with the reason, once the lease lapsed (bounded wait).
    let start = Instant::now();
    let mut failed = Vec::new();
    for id in &running {
        let t = loop {
            let t = client.get_task(id, None).await.unwrap();
            if t.status.state != TaskState::Working {
                break t;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "task {id} still working 20 s after the restart"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert_eq!(t.status.state, TaskState::Failed, "{t:?}");
        let why = t.status.message.as_ref().map(Message::joined_text);
        assert!(
            why.as_deref().is_some_and(|w| w.contains("lease lapsed")),
            "{why:?}"
        );
        // What it did before it died is kept.
        assert!(!t.artifacts.is_empty(), "the count's chunks: {t:?}");
        failed.push(t);
    }
    // ListTasks: all 110, the finished ones as they were, the running ones failed.
    let listed = list_all(&client).await;
    assert_eq!(listed.len(), 110);
    let listed: HashMap<String, Task> = listed.into_iter().map(|t| (t.id.clone(), t)).collect();
    for (id, was) in &before {
        assert_eq!(listed.get(id), Some(was), "ListTasks after the restart");
    }
    for t in &failed {
        assert_eq!(
            listed.get(&t.id).map(|t| t.status.state),
            Some(TaskState::Failed)
        );
    }
}

/// Reads `stream` to its end (at most 30 s): each event with its event id.
async fn read_all(stream: &mut rpcwire_a2a::EventStream) -> Vec<(String, StreamResponse)> {
    let mut out = Vec::new();
    let read = async {
        while let Some(e) = stream.next().await {
            out.push((stream.last_event_id().to_owned(), e.unwrap()));
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("the stream ends");
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_cut_mid_task_resumes_from_the_log_after_a_kill() {
    let file = TempFile(std::env::temp_dir().join(format!(
        "rpcwire-a2a-resume-{}-{}.sqlite",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    )));
    let store = format!("sqlite:{}", file.0.display());
    let (server, client) = agent(&store);
    let message = Message::text(Role::User, "count-resume", "count 1000");
    let mut stream = client.send_streaming(message).await.unwrap();
    let mut seen = Vec::new();
    for _ in 0..3 {
        let e = stream.next().await.unwrap().unwrap();
        seen.push((stream.last_event_id().to_owned(), e));
    }
    let StreamResponse::Task(task) = &seen[0].1 else {
        panic!("the task first, not {:?}", seen[0])
    };
    let task_id = task.id.clone();
    let last = stream.last_event_id().to_owned();
    drop(stream); // the client goes away; the count goes on and logs its steps
    tokio::time::sleep(Duration::from_millis(700)).await;
    drop(server); // SIGKILL

    let (_server, client) = agent(&store);
    let mut resumed = client.resubscribe(&task_id, &last).await.unwrap();
    let rest = read_all(&mut resumed).await;
    // Every event after the last one had, once, in order: ids 4, 5, ... with no gap, steps
    // the killed process logged after the cut among them, the lease's failure last.
    let ids: Vec<u64> = seen
        .iter()
        .chain(&rest)
        .map(|(id, _)| id.parse().unwrap())
        .collect();
    let expected: Vec<u64> = (1..=ids.len() as u64).collect();
    assert_eq!(ids, expected, "{rest:?}");
    assert!(rest.len() >= 3, "steps logged before the kill: {rest:?}");
    let Some((_, StreamResponse::StatusUpdate(end))) = rest.last() else {
        panic!("a status last: {rest:?}")
    };
    assert_eq!(end.status.state, TaskState::Failed);
    assert!(rest.iter().all(|(_, e)| match e {
        StreamResponse::StatusUpdate(s) => s.task_id == task_id,
        StreamResponse::ArtifactUpdate(a) => a.task_id == task_id,
        StreamResponse::Task(t) => t.id == task_id,
        StreamResponse::Message(_) => false,
    }));
    // The whole log, from the first event: what the two streams had, exactly.
    let mut whole = client.resubscribe(&task_id, "0").await.unwrap();
    let whole = read_all(&mut whole).await;
    let had: Vec<(String, StreamResponse)> = seen.into_iter().chain(rest).collect();
    assert_eq!(whole, had);
}
