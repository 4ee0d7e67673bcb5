//! What every connection of a server shares ([`Shared`]: the tools, the typed surface, tasks,
//! sessions, the `requestState` seal, change announcements) and a handler's view of its call
//! ([`ToolContext`]). The handler types live here too: the shared state holds handlers, and
//! every handler takes a `ToolContext`, which holds the shared state.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire_tokio::{Client, Context, RpcError};
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::header_params::HeaderParam;
use super::input::RequestInfo;
use super::listen::{Change, Changes};
use super::request_state::RequestStateSeal;
use super::revision;
use super::surface::{
    Answer, PromptArgument, PromptMessage, ResourceContents, ResourceInfo, UriTemplate,
};
use super::tasks::{TaskSupport, Tasks};
use super::tool_result::ToolReply;
use crate::{methods, Handshake, LogLevel};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
pub(crate) type ToolFn =
    Arc<dyn Fn(ToolContext, Value) -> BoxFuture<Result<ToolReply, RpcError>> + Send + Sync>;

/// One connection's MCP state, kept only where a connection is a session (a strict
/// handshake, see [`McpServer::strict_handshake`]).
pub(crate) struct SessionState {
    pub(crate) handshake: Handshake,
    pub(crate) level: LogLevel,
    /// To forget the state once the connection has ended.
    pub(crate) client: Client,
}

/// A tool as calls find it.
#[derive(Clone)]
pub(crate) struct ToolEntry {
    pub(crate) run: ToolFn,
    /// Its parameters mirrored into headers (`x-mcp-header`).
    pub(crate) header_params: Arc<[HeaderParam]>,
    /// Whether it runs as a task (the tasks extension).
    pub(crate) task: Option<TaskSupport>,
}

/// What every connection of a server shares.
pub(crate) struct Shared {
    pub(crate) name: String,
    pub(crate) version: String,
    pub(crate) instructions: Option<String>,
    /// The `tools/list` result, built once.
    pub(crate) list: Value,
    /// Each tool's handler, its parameters mirrored into headers (`x-mcp-header`), and
    /// whether it runs as a task.
    pub(crate) tools: HashMap<String, ToolEntry>,
    /// The tasks extension's tasks.
    pub(crate) tasks: Tasks,
    /// Resources, templates, prompts, completion.
    pub(crate) surface: Surface,
    /// Capabilities declared besides `tools` and `logging`.
    pub(crate) capabilities: Vec<(String, Value)>,
    /// Each connection is one session: its handshake is checked and its state kept here.
    pub(crate) strict: bool,
    pub(crate) sessions: Mutex<HashMap<u64, SessionState>>,
    /// Seals `requestState` (none: the system has no secure random source for a key).
    pub(crate) seal: Option<RequestStateSeal>,
    /// Changes announced to `subscriptions/listen` streams.
    pub(crate) changes: Changes,
}

impl Shared {
    pub(crate) fn with_session<T>(
        &self,
        peer: &Client,
        f: impl FnOnce(&mut SessionState) -> T,
    ) -> T {
        let mut sessions = self.sessions.lock().unwrap_or_else(PoisonError::into_inner);
        if !sessions.contains_key(&peer.connection_id()) {
            // A new connection: forget those that have ended first, so that the map holds
            // at most one entry per open connection.
            sessions.retain(|_, st| !st.client.is_closed());
        }
        let state = sessions
            .entry(peer.connection_id())
            .or_insert_with(|| SessionState {
                handshake: Handshake::new(),
                level: LogLevel::Debug,
                client: peer.clone(),
            });
        f(state)
    }

    /// Refuses a request the handshake does not take yet (when strict); records the MCP
    /// attributes of the call's span first.
    /// A request of the 2026-07-28 revision (`params._meta` names it) has no handshake: it is
    /// taken on any connection, before or without `initialize`.
    pub(crate) fn admit(&self, ctx: &Context, params: &Value) -> Result<(), RpcError> {
        self.trace(ctx);
        if !self.strict || revision::is_stateless(Some(params)) {
            return Ok(());
        }
        self.with_session(ctx.peer(), |s| s.handshake.admit(ctx.method().as_bytes()))
            .map_err(|r| RpcError::new(r.code(), r.message()))
    }

