//! The client side (an editor): spawn or connect to an agent, initialize, call every agent
//! method of ACP's stable v1 surface, run prompt turns as a stream of updates, cancel a turn.
//! The agent's requests are answered by [`ClientHandlers`].

use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    CloseSessionRequest, CloseSessionResponse, DeleteSessionRequest, DeleteSessionResponse,
    Implementation, InitializeRequest, InitializeResponse, ListSessionsRequest,
    ListSessionsResponse, LoadSessionRequest, LoadSessionResponse, LogoutRequest, LogoutResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, ResumeSessionRequest,
    ResumeSessionResponse, SessionId, SessionUpdate, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse,
    AGENT_METHOD_NAMES,
};
use agent_client_protocol_schema::ProtocolVersion;
use rpcwire_tokio::{Builder, Client, Session};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::handlers::{ClientHandlers, Hub, Route};
use crate::{AcpError, AcpOptions};

/// Who the client says it is, and its connection settings.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ClientOptions {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
    /// The connection settings.
    pub acp: AcpOptions,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            name: "rpcwire-acp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            acp: AcpOptions::default(),
        }
    }
}

impl ClientOptions {
    /// The defaults with another name and version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        ClientOptions {
            name: name.into(),
            version: version.into(),
            ..ClientOptions::default()
        }
    }

    /// Sets the connection settings.
    pub fn acp(mut self, acp: AcpOptions) -> Self {
        self.acp = acp;
        self
    }
}

/// An ACP client on one connection to an agent, initialized.
///
/// ```no_run
/// use rpcwire_acp::schema::{ContentBlock, NewSessionRequest, PromptRequest};
/// use rpcwire_acp::{AcpClient, ClientHandlers, ClientOptions, TurnEvent};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), rpcwire_acp::AcpError> {
/// let handlers = ClientHandlers::new().on_read_text_file(|request| async move {
///     let content = std::fs::read_to_string(&request.path).unwrap_or_default();
///     Ok(rpcwire_acp::schema::ReadTextFileResponse::new(content))
/// });
/// let mut cmd = tokio::process::Command::new("acp-agent");
/// let (client, _child) = AcpClient::spawn(&mut cmd, ClientOptions::default(), handlers).await?;
/// let session = client.new_session(NewSessionRequest::new("/tmp")).await?;
/// let prompt = vec![ContentBlock::from("read /etc/hostname")];
/// let mut turn = client.prompt(PromptRequest::new(session.session_id, prompt)).await?;
/// while let Some(event) = turn.next().await {
///     match event? {
///         TurnEvent::Update(update) => println!("{update:?}"),
///         TurnEvent::Stopped(answer) => println!("stop: {:?}", answer.stop_reason),
///     }
/// }
/// client.close().await?;
/// # Ok(()) }
/// ```
pub struct AcpClient {
    session: Session,
    hub: Arc<Hub>,
    init: InitializeResponse,
    options: ClientOptions,
}

impl fmt::Debug for AcpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcpClient")
            .field("agent", &self.init.agent_info)
            .field("protocol_version", &self.init.protocol_version)
            .finish()
    }
}

impl AcpClient {
    fn prepare(options: &ClientOptions, handlers: &ClientHandlers) -> (Builder, Arc<Hub>) {
        let hub = Arc::new(Hub::new(handlers));
        let builder = options.acp.builder().router(hub.router(handlers));
        (builder, hub)
    }

    async fn finish(
        session: Session,
        hub: Arc<Hub>,
        options: ClientOptions,
        handlers: &ClientHandlers,
    ) -> Result<AcpClient, AcpError> {
        let request = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(handlers.capabilities())
            .client_info(Implementation::new(&options.name, &options.version));
        let init: InitializeResponse = session
            .client()
            .call_with_timeout(
                AGENT_METHOD_NAMES.initialize,
                request,
                options.acp.request_timeout,
            )
            .await?;
        if init.protocol_version != ProtocolVersion::V1 {
            let version = init.protocol_version.as_u16();
            session.client().shutdown();
            return Err(AcpError::UnsupportedVersion(version));
        }
        Ok(AcpClient {
            session,
            hub,
            init,
            options,
        })
    }

    /// Starts a connection with `start` (given a [`Builder`] with ACP's settings and the
    /// client's router; use any of its constructors: `run`, `run_io`, `spawn_child`) and
    /// initializes it.
    pub async fn connect(
        options: ClientOptions,
        handlers: ClientHandlers,
        start: impl FnOnce(Builder) -> Session,
    ) -> Result<AcpClient, AcpError> {
        let (builder, hub) = AcpClient::prepare(&options, &handlers);
        AcpClient::finish(start(builder), hub, options, &handlers).await
    }

