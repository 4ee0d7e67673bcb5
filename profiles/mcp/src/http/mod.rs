//! MCP Streamable HTTP (feature `http`): an [`McpServer`](crate::tokio::McpServer) (or
//! any MCP [`Router`](rpcwire_tokio::Router)) served at one HTTP endpoint, in the two shapes
//! in use:
//!
//! - [`Mode::Sessions`], the session revision (2025-03-26 to 2025-11-25): `initialize` creates
//!   a session whose id (`Mcp-Session-Id`, with a server-chosen prefix a load balancer can
//!   route on) every later request carries; `MCP-Protocol-Version` checked; a GET stream per
//!   session with event ids and `Last-Event-ID` resumption; request streams with event ids
//!   that outlive a disconnect and resume on a GET (SSE polling, [`CLOSE_STREAM`]); DELETE
//!   ends the session; an unknown or ended session gets 404; sessions are bounded in number
//!   and end when idle.
//! - [`Mode::Stateless`], the stateless revision (2026-07-28): no sessions; every request POST
//!   names its revision, method and target in `MCP-Protocol-Version`, `Mcp-Method` and
//!   `Mcp-Name`, checked against the body (400 with [`HEADER_MISMATCH`] or
//!   [`UNSUPPORTED_PROTOCOL_VERSION`], answering the request's id); a method the server does
//!   not have gets 404; closing a request's stream cancels it; GET and DELETE get 405.
//!
//! In both, each POST body is answered by the service's
//! [`Responder`](rpcwire_service::Responder) (as the plain HTTP server's are): one of a small
//! pool of core connections with the service's one dispatcher, in the POST's own task, so
//! that authentication, access rules, rate limits, spans and error hygiene hold as on every
//! other transport. Whatever a handler sends before its answer (progress, log messages, and
//! requests to the client such as `sampling/createMessage` or `elicitation/create`) goes out
//! on that POST's event stream; the client's answers to those requests, and its
//! cancellations, POSTed separately, are routed back to the exchange that runs the request
//! ([`Exchange::input`](rpcwire_service::Exchange::input)). A session's GET stream has a
//! connection of its own (its server-initiated messages, numbered for resumption). `Host`
//! and `Origin` are checked (DNS-rebinding protection; loopback names by default).
//!
//! `https://` for the client is feature `tls`; a server serves TLS connections you accept
//! yourself with [`serve_connection`].
//!
//! The module is built from the service's `Responder` and `rpcwire-http`'s building blocks
//! ([`rpcwire_http::profile`]: reading a POST, the event hub and the resumable streams, the
//! `Host` / `Origin` check, the serve loop), so the transport knows nothing of MCP; the
//! session table is MCP's own. The feature is off by default, so that the crate stays free
//! of hyper for its no_std users.
//!
//! The modules: `settings` ([`McpHttpServer`] and `build`), `server` ([`McpService`], what
//! every request goes through, GET and DELETE, the serve loops), `post` (a POST read,
//! checked and answered), `exchange` (one POST's exchange with MCP's additions), `routes`
//! (answers and cancellations routed to the exchange they name), `session` and
//! `session_table` (what a session keeps; the bounded table), [`store`] (sessions, event logs
//! and forwarded answers shared by replicas: [`McpHttpServer::store`]), `shared_stream` (a
//! request stream through the shared log), `stateless` (the 2026-07-28 headers), `posted` (a body sorted by the core's parser), `replies` (answers that carry
//! JSON-RPC), `wire` (the shared names), `auth` (OAuth resource server), `client`.
//!
//! ```
//! use rpcwire_mcp::http::{McpHttpServer, McpHttpClient};
//! use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = McpServer::new("demo", "1.0").tool_with_schema(
//!     "hello",
//!     "Greets.",
//!     serde_json::json!({"type": "object"}),
//!     |_ctx: ToolContext, _: serde_json::Value| async move { Ok::<_, ToolError>("hello") },
//! );
//! let service = McpHttpServer::new(tools).session_prefix("a").build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/mcp", listener.local_addr()?);
//! tokio::spawn(rpcwire_mcp::http::serve(listener, service));
//!
//! let client = McpHttpClient::connect(&url).await?;
//! assert!(client.session_id().is_some_and(|id| id.starts_with("a-")));
//! assert_eq!(client.mcp().call_tool("hello", serde_json::json!({})).await?.joined_text(), "hello");
//! client.close().await?;
//! # Ok(()) }
//! ```

#![allow(clippy::indexing_slicing)] // std-only code: JSON values are indexed by key

mod auth;
mod client;
mod exchange;
#[cfg(feature = "oauth")]
mod oauth;
mod post;
mod posted;
mod replies;
mod routes;
mod server;
mod session;
mod session_table;
mod settings;
mod shared_stream;
mod stateless;
pub mod store;
mod wire;

/// The `Host` / `Origin` policy ([`McpHttpServer::hosts`]) and the protocol of a connection
/// handed to [`serve_connection`], as `rpcwire-http` defines them.
pub use rpcwire_http::{HostPolicy, Protocol};

pub use auth::{ProtectedResource, METADATA_PATH};
pub use client::{McpHttpClient, McpHttpClientBuilder, McpHttpError, DEFAULT_MAX_TOOLS};
#[cfg(feature = "oauth-jwt")]
pub use oauth::ClientAssertion;
#[cfg(feature = "oauth")]
pub use oauth::{
    Authorizer, EnterpriseGrant, OAuth, OAuthConfig, OAuthError, DEFAULT_MAX_RESPONSE,
};
#[cfg(feature = "tls")]
pub use server::serve_tls;
pub use server::{serve, serve_connection, McpService};
pub use settings::McpHttpServer;
pub(crate) use stateless::param_header;
pub use stateless::{HEADER_MISMATCH, UNSUPPORTED_PROTOCOL_VERSION};
pub use wire::{
    Mode, CLOSE_STREAM, HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID,
    STATELESS_VERSION,
};
