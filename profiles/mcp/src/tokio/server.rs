//! The async MCP server: tools as async fns, built into an `rpcwire_tokio::Router`.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire_tokio::{Builder, Client, Context, DriverError, ErrorCode, Router, RpcError};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::header_params::{self, HeaderParam};
use super::input::{self, InputRequired, RequestInfo, ToolReply, MAX_SESSION_ROUNDS};
use super::listen::{self, Change, Changes};
use super::request_state::{Binding, RequestStateSeal};
use super::revision;
use super::surface::{
    Answer, PromptArgument, PromptFn, PromptMessage, ReadFn, ResourceContents, ResourceInfo,
    Surface, UriTemplate,
};
use super::surface_calls::surface_methods;
use super::task_calls::{start_task, task_method};
use super::tasks::{self, TaskSettings, TaskSupport, Tasks};
use crate::{methods, Handshake, LogLevel, ProtocolVersion};

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;
pub(crate) type ToolFn =
    Arc<dyn Fn(ToolContext, Value) -> BoxFuture<Result<ToolReply, RpcError>> + Send + Sync>;

/// The `result` of `tools/call`: content items, optional structured content, and whether the
/// tool failed. Also what [`McpClient::call_tool`](super::McpClient::call_tool) returns.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
pub struct ToolResult {
    /// Content items (`{"type": "text", "text": ...}` and the other MCP content types).
    pub content: Vec<Value>,
    /// `structuredContent`: the result as a JSON object, for tools with an output schema.
    #[serde(
        rename = "structuredContent",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub structured_content: Option<Value>,
    /// `isError`: the tool ran and failed (the model sees why).
    #[serde(rename = "isError", default)]
    pub is_error: bool,
}

impl ToolResult {
    /// One text item.
    pub fn text(text: impl Into<String>) -> Self {
        ToolResult {
            content: vec![json!({"type": "text", "text": text.into()})],
            structured_content: None,
            is_error: false,
        }
    }

    /// A result made of these content items (text, image, audio, embedded resource, resource
    /// link).
    pub fn with_content(items: impl IntoIterator<Item = super::surface::Content>) -> Self {
        ToolResult {
            content: items.into_iter().map(|c| c.to_value()).collect(),
            ..ToolResult::default()
        }
    }

    /// A failed tool's result: one text item saying why, `isError: true`.
    pub fn error(text: impl Into<String>) -> Self {
        ToolResult {
            is_error: true,
            ..ToolResult::text(text)
        }
    }

    /// The text of every text item, joined with newlines.
    pub fn joined_text(&self) -> String {
        let texts: Vec<&str> = self
            .content
            .iter()
            .filter(|c| c["type"] == "text")
            .filter_map(|c| c["text"].as_str())
            .collect();
        texts.join("\n")
    }
}

/// What a tool handler may return: text, a [`ToolResult`], or [`Json`] (structured content).
pub trait IntoToolResult {
    /// The `tools/call` result.
    fn into_tool_result(self) -> ToolResult;

    /// The tool's answer: a result, or (for [`InputRequired`] and [`ToolReply`]) a request
    /// for the client's input.
    fn into_reply(self) -> ToolReply
    where
        Self: Sized,
    {
        ToolReply::Complete(self.into_tool_result())
    }
}

impl IntoToolResult for ToolResult {
    fn into_tool_result(self) -> ToolResult {
        self
    }
}

impl IntoToolResult for String {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

impl IntoToolResult for &str {
    fn into_tool_result(self) -> ToolResult {
        ToolResult::text(self)
    }
}

/// A structured result: sent as `structuredContent` and, for older clients, as its JSON text
/// in a text item.
#[derive(Debug, Clone)]
pub struct Json<T>(pub T);

impl<T: Serialize> IntoToolResult for Json<T> {
    fn into_tool_result(self) -> ToolResult {
        match serde_json::to_value(&self.0) {
            Ok(value) => ToolResult {
                content: vec![json!({"type": "text", "text": value.to_string()})],
                structured_content: Some(value),
                is_error: false,
            },
            Err(e) => ToolResult::error(format!("cannot serialize the result: {e}")),
        }
    }
}

/// A tool's failure: it becomes a result with `isError: true` and this message as text (the
/// model sees it), not a JSON-RPC error. `?` turns any `std::error::Error` into one. A call
/// the tool cannot make for lack of a client capability is a protocol error instead
/// ([`ToolError::missing_capability`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    message: String,
    /// The client capabilities the call needs and the client did not declare.
    missing: Vec<&'static str>,
}

