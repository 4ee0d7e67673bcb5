//! The async MCP server: tools as async fns, built into an `rpcwire_tokio::Router`.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};

use rpcwire_tokio::{Builder, Context, DriverError, ErrorCode, Router, RpcError};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::{PromptFn, ReadFn, Shared, Surface, ToolContext, ToolEntry, ToolFn};
use super::header_params::{self, HeaderParam};
use super::input;
use super::listen::{self, Changes};
use super::request_state::RequestStateSeal;
use super::revision::{self, completed, removed_in_stateless};
use super::surface::{
    Answer, PromptArgument, PromptMessage, ResourceContents, ResourceInfo, UriTemplate,
};
use super::surface_calls::surface_methods;
use super::task_calls::task_method;
use super::tasks::{self, TaskSettings, TaskSupport, Tasks};
use super::tool_calls::call_tool;
use super::tool_result::{IntoToolResult, ToolError, ToolResult};
use crate::{methods, LogLevel, ProtocolVersion};

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
