//! Where a call came from, as its spans, metrics and log lines say it: what only the
//! transport knows.

use std::fmt;
use std::net::SocketAddr;

use crate::trace_context::TraceContext;

/// The transport a caller came by: a name the transport gives itself (`tcp`, `http`,
/// `websocket`, `nats`, ...) and the OpenTelemetry `network.transport` under it (`tcp`,
/// `unix`, `pipe`, ...). Each transport crate defines its own; adding a transport touches no
/// list of its siblings.
///
/// ```
/// use rpcwire_telemetry::Transport;
/// const SERIAL: Transport = Transport::new("serial", "pipe");
/// assert_eq!(SERIAL.name(), "serial");
/// assert_eq!(SERIAL.network_transport(), "pipe");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Transport {
    name: &'static str,
    network: &'static str,
    protocol: &'static str,
    version: &'static str,
    internal: bool,
}

impl Transport {
    /// A transport named `name` over the `network.transport` `network`.
    pub const fn new(name: &'static str, network: &'static str) -> Self {
        Transport {
            name,
            network,
            protocol: crate::SYSTEM,
            version: crate::PROTOCOL_VERSION,
            internal: false,
        }
    }

    /// This transport carrying JSON-RPC over the application protocol `name` at `version`
    /// (OpenTelemetry's `network.protocol.name` and `network.protocol.version`: `http` `1.1`,
    /// `websocket` `13`). A transport that carries JSON-RPC directly on its stream (TCP, TLS,
    /// stdio, a serial line) keeps the default, `jsonrpc` `2.0`.
    ///
    /// ```
    /// use rpcwire_telemetry::Transport;
    /// const WS: Transport = Transport::new("websocket", "tcp").over("websocket", "13");
    /// assert_eq!(WS.protocol(), ("websocket", "13"));
    /// assert_eq!(Transport::new("tcp", "tcp").protocol(), ("jsonrpc", "2.0"));
    /// ```
    pub const fn over(mut self, name: &'static str, version: &'static str) -> Self {
        self.protocol = name;
        self.version = version;
        self
    }

    /// The application protocol under JSON-RPC and its version (see [`over`](Self::over)).
    pub const fn protocol(self) -> (&'static str, &'static str) {
        (self.protocol, self.version)
    }

    /// This transport marked internal: the connections over it are the server's own (the
    /// in-memory connection behind an HTTP server's event streams), not clients', and are
    /// left out of the open-connections gauge and the live view (their calls are still
    /// observed like any other).
    ///
    /// ```
    /// use rpcwire_telemetry::Transport;
    /// const HUB: Transport = Transport::new("event-stream", "pipe").internal();
    /// assert!(HUB.is_internal());
    /// assert!(!Transport::OTHER.is_internal());
    /// ```
    pub const fn internal(mut self) -> Self {
        self.internal = true;
        self
    }

    /// True for a transport marked [`internal`](Self::internal).
    pub const fn is_internal(self) -> bool {
        self.internal
    }

    /// An in-memory pipe, or a stream the application gave (`network.transport = pipe`).
    pub const OTHER: Transport = Transport::new("other", "pipe");

    /// The transport's own name (the call log's `connection`).
    pub const fn name(self) -> &'static str {
        self.name
    }

    /// The OpenTelemetry `network.transport` value.
    pub const fn network_transport(self) -> &'static str {
        self.network
    }
}

impl fmt::Debug for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

impl fmt::Display for Transport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

/// What a transport knows of where a call came from: the [`Transport`], the peer's address,
/// and the W3C trace context received beside the message (HTTP's `traceparent` header), the
/// parent of its calls' spans.
#[derive(Clone, Debug, PartialEq)]
pub struct Remote {
    transport: Transport,
    peer: Option<SocketAddr>,
    local: Option<SocketAddr>,
    /// The protocol's version when the connection's differs from its transport's (HTTP/2).
    version: Option<&'static str>,
    trace: Option<TraceContext>,
}

impl Remote {
    /// A caller over `transport`, peer and trace context unknown.
    pub const fn new(transport: Transport) -> Self {
        Remote {
            transport,
            peer: None,
            local: None,
            version: None,
            trace: None,
        }
    }

    /// This remote over another transport (a WebSocket upgraded from an HTTP request).
    pub fn with_transport(mut self, transport: Transport) -> Self {
        self.transport = transport;
        self.version = None;
        self
    }

    /// This remote with its peer's address.
    pub fn with_peer(mut self, peer: SocketAddr) -> Self {
        self.peer = Some(peer);
        self
    }

    /// This remote with the local address its connection arrived at (a server's: its spans'
    /// `server.address` and `server.port`).
    pub fn with_local(mut self, local: SocketAddr) -> Self {
        self.local = Some(local);
        self
    }

    /// This remote over another version of its transport's protocol (HTTP/2 for a transport
    /// [over](Transport::over) HTTP/1.1).
    pub fn with_protocol_version(mut self, version: &'static str) -> Self {
        self.version = Some(version);
        self
    }

    /// The local address its connection arrived at, when the transport told it.
    pub fn local(&self) -> Option<SocketAddr> {
        self.local
    }

    /// The application protocol under JSON-RPC and its version: the transport's, with this
    /// connection's version.
    pub fn protocol(&self) -> (&'static str, &'static str) {
        let (name, version) = self.transport.protocol();
        (name, self.version.unwrap_or(version))
    }

    /// This remote with the trace context received beside its messages.
    pub fn with_trace_context(mut self, trace: TraceContext) -> Self {
        self.trace = Some(trace);
        self
    }

    /// This remote without a trace context (a batch's members: their parent is the batch's
    /// span, which took the context).
    pub fn without_trace_context(mut self) -> Self {
        self.trace = None;
        self
    }

    /// The transport.
    pub fn transport(&self) -> Transport {
        self.transport
    }

    /// The peer's address, when the transport has one.
    pub fn peer(&self) -> Option<SocketAddr> {
        self.peer
    }

    /// The trace context received beside the message, if any.
    pub fn trace_context(&self) -> Option<&TraceContext> {
        self.trace.as_ref()
    }
}
