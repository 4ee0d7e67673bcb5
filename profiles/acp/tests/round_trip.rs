//! rpcwire-acp's agent and client on one in-memory pipe: calls into the client from inside a
//! turn as plain awaits, `session/cancel` (and a turn that ignores it), `$/cancel_request`
//! when a turn is abandoned, `session/load` replay, one turn at a time per session.
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_acp::schema::{
    ContentBlock, ContentChunk, InitializeRequest, InitializeResponse, LoadSessionRequest,
    LoadSessionResponse, NewSessionRequest, NewSessionResponse, PermissionOption,
    PermissionOptionKind, PromptRequest, ReadTextFileResponse, RequestPermissionOutcome,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionNotification, SessionUpdate,
    StopReason, ToolCallUpdate, ToolCallUpdateFields, WriteTextFileResponse,
};
use rpcwire_acp::{
    AcpClient, AcpError, AcpOptions, Agent, AgentServer, ClientHandlers, ClientOptions, RpcError,
    SessionHandle, TurnEvent,
};

#[derive(Default)]
struct Tester {
    /// Steps of the `long` turn done so far.
    steps: AtomicU32,
    /// Whether the `long` turn saw its cancellation.
    saw_cancel: AtomicBool,
}

/// The agent under test, sharing its record with the test.
struct Shared(Arc<Tester>);

impl Agent for Shared {
    async fn initialize(&self, r: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        Ok(InitializeResponse::new(r.protocol_version))
    }
    async fn new_session(&self, _: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
        Ok(NewSessionResponse::new("s"))
    }
    async fn load_session(
        &self,
        s: SessionHandle,
        _: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let chunk = ContentChunk::new(ContentBlock::from("earlier prompt"));
        s.update(SessionUpdate::UserMessageChunk(chunk)).await?;
        Ok(LoadSessionResponse::new())
    }
    async fn prompt(&self, s: SessionHandle, r: PromptRequest) -> Result<StopReason, RpcError> {
        let text = match r.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        match text.as_str() {
            "files" => {
                let options = vec![
                    PermissionOption::new("ok", "Allow", PermissionOptionKind::AllowOnce),
                    PermissionOption::new("no", "Reject", PermissionOptionKind::RejectOnce),
                ];
                let ask = ToolCallUpdate::new("c1", ToolCallUpdateFields::new().title("edit"));
                let outcome = s.request_permission(ask, options).await?;
                let RequestPermissionOutcome::Selected(chosen) = outcome else {
                    return Ok(StopReason::Cancelled);
                };
                let content = s.read_text_file("/in.txt").await?;
                s.write_text_file("/out.txt", content.to_uppercase())
                    .await?;
                s.message(format!("chose {}", chosen.option_id)).await?;
                // Terminals were not offered: a clear error, not a call.
                let refused = s.create_terminal("ls", vec![]).await;
                assert!(matches!(refused, Err(AcpError::NotOffered("terminal"))));
                Ok(StopReason::EndTurn)
            }
            "long" => {
                for _ in 0..500 {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(10)) => {}
                        () = s.cancelled() => {
                            self.0.saw_cancel.store(true, Ordering::SeqCst);
                            return Ok(StopReason::Cancelled);
                        }
                    }
                    self.0.steps.fetch_add(1, Ordering::SeqCst);
                    s.message("step").await?;
                }
                Ok(StopReason::EndTurn)
            }
            "stubborn" => {
                // Ignores cancellation entirely.
                tokio::time::sleep(Duration::from_secs(30)).await;
                Ok(StopReason::EndTurn)
            }
            _ => Ok(StopReason::Refusal),
        }
    }
}

struct Pair {
    client: AcpClient,
    tester: Arc<Tester>,
    files: Arc<Mutex<Vec<(String, String)>>>,
    replayed: Arc<Mutex<Vec<SessionNotification>>>,
}

async fn pair(options: AcpOptions) -> Pair {
    let tester = Arc::new(Tester::default());
    let (agent_io, client_io) = tokio::io::duplex(1 << 16);
    let _agent = AgentServer::new(Shared(Arc::clone(&tester)))
        .options(options.clone())
        .builder()
        .run_io(agent_io);
    let files = Arc::new(Mutex::new(Vec::new()));
    let replayed = Arc::new(Mutex::new(Vec::new()));
    let (f, r) = (Arc::clone(&files), Arc::clone(&replayed));
    let handlers = ClientHandlers::new()
        .on_permission(|_| async {
            RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                SelectedPermissionOutcome::new("ok"),
            ))
        })
        .on_read_text_file(|_| async { Ok(ReadTextFileResponse::new("hello")) })
        .on_write_text_file(move |w| {
            f.lock()
                .unwrap()
                .push((w.path.display().to_string(), w.content));
            async { Ok(WriteTextFileResponse::new()) }
        })
        .on_update(move |n| r.lock().unwrap().push(n));
    let client = AcpClient::connect(ClientOptions::default().acp(options), handlers, |b| {
        b.run_io(client_io)
    })
    .await
    .expect("initialize");
    Pair {
        client,
        tester,
        files,
        replayed,
    }
}

