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
//! - `rpc.server.calls_in_flight` (gauge): the calls whose handlers wait (run in tasks); a
//!   handler that answers at once runs within its connection's driver and is left out;
//! - `rpc.server.connections` (gauge) by `network.transport`;
//! - `rpc.server.rejections` (counter) by `reason` (`limit`, `parse`, `overload`,
//!   `authentication`, `authorization`, `not_found`);
//! - `rpc.bytes_in`, `rpc.bytes_out` (counters): bytes read from and written to the peers of
//!   driver connections (stdio, TCP, WebSocket, child processes; not HTTP bodies);
//! - `rpc.server.batch.size` (histogram, messages): the size of each batch a driver
//!   connection received (refused batches left out);
//! - `mcp.server.sessions` (gauge): the open MCP Streamable HTTP sessions (any gauge a
//!   session table is counted as, see [`gauge_add`]).
//!
//! Call spans are head sampled by [`set_sample_ratio`] (default 1: all): the decision is made
//! before a call's span is built, parent-based (a remote parent's `sampled` flag, else a draw
//! against the ratio), and an unsampled call's handler sends its trace on unsampled; see
//! [`SampleRatio`] and the module `sampling` it comes from for the rules and the known gaps.
//!
//! ```
//! use rpcwire_tokio::telemetry::{set_sample_ratio, SampleRatio};
//! // `rpcwire serve --otlp URL --otlp-sample 0.01`: one root call in a hundred traced.
//! set_sample_ratio(SampleRatio::new(0.01)?);
//! # set_sample_ratio(SampleRatio::ALWAYS);
//! # Ok::<(), rpcwire_tokio::telemetry::SampleRatioError>(())
//! ```

use std::time::{Duration, Instant};

pub use crate::sampling::{sample_ratio, set_sample_ratio, SampleRatio, SampleRatioError};

// The clock of call durations is the driver's (tokio's: a paused test clock times both ends
// of a call alike), which hands its reading of the input's arrival to `ServerCall::start`.
use crate::driver::clock_now as clock;

use rpcwire::wire::RawJson;

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

/// What is recorded, one bit each: metrics ([`enable_metrics`]) and the live view
/// ([`crate::live_stats::enable`]); all off until enabled, so that a build with the feature but
/// neither does no such work at all: no clock read, no label built. One load tells both.
#[cfg(feature = "metrics")]
static RECORDING: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
#[cfg(feature = "metrics")]
const METRICS_BIT: u8 = 1;
#[cfg(feature = "metrics")]
const LIVE_BIT: u8 = 2;
/// With [`METRICS_BIT`]: the call durations are counted in process
/// ([`crate::durations::aggregate`] ran first), the path of a metered call kept inline.
#[cfg(feature = "metrics")]
const COUNTED_BIT: u8 = 4;

/// Starts recording metrics (feature `metrics`): call it once a recorder is installed
/// (`rpcwire serve --metrics` does). Until then every metrics point is one relaxed load.
#[cfg(feature = "metrics")]
pub fn enable_metrics() {
    let counted = if crate::durations::on() {
        COUNTED_BIT
    } else {
        0
    };
    RECORDING.fetch_or(METRICS_BIT | counted, std::sync::atomic::Ordering::Relaxed);
}

/// Starts feeding the live view (see [`crate::live_stats::enable`]).
#[cfg(feature = "metrics")]
pub(crate) fn enable_live_stats() {
    RECORDING.fetch_or(LIVE_BIT, std::sync::atomic::Ordering::Relaxed);
}

/// What is recorded now: `(metrics, live view)`.
#[inline]
fn recording() -> (bool, bool) {
    #[cfg(feature = "metrics")]
    {
        let on = RECORDING.load(std::sync::atomic::Ordering::Relaxed);
        (on & METRICS_BIT != 0, on & LIVE_BIT != 0)
    }
    #[cfg(not(feature = "metrics"))]
    (false, false)
}

/// True when metrics are recorded.
#[inline]
pub(crate) fn metered() -> bool {
    recording().0
}

/// What is recorded, as bits (0: nothing; always 0 without the feature): one load, the same
/// check on every call whatever is on.
#[inline]
fn recording_bits() -> u8 {
    #[cfg(feature = "metrics")]
    {
        RECORDING.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "metrics"))]
    0
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
        count_rejection(reason);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = reason;
}

/// The recording of [`reject`], out of line: the callers (the driver's input loop among them)
/// keep only the check, and so compile alike with the feature and without.
#[cfg(feature = "metrics")]
#[cold]
#[inline(never)]
fn count_rejection(reason: Rejection) {
    metrics::counter!(names::REJECTIONS, "reason" => reason.as_str()).increment(1);
}

/// Adds `delta` to the gauge `name` (feature `metrics`, when recorded; nothing otherwise):
/// for counts kept outside this crate, such as a session table's.
#[inline]
pub fn gauge_add(name: &'static str, delta: f64) {
    #[cfg(feature = "metrics")]
    if metered() {
        add_to_gauge(name, delta);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, delta);
}

