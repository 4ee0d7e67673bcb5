//! The [Agent Client Protocol](https://agentclientprotocol.com) (ACP) as a profile over
//! rpcwire: how code editors and coding agents talk over the agent's stdin and stdout, one
//! compact JSON-RPC message per line, in both directions at once.
//!
//! - **Agent side**: implement [`Agent`] (async `initialize`, `new_session`, `prompt`, and
//!   any other method of the stable v1 surface: `authenticate`, `logout`, `load_session`,
//!   `resume_session`, `list_sessions`, `set_session_mode`, `set_session_config_option`,
//!   `close_session`, `delete_session`, extensions; each defaults to Method not found) and
//!   serve it with [`AgentServer`]. MCP servers the client gives are connected for the
//!   session (feature `mcp`, [`SessionHandle::mcp`]). Inside a
//!   prompt turn a [`SessionHandle`] streams `session/update` notifications and calls the
//!   client back as plain awaits (`request_permission`, `read_text_file`, `write_text_file`,
//!   terminals, `elicit`); `session/cancel` shows up as [`SessionHandle::cancelled`] and the turn is
//!   answered `stopReason: "cancelled"`; a request cancelled by `$/cancel_request` is answered
//!   -32800.
//! - **Client side** (an editor): [`AcpClient`] spawns an agent, initializes it, calls every
//!   agent method and runs prompt turns as a stream of [`TurnEvent`]s; [`ClientHandlers`]
//!   answer the agent's permission, file, terminal ([`LocalTerminals`]) and elicitation
//!   requests.
//!
//! The message types are the official ones, from the `agent-client-protocol-schema` crate,
//! re-exported as [`schema`] (protocol version 1). Every protocol rule below ACP (framing,
//! validation, id correlation, the size limit, cancellation) is rpcwire's core.
//!
//! ```
//! use rpcwire_acp::schema::{
//!     ContentBlock, InitializeRequest, InitializeResponse, NewSessionRequest,
//!     NewSessionResponse, PromptRequest, StopReason,
//! };
//! use rpcwire_acp::{AcpClient, Agent, AgentServer, ClientHandlers, ClientOptions, RpcError, SessionHandle, TurnEvent};
//!
//! struct Shout;
//!
//! impl Agent for Shout {
//!     async fn initialize(&self, r: InitializeRequest) -> Result<InitializeResponse, RpcError> {
//!         Ok(InitializeResponse::new(r.protocol_version))
//!     }
//!     async fn new_session(&self, _: NewSessionRequest) -> Result<NewSessionResponse, RpcError> {
//!         Ok(NewSessionResponse::new("only"))
//!     }
//!     async fn prompt(&self, s: SessionHandle, r: PromptRequest) -> Result<StopReason, RpcError> {
//!         for block in r.prompt {
//!             if let ContentBlock::Text(t) = block {
//!                 s.message(t.text.to_uppercase()).await?;
//!             }
//!         }
//!         Ok(StopReason::EndTurn)
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! // Any byte stream: an in-memory pipe here, the agent's stdio in real life.
//! let (agent_io, client_io) = tokio::io::duplex(64 << 10);
//! let _agent = AgentServer::new(Shout).builder().run_io(agent_io);
//! let client = AcpClient::connect(ClientOptions::default(), ClientHandlers::new(), |b| {
//!     b.run_io(client_io)
//! })
//! .await?;
//! let session = client.new_session(NewSessionRequest::new("/")).await?;
//! let prompt = PromptRequest::new(session.session_id, vec![ContentBlock::from("hi")]);
//! let mut turn = client.prompt(prompt).await?;
//! let mut events = Vec::new();
//! while let Some(event) = turn.next().await {
//!     events.push(event?);
//! }
//! assert!(matches!(&events[1], TurnEvent::Stopped(r) if r.stop_reason == StopReason::EndTurn));
//! # Ok(()) }
//! ```
//!
//! Logs go through `tracing`; an agent must send them to stderr (stdout is the wire), quiet and
//! without colour codes, for example with
//! `tracing_subscriber::fmt().with_writer(std::io::stderr).with_ansi(false)`.

mod agent;
mod client;
// The README's examples compile as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExamples;
mod error;
mod handlers;
#[cfg(feature = "mcp")]
pub mod mcp;
mod options;
mod server;
mod sessions;
mod terminals;
mod turn;

/// The official ACP message types (`agent-client-protocol-schema`, protocol version 1).
pub mod schema {
    pub use agent_client_protocol_schema::v1::*;
    pub use agent_client_protocol_schema::ProtocolVersion;
}

pub use agent::{negotiate, Agent};
pub use client::{AcpClient, ClientOptions, PromptTurn, TurnEvent};
pub use error::{request_cancelled, AcpError};
pub use handlers::ClientHandlers;
pub use options::{AcpOptions, CANCEL_REQUEST, REQUEST_CANCELLED};
pub use rpcwire_tokio::{CallError, DriverError, ErrorCode, RpcError};
pub use server::AgentServer;
pub use terminals::{LocalTerminals, Terminals, DEFAULT_MAX_TERMINALS, DEFAULT_OUTPUT_LIMIT};
pub use turn::{SessionHandle, Terminal};
