//! What an agent's connection keeps: the client's capabilities, the running prompt turns, and
//! (feature `mcp`) each session's connected MCP servers; and the [`SessionHandle`]s made from
//! them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use agent_client_protocol_schema::v1::{ClientCapabilities, SessionId};
use rpcwire_tokio::{Context, ErrorCode, RpcError};
use tokio_util::sync::CancellationToken;

#[cfg(feature = "mcp")]
use crate::mcp::McpServers;
use crate::SessionHandle;

/// What one connection knows.
#[derive(Default)]
pub(crate) struct ConnState {
    caps: Mutex<Option<Arc<ClientCapabilities>>>,
    turns: Mutex<HashMap<SessionId, CancellationToken>>,
    #[cfg(feature = "mcp")]
    mcp: Mutex<HashMap<SessionId, Arc<McpServers>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl ConnState {
    /// Keeps the client's capabilities (`initialize`).
    pub(crate) fn initialized(&self, caps: ClientCapabilities) {
        *lock(&self.caps) = Some(Arc::new(caps));
    }

    /// The client's capabilities; an error before `initialize`.
    pub(crate) fn caps(&self) -> Result<Arc<ClientCapabilities>, RpcError> {
        lock(&self.caps).clone().ok_or_else(|| {
            RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "the connection is not initialized",
            )
        })
    }

    /// Registers a turn of `session` (one at a time per session): its cancellation, and a
    /// guard that removes it when the turn ends, however it ends.
    pub(crate) fn start_turn(
        &self,
        session: &SessionId,
    ) -> Result<(CancellationToken, TurnGuard<'_>), RpcError> {
        let mut turns = lock(&self.turns);
        if turns.contains_key(session) {
            return Err(RpcError::new(
                ErrorCode::INVALID_REQUEST,
                "a prompt turn is already running in this session",
            ));
        }
        let token = CancellationToken::new();
        turns.insert(session.clone(), token.clone());
        let guard = TurnGuard {
            state: self,
            session: session.clone(),
        };
        Ok((token, guard))
    }

    /// Cancels the running turn of `session`, if any (`session/cancel`, `session/close`).
    pub(crate) fn cancel_turn(&self, session: &SessionId) -> bool {
        let token = lock(&self.turns).get(session).cloned();
        token.map(|t| t.cancel()).is_some()
    }

    /// Keeps the MCP servers connected for `session` (replacing, and so disconnecting, any it
    /// had).
    #[cfg(feature = "mcp")]
    pub(crate) fn keep_mcp(&self, session: SessionId, servers: McpServers) {
        lock(&self.mcp).insert(session, Arc::new(servers));
    }

    /// Ends what the connection holds for `session`: its turn is cancelled and its MCP
    /// servers disconnected (once the handles of running calls let go of them).
    pub(crate) fn end_session(&self, session: &SessionId) {
        self.cancel_turn(session);
        #[cfg(feature = "mcp")]
        lock(&self.mcp).remove(session);
    }

    /// A handle on `session` for a request being handled (`ctx`), cancelled by
    /// `turn_cancel` (a fresh token when the request is not a turn).
    pub(crate) fn handle(
        &self,
        session: SessionId,
        ctx: &Context,
        turn_cancel: CancellationToken,
        timeout: Duration,
    ) -> Result<SessionHandle, RpcError> {
        let caps = self.caps()?;
        #[cfg(feature = "mcp")]
        let mcp = lock(&self.mcp).get(&session).cloned().unwrap_or_default();
        Ok(SessionHandle {
            session_id: session,
            peer: ctx.peer().clone(),
            caps,
            turn_cancel,
            request: Some(ctx.clone()),
            timeout,
            #[cfg(feature = "mcp")]
            mcp,
        })
    }
}

/// Removes a turn from the table when it ends, however it ends.
pub(crate) struct TurnGuard<'a> {
    state: &'a ConnState,
    session: SessionId,
}

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        lock(&self.state.turns).remove(&self.session);
    }
}
