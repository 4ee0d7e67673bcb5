//! rpcwire-acp's client drives an agent written with the official TypeScript ACP SDK
//! (`tests/interop/ts_agent.mjs`): initialize, a session, a prompt with streamed updates and a
//! permission request answered both ways, a file read served by the client, a cancel, and the
//! agent exiting mid-turn; and every other stable v1 method (modes, a config option, sessions
//! listed, resumed, closed, deleted, authenticate, logout, an elicitation, a terminal). The SDK comes from `.ci/install/acp-interop.sh`; without it the
//! tests print `SKIPPED:` (and fail under `CI=true`).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_acp::schema::{
    AuthenticateRequest, CloseSessionRequest, ContentBlock, CreateElicitationRequest,
    CreateElicitationResponse, DeleteSessionRequest, ElicitationAcceptAction,
    ElicitationContentValue, ListSessionsRequest, LogoutRequest, NewSessionRequest, PromptRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionResponse,
    ResumeSessionRequest, SelectedPermissionOutcome, SessionConfigOptionValue, SessionId,
    SessionUpdate, SetSessionConfigOptionRequest, SetSessionModeRequest, StopReason,
    ToolCallStatus,
};
use rpcwire_acp::{
    AcpClient, AcpError, ClientHandlers, ClientOptions, LocalTerminals, PromptTurn, TurnEvent,
};

/// The folder whose `node_modules/` has the SDK, or `None` after a visible skip.
fn node_sdk() -> Option<PathBuf> {
    let root = std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        });
    let node_dir = root.join("acp/node");
    let node = std::process::Command::new("node")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if node
        && node_dir
            .join("node_modules/@agentclientprotocol/sdk/package.json")
            .exists()
    {
        Some(node_dir)
    } else {
        rpcwire_tests::skip(
            "node or the TypeScript ACP SDK is not installed (.ci/install/acp-interop.sh)",
        );
        None
    }
}

fn agent_command(node_dir: &Path) -> tokio::process::Command {
    let mut cmd = tokio::process::Command::new("node");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ts_agent.mjs"))
        .arg(node_dir)
        .stderr(Stdio::null());
    cmd
}

/// The SDK agent, started and initialized.
async fn spawn(
    node_dir: &Path,
    options: ClientOptions,
    handlers: ClientHandlers,
) -> (AcpClient, tokio::process::Child) {
    AcpClient::spawn(&mut agent_command(node_dir), options, handlers)
        .await
        .expect("spawn and initialize")
}

