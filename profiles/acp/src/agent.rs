//! The agent side: an [`Agent`] trait whose async methods answer the client's requests, and
//! [`AgentServer`], which serves it on a connection (this process's stdio, as editors launch
//! agents, or any stream).

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::{
    AuthenticateRequest, AuthenticateResponse, CancelNotification, ClientCapabilities,
    InitializeRequest, InitializeResponse, LoadSessionRequest, LoadSessionResponse,
    NewSessionRequest, NewSessionResponse, PromptRequest, PromptResponse, SessionId, StopReason,
    AGENT_METHOD_NAMES,
};
use agent_client_protocol_schema::ProtocolVersion;
use rpcwire_tokio::{Builder, Context, DriverError, ErrorCode, Router, RpcError};
use tokio_util::sync::CancellationToken;

use crate::error::request_cancelled;
use crate::{AcpOptions, SessionHandle};

/// An ACP agent: what it answers to each of the client's requests. Implement the methods with
/// `async fn`; each call runs in its own task, so a long prompt turn never holds up the others.
///
/// `session/cancel` needs no method: it cancels the session's running turn, which the
/// [`SessionHandle`] shows ([`SessionHandle::cancelled`]); the turn is then answered
/// `stopReason: "cancelled"` whatever the method returns. A turn cancelled by
/// `$/cancel_request` is answered with error -32800.
///
/// ```
/// use rpcwire_acp::schema::{
///     InitializeRequest, InitializeResponse, NewSessionRequest, NewSessionResponse,
///     PromptRequest, StopReason,
/// };
/// use rpcwire_acp::{Agent, AgentServer, RpcError, SessionHandle};
///
/// struct Echo;
///
/// impl Agent for Echo {
///     async fn initialize(&self, request: InitializeRequest) -> Result<InitializeResponse, RpcError> {
///         Ok(InitializeResponse::new(request.protocol_version))
///     }
///     async fn new_session(&self, _: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
///         Ok(NewSessionResponse::new("s-1"))
///     }
///     async fn prompt(&self, session: SessionHandle, request: PromptRequest) -> Result<StopReason, RpcError> {
///         session.message(format!("{} blocks received", request.prompt.len())).await?;
///         Ok(StopReason::EndTurn)
///     }
/// }
///
/// # async fn run() -> Result<(), rpcwire_acp::DriverError> {
/// // In `main`: serve the editor on stdin/stdout (logs go to stderr).
/// AgentServer::new(Echo).serve_stdio().await
/// # }
/// ```
pub trait Agent: Send + Sync + 'static {
    /// `initialize`. The protocol version in the answer is set by the server to the one
    /// negotiated (the client's if this crate speaks it, else the latest it speaks), and the
    /// client's capabilities are kept for [`SessionHandle::client_capabilities`].
    fn initialize(
        &self,
        request: InitializeRequest,
    ) -> impl Future<Output = Result<InitializeResponse, RpcError>> + Send;

    /// `authenticate` (default: Method not found, for agents that advertise no auth methods).
    fn authenticate(
        &self,
        request: AuthenticateRequest,
    ) -> impl Future<Output = Result<AuthenticateResponse, RpcError>> + Send {
        let _ = request;
        async { Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND)) }
    }

    /// `session/new`.
    fn new_session(
        &self,
        request: NewSessionRequest,
    ) -> impl Future<Output = Result<NewSessionResponse, RpcError>> + Send;

    /// `session/load` (default: Method not found, for agents without the `loadSession`
    /// capability). Replay the conversation with [`SessionHandle::update`] before returning.
    fn load_session(
        &self,
        session: SessionHandle,
        request: LoadSessionRequest,
    ) -> impl Future<Output = Result<LoadSessionResponse, RpcError>> + Send {
        let _ = (session, request);
        async { Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND)) }
    }

    /// `session/prompt`: one turn, streaming updates through `session`, until a stop reason.
    fn prompt(
        &self,
        session: SessionHandle,
        request: PromptRequest,
    ) -> impl Future<Output = Result<StopReason, RpcError>> + Send;
}

