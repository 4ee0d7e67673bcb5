//! What an agent's code holds during a prompt turn: a handle on its session to stream
//! updates, call the client (permission, files, terminals) and see a cancellation.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol_schema::v1::{
    ClientCapabilities, CompleteElicitationNotification, ContentBlock, ContentChunk,
    CreateElicitationRequest, CreateElicitationResponse, CreateTerminalRequest,
    CreateTerminalResponse, ElicitationId, KillTerminalRequest, PermissionOption,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, RequestPermissionOutcome,
    RequestPermissionRequest, RequestPermissionResponse, SessionId, SessionNotification,
    SessionUpdate, TerminalExitStatus, TerminalId, TerminalOutputRequest, TerminalOutputResponse,
    ToolCallUpdate, WaitForTerminalExitRequest, WriteTextFileRequest, CLIENT_METHOD_NAMES,
};
use rpcwire_tokio::{Client, Context};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

#[cfg(feature = "mcp")]
use crate::mcp::McpServers;
use crate::AcpError;

/// A session seen from the agent's code while it handles a request for it (`session/prompt`,
/// `session/load`): stream `session/update` notifications, call the client back (each a plain
/// await on the same connection), and learn of a cancellation.
///
/// Cheap to clone; clones share the cancellation.
#[derive(Clone)]
pub struct SessionHandle {
    pub(crate) session_id: SessionId,
    pub(crate) peer: Client,
    pub(crate) caps: Arc<ClientCapabilities>,
    /// Fired by `session/cancel` for this session.
    pub(crate) turn_cancel: CancellationToken,
    /// The request being handled (its `$/cancel_request` signal).
    pub(crate) request: Option<Context>,
    pub(crate) timeout: Duration,
    /// The session's connected MCP servers.
    #[cfg(feature = "mcp")]
    pub(crate) mcp: Arc<McpServers>,
}

impl fmt::Debug for SessionHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SessionHandle")
            .field("session_id", &self.session_id)
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}

impl SessionHandle {
    /// The session's id.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// What the client said it offers in `initialize` (`fs.readTextFile`, `terminal`, ...).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.caps
    }

    /// The JSON-RPC client on the connection, for requests this type has no method for.
    pub fn peer(&self) -> &Client {
        &self.peer
    }

    /// The MCP servers the client gave for this session (`session/new`, `session/load`,
    /// `session/resume`), connected, with their tools (feature `mcp`); empty when it gave
    /// none, or when [`AcpOptions::connect_mcp_servers`](crate::AcpOptions::connect_mcp_servers)
    /// is off.
    #[cfg(feature = "mcp")]
    pub fn mcp(&self) -> &McpServers {
        &self.mcp
    }

    /// True once the turn is cancelled: by `session/cancel` for this session, or by
    /// `$/cancel_request` for the request being handled.
    pub fn is_cancelled(&self) -> bool {
        self.turn_cancel.is_cancelled() || self.request.as_ref().is_some_and(Context::is_cancelled)
    }

    /// Completes when the turn is cancelled (see [`is_cancelled`](Self::is_cancelled)); race
    /// the work against it with `tokio::select!` and return
    /// [`StopReason::Cancelled`](agent_client_protocol_schema::v1::StopReason::Cancelled).
    pub async fn cancelled(&self) {
        match &self.request {
            Some(ctx) => tokio::select! {
                () = self.turn_cancel.cancelled() => {}
                () = ctx.cancelled() => {}
            },
            None => self.turn_cancel.cancelled().await,
        }
    }

    /// Sends one `session/update` notification.
    pub async fn update(&self, update: SessionUpdate) -> Result<(), AcpError> {
        let note = SessionNotification::new(self.session_id.clone(), update);
        self.peer
            .notify(CLIENT_METHOD_NAMES.session_update, note)
            .await?;
        Ok(())
    }

    /// Streams a chunk of the agent's answer (an `agent_message_chunk` update).
    pub async fn message(&self, text: impl Into<String>) -> Result<(), AcpError> {
        let chunk = ContentChunk::new(ContentBlock::from(text.into()));
        self.update(SessionUpdate::AgentMessageChunk(chunk)).await
    }

    /// Asks the user to allow a tool call (`session/request_permission`). Waits for the answer
    /// however long the user takes; the outcome is `Cancelled` when the turn was cancelled.
    pub async fn request_permission(
        &self,
        tool_call: ToolCallUpdate,
        options: Vec<PermissionOption>,
    ) -> Result<RequestPermissionOutcome, AcpError> {
        let request = RequestPermissionRequest::new(self.session_id.clone(), tool_call, options);
        let call = self.peer.call::<_, RequestPermissionResponse>(
            CLIENT_METHOD_NAMES.session_request_permission,
            request,
        );
        // A cancelled turn answers the pending permission request itself: the client is told
        // with `$/cancel_request` when the call's future is dropped here.
        tokio::select! {
            answer = call => Ok(answer?.outcome),
            () = self.cancelled() => Ok(RequestPermissionOutcome::Cancelled),
        }
    }

    /// Reads a text file through the client (`fs/read_text_file`: the editor's buffer, unsaved
    /// changes included). Fails with [`AcpError::NotOffered`] when the client did not offer it.
    pub async fn read_text_file(&self, path: impl Into<PathBuf>) -> Result<String, AcpError> {
        self.read_text_file_with(ReadTextFileRequest::new(self.session_id.clone(), path))
            .await
    }

    /// Like [`read_text_file`](Self::read_text_file) with a full request (`line`, `limit`).
    pub async fn read_text_file_with(
        &self,
        request: ReadTextFileRequest,
    ) -> Result<String, AcpError> {
        if !self.caps.fs.read_text_file {
            return Err(AcpError::NotOffered("fs.readTextFile"));
        }
        let answer: ReadTextFileResponse = self
            .short_call(CLIENT_METHOD_NAMES.fs_read_text_file, request)
            .await?;
        Ok(answer.content)
    }

    /// Writes a text file through the client (`fs/write_text_file`). Fails with
    /// [`AcpError::NotOffered`] when the client did not offer it.
    pub async fn write_text_file(
        &self,
        path: impl Into<PathBuf>,
        content: impl Into<String>,
    ) -> Result<(), AcpError> {
        if !self.caps.fs.write_text_file {
            return Err(AcpError::NotOffered("fs.writeTextFile"));
        }
        let request = WriteTextFileRequest::new(self.session_id.clone(), path, content);
        let _: serde_json::Value = self
            .short_call(CLIENT_METHOD_NAMES.fs_write_text_file, request)
            .await?;
        Ok(())
    }

    /// Asks the user for information (`elicitation/create`): a form (`ElicitationFormMode`
    /// with a schema) or a URL to visit. Waits for the answer however long the user takes;
    /// fails with [`AcpError::NotOffered`] when the client did not offer elicitation, and is
    /// answered `cancel` when the turn is cancelled meanwhile.
    pub async fn elicit(
        &self,
        request: CreateElicitationRequest,
    ) -> Result<CreateElicitationResponse, AcpError> {
        if self.caps.elicitation.is_none() {
            return Err(AcpError::NotOffered("elicitation"));
        }
        let call = self
            .peer
            .call::<_, CreateElicitationResponse>(CLIENT_METHOD_NAMES.elicitation_create, request);
        tokio::select! {
            answer = call => Ok(answer?),
            () = self.cancelled() => Ok(CreateElicitationResponse::new(
                agent_client_protocol_schema::v1::ElicitationAction::Cancel,
            )),
        }
    }

    /// Tells the client a URL elicitation is complete (`elicitation/complete`).
    pub async fn complete_elicitation(&self, id: ElicitationId) -> Result<(), AcpError> {
        let note = CompleteElicitationNotification::new(id);
        self.peer
            .notify(CLIENT_METHOD_NAMES.elicitation_complete, note)
            .await?;
        Ok(())
    }

    /// Runs a command in a terminal of the client's (`terminal/create`). Fails with
    /// [`AcpError::NotOffered`] when the client did not offer terminals.
    pub async fn create_terminal(
        &self,
        command: impl Into<String>,
        args: Vec<String>,
    ) -> Result<Terminal, AcpError> {
        let mut request = CreateTerminalRequest::new(self.session_id.clone(), command);
        request.args = args;
        self.create_terminal_with(request).await
    }

    /// Like [`create_terminal`](Self::create_terminal) with a full request (`cwd`, `env`,
    /// `outputByteLimit`).
    pub async fn create_terminal_with(
        &self,
        request: CreateTerminalRequest,
    ) -> Result<Terminal, AcpError> {
        if !self.caps.terminal {
            return Err(AcpError::NotOffered("terminal"));
        }
        let created: CreateTerminalResponse = self
            .short_call(CLIENT_METHOD_NAMES.terminal_create, request)
            .await?;
        Ok(Terminal {
            session: self.clone(),
            id: created.terminal_id,
        })
    }

    async fn short_call<P: Serialize, R: DeserializeOwned>(
        &self,
        method: &str,
        params: P,
    ) -> Result<R, AcpError> {
        Ok(self
            .peer
            .call_with_timeout(method, params, self.timeout)
            .await?)
    }
}