#[cfg(feature = "metrics")]
#[inline(never)]
fn add_to_gauge(name: &'static str, delta: f64) {
    metrics::gauge!(name).increment(delta);
}

/// Measures the batches a driver connection receives from the core's counters (the core
/// tells messages, not batch boundaries): a batch opens when the batches accepted move with a
/// new frame, and its size is the messages taken until the next frame or until the input is
/// drained (a batch is decoded whole from buffered input). A connection has one while metrics
/// are recorded when it opens (kept with its batch spans' state, see `batch_trace`: a
/// connection without either holds and checks one empty pointer).
#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
pub(crate) struct BatchSizer {
    frames: u64,
    /// Batches received, and of them those refused whole (which hand out nothing to count).
    batches: u64,
    rejections: u64,
    messages: u64,
    /// The message count before the open batch's first message, plus one (0: none open).
    open: u64,
}

#[cfg(feature = "metrics")]
impl BatchSizer {
    fn messages(stats: &rpcwire::Stats) -> u64 {
        stats.requests_in + stats.notifications_in + stats.responses_in + stats.invalid_messages
    }

    /// After the core handed out an item while no batch is open and none came since the last
    /// look: the messages so far, the count a batch that comes next starts after (inlined
    /// where the counters are read: only the fields it adds are loaded).
    #[inline]
    pub(crate) fn count(&mut self, stats: &rpcwire::Stats) {
        self.messages = Self::messages(stats);
    }

    /// True while a batch is open (its size not yet recorded).
    pub(crate) fn is_open(&self) -> bool {
        self.open > 0
    }

    /// After the core handed out an item (`drained` false) or said it needs more input, when
    /// a batch came since the last look or one is open (else [`count`](Self::count)). Its
    /// `frames` may lag behind then (the frames of one message are not looked at): a batch is a
    /// new frame, so the lag hides none.
    #[inline]
    pub(crate) fn observe(&mut self, stats: &rpcwire::Stats, drained: bool) {
        let messages = Self::messages(stats);
        if stats.frames_in != self.frames {
            self.frames = stats.frames_in;
            self.close(self.messages);
            if stats.batches_in != self.batches {
                self.batch_frame(stats.batches_in, stats.batch_rejections);
            }
        }
        self.messages = messages;
        if drained {
            self.close(messages);
        }
    }

    /// A batch came since the last look: it opens unless it was refused whole.
    #[inline(never)]
    fn batch_frame(&mut self, batches: u64, rejections: u64) {
        if batches - self.batches > rejections - self.rejections {
            self.open = self.messages + 1;
        }
        self.batches = batches;
        self.rejections = rejections;
    }

    /// Closes the open batch, if any (a call per frame: the check is inlined).
    #[inline]
    fn close(&mut self, messages: u64) {
        if self.open > 0 {
            self.record(messages);
        }
    }

    #[inline(never)]
    fn record(&mut self, messages: u64) {
        let size = messages.saturating_sub(self.open - 1);
        self.open = 0;
        metrics::histogram!(names::BATCH_SIZE).record(size as f64);
    }
}

/// Where a body answered whole (one frame: an HTTP request's) starts in its connection's
/// counters, for [`batch_body_done`]; `u64::MAX` while metrics are not recorded.
#[inline]
pub(crate) fn batch_body_mark(stats: impl FnOnce() -> rpcwire::Stats) -> u64 {
    #[cfg(feature = "metrics")]
    if metered() {
        let s = stats();
        // A refused batch counts one invalid message and one rejection: it nets out.
        return BatchSizer::messages(&s) - s.batch_rejections;
    }
    let _ = stats;
    u64::MAX
}