    /// Spawns an agent program (stdio, one JSON message per line) and initializes it. Its
    /// stderr (the agent's logs) is inherited unless `command` says otherwise; the child is
    /// killed when the returned handle is dropped.
    pub async fn spawn(
        command: &mut tokio::process::Command,
        options: ClientOptions,
        handlers: ClientHandlers,
    ) -> Result<(AcpClient, tokio::process::Child), AcpError> {
        let (builder, hub) = AcpClient::prepare(&options, &handlers);
        let (session, child) = builder.spawn_child(command).map_err(AcpError::Spawn)?;
        Ok((
            AcpClient::finish(session, hub, options, &handlers).await?,
            child,
        ))
    }

    /// The agent's `initialize` answer (its capabilities, auth methods, name).
    pub fn initialize_response(&self) -> &InitializeResponse {
        &self.init
    }

    /// The agent's capabilities.
    pub fn agent_capabilities(&self) -> &AgentCapabilities {
        &self.init.agent_capabilities
    }

    /// The JSON-RPC client underneath (for requests this type has no method for).
    pub fn client(&self) -> &Client {
        self.session.client()
    }

    async fn short<P: serde::Serialize, R: serde::de::DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, AcpError> {
        let timeout = self.options.acp.request_timeout;
        Ok(self
            .client()
            .call_with_timeout(method, params, timeout)
            .await?)
    }

    /// `authenticate`.
    pub async fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> Result<AuthenticateResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.authenticate, request).await
    }

    /// `session/new`.
    pub async fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> Result<NewSessionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_new, request).await
    }

    /// `session/load`; the replayed conversation reaches [`ClientHandlers::on_update`].
    pub async fn load_session(
        &self,
        request: LoadSessionRequest,
    ) -> Result<LoadSessionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_load, request).await
    }

    /// `session/resume` (no replay).
    pub async fn resume_session(
        &self,
        request: ResumeSessionRequest,
    ) -> Result<ResumeSessionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_resume, request).await
    }

    /// `session/list`.
    pub async fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> Result<ListSessionsResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_list, request).await
    }

    /// `session/set_mode`.
    pub async fn set_session_mode(
        &self,
        request: SetSessionModeRequest,
    ) -> Result<SetSessionModeResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_set_mode, request)
            .await
    }

    /// `session/set_config_option`: the answer holds every option with its current value.
    pub async fn set_session_config_option(
        &self,
        request: SetSessionConfigOptionRequest,
    ) -> Result<SetSessionConfigOptionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_set_config_option, request)
            .await
    }

    /// `session/close`: the agent cancels the session's running turn and lets its resources
    /// go.
    pub async fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> Result<CloseSessionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_close, request).await
    }

    /// `session/delete`.
    pub async fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> Result<DeleteSessionResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.session_delete, request).await
    }

    /// `logout`.
    pub async fn logout(&self, request: LogoutRequest) -> Result<LogoutResponse, AcpError> {
        self.short(AGENT_METHOD_NAMES.logout, request).await
    }

    /// An extension request (`method` starts with `_`, as ACP reserves), with the short
    /// requests' timeout.
    pub async fn ext_method(&self, method: &str, params: Value) -> Result<Value, AcpError> {
        self.short(method, params).await
    }

    /// An extension notification.
    pub async fn ext_notification(&self, method: &str, params: Value) -> Result<(), AcpError> {
        self.client().notify(method, params).await?;
        Ok(())
    }

    /// Starts a prompt turn (`session/prompt`); read its updates and its end with
    /// [`PromptTurn::next`]. One turn at a time per session: while one runs (until its end
    /// is read or it is dropped), another fails with [`AcpError::TurnRunning`].
    pub async fn prompt(&self, request: PromptRequest) -> Result<PromptTurn, AcpError> {
        let session_id = request.session_id.clone();
        let capacity = self.options.acp.max_buffered_updates.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        let cancel = CancellationToken::new();
        let turn = self.hub.turns.fetch_add(1, Ordering::Relaxed);
        {
            let mut routes = self
                .hub
                .routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if routes.contains_key(&session_id) {
                return Err(AcpError::TurnRunning(session_id));
            }
            routes.insert(
                session_id.clone(),
                Route {
                    turn,
                    updates: tx,
                    cancel: cancel.clone(),
                },
            );
        }
        let client = self.client().clone();
        let call = tokio::spawn(async move {
            let answer: PromptResponse = client
                .call(AGENT_METHOD_NAMES.session_prompt, request)
                .await?;
            Ok(answer)
        });
        Ok(PromptTurn {
            session_id,
            client: self.client().clone(),
            hub: Arc::clone(&self.hub),
            updates: rx,
            call: Some(call),
            answer: None,
            cancel,
            turn,
            done: false,
        })
    }

    /// `session/cancel` for a session's running turn (see also [`PromptTurn::cancel`]).
    pub async fn cancel(&self, session_id: &SessionId) -> Result<(), AcpError> {
        if let Some(token) = self.hub.turn_cancel(session_id) {
            token.cancel();
        }
        send_cancel(self.client(), session_id).await
    }

    /// Ends the connection (closing the agent's stdin, after which an agent exits) and waits
    /// for the driver.
    pub async fn close(self) -> Result<(), AcpError> {
        Ok(self.session.close().await?)
    }
}