/// A terminal the client runs for the agent (`terminal/*`). Release it when done
/// ([`release`](Terminal::release)); the client may keep it until then.
#[derive(Debug)]
pub struct Terminal {
    session: SessionHandle,
    id: TerminalId,
}

impl Terminal {
    /// The terminal's id (to embed it in a tool call's content).
    pub fn id(&self) -> &TerminalId {
        &self.id
    }

    /// The output so far (`terminal/output`).
    pub async fn output(&self) -> Result<TerminalOutputResponse, AcpError> {
        let request = TerminalOutputRequest::new(self.session.session_id.clone(), self.id.clone());
        self.session
            .short_call(CLIENT_METHOD_NAMES.terminal_output, request)
            .await
    }

    /// Waits for the command to exit (`terminal/wait_for_exit`); no timeout of its own: race it
    /// against [`SessionHandle::cancelled`] or a timer and [`kill`](Terminal::kill).
    pub async fn wait_for_exit(&self) -> Result<TerminalExitStatus, AcpError> {
        let request =
            WaitForTerminalExitRequest::new(self.session.session_id.clone(), self.id.clone());
        let status: TerminalExitStatus = self
            .session
            .peer
            .call(CLIENT_METHOD_NAMES.terminal_wait_for_exit, request)
            .await?;
        Ok(status)
    }

    /// Kills the command, keeping the terminal (`terminal/kill`).
    pub async fn kill(&self) -> Result<(), AcpError> {
        let request = KillTerminalRequest::new(self.session.session_id.clone(), self.id.clone());
        let _: serde_json::Value = self
            .session
            .short_call(CLIENT_METHOD_NAMES.terminal_kill, request)
            .await?;
        Ok(())
    }

    /// Releases the terminal (`terminal/release`), killing the command if it still runs.
    pub async fn release(self) -> Result<(), AcpError> {
        let request = ReleaseTerminalRequest::new(self.session.session_id.clone(), self.id.clone());
        let _: serde_json::Value = self
            .session
            .short_call(CLIENT_METHOD_NAMES.terminal_release, request)
            .await?;
        Ok(())
    }
}
