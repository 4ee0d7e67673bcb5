//! The async MCP client: initialize, list and call tools (with progress), cancel, ping.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire_tokio::{Builder, CallError, Client, DriverError, Router, RpcError, Session};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::client_config::{ClientOptions, McpError};
use super::client_handlers::{
    ClientHandlers, ELICITATION_CREATE, ROOTS_LIST, SAMPLING_CREATE_MESSAGE,
};
use super::client_wire::Wire;
use super::server::mcp_builder;
use super::tool_result::ToolResult;
use crate::{methods, LogLevel, ProtocolVersion};

/// A tool as `tools/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerTool {
    /// Its name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Its input's JSON Schema.
    #[serde(rename = "inputSchema", default)]
    pub input_schema: Value,
}

/// One `notifications/progress` for a call.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Progress {
    /// Progress so far.
    pub progress: f64,
    /// The total, when the server knows it.
    #[serde(default)]
    pub total: Option<f64>,
    /// A message.
    #[serde(default)]
    pub message: Option<String>,
}

type ProgressFn = Box<dyn FnMut(Progress) + Send>;
type LogFn = Arc<dyn Fn(LogLevel, Value) + Send + Sync>;

/// What the client's router hands notifications to.
#[derive(Default)]
struct Hub {
    progress: Mutex<HashMap<String, ProgressFn>>,
    next: AtomicU64,
    log: Mutex<Option<LogFn>>,
    handlers: ClientHandlers,
}

#[derive(Deserialize)]
struct ProgressNote {
    #[serde(rename = "progressToken")]
    token: Value,
    #[serde(flatten)]
    progress: Progress,
}

#[derive(Deserialize)]
struct LogNote {
    level: String,
    #[serde(default)]
    data: Value,
}

