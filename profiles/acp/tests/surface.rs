//! The rest of ACP's stable v1 surface between rpcwire-acp's own agent and client: the
//! `Agent` trait's default answers, `session/close` ending a running turn, extension methods
//! both ways, an elicitation round trip, a command in the client's `LocalTerminals`, and MCP
//! servers from `session/new` that cannot be used (left out, the session still made).
#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_acp::mcp::{McpServerError, McpServers};
use rpcwire_acp::schema::{
    CloseSessionRequest, ContentBlock, CreateElicitationRequest, CreateElicitationResponse,
    DeleteSessionRequest, ElicitationAcceptAction, ElicitationAction, ElicitationContentValue,
    ElicitationFormMode, ElicitationSchema, ElicitationSessionScope, InitializeRequest,
    InitializeResponse, ListSessionsRequest, LogoutRequest, McpServer, McpServerSse,
    McpServerStdio, NewSessionRequest, NewSessionResponse, PromptRequest, ResumeSessionRequest,
    SessionConfigOptionValue, SessionId, SetSessionConfigOptionRequest, SetSessionModeRequest,
    StopReason,
};
use rpcwire_acp::{
    AcpClient, AcpError, Agent, AgentServer, ClientHandlers, ClientOptions, LocalTerminals,
    RpcError, SessionHandle, TurnEvent,
};
use serde_json::{json, Value};

/// Implements only what is required, and two extensions.
struct Minimal {
    /// The MCP tools each new session had.
    mcp_tools: Arc<Mutex<Vec<usize>>>,
}

impl Agent for Minimal {
    async fn initialize(&self, r: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        Ok(InitializeResponse::new(r.protocol_version))
    }
    async fn new_session(&self, _: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
        Ok(NewSessionResponse::new("s"))
    }
    async fn ext_method(&self, method: String, params: Value) -> Result<Value, RpcError> {
        Ok(json!({"method": method, "params": params}))
    }
    async fn prompt(&self, s: SessionHandle, r: PromptRequest) -> Result<StopReason, RpcError> {
        self.mcp_tools.lock().unwrap().push(s.mcp().tools().count());
        let text = match r.prompt.first() {
            Some(ContentBlock::Text(t)) => t.text.clone(),
            _ => String::new(),
        };
        match text.as_str() {
            "ask" => {
                let scope = ElicitationSessionScope::new(s.session_id().clone());
                let form =
                    ElicitationFormMode::new(scope, ElicitationSchema::new().string("name", true));
                let answer = s
                    .elicit(CreateElicitationRequest::new(form, "your name?"))
                    .await?;
                let name = match answer.action {
                    ElicitationAction::Accept(a) => {
                        match a.content.and_then(|c| c.get("name").cloned()) {
                            Some(ElicitationContentValue::String(n)) => n,
                            other => format!("{other:?}"),
                        }
                    }
                    other => format!("{other:?}"),
                };
                s.message(format!("hello {name}")).await?;
            }
            "run" => {
                let terminal = s
                    .create_terminal("echo", vec!["from a terminal".into()])
                    .await?;
                let exit = terminal.wait_for_exit().await?;
                let output = terminal.output().await?;
                terminal.release().await?;
                s.message(format!("{:?} {}", exit.exit_code, output.output.trim()))
                    .await?;
            }
            "ext" => {
                let back: Value = s
                    .peer()
                    .call("_editor/ping", json!({"n": 1}))
                    .await
                    .map_err(AcpError::from)?;
                s.message(format!("{} {}", back["pong"], back["n"])).await?;
            }
            "wait" => s.cancelled().await,
            _ => {}
        }
        Ok(if s.is_cancelled() {
            StopReason::Cancelled
        } else {
            StopReason::EndTurn
        })
    }
}

async fn connect(handlers: ClientHandlers) -> (AcpClient, Arc<Mutex<Vec<usize>>>) {
    let mcp_tools = Arc::new(Mutex::new(Vec::new()));
    let (agent_io, client_io) = tokio::io::duplex(1 << 16);
    let agent = Minimal {
        mcp_tools: Arc::clone(&mcp_tools),
    };
    let _agent = AgentServer::new(agent).builder().run_io(agent_io);
    let client = AcpClient::connect(ClientOptions::default(), handlers, |b| b.run_io(client_io))
        .await
        .expect("initialize");
    (client, mcp_tools)
}

async fn new_session(client: &AcpClient) -> SessionId {
    client
        .new_session(NewSessionRequest::new("/"))
        .await
        .unwrap()
        .session_id
}

/// The turn's message texts and its stop reason.
async fn turn(client: &AcpClient, session: &SessionId, text: &str) -> (Vec<String>, StopReason) {
    let prompt = PromptRequest::new(session.clone(), vec![ContentBlock::from(text)]);
    let mut turn = client.prompt(prompt).await.unwrap();
    let mut texts = Vec::new();
    while let Some(event) = turn.next().await {
        match event.unwrap() {
            TurnEvent::Update(rpcwire_acp::schema::SessionUpdate::AgentMessageChunk(c)) => {
                if let ContentBlock::Text(t) = c.content {
                    texts.push(t.text);
                }
            }
            TurnEvent::Update(_) => {}
            TurnEvent::Stopped(r) => return (texts, r.stop_reason),
        }
    }
    panic!("no end")
}

fn not_found(e: AcpError) -> bool {
    e.rpc().is_some_and(|r| r.code == -32601)
}