/// Records the size of the batch a body was (`is_batch`: it is a JSON array) from its
/// connection's counters after it (`mark` from [`batch_body_mark`]).
#[inline]
pub(crate) fn batch_body_done(mark: u64, is_batch: bool, stats: impl FnOnce() -> rpcwire::Stats) {
    #[cfg(feature = "metrics")]
    if mark != u64::MAX && is_batch {
        let s = stats();
        let size = (BatchSizer::messages(&s) - s.batch_rejections).saturating_sub(mark);
        if size > 0 {
            metrics::histogram!(names::BATCH_SIZE).record(size as f64);
        }
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (mark, is_batch, stats);
}

/// Counts bytes read from a peer (feature `metrics`; nothing otherwise).
#[inline]
pub(crate) fn bytes_in(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        count_bytes(handles::bytes_in, n);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// Adds `n` to a byte counter, out of line (the driver's I/O loop keeps only the check).
#[cfg(feature = "metrics")]
#[inline(never)]
fn count_bytes(counter: fn() -> &'static metrics::Counter, n: usize) {
    counter().increment(n as u64);
}

/// Counts bytes written to a peer (feature `metrics`; nothing otherwise).
#[inline]
pub(crate) fn bytes_out(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        count_bytes(handles::bytes_out, n);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// A request for a method that does not exist: its span (named `_OTHER`) and metrics, and a
/// rejection.
pub(crate) fn not_found(method: &str, id: &str, caller: &Caller) {
    let mut call = ServerCall::new();
    call.start(method, None, || id, caller, None, None);
    call.end(Some(rpcwire::ErrorCode::METHOD_NOT_FOUND.0));
    call.release();
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

/// True when the call log takes calls now (`serve --log-calls`). Inline: a level and the
/// callsite's cached interest, checked in place (out of line, the call itself cost more).
#[inline(always)]
fn call_log_on() -> bool {
    tracing::enabled!(target: CALL_LOG, tracing::Level::INFO)
}

/// Only params that are an object with a `_` in them can have a `_meta` (feature `otel`):
/// told from the bytes, before the params are made text (a UTF-8 check) and searched (every
/// call, sampled or not, pays for what is done here).
#[inline(always)]
fn params_may_hold_meta(params: Option<RawJson<'_>>) -> bool {
    #[cfg(feature = "otel")]
    return params.is_some_and(|p| p.is_object() && p.as_bytes().contains(&b'_'));
    #[cfg(not(feature = "otel"))]
    {
        let _ = params;
        false
    }
}

/// The W3C trace context of the call: its params' `_meta` (feature `otel`; `params` are those
/// that may hold one, [`params_may_hold_meta`], else `None`: others are not looked at, not
/// even checked as UTF-8), else its caller's (HTTP headers). The remote parent of its span,
/// and what its sampling follows.
fn remote_parent<'c>(
    caller: &'c Caller,
    params: Option<RawJson<'_>>,
) -> Option<std::borrow::Cow<'c, crate::trace_context::TraceContext>> {
    #[cfg(feature = "otel")]
    if let Some(cx) =
        params.and_then(|p| crate::trace_context::TraceContext::from_params_meta(p.as_str()))
    {
        return Some(std::borrow::Cow::Owned(cx));
    }
    #[cfg(not(feature = "otel"))]
    let _ = params;
    caller.trace_context().map(std::borrow::Cow::Borrowed)
}

/// True when a subscriber listens to the call spans: a transport then does the work they
/// need that it otherwise skips (the HTTP server's peer address and trace headers). One
/// check of a cached flag when none does.
#[inline]
pub fn spans_enabled() -> bool {
    tracing::span_enabled!(tracing::Level::INFO)
}

thread_local! {
    /// The id of the span of the connection whose task is polled now on this thread, held
    /// there instead of entered ([`ConnectionParent`]); 0: none.
    static CONNECTION_SPAN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Makes a connection's span the parent of the spans rpcwire makes while the connection's
/// task is polled (its calls', its batches'), without entering it: held for one poll, until
/// dropped.
///
/// Entering a span on every poll of a task (what `tracing::Instrument` does) costs the
/// subscriber's span stack and, with OpenTelemetry's layer, a context switch, on and off
/// each time: about 1 300 instructions per call over HTTP, calls sampled or not. Held here,
/// the connection's span is looked up only when a span is made. Events logged in the task
/// are not in the span: enter it (`Span::in_scope`) around those.
#[must_use = "the span is the parent only while this is held"]
pub struct ConnectionParent(u64);

impl ConnectionParent {
    /// Holds `span` (none when it is disabled) as the parent of the spans made until dropped.
    #[inline]
    pub fn hold(span: &tracing::Span) -> Self {
        let id = span.id().map_or(0, |id| id.into_u64());
        ConnectionParent(CONNECTION_SPAN.with(|cell| cell.replace(id)))
    }
}

impl Drop for ConnectionParent {
    #[inline]
    fn drop(&mut self) {
        CONNECTION_SPAN.with(|cell| cell.set(self.0));
    }
}

/// The parent of a span rpcwire makes now, and of an event logged now: the span entered,
/// else the span of the connection being polled ([`ConnectionParent`]: held there rather
/// than entered), else none (a root). For events logged in a connection's task outside its
/// calls, so that a log line still shows its connection:
/// `tracing::debug!(parent: span_parent(), ...)` (looked up only when the event is enabled).
///
/// ```
/// tracing::debug!(parent: rpcwire_tokio::telemetry::span_parent(), "closed");
/// ```
pub fn span_parent() -> Option<tracing::Id> {
    tracing::dispatcher::get_default(|d| d.current_span().id().cloned()).or_else(|| {
        std::num::NonZeroU64::new(CONNECTION_SPAN.with(std::cell::Cell::get))
            .map(tracing::Id::from_non_zero_u64)
    })
}

/// The span of a batch from `caller` (`rpc.batch`, named `batch`; its calls' spans are its
/// children): `rpc.system.name`, `jsonrpc.batch.size` (rpcwire's own, recorded by
/// [`batch_size`] once known), `network.*`; the caller's trace context is its parent. To
/// enter while the batch's calls start.
pub fn batch_span(caller: &Caller) -> tracing::Span {
    let span = tracing::info_span!(
        parent: span_parent(),
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

/// When a transport read the input that brought a call, on each clock a call may be timed
/// on: the system clock's reading, and the reading of the clock of the durations counted in
/// process (`durations::ticks`, feature `metrics`; 0 when they are not). Read once per read
/// of input, not once per call: the calls handled in place after a read are timed from it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Received {
    at: Instant,
    #[cfg(feature = "metrics")]
    ticks: u64,
}

impl Received {
    /// Input read at `at` (the system clock's reading the transport took), the clock of the
    /// counted durations read now if they are counted.
    #[inline]
    pub(crate) fn at(at: Instant) -> Self {
        Received {
            at,
            #[cfg(feature = "metrics")]
            ticks: if crate::durations::on() {
                crate::durations::ticks()
            } else {
                0
            },
        }
    }

    /// The counted durations' clock at the read, or now when it was not read then (durations
    /// were counted from after the read on).
    #[cfg(feature = "metrics")]
    #[inline]
    fn ticks(received: Option<&Self>) -> u64 {
        match received {
            Some(&Received { ticks, .. }) if ticks != 0 => ticks,
            _ => crate::durations::ticks(),
        }
    }
}

/// A router method's metric handles (feature `metrics`; empty otherwise): found by its label
/// on the method's first measured call and kept with the method in the router, so that the
/// calls after it reach their histograms with no lookup by name (no per-thread table, no
/// hashing, no reference count).
#[derive(Debug, Default, Clone)]
pub(crate) struct MethodMeter {
    /// Its histograms, when durations are counted in process.
    #[cfg(feature = "metrics")]
    durations: std::sync::OnceLock<&'static crate::durations::MethodDurations>,
    /// Its counts in the live view.
    #[cfg(feature = "metrics")]
    live: std::sync::OnceLock<&'static crate::live_stats::MethodStats>,
}

#[cfg(feature = "metrics")]
impl MethodMeter {
    /// The handles of the calls labelled `_OTHER` (a fallback's, a method not found).
    fn other() -> &'static MethodMeter {
        static OTHER: MethodMeter = MethodMeter {
            durations: std::sync::OnceLock::new(),
            live: std::sync::OnceLock::new(),
        };
        &OTHER
    }

    /// Its histograms, once its first measured call found them.
    #[inline]
    fn counted(&self) -> Option<&'static crate::durations::MethodDurations> {
        self.durations.get().copied()
    }

    fn durations(&self, label: &str) -> &'static crate::durations::MethodDurations {
        self.durations
            .get_or_init(|| crate::durations::server_method(label))
    }

    fn live(&self, label: &str) -> Option<&'static crate::live_stats::MethodStats> {
        if let Some(live) = self.live.get() {
            return Some(live);
        }
        let live = crate::live_stats::method(label)?;
        Some(*self.live.get_or_init(|| live))
    }
}