/// What one connection knows: the client's capabilities and the running turns.
#[derive(Default)]
struct ConnState {
    caps: Mutex<Option<Arc<ClientCapabilities>>>,
    turns: Mutex<HashMap<SessionId, CancellationToken>>,
}

impl ConnState {
    fn caps(&self) -> Result<Arc<ClientCapabilities>, RpcError> {
        self.caps
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
            .ok_or_else(|| {
                RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    "the connection is not initialized",
                )
            })
    }
}

/// Removes a turn from the table when it ends, however it ends.
struct TurnGuard<'a> {
    state: &'a ConnState,
    session: SessionId,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        self.state
            .turns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.session);
    }
}

/// The protocol version answered to a client that asked for `requested`: the same when this
/// crate speaks it, otherwise the latest it speaks (the client then decides).
pub fn negotiate(requested: ProtocolVersion) -> ProtocolVersion {
    if requested == ProtocolVersion::V1 {
        requested
    } else {
        ProtocolVersion::LATEST
    }
}

/// Serves an [`Agent`].
///
/// ```no_run
/// # use rpcwire_acp::{Agent, AgentServer, AcpOptions};
/// # async fn run(agent: impl Agent) -> Result<(), rpcwire_acp::DriverError> {
/// AgentServer::new(agent)
///     .options(AcpOptions::new().max_message(1 << 20))
///     .serve_stdio()
///     .await
/// # }
/// ```
pub struct AgentServer<A> {
    agent: Arc<A>,
    options: AcpOptions,
}

impl<A> std::fmt::Debug for AgentServer<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentServer")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<A: Agent> AgentServer<A> {
    /// Serves `agent` with the default [`AcpOptions`].
    pub fn new(agent: A) -> Self {
        AgentServer {
            agent: Arc::new(agent),
            options: AcpOptions::default(),
        }
    }

    /// Replaces the connection settings.
    pub fn options(mut self, options: AcpOptions) -> Self {
        self.options = options;
        self
    }

    /// A [`Builder`] for one connection: ACP's settings and a router for this agent with the
    /// connection's own state. Start it with any of the builder's constructors (`stdio`,
    /// `run_io`, `run`).
    pub fn builder(&self) -> Builder {
        self.options.builder().router(self.router())
    }

    /// Serves this process's stdin and stdout until the client closes them. Write nothing
    /// else to stdout: logs belong on stderr.
    pub async fn serve_stdio(self) -> Result<(), DriverError> {
        self.builder().stdio().join().await
    }

    /// The router of one connection (each connection needs its own: it keeps the client's
    /// capabilities and the running turns).
    pub fn router(&self) -> Router {
        let state = Arc::new(ConnState::default());
        let names = &AGENT_METHOD_NAMES;

        let (agent, st) = (Arc::clone(&self.agent), Arc::clone(&state));
        let router = Router::new().method(names.initialize, move |request: InitializeRequest| {
            let (agent, state) = (Arc::clone(&agent), Arc::clone(&st));
            async move {
                let version = negotiate(request.protocol_version);
                let caps = Arc::new(request.client_capabilities.clone());
                *state.caps.lock().unwrap_or_else(PoisonError::into_inner) = Some(caps);
                let mut answer = agent.initialize(request).await?;
                answer.protocol_version = version;
                Ok(answer)
            }
        });

        let (agent, st) = (Arc::clone(&self.agent), Arc::clone(&state));
        let router = router.method(names.authenticate, move |request: AuthenticateRequest| {
            let (agent, state) = (Arc::clone(&agent), Arc::clone(&st));
            async move {
                state.caps()?;
                agent.authenticate(request).await
            }
        });

        let (agent, st) = (Arc::clone(&self.agent), Arc::clone(&state));
        let router = router.method(names.session_new, move |request: NewSessionRequest| {
            let (agent, state) = (Arc::clone(&agent), Arc::clone(&st));
            async move {
                state.caps()?;
                agent.new_session(request).await
            }
        });

        let (agent, st, timeout) = (
            Arc::clone(&self.agent),
            Arc::clone(&state),
            self.options.request_timeout,
        );
        let router = router.method_with_context(
            names.session_load,
            move |ctx: Context, request: LoadSessionRequest| {
                let (agent, state) = (Arc::clone(&agent), Arc::clone(&st));
                async move {
                    let session = SessionHandle {
                        session_id: request.session_id.clone(),
                        peer: ctx.peer().clone(),
                        caps: state.caps()?,
                        turn_cancel: CancellationToken::new(),
                        request: Some(ctx),
                        timeout,
                    };
                    agent.load_session(session, request).await
                }
            },
        );

        let (agent, st, options) = (
            Arc::clone(&self.agent),
            Arc::clone(&state),
            self.options.clone(),
        );
        let router = router.method_with_context(
            names.session_prompt,
            move |ctx: Context, request: PromptRequest| {
                let (agent, state, options) =
                    (Arc::clone(&agent), Arc::clone(&st), options.clone());
                async move { run_turn(agent.as_ref(), &state, &options, ctx, request).await }
            },
        );

        let st = Arc::clone(&state);
        router.notification(names.session_cancel, move |note: CancelNotification| {
            let turn = st
                .turns
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(&note.session_id)
                .cloned();
            match turn {
                Some(token) => token.cancel(),
                None => tracing::debug!(session = %note.session_id, "session/cancel: no turn runs"),
            }
            std::future::ready(())
        })
    }
}