impl ToolError {
    /// A failure with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
            missing: Vec::new(),
        }
    }

    /// The call needs client capabilities (`"sampling"`, `"elicitation"`, `"roots"`) the
    /// client did not declare: answered `MissingRequiredClientCapabilityError` (-32021, HTTP
    /// 400), not a tool result.
    pub fn missing_capability(capabilities: &[&'static str]) -> Self {
        ToolError {
            message: format!("missing client capability: {}", capabilities.join(", ")),
            missing: capabilities.to_vec(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error> From<E> for ToolError {
    fn from(e: E) -> Self {
        ToolError::new(e.to_string())
    }
}

/// One connection's MCP state, kept only where a connection is a session (a strict
/// handshake, see [`McpServer::strict_handshake`]).
struct SessionState {
    handshake: Handshake,
    level: LogLevel,
    /// To forget the state once the connection has ended.
    client: Client,
}

/// A tool as calls find it.
#[derive(Clone)]
struct ToolEntry {
    run: ToolFn,
    /// Its parameters mirrored into headers (`x-mcp-header`).
    header_params: Arc<[HeaderParam]>,
    /// Whether it runs as a task (the tasks extension).
    task: Option<TaskSupport>,
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
    tools: HashMap<String, ToolEntry>,
    /// The tasks extension's tasks.
    pub(crate) tasks: Tasks,
    /// Resources, templates, prompts, completion.
    pub(crate) surface: Surface,
    /// Capabilities declared besides `tools` and `logging`.
    pub(crate) capabilities: Vec<(String, Value)>,
    /// Each connection is one session: its handshake is checked and its state kept here.
    pub(crate) strict: bool,
    sessions: Mutex<HashMap<u64, SessionState>>,
    /// Seals `requestState` (none: the system has no secure random source for a key).
    pub(crate) seal: Option<RequestStateSeal>,
    /// Changes announced to `subscriptions/listen` streams.
    pub(crate) changes: Changes,
}

impl Shared {
    fn with_session<T>(&self, peer: &Client, f: impl FnOnce(&mut SessionState) -> T) -> T {
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
    /// for input with [`InputRequired`], not with requests to the client.
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
    /// ([`InputRequired`]), from the retry's `inputResponses`.
    pub fn input_response(&self, key: &str) -> Option<&Value> {
        self.info.responses.get(key)
    }

    /// The state the tool gave with its last [`InputRequired`], back from the client and
    /// verified (sealed, unexpired, used once, for this tool and caller).
    pub fn request_state(&self) -> Option<&Value> {
        self.info.state.as_ref()
    }

    /// Announces a change to the open `subscriptions/listen` streams that follow it.
    pub fn changed(&self, change: Change) -> usize {
        self.shared.changes.announce(change)
    }
}

/// A tool registered before the server is built.
struct ToolDef {
    header_params: Arc<[HeaderParam]>,
    task: Option<TaskSupport>,
    name: String,
    description: String,
    schema: Value,
    run: ToolFn,
}

/// An MCP server: a name, a version, optional instructions, and tools. Build it into a
/// [`Router`] ([`router`](McpServer::router)) or straight into a configured [`Builder`]
/// ([`builder`](McpServer::builder)), or serve this process's stdio
/// ([`serve_stdio`](McpServer::serve_stdio)).
///
/// What it answers: `initialize` (the client's revision when spoken, else the latest;
/// capabilities `tools` and `logging`), `ping`, `tools/list`, `tools/call`,
/// `logging/setLevel`, and it takes `notifications/initialized` and `notifications/cancelled`.
/// Before `initialize`, requests other than `ping` are refused with Invalid Request (see
/// [`strict_handshake`](McpServer::strict_handshake)). An unknown tool is Invalid params
/// (-32602); arguments that do not decode, and a tool's [`ToolError`], are results with
/// `isError: true`.
pub struct McpServer {
    name: String,
    version: String,
    instructions: Option<String>,
    tools: Vec<ToolDef>,
    capabilities: Vec<(String, Value)>,
    strict: bool,
    seal: Option<RequestStateSeal>,
    changes: Changes,
    task_settings: TaskSettings,
    surface: Surface,
}

impl fmt::Debug for McpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tools: Vec<&str> = self.tools.iter().map(|t| t.name.as_str()).collect();
        f.debug_struct("McpServer")
            .field("name", &self.name)
            .field("tools", &tools)
            .finish()
    }
}

impl McpServer {
    /// A server with no tools.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        McpServer {
            name: name.into(),
            version: version.into(),
            instructions: None,
            tools: Vec::new(),
            capabilities: Vec::new(),
            strict: true,
            seal: None,
            changes: Changes::default(),
            task_settings: TaskSettings::default(),
            surface: Surface::default(),
        }
    }

    /// Adds a resource at a fixed URI: listed by `resources/list`, read by its handler
    /// (which gets the URI read). The server then declares `resources`.
    pub fn resource<F, Fut>(mut self, info: ResourceInfo, handler: F) -> Self
    where
        F: Fn(ToolContext, String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answer<Vec<ResourceContents>>, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let read: ReadFn = Arc::new(move |ctx, uri, _| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, uri).await })
        });
        self.surface.resources.retain(|(i, _)| i.uri != info.uri);
        self.surface.resources.push((info, read));
        self
    }

    /// Adds a resource template: listed by `resources/templates/list` (`info`'s `uri` is not
    /// used), and the handler of every URI it matches that no fixed resource has (templates
    /// are tried in the order added), with the template's variables. A URI nothing matches is
    /// answered resource-not-found (Invalid params, `data.uri`).
    pub fn resource_template<F, Fut>(
        mut self,
        template: UriTemplate,
        info: ResourceInfo,
        handler: F,
    ) -> Self
    where
        F: Fn(ToolContext, String, HashMap<String, String>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answer<Vec<ResourceContents>>, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let read: ReadFn = Arc::new(move |ctx, uri, vars| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, uri, vars).await })
        });
        self.surface.templates.push((template, info, read));
        self
    }

    /// Adds a prompt with its arguments (the required ones are checked before the handler
    /// runs: Invalid params). The handler gets the arguments and answers the messages (or
    /// asks for input). The server then declares `prompts`.
    pub fn prompt<F, Fut>(
        mut self,
        name: &str,
        description: &str,
        arguments: Vec<PromptArgument>,
        handler: F,
    ) -> Self
    where
        F: Fn(ToolContext, serde_json::Map<String, Value>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Answer<Vec<PromptMessage>>, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let get: PromptFn = Arc::new(move |ctx, args| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, args).await })
        });
        self.surface.prompts.retain(|p| p.0 != name);
        self.surface
            .prompts
            .push((name.to_owned(), description.to_owned(), arguments, get));
        self
    }

    /// Answers `completion/complete`: the handler gets its params (`ref`, `argument`,
    /// `context`) and gives the values (at most 100 are sent, `total` and `hasMore` saying
    /// the rest). The server then declares `completions`.
    pub fn completion<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ToolContext, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Vec<String>, RpcError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        self.surface.completion = Some(Arc::new(move |ctx, params| {
            let handler = Arc::clone(&handler);
            Box::pin(async move { handler(ctx, params).await })
        }));
        self
    }

    /// Runs the tool `name` (added before) as a task of the tasks extension
    /// (`io.modelcontextprotocol/tasks`, 2026-07-28) when the request declares it: the call is
    /// answered at once with a `CreateTaskResult`, and `tasks/get`, `tasks/update` and
    /// `tasks/cancel` follow it. [`TaskSupport::Required`]: a 2026-07-28 request without the
    /// extension is refused (-32021). Session revisions run the tool as any other.
    pub fn task_support(mut self, name: &str, support: TaskSupport) -> Self {
        if let Some(t) = self.tools.iter_mut().find(|t| t.name == name) {
            t.task = Some(support);
        }
        self
    }

    /// The bounds of the task table (default [`TaskSettings::default`]).
    pub fn task_settings(mut self, settings: TaskSettings) -> Self {
        self.task_settings = settings;
        self
    }

    /// Seals `requestState` with this seal (its key, expiry and replay bounds); by default a
    /// seal with a random key ([`RequestStateSeal::random`]). Servers behind one load
    /// balancer share a key.
    pub fn request_state_seal(mut self, seal: RequestStateSeal) -> Self {
        self.seal = Some(seal);
        self
    }

    /// The handle that announces changes (list changed, resource updated) to the open
    /// `subscriptions/listen` streams, for code outside the tools.
    pub fn changes(&self) -> Changes {
        self.changes.clone()
    }

    /// `instructions` for the model, sent in the `initialize` result.
    pub fn instructions(mut self, text: impl Into<String>) -> Self {
        self.instructions = Some(text.into());
        self
    }

    /// Declares one more capability in the `initialize` result (`resources`, `prompts`,
    /// `completions`, ...), for methods added to the [`router`](McpServer::router) beside
    /// the tools.
    pub fn capability(mut self, name: &str, value: Value) -> Self {
        self.capabilities.retain(|(n, _)| n != name);
        self.capabilities.push((name.to_owned(), value));
        self
    }

    /// Refuse requests other than `ping` before `initialize` on each connection, and keep
    /// each connection's revision and log level (default true): a connection is a session.
    /// Turn it off where the transport keeps the sessions: where one session's requests
    /// reach several connections and one connection answers several sessions' requests in
    /// turn (MCP Streamable HTTP answers each POST on a pooled connection, checks the
    /// session itself, and filters log messages by the session's level). Nothing is then
    /// kept per connection: `logging/setLevel` is answered but leaves the filtering to the
    /// transport, and no session's state can reach another's requests.
    pub fn strict_handshake(mut self, strict: bool) -> Self {
        self.strict = strict;
        self
    }

    /// Adds a tool whose input schema is generated from `A`: this needs rpcwire-mcp's
    /// feature `schemars`. Without it the method is still there, so that the compiler's error
    /// names the feature (`A` must implement [`SchemarsFeatureRequired`], which nothing
    /// does); [`tool_with_schema`](McpServer::tool_with_schema) takes a schema given as JSON.
    #[cfg(not(feature = "schemars"))]
    pub fn tool<A, R, F, Fut>(self, name: &str, description: &str, handler: F) -> Self
    where
        A: SchemarsFeatureRequired,
        F: Fn(ToolContext, A) -> Fut,
    {
        // Never called: no type implements `SchemarsFeatureRequired`.
        let _ = (name, description, handler);
        self
    }

    /// Adds a tool whose input schema is generated from `A` (feature `schemars`).
    #[cfg(feature = "schemars")]
    pub fn tool<A, R, F, Fut>(self, name: &str, description: &str, handler: F) -> Self
    where
        A: DeserializeOwned + schemars::JsonSchema + Send + 'static,
        R: IntoToolResult + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let mut schema = schemars::schema_for!(A).to_value();
        if let Some(object) = schema.as_object_mut() {
            // MCP wants the object schema itself; the meta-schema URI and title are noise.
            object.remove("$schema");
            object.remove("title");
            object.entry("type").or_insert_with(|| json!("object"));
        }
        self.tool_with_schema(name, description, schema, handler)
    }

    /// Adds a tool with its input JSON Schema given (an object schema). Its handler gets a
    /// [`ToolContext`] and the `arguments` decoded into `A` (absent arguments decode from
    /// `{}`); arguments that do not decode make a result with `isError: true`.
    pub fn tool_with_schema<A, R, F, Fut>(
        mut self,
        name: &str,
        description: &str,
        input_schema: Value,
        handler: F,
    ) -> Self
    where
        A: DeserializeOwned + Send + 'static,
        R: IntoToolResult + 'static,
        F: Fn(ToolContext, A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let run: ToolFn = Arc::new(move |ctx, arguments| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let args: A = match serde_json::from_value(arguments) {
                    Ok(args) => args,
                    Err(e) => {
                        return Ok(ToolResult::error(format!("invalid arguments: {e}")).into())
                    }
                };
                match handler(ctx, args).await {
                    Ok(r) => Ok(r.into_reply()),
                    Err(e) if !e.missing.is_empty() => {
                        Err(input::missing_capability_error(&e.missing))
                    }
                    Err(e) => Ok(ToolResult::error(e.message).into()),
                }
            })
        });
        self.tools.retain(|t| t.name != name);
        let (header_params, problems) = header_params::of_schema(&input_schema);
        for problem in problems {
            // The revision tells clients to drop such a tool; the server keeps it, without
            // checking the annotation it cannot honour.
            tracing::warn!(tool = name, "{problem}");
        }
        self.tools.push(ToolDef {
            header_params: header_params.into(),
            task: None,
            name: name.to_owned(),
            description: description.to_owned(),
            schema: input_schema,
            run,
        });
        self
    }

    /// The names of the tools, in the order added.
    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name.as_str()).collect()
    }

    /// The MCP methods as a [`Router`]. Mount it on any transport; the connection needs
    /// [`mcp_builder`]'s settings (cancellation, batches), which
    /// [`builder`](McpServer::builder) applies.
    pub fn router(self) -> Router {
        let list = json!({
            "tools": self.tools.iter().map(|t| json!({
                "name": t.name,
                "description": t.description,
                "inputSchema": t.schema,
            })).collect::<Vec<_>>()
        });
        let shared = Arc::new(Shared {
            name: self.name,
            version: self.version,
            instructions: self.instructions,
            list,
            tools: self
                .tools
                .into_iter()
                .map(|t| {
                    let entry = ToolEntry {
                        run: t.run,
                        header_params: t.header_params,
                        task: t.task,
                    };
                    (t.name, entry)
                })
                .collect(),
            tasks: Tasks::new(self.task_settings),
            surface: self.surface,
            capabilities: self.capabilities,
            strict: self.strict,
            sessions: Mutex::new(HashMap::new()),
            seal: self.seal.or_else(RequestStateSeal::random),
            changes: self.changes,
        });
        let s = Arc::clone(&shared);
        let router =
            Router::new().method_with_context(methods::INITIALIZE, move |ctx, p: Value| {
                let s = Arc::clone(&s);
                async move {
                    removed_in_stateless(&p)?;
                    initialize(&s, &ctx, &p)
                }
            });
        let s = Arc::clone(&shared);
        let router =
            router.notification_with_context(methods::INITIALIZED, move |ctx, _: Value| {
                let s = Arc::clone(&s);
                async move {
                    if s.strict {
                        s.with_session(ctx.peer(), |st| st.handshake.initialized());
                    }
                }
            });
        let router = router.sync_method(methods::PING, |p: Value| {
            removed_in_stateless(&p)?;
            Ok::<_, RpcError>(json!({}))
        });
        let s = Arc::clone(&shared);
        let router = router.method_with_context(methods::TOOLS_LIST, move |ctx, p: Value| {
            let s = Arc::clone(&s);
            async move {
                s.admit(&ctx, &p)?;
                Ok::<_, RpcError>(completed(methods::TOOLS_LIST, &p, s.list.clone()))
            }
        });
        let s = Arc::clone(&shared);
        let router = router.method_with_context(methods::SERVER_DISCOVER, move |ctx, p: Value| {
            let s = Arc::clone(&s);
            async move {
                s.trace(&ctx);
                discover(&s, &p)
            }
        });
        let s = Arc::clone(&shared);
        let router =
            router.method_with_context(methods::SUBSCRIPTIONS_LISTEN, move |ctx, p: Value| {
                let s = Arc::clone(&s);
                async move {
                    s.trace(&ctx);
                    let caps = capabilities(&s, true);
                    let offers = |c: &str| match c {
                        "subscribe" => caps["resources"]["subscribe"] == true,
                        kind => caps[kind]["listChanged"] == true,
                    };
                    let filter = listen::Filter::of(&p, offers)?;
                    // Subscribed before the acknowledgement, so no change after it is missed.
                    let changes = s.changes.subscribe();
                    listen::run(ctx, filter, changes).await;
                    // Cancelled: MCP leaves a cancelled request unanswered.
                    Err::<Value, _>(RpcError::new(
                        ErrorCode::INTERNAL_ERROR,
                        "subscription ended",
                    ))
                }
            });
        let s = Arc::clone(&shared);
        let router =
            router.method_with_context(methods::LOGGING_SET_LEVEL, move |ctx, p: Value| {
                let s = Arc::clone(&s);
                async move {
                    removed_in_stateless(&p)?;
                    s.admit(&ctx, &Value::Null)?;
                    let p: SetLevel =
                        serde_json::from_value(p).map_err(RpcError::invalid_params)?;
                    let level = LogLevel::from_bytes(p.level.as_bytes()).ok_or_else(|| {
                        RpcError::invalid_params(format!("unknown log level {:?}", p.level))
                    })?;
                    if s.strict {
                        s.with_session(ctx.peer(), |st| st.level = level);
                    }
                    Ok::<_, RpcError>(json!({}))
                }
            });
        let mut router = surface_methods(router, &shared);
        for method in [
            methods::TASKS_GET,
            methods::TASKS_UPDATE,
            methods::TASKS_CANCEL,
        ] {
            let s = Arc::clone(&shared);
            router = router.method_with_context(method, move |ctx, p: Value| {
                task_method(Arc::clone(&s), ctx, p)
            });
        }
        let s = shared;
        router.method_with_context(methods::TOOLS_CALL, move |ctx, p: Value| {
            let s = Arc::clone(&s);
            async move {
                s.admit(&ctx, &p)?;
                call_tool(s, ctx, p).await
            }
        })
    }

    /// A [`Builder`] with this server's router and MCP's connection settings
    /// ([`mcp_builder`]); start it on any transport (`stdio()`, `run(..)`, `serve_tcp(..)`).
    pub fn builder(self) -> Builder {
        mcp_builder().router(self.router())
    }

    /// Serves this process's stdin and stdout until the client closes them.
    pub async fn serve_stdio(self) -> Result<(), DriverError> {
        self.builder().stdio().join().await
    }
}

