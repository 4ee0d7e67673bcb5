//! # rpcwire-telemetry
//!
//! Spans and metrics of calls and connections, named as the OpenTelemetry semantic
//! conventions for JSON-RPC name them. This crate is the observer of rpcwire's one dispatcher
//! (`rpcwire-service`): the dispatcher reports each call through [`ServerCall`] and each
//! outgoing call through [`ClientCall`]; a transport reports only what it alone knows (where a
//! caller came from, [`Remote`]; the bytes it moved, [`bytes_in`] and [`bytes_out`]; its
//! connections, [`ConnectionScope`]). Exporters: the call log ([`CALL_LOG`], [`body_log`]),
//! the `metrics` facade (feature `metrics`), OTLP (feature `otlp`).
//!
//! Spans go through `tracing` (a `tracing-opentelemetry` layer turns them into OpenTelemetry
//! spans: `otel.name` is the span name, `otel.kind` its kind). Each call span carries
//! `rpc.system.name = "jsonrpc"`, `rpc.method` (a registered method; any other name is
//! `_OTHER` with the name in `rpc.method_original`, so that a flood of made-up names cannot
//! grow the set of names), `jsonrpc.request.id` (left out for a `null` id),
//! `jsonrpc.protocol.version`, `rpc.response.status_code` and `error.type` for errors,
//! `server.address` and `server.port` (the local address a connection arrived at),
//! `client.address`, `client.port`, `network.peer.address` and `network.peer.port` (its peer),
//! `network.transport`, `network.protocol.name` and `network.protocol.version` (what the
//! transport reported: [`Remote`], [`Transport::over`]). With no subscriber
//! listening, a span is one check of a cached flag and the clock is not read. A profile records
//! its own attributes into the current span from its handlers: the server span declares the
//! MCP ones (`mcp.method.name`, `mcp.protocol.version`, `mcp.session.id`, `gen_ai.tool.name`;
//! `error.type = "tool_error"` for a tool's failure).
//!
//! Metrics (feature `metrics`) go through the `metrics` facade: nothing is registered without
//! the feature, and with it nothing is recorded until the application installs a recorder
//! (`rpcwire serve --metrics` installs the Prometheus one):
//! - `rpc.server.call.duration`, `rpc.client.call.duration` (histograms, seconds) by
//!   `rpc.method`, `rpc.system.name` and, for errors, `error.type`;
//! - `rpc.server.calls_in_flight` (gauge): the calls whose handlers wait (run in tasks); a
//!   handler that answers at once runs within its connection's driver and is left out;
//! - `rpc.server.connections` (gauge) by `network.transport`, the server's own internal
//!   connections ([`Transport::internal`]) left out;
//! - `rpc.server.rejections` (counter) by `reason` (`limit`, `parse`, `overload`,
//!   `authentication`, `authorization`, `not_found`);
//! - `rpc.bytes_in`, `rpc.bytes_out` (counters): bytes read from and written to the peers of
//!   driver connections (stdio, TCP, WebSocket, child processes; not HTTP bodies);
//! - `rpc.server.batch.size` (histogram, messages): the size of each batch a driver
//!   connection received (refused batches left out);
//! - `mcp.server.sessions` (gauge): the open MCP Streamable HTTP sessions (any gauge a
//!   session table is counted as, see [`gauge_add`]).
//!
//!
//! Each is described once in [`catalog`] (unit, help text, buckets, Prometheus name); the
//! Prometheus exposition (module `prometheus`, feature `prometheus`) and OTLP read it there.
//!
//! Call spans are head sampled by [`set_sample_ratio`] (default 1: all): the decision is made
//! before a call's span is built, parent-based (a remote parent's `sampled` flag, else a draw
//! against the ratio), and an unsampled call's handler sends its trace on unsampled; see
//! [`SampleRatio`] and the module `sampling` it comes from for the rules and the known gaps.
//!
//! ```
//! use rpcwire_telemetry::{set_sample_ratio, SampleRatio};
//! // `rpcwire serve --otlp URL --otlp-sample 0.01`: one root call in a hundred traced.
//! set_sample_ratio(SampleRatio::new(0.01)?);
//! # set_sample_ratio(SampleRatio::ALWAYS);
//! # Ok::<(), rpcwire_telemetry::SampleRatioError>(())
//! ```

