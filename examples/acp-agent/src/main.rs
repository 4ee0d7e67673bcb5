//! `acp-agent`: an Agent Client Protocol agent that needs no language model. An editor (Zed,
//! or any ACP client) launches it and talks to it over its stdin and stdout; its logs go to
//! stderr. It understands a few prompts (see [`commands`]) and reports every step as a tool
//! call.

mod commands;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use clap::Parser;
use rpcwire_acp::schema::{
    AgentCapabilities, ContentBlock, ContentChunk, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, SessionId, SessionUpdate, StopReason,
};
use rpcwire_acp::{AcpOptions, Agent, AgentServer, ErrorCode, RpcError, SessionHandle};

/// Command line.
#[derive(Debug, Parser)]
#[command(
    name = "acp-agent",
    version,
    about = "An ACP agent with no language model"
)]
struct Args {
    /// The largest JSON-RPC message accepted or sent, in bytes.
    #[arg(long, default_value_t = 8 << 20)]
    max_message: usize,
    /// How long each step of `long N` takes, in milliseconds.
    #[arg(long, default_value_t = 200)]
    step_ms: u64,
    /// Log level on stderr (error, warn, info, debug, trace).
    #[arg(long, default_value = "info")]
    log: tracing::Level,
}

/// The agent: its sessions (the prompts of each, for `session/load`) and id counters.
struct Example {
    sessions: Mutex<HashMap<SessionId, Vec<String>>>,
    next_session: AtomicU64,
    next_call: AtomicU64,
    step: Duration,
}

impl Example {
    fn tool_call_id(&self) -> String {
        format!(
            "call-{}",
            self.next_call.fetch_add(1, Ordering::Relaxed) + 1
        )
    }
}

fn prompt_text(prompt: &[ContentBlock]) -> String {
    prompt
        .iter()
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Agent for Example {
    async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        tracing::info!(client = ?request.client_info, fs = ?request.client_capabilities.fs, "initialize");
        Ok(InitializeResponse::new(request.protocol_version)
            .agent_capabilities(AgentCapabilities::new().load_session(true))
            .agent_info(Implementation::new(
                "rpcwire-acp-agent",
                env!("CARGO_PKG_VERSION"),
            )))
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, RpcError> {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        let id = SessionId::new(format!("session-{n}"));
        tracing::info!(session = %id, cwd = %request.cwd.display(), "new session");
        self.sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(id.clone(), Vec::new());
        Ok(NewSessionResponse::new(id))
    }

    async fn load_session(
        &self,
        session: SessionHandle,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let history = self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&request.session_id)
            .cloned()
            .ok_or_else(|| {
                RpcError::new(ErrorCode(-32002), "Resource not found: no such session")
            })?;
        // Replays the conversation (the user's side: this agent keeps no answers).
        for text in history {
            let chunk = ContentChunk::new(ContentBlock::from(text));
            session
                .update(SessionUpdate::UserMessageChunk(chunk))
                .await?;
        }
        Ok(LoadSessionResponse::new())
    }

    async fn prompt(
        &self,
        session: SessionHandle,
        request: PromptRequest,
    ) -> Result<StopReason, RpcError> {
        let text = prompt_text(&request.prompt);
        tracing::info!(session = %request.session_id, prompt = %text, "prompt");
        match self
            .sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_mut(&request.session_id)
        {
            Some(history) => history.push(text.clone()),
            None => {
                return Err(RpcError::new(
                    ErrorCode(-32002),
                    "Resource not found: no such session",
                ))
            }
        }
        let call = self.tool_call_id();
        match commands::Command::parse(&text) {
            commands::Command::Read { path } => commands::read(&session, call, path).await,
            commands::Command::Write { path, content } => {
                commands::write(&session, call, path, content).await
            }
            commands::Command::Long { steps } => {
                commands::long(&session, call, steps, self.step).await
            }
            commands::Command::Help => {
                session.message(commands::HELP).await?;
                Ok(StopReason::EndTurn)
            }
        }
    }
}

#[tokio::main]
async fn main() {
    let args = Args::parse();
    // stdout is the wire: every log line goes to stderr.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_max_level(args.log)
        .init();
    let agent = Example {
        sessions: Mutex::default(),
        next_session: AtomicU64::new(0),
        next_call: AtomicU64::new(0),
        step: Duration::from_millis(args.step_ms),
    };
    let options = AcpOptions::new().max_message(args.max_message);
    if let Err(e) = AgentServer::new(agent).options(options).serve_stdio().await {
        tracing::error!(error = %e, "connection failed");
        std::process::exit(1);
    }
    tracing::info!("client closed the connection");
}