fn token_key(token: &Value) -> String {
    match token {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

impl Hub {
    fn router(self: &Arc<Self>) -> Router {
        let hub = Arc::clone(self);
        let router = Router::new().notification(methods::PROGRESS, move |note: ProgressNote| {
            let mut map = hub.progress.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(callback) = map.get_mut(&token_key(&note.token)) {
                callback(note.progress);
            }
            std::future::ready(())
        });
        let hub = Arc::clone(self);
        router
            .notification(methods::MESSAGE, move |note: LogNote| {
                let level = LogLevel::from_bytes(note.level.as_bytes()).unwrap_or(LogLevel::Info);
                let callback = hub
                    .log
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .clone();
                match callback {
                    Some(f) => f(level, note.data),
                    None => tracing::info!(level = %level, data = %note.data, "server log"),
                }
                std::future::ready(())
            })
            .sync_method(methods::PING, |_: Value| Ok::<_, RpcError>(json!({})))
            .with_handler(self, ELICITATION_CREATE)
            .with_handler(self, SAMPLING_CREATE_MESSAGE)
            .with_handler(self, ROOTS_LIST)
    }

    /// Registers a progress callback under a new token; the guard removes it.
    fn register(self: &Arc<Self>, callback: ProgressFn) -> ProgressGuard {
        let token = format!("rpcwire-{}", self.next.fetch_add(1, Ordering::Relaxed));
        self.progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(token.clone(), callback);
        ProgressGuard {
            hub: Arc::clone(self),
            token,
        }
    }
}

/// The server's requests of a session revision, answered by the client's handlers.
trait WithHandler {
    fn with_handler(self, hub: &Arc<Hub>, method: &'static str) -> Self;
}

impl WithHandler for Router {
    fn with_handler(self, hub: &Arc<Hub>, method: &'static str) -> Self {
        let hub = Arc::clone(hub);
        self.method(method, move |params: Value| {
            let hub = Arc::clone(&hub);
            async move { hub.handlers.answer(method, params).await }
        })
    }
}

struct ProgressGuard {
    hub: Arc<Hub>,
    token: String,
}

impl Drop for ProgressGuard {
    fn drop(&mut self) {
        self.hub
            .progress
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.token);
    }
}

/// An MCP client on one connection, initialized.
///
/// ```no_run
/// use rpcwire_mcp::tokio::McpClient;
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut cmd = tokio::process::Command::new("mcp-server");
/// let (client, _child) = McpClient::spawn(&mut cmd).await?;
/// for tool in client.list_tools().await? {
///     println!("{}: {}", tool.name, tool.description.unwrap_or_default());
/// }
/// let result = client
///     .call_tool_with_progress("count", serde_json::json!({"to": 3}), |p| println!("{p:?}"))
///     .await?;
/// println!("{}", result.joined_text());
/// client.close().await?;
/// # Ok(()) }
/// ```
pub struct McpClient {
    session: Session,
    hub: Arc<Hub>,
    init: Value,
    version: ProtocolVersion,
    wire: Arc<Wire>,
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("revision", &self.revision())
            .field("server", &self.init.get("serverInfo"))
            .finish()
    }
}

impl McpClient {
    fn prepare(options: &ClientOptions) -> (Builder, Arc<Hub>) {
        let hub = Arc::new(Hub {
            handlers: options.handlers.clone(),
            ..Hub::default()
        });
        let mut builder = mcp_builder().router(hub.router());
        if let Some(timeout) = options.timeout {
            builder = builder.request_timeout(Some(timeout));
        }
        (builder, hub)
    }

    async fn finish(
        session: Session,
        hub: Arc<Hub>,
        options: &ClientOptions,
    ) -> Result<McpClient, McpError> {
        let client_info = json!({"name": options.name, "version": options.version});
        let wire = Arc::new(Wire::new(
            options.stateless,
            client_info.clone(),
            options.handlers.clone(),
            options.max_input_rounds,
            options.max_input_requests,
        ));
        if options.stateless {
            let mut init = wire.discover(session.client()).await?;
            // The server's name: `serverInfo`, or in `_meta` (as the session API reads it).
            if init.get("serverInfo").is_none() {
                if let Some(info) = init
                    .pointer("/_meta")
                    .and_then(|m| m.get(methods::META_SERVER_INFO))
                    .cloned()
                {
                    init["serverInfo"] = info;
                }
            }
            return Ok(McpClient {
                session,
                hub,
                init,
                version: ProtocolVersion::LATEST,
                wire,
            });
        }
        let params = json!({
            "protocolVersion": options.protocol_version.as_str(),
            "capabilities": options.handlers.capabilities(),
            "clientInfo": client_info,
        });
        let init: Value = session.client().call(methods::INITIALIZE, params).await?;
        let chosen = init["protocolVersion"].as_str().unwrap_or_default();
        let Some(version) = ProtocolVersion::from_bytes(chosen.as_bytes()) else {
            return Err(McpError::UnsupportedVersion(chosen.to_owned()));
        };
        session.client().notify(methods::INITIALIZED, ()).await?;
        Ok(McpClient {
            session,
            hub,
            init,
            version,
            wire,
        })
    }

    /// Starts a connection with `start` (given a [`Builder`] with the client's settings;
    /// use any of its constructors: `run`, `run_io`, `connect_tcp`, `stdio`) and initializes
    /// it with default options.
    pub async fn connect(start: impl FnOnce(Builder) -> Session) -> Result<McpClient, McpError> {
        McpClient::connect_with(ClientOptions::default(), start).await
    }

    /// Like [`connect`](McpClient::connect) with options.
    pub async fn connect_with(
        options: ClientOptions,
        start: impl FnOnce(Builder) -> Session,
    ) -> Result<McpClient, McpError> {
        let (builder, hub) = McpClient::prepare(&options);
        McpClient::finish(start(builder), hub, &options).await
    }

    /// Spawns a stdio MCP server and initializes it. The child is killed when the returned
    /// handle is dropped.
    pub async fn spawn(
        command: &mut tokio::process::Command,
    ) -> Result<(McpClient, tokio::process::Child), McpError> {
        McpClient::spawn_with(ClientOptions::default(), command).await
    }

    /// Like [`spawn`](McpClient::spawn) with options.
    pub async fn spawn_with(
        options: ClientOptions,
        command: &mut tokio::process::Command,
    ) -> Result<(McpClient, tokio::process::Child), McpError> {
        let (builder, hub) = McpClient::prepare(&options);
        let (session, child) = builder.spawn_child(command).map_err(McpError::Spawn)?;
        Ok((McpClient::finish(session, hub, &options).await?, child))
    }

    /// The session revision `initialize` negotiated ([`ProtocolVersion::LATEST`] on
    /// 2026-07-28, which has no handshake: see [`revision`](McpClient::revision)).
    pub fn protocol_version(&self) -> ProtocolVersion {
        self.version
    }

    /// The revision spoken on the wire: the negotiated session revision, or `2026-07-28`.
    pub fn revision(&self) -> &'static str {
        if self.wire.stateless {
            crate::STATELESS_VERSION
        } else {
            self.version.as_str()
        }
    }

    /// True when the client speaks 2026-07-28 ([`ClientOptions::stateless`]).
    pub fn is_stateless(&self) -> bool {
        self.wire.stateless
    }

    /// The server's `initialize` result (`serverInfo`, `capabilities`, `instructions`), or
    /// on 2026-07-28 its `server/discover` result (`supportedVersions`, `capabilities`,
    /// `serverInfo`).
    pub fn initialize_result(&self) -> &Value {
        &self.init
    }

    /// Any request by name, on the revision the client speaks (on 2026-07-28 with `_meta`
    /// and through the `InputRequiredResult` rounds): its result.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, McpError> {
        self.wire.request(self.client(), method, params).await
    }

    /// The JSON-RPC client underneath (for requests this type has no method for).
    pub fn client(&self) -> &Client {
        self.session.client()
    }

    /// Receives the server's `notifications/message` (by default they go to `tracing`).
    pub fn on_log(&self, callback: impl Fn(LogLevel, Value) + Send + Sync + 'static) {
        *self.hub.log.lock().unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(callback));
    }

    /// `ping`.
    pub async fn ping(&self) -> Result<(), McpError> {
        let _: Value = self.request(methods::PING, json!({})).await?;
        Ok(())
    }

    /// `logging/setLevel`.
    pub async fn set_log_level(&self, level: LogLevel) -> Result<(), McpError> {
        let _: Value = self
            .request(methods::LOGGING_SET_LEVEL, json!({"level": level.as_str()}))
            .await?;
        Ok(())
    }

    /// Every tool (`tools/list`, following `nextCursor` for at most 1 000 pages).
    pub async fn list_tools(&self) -> Result<Vec<ServerTool>, McpError> {
        #[derive(Deserialize)]
        struct Page {
            tools: Vec<ServerTool>,
            #[serde(rename = "nextCursor", default)]
            next: Option<String>,
        }
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page: Value = self.request(methods::TOOLS_LIST, params).await?;
            let page: Page = serde_json::from_value(page).map_err(|source| McpError::Decode {
                what: "tools/list",
                source,
            })?;
            tools.extend(page.tools);
            match page.next {
                Some(next) if !next.is_empty() => cursor = Some(next),
                _ => break,
            }
        }
        Ok(tools)
    }

    async fn call(
        client: Client,
        wire: Arc<Wire>,
        name: String,
        arguments: Value,
        token: Option<String>,
    ) -> Result<ToolResult, McpError> {
        let mut params = json!({"name": name, "arguments": arguments});
        if let Some(token) = token {
            params["_meta"] = json!({"progressToken": token});
        }
        let result: Value = wire.request(&client, methods::TOOLS_CALL, params).await?;
        serde_json::from_value(result).map_err(|source| McpError::Decode {
            what: "tools/call",
            source,
        })
    }

    fn arguments(arguments: impl Serialize) -> Result<Value, McpError> {
        serde_json::to_value(arguments).map_err(|e| McpError::Call(CallError::Params(e)))
    }

    /// `tools/call`: the tool's result (a failed tool is `is_error: true`; an unknown tool or
    /// bad request is an [`McpError`]).
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
    ) -> Result<ToolResult, McpError> {
        let arguments = McpClient::arguments(arguments)?;
        McpClient::call(
            self.client().clone(),
            Arc::clone(&self.wire),
            name.to_owned(),
            arguments,
            None,
        )
        .await
    }

    /// `tools/call` with a progress token: `on_progress` gets each `notifications/progress`
    /// for it, in order, before the result.
    pub async fn call_tool_with_progress(
        &self,
        name: &str,
        arguments: impl Serialize,
        on_progress: impl FnMut(Progress) + Send + 'static,
    ) -> Result<ToolResult, McpError> {
        let arguments = McpClient::arguments(arguments)?;
        let guard = self.hub.register(Box::new(on_progress));
        let token = guard.token.clone();
        let result = McpClient::call(
            self.client().clone(),
            Arc::clone(&self.wire),
            name.to_owned(),
            arguments,
            Some(token),
        )
        .await;
        drop(guard);
        result
    }

    /// Starts a `tools/call` in its own task, to wait for or [`cancel`](RunningCall::cancel).
    /// Must be called inside a tokio runtime.
    pub fn start_tool(
        &self,
        name: &str,
        arguments: impl Serialize,
        on_progress: Option<Box<dyn FnMut(Progress) + Send>>,
    ) -> Result<RunningCall, McpError> {
        let arguments = McpClient::arguments(arguments)?;
        let guard = on_progress.map(|f| self.hub.register(f));
        let token = guard.as_ref().map(|g| g.token.clone());
        let client = self.client().clone();
        let wire = Arc::clone(&self.wire);
        let name = name.to_owned();
        let task = tokio::spawn(async move {
            let result = McpClient::call(client, wire, name, arguments, token).await;
            drop(guard);
            result
        });
        Ok(RunningCall { task })
    }

    /// Ends the connection (a spawned server sees its stdin close) and waits for it.
    pub async fn close(self) -> Result<(), DriverError> {
        self.session.close().await
    }
}

/// A tool call running in its own task ([`McpClient::start_tool`]).
#[derive(Debug)]
pub struct RunningCall {
    task: tokio::task::JoinHandle<Result<ToolResult, McpError>>,
}

impl RunningCall {
    /// Cancels the call: the server is sent `notifications/cancelled` for it, its progress
    /// callback is dropped, and [`result`](RunningCall::result) gives
    /// [`McpError::Cancelled`].
    pub fn cancel(&self) {
        self.task.abort();
    }

    /// Waits for the call's result.
    pub async fn result(self) -> Result<ToolResult, McpError> {
        match self.task.await {
            Ok(result) => result,
            Err(_) => Err(McpError::Cancelled),
        }
    }
}