/// One `session/prompt`: registers the turn (one at a time per session), runs the agent's
/// method, and answers as ACP says after a cancellation.
async fn run_turn<A: Agent>(
    agent: &A,
    state: &ConnState,
    options: &AcpOptions,
    ctx: Context,
    request: PromptRequest,
) -> Result<PromptResponse, RpcError> {
    let caps = state.caps()?;
    let token = CancellationToken::new();
    {
        let mut turns = state.turns.lock().unwrap_or_else(PoisonError::into_inner);
        if turns.contains_key(&request.session_id) {
            return Err(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "a prompt turn is already running in this session",
            ));
        }
        turns.insert(request.session_id.clone(), token.clone());
    }
    let _guard = TurnGuard {
        state,
        session: request.session_id.clone(),
    };
    let session = SessionHandle {
        session_id: request.session_id.clone(),
        peer: ctx.peer().clone(),
        caps,
        turn_cancel: token.clone(),
        request: Some(ctx.clone()),
        timeout: options.request_timeout,
    };
    let watch = session.clone();
    let work = agent.prompt(session, request);
    tokio::pin!(work);
    let outcome = tokio::select! {
        outcome = &mut work => Some(outcome),
        () = watch.cancelled() => {
            // The agent's code sees the cancellation too: give it a moment to wind down and
            // send its last updates, then drop it (which stops it) and answer anyway.
            match tokio::time::timeout(options.cancel_grace, &mut work).await {
                Ok(outcome) => Some(outcome),
                Err(_) => {
                    tracing::warn!(grace = ?options.cancel_grace, "prompt turn ignored its cancellation: dropped");
                    None
                }
            }
        }
    };
    if ctx.is_cancelled() {
        return Err(request_cancelled());
    }
    if token.is_cancelled() {
        // ACP: a cancelled turn answers `cancelled`, even when the work ended in an error
        // (an aborted call into the client, say).
        return Ok(PromptResponse::new(StopReason::Cancelled));
    }
    match outcome {
        Some(Ok(stop)) => Ok(PromptResponse::new(stop)),
        Some(Err(e)) => Err(e),
        None => Ok(PromptResponse::new(StopReason::Cancelled)),
    }
}