/// One call on the server: its span, and what measures it.
///
/// Built so that a call nothing takes costs the same with the `metrics` feature as without:
/// [`start`](Self::start) and [`end`](Self::end) are inlined into the handler's caller as a
/// few loads and branches, and all the work of a call something takes is out of line
/// ([`start_taken`](Self::start_taken), [`finish`](Self::finish)), so the feature's code does
/// not change how the compiler inlines the hot code around them.
pub(crate) struct ServerCall {
    span: tracing::Span,
    /// The start on the system clock, when the call log, the span or the live view takes the
    /// call (the durations counted in process have a clock of their own).
    started: Option<Instant>,
    /// What the call log says of it, when the log is on.
    log: Option<Box<CallLine>>,
    /// What measures it, when metrics or the live view are recorded.
    #[cfg(feature = "metrics")]
    meters: Meters,
    /// The trace id of a call not sampled (0 for one sampled, or nothing listened to), held
    /// while its handler runs (see `sampling`).
    unsampled: u128,
}

/// A listened-to call's sampling decision (made in [`ServerCall::start`], or out of line for a
/// call that may have a remote parent): its remote parent, and whether it is sampled (a call
/// not sampled comes this far only when the call log takes it).
struct Decided<'c> {
    parent: Option<std::borrow::Cow<'c, crate::trace_context::TraceContext>>,
    sampled: bool,
}