/// What [`McpServer::tool`] asks of its argument type when rpcwire-mcp's feature `schemars` is
/// off: implemented by nothing, so that the compiler's error says which feature to enable.
#[cfg(not(feature = "schemars"))]
#[diagnostic::on_unimplemented(
    message = "`McpServer::tool` needs rpcwire-mcp's feature `schemars` (the input schema of `{Self}` is generated by schemars)",
    label = "enable feature `schemars` of rpcwire-mcp for this",
    note = "in Cargo.toml: rpcwire-mcp = {{ version = \"0.1\", features = [\"tokio\", \"schemars\"] }}; or give the schema as JSON with `McpServer::tool_with_schema`"
)]
pub trait SchemarsFeatureRequired {}

/// A [`Builder`] with MCP's connection settings: `notifications/cancelled` (`requestId`) as
/// the cancel notification both ways, a cancelled request left unanswered (MCP: a receiver
/// should not answer it; [`Service::answer_cancelled`](rpcwire_tokio::Service::answer_cancelled)),
/// calls carrying their trace context in `params._meta`, and batches refused until
/// `initialize` has negotiated a
/// revision that takes them (2024-11-05, 2025-03-26; every revision from 2025-06-18 on
/// refuses them): the server's `initialize` handler switches the connection
/// (`Client::set_batches`).
pub fn mcp_builder() -> Builder {
    Builder::new()
        .service(mcp_service())
        .meta_traces(true)
        .batches(false)
}

