//! Spans and metrics of calls and connections, named as the OpenTelemetry semantic
//! conventions for JSON-RPC name them.
//!
//! Spans go through `tracing` (a `tracing-opentelemetry` layer turns them into OpenTelemetry
//! spans: `otel.name` is the span name, `otel.kind` its kind). Each call span carries
//! `rpc.system.name = "jsonrpc"`, `rpc.method` (a registered method; any other name is
//! `_OTHER` with the name in `rpc.method_original`, so that a flood of made-up names cannot
//! grow the set of names), `jsonrpc.request.id` (left out for a `null` id),
//! `jsonrpc.protocol.version`, `rpc.response.status_code` and `error.type` for errors,
//! `network.peer.address`, `network.peer.port` and `network.transport`. With no subscriber
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
//! - `rpc.server.calls_in_flight` (gauge);
//! - `rpc.server.connections` (gauge) by `network.transport`;
//! - `rpc.server.rejections` (counter) by `reason` (`limit`, `parse`, `overload`,
//!   `authentication`, `authorization`, `not_found`);
//! - `rpc.bytes_in`, `rpc.bytes_out` (counters): bytes read from and written to the peers of
//!   driver connections (stdio, TCP, WebSocket, child processes; not HTTP bodies).

use std::time::Instant;

use crate::caller::Caller;

/// The `rpc.method` of a name that is not a registered method.
pub const OTHER_METHOD: &str = "_OTHER";

/// The target of the one-line-per-call log (`rpcwire serve --log-calls` enables it at info
/// level): method, id, latency, status, transport and peer of each call, never a credential.
pub const CALL_LOG: &str = "rpcwire::calls";

/// `rpc.system.name`.
pub const SYSTEM: &str = "jsonrpc";

/// `jsonrpc.protocol.version`.
pub const PROTOCOL_VERSION: &str = "2.0";

/// Metric names (the Prometheus exporter writes them with underscores and units).
pub mod names {
    /// Histogram of server call durations, seconds.
    pub const SERVER_DURATION: &str = "rpc.server.call.duration";
    /// Histogram of client call durations, seconds.
    pub const CLIENT_DURATION: &str = "rpc.client.call.duration";
    /// Gauge of the server calls running.
    pub const IN_FLIGHT: &str = "rpc.server.calls_in_flight";
    /// Gauge of the open connections, by `network.transport`.
    pub const CONNECTIONS: &str = "rpc.server.connections";
    /// Counter of refused messages, by `reason`.
    pub const REJECTIONS: &str = "rpc.server.rejections";
    /// Counter of bytes read from connections' peers.
    pub const BYTES_IN: &str = "rpc.bytes_in";
    /// Counter of bytes written to connections' peers.
    pub const BYTES_OUT: &str = "rpc.bytes_out";
}

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