/// What measures a server call besides its span and the call log (feature `metrics`).
#[cfg(feature = "metrics")]
#[derive(Default)]
struct Meters {
    /// The `rpc.method` label, when metrics go through the facade.
    label: Option<std::sync::Arc<str>>,
    /// The live view's counts of the method, when it is on.
    live: Option<&'static crate::live_stats::MethodStats>,
    /// The method's histograms, when durations are counted in process
    /// ([`crate::durations::aggregate`]), and the start on their clock.
    counted: Option<(&'static crate::durations::MethodDurations, u64)>,
}

impl ServerCall {
    /// Starts the call of `method` (its registered name with its handles `meter`, or the name
    /// on the wire when `meter` is `None`) with the id's JSON text (`""` for none) and its
    /// params (made text only for a trace context in their `_meta`); `received` is when its
    /// input was read, if the transport read the clocks then ([`Received`]; else a clock is
    /// read here, when anything measures the call). The id is asked for only when a span or
    /// the call log takes it: making it text costs a UTF-8 check on every call that nothing
    /// listens to. While a subscriber listens, the span's remote
    /// parent is the W3C trace context of the params' `_meta` (MCP's place for it), or else
    /// the one the transport received (HTTP headers; see
    /// [`trace_context`](crate::trace_context)).
    ///
    /// Fills in a call made by [`new`](Self::new) where it lies (the call's place on the
    /// caller's stack): returning a call moved it, a dozen words per call.
    #[inline(always)]
    pub(crate) fn start<'i>(
        &mut self,
        method: &str,
        meter: Option<&MethodMeter>,
        id: impl Fn() -> &'i str,
        caller: &Caller,
        params: Option<RawJson<'_>>,
        received: Option<&Received>,
    ) {
        // The span and the call log are at info level: below it (the default of `rpcwire
        // serve`) neither can listen, and neither is built.
        let listened = tracing::level_filters::STATIC_MAX_LEVEL >= tracing::Level::INFO
            && tracing::level_filters::LevelFilter::current() >= tracing::Level::INFO;
        // Sampling first: a call not sampled and not logged takes the path of a call nobody
        // listens to (metrics alone inline), holding only its trace id.
        if listened {
            let in_params = params_may_hold_meta(params);
            if in_params || caller.trace_context().is_some() {
                // It may have a remote parent: looked for, decided and started out of line.
                let params = params.filter(|_| in_params);
                return self.start_child(method, meter, &id, caller, params, received);
            }
            // A root. The common case at a ratio below 1, not sampled nor logged, is decided
            // here with no call (its trace id is drawn only if its handler calls out).
            let sampled = crate::sampling::sample_root();
            if !sampled {
                self.unsampled = crate::sampling::LAZY_ROOT;
            }
            if sampled || call_log_on() {
                let decided = Decided {
                    parent: None,
                    sampled,
                };
                return self.start_taken(method, meter, &id, caller, received, Some(decided));
            }
        }
        let recording = recording_bits();
        if recording == 0 {
            // Nothing takes the call: nothing to build or measure, at the cost of two loads.
            return;
        }
        // Metrics alone, durations counted in process (`rpcwire serve --metrics`): the
        // method's histograms and one clock reading, inline.
        #[cfg(feature = "metrics")]
        if recording == METRICS_BIT | COUNTED_BIT {
            if let Some(counted) = meter.and_then(MethodMeter::counted) {
                self.meters.counted = Some((counted, Received::ticks(received)));
                return;
            }
        }
        self.start_taken(method, meter, &id, caller, received, None);
    }