#[tokio::test]
async fn methods_an_agent_does_not_implement_are_method_not_found() {
    let (client, _) = connect(ClientHandlers::new()).await;
    let s = SessionId::new("s");
    assert!(not_found(
        client
            .set_session_mode(SetSessionModeRequest::new(s.clone(), "m"))
            .await
            .unwrap_err()
    ));
    let option =
        SetSessionConfigOptionRequest::new(s.clone(), "o", SessionConfigOptionValue::boolean(true));
    assert!(not_found(
        client.set_session_config_option(option).await.unwrap_err()
    ));
    assert!(not_found(
        client
            .list_sessions(ListSessionsRequest::new())
            .await
            .unwrap_err()
    ));
    assert!(not_found(
        client
            .resume_session(ResumeSessionRequest::new(s.clone(), "/"))
            .await
            .unwrap_err()
    ));
    assert!(not_found(
        client
            .close_session(CloseSessionRequest::new(s.clone()))
            .await
            .unwrap_err()
    ));
    assert!(not_found(
        client
            .delete_session(DeleteSessionRequest::new(s.clone()))
            .await
            .unwrap_err()
    ));
    assert!(not_found(
        client.logout(LogoutRequest::new()).await.unwrap_err()
    ));
    // Extension methods reach the agent; other unknown names do not.
    let back = client.ext_method("_agent/echo", json!([1])).await.unwrap();
    assert_eq!(back, json!({"method": "_agent/echo", "params": [1]}));
    assert!(not_found(
        client
            .ext_method("agent/echo", json!([1]))
            .await
            .unwrap_err()
    ));
    client
        .ext_notification("_agent/note", json!({}))
        .await
        .unwrap();
}

#[tokio::test]
async fn closing_a_session_ends_its_running_turn() {
    let (client, _) = connect(ClientHandlers::new()).await;
    let s = new_session(&client).await;
    let prompt = PromptRequest::new(s.clone(), vec![ContentBlock::from("wait")]);
    let mut running = client.prompt(prompt).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    // The agent does not implement session/close: its answer is Method not found, but the
    // server has ended the turn first.
    let closed = client.close_session(CloseSessionRequest::new(s)).await;
    assert!(closed.is_err());
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match running.next().await {
                Some(Ok(TurnEvent::Stopped(r))) => return r.stop_reason,
                Some(Ok(_)) => {}
                other => panic!("{other:?}"),
            }
        }
    })
    .await
    .expect("the turn ended");
    assert_eq!(end, StopReason::Cancelled);
}

#[tokio::test]
async fn elicitation_terminals_and_extensions_reach_the_client() {
    let asked = Arc::new(Mutex::new(Vec::new()));
    let a = Arc::clone(&asked);
    let handlers = ClientHandlers::new()
        .on_elicitation(move |r: CreateElicitationRequest| {
            a.lock().unwrap().push(r.message.clone());
            let content = BTreeMap::from([(
                "name".to_owned(),
                ElicitationContentValue::String("Ada".into()),
            )]);
            async move {
                Ok(CreateElicitationResponse::new(
                    ElicitationAcceptAction::new().content(content),
                ))
            }
        })
        .terminals(LocalTerminals::new())
        .on_ext_method(
            |method, params| async move { Ok(json!({"pong": method, "n": params["n"]})) },
        );
    let (client, _) = connect(handlers).await;
    let s = new_session(&client).await;
    let (texts, stop) = turn(&client, &s, "ask").await;
    assert_eq!(
        (texts, stop),
        (vec!["hello Ada".to_owned()], StopReason::EndTurn)
    );
    assert_eq!(*asked.lock().unwrap(), ["your name?"]);
    let (texts, _) = turn(&client, &s, "run").await;
    assert_eq!(texts, ["Some(0) from a terminal"]);
    let (texts, _) = turn(&client, &s, "ext").await;
    assert_eq!(texts, ["\"_editor/ping\" 1"]);
}

#[tokio::test]
async fn what_the_client_does_not_offer_fails_without_a_call() {
    let (client, _) = connect(ClientHandlers::new()).await;
    let s = new_session(&client).await;
    let prompt = PromptRequest::new(s, vec![ContentBlock::from("ask")]);
    let mut running = client.prompt(prompt).await.unwrap();
    let mut last = None;
    while let Some(event) = running.next().await {
        last = Some(event);
    }
    // `elicit` fails with NotOffered, which the turn answers as an Internal error.
    let err = last.unwrap().unwrap_err();
    assert_eq!(err.rpc().map(|e| e.code), Some(-32603), "{err:?}");
}

#[tokio::test]
async fn mcp_servers_that_cannot_be_used_are_left_out() {
    let missing = McpServer::Stdio(McpServerStdio::new("gone", "/nonexistent/mcp-server"));
    let sse = McpServer::Sse(McpServerSse::new("old", "http://127.0.0.1:9/sse"));
    let (servers, failed) =
        McpServers::connect(&[missing.clone(), sse], Duration::from_secs(5)).await;
    assert!(servers.is_empty());
    assert!(
        matches!(&failed[0], McpServerError::Mcp { server, .. } if server == "gone"),
        "{failed:?}"
    );
    assert!(
        matches!(
            &failed[1],
            McpServerError::Unsupported {
                transport: "SSE",
                ..
            }
        ),
        "{failed:?}"
    );
    assert!(matches!(
        servers.call_tool("gone", "add", json!({})).await,
        Err(McpServerError::Unknown(_))
    ));
    // Through the agent: the session is made all the same, with no tools.
    let (client, tools) = connect(ClientHandlers::new()).await;
    let request = NewSessionRequest::new("/").mcp_servers(vec![missing]);
    let s = client.new_session(request).await.unwrap().session_id;
    let (_, stop) = turn(&client, &s, "hi").await;
    assert_eq!(stop, StopReason::EndTurn);
    assert_eq!(*tools.lock().unwrap(), [0]);
}
