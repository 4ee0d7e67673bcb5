//! One call from a client: its span and its metrics.

#[cfg(feature = "metrics")]
use std::time::Duration;
use std::time::Instant;

#[cfg(feature = "metrics")]
use crate::recording::handles;
use crate::recording::metered;
use crate::spans::spans_enabled;
use crate::{PROTOCOL_VERSION, SYSTEM};

/// One call from a client: its span, and its start when anything measures it.
pub struct ClientCall {
    span: tracing::Span,
    started: Option<Instant>,
    /// The trace id of a call not sampled (it has no span): sent on with the `sampled` flag
    /// cleared.
    unsampled: Option<u128>,
}

impl ClientCall {
    /// Starts a call of `method`: no span when it is not sampled (made by the handler of an
    /// unsampled server call, or a root call the ratio leaves out; see `sampling`).
    pub fn start(method: &str) -> Self {
        Self::start_to(method, None)
    }

    /// [`start`](Self::start) over a connection to `remote` (the server, as the transport
    /// reported it): the span's `server.address` and `server.port` (the server's address, as
    /// the connection knows it: an IP address, no name), `network.peer.*`, `network.transport`
    /// and `network.protocol.*`.
    pub fn start_to(method: &str, remote: Option<&crate::Remote>) -> Self {
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
            server.address = tracing::field::Empty,
            server.port = tracing::field::Empty,
            network.peer.address = tracing::field::Empty,
            network.peer.port = tracing::field::Empty,
            network.transport = tracing::field::Empty,
            network.protocol.name = tracing::field::Empty,
            network.protocol.version = tracing::field::Empty,
        );
        if let (false, Some(remote)) = (span.is_disabled(), remote) {
            record_server(&span, remote);
        }
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
    pub fn span(&self) -> &tracing::Span {
        &self.span
    }

    /// The trace context the call sends (feature `otel`): its span's, or for a call not
    /// sampled its trace with a fresh parent id and the `sampled` flag cleared.
    pub fn trace_context(&self) -> Option<crate::trace_context::TraceContext> {
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
    pub fn end(self, method: &str, error: Option<ClientError>) {
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

/// Records the server a client's connection goes to.
fn record_server(span: &tracing::Span, remote: &crate::Remote) {
    let (protocol, version) = remote.protocol();
    span.record("network.transport", remote.transport().network_transport());
    span.record("network.protocol.name", protocol);
    span.record("network.protocol.version", version);
    if let Some(peer) = remote.peer() {
        let ip = peer.ip().to_string();
        // Ports as signed integers: `tracing-opentelemetry` would export a `u64` as text.
        span.record("server.address", ip.as_str());
        span.record("server.port", i64::from(peer.port()));
        span.record("network.peer.address", ip);
        span.record("network.peer.port", i64::from(peer.port()));
    }
}

/// How a client call failed.
#[derive(Debug, Clone, Copy)]
pub enum ClientError {
    /// The peer answered with this error code.
    Code(i32),
    /// It failed here (`timeout`, `closed`, ...).
    Local(&'static str),
}
