//! Why an ACP operation failed, and how an agent's failure becomes a JSON-RPC error.

use rpcwire_tokio::{CallError, ErrorCode, RpcError};

use crate::options::REQUEST_CANCELLED;

/// Why an ACP operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AcpError {
    /// The request failed: the peer's JSON-RPC error, a timeout, the connection's end (the
    /// peer exited), a message over the size limit.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The agent answered `initialize` with a protocol version this crate does not speak.
    #[error("the agent chose protocol version {0}, which this client does not speak")]
    UnsupportedVersion(u16),
    /// The connection failed (an I/O error on the stream).
    #[error(transparent)]
    Driver(#[from] rpcwire_tokio::DriverError),
    /// The agent process could not be started.
    #[error("cannot start the agent: {0}")]
    Spawn(#[source] std::io::Error),
    /// The peer did not advertise the capability this call needs (`fs.readTextFile`, ...).
    #[error("the client does not offer {0}")]
    NotOffered(&'static str),
    /// A prompt turn of this session is still running (ACP runs one at a time per session).
    #[error("a prompt turn is already running in session {0}")]
    TurnRunning(agent_client_protocol_schema::v1::SessionId),
    /// The prompt turn's task ended without an answer (it was aborted).
    #[error("the prompt turn was abandoned")]
    Abandoned,
}

impl AcpError {
    /// The peer's JSON-RPC error, if that is what this is.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            AcpError::Call(e) => e.rpc(),
            _ => None,
        }
    }

    /// True when the connection is gone (the peer exited or closed its side).
    pub fn is_closed(&self) -> bool {
        matches!(self, AcpError::Call(CallError::Closed))
    }
}

/// The error an agent answers a request with when it was cancelled by `$/cancel_request`.
pub fn request_cancelled() -> RpcError {
    RpcError::new(ErrorCode(REQUEST_CANCELLED), "Request cancelled")
}

/// Lets an agent's handler use `?` on calls into the client: the client's own error is passed
/// on as it is; anything else becomes an Internal error naming the cause.
impl From<AcpError> for RpcError {
    fn from(e: AcpError) -> Self {
        match e {
            AcpError::Call(CallError::Rpc(rpc)) => rpc,
            other => RpcError::internal(other),
        }
    }
}