/// Whether metrics are recorded: off until [`enable_metrics`] (so that a build with the
/// feature but no recorder does no metrics work at all: no clock read, no label built).
#[cfg(feature = "metrics")]
static METRICS_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Starts recording metrics (feature `metrics`): call it once a recorder is installed
/// (`rpcwire serve --metrics` does). Until then every metrics point is one relaxed load.
#[cfg(feature = "metrics")]
pub fn enable_metrics() {
    METRICS_ON.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// True when metrics are recorded.
#[inline]
fn metered() -> bool {
    #[cfg(feature = "metrics")]
    return METRICS_ON.load(std::sync::atomic::Ordering::Relaxed);
    #[cfg(not(feature = "metrics"))]
    false
}

/// Metric handles kept once looked up (feature `metrics`): the `metrics!` macros build a key
/// and look it up in the recorder's registry on every use (hashing the name and labels,
/// allocating the label values), which cost more than the call being measured did on a fast
/// transport. Handles without labels live for the process; those by method and outcome live
/// in a small per-thread cache (no lock on the call path). Both assume the recorder is
/// installed globally before [`enable_metrics`], as `rpcwire serve --metrics` does.
#[cfg(feature = "metrics")]
mod handles {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock};

    use metrics::{Counter, Gauge, Histogram};

    use super::{names, SYSTEM};

    /// Most methods a thread keeps handles for (the server's are the registered ones plus
    /// `_OTHER`; a client's are the names it calls); past it the cache starts over.
    const MAX_METHODS: usize = 256;
    /// Most error outcomes kept per method; others are looked up each time.
    const MAX_ERRORS: usize = 16;

    pub(super) fn in_flight() -> &'static Gauge {
        static H: OnceLock<Gauge> = OnceLock::new();
        H.get_or_init(|| metrics::gauge!(names::IN_FLIGHT))
    }

    pub(super) fn bytes_in() -> &'static Counter {
        static H: OnceLock<Counter> = OnceLock::new();
        H.get_or_init(|| metrics::counter!(names::BYTES_IN))
    }

    pub(super) fn bytes_out() -> &'static Counter {
        static H: OnceLock<Counter> = OnceLock::new();
        H.get_or_init(|| metrics::counter!(names::BYTES_OUT))
    }

    /// One method's duration histograms: the successful calls', and those of the errors seen.
    struct MethodDurations {
        ok: Histogram,
        errors: Vec<(String, Histogram)>,
    }

    type Methods = HashMap<Arc<str>, MethodDurations>;

    thread_local! {
        static SERVER: RefCell<Methods> = RefCell::new(HashMap::new());
        static CLIENT: RefCell<Methods> = RefCell::new(HashMap::new());
    }

    fn lookup(name: &'static str, method: &str, error: Option<&str>) -> Histogram {
        let method = method.to_owned();
        match error {
            None => metrics::histogram!(name, "rpc.system.name" => SYSTEM, "rpc.method" => method),
            Some(kind) => metrics::histogram!(
                name,
                "rpc.system.name" => SYSTEM,
                "rpc.method" => method,
                "error.type" => kind.to_owned(),
            ),
        }
    }

    /// The shared name of `method` (its cache key), its entry made when missing: a call keeps
    /// it from start to end without allocating.
    fn intern(methods: &mut Methods, name: &'static str, method: &str) -> Arc<str> {
        if let Some((key, _)) = methods.get_key_value(method) {
            return key.clone();
        }
        if methods.len() >= MAX_METHODS {
            methods.clear();
        }
        let key: Arc<str> = method.into();
        let durations = MethodDurations {
            ok: lookup(name, method, None),
            errors: Vec::new(),
        };
        methods.insert(key.clone(), durations);
        key
    }

    fn record(
        methods: &mut Methods,
        name: &'static str,
        method: &str,
        error: Option<&str>,
        seconds: f64,
    ) {
        if !methods.contains_key(method) {
            intern(methods, name, method);
        }
        let Some(durations) = methods.get_mut(method) else {
            return;
        };
        let Some(kind) = error else {
            durations.ok.record(seconds);
            return;
        };
        if let Some((_, h)) = durations.errors.iter().find(|(k, _)| k == kind) {
            h.record(seconds);
        } else if durations.errors.len() < MAX_ERRORS {
            let h = lookup(name, method, Some(kind));
            h.record(seconds);
            durations.errors.push((kind.to_owned(), h));
        } else {
            lookup(name, method, Some(kind)).record(seconds);
        }
    }

    /// The server-side label of `method` (a registered name or `_OTHER`), kept for its call.
    pub(super) fn server_label(method: &str) -> Arc<str> {
        SERVER.with_borrow_mut(|m| intern(m, names::SERVER_DURATION, method))
    }

    /// Records a server call's duration by method and outcome.
    pub(super) fn server_duration(method: &str, error: Option<&str>, seconds: f64) {
        SERVER.with_borrow_mut(|m| record(m, names::SERVER_DURATION, method, error, seconds));
    }

    /// Records a client call's duration by method and outcome.
    pub(super) fn client_duration(method: &str, error: Option<&str>, seconds: f64) {
        CLIENT.with_borrow_mut(|m| record(m, names::CLIENT_DURATION, method, error, seconds));
    }
}

