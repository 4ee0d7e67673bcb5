//! One call on the server: its span, its line in the call log, its metrics.

use std::time::{Duration, Instant};

use rpcwire::wire::RawJson;

use crate::clock::now as clock;
#[cfg(feature = "metrics")]
use crate::recording::handles;
#[cfg(feature = "metrics")]
use crate::recording::recording;
use crate::recording::{recording_bits, reject};
#[cfg(feature = "metrics")]
use crate::recording::{COUNTED_BIT, METRICS_BIT};
use crate::spans::span_parent;
use crate::{Rejection, Remote, CALL_LOG, OTHER_METHOD, PROTOCOL_VERSION, SYSTEM};

/// A request for a method that does not exist: its span (named `_OTHER`) and metrics, and a
/// rejection.
pub fn not_found(method: &str, id: &str, remote: &Remote) {
    let mut call = ServerCall::new();
    call.start(method, None, || id, remote, None, None);
    call.end(Some(rpcwire::ErrorCode::METHOD_NOT_FOUND.0));
    call.release();
    reject(Rejection::NotFound);
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
/// even checked as UTF-8), else the one its transport received (HTTP headers). The remote parent of its span,
/// and what its sampling follows.
fn remote_parent<'c>(
    remote: &'c Remote,
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
    remote.trace_context().map(std::borrow::Cow::Borrowed)
}

/// When a transport read the input that brought a call, on each clock a call may be timed
/// on: the system clock's reading, and the reading of the clock of the durations counted in
/// process (`durations::ticks`, feature `metrics`; 0 when they are not). Read once per read
/// of input, not once per call: the calls handled in place after a read are timed from it.
#[derive(Debug, Clone, Copy)]
pub struct Received {
    at: Instant,
    #[cfg(feature = "metrics")]
    ticks: u64,
}

impl Received {
    /// Input read at `at` (the system clock's reading the transport took), the clock of the
    /// counted durations read now if they are counted.
    #[inline]
    pub fn at(at: Instant) -> Self {
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
pub struct MethodMeter {
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
/// (`start_taken`, `finish`), so the feature's code does
/// not change how the compiler inlines the hot code around them.
pub struct ServerCall {
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

impl Default for ServerCall {
    /// [`ServerCall::new`].
    #[inline(always)]
    fn default() -> Self {
        ServerCall::new()
    }
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
    pub fn start<'i>(
        &mut self,
        method: &str,
        meter: Option<&MethodMeter>,
        id: impl Fn() -> &'i str,
        remote: &Remote,
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
            if in_params || remote.trace_context().is_some() {
                // It may have a remote parent: looked for, decided and started out of line.
                let params = params.filter(|_| in_params);
                return self.start_child(method, meter, &id, remote, params, received);
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
                return self.start_taken(method, meter, &id, remote, received, Some(decided));
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
        self.start_taken(method, meter, &id, remote, received, None);
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
        remote: &Remote,
        params: Option<RawJson<'_>>,
        received: Option<&Received>,
    ) {
        let parent = remote_parent(remote, params);
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
        self.start_taken(method, meter, id, remote, received, decided);
    }

    /// A call that nothing takes (yet): [`start`](Self::start) it.
    #[inline(always)]
    pub fn new() -> Self {
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
        remote: &Remote,
        received: Option<&Received>,
        decided: Option<Decided<'_>>,
    ) {
        let call = self;
        if let Some(decided) = decided {
            call.listen(method, meter.is_some(), id, remote, decided);
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
        remote: &Remote,
        decided: Decided<'_>,
    ) {
        let label = if registered { method } else { OTHER_METHOD };
        // Head sampling was decided before any span is built (`start`, `start_child`), and
        // an unsampled call's trace kept there.
        let Decided { parent, sampled } = decided;
        if sampled {
            self.span = Self::span_of(method, label, registered, id, remote, parent.as_deref());
        }
        let log = call_log_on().then(|| {
            Box::new(CallLine {
                method: method.to_owned(),
                id: id().to_owned(),
                transport: remote.transport().name(),
                subject: None,
                trace: remote.trace_context().map(|cx| cx.trace_id_hex()),
                peer: remote.peer(),
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
        remote: &Remote,
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
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
            client.address = tracing::field::Empty,
            client.port = tracing::field::Empty,
            network.peer.address = tracing::field::Empty,
            network.peer.port = tracing::field::Empty,
            network.transport = remote.transport().network_transport(),
            network.protocol.name = remote.protocol().0,
            network.protocol.version = remote.protocol().1,
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
            crate::spans::record_ends(&span, remote);
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
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// Tells the call log the caller's subject (nothing when the call is not logged: one
    /// check).
    #[inline]
    pub fn note_subject(&mut self, subject: &str) {
        if let Some(line) = self.log.as_mut() {
            line.subject = Some(subject.to_owned());
        }
    }

    /// The trace id of a call not sampled (0 otherwise): to hold while its handler runs
    /// (`sampling::in_trace`, `sampling::Unsampled`), so that its outgoing calls send the
    /// trace on unsampled.
    #[inline(always)]
    pub fn unsampled(&self) -> u128 {
        self.unsampled
    }

    /// The call's handler waits (it runs in a task): the call counts in the calls in flight
    /// until the returned guard is dropped, which the task does when its handler has
    /// answered, or its abort does when the connection closes first. A handler that answers
    /// at once is never counted: it is in flight only while it runs in its connection's
    /// driver, between two reads of the same input.
    pub fn waits(&self) -> InFlight {
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
    pub fn release(self) {
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
    pub fn note_params(&mut self, params: Option<RawJson<'_>>) {
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
    pub fn note_answered_in_place(&mut self) {
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
    pub fn note_reply<E: serde::Serialize>(&mut self, reply: &Result<String, E>) {
        if self.log.is_some() {
            self.keep_reply(reply);
        }
    }

    #[inline(never)]
    fn keep_reply<E: serde::Serialize>(&mut self, reply: &Result<String, E>) {
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
    pub fn end(&mut self, error: Option<i32>) {
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
            // The trace the call is in: its span's, or the unsampled trace it sends on.
            let trace = crate::trace_context::TraceContext::of_span(&span)
                .map(|cx| cx.trace_id_hex())
                .or_else(|| line.trace.clone())
                .or_else(|| {
                    (self.unsampled != 0 && self.unsampled != crate::sampling::LAZY_ROOT)
                        .then(|| format!("{:032x}", self.unsampled))
                });
            line.write(elapsed, error, trace.as_deref());
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
pub struct InFlight {
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
pub(crate) fn in_flight(delta: i64) {
    if crate::durations::on() {
        crate::durations::in_flight_add(delta);
    } else {
        handles::in_flight().increment(delta as f64);
    }
}

/// The call log's line of one call.
pub struct CallLine {
    method: String,
    /// The id's JSON text (`""` for none).
    id: String,
    /// The transport's own name (`http`, `websocket`, `tcp`), not its `network.transport`.
    transport: &'static str,
    /// The caller's subject, when the dispatcher told it ([`ServerCall::note_subject`]).
    subject: Option<String>,
    /// The trace the transport received the call in (its span's, when it has one, is
    /// preferred).
    trace: Option<String>,
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
    fn write(&self, elapsed: Duration, error: Option<i32>, trace: Option<&str>) {
        let subject = self.subject.as_deref().unwrap_or("-");
        let trace_id = trace.unwrap_or("-");
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
                subject = %subject,
                trace_id = %trace_id,
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
            subject = %subject,
            trace_id = %trace_id,
            "call"
        );
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