/// MCP's cancellation rule on a [`Service`](rpcwire_tokio::Service) with no router yet:
/// `notifications/cancelled` (`requestId`) as the cancel notification both ways, a cancelled
/// request left unanswered. [`mcp_builder`] starts from it; a router is added with
/// [`Builder::router`].
pub fn mcp_service() -> rpcwire_tokio::Service {
    rpcwire_tokio::Service::client_only()
        .cancel_notification("notifications/cancelled", "requestId")
        .answer_cancelled(false)
}

#[derive(Deserialize)]
struct SetLevel {
    level: String,
}

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

fn initialize(s: &Shared, ctx: &Context, params: &Value) -> Result<Value, RpcError> {
    let requested = params["protocolVersion"].as_str().map(str::as_bytes);
    let version = ProtocolVersion::negotiate(requested);
    // Not strict: the transport keeps the sessions (over Streamable HTTP, each `initialize`
    // starts a new one), and nothing is kept per connection.
    if s.strict {
        s.with_session(ctx.peer(), |st| st.handshake.start(version))
            .map_err(|r| RpcError::new(r.code(), r.message()))?;
    }
    // Batches as the revision says, for the rest of this connection (applied before the
    // driver reads on; the answer to initialize is no batch).
    ctx.peer().set_batches(!version.refuses_batches());
    let mut result = json!({
        "protocolVersion": version.as_str(),
        "capabilities": capabilities(s, false),
        "serverInfo": {"name": s.name, "version": s.version},
    });
    if let Some(instructions) = &s.instructions {
        result["instructions"] = json!(instructions);
    }
    Ok(result)
}

