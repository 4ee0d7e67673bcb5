//! The server's behaviour at its limits and in the cases the SDK tests do not reach, with
//! the crate's own client: direct replies, eviction, a full store, history and artifact
//! limits, turns that end without a final state, cancelling a task that waits for input,
//! resumption with `Last-Event-ID` from the task's event log, and that log's bound.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use rpcwire_a2a::serde_json::json;
use rpcwire_a2a::{
    A2aClient, A2aError, A2aServer, A2aService, ErrorKind, ListTasksRequest, Message, Part, Role,
    SendMessageResponse, StoreLimits, StreamResponse, TaskContext, TaskLimits, TaskState,
    TurnResult,
};

mod common;

/// An agent: `reply` answers with a message, `ask` asks for input, `quit` ends its turn with
/// no state, `slow N` counts N steps of 30 ms, `refuse` answers -32005 before publishing,
/// `late` works then returns an error, `echo` completes with what its request said beside
/// the message (an extension header, metadata, output modes), anything else completes at
/// once.
async fn turn(ctx: TaskContext) -> TurnResult {
    let text = ctx.text();
    if ctx.is_continuation() {
        if text == "refuse" {
            return Err(A2aError::new(ErrorKind::InvalidParams));
        }
        ctx.input_required("again?");
        return Ok(());
    }
    let mut words = text.split_whitespace();
    match words.next() {
        Some("refuse") => {
            return Err(A2aError::with_message(
                ErrorKind::ContentTypeNotSupported,
                "not that",
            ));
        }
        Some("late") => {
            ctx.working(None);
            return Err(A2aError::with_message(ErrorKind::Internal, "broke mid-way"));
        }
        Some("echo") => {
            let said = format!(
                "{:?} {:?} {:?} {:?}",
                ctx.header("x-test"),
                ctx.extensions().collect::<Vec<_>>(),
                ctx.metadata().map(|m| m.len()),
                ctx.accepted_output_modes(),
            );
            ctx.parts_artifact("said", vec![Part::text(said), Part::data(json!({"n": 1}))]);
            ctx.complete(None);
        }
        Some("reply") => {
            ctx.reply("a direct answer");
        }
        Some("ask") => {
            ctx.input_required("what?");
        }
        Some("quit") => {}
        Some("two") => {
            assert!(ctx.text_artifact("a", "1"));
            assert!(
                !ctx.text_artifact("b", "2"),
                "the second artifact is over the limit"
            );
            ctx.complete(None);
        }
        Some("slow") => {
            let n: u32 = words.next().and_then(|w| w.parse().ok()).unwrap_or(3);
            for i in 1..=n {
                tokio::time::sleep(Duration::from_millis(30)).await;
                ctx.working(Some(&format!("step {i}")));
            }
            ctx.complete(None);
        }
        _ => {
            ctx.complete(None);
        }
    }
    Ok(())
}

async fn start(configure: impl FnOnce(A2aServer) -> A2aServer) -> (A2aClient, A2aService) {
    let (_, url, service) = common::serve("test", turn, configure).await;
    (A2aClient::new(&url).unwrap(), service)
}

fn msg(text: &str) -> Message {
    Message::text(Role::User, format!("m-{text}"), text)
}

fn task_of(r: SendMessageResponse) -> rpcwire_a2a::Task {
    match r {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a message: {m:?}"),
    }
}

#[tokio::test]
async fn a_direct_reply_leaves_no_task() {
    let (client, _) = start(|s| s).await;
    let SendMessageResponse::Message(m) = client.send_message(msg("reply")).await.unwrap() else {
        panic!("not a message")
    };
    assert_eq!(m.joined_text(), "a direct answer");
    assert_eq!(m.role, Role::Agent);
    let page = client
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    assert_eq!(page.total_size, 0, "{page:?}");
}