    /// The start of a listened-to call that may have a remote parent (a trace context
    /// received by its transport, or `params` that may hold one in their `_meta`: `None`
    /// otherwise): sampled as its parent is, if it has one, else by the ratio; a call not
    /// sampled keeps its trace id in `unsampled` (its handler sends the trace on, unsampled).
    /// Then what takes it is started, unless nothing does.
    #[inline(never)]
    fn start_child<'i>(
        &mut self,
        method: &str,
        meter: Option<&MethodMeter>,
        id: &dyn Fn() -> &'i str,
        caller: &Caller,
        params: Option<RawJson<'_>>,
        received: Option<&Received>,
    ) {
        let parent = remote_parent(caller, params);
        let sampled = match parent.as_deref() {
            Some(cx) => cx.sampled(),
            // A `_` in the params that was no `_meta.traceparent`: a root after all.
            None => crate::sampling::sample_root(),
        };
        let mut decided = None;
        if sampled || call_log_on() {
            decided = Some(Decided { parent, sampled });
        } else {
            self.unsampled = parent.map_or(crate::sampling::LAZY_ROOT, |cx| cx.trace_number());
        }
        self.start_taken(method, meter, id, caller, received, decided);
    }

    /// A call that nothing takes (yet): [`start`](Self::start) it.
    #[inline(always)]
    pub(crate) fn new() -> Self {
        ServerCall {
            span: tracing::Span::none(),
            started: None,
            log: None,
            #[cfg(feature = "metrics")]
            meters: Meters::default(),
            unsampled: 0,
        }
    }

    /// The start of a call that something may take: its span and log line (`listened`), its
    /// metric handles, its clock readings.
    #[allow(clippy::too_many_arguments)]
    #[inline(never)]
    fn start_taken<'i>(
        &mut self,
        method: &str,
        meter: Option<&MethodMeter>,
        id: &dyn Fn() -> &'i str,
        caller: &Caller,
        received: Option<&Received>,
        decided: Option<Decided<'_>>,
    ) {
        let call = self;
        if let Some(decided) = decided {
            call.listen(method, meter.is_some(), id, caller, decided);
        }
        #[cfg(feature = "metrics")]
        {
            let (metered, live) = recording();
            if metered || live {
                let label = if meter.is_some() {
                    method
                } else {
                    OTHER_METHOD
                };
                let meter = meter.unwrap_or(MethodMeter::other());
                call.meter(label, meter, metered, live, received);
            }
        }
        #[cfg(not(feature = "metrics"))]
        let _ = meter;
        if call.timed() {
            call.started = Some(received.map_or_else(clock, |r| r.at));
        }
    }

    /// The span and the call log's line of a call, when a subscriber may take them.
    #[inline(never)]
    fn listen<'i>(
        &mut self,
        method: &str,
        registered: bool,
        id: &dyn Fn() -> &'i str,
        caller: &Caller,
        decided: Decided<'_>,
    ) {
        let label = if registered { method } else { OTHER_METHOD };
        // Head sampling was decided before any span is built (`start`, `start_child`), and
        // an unsampled call's trace kept there.
        let Decided { parent, sampled } = decided;
        if sampled {
            self.span = Self::span_of(method, label, registered, id, caller, parent.as_deref());
        }
        let log = call_log_on().then(|| {
            Box::new(CallLine {
                method: method.to_owned(),
                id: id().to_owned(),
                transport: caller.transport().network_transport(),
                peer: caller.peer_addr(),
                bodies: crate::body_log::config().map(|_| Bodies::default()),
            })
        });
        self.log = log;
    }

    /// The span of a sampled call.
    fn span_of<'i>(
        method: &str,
        label: &str,
        registered: bool,
        id: &dyn Fn() -> &'i str,
        caller: &Caller,
        parent: Option<&crate::trace_context::TraceContext>,
    ) -> tracing::Span {
        let span = tracing::info_span!(
            parent: span_parent(),
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
            if let Some(id) = id_attribute(id()) {
                span.record("jsonrpc.request.id", &*id);
            }
            if let Some(peer) = caller.peer_addr() {
                span.record("network.peer.address", peer.ip().to_string());
                // As a signed integer: `tracing-opentelemetry` would export a `u64` as text.
                span.record("network.peer.port", i64::from(peer.port()));
            }
            if let Some(cx) = parent {
                cx.set_parent_of(&span);
            }
        }
        span
    }

    /// Takes the handles of the metrics recorded (`metered`) and of the live view (`live`).
    #[cfg(feature = "metrics")]
    #[inline]
    fn meter(
        &mut self,
        label: &str,
        meter: &MethodMeter,
        metered: bool,
        live: bool,
        received: Option<&Received>,
    ) {
        if metered {
            if crate::durations::on() {
                self.meters.counted = Some((meter.durations(label), Received::ticks(received)));
            } else {
                self.meters.label = Some(handles::server_label(label));
            }
        }
        if live {
            self.meters.live = meter.live(label);
        }
    }

    /// True when anything takes the call's duration on the system clock (all but the
    /// durations counted in process, which have a clock of their own).
    #[inline]
    fn timed(&self) -> bool {
        #[cfg(feature = "metrics")]
        let metered = self.meters.label.is_some() || self.meters.live.is_some();
        #[cfg(not(feature = "metrics"))]
        let metered = false;
        metered || self.log.is_some() || !self.span.is_disabled()
    }

    /// The call's span, to enter while its handler runs.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The trace id of a call not sampled (0 otherwise): to hold while its handler runs
    /// (`sampling::in_trace`, `sampling::Unsampled`), so that its outgoing calls send the
    /// trace on unsampled.
    #[inline(always)]
    pub(crate) fn unsampled(&self) -> u128 {
        self.unsampled
    }

    /// The call's handler waits (it runs in a task): the call counts in the calls in flight
    /// until the returned guard is dropped, which the task does when its handler has
    /// answered, or its abort does when the connection closes first. A handler that answers
    /// at once is never counted: it is in flight only while it runs in its connection's
    /// driver, between two reads of the same input.
    pub(crate) fn waits(&self) -> InFlight {
        #[cfg(feature = "metrics")]
        if self.metered() {
            in_flight(1);
            return InFlight { counted: true };
        }
        InFlight {
            #[cfg(feature = "metrics")]
            counted: false,
        }
    }

    /// True when metrics take the call (in process or through the facade).
    #[cfg(feature = "metrics")]
    fn metered(&self) -> bool {
        self.meters.counted.is_some() || self.meters.label.is_some()
    }

    /// Lets go of an ended call ([`end`](Self::end) took out everything it held): no drop
    /// glue runs.
    #[inline(always)]
    pub(crate) fn release(self) {
        debug_assert!(self.span.is_disabled() && self.log.is_none());
        #[cfg(feature = "metrics")]
        debug_assert!(self.meters.label.is_none());
        std::mem::forget(self);
    }

    /// The call log's bodies, when it shows them.
    fn bodies(&mut self) -> Option<&mut Bodies> {
        self.log.as_mut().and_then(|line| line.bodies.as_mut())
    }

    /// Keeps the params for the call log, when it shows bodies.
    #[inline]
    pub(crate) fn note_params(&mut self, params: Option<RawJson<'_>>) {
        if self.log.is_some() {
            self.keep_params(params);
        }
    }

    #[inline(never)]
    fn keep_params(&mut self, params: Option<RawJson<'_>>) {
        if let Some(bodies) = self.bodies() {
            bodies.params = params.map(|p| p.as_str().to_owned());
        }
    }

    /// Keeps the answer its handler wrote in place (see [`crate::body_log::note_answer`]).
    #[inline]
    pub(crate) fn note_answered_in_place(&mut self) {
        if self.log.is_some() {
            self.keep_answer_in_place();
        }
    }

    #[inline(never)]
    fn keep_answer_in_place(&mut self) {
        if let Some(bodies) = self.bodies() {
            bodies.answer = crate::body_log::take_answer();
        }
    }

    /// Keeps an answer (the result's JSON, or the error) for the call log.
    #[inline]
    pub(crate) fn note_reply(&mut self, reply: &Result<String, crate::RpcError>) {
        if self.log.is_some() {
            self.keep_reply(reply);
        }
    }

    #[inline(never)]
    fn keep_reply(&mut self, reply: &Result<String, crate::RpcError>) {
        if let Some(bodies) = self.bodies() {
            bodies.answer = match reply {
                Ok(json) => Some(json.clone()),
                Err(e) => crate::body_log::error_json(e),
            };
        }
    }

    /// Ends the call: `error` is the error code it was answered with, if any. Once for a
    /// call; it is left holding nothing, to [`release`](Self::release). (By reference:
    /// moving the call to end it copied a dozen words per call, and letting the ended call
    /// drop ran its drop glue, out of line.)
    #[inline(always)]
    pub(crate) fn end(&mut self, error: Option<i32>) {
        // Anything timed on the system clock ([`timed`](Self::timed)) is ended out of line.
        if self.started.is_some() {
            self.finish(error);
            #[cfg(feature = "metrics")]
            return;
        }
        // Else only the durations counted in process may take it: inline.
        #[cfg(feature = "metrics")]
        if let Some((counted, started)) = self.meters.counted {
            crate::durations::server_end(counted, error, started);
        }
    }

    /// Ends a call timed on the system clock: its duration where it is counted in process
    /// (on its own clock), its log line, its span's outcome and the rest of its metrics (one
    /// read of the system clock for all). Takes out (and lets go of) everything the call
    /// holds.
    #[inline(never)]
    fn finish(&mut self, error: Option<i32>) {
        #[cfg(feature = "metrics")]
        if let Some((counted, started)) = self.meters.counted {
            crate::durations::server_end(counted, error, started);
        }
        let Some(started) = self.started else {
            return;
        };
        let span = std::mem::replace(&mut self.span, tracing::Span::none());
        let elapsed = clock().saturating_duration_since(started);
        if let Some(line) = self.log.take() {
            line.write(elapsed, error);
        }
        if let Some(code) = error {
            if !span.is_disabled() {
                let code = code.to_string();
                span.record("rpc.response.status_code", code.as_str());
                span.record("error.type", code.as_str());
                span.record("otel.status_code", "ERROR");
            }
        }
        #[cfg(feature = "metrics")]
        {
            if let Some(method) = self.meters.label.take() {
                let code = error.map(|code| code.to_string());
                handles::server_duration(&method, code.as_deref(), elapsed.as_secs_f64());
            }
            if let Some(live) = self.meters.live {
                live.record(elapsed, error.is_some());
            }
        }
    }
}