/// A method 2026-07-28 removed (`initialize`, `ping`, `logging/setLevel`,
/// `resources/subscribe`, `resources/unsubscribe`), asked for by a request of that revision:
/// Method not found, as over Streamable HTTP (where the transport answers it with 404).
pub(crate) fn removed_in_stateless(params: &Value) -> Result<(), RpcError> {
    if revision::is_stateless(Some(params)) {
        return Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND));
    }
    Ok(())
}

/// The server's capabilities: `tools` and `logging`, and those declared with
/// [`McpServer::capability`]. On 2026-07-28 the tool list's changes reach
/// `subscriptions/listen` streams, so `tools.listChanged` is true there.
fn capabilities(s: &Shared, stateless: bool) -> Value {
    let mut caps = json!({"tools": {"listChanged": stateless}, "logging": {}});
    if s.surface.has_resources() {
        caps["resources"] = json!({"subscribe": true, "listChanged": stateless});
    }
    if !s.surface.prompts.is_empty() {
        caps["prompts"] = json!({ "listChanged": stateless });
    }
    if s.surface.completion.is_some() {
        caps["completions"] = json!({});
    }
    for (name, value) in &s.capabilities {
        caps[name] = value.clone();
    }
    if stateless && s.tools.values().any(|t| t.task.is_some()) {
        caps["extensions"][tasks::TASKS_EXTENSION] = json!({});
    }
    caps
}