#[tokio::test]
async fn finished_tasks_are_evicted_past_the_configured_count() {
    let limits = StoreLimits {
        max_tasks: 100,
        max_finished: 2,
        finished_ttl: Duration::from_secs(600),
    };
    let (client, _) = start(|s| s.store_limits(limits)).await;
    let mut ids = Vec::new();
    for i in 0..4 {
        ids.push(
            task_of(
                client
                    .send_message(msg(&format!("done {i}")))
                    .await
                    .unwrap(),
            )
            .id,
        );
    }
    let e = client.get_task(&ids[0], None).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::TaskNotFound));
    assert!(client.get_task(&ids[3], None).await.is_ok());
    let page = client
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    assert_eq!(page.total_size, 2);
}

#[tokio::test]
async fn a_full_store_refuses_new_tasks() {
    let limits = StoreLimits {
        max_tasks: 1,
        max_finished: 10,
        finished_ttl: Duration::from_secs(600),
    };
    let (client, _) = start(|s| s.store_limits(limits)).await;
    let mut stream = client.send_streaming(msg("slow 20")).await.unwrap();
    let Some(Ok(StreamResponse::Task(running))) = stream.next().await else {
        panic!("no task")
    };
    let e = client.send_message(msg("another")).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::Internal), "{e}");
    client.cancel_task(&running.id).await.unwrap();
    // The finished task makes room.
    let t = task_of(client.send_message(msg("another")).await.unwrap());
    assert_eq!(t.status.state, TaskState::Completed);
}

#[tokio::test]
async fn history_and_artifacts_are_bounded() {
    let limits = TaskLimits {
        max_history: 3,
        max_artifacts: 1,
        ..TaskLimits::default()
    };
    let (client, _) = start(|s| s.task_limits(limits)).await;
    let t = task_of(client.send_message(msg("two")).await.unwrap());
    assert_eq!(t.status.state, TaskState::Completed, "{t:?}");
    assert_eq!(t.artifacts.len(), 1);
    // Turns of input: each adds the client's message and the agent's question.
    let t = task_of(client.send_message(msg("ask")).await.unwrap());
    for i in 0..4 {
        let mut m = msg(&format!("answer {i}"));
        m.task_id.clone_from(&t.id);
        let next = task_of(client.send_message(m).await.unwrap());
        assert_eq!(next.status.state, TaskState::InputRequired);
        assert!(next.history.len() <= 3, "{:?}", next.history);
    }
}

#[tokio::test]
async fn a_turn_that_ends_without_a_state_fails_the_task() {
    let (client, _) = start(|s| s).await;
    let t = task_of(client.send_message(msg("quit")).await.unwrap());
    assert_eq!(t.status.state, TaskState::Failed);
}

#[tokio::test]
async fn a_task_waiting_for_input_is_cancelled_and_takes_no_more_messages() {
    let (client, service) = start(|s| s).await;
    let t = task_of(client.send_message(msg("ask")).await.unwrap());
    assert_eq!(t.status.state, TaskState::InputRequired);
    assert_eq!(service.running_tasks(), 0, "no turn runs while it waits");
    let c = client.cancel_task(&t.id).await.unwrap();
    assert_eq!(c.status.state, TaskState::Canceled);
    let mut m = msg("late");
    m.task_id = t.id;
    let e = client.send_message(m).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::UnsupportedOperation));
}

/// Reads `stream` to its end: each event with the event id it came with.
async fn read_all(stream: &mut rpcwire_a2a::EventStream) -> Vec<(String, StreamResponse)> {
    let mut out = Vec::new();
    while let Some(e) = stream.next().await {
        out.push((stream.last_event_id().to_owned(), e.unwrap()));
    }
    out
}