fn text_of(update: &SessionUpdate) -> Option<String> {
    match update {
        SessionUpdate::AgentMessageChunk(chunk) => match &chunk.content {
            ContentBlock::Text(t) => Some(t.text.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Reads a turn to its end: its updates and its answer (or error).
async fn drain(turn: &mut PromptTurn) -> (Vec<SessionUpdate>, Result<StopReason, AcpError>) {
    let mut updates = Vec::new();
    while let Some(event) = turn.next().await {
        match event {
            Ok(TurnEvent::Update(u)) => updates.push(u),
            Ok(TurnEvent::Stopped(r)) => return (updates, Ok(r.stop_reason)),
            Err(e) => return (updates, Err(e)),
        }
    }
    panic!("the turn ended without an answer");
}

/// Runs one whole turn.
async fn turn_of(
    client: &AcpClient,
    session: &SessionId,
    text: &str,
) -> (Vec<SessionUpdate>, Result<StopReason, AcpError>) {
    let mut turn = client.prompt(prompt(session, text)).await.unwrap();
    drain(&mut turn).await
}

fn prompt(session: &SessionId, text: &str) -> PromptRequest {
    PromptRequest::new(session.clone(), vec![ContentBlock::from(text)])
}

#[derive(Default)]
struct Seen {
    asked: Vec<String>,
    reads: Vec<PathBuf>,
    late: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_client_drives_the_typescript_sdk_agent() {
    let Some(node_dir) = node_sdk() else { return };
    let seen = Arc::new(Mutex::new(Seen::default()));
    let allow = Arc::new(Mutex::new(true));
    let (s1, s2, s3, a) = (
        Arc::clone(&seen),
        Arc::clone(&seen),
        Arc::clone(&seen),
        Arc::clone(&allow),
    );
    let handlers = ClientHandlers::new()
        .on_permission(move |request| {
            s1.lock()
                .unwrap()
                .asked
                .push(request.tool_call.tool_call_id.to_string());
            let id = if *a.lock().unwrap() { "yes" } else { "no" };
            async move {
                RequestPermissionResponse::new(RequestPermissionOutcome::Selected(
                    SelectedPermissionOutcome::new(id),
                ))
            }
        })
        .on_read_text_file(move |request| {
            s2.lock().unwrap().reads.push(request.path.clone());
            async move { Ok(ReadTextFileResponse::new("a\nb\nc\n")) }
        })
        .on_update(move |_| s3.lock().unwrap().late += 1);

    let run = async {
        let (client, _child) = spawn(&node_dir, ClientOptions::default(), handlers).await;
        let init = client.initialize_response();
        assert_eq!(init.protocol_version.as_u16(), 1);
        assert_eq!(
            init.agent_info.as_ref().map(|i| i.name.as_str()),
            Some("ts-sdk-agent")
        );

        let session = client
            .new_session(NewSessionRequest::new("/virtual"))
            .await
            .expect("session/new")
            .session_id;
        assert_eq!(&*session.0, "sdk-session-1");

        // Streamed updates in order, a permission answered allow, a read served here.
        let (updates, stop) = turn_of(&client, &session, "read /virtual/three.txt").await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(updates.len(), 4, "{updates:?}");
        assert_eq!(
            text_of(&updates[0]).as_deref(),
            Some("reading /virtual/three.txt")
        );
        assert!(matches!(&updates[1], SessionUpdate::ToolCall(t) if &*t.tool_call_id.0 == "t1"));
        assert!(matches!(&updates[2], SessionUpdate::ToolCallUpdate(u)
            if u.fields.status == Some(ToolCallStatus::Completed)));
        assert_eq!(
            text_of(&updates[3]).as_deref(),
            Some("/virtual/three.txt has 3 lines")
        );
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.asked, ["t1"]);
            assert_eq!(seen.reads, [PathBuf::from("/virtual/three.txt")]);
        }

        // The same answered reject: nothing read.
        *allow.lock().unwrap() = false;
        let (updates, stop) = turn_of(&client, &session, "read /virtual/three.txt").await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(
            updates.last().and_then(text_of).as_deref(),
            Some("permission refused")
        );
        assert_eq!(seen.lock().unwrap().reads.len(), 1);
        assert_eq!(seen.lock().unwrap().asked.len(), 2);

        // A cancel during a long turn: it ends `cancelled`, and nothing comes after.
        let mut turn = client.prompt(prompt(&session, "long")).await.unwrap();
        let mut steps = 0;
        while steps < 2 {
            match turn.next().await.expect("an event").expect("no error") {
                TurnEvent::Update(SessionUpdate::ToolCallUpdate(_)) => steps += 1,
                TurnEvent::Update(_) => {}
                TurnEvent::Stopped(r) => panic!("stopped early: {r:?}"),
            }
        }
        turn.cancel().await.unwrap();
        let (_, stop) = drain(&mut turn).await;
        assert_eq!(stop.unwrap(), StopReason::Cancelled);
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(
            seen.lock().unwrap().late,
            0,
            "updates after the cancelled turn"
        );

        // The agent exits mid-turn: a clear error, no hang.
        let mut turn = client.prompt(prompt(&session, "exit")).await.unwrap();
        let (updates, stop) = drain(&mut turn).await;
        assert_eq!(
            updates.first().and_then(text_of).as_deref(),
            Some("exiting mid-turn")
        );
        let err = stop.expect_err("the agent exited");
        assert!(err.is_closed(), "{err:?}");
        assert!(turn.next().await.is_none());
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session took too long");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_over_the_limit_from_the_sdk_agent_is_skipped() {
    let Some(node_dir) = node_sdk() else { return };
    let options =
        ClientOptions::default().acp(rpcwire_acp::AcpOptions::new().max_message(64 << 10));
    let run = async {
        let (client, _child) = spawn(&node_dir, options, ClientHandlers::new()).await;
        let session = client
            .new_session(NewSessionRequest::new("/"))
            .await
            .unwrap()
            .session_id;
        // One update of 100 KB (over the 64 KiB limit) then a small one: the big one is
        // skipped (and logged), the turn goes on.
        let (updates, stop) = turn_of(&client, &session, "huge 100000").await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        let texts: Vec<_> = updates.iter().filter_map(text_of).collect();
        assert_eq!(texts, ["after the huge one"]);
        // Under the limit it arrives.
        let mut turn = client.prompt(prompt(&session, "huge 60000")).await.unwrap();
        let (updates, stop) = drain(&mut turn).await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(
            updates
                .iter()
                .filter_map(text_of)
                .map(|t| t.len())
                .collect::<Vec<_>>(),
            [60000, 18]
        );
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session took too long");
}

/// The rest of ACP's stable v1 surface, from rpcwire-acp's client to the SDK agent: modes, a
/// config option, sessions listed, resumed, closed and deleted, authenticate and logout, an
/// elicitation answered here, and a command run in this client's terminal (`LocalTerminals`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rust_client_drives_every_stable_method_of_the_typescript_sdk_agent() {
    let Some(node_dir) = node_sdk() else { return };
    let elicited = Arc::new(Mutex::new(Vec::new()));
    let e = Arc::clone(&elicited);
    let handlers = ClientHandlers::new()
        .on_elicitation(move |request: CreateElicitationRequest| {
            e.lock().unwrap().push(request.message.clone());
            let mut content = std::collections::BTreeMap::new();
            content.insert(
                "answer".to_owned(),
                ElicitationContentValue::String("from rust".into()),
            );
            async move {
                Ok(CreateElicitationResponse::new(
                    ElicitationAcceptAction::new().content(content),
                ))
            }
        })
        .terminals(LocalTerminals::new());
    let run = async {
        let (client, _child) = spawn(&node_dir, ClientOptions::default(), handlers).await;
        let caps = client.agent_capabilities();
        assert!(
            caps.session_capabilities.list.is_some() && caps.session_capabilities.delete.is_some()
        );
        let created = client
            .new_session(NewSessionRequest::new("/work"))
            .await
            .expect("session/new");
        let session = created.session_id;
        assert_eq!(
            created
                .modes
                .map(|m| m.current_mode_id.0.to_string())
                .as_deref(),
            Some("code")
        );
        let other = client
            .new_session(NewSessionRequest::new("/elsewhere"))
            .await
            .unwrap()
            .session_id;

        client
            .set_session_mode(SetSessionModeRequest::new(session.clone(), "ask"))
            .await
            .expect("session/set_mode");
        let answer = client
            .set_session_config_option(SetSessionConfigOptionRequest::new(
                session.clone(),
                "style",
                SessionConfigOptionValue::value_id("shout"),
            ))
            .await
            .expect("session/set_config_option");
        assert_eq!(answer.config_options.len(), 1);
        let (updates, _) = turn_of(&client, &session, "mode").await;
        assert_eq!(
            updates.last().and_then(text_of).as_deref(),
            Some("MODE ASK")
        );

        let (updates, stop) = turn_of(&client, &session, "ask which language?").await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(*elicited.lock().unwrap(), ["which language?"]);
        assert_eq!(
            updates.last().and_then(text_of).as_deref(),
            Some("answer: from rust")
        );

        let (updates, stop) = turn_of(&client, &session, "run echo from-local-terminals").await;
        assert_eq!(stop.unwrap(), StopReason::EndTurn);
        assert_eq!(
            updates.last().and_then(text_of).as_deref(),
            Some("exit 0: from-local-terminals")
        );

        let all = client
            .list_sessions(ListSessionsRequest::new())
            .await
            .expect("session/list");
        assert_eq!(all.sessions.len(), 2);
        let mut only = ListSessionsRequest::new();
        only.cwd = Some("/elsewhere".into());
        let only = client.list_sessions(only).await.unwrap();
        assert_eq!(only.sessions.len(), 1);
        assert_eq!(only.sessions[0].session_id, other);

        let resumed = client
            .resume_session(ResumeSessionRequest::new(session.clone(), "/work"))
            .await
            .expect("session/resume");
        assert_eq!(
            resumed
                .modes
                .map(|m| m.current_mode_id.0.to_string())
                .as_deref(),
            Some("ask")
        );
        client
            .close_session(CloseSessionRequest::new(session.clone()))
            .await
            .expect("session/close");
        client
            .delete_session(DeleteSessionRequest::new(session.clone()))
            .await
            .expect("session/delete");
        let gone = client
            .resume_session(ResumeSessionRequest::new(session.clone(), "/work"))
            .await
            .expect_err("deleted");
        assert_eq!(gone.rpc().map(|e| e.code), Some(-32002), "{gone:?}");
        client
            .authenticate(AuthenticateRequest::new("local"))
            .await
            .expect("authenticate");
        client.logout(LogoutRequest::new()).await.expect("logout");
    };
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the session took too long");
}