/// `server/discover` (2026-07-28): every revision this server speaks (the session revisions
/// too: a client may `initialize` instead; over Streamable HTTP the transport's mode narrows
/// the list), the capabilities, the instructions, and the server's name and version in
/// `_meta`.
fn discover(s: &Shared, params: &Value) -> Result<Value, RpcError> {
    if let Some(problem) = revision::meta_problem(Some(params)) {
        return Err(RpcError::new(ErrorCode::INVALID_PARAMS, problem));
    }
    let mut result = json!({
        "supportedVersions": revision::SUPPORTED_VERSIONS,
        "capabilities": capabilities(s, true),
        "_meta": {methods::META_SERVER_INFO: {"name": s.name, "version": s.version}},
    });
    if let Some(instructions) = &s.instructions {
        result["instructions"] = json!(instructions);
    }
    let mut object = result.as_object().cloned().unwrap_or_default();
    revision::complete_result(methods::SERVER_DISCOVER, &mut object);
    Ok(Value::Object(object))
}

/// A result as the request's revision wants it: on 2026-07-28, with `resultType` (and the
/// caching hints of a cacheable result).
pub(crate) fn completed(method: &str, params: &Value, mut result: Value) -> Value {
    if revision::is_stateless(Some(params)) {
        if let Some(object) = result.as_object_mut() {
            revision::complete_result(method, object);
        }
    }
    result
}

