//! The spans of connections and batches, and how a connection's span is held as the parent
//! of its calls' spans.

#[cfg(feature = "metrics")]
use crate::names;
use crate::recording::recording;
use crate::{Remote, PROTOCOL_VERSION, SYSTEM};

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
/// tracing::debug!(parent: rpcwire_telemetry::span_parent(), "closed");
/// ```
pub fn span_parent() -> Option<tracing::Id> {
    tracing::dispatcher::get_default(|d| d.current_span().id().cloned()).or_else(|| {
        std::num::NonZeroU64::new(CONNECTION_SPAN.with(std::cell::Cell::get))
            .map(tracing::Id::from_non_zero_u64)
    })
}

/// The span of a batch from `remote` (`rpc.batch`, named `batch`; its calls' spans are its
/// children): `rpc.system.name`, `jsonrpc.batch.size` (rpcwire's own, recorded by
/// [`batch_size`] once known), `network.*`; the trace context received with it is its parent. To
/// enter while the batch's calls start.
pub fn batch_span(remote: &Remote) -> tracing::Span {
    let span = tracing::info_span!(
        parent: span_parent(),
        "rpc.batch",
        otel.name = "batch",
        otel.kind = "server",
        rpc.system.name = SYSTEM,
        jsonrpc.protocol.version = PROTOCOL_VERSION,
        jsonrpc.batch.size = tracing::field::Empty,
        server.address = tracing::field::Empty,
        server.port = tracing::field::Empty,
        client.address = tracing::field::Empty,
        client.port = tracing::field::Empty,
        network.peer.address = tracing::field::Empty,
        network.peer.port = tracing::field::Empty,
        network.transport = remote.transport().network_transport(),
        network.protocol.name = remote.protocol().0,
        network.protocol.version = remote.protocol().1,
    );
    if !span.is_disabled() {
        record_ends(&span, remote);
        if let Some(cx) = remote.trace_context() {
            cx.set_parent_of(&span);
        }
    }
    span
}

/// Records on a server-side span what `remote` knows of the two ends (declared `Empty` by the
/// span): the local address as `server.address` and `server.port`, the peer's as
/// `client.address`, `client.port` and `network.peer.*` (the peer of the connection is the
/// client: rpcwire reads no forwarding header).
pub(crate) fn record_ends(span: &tracing::Span, remote: &Remote) {
    if let Some(peer) = remote.peer() {
        let ip = peer.ip().to_string();
        // Ports as signed integers: `tracing-opentelemetry` would export a `u64` as text.
        span.record("client.address", ip.as_str());
        span.record("client.port", i64::from(peer.port()));
        span.record("network.peer.address", ip);
        span.record("network.peer.port", i64::from(peer.port()));
    }
    if let Some(local) = remote.local() {
        span.record("server.address", local.ip().to_string());
        span.record("server.port", i64::from(local.port()));
    }
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

/// An open connection, counted by `network.transport` while it lives (feature `metrics`),
/// with the span its driver runs in. Transports whose connections are not driver connections
/// (the HTTP server's) hold one per accepted connection.
#[derive(Debug)]
pub struct ConnectionScope {
    /// The `network.transport` counted (every connection's future holds it: not the whole
    /// `Transport`).
    #[cfg(feature = "metrics")]
    transport: &'static str,
    /// Counted in the open-connections gauge.
    #[cfg(feature = "metrics")]
    metered: bool,
    /// Counted in the live view.
    #[cfg(feature = "metrics")]
    live: bool,
}

impl ConnectionScope {
    /// Counts a connection open and makes its span.
    pub fn open(remote: &Remote) -> (Self, tracing::Span) {
        let (scope, span) = Self::open_on(remote.transport(), remote.peer());
        if let (false, Some(local)) = (span.is_disabled(), remote.local()) {
            span.record("server.address", local.ip().to_string());
            span.record("server.port", i64::from(local.port()));
        }
        if remote.protocol() != remote.transport().protocol() && !span.is_disabled() {
            span.record("network.protocol.version", remote.protocol().1);
        }
        (scope, span)
    }

    /// Counts a connection over `transport` from `peer` open (until dropped) and makes its
    /// span (`rpc.connection`, with `network.transport` and the peer's address and port).
    pub fn open_on(
        transport: crate::Transport,
        peer: Option<std::net::SocketAddr>,
    ) -> (Self, tracing::Span) {
        let kind = transport;
        let internal = transport.is_internal();
        let (protocol, version) = transport.protocol();
        let transport = transport.network_transport();
        let span = tracing::info_span!(
            "rpc.connection",
            network.transport = transport,
            network.protocol.name = protocol,
            network.protocol.version = version,
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
            client.address = tracing::field::Empty,
            client.port = tracing::field::Empty,
            network.peer.address = tracing::field::Empty,
            network.peer.port = tracing::field::Empty,
        );
        if let (false, Some(peer)) = (span.is_disabled(), peer) {
            record_ends(&span, &Remote::new(kind).with_peer(peer));
        }
        // The server's own connections are not clients': not counted.
        let (metered, live) = if internal {
            (false, false)
        } else {
            recording()
        };
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
                transport,
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
            let transport = self.transport;
            metrics::gauge!(names::CONNECTIONS, "network.transport" => transport).decrement(1.0);
        }
        #[cfg(feature = "metrics")]
        if self.live {
            crate::live_stats::connection(-1);
        }
    }
}
