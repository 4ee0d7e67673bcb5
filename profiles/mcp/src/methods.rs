//! MCP method names (requests and notifications) this profile knows.

/// Request: the client's first message; answered with the server's capabilities.
pub const INITIALIZE: &str = "initialize";
/// Notification: the client has the initialize result; normal operation starts.
pub const INITIALIZED: &str = "notifications/initialized";
/// Request, either direction: answered with an empty result.
pub const PING: &str = "ping";
/// Request: the server's tools.
pub const TOOLS_LIST: &str = "tools/list";
/// Request: run a tool.
pub const TOOLS_CALL: &str = "tools/call";
/// Request: the least severe log level the client wants in `notifications/message`.
pub const LOGGING_SET_LEVEL: &str = "logging/setLevel";
/// Notification, either direction: progress of a request that carried a progress token.
pub const PROGRESS: &str = "notifications/progress";
/// Notification, either direction: the sender no longer wants the answer to `requestId`.
pub const CANCELLED: &str = "notifications/cancelled";
/// Notification: a log message from the server.
pub const MESSAGE: &str = "notifications/message";
/// Notification: the server's tool list changed.
pub const TOOLS_LIST_CHANGED: &str = "notifications/tools/list_changed";

/// The member of `notifications/cancelled` params that names the request.
pub const CANCELLED_ID_MEMBER: &str = "requestId";

/// JSON-RPC error code for a request made before `initialize` (or a second `initialize`):
/// Invalid Request, as the request is out of the protocol's order.
pub const NOT_INITIALIZED: rpcwire::ErrorCode = rpcwire::ErrorCode::INVALID_REQUEST;

/// JSON-RPC error code for a request asking for a revision the server does not speak
/// (2026-07-28, `UnsupportedProtocolVersionError`); its `data` is
/// `{"supported": [..], "requested": ".."}`.
pub const UNSUPPORTED_PROTOCOL_VERSION: rpcwire::ErrorCode = rpcwire::ErrorCode(-32022);

/// The `_meta` key naming the revision of a request (2026-07-28: every request carries it).
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Request (2026-07-28): the server's revisions, capabilities and identity; replaces the
/// `initialize` handshake.
pub const SERVER_DISCOVER: &str = "server/discover";
/// Request (2026-07-28): a long-lived stream of the list-changed and resource-updated
/// notifications the client opts in to; replaces the GET stream and `resources/subscribe`.
pub const SUBSCRIPTIONS_LISTEN: &str = "subscriptions/listen";
/// Notification (2026-07-28): the first message of a `subscriptions/listen` stream, with the
/// notification types the server will send on it.
pub const SUBSCRIPTIONS_ACKNOWLEDGED: &str = "notifications/subscriptions/acknowledged";
/// Notification: the server's prompt list changed.
pub const PROMPTS_LIST_CHANGED: &str = "notifications/prompts/list_changed";
/// Notification: the server's resource list changed.
pub const RESOURCES_LIST_CHANGED: &str = "notifications/resources/list_changed";
/// Notification: a resource the client subscribed to changed (`params.uri`).
pub const RESOURCES_UPDATED: &str = "notifications/resources/updated";

/// The `_meta` key holding the client's capabilities (2026-07-28: every request carries it).
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// The `_meta` key holding the client's name and version (2026-07-28, recommended).
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The `_meta` key of a result naming the server (2026-07-28, `server/discover`).
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The `_meta` key with the least severe log level a request wants (2026-07-28): without it,
/// no `notifications/message` for that request.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of a notification on a `subscriptions/listen` stream: the id of the
/// `subscriptions/listen` request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// JSON-RPC error code (2026-07-28, `MissingRequiredClientCapabilityError`): the request
/// needs a capability the client did not declare; its `data.requiredCapabilities` names it.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: rpcwire::ErrorCode = rpcwire::ErrorCode(-32021);

/// JSON-RPC error code for a resource that does not exist: Invalid params (2026-07-28; the
/// earlier revisions' examples used -32002), with `data.uri`.
pub const RESOURCE_NOT_FOUND: rpcwire::ErrorCode = rpcwire::ErrorCode::INVALID_PARAMS;

/// Request (tasks extension, 2026-07-28): a task's status, with its result or error once it
/// has ended, or its pending input requests.
pub const TASKS_GET: &str = "tasks/get";
/// Request (tasks extension): answers to a task's input requests (`inputResponses`).
pub const TASKS_UPDATE: &str = "tasks/update";
/// Request (tasks extension): stop a task.
pub const TASKS_CANCEL: &str = "tasks/cancel";