/// A call counted in the calls in flight ([`ServerCall::waits`]): counted out when dropped,
/// so a handler's task aborted while it waits (its connection closed) leaves no count behind.
#[must_use = "the call is counted in flight until this is dropped"]
pub(crate) struct InFlight {
    #[cfg(feature = "metrics")]
    counted: bool,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        if self.counted {
            in_flight(-1);
        }
    }
}

/// Moves the calls in flight by `delta`: counted in process after
/// [`crate::durations::aggregate`], else through the facade's gauge.
#[cfg(feature = "metrics")]
fn in_flight(delta: i64) {
    if crate::durations::on() {
        crate::durations::in_flight_add(delta);
    } else {
        handles::in_flight().increment(delta as f64);
    }
}

/// The call log's line of one call.
pub(crate) struct CallLine {
    method: String,
    /// The id's JSON text (`""` for none).
    id: String,
    transport: &'static str,
    peer: Option<std::net::SocketAddr>,
    /// Its params and answer, when the log shows bodies.
    bodies: Option<Bodies>,
}

/// A call's bodies as received and answered (redacted and cut when written).
#[derive(Default)]
struct Bodies {
    params: Option<String>,
    answer: Option<String>,
}

impl CallLine {
    fn write(&self, elapsed: Duration, error: Option<i32>) {
        let latency_us = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let status = match error {
            None => "ok".to_owned(),
            Some(code) => code.to_string(),
        };
        let peer = self.peer.map_or_else(|| "-".to_owned(), |p| p.to_string());
        let id = if self.id.is_empty() { "-" } else { &self.id };
        if let (Some(bodies), Some(config)) = (&self.bodies, crate::body_log::config()) {
            let show = |json: &Option<String>| {
                json.as_deref()
                    .map_or_else(|| "-".to_owned(), |j| config.render(j))
            };
            let params = show(&bodies.params);
            let answer = show(&bodies.answer);
            let (result, error) = if error.is_some() {
                ("-".to_owned(), answer)
            } else {
                (answer, "-".to_owned())
            };
            tracing::info!(
                target: CALL_LOG,
                method = %self.method,
                id = %id,
                latency_us,
                status = %status,
                connection = %self.transport,
                peer = %peer,
                params = %params,
                result = %result,
                error = %error,
                "call"
            );
            return;
        }
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
    /// The trace id of a call not sampled (it has no span): sent on with the `sampled` flag
    /// cleared.
    unsampled: Option<u128>,
}

impl ClientCall {
    /// Starts a call of `method`: no span when it is not sampled (made by the handler of an
    /// unsampled server call, or a root call the ratio leaves out; see `sampling`).
    pub(crate) fn start(method: &str) -> Self {
        if let Some(trace) = crate::sampling::current_unsampled() {
            return Self::unsampled(trace);
        }
        if !crate::sampling::always()
            && spans_enabled()
            && tracing::Span::current().is_none()
            && !crate::sampling::sample_root()
        {
            return Self::unsampled(crate::sampling::new_trace_id());
        }
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
            unsampled: None,
        }
    }