/// Counts a refused message (feature `metrics`; nothing otherwise).
#[inline]
pub fn reject(reason: Rejection) {
    #[cfg(feature = "metrics")]
    if metered() {
        metrics::counter!(names::REJECTIONS, "reason" => reason.as_str()).increment(1);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = reason;
}

/// Counts bytes read from a peer (feature `metrics`; nothing otherwise).
#[inline]
pub(crate) fn bytes_in(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        handles::bytes_in().increment(n as u64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// Counts bytes written to a peer (feature `metrics`; nothing otherwise).
#[inline]
pub(crate) fn bytes_out(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        handles::bytes_out().increment(n as u64);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// A request for a method that does not exist: its span (named `_OTHER`) and metrics, and a
/// rejection.
pub(crate) fn not_found(method: &str, id: &str, caller: &Caller) {
    ServerCall::start(method, false, id, caller, None)
        .end(Some(rpcwire::ErrorCode::METHOD_NOT_FOUND.0));
    reject(Rejection::NotFound);
}

/// Counts what the connection refused by itself (feature `metrics`).
#[inline]
pub(crate) fn problem(problem: &rpcwire::Problem<'_>) {
    use rpcwire::Problem;
    let reason = match problem {
        Problem::ParseError(_) => Rejection::Parse,
        Problem::FrameTooLarge { .. } | Problem::BatchTooLarge { .. } | Problem::IdTooLong(_) => {
            Rejection::Limit
        }
        Problem::Busy(_) => Rejection::Overload,
        _ => return,
    };
    reject(reason);
}

/// A JSON-RPC id's text as `jsonrpc.request.id` gives it: a string without its quotes, a
/// number as written; `None` for `null` (left out).
pub(crate) fn id_attribute(raw: &str) -> Option<std::borrow::Cow<'_, str>> {
    match raw.as_bytes().first() {
        None => None,
        Some(b'n') => None,
        // Decoded (escapes and all); only while a subscriber listens.
        Some(b'"') => Some(
            serde_json::from_str::<String>(raw)
                .map_or_else(|_| raw.trim_matches('"').into(), Into::into),
        ),
        Some(_) => Some(raw.into()),
    }
}

/// Makes the W3C trace context of the call (its params' `_meta`, else its caller's) the
/// parent of its span (feature `otel`; the params are not looked at otherwise).
fn remote_parent(span: &tracing::Span, caller: &Caller, params: Option<&str>) {
    #[cfg(feature = "otel")]
    {
        use crate::trace_context::TraceContext;
        let from_meta = params.and_then(TraceContext::from_params_meta);
        if let Some(cx) = from_meta.as_ref().or(caller.trace_context()) {
            cx.set_parent_of(span);
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = (span, caller, params);
}

/// True when a subscriber listens to the call spans: a transport then does the work they
/// need that it otherwise skips (the HTTP server's peer address and trace headers). One
/// check of a cached flag when none does.
#[inline]
pub fn spans_enabled() -> bool {
    tracing::span_enabled!(tracing::Level::INFO)
}

/// The span of a batch from `caller` (`rpc.batch`, named `batch`; its calls' spans are its
/// children): `rpc.system.name`, `jsonrpc.batch.size` (rpcwire's own, recorded by
/// [`batch_size`] once known), `network.*`; the caller's trace context is its parent. To
/// enter while the batch's calls start.
pub fn batch_span(caller: &Caller) -> tracing::Span {
    let span = tracing::info_span!(
        "rpc.batch",
        otel.name = "batch",
        otel.kind = "server",
        rpc.system.name = SYSTEM,
        jsonrpc.protocol.version = PROTOCOL_VERSION,
        jsonrpc.batch.size = tracing::field::Empty,
        network.peer.address = tracing::field::Empty,
        network.peer.port = tracing::field::Empty,
        network.transport = caller.transport().network_transport(),
    );
    if !span.is_disabled() {
        if let Some(peer) = caller.peer_addr() {
            span.record("network.peer.address", peer.ip().to_string());
            span.record("network.peer.port", i64::from(peer.port()));
        }
        if let Some(cx) = caller.trace_context() {
            cx.set_parent_of(&span);
        }
    }
    span
}

/// Records the number of messages of the batch whose span is the current one.
pub fn batch_size(len: usize) {
    if !spans_enabled() {
        return;
    }
    let span = tracing::Span::current();
    if !span.is_disabled() {
        span.record("jsonrpc.batch.size", i64::try_from(len).unwrap_or(i64::MAX));
    }
}

/// One call on the server: its span, and its start when anything measures it.
pub(crate) struct ServerCall {
    span: tracing::Span,
    started: Option<Instant>,
    /// What the call log says of it, when the log is on.
    log: Option<Box<CallLine>>,
    /// The `rpc.method` label, when metrics are recorded.
    #[cfg(feature = "metrics")]
    label: Option<std::sync::Arc<str>>,
}

impl ServerCall {
    /// Starts the call of `method` (its registered name, or the name on the wire when
    /// `registered` is false) with the id's JSON text (`""` for none) and its params' JSON
    /// text. While a subscriber listens, the span's remote parent is the W3C trace context of
    /// the params' `_meta` (MCP's place for it), or else the one the transport received (HTTP
    /// headers; see [`trace_context`](crate::trace_context)).
    pub(crate) fn start(
        method: &str,
        registered: bool,
        id: &str,
        caller: &Caller,
        params: Option<&str>,
    ) -> Self {
        let label = if registered { method } else { OTHER_METHOD };
        let span = tracing::info_span!(
            "rpc.server.call",
            otel.name = label,
            otel.kind = "server",
            otel.status_code = tracing::field::Empty,
            rpc.system.name = SYSTEM,
            rpc.method = label,
            rpc.method_original = tracing::field::Empty,
            jsonrpc.request.id = tracing::field::Empty,
            jsonrpc.protocol.version = PROTOCOL_VERSION,
            rpc.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
            network.peer.address = tracing::field::Empty,
            network.peer.port = tracing::field::Empty,
            network.transport = caller.transport().network_transport(),
            mcp.method.name = tracing::field::Empty,
            mcp.protocol.version = tracing::field::Empty,
            mcp.session.id = tracing::field::Empty,
            gen_ai.tool.name = tracing::field::Empty,
        );
        let listening = !span.is_disabled();
        if listening {
            if !registered {
                span.record("rpc.method_original", method);
            }
            if let Some(id) = id_attribute(id) {
                span.record("jsonrpc.request.id", &*id);
            }
            if let Some(peer) = caller.peer_addr() {
                span.record("network.peer.address", peer.ip().to_string());
                // As a signed integer: `tracing-opentelemetry` would export a `u64` as text.
                span.record("network.peer.port", i64::from(peer.port()));
            }
            remote_parent(&span, caller, params);
        }
        let metered = metered();
        #[cfg(feature = "metrics")]
        if metered {
            handles::in_flight().increment(1.0);
        }
        let log = tracing::enabled!(target: CALL_LOG, tracing::Level::INFO).then(|| {
            Box::new(CallLine {
                method: method.to_owned(),
                id: id.to_owned(),
                transport: caller.transport().network_transport(),
                peer: caller.peer_addr(),
            })
        });
        let measured = listening || log.is_some() || metered;
        ServerCall {
            span,
            started: measured.then(Instant::now),
            log,
            #[cfg(feature = "metrics")]
            label: metered.then(|| handles::server_label(label)),
        }
    }

    /// The call's span, to enter while its handler runs.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Ends the call: `error` is the error code it was answered with, if any.
    pub(crate) fn end(self, error: Option<i32>) {
        if let Some(line) = &self.log {
            line.write(self.started, error);
        }
        if let Some(code) = error {
            if !self.span.is_disabled() {
                let code = code.to_string();
                self.span.record("rpc.response.status_code", code.as_str());
                self.span.record("error.type", code.as_str());
                self.span.record("otel.status_code", "ERROR");
            }
        }
        #[cfg(feature = "metrics")]
        if let Some(method) = self.label {
            handles::in_flight().decrement(1.0);
            let seconds = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
            let code = error.map(|code| code.to_string());
            handles::server_duration(&method, code.as_deref(), seconds);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = self.started;
    }
}

/// The call log's line of one call.
pub(crate) struct CallLine {
    method: String,
    /// The id's JSON text (`""` for none).
    id: String,
    transport: &'static str,
    peer: Option<std::net::SocketAddr>,
}

impl CallLine {
    fn write(&self, started: Option<Instant>, error: Option<i32>) {
        let latency_us = started.map_or(0, |t| {
            u64::try_from(t.elapsed().as_micros()).unwrap_or(u64::MAX)
        });
        let status = match error {
            None => "ok".to_owned(),
            Some(code) => code.to_string(),
        };
        let peer = self.peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
        let id = if self.id.is_empty() { "-" } else { &self.id };
        tracing::info!(
            target: CALL_LOG,
            method = %self.method,
            id = %id,
            latency_us,
            status = %status,
            connection = %self.transport,
            peer = %peer,
            "call"
        );
    }
}

/// One call from a client: its span, and its start when anything measures it.
pub(crate) struct ClientCall {
    span: tracing::Span,
    started: Option<Instant>,
}

impl ClientCall {
    /// Starts a call of `method`.
    pub(crate) fn start(method: &str) -> Self {
        let span = tracing::info_span!(
            "rpc.client.call",
            otel.name = method,
            otel.kind = "client",
            otel.status_code = tracing::field::Empty,
            rpc.system.name = SYSTEM,
            rpc.method = method,
            jsonrpc.protocol.version = PROTOCOL_VERSION,
            rpc.response.status_code = tracing::field::Empty,
            error.type = tracing::field::Empty,
        );
        let measured = !span.is_disabled() || metered();
        ClientCall {
            span,
            started: measured.then(Instant::now),
        }
    }

    /// The call's span.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Ends the call with its outcome: the peer's error code, or the name of a local failure
    /// (`timeout`, `closed`, ...) as `error.type`.
    pub(crate) fn end(self, method: &str, error: Option<ClientError>) {
        let error_type = error.map(|e| match e {
            ClientError::Code(code) => code.to_string(),
            ClientError::Local(name) => name.to_owned(),
        });
        if let (Some(kind), false) = (&error_type, self.span.is_disabled()) {
            if let Some(ClientError::Code(_)) = error {
                self.span.record("rpc.response.status_code", kind.as_str());
            }
            self.span.record("error.type", kind.as_str());
            self.span.record("otel.status_code", "ERROR");
        }
        #[cfg(feature = "metrics")]
        if metered() {
            let seconds = self.started.map_or(0.0, |t| t.elapsed().as_secs_f64());
            handles::client_duration(method, error_type.as_deref(), seconds);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (self.started, method, error_type);
    }
}

/// How a client call failed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ClientError {
    /// The peer answered with this error code.
    Code(i32),
    /// It failed here (`timeout`, `closed`, ...).
    Local(&'static str),
}

/// An open connection, counted by `network.transport` while it lives (feature `metrics`),
/// with the span its driver runs in. Transports whose connections are not driver connections
/// (the HTTP server's) hold one per accepted connection.
#[derive(Debug)]
pub struct ConnectionScope {
    /// The transport counted, when metrics are recorded.
    #[cfg(feature = "metrics")]
    transport: Option<&'static str>,
}

impl ConnectionScope {
    /// Counts a connection open and makes its span.
    pub(crate) fn open(caller: &Caller) -> (Self, tracing::Span) {
        Self::open_on(caller.transport(), caller.peer_addr())
    }

    /// Counts a connection over `transport` from `peer` open (until dropped) and makes its
    /// span (`rpc.connection`, with `network.transport` and the peer's address and port).
    pub fn open_on(
        transport: crate::Transport,
        peer: Option<std::net::SocketAddr>,
    ) -> (Self, tracing::Span) {
        let transport = transport.network_transport();
        let span = tracing::info_span!(
            "rpc.connection",
            network.transport = transport,
            network.peer.address = tracing::field::Empty,
            network.peer.port = tracing::field::Empty,
        );
        if let (false, Some(peer)) = (span.is_disabled(), peer) {
            span.record("network.peer.address", peer.ip().to_string());
            span.record("network.peer.port", i64::from(peer.port()));
        }
        let metered = metered();
        #[cfg(feature = "metrics")]
        if metered {
            metrics::gauge!(names::CONNECTIONS, "network.transport" => transport).increment(1.0);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = metered;
        (
            ConnectionScope {
                #[cfg(feature = "metrics")]
                transport: metered.then_some(transport),
            },
            span,
        )
    }
}

impl Drop for ConnectionScope {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        if let Some(transport) = self.transport {
            metrics::gauge!(names::CONNECTIONS, "network.transport" => transport).decrement(1.0);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::id_attribute;

    #[test]
    fn ids_as_the_attribute_gives_them() {
        assert_eq!(id_attribute("7").as_deref(), Some("7"));
        assert_eq!(id_attribute(r#""req-1""#).as_deref(), Some("req-1"));
        assert_eq!(id_attribute(r#""w\u0031""#).as_deref(), Some("w1"));
        assert_eq!(id_attribute("null"), None);
        assert_eq!(id_attribute(""), None);
    }
}
