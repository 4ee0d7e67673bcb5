#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-a2a
//!
//! The A2A (Agent2Agent) protocol 1.0, JSON-RPC binding, as a profile over rpcwire: a server
//! ([`A2aServer`] → [`A2aService`], served with [`serve`]) and a client ([`A2aClient`]). The
//! server's methods are handlers on the service layer's [`Router`], served by a [`Service`]
//! through its one dispatcher (the core reads the envelopes): the caller's identity, access
//! rules, rate limits, spans and error hygiene hold for A2A as for any rpcwire service. Its
//! HTTP side is built from `rpcwire_http::profile`'s building blocks.
//!
//! - The Agent Card at [`AGENT_CARD_PATH`]; `GetExtendedAgentCard` (or -32007).
//! - `SendMessage` (a task, or a direct message), `SendStreamingMessage` and `SubscribeToTask`
//!   (answered as `text/event-stream`, each event a JSON-RPC response with the request's id
//!   carrying a task, a message, a status update or an artifact update; a message's stream
//!   ends after a final or interrupted state, a subscription's after a final one), `GetTask`
//!   (history length), `ListTasks` (every filter, cursor pages), `CancelTask`; push
//!   notifications ([`A2aServer::push_notifications`]: the four config methods, deliveries
//!   with the config's credentials, retried, to webhooks an SSRF-safe [`WebhookPolicy`]
//!   allows), or -32003 without them.
//! - What the card says, enforced: input modes (-32005), required extensions (-32008),
//!   streaming (-32004); the card served with `Cache-Control`, `ETag`, `Last-Modified` and
//!   304s. Params read under their lowerCamel and proto field names alike.
//! - The `A2A-Version` header (absent means 0.3, as the specification says; 1.x is served,
//!   anything else gets -32009); every A2A error code with its `ErrorInfo`; the 0.3 method
//!   names and shapes as an opt-in compatibility mode ([`A2aServer::compat_v03`]).
//! - An agent is a handler ([`Agent`], any `Fn(TaskContext) -> impl Future` ending with `()`
//!   or a [`TurnResult`], which may be an A2A error; [`TaskContext`] says what the request
//!   said: identity, headers, metadata, configuration, extensions) over a bounded
//!   [`TaskStore`] ([`MemoryTaskStore`] by default): states, artifacts, `input-required`
//!   turns; cancelling drops the running turn; finished tasks are evicted past a count or age.
//! - Policies: [`A2aServer::authenticator`] (every POST authenticated, the card public;
//!   [`TaskContext::identity`]), [`A2aServer::rate_limit`], access rules with
//!   [`A2aServer::map_router`] (-32040), [`A2aServer::map_service`]; each checked once per
//!   call, streaming calls included; an agent that panics answers the generic internal error.
//! - Beyond the SDKs: a streaming client that goes away does not cancel the task, and its
//!   stream is kept (bounded) so that it comes back with `SubscribeToTask` and
//!   `Last-Event-ID` and gets exactly the events it missed.
//!
//! ```
//! use rpcwire_a2a::{A2aClient, A2aServer, AgentCard, AgentInterface, TaskContext};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let base = format!("http://{}", listener.local_addr()?);
//! let card = AgentCard {
//!     name: "echo".into(),
//!     supported_interfaces: vec![AgentInterface {
//!         url: format!("{base}/"),
//!         protocol_binding: "JSONRPC".into(),
//!         protocol_version: "1.0".into(),
//!         ..AgentInterface::default()
//!     }],
//!     ..AgentCard::default()
//! };
//! let service = A2aServer::new(card, |ctx: TaskContext| async move {
//!     ctx.text_artifact("echo", ctx.text());
//!     ctx.complete(None);
//! })
//! .build();
//! tokio::spawn(rpcwire_a2a::serve(listener, service));
//!
//! let client = A2aClient::discover(&base).await?;
//! let message = rpcwire_a2a::Message::text(rpcwire_a2a::Role::User, "m1", "hello");
//! let rpcwire_a2a::SendMessageResponse::Task(task) = client.send_message(message).await? else {
//!     panic!("a task")
//! };
//! assert_eq!(task.artifacts[0].parts[0].text.as_deref(), Some("hello"));
//! # Ok(()) }
//! ```

mod agent;
mod client;
mod compat;
mod error;
mod parts;
mod push;
mod request;
mod security;
mod server;
mod store;
mod timestamp;
mod types;

pub use agent::{Agent, Chunk, IntoTurnResult, TaskContext, TaskLimits, TurnFuture, TurnResult};
pub use client::{fetch_card, A2aClient, ClientError, EventStream};
pub use error::{A2aError, ErrorKind, ERROR_DOMAIN, ERROR_INFO_TYPE};
pub use push::webhook::{WebhookError, WebhookPolicy};
pub use push::{
    AuthenticationInfo, ListPushConfigsRequest, ListPushConfigsResponse, PushConfigRequest,
    PushLimits, TaskPushNotificationConfig, NOTIFICATION_TOKEN_HEADER,
};
pub use request::TurnRequest;
/// The service layer's types the server's builder and the agent's context speak of.
pub use rpcwire_service::{Authenticator, Identity, RateLimiter, Router, Service, Shutdown};
pub use security::{
    ApiKeySecurityScheme, Described, HttpAuthSecurityScheme, OAuth2SecurityScheme,
    OpenIdConnectSecurityScheme, SecurityRequirement, SecurityScheme, StringList,
};
/// The JSON library the card's and parts' free-form members (`serde_json::Value`) are from.
pub use serde_json;
#[cfg(feature = "tls")]
pub use server::serve_tls;
pub use server::{serve, A2aServer, A2aService, EXTENSIONS_HEADER, VERSION_HEADER};
pub use store::{
    EventLog, EventLogLimits, Lease, LeaseConfig, LogWatch, LoggedEvent, MemoryEventLog,
    MemoryTaskStore, PushConfigStore, StoreError, StoreFuture, StoreLimits, TaskStore,
};
#[cfg(feature = "postgres")]
pub use store::{PostgresError, PostgresOptions, PostgresTaskStore};
#[cfg(feature = "redis")]
pub use store::{RedisError, RedisOptions, RedisTaskStore};
#[cfg(feature = "sqlite")]
pub use store::{SqliteError, SqliteTaskStore};
pub use types::*;
