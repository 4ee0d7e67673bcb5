//! The agent side's contract: an [`Agent`] trait whose async methods answer the client's
//! requests, one per method of ACP's stable v1 surface, each but the essential three with a
//! default answer. [`AgentServer`](crate::AgentServer) serves it.

use std::future::Future;

use agent_client_protocol_schema::v1::{
    AuthenticateRequest, AuthenticateResponse, CloseSessionRequest, CloseSessionResponse,
    DeleteSessionRequest, DeleteSessionResponse, InitializeRequest, InitializeResponse,
    ListSessionsRequest, ListSessionsResponse, LoadSessionRequest, LoadSessionResponse,
    LogoutRequest, LogoutResponse, NewSessionRequest, NewSessionResponse, PromptRequest,
    ResumeSessionRequest, ResumeSessionResponse, SetSessionConfigOptionRequest,
    SetSessionConfigOptionResponse, SetSessionModeRequest, SetSessionModeResponse, StopReason,
};
use agent_client_protocol_schema::ProtocolVersion;
use rpcwire_tokio::{ErrorCode, RpcError};
use serde_json::Value;

use crate::SessionHandle;

/// The default answer of a method an agent does not implement (and does not advertise).
async fn not_offered<T>() -> Result<T, RpcError> {
    Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND))
}

/// An ACP agent: what it answers to each of the client's requests. Implement the methods with
/// `async fn`; each call runs in its own task, so a long prompt turn never holds up the others.
/// The agent is shared by every call (`&self`): keep its sessions, modes and settings inside
/// it (behind a `Mutex`), and every method sees them.
///
/// `initialize`, `session/new` and `session/prompt` are required; every other method of ACP's
/// stable v1 surface has a default answer, Method not found (-32601), which is right for an
/// agent that does not advertise it (`loadSession`, `sessionCapabilities.list`, modes, ...).
/// Extension methods (names starting with `_`) reach [`ext_method`](Agent::ext_method) and
/// [`ext_notification`](Agent::ext_notification).
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
        not_offered()
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
        not_offered()
    }

    /// `session/prompt`: one turn, streaming updates through `session`, until a stop reason.
    fn prompt(
        &self,
        session: SessionHandle,
        request: PromptRequest,
    ) -> impl Future<Output = Result<StopReason, RpcError>> + Send;

    /// `session/set_mode` (default: Method not found, for agents that offer no modes in
    /// `session/new`). Announce a change the agent makes itself with a `current_mode_update`
    /// through `session`.
    fn set_session_mode(
        &self,
        session: SessionHandle,
        request: SetSessionModeRequest,
    ) -> impl Future<Output = Result<SetSessionModeResponse, RpcError>> + Send {
        let _ = (session, request);
        not_offered()
    }

    /// `session/set_config_option` (default: Method not found, for agents that offer no
    /// config options). The answer holds every option with its current value.
    fn set_session_config_option(
        &self,
        session: SessionHandle,
        request: SetSessionConfigOptionRequest,
    ) -> impl Future<Output = Result<SetSessionConfigOptionResponse, RpcError>> + Send {
        let _ = (session, request);
        not_offered()
    }

    /// `session/list` (default: Method not found, for agents without
    /// `sessionCapabilities.list`).
    fn list_sessions(
        &self,
        request: ListSessionsRequest,
    ) -> impl Future<Output = Result<ListSessionsResponse, RpcError>> + Send {
        let _ = request;
        not_offered()
    }

    /// `session/resume`: take a session up again without replaying it (default: Method not
    /// found, for agents without `sessionCapabilities.resume`). The MCP servers the request
    /// gives are connected for the session as for `session/new`.
    fn resume_session(
        &self,
        session: SessionHandle,
        request: ResumeSessionRequest,
    ) -> impl Future<Output = Result<ResumeSessionResponse, RpcError>> + Send {
        let _ = (session, request);
        not_offered()
    }

    /// `session/close`: the client is done with the session for now (default: Method not
    /// found). The server has already cancelled its running turn and disconnected its MCP
    /// servers when this is called.
    fn close_session(
        &self,
        request: CloseSessionRequest,
    ) -> impl Future<Output = Result<CloseSessionResponse, RpcError>> + Send {
        let _ = request;
        not_offered()
    }

    /// `session/delete`: forget the session (default: Method not found, for agents without
    /// `sessionCapabilities.delete`). As for `session/close`, its turn and MCP servers are
    /// ended first.
    fn delete_session(
        &self,
        request: DeleteSessionRequest,
    ) -> impl Future<Output = Result<DeleteSessionResponse, RpcError>> + Send {
        let _ = request;
        not_offered()
    }

    /// `logout` (default: Method not found, for agents without `auth.logout`).
    fn logout(
        &self,
        request: LogoutRequest,
    ) -> impl Future<Output = Result<LogoutResponse, RpcError>> + Send {
        let _ = request;
        not_offered()
    }

    /// A request whose method starts with `_` (an extension; `method` as sent, underscore
    /// included). Default: Method not found.
    fn ext_method(
        &self,
        method: String,
        params: Value,
    ) -> impl Future<Output = Result<Value, RpcError>> + Send {
        let _ = (method, params);
        not_offered()
    }

    /// A notification whose method starts with `_`. Default: ignored.
    fn ext_notification(&self, method: String, params: Value) -> impl Future<Output = ()> + Send {
        let _ = (method, params);
        async {}
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