fn prompt(text: &str) -> PromptRequest {
    PromptRequest::new("s", vec![ContentBlock::from(text)])
}

#[tokio::test]
async fn calls_into_the_client_are_plain_awaits() {
    let p = pair(AcpOptions::new()).await;
    let caps = p.client.initialize_response();
    assert_eq!(caps.protocol_version.as_u16(), 1);
    let mut updates = Vec::new();
    let answer = p
        .client
        .prompt(prompt("files"))
        .await
        .unwrap()
        .finish(|u| updates.push(u))
        .await
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::EndTurn);
    assert_eq!(
        *p.files.lock().unwrap(),
        [("/out.txt".to_owned(), "HELLO".to_owned())]
    );
    assert!(
        matches!(&updates[..], [SessionUpdate::AgentMessageChunk(c)] if matches!(&c.content, ContentBlock::Text(t) if t.text == "chose ok"))
    );
}

#[tokio::test]
async fn session_cancel_ends_the_turn_cancelled_and_stops_the_work() {
    let p = pair(AcpOptions::new()).await;
    let mut turn = p.client.prompt(prompt("long")).await.unwrap();
    let first = turn.next().await.unwrap().unwrap();
    assert!(matches!(first, TurnEvent::Update(_)));
    // A second turn in the same session while one runs: the client refuses it itself...
    let second = p.client.prompt(prompt("long")).await;
    assert!(
        matches!(second, Err(AcpError::TurnRunning(_))),
        "{second:?}"
    );
    // ...and so does the agent, asked directly.
    let raw = p
        .client
        .client()
        .call::<_, serde_json::Value>("session/prompt", prompt("long"))
        .await;
    assert_eq!(raw.unwrap_err().rpc().map(|e| e.code), Some(-32600));
    turn.cancel().await.unwrap();
    let answer = turn.finish(|_| {}).await.unwrap();
    assert_eq!(answer.stop_reason, StopReason::Cancelled);
    assert!(p.tester.saw_cancel.load(Ordering::SeqCst));
    let steps = p.tester.steps.load(Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        p.tester.steps.load(Ordering::SeqCst),
        steps,
        "the work went on"
    );
}

#[tokio::test]
async fn a_turn_that_ignores_its_cancellation_is_answered_after_the_grace() {
    let p = pair(AcpOptions::new().cancel_grace(Duration::from_millis(200))).await;
    let turn = p.client.prompt(prompt("stubborn")).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    turn.cancel().await.unwrap();
    let answer = tokio::time::timeout(Duration::from_secs(5), turn.finish(|_| {}))
        .await
        .expect("answered after the grace")
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::Cancelled);
}

#[tokio::test]
async fn an_abandoned_turn_is_cancelled_by_cancel_request() {
    let p = pair(AcpOptions::new()).await;
    let mut turn = p.client.prompt(prompt("long")).await.unwrap();
    assert!(matches!(turn.next().await, Some(Ok(TurnEvent::Update(_)))));
    // Dropping the turn drops its call: `$/cancel_request` goes out, the agent's turn sees it.
    drop(turn);
    tokio::time::timeout(Duration::from_secs(5), async {
        while !p.tester.saw_cancel.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the agent saw $/cancel_request");
    // The session is free again for a new turn.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let answer = p
        .client
        .prompt(prompt("other"))
        .await
        .unwrap()
        .finish(|_| {})
        .await
        .unwrap();
    assert_eq!(answer.stop_reason, StopReason::Refusal);
}

#[tokio::test]
async fn load_session_replays_through_the_update_handler() {
    let p = pair(AcpOptions::new()).await;
    p.client
        .load_session(LoadSessionRequest::new("s", "/"))
        .await
        .unwrap();
    let replayed = p.replayed.lock().unwrap();
    assert_eq!(replayed.len(), 1);
    assert!(matches!(
        replayed[0].update,
        SessionUpdate::UserMessageChunk(_)
    ));
}
