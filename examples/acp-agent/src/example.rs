//! The agent: its sessions (prompts, mode, style, for `session/load`, `/list`, `/resume`),
//! and its answer to every method of ACP's stable v1 surface.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rpcwire_acp::schema::{
    AgentAuthCapabilities, AgentCapabilities, AuthMethod, AuthMethodAgent, AuthenticateRequest,
    AuthenticateResponse, CloseSessionRequest, CloseSessionResponse, ContentBlock, ContentChunk,
    DeleteSessionRequest, DeleteSessionResponse, Implementation, InitializeRequest,
    InitializeResponse, ListSessionsRequest, ListSessionsResponse, LoadSessionRequest,
    LoadSessionResponse, LogoutCapabilities, LogoutRequest, LogoutResponse, NewSessionRequest,
    NewSessionResponse, PromptRequest, ResumeSessionRequest, ResumeSessionResponse,
    SessionCapabilities, SessionCloseCapabilities, SessionConfigOption, SessionConfigSelectOption,
    SessionDeleteCapabilities, SessionId, SessionInfo, SessionListCapabilities, SessionMode,
    SessionModeState, SessionResumeCapabilities, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use rpcwire_acp::{Agent, ErrorCode, RpcError, SessionHandle};
use serde_json::{json, Value};

use crate::commands::{self, Command};

/// The modes a session can be in, the first by default: `code` reads, writes and runs
/// commands; `ask` only reads and talks.
const MODES: [(&str, &str); 2] = [("code", "Code"), ("ask", "Ask")];

/// The `style` config option's values: `shout` answers in capitals.
const STYLES: [(&str, &str); 2] = [("plain", "Plain"), ("shout", "Shout")];

/// Sessions listed per page of `session/list`.
const PAGE: usize = 50;

/// One session.
#[derive(Debug, Clone)]
struct Session {
    cwd: PathBuf,
    prompts: Vec<String>,
    mode: String,
    style: String,
    /// Order of creation, for `session/list`.
    n: u64,
}

/// The agent: its sessions and id counters.
pub struct Example {
    sessions: Mutex<HashMap<SessionId, Session>>,
    next_session: AtomicU64,
    next_call: AtomicU64,
    logged_in: AtomicBool,
    pub(crate) step: Duration,
}

fn not_found(id: &SessionId) -> RpcError {
    RpcError::new(
        ErrorCode(-32002),
        format!("Resource not found: no session {id}"),
    )
}

fn modes(current: &str) -> SessionModeState {
    let available = MODES
        .iter()
        .map(|(id, name)| SessionMode::new(*id, *name))
        .collect();
    SessionModeState::new(current.to_owned(), available)
}

