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