mod client_call;
mod clock;
mod recording;
mod remote;
mod server_call;
mod spans;

pub mod body_log;
pub mod catalog;
#[cfg(feature = "metrics")]
pub mod durations;
#[cfg(feature = "metrics")]
pub mod live_stats;
#[cfg(feature = "otlp")]
pub mod otlp;
#[cfg(feature = "prometheus")]
pub mod prometheus;
pub mod sampling;
pub mod trace_context;

pub use client_call::{ClientCall, ClientError};
pub use clock::now;
#[cfg(feature = "metrics")]
pub use recording::enable_metrics;
#[cfg(feature = "metrics")]
pub use recording::BatchSizer;
pub use recording::{bytes_in, bytes_out, gauge_add, metered, problem, reject};
pub use remote::{Remote, Transport};
pub use sampling::{sample_ratio, set_sample_ratio, SampleRatio, SampleRatioError};
pub use server_call::{not_found, InFlight, MethodMeter, Received, ServerCall};
pub use spans::{
    batch_size, batch_span, span_parent, spans_enabled, ConnectionParent, ConnectionScope,
};
pub use trace_context::TraceContext;

/// The `rpc.method` of a name that is not a registered method.
pub const OTHER_METHOD: &str = "_OTHER";

/// The target of the one-line-per-call log (`rpcwire serve --log-calls` enables it at info
/// level): method, id, latency, status, transport and peer of each call, never a credential.
pub const CALL_LOG: &str = "rpcwire::calls";

/// `rpc.system.name`.
pub const SYSTEM: &str = "jsonrpc";

/// `jsonrpc.protocol.version`.
pub const PROTOCOL_VERSION: &str = "2.0";

/// Metric names, as OpenTelemetry's conventions give them (the Prometheus exposition's are in
/// [`catalog`]).
pub mod names {
    /// Histogram of server call durations, seconds.
    pub const SERVER_DURATION: &str = "rpc.server.call.duration";
    /// Histogram of client call durations, seconds.
    pub const CLIENT_DURATION: &str = "rpc.client.call.duration";
    /// Gauge of the server calls whose handlers wait (run in tasks).
    pub const IN_FLIGHT: &str = "rpc.server.calls_in_flight";
    /// Gauge of the open connections, by `network.transport`.
    pub const CONNECTIONS: &str = "rpc.server.connections";
    /// Counter of refused messages, by `reason`.
    pub const REJECTIONS: &str = "rpc.server.rejections";
    /// Counter of bytes read from connections' peers.
    pub const BYTES_IN: &str = "rpc.bytes_in";
    /// Counter of bytes written to connections' peers.
    pub const BYTES_OUT: &str = "rpc.bytes_out";
    /// Histogram of the messages in each batch received (driver connections).
    pub const BATCH_SIZE: &str = "rpc.server.batch.size";
    /// Gauge of the open MCP Streamable HTTP sessions.
    pub const MCP_SESSIONS: &str = "mcp.server.sessions";
}

/// The buckets of the batch-size histogram (messages).
pub const BATCH_SIZE_BUCKETS: [f64; 11] = [
    1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0,
];

/// The buckets of the call-duration histograms (seconds): those the OpenTelemetry semantic
/// conventions recommend for `rpc.*.call.duration`.
pub const DURATION_BUCKETS: [f64; 14] = [
    0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0,
];

/// Why a message was refused (the `reason` of `rpc.server.rejections`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejection {
    /// A size or count limit.
    Limit,
    /// Bytes that are not JSON.
    Parse,
    /// No room: Server busy, a rate limit.
    Overload,
    /// No valid credentials.
    Authentication,
    /// An identity not allowed the method.
    Authorization,
    /// A method that does not exist.
    NotFound,
}

impl Rejection {
    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            Rejection::Limit => "limit",
            Rejection::Parse => "parse",
            Rejection::Overload => "overload",
            Rejection::Authentication => "authentication",
            Rejection::Authorization => "authorization",
            Rejection::NotFound => "not_found",
        }
    }
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