/// `tools/call`: the request's `_meta` and `requestState` checked before the tool runs (a
/// state that fails its seal is Invalid params, and the tool never sees the call), then the
/// tool, round after round on a session revision while it asks for input the server can get
/// from the client itself.
async fn call_tool(s: Arc<Shared>, ctx: Context, p: Value) -> Result<Value, RpcError> {
    let span = tracing::Span::current();
    let CallParams {
        name,
        arguments,
        meta,
    } = serde_json::from_value(p.clone()).map_err(RpcError::invalid_params)?;
    span.record("gen_ai.tool.name", name.as_str());
    let mut info = RequestInfo::of(&p)?;
    let Some(ToolEntry {
        run,
        header_params,
        task: task_support,
    }) = s.tools.get(&name).cloned()
    else {
        return Err(RpcError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        ));
    };
    let arguments = match arguments {
        None | Some(Value::Null) => json!({}),
        Some(a) => a,
    };
    // Over Streamable HTTP at 2026-07-28: the parameters mirrored into headers must agree
    // with the arguments, before anything else reads them.
    #[cfg(feature = "http")]
    if info.stateless && !header_params.is_empty() {
        if let Some(headers) = ctx.caller().meta::<http::HeaderMap>() {
            let lookup = |name: &str| crate::http::param_header(headers, name);
            header_params::check(&header_params, &arguments, &lookup)
                .map_err(|why| RpcError::new(crate::http::HEADER_MISMATCH, why))?;
        }
    }
    #[cfg(not(feature = "http"))]
    let _ = &header_params;
    let subject = ctx.identity().subject().to_owned();
    let binding = Binding {
        method: methods::TOOLS_CALL,
        target: &name,
        caller: &subject,
    };
    open_state(&s, &p, &binding, &mut info)?;
    let token = meta
        .and_then(|m| m.progress_token)
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64());
    let stateless = info.stateless;
    if let (true, Some(support)) = (stateless, task_support) {
        let declared = tasks::declared(info.capabilities.as_ref());
        // `AfterInput`: a round that brings no input runs here (it may ask, as an
        // `InputRequiredResult`); the round that brings it becomes the task.
        let gathering = support == TaskSupport::AfterInput && info.responses.is_empty();
        if declared && !gathering {
            let owner = ctx.identity().subject().to_owned();
            return start_task(&s, ctx, run, arguments, info, &owner);
        }
        if !declared && support != TaskSupport::Optional {
            return Err(tasks::extension_required());
        }
    }
    let mut info = Arc::new(info);
    let last = Arc::default();
    for _ in 0..MAX_SESSION_ROUNDS {
        let tool_ctx = ToolContext {
            ctx: ctx.clone(),
            token: token.clone(),
            last: Arc::clone(&last),
            shared: Arc::clone(&s),
            info: Arc::clone(&info),
            detached: false,
        };
        let mut ask = match run(tool_ctx, arguments.clone()).await? {
            ToolReply::Complete(result) => {
                if result.is_error {
                    span.record("error.type", "tool_error");
                }
                let result = serde_json::to_value(result).map_err(RpcError::internal)?;
                return Ok(completed(methods::TOOLS_CALL, &p, result));
            }
            ToolReply::InputRequired(ask) => ask,
        };
        if stateless {
            return input_required(&s, &info, &binding, &mut ask);
        }
        // A session revision: the server asks the client itself, then runs the tool again.
        info = Arc::new(ask_peer(&ctx, &mut ask).await?);
    }
    Err(RpcError::internal(format!(
        "tool {name} asked for input more than {MAX_SESSION_ROUNDS} times"
    )))
}

