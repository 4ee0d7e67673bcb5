//! [`AgentServer`]: serves an [`Agent`] on a connection (this process's stdio, as editors
//! launch agents, or any stream): every method of ACP's stable v1 surface registered with
//! the service layer's router, the connection's state kept beside it.

use std::future::Future;
use std::sync::Arc;

use agent_client_protocol_schema::v1::{
    AuthenticateRequest, CancelNotification, CloseSessionRequest, DeleteSessionRequest,
    InitializeRequest, ListSessionsRequest, LoadSessionRequest, LogoutRequest, NewSessionRequest,
    PromptRequest, PromptResponse, ResumeSessionRequest, SessionId, SetSessionConfigOptionRequest,
    SetSessionModeRequest, StopReason, AGENT_METHOD_NAMES,
};
use rpcwire_tokio::{Builder, Context, DriverError, ErrorCode, Router, RpcError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use crate::agent::{negotiate, Agent};
use crate::error::request_cancelled;
use crate::handlers::value;
use crate::sessions::ConnState;
use crate::AcpOptions;

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

/// What every handler of one connection shares.
struct Shared<A> {
    agent: Arc<A>,
    state: Arc<ConnState>,
    options: AcpOptions,
}

impl<A> Clone for Shared<A> {
    fn clone(&self) -> Self {
        Shared {
            agent: Arc::clone(&self.agent),
            state: Arc::clone(&self.state),
            options: self.options.clone(),
        }
    }
}

impl<A: Agent> Shared<A> {
    /// Registers `name`, answered by `call` once the connection is initialized.
    fn method<P, R, F, Fut>(&self, router: Router, name: &str, call: F) -> Router
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(Shared<A>, Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        let shared = self.clone();
        router.method_with_context(name, move |ctx: Context, params: P| {
            let shared = shared.clone();
            let ready = shared.state.caps().map(drop);
            let work = call(shared, ctx, params);
            async move {
                ready?;
                work.await
            }
        })
    }

    /// A handle on `session` for a request that is not a turn.
    fn handle(&self, session: &SessionId, ctx: &Context) -> Result<crate::SessionHandle, RpcError> {
        self.state.handle(
            session.clone(),
            ctx,
            CancellationToken::new(),
            self.options.request_timeout,
        )
    }

    /// A handle on a session taken up again (`session/load`, `session/resume`), with the MCP
    /// servers the request gives connected for it.
    async fn reopen(
        &self,
        session: &SessionId,
        servers: &[agent_client_protocol_schema::v1::McpServer],
        ctx: &Context,
    ) -> Result<crate::SessionHandle, RpcError> {
        #[cfg(feature = "mcp")]
        if let Some(mcp) = self.connect_mcp(servers).await {
            self.state.keep_mcp(session.clone(), mcp);
        }
        #[cfg(not(feature = "mcp"))]
        let _ = servers;
        self.handle(session, ctx)
    }

    /// Connects the MCP servers a request gives and keeps them for `session` (feature `mcp`,
    /// [`AcpOptions::connect_mcp_servers`]); the ones that fail are logged and left out.
    #[cfg(feature = "mcp")]
    async fn connect_mcp(
        &self,
        servers: &[agent_client_protocol_schema::v1::McpServer],
    ) -> Option<crate::mcp::McpServers> {
        if !self.options.connect_mcp_servers || servers.is_empty() {
            return None;
        }
        let timeout = self.options.request_timeout;
        let (connected, failed) = crate::mcp::McpServers::connect(servers, timeout).await;
        for e in failed {
            tracing::warn!(error = %e, "MCP server left out");
        }
        Some(connected)
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
    /// capabilities, the running turns and the sessions' MCP servers).
    pub fn router(&self) -> Router {
        let shared = Shared {
            agent: Arc::clone(&self.agent),
            state: Arc::new(ConnState::default()),
            options: self.options.clone(),
        };
        let names = &AGENT_METHOD_NAMES;
        let router = Router::new();

        let s = shared.clone();
        let router = router.method(names.initialize, move |request: InitializeRequest| {
            let s = s.clone();
            async move {
                let version = negotiate(request.protocol_version);
                s.state.initialized(request.client_capabilities.clone());
                let mut answer = s.agent.initialize(request).await?;
                answer.protocol_version = version;
                #[cfg(feature = "mcp")]
                if s.options.connect_mcp_servers {
                    // The server connects HTTP MCP servers for the agent.
                    answer.agent_capabilities.mcp_capabilities.http = true;
                }
                Ok(answer)
            }
        });
        let router = shared.method(
            router,
            names.authenticate,
            |s, _, r: AuthenticateRequest| async move { s.agent.authenticate(r).await },
        );
        let router = shared.method(router, names.logout, |s, _, r: LogoutRequest| async move {
            s.agent.logout(r).await
        });
        let router = shared.method(
            router,
            names.session_new,
            |s, _, r: NewSessionRequest| async move {
                #[cfg(feature = "mcp")]
                let mcp = s.connect_mcp(&r.mcp_servers).await;
                let answer = s.agent.new_session(r).await?;
                #[cfg(feature = "mcp")]
                if let Some(mcp) = mcp {
                    s.state.keep_mcp(answer.session_id.clone(), mcp);
                }
                Ok(answer)
            },
        );
        let router = shared.method(
            router,
            names.session_load,
            |s, ctx, r: LoadSessionRequest| async move {
                let session = s.reopen(&r.session_id, &r.mcp_servers, &ctx).await?;
                s.agent.load_session(session, r).await
            },
        );
        let router = shared.method(
            router,
            names.session_resume,
            |s, ctx, r: ResumeSessionRequest| async move {
                let session = s.reopen(&r.session_id, &r.mcp_servers, &ctx).await?;
                s.agent.resume_session(session, r).await
            },
        );
        let router = shared.method(
            router,
            names.session_list,
            |s, _, r: ListSessionsRequest| async move { s.agent.list_sessions(r).await },
        );
        let router = shared.method(
            router,
            names.session_set_mode,
            |s, ctx, r: SetSessionModeRequest| async move {
                let session = s.handle(&r.session_id, &ctx)?;
                s.agent.set_session_mode(session, r).await
            },
        );
        let router = shared.method(
            router,
            names.session_set_config_option,
            |s, ctx, r: SetSessionConfigOptionRequest| async move {
                let session = s.handle(&r.session_id, &ctx)?;
                s.agent.set_session_config_option(session, r).await
            },
        );
        let router = shared.method(
            router,
            names.session_close,
            |s, _, r: CloseSessionRequest| async move {
                s.state.end_session(&r.session_id);
                s.agent.close_session(r).await
            },
        );
        let router = shared.method(
            router,
            names.session_delete,
            |s, _, r: DeleteSessionRequest| async move {
                s.state.end_session(&r.session_id);
                s.agent.delete_session(r).await
            },
        );
        let router = shared.method(
            router,
            names.session_prompt,
            |s, ctx, r: PromptRequest| async move { run_turn(&s, ctx, r).await },
        );

        let s = shared.clone();
        let router = router.notification(names.session_cancel, move |note: CancelNotification| {
            if !s.state.cancel_turn(&note.session_id) {
                tracing::debug!(session = %note.session_id, "session/cancel: no turn runs");
            }
            std::future::ready(())
        });
        extensions(router, &shared)
    }
}

/// Routes the extension methods and notifications (names starting with `_`) to the agent;
/// any other unknown name is Method not found (a notification: dropped).
fn extensions<A: Agent>(router: Router, shared: &Shared<A>) -> Router {
    let s = shared.clone();
    let router = router.fallback_method(move |ctx: Context, params| {
        let s = s.clone();
        let method = ctx.method().to_owned();
        async move {
            if !method.starts_with('_') {
                return Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND));
            }
            s.state.caps()?;
            s.agent.ext_method(method, value(params)).await
        }
    });
    let s = shared.clone();
    router.fallback_notification(move |ctx: Context, params| {
        let s = s.clone();
        let method = ctx.method().to_owned();
        async move {
            if method.starts_with('_') {
                s.agent.ext_notification(method, value(params)).await;
            } else {
                tracing::debug!(%method, "unknown notification dropped");
            }
        }
    })
}

/// One `session/prompt`: registers the turn (one at a time per session), runs the agent's
/// method, and answers as ACP says after a cancellation.
async fn run_turn<A: Agent>(
    shared: &Shared<A>,
    ctx: Context,
    request: PromptRequest,
) -> Result<PromptResponse, RpcError> {
    let state = &shared.state;
    let options = &shared.options;
    let (token, _guard) = state.start_turn(&request.session_id)?;
    let session = state.handle(
        request.session_id.clone(),
        &ctx,
        token.clone(),
        options.request_timeout,
    )?;
    let watch = session.clone();
    let work = shared.agent.prompt(session, request);
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