    /// A call not sampled, of the trace `trace`.
    fn unsampled(trace: u128) -> Self {
        ClientCall {
            span: tracing::Span::none(),
            started: metered().then(Instant::now),
            unsampled: Some(trace),
        }
    }

    /// The call's span.
    pub(crate) fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The trace context the call sends (feature `otel`): its span's, or for a call not
    /// sampled its trace with a fresh parent id and the `sampled` flag cleared.
    pub(crate) fn trace_context(&self) -> Option<crate::trace_context::TraceContext> {
        #[cfg(feature = "otel")]
        if let Some(trace) = self.unsampled {
            return Some(crate::trace_context::TraceContext::unsampled(trace));
        }
        // Without OpenTelemetry no context is sent on, sampled or not.
        #[cfg(not(feature = "otel"))]
        let _ = self.unsampled;
        crate::trace_context::TraceContext::of_span(&self.span)
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
            let elapsed = self.started.map_or(Duration::ZERO, |t| t.elapsed());
            if crate::durations::on() {
                crate::durations::client(method, error_type.as_deref(), elapsed);
            } else {
                handles::client_duration(method, error_type.as_deref(), elapsed.as_secs_f64());
            }
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
    /// The transport counted (two bytes with the flags: every connection's future holds it).
    #[cfg(feature = "metrics")]
    transport: crate::Transport,
    /// Counted in the open-connections gauge.
    #[cfg(feature = "metrics")]
    metered: bool,
    /// Counted in the live view.
    #[cfg(feature = "metrics")]
    live: bool,
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
        #[cfg(feature = "metrics")]
        let kind = transport;
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
        let (metered, live) = recording();
        #[cfg(feature = "metrics")]
        if metered {
            metrics::gauge!(names::CONNECTIONS, "network.transport" => transport).increment(1.0);
        }
        #[cfg(feature = "metrics")]
        if live {
            crate::live_stats::connection(1);
        }
        #[cfg(not(feature = "metrics"))]
        let _ = (metered, live);
        (
            ConnectionScope {
                #[cfg(feature = "metrics")]
                transport: kind,
                #[cfg(feature = "metrics")]
                metered,
                #[cfg(feature = "metrics")]
                live,
            },
            span,
        )
    }
}

impl Drop for ConnectionScope {
    fn drop(&mut self) {
        #[cfg(feature = "metrics")]
        if self.metered {
            let transport = self.transport.network_transport();
            metrics::gauge!(names::CONNECTIONS, "network.transport" => transport).decrement(1.0);
        }
        #[cfg(feature = "metrics")]
        if self.live {
            crate::live_stats::connection(-1);
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

    /// A router method's handles are the shared table's entry of its label, found once: the
    /// calls after the first count into the same histograms as any other holder's.
    #[cfg(feature = "metrics")]
    #[test]
    fn a_method_meter_keeps_the_shared_histograms_of_its_label() {
        let meter = super::MethodMeter::default();
        let first = meter.durations("meter.test");
        assert!(std::ptr::eq(first, meter.durations("other.label")));
        assert!(std::ptr::eq(
            first,
            crate::durations::server_method("meter.test")
        ));
        let other = super::MethodMeter::default().durations("meter.other");
        assert!(!std::ptr::eq(first, other));
    }
}