    /// Records `mcp.method.name` and `mcp.protocol.version` into the call's span (see
    /// `rpcwire_telemetry`); nothing when no subscriber listens.
    pub(crate) fn trace(&self, ctx: &Context) {
        let span = tracing::Span::current();
        if span.is_disabled() {
            return;
        }
        span.record("mcp.method.name", ctx.method());
        let version = self
            .strict
            .then(|| self.with_session(ctx.peer(), |s| s.handshake.version()))
            .flatten();
        if let Some(version) = version {
            span.record("mcp.protocol.version", version.as_str());
        }
        // Streamable HTTP: each POST runs on a connection of its own; the session and the
        // revision are in its headers.
        #[cfg(feature = "http")]
        if let Some(headers) = ctx.caller().meta::<http::HeaderMap>() {
            let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
            if let Some(id) = text(crate::http::HEADER_SESSION_ID) {
                span.record("mcp.session.id", id);
            }
            if let (None, Some(v)) = (version, text(crate::http::HEADER_PROTOCOL_VERSION)) {
                span.record("mcp.protocol.version", v);
            }
        }
    }

    /// The level the client set on this connection; every level where the transport keeps
    /// the sessions (it filters log messages by its session's level).
    fn level(&self, peer: &Client) -> LogLevel {
        if !self.strict {
            return LogLevel::Debug;
        }
        self.with_session(peer, |s| s.level)
    }
}

/// A tool handler's view of its call: report progress (when the request carried a progress
/// token), log to the client (`notifications/message`, at or above the level it set), and see
/// cancellation (`notifications/cancelled`).
#[derive(Clone)]
pub struct ToolContext {
    pub(crate) ctx: Context,
    pub(crate) token: Option<Value>,
    pub(crate) last: Arc<Mutex<Option<f64>>>,
    pub(crate) shared: Arc<Shared>,
    pub(crate) info: Arc<RequestInfo>,
    /// Runs as a task, detached from its request's cancellation.
    pub(crate) detached: bool,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field("request", &self.ctx.id())
            .field("progress_token", &self.token)
            .finish()
    }
}

impl ToolContext {
    /// True when the call carried a progress token (a client that wants progress).
    pub fn wants_progress(&self) -> bool {
        self.token.is_some()
    }

    /// Sends `notifications/progress`, before the result (it is queued when this returns).
    /// False, nothing sent, when the call carried no progress token, was cancelled,
    /// `progress` is not above the last value sent (MCP requires it to increase), or the
    /// connection no longer takes notifications (the client closed its side): progress is
    /// best effort and never fails the tool.
    pub async fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) -> bool {
        let Some(token) = &self.token else {
            return false;
        };
        {
            let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
            if self.is_cancelled() || !progress.is_finite() || last.is_some_and(|l| progress <= l) {
                return false;
            }
            *last = Some(progress);
        }
        let mut params = json!({"progressToken": token, "progress": progress});
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        self.notify(methods::PROGRESS, params).await
    }

    /// Sends `notifications/message` when `level` is at or above the level the client set
    /// (`logging/setLevel`; every level until it does). False when filtered out or the
    /// connection no longer takes notifications (best effort, as for progress).
    ///
    /// On 2026-07-28 the level is the request's own (`_meta`'s `logLevel`); a request without
    /// one gets no log messages.
    pub async fn log(&self, level: LogLevel, data: impl Serialize) -> bool {
        let least = if self.info.stateless {
            match self.info.log_level {
                Some(l) => l,
                None => return false,
            }
        } else {
            self.shared.level(self.ctx.peer())
        };
        if level < least {
            return false;
        }
        let params = json!({"level": level.as_str(), "logger": self.shared.name, "data": data});
        self.notify(methods::MESSAGE, params).await
    }

    async fn notify(&self, method: &str, params: Value) -> bool {
        match self.ctx.peer().notify(method, params).await {
            Ok(()) => true,
            Err(e) => {
                tracing::debug!(method, error = %e, "notification not sent");
                false
            }
        }
    }

    /// Completes when the client cancels this call (or the connection fails): stop and
    /// return; the answer is sent but nobody waits for it.
    ///
    /// A tool running as a task (the tasks extension) outlives its request: `tasks/cancel`
    /// stops it (its future is dropped), and this never completes.
    pub async fn cancelled(&self) {
        if self.detached {
            return std::future::pending().await;
        }
        self.ctx.cancelled().await
    }

    /// True once the call is cancelled (never for a task: see
    /// [`cancelled`](ToolContext::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        !self.detached && self.ctx.is_cancelled()
    }

    /// The request's id (JSON text).
    pub fn request_id(&self) -> Option<&str> {
        self.ctx.id()
    }

    /// A client to call the MCP client back on the same connection (sampling, elicitation).
    pub fn peer(&self) -> &Client {
        self.ctx.peer()
    }

    /// Who called: the identity the transport established (over authenticated HTTP, the
    /// access token's subject and scopes), and what the transport knows of the request.
    pub fn caller(&self) -> &rpcwire_tokio::Caller {
        self.ctx.caller()
    }

    /// True for a request of the 2026-07-28 revision (its `_meta` names it): the tool asks
    /// for input with [`InputRequired`](super::InputRequired), not with requests to the client.
    pub fn is_stateless(&self) -> bool {
        self.info.stateless
    }

    /// The capabilities the request declares (2026-07-28: each request carries them); `None`
    /// on the session revisions.
    pub fn client_capabilities(&self) -> Option<&serde_json::Map<String, Value>> {
        self.info.capabilities.as_ref()
    }

    /// Whether the client declared this capability (`"sampling"`, `"elicitation"`,
    /// `"roots"`); on the session revisions (capabilities declared once, at `initialize`)
    /// always true, as the client refuses what it cannot do.
    pub fn client_supports(&self, capability: &str) -> bool {
        self.info
            .capabilities
            .as_ref()
            .is_none_or(|c| c.contains_key(capability))
    }

    /// The client's answer to the input request `key` of an earlier round
    /// ([`InputRequired`](super::InputRequired)), from the retry's `inputResponses`.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.info.responses.get(key)
    }

    /// The state the tool gave with its last [`InputRequired`](super::InputRequired), back from the client and
    /// verified (sealed, unexpired, used once, for this tool and caller).
    pub fn request_state(&self) -> Option<&Value> {
        self.info.state.as_ref()
    }

    /// Announces a change to the open `subscriptions/listen` streams that follow it.
    pub fn changed(&self, change: Change) -> usize {
        self.shared.changes.announce(change)
    }
}