async fn send_cancel(client: &Client, session_id: &SessionId) -> Result<(), AcpError> {
    client
        .notify(
            AGENT_METHOD_NAMES.session_cancel,
            CancelNotification::new(session_id.clone()),
        )
        .await?;
    Ok(())
}

/// One step of a prompt turn.
#[derive(Debug, Clone)]
// Most events are updates, and an event is moved once, straight into the reader's hands:
// boxing the large variant would add an allocation per update to save none.
#[allow(clippy::large_enum_variant)]
pub enum TurnEvent {
    /// A `session/update` the agent streamed (message chunks, tool calls, plans).
    Update(SessionUpdate),
    /// The turn's answer: the last event.
    Stopped(PromptResponse),
}

/// A running prompt turn: its updates in order, then its answer.
///
/// Dropping it before the end abandons the request (the agent is sent `$/cancel_request`).
pub struct PromptTurn {
    session_id: SessionId,
    client: Client,
    hub: Arc<Hub>,
    updates: mpsc::Receiver<SessionUpdate>,
    call: Option<JoinHandle<Result<PromptResponse, AcpError>>>,
    /// The answer, once it came, until the updates queued before it are read.
    answer: Option<Result<PromptResponse, AcpError>>,
    cancel: CancellationToken,
    turn: u64,
    done: bool,
}

impl fmt::Debug for PromptTurn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PromptTurn")
            .field("session_id", &self.session_id)
            .field("done", &self.done)
            .finish()
    }
}

impl PromptTurn {
    /// The session.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The next event: updates in the order the agent sent them, then
    /// [`TurnEvent::Stopped`] (or the error that ended the turn: the agent's JSON-RPC error,
    /// the agent's exit), then `None`.
    pub async fn next(&mut self) -> Option<Result<TurnEvent, AcpError>> {
        loop {
            if self.done {
                return None;
            }
            // Updates first: the agent sends a turn's updates before its answer, and the
            // connection hands them over in order, so whatever is queued precedes the answer.
            if let Ok(update) = self.updates.try_recv() {
                return Some(Ok(TurnEvent::Update(update)));
            }
            if let Some(answer) = self.answer.take() {
                self.done = true;
                self.unroute();
                return Some(answer.map(TurnEvent::Stopped));
            }
            let Some(call) = self.call.as_mut() else {
                self.done = true;
                self.unroute();
                return None;
            };
            tokio::select! {
                biased;
                Some(update) = self.updates.recv() => return Some(Ok(TurnEvent::Update(update))),
                answer = call => {
                    self.call = None;
                    self.answer = Some(answer.unwrap_or(Err(AcpError::Abandoned)));
                }
            }
        }
    }

    /// Reads the turn to its end, handing each update to `on_update`, and returns the answer.
    pub async fn finish(
        mut self,
        mut on_update: impl FnMut(SessionUpdate),
    ) -> Result<PromptResponse, AcpError> {
        while let Some(event) = self.next().await {
            match event? {
                TurnEvent::Update(update) => on_update(update),
                TurnEvent::Stopped(stop) => return Ok(stop),
            }
        }
        Err(AcpError::Abandoned)
    }

    /// Cancels the turn (`session/cancel`): the agent stops and answers
    /// `stopReason: "cancelled"`; a permission request it has pending is answered
    /// `cancelled`. Keep reading [`next`](Self::next) for the end.
    pub async fn cancel(&self) -> Result<(), AcpError> {
        self.cancel.cancel();
        send_cancel(&self.client, &self.session_id).await
    }

    fn unroute(&self) {
        let mut routes = self
            .hub
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        // Only this turn's route (a later turn of the same session may have replaced it).
        if routes
            .get(&self.session_id)
            .is_some_and(|r| r.turn == self.turn)
        {
            routes.remove(&self.session_id);
        }
    }
}

impl Drop for PromptTurn {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            // Dropping the call sends `$/cancel_request` for it.
            call.abort();
        }
        if !self.done {
            self.unroute();
        }
    }
}
