//! The client side (an editor): spawn or connect to an agent, initialize, open sessions, run
//! prompt turns as a stream of updates, answer the agent's permission and file requests with
//! handlers, cancel a turn.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::{
    AgentCapabilities, AuthenticateRequest, AuthenticateResponse, CancelNotification,
    ClientCapabilities, FileSystemCapabilities, Implementation, InitializeRequest,
    InitializeResponse, LoadSessionRequest, LoadSessionResponse, NewSessionRequest,
    NewSessionResponse, PermissionOptionKind, PromptRequest, PromptResponse, ReadTextFileRequest,
    ReadTextFileResponse, RequestPermissionOutcome, RequestPermissionRequest,
    RequestPermissionResponse, SelectedPermissionOutcome, SessionId, SessionNotification,
    SessionUpdate, WriteTextFileRequest, WriteTextFileResponse, AGENT_METHOD_NAMES,
    CLIENT_METHOD_NAMES,
};
use agent_client_protocol_schema::ProtocolVersion;
use rpcwire_tokio::{Builder, Client, Context, Router, RpcError, Session};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::{AcpError, AcpOptions};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
type PermissionFn =
    Arc<dyn Fn(RequestPermissionRequest) -> BoxFuture<RequestPermissionResponse> + Send + Sync>;
type ReadFn = Arc<
    dyn Fn(ReadTextFileRequest) -> BoxFuture<Result<ReadTextFileResponse, RpcError>> + Send + Sync,
>;
type WriteFn = Arc<
    dyn Fn(WriteTextFileRequest) -> BoxFuture<Result<WriteTextFileResponse, RpcError>>
        + Send
        + Sync,
>;
type UpdateFn = Arc<dyn Fn(SessionNotification) + Send + Sync>;

/// How the client answers the agent's requests. The client advertises `fs.readTextFile` and
/// `fs.writeTextFile` exactly when the matching handler is set.
///
/// Without a permission handler, a permission request is answered with the first "reject"
/// option the agent offers (or `cancelled` when it offers none): nothing is allowed unasked.
#[derive(Clone, Default)]
pub struct ClientHandlers {
    permission: Option<PermissionFn>,
    read: Option<ReadFn>,
    write: Option<WriteFn>,
    updates: Option<UpdateFn>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("permission", &self.permission.is_some())
            .field("read_text_file", &self.read.is_some())
            .field("write_text_file", &self.write.is_some())
            .field("updates", &self.updates.is_some())
            .finish()
    }
}

impl ClientHandlers {
    /// No handlers (no file system offered; permissions rejected).
    pub fn new() -> Self {
        ClientHandlers::default()
    }

    /// Answers `session/request_permission` (ask the user). When the turn is cancelled while
    /// it waits, the request is answered `cancelled` without it.
    pub fn on_permission<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(RequestPermissionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RequestPermissionResponse> + Send + 'static,
    {
        self.permission = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Answers `fs/read_text_file` (and advertises `fs.readTextFile`).
    pub fn on_read_text_file<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ReadTextFileRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadTextFileResponse, RpcError>> + Send + 'static,
    {
        self.read = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Answers `fs/write_text_file` (and advertises `fs.writeTextFile`).
    pub fn on_write_text_file<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(WriteTextFileRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<WriteTextFileResponse, RpcError>> + Send + 'static,
    {
        self.write = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Receives `session/update` notifications outside a prompt turn read with
    /// [`PromptTurn::next`] (a `session/load` replay, commands announced after
    /// `session/new`). Without it they are logged at debug level.
    pub fn on_update(
        mut self,
        handler: impl Fn(SessionNotification) + Send + Sync + 'static,
    ) -> Self {
        self.updates = Some(Arc::new(handler));
        self
    }

    fn capabilities(&self) -> ClientCapabilities {
        let mut fs = FileSystemCapabilities::new();
        fs.read_text_file = self.read.is_some();
        fs.write_text_file = self.write.is_some();
        ClientCapabilities::new().fs(fs)
    }
}

/// The first reject option offered, else `cancelled` (the answer when no handler is set).
fn reject(request: &RequestPermissionRequest) -> RequestPermissionResponse {
    let outcome = request
        .options
        .iter()
        .find(|o| {
            matches!(
                o.kind,
                PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways
            )
        })
        .map_or(RequestPermissionOutcome::Cancelled, |o| {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone()))
        });
    RequestPermissionResponse::new(outcome)
}

/// A running turn's mailbox: where its updates go, and its cancellation.
struct Route {
    /// Which turn (a later turn of the same session replaces the route).
    turn: u64,
    updates: mpsc::Sender<SessionUpdate>,
    cancel: CancellationToken,
}

/// What the client's router hands updates to.
#[derive(Default)]
struct Hub {
    routes: Mutex<HashMap<SessionId, Route>>,
    turns: AtomicU64,
    fallback: Option<UpdateFn>,
}

impl Hub {
    fn deliver(&self, note: SessionNotification) {
        let routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(route) = routes.get(&note.session_id) {
            if let Err(e) = route.updates.try_send(note.update) {
                tracing::warn!(session = %note.session_id, error = %e, "session/update dropped: the turn's reader is behind");
            }
            return;
        }
        drop(routes);
        match &self.fallback {
            Some(f) => f(note),
            None => tracing::debug!(session = %note.session_id, "session/update outside a turn"),
        }
    }

    fn turn_cancel(&self, session: &SessionId) -> Option<CancellationToken> {
        let routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        routes.get(session).map(|r| r.cancel.clone())
    }

    fn router(self: &Arc<Self>, handlers: &ClientHandlers) -> Router {
        let names = &CLIENT_METHOD_NAMES;
        let hub = Arc::clone(self);
        let mut router = Router::new().notification(names.session_update, move |note| {
            hub.deliver(note);
            std::future::ready(())
        });
        let hub = Arc::clone(self);
        let permission = handlers.permission.clone();
        router = router.method_with_context(
            names.session_request_permission,
            move |ctx: Context, request: RequestPermissionRequest| {
                let turn = hub.turn_cancel(&request.session_id).unwrap_or_default();
                let permission = permission.clone();
                async move {
                    let Some(ask) = permission else {
                        return Ok::<_, RpcError>(reject(&request));
                    };
                    // ACP: once the client cancels the turn (or the agent cancels this
                    // request), the pending question is answered `cancelled`.
                    tokio::select! {
                        answer = ask(request) => Ok(answer),
                        () = turn.cancelled() => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)),
                        () = ctx.cancelled() => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)),
                    }
                }
            },
        );
        if let Some(read) = handlers.read.clone() {
            router = router.method(names.fs_read_text_file, move |r| read(r));
        }
        if let Some(write) = handlers.write.clone() {
            router = router.method(names.fs_write_text_file, move |r| write(r));
        }
        router
    }
}

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
        let hub = Arc::new(Hub {
            routes: Mutex::default(),
            turns: AtomicU64::new(0),
            fallback: handlers.updates.clone(),
        });
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
