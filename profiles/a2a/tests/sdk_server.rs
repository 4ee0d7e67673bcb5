//! The Rust A2A client against an agent written with the official Python SDK's own server
//! (`tests/py/sdk_agent.py`, a2a-sdk 1.3.0 on uvicorn): the card, a streaming send, a get,
//! a cancel, and the SDK's errors read back as their kinds. The SDK comes from
//! `.ci/install/a2a-interop.sh`; without it the test prints `SKIPPED:` (a failure under
//! `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::process::Command;
use std::time::Duration;

use rpcwire_a2a::{A2aClient, ErrorKind, Message, Role, StreamResponse, TaskState};
use rpcwire_tests::interop::{venv_python, Server};

#[tokio::test]
async fn rust_client_against_the_python_sdk_server() {
    let Some(python) = venv_python("a2a", "uvicorn") else {
        return;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/py/sdk_agent.py");
    let server = Server::start(
        Command::new(python).arg(script),
        "listening ",
        Duration::from_secs(30),
    );
    let client = A2aClient::discover(&server.address).await.expect("card");
    let card = client.card().expect("card read");
    assert_eq!(card.name, "sdk-agent");
    assert!(card.capabilities.streaming);
    assert_eq!(card.skills.len(), 2);

    // A streaming send: the task, status updates, artifact chunks, the final state.
    let mut stream = client
        .send_streaming(Message::text(Role::User, "m1", "long 3"))
        .await
        .expect("stream");
    let mut events = Vec::new();
    while let Some(event) = stream.next().await {
        events.push(event.expect("event"));
    }
    let StreamResponse::Task(task) = &events[0] else {
        panic!("first event {:?}", events[0])
    };
    let chunks: Vec<_> = events
        .iter()
        .filter_map(|e| match e {
            StreamResponse::ArtifactUpdate(a) => a.artifact.parts[0].text.clone(),
            _ => None,
        })
        .collect();
    assert_eq!(chunks, ["chunk 1", "chunk 2", "chunk 3"]);
    assert_eq!(
        events.last().and_then(StreamResponse::state),
        Some(TaskState::Completed)
    );
    assert!(!stream.last_event_id().is_empty() || events.len() > 3);

    // Get: the finished task, its artifact whole.
    let got = client.get_task(&task.id, Some(1)).await.expect("get");
    assert_eq!(got.status.state, TaskState::Completed);
    assert_eq!(got.artifacts[0].parts.len(), 3);
    assert!(got.history.len() <= 1);

    // Cancel a running task.
    let mut stream = client
        .send_streaming(Message::text(Role::User, "m2", "long 200"))
        .await
        .expect("stream");
    let Some(Ok(StreamResponse::Task(running))) = stream.next().await else {
        panic!("no task event")
    };
    let canceled = client.cancel_task(&running.id).await.expect("cancel");
    assert_eq!(canceled.status.state, TaskState::Canceled);

    // The SDK's errors, as kinds.
    let e = client.cancel_task(&task.id).await.expect_err("finished");
    assert_eq!(e.kind(), Some(ErrorKind::TaskNotCancelable), "{e}");
    let e = client
        .get_task("no-such-task", None)
        .await
        .expect_err("unknown");
    assert_eq!(e.kind(), Some(ErrorKind::TaskNotFound), "{e}");
}
