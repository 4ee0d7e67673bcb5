//! What an MCP client is told ([`ClientOptions`]) and how its operations fail ([`McpError`]):
//! apart from the client so that its wire helpers can use them without importing the client.

use std::prelude::rust_2021::*;

use std::time::Duration;

use rpcwire_tokio::{CallError, RpcError};

use super::client_handlers::ClientHandlers;
use crate::ProtocolVersion;

/// Who the client says it is, and what it asks for.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `clientInfo.name`.
    pub name: String,
    /// `clientInfo.version`.
    pub version: String,
    /// The revision asked for (default: the latest).
    pub protocol_version: ProtocolVersion,
    /// The timeout of each request (default: the connection's, 30 s). A long tool call
    /// needs more.
    pub timeout: Option<Duration>,
    /// Speak 2026-07-28 (default false: a session revision, `protocol_version`): no
    /// `initialize` but `server/discover`, the revision, capabilities and `clientInfo` in each
    /// request's `_meta`, and `InputRequiredResult` rounds answered by `handlers`.
    /// [`McpHttpClientBuilder::mode`](crate::http::McpHttpClientBuilder::mode) sets it.
    pub stateless: bool,
    /// The answers to the server's elicitation, sampling and roots requests (their
    /// capabilities are declared from them).
    pub handlers: ClientHandlers,
    /// The most `InputRequiredResult` rounds one request goes through (default 8).
    pub max_input_rounds: usize,
    /// The most input requests one `InputRequiredResult` may hold (default 16).
    pub max_input_requests: usize,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            name: "rpcwire-mcp".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            protocol_version: ProtocolVersion::LATEST,
            timeout: None,
            stateless: false,
            handlers: ClientHandlers::default(),
            max_input_rounds: 8,
            max_input_requests: 16,
        }
    }
}

/// Why an MCP client operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The request failed: the server's JSON-RPC error, a timeout, the connection's end.
    #[error(transparent)]
    Call(#[from] CallError),
    /// The server answered `initialize` with a revision this crate does not speak.
    #[error("the server chose protocol version {0:?}, which this client does not speak")]
    UnsupportedVersion(String),
    /// The server process could not be started.
    #[error("cannot start the server: {0}")]
    Spawn(#[source] std::io::Error),
    /// A result did not have MCP's shape.
    #[error("cannot decode the {what} result: {source}")]
    Decode {
        /// Which result.
        what: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// The call was cancelled ([`RunningCall::cancel`](super::RunningCall::cancel)).
    #[error("the call was cancelled")]
    Cancelled,
    /// A handler could not answer an input request of an `InputRequiredResult`.
    #[error("cannot answer the server's input request: {0}")]
    Input(#[source] RpcError),
    /// An `InputRequiredResult` was not of the revision's shape or over the limit.
    #[error("bad InputRequiredResult: {0}")]
    BadInputRequest(&'static str),
    /// The server asked for input more times than the limit
    /// ([`ClientOptions::max_input_rounds`]).
    #[error("the server asked for input more than {0} times")]
    TooManyRounds(usize),
}

impl McpError {
    /// The server's JSON-RPC error, if that is what this is.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            McpError::Call(e) => e.rpc(),
            _ => None,
        }
    }
}