fn config(style: &str) -> Vec<SessionConfigOption> {
    let values: Vec<SessionConfigSelectOption> = STYLES
        .iter()
        .map(|(id, name)| SessionConfigSelectOption::new(*id, *name))
        .collect();
    vec![SessionConfigOption::select(
        "style",
        "Answer style",
        style.to_owned(),
        values,
    )]
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

impl Example {
    pub fn new(step: Duration) -> Self {
        Example {
            sessions: Mutex::default(),
            next_session: AtomicU64::new(0),
            next_call: AtomicU64::new(0),
            logged_in: AtomicBool::new(false),
            step,
        }
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<SessionId, Session>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` on a session, or answers Resource not found.
    fn session<T>(&self, id: &SessionId, f: impl FnOnce(&mut Session) -> T) -> Result<T, RpcError> {
        self.sessions()
            .get_mut(id)
            .map(f)
            .ok_or_else(|| not_found(id))
    }

    pub(crate) fn tool_call_id(&self) -> String {
        format!(
            "call-{}",
            self.next_call.fetch_add(1, Ordering::Relaxed) + 1
        )
    }
}

impl Agent for Example {
    async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, RpcError> {
        tracing::debug!(client = ?request.client_info, fs = ?request.client_capabilities.fs, "initialize");
        let sessions = SessionCapabilities::new()
            .list(SessionListCapabilities::new())
            .resume(SessionResumeCapabilities::new())
            .close(SessionCloseCapabilities::new())
            .delete(SessionDeleteCapabilities::new());
        let auth = AgentAuthCapabilities::new().logout(LogoutCapabilities::new());
        Ok(InitializeResponse::new(request.protocol_version)
            .agent_capabilities(
                AgentCapabilities::new()
                    .load_session(true)
                    .session_capabilities(sessions)
                    .auth(auth),
            )
            .auth_methods(vec![AuthMethod::Agent(AuthMethodAgent::new(
                "local",
                "This machine's user",
            ))])
            .agent_info(Implementation::new(
                "rpcwire-acp-agent",
                env!("CARGO_PKG_VERSION"),
            )))
    }

    async fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> Result<AuthenticateResponse, RpcError> {
        if &*request.method_id.0 != "local" {
            return Err(RpcError::invalid_params("unknown auth method"));
        }
        self.logged_in.store(true, Ordering::Relaxed);
        Ok(AuthenticateResponse::new())
    }

    async fn logout(&self, _: LogoutRequest) -> Result<LogoutResponse, RpcError> {
        self.logged_in.store(false, Ordering::Relaxed);
        Ok(LogoutResponse::new())
    }

    async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, RpcError> {
        let n = self.next_session.fetch_add(1, Ordering::Relaxed) + 1;
        let id = SessionId::new(format!("session-{n}"));
        tracing::debug!(session = %id, cwd = %request.cwd.display(), mcp = request.mcp_servers.len(), "new session");
        let session = Session {
            cwd: request.cwd,
            prompts: Vec::new(),
            mode: MODES[0].0.to_owned(),
            style: STYLES[0].0.to_owned(),
            n,
        };
        let answer = NewSessionResponse::new(id.clone())
            .modes(modes(&session.mode))
            .config_options(config(&session.style));
        self.sessions().insert(id, session);
        Ok(answer)
    }

    async fn load_session(
        &self,
        session: SessionHandle,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, RpcError> {
        let state = self.session(&request.session_id, |s| s.clone())?;
        // Replays the conversation (the user's side: this agent keeps no answers).
        for text in state.prompts {
            let chunk = ContentChunk::new(ContentBlock::from(text));
            session
                .update(SessionUpdate::UserMessageChunk(chunk))
                .await?;
        }
        Ok(LoadSessionResponse::new()
            .modes(modes(&state.mode))
            .config_options(config(&state.style)))
    }

    async fn resume_session(
        &self,
        _: SessionHandle,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, RpcError> {
        let (mode, style) = self.session(&request.session_id, |s| {
            s.cwd = request.cwd.clone();
            (s.mode.clone(), s.style.clone())
        })?;
        Ok(ResumeSessionResponse::new()
            .modes(modes(&mode))
            .config_options(config(&style)))
    }

    async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, RpcError> {
        let after: u64 = match &request.cursor {
            Some(c) => c
                .parse()
                .map_err(|_| RpcError::invalid_params("bad cursor"))?,
            None => 0,
        };
        let sessions = self.sessions();
        let mut matching: Vec<(&SessionId, &Session)> = sessions
            .iter()
            .filter(|(_, s)| s.n > after)
            .filter(|(_, s)| request.cwd.as_ref().is_none_or(|cwd| &s.cwd == cwd))
            .collect();
        matching.sort_by_key(|(_, s)| s.n);
        let next = (matching.len() > PAGE).then(|| matching[PAGE - 1].1.n.to_string());
        let page = matching
            .into_iter()
            .take(PAGE)
            .map(|(id, s)| {
                let mut info = SessionInfo::new(id.clone(), s.cwd.clone());
                info.title = s.prompts.first().cloned();
                info
            })
            .collect();
        Ok(ListSessionsResponse::new(page).next_cursor(next))
    }

    async fn set_session_mode(
        &self,
        _: SessionHandle,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, RpcError> {
        let mode = request.mode_id.0.to_string();
        if !MODES.iter().any(|(id, _)| *id == mode) {
            return Err(RpcError::invalid_params(format!("no mode {mode}")));
        }
        self.session(&request.session_id, |s| s.mode = mode)?;
        Ok(SetSessionModeResponse::new())
    }

    async fn set_session_config_option(
        &self,
        _: SessionHandle,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, RpcError> {
        let value = request.value.as_value_id().map(|v| v.0.to_string());
        let style = match (&*request.config_id.0, value) {
            ("style", Some(v)) if STYLES.iter().any(|(id, _)| *id == v) => v,
            _ => return Err(RpcError::invalid_params("no such option or value")),
        };
        let style = self.session(&request.session_id, |s| {
            s.style = style;
            s.style.clone()
        })?;
        Ok(SetSessionConfigOptionResponse::new(config(&style)))
    }

    async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, RpcError> {
        // Its turn and MCP servers are ended already; the session stays for load and resume.
        self.session(&request.session_id, |_| ())?;
        Ok(CloseSessionResponse::new())
    }

    async fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, RpcError> {
        match self.sessions().remove(&request.session_id) {
            Some(_) => Ok(DeleteSessionResponse::new()),
            None => Err(not_found(&request.session_id)),
        }
    }

    async fn ext_method(&self, method: String, params: Value) -> Result<Value, RpcError> {
        match method.as_str() {
            // A small extension: how many sessions the agent keeps, and the params back.
            "_rpcwire/stats" => Ok(json!({"sessions": self.sessions().len(), "echo": params})),
            _ => Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND)),
        }
    }

    async fn prompt(
        &self,
        session: SessionHandle,
        request: PromptRequest,
    ) -> Result<StopReason, RpcError> {
        let text = prompt_text(&request.prompt);
        tracing::debug!(session = %request.session_id, prompt = %text, "prompt");
        let (mode, shout) = self.session(&request.session_id, |s| {
            s.prompts.push(text.clone());
            (s.mode.clone(), s.style == "shout")
        })?;
        let turn = commands::Turn {
            session: &session,
            call: self.tool_call_id(),
            shout,
            code_mode: mode == "code",
        };
        match Command::parse(&text) {
            Command::Read { path } => turn.read(path).await,
            Command::Write { path, content } => turn.write(path, content).await,
            Command::Long { steps } => turn.long(steps, self.step).await,
            Command::Ask { question } => turn.ask(question).await,
            Command::Run { command, args } => turn.run(command, args).await,
            Command::Tools => turn.tools().await,
            Command::Tool { name, arguments } => turn.tool(name, arguments).await,
            Command::Mode => turn.say(format!("mode: {mode}")).await,
            Command::Help => turn.say(commands::HELP.to_owned()).await,
        }
    }
}
