//! The A2A benchmark's reference agent (`bench/py/a2a_sdk_agent.py`: this agent's logic on
//! the official Python SDK's own server, a2a-sdk 1.3.0 on uvicorn) answers as `a2a-agent`
//! does, with each of the SDK's task stores: the same events of a streamed `count 2`, the same
//! echo, the same greeting after the same question, the same refusal; and with a database the
//! finished tasks are read back from it. Needs `.ci/install/a2a-interop.sh` (and
//! `.ci/install/postgres.sh` for the PostgreSQL store); without them it prints `SKIPPED:` (a
//! failure under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::process::Command;
use std::time::Duration;

use rpcwire_a2a::{A2aClient, Message, Role, SendMessageResponse, StreamResponse, Task};
use rpcwire_tests::interop::{venv_python, Server};
use rpcwire_tests::postgres::Postgres;

const AGENT: &str = env!("CARGO_BIN_EXE_a2a-agent");
const REFERENCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../bench/py/a2a_sdk_agent.py"
);

/// Starts `program` (with `args` before the common ones) on a free port with `store`.
fn start(program: &std::path::Path, args: &[&str], store: &str) -> (Server, A2aClient) {
    let server = Server::start(
        Command::new(program).args(args).args([
            "--http",
            "127.0.0.1:0",
            "--step-ms",
            "5",
            "--store",
            store,
        ]),
        "listening ",
        Duration::from_secs(30),
    );
    let client = A2aClient::new(&format!("{}/", server.address)).unwrap();
    (server, client)
}

/// What an event says, without the ids and times each server makes up.
fn describe(event: &StreamResponse) -> String {
    let said = |m: &Option<Message>| {
        m.as_ref().map(|m| {
            m.parts
                .iter()
                .filter_map(|p| p.text.clone())
                .collect::<Vec<_>>()
        })
    };
    match event {
        StreamResponse::Task(t) => format!(
            "task {:?}, history {:?}",
            t.status.state,
            t.history
                .iter()
                .map(|m| said(&Some(m.clone())))
                .collect::<Vec<_>>()
        ),
        StreamResponse::Message(m) => format!("message {:?}", said(&Some(m.clone()))),
        StreamResponse::StatusUpdate(s) => {
            format!("status {:?} {:?}", s.status.state, said(&s.status.message))
        }
        StreamResponse::ArtifactUpdate(a) => format!(
            "artifact {}/{} {:?} append {} last {}",
            a.artifact.artifact_id,
            a.artifact.name,
            a.artifact
                .parts
                .iter()
                .map(|p| p.text.clone())
                .collect::<Vec<_>>(),
            a.append,
            a.last_chunk
        ),
    }
}

/// A task as both servers must answer it: state, artifacts' texts, agent messages said.
fn outcome(task: &Task) -> String {
    format!(
        "{:?} {:?} {:?}",
        task.status.state,
        task.artifacts
            .iter()
            .map(|a| (
                a.artifact_id.clone(),
                a.parts.iter().map(|p| p.text.clone()).collect::<Vec<_>>()
            ))
            .collect::<Vec<_>>(),
        task.status.message.as_ref().map(|m| m
            .parts
            .iter()
            .map(|p| p.text.clone())
            .collect::<Vec<_>>())
    )
}

fn task(answer: SendMessageResponse) -> Task {
    match answer {
        SendMessageResponse::Task(t) => t,
        SendMessageResponse::Message(m) => panic!("a task, not {m:?}"),
    }
}

/// Everything the test compares, from one server: the streamed count's events, then the
/// answers to echo, greet, the name, and an unknown skill.
async fn conversation(client: &A2aClient, stored: bool) -> Vec<String> {
    let mut seen = Vec::new();
    let mut stream = client
        .send_streaming(Message::text(Role::User, "c1", "count 2"))
        .await
        .unwrap();
    let mut counted = None;
    while let Some(event) = stream.next().await {
        let event = event.unwrap();
        if let StreamResponse::Task(t) = &event {
            counted = Some(t.id.clone());
        }
        seen.push(describe(&event));
    }
    let echo = task(
        client
            .send_message(Message::text(Role::User, "e1", "echo  hello there "))
            .await
            .unwrap(),
    );
    seen.push(outcome(&echo));
    let asked = task(
        client
            .send_message(Message::text(Role::User, "g1", "greet"))
            .await
            .unwrap(),
    );
    seen.push(outcome(&asked));
    let mut name = Message::text(Role::User, "g2", "Ada");
    name.task_id = asked.id.clone();
    name.context_id = asked.context_id.clone();
    seen.push(outcome(&task(client.send_message(name).await.unwrap())));
    seen.push(outcome(&task(
        client
            .send_message(Message::text(Role::User, "u1", "dance"))
            .await
            .unwrap(),
    )));
    // Read back: the counted task whole (with a database store, from the database).
    let counted = client.get_task(&counted.unwrap(), None).await.unwrap();
    seen.push(outcome(&counted));
    if stored {
        assert_eq!(client.get_task(&echo.id, None).await.unwrap().id, echo.id);
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_python_reference_agent_answers_as_a2a_agent_with_each_store() {
    let Some(python) = venv_python(
        "a2a",
        "aiosqlite, asyncpg, a2a.server.tasks.database_task_store",
    ) else {
        return;
    };
    let (_rust, rust_client) = start(AGENT.as_ref(), &[], "memory");
    let expected = conversation(&rust_client, false).await;
    assert_eq!(
        expected[..3],
        [
            "task Submitted, history [Some([\"count 2\"])]",
            "status Working Some([\"counting to 2\"])",
            "status Working Some([\"step 1/2\"])",
        ]
    );

    let dir = std::env::temp_dir().join(format!("rpcwire-a2a-reference-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let sqlite = format!("sqlite:{}", dir.join("tasks.sqlite").display());
    let pg = tokio::task::spawn_blocking(Postgres::start).await.unwrap();
    let mut stores = vec![("memory".to_owned(), false), (sqlite, true)];
    if let Some(pg) = &pg {
        stores.push((format!("postgres:{}", pg.url()), true));
    }
    for (store, stored) in stores {
        let (_server, client) = start(&python, &[REFERENCE], &store);
        let got = conversation(&client, stored).await;
        assert_eq!(got, expected, "store {store}");
    }
    // The SQLite store wrote its file (the tasks read back above came from it).
    let file = std::fs::metadata(dir.join("tasks.sqlite")).unwrap();
    assert!(file.len() > 0);
    let _ = std::fs::remove_dir_all(&dir);
}