pub(crate) type ReadFn = Arc<
    dyn Fn(
            ToolContext,
            String,
            HashMap<String, String>,
        ) -> BoxFuture<Result<Answer<Vec<ResourceContents>>, RpcError>>
        + Send
        + Sync,
>;
pub(crate) type PromptFn = Arc<
    dyn Fn(
            ToolContext,
            Map<String, Value>,
        ) -> BoxFuture<Result<Answer<Vec<PromptMessage>>, RpcError>>
        + Send
        + Sync,
>;
pub(crate) type CompleteFn =
    Arc<dyn Fn(ToolContext, Value) -> BoxFuture<Result<Vec<String>, RpcError>> + Send + Sync>;

/// The resources, templates, prompts and completion of a server.
#[derive(Default, Clone)]
pub(crate) struct Surface {
    pub(crate) resources: Vec<(ResourceInfo, ReadFn)>,
    pub(crate) templates: Vec<(UriTemplate, ResourceInfo, ReadFn)>,
    pub(crate) prompts: Vec<(String, String, Vec<PromptArgument>, PromptFn)>,
    pub(crate) completion: Option<CompleteFn>,
}

impl Surface {
    pub(crate) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }

    pub(crate) fn resources_list(&self) -> Value {
        let list: Vec<&ResourceInfo> = self.resources.iter().map(|(i, _)| i).collect();
        json!({ "resources": list })
    }

    pub(crate) fn templates_list(&self) -> Value {
        let list: Vec<Value> = self
            .templates
            .iter()
            .map(|(t, info, _)| {
                let mut v = serde_json::to_value(info).unwrap_or_default();
                if let Some(o) = v.as_object_mut() {
                    o.remove("uri");
                    o.insert("uriTemplate".into(), json!(t.as_str()));
                }
                v
            })
            .collect();
        json!({ "resourceTemplates": list })
    }

    /// The handler of `uri` and the template's variables: a fixed resource first, then the
    /// first template that matches.
    pub(crate) fn reader(&self, uri: &str) -> Option<(ReadFn, HashMap<String, String>)> {
        if let Some((_, read)) = self.resources.iter().find(|(i, _)| i.uri == uri) {
            return Some((Arc::clone(read), HashMap::new()));
        }
        self.templates
            .iter()
            .find_map(|(t, _, read)| t.matches(uri).map(|vars| (Arc::clone(read), vars)))
    }

    pub(crate) fn prompts_list(&self) -> Value {
        let list: Vec<Value> = self
            .prompts
            .iter()
            .map(|(name, description, args, _)| {
                let mut v = json!({"name": name, "description": description});
                if !args.is_empty() {
                    v["arguments"] = json!(args);
                }
                v
            })
            .collect();
        json!({ "prompts": list })
    }

    /// The prompt `name`'s handler, once its required arguments are there.
    pub(crate) fn prompt(
        &self,
        name: &str,
        args: &Map<String, Value>,
    ) -> Result<PromptFn, RpcError> {
        let (_, _, declared, run) = self
            .prompts
            .iter()
            .find(|p| p.0 == name)
            .ok_or_else(|| RpcError::invalid_params(format!("unknown prompt {name}")))?;
        if let Some(missing) = declared
            .iter()
            .find(|a| a.required && !args.get(&a.name).is_some_and(Value::is_string))
        {
            return Err(RpcError::invalid_params(format!(
                "missing argument {}",
                missing.name
            )));
        }
        Ok(Arc::clone(run))
    }
}