#[tokio::test]
async fn a_lost_stream_resumes_after_its_last_event_from_the_log() {
    let (client, _service) = start(|s| s).await;
    let mut stream = client.send_streaming(msg("slow 6")).await.unwrap();
    let mut first = Vec::new();
    for _ in 0..3 {
        let e = stream.next().await.unwrap().unwrap();
        first.push((stream.last_event_id().to_owned(), e));
    }
    let last = stream.last_event_id().to_owned();
    let StreamResponse::Task(task) = &first[0].1 else {
        panic!("no task")
    };
    drop(stream); // the connection goes away mid-task
    let mut resumed = client.resubscribe(&task.id, &last).await.unwrap();
    let rest = read_all(&mut resumed).await;
    // The task's log ids, one per event: 1, 2, 3 before the cut, 4.. after, none twice.
    let ids: Vec<String> = first
        .iter()
        .chain(&rest)
        .map(|(id, _)| id.clone())
        .collect();
    let expected: Vec<String> = (1..=ids.len()).map(|i| i.to_string()).collect();
    assert_eq!(ids, expected);
    // task, step 1..6, completed: none lost, none repeated, in order.
    let steps: Vec<String> = first
        .iter()
        .chain(&rest)
        .filter_map(|(_, e)| match e {
            StreamResponse::StatusUpdate(s) => s.status.message.as_ref().map(Message::joined_text),
            _ => None,
        })
        .collect();
    assert_eq!(
        steps,
        ["step 1", "step 2", "step 3", "step 4", "step 5", "step 6"]
    );
    assert_eq!(
        rest.last().and_then(|(_, e)| e.state()),
        Some(TaskState::Completed)
    );
    // The log is read, not consumed: a second resumption from the same id gets the same.
    let mut again = client.resubscribe(&task.id, &last).await.unwrap();
    assert_eq!(read_all(&mut again).await, rest);
    // A task no stream followed has no log (no one holds an id of it): its resumption is
    // refused as a subscription to a finished task is.
    let unstreamed = task_of(client.send_message(msg("done")).await.unwrap());
    assert!(client.resubscribe(&unstreamed.id, "1").await.is_err());
    // Ids are per task: another task's stream resumed with this id gets its own events.
    let mut streamed = client.send_streaming(msg("done")).await.unwrap();
    let streamed = read_all(&mut streamed).await;
    let Some((_, StreamResponse::Task(other))) = streamed.first() else {
        panic!("no task")
    };
    let mut theirs = client.resubscribe(&other.id, "1").await.unwrap();
    let theirs = read_all(&mut theirs).await;
    assert!(!theirs.is_empty());
    assert!(theirs.iter().all(|(_, e)| match e {
        StreamResponse::StatusUpdate(s) => s.task_id == other.id,
        StreamResponse::ArtifactUpdate(a) => a.task_id == other.id,
        StreamResponse::Task(t) => t.id == other.id,
        StreamResponse::Message(_) => false,
    }));
}