/// A session revision's input round: the server sends the input requests to the client
/// itself; the next round's request info, with the answers and the state.
pub(crate) async fn ask_peer(
    ctx: &Context,
    ask: &mut InputRequired,
) -> Result<RequestInfo, RpcError> {
    let mut next = RequestInfo {
        state: ask.state.take(),
        ..RequestInfo::default()
    };
    for (key, request) in &ask.requests {
        let method = request["method"].as_str().unwrap_or_default();
        let answer: Value = ctx
            .peer()
            .call(method, request["params"].clone())
            .await
            .map_err(|e| RpcError::internal(format!("{method} failed: {e}")))?;
        next.responses.insert(key.clone(), answer);
    }
    Ok(next)
}

/// Opens a request's `requestState` for `binding` into `info` (Invalid params when it does
/// not open: tampered, expired, replayed, sealed for another request, or not a string).
pub(crate) fn open_state(
    s: &Shared,
    p: &Value,
    binding: &Binding<'_>,
    info: &mut RequestInfo,
) -> Result<(), RpcError> {
    let refused = || {
        RpcError::new(
            ErrorCode::INVALID_PARAMS,
            "Invalid params: invalid requestState",
        )
    };
    let token = match p.get("requestState") {
        None | Some(Value::Null) => return Ok(()),
        Some(Value::String(token)) => token,
        Some(_) => return Err(refused()),
    };
    let seal = s.seal.as_ref().ok_or_else(refused)?;
    let state = seal.open(token, binding).map_err(|e| {
        tracing::debug!(error = %e, method = binding.method, target = binding.target, "requestState refused");
        refused()
    })?;
    info.state = Some(state);
    Ok(())
}

/// An `InputRequiredResult`: the requests the client declared the capabilities for, and the
/// state sealed for this tool and caller. Requests the client cannot answer are dropped; when
/// none is left the call needs a capability the client lacks (-32021).
pub(crate) fn input_required(
    s: &Shared,
    info: &RequestInfo,
    binding: &Binding<'_>,
    ask: &mut InputRequired,
) -> Result<Value, RpcError> {
    let declared = info.capabilities.clone().unwrap_or_default();
    let missing = ask.keep_declared(&declared);
    if ask.requests.is_empty() && !missing.is_empty() {
        return Err(input::missing_capability_error(&missing));
    }
    let seal = s
        .seal
        .as_ref()
        .ok_or_else(|| RpcError::internal("no key to seal requestState with"))?;
    let state = seal.seal(binding, ask.state.as_ref().unwrap_or(&Value::Null));
    Ok(json!({
        "resultType": "input_required",
        "inputRequests": ask.requests,
        "requestState": state,
    }))
}