#[tokio::test]
async fn a_resumption_after_events_the_log_no_longer_keeps_starts_from_the_task() {
    let limits = rpcwire_a2a::EventLogLimits {
        max_tasks: 16,
        max_events: 2,
    };
    let (client, _service) = start(|s| s.event_log_limits(limits)).await;
    let mut stream = client.send_streaming(msg("slow 4")).await.unwrap();
    let Some(Ok(StreamResponse::Task(t))) = stream.next().await else {
        panic!("no task")
    };
    assert_eq!(stream.last_event_id(), "1");
    drop(stream);
    // The task goes on and completes although its client went away.
    for _ in 0..100 {
        if client.get_task(&t.id, None).await.unwrap().status.state == TaskState::Completed {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // 6 events logged, 2 kept (5 and 6): after 4, both; after 1, the task as it is.
    let mut resumed = client.resubscribe(&t.id, "4").await.unwrap();
    let ids: Vec<String> = read_all(&mut resumed)
        .await
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    assert_eq!(ids, ["5", "6"]);
    let mut resumed = client.resubscribe(&t.id, "1").await.unwrap();
    let got = read_all(&mut resumed).await;
    assert_eq!(got.len(), 1, "{got:?}");
    let StreamResponse::Task(now) = &got[0].1 else {
        panic!("not the task: {got:?}")
    };
    assert_eq!(now.status.state, TaskState::Completed);
}

#[tokio::test]
async fn a_subscription_to_a_task_waiting_for_input_lasts_until_a_terminal_state() {
    let (client, _service) = start(|s| s).await;
    let SendMessageResponse::Task(task) = client
        .send_message(Message::text(Role::User, "m1", "ask"))
        .await
        .unwrap()
    else {
        panic!("a task")
    };
    assert_eq!(task.status.state, TaskState::InputRequired);
    let mut stream = client.subscribe(&task.id).await.unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(first.state(), Some(TaskState::InputRequired));
    // The next turn asks again: an interrupted state, which does not end a subscription.
    let mut answer = Message::text(Role::User, "m2", "here");
    answer.task_id.clone_from(&task.id);
    client.send_message(answer).await.unwrap();
    let mut states = Vec::new();
    while states.last() != Some(&TaskState::InputRequired) {
        let event = tokio::time::timeout(Duration::from_secs(5), stream.next())
            .await
            .expect("the next turn's events reach the subscriber")
            .unwrap()
            .unwrap();
        states.extend(event.state());
    }
    // Cancelled while it waits: the subscriber sees it, and the stream ends there.
    client.cancel_task(&task.id).await.unwrap();
    let mut last = None;
    while let Some(event) = tokio::time::timeout(Duration::from_secs(5), stream.next())
        .await
        .expect("the stream ends")
    {
        last = event.unwrap().state().or(last);
    }
    assert_eq!(last, Some(TaskState::Canceled));
}

#[tokio::test]
async fn a_turn_answers_with_an_error_or_fails_its_task_with_it() {
    let (client, service) = start(|s| s).await;
    // Before publishing: the request gets the error, and no task is kept.
    let e = client.send_message(msg("refuse")).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::ContentTypeNotSupported));
    let e = client.send_streaming(msg("refuse")).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::ContentTypeNotSupported));
    let all = client
        .list_tasks(&ListTasksRequest::default())
        .await
        .unwrap();
    assert_eq!(all.total_size, 0, "{all:?}");
    // After publishing: the task fails with the error's message.
    let t = task_of(client.send_message(msg("late")).await.unwrap());
    assert_eq!(t.status.state, TaskState::Failed);
    let said = t.status.message.as_ref().map(Message::joined_text);
    assert_eq!(said.as_deref(), Some("broke mid-way"));
    // A continuation refused: the error, and the task still waits for input.
    let t = task_of(client.send_message(msg("ask")).await.unwrap());
    let mut again = msg("refuse");
    again.message_id = "m-again".into();
    again.task_id.clone_from(&t.id);
    let e = client.send_message(again).await.unwrap_err();
    assert_eq!(e.kind(), Some(ErrorKind::InvalidParams));
    let now = client.get_task(&t.id, None).await.unwrap();
    assert_eq!(now.status.state, TaskState::InputRequired);
    assert_eq!(service.running_tasks(), 0);
}

#[tokio::test]
async fn a_turn_sees_what_its_request_said() {
    let (_, url, _service) = common::serve("test", turn, |s| s).await;
    let addr = url.trim_start_matches("http://").trim_end_matches('/');
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {
        "message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "echo"}],
            "extensions": ["urn:b"]},
        "metadata": {"k": 1, "j": 2},
        "configuration": {"accepted_output_modes": ["text/plain"]}}});
    let headers: Vec<(String, String)> = [
        ("A2A-Version", "1.0"),
        ("X-Test", "yes"),
        ("A2A-Extensions", "urn:a"),
        ("Authorization", "Bearer hidden"),
    ]
    .iter()
    .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
    .collect();
    let request = rpcwire_tests::raw_http::json_post("/", &headers, &body.to_string());
    let answers = rpcwire_tests::raw_http::exchange(addr.parse().unwrap(), &[request]).await;
    let v: serde_json::Value = serde_json::from_str(&answers[0].1).unwrap();
    let parts = &v["result"]["task"]["artifacts"][0]["parts"];
    assert_eq!(
        parts[0]["text"], r#"Some("yes") ["urn:a", "urn:b"] Some(2) ["text/plain"]"#,
        "{v}"
    );
    assert_eq!(parts[1]["data"], json!({"n": 1}));
}
