//! Every metric rpcwire records, described once: its OpenTelemetry name, instrument, unit,
//! description, buckets and the name the Prometheus exposition gives it. The exporters read
//! it from here (the Prometheus one, module `prometheus`, for its `# HELP` lines, names and
//! buckets; OTLP for its units and buckets), so that the two cannot drift apart.
//!
//! The Prometheus names follow OpenTelemetry's rules for Prometheus (the unit as a suffix,
//! `_seconds` for `s`, `_bytes` for `By`, annotations such as `{call}` dropped; `_total` on
//! counters) and Prometheus's own naming practice.
//!
//! ```
//! use rpcwire_telemetry::catalog::{family, Instrument};
//! let duration = family("rpc.server.call.duration").unwrap();
//! assert_eq!(duration.prometheus, "rpc_server_call_duration_seconds");
//! assert_eq!(duration.unit, "s");
//! assert_eq!(duration.instrument, Instrument::Histogram);
//! ```

use crate::names;

/// How a metric is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instrument {
    /// A monotonic sum (Prometheus `counter`, named `..._total`).
    Counter,
    /// A value that goes up and down (Prometheus `gauge`).
    Gauge,
    /// A distribution in explicit buckets (Prometheus `histogram`).
    Histogram,
}

/// One metric family.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Family {
    /// The OpenTelemetry name (what the `metrics` facade is given, and OTLP exports).
    pub name: &'static str,
    /// The name in the Prometheus exposition.
    pub prometheus: &'static str,
    /// The instrument.
    pub instrument: Instrument,
    /// The unit, as UCUM (OpenTelemetry's form: `s`, `By`, `{call}`).
    pub unit: &'static str,
    /// The description (OTLP's, and the `# HELP` line).
    pub help: &'static str,
    /// A histogram's bucket bounds (empty for other instruments).
    pub buckets: &'static [f64],
}

/// The buckets of a histogram the catalog does not know (another library's, through the same
/// recorder): the OpenTelemetry SDKs' default bounds, so that no histogram is a summary.
pub const DEFAULT_BUCKETS: [f64; 15] = [
    0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0,
    10000.0,
];

/// Every metric rpcwire records.
pub const FAMILIES: [Family; 9] = [
    Family {
        name: names::SERVER_DURATION,
        prometheus: "rpc_server_call_duration_seconds",
        instrument: Instrument::Histogram,
        unit: "s",
        help: "Duration of incoming JSON-RPC calls, by method and error type.",
        buckets: &crate::DURATION_BUCKETS,
    },
    Family {
        name: names::CLIENT_DURATION,
        prometheus: "rpc_client_call_duration_seconds",
        instrument: Instrument::Histogram,
        unit: "s",
        help: "Duration of outgoing JSON-RPC calls, by method and error type.",
        buckets: &crate::DURATION_BUCKETS,
    },
    Family {
        name: names::IN_FLIGHT,
        prometheus: "rpc_server_calls_in_flight",
        instrument: Instrument::Gauge,
        unit: "{call}",
        help: "Incoming calls whose handlers are running in tasks of their own.",
        buckets: &[],
    },
    Family {
        name: names::CONNECTIONS,
        prometheus: "rpc_server_connections",
        instrument: Instrument::Gauge,
        unit: "{connection}",
        help: "Open client connections, by network transport (the server's own internal \
               connections are not counted).",
        buckets: &[],
    },
    Family {
        name: names::REJECTIONS,
        prometheus: "rpc_server_rejections_total",
        instrument: Instrument::Counter,
        unit: "{message}",
        help: "Messages refused before reaching a handler, by reason.",
        buckets: &[],
    },
    Family {
        name: names::BYTES_IN,
        prometheus: "rpc_received_bytes_total",
        instrument: Instrument::Counter,
        unit: "By",
        help: "Bytes read from the peers of stream connections.",
        buckets: &[],
    },
    Family {
        name: names::BYTES_OUT,
        prometheus: "rpc_sent_bytes_total",
        instrument: Instrument::Counter,
        unit: "By",
        help: "Bytes written to the peers of stream connections.",
        buckets: &[],
    },
    Family {
        name: names::BATCH_SIZE,
        prometheus: "rpc_server_batch_size",
        instrument: Instrument::Histogram,
        unit: "{message}",
        help: "Messages in each batch received on a stream connection.",
        buckets: &crate::BATCH_SIZE_BUCKETS,
    },
    Family {
        name: names::MCP_SESSIONS,
        prometheus: "mcp_server_sessions",
        instrument: Instrument::Gauge,
        unit: "{session}",
        help: "Open MCP Streamable HTTP sessions.",
        buckets: &[],
    },
];

/// The family named `name` (its OpenTelemetry name).
pub fn family(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

/// The bucket bounds of the histogram `name`: its own, else [`DEFAULT_BUCKETS`].
pub fn buckets_of(name: &str) -> &'static [f64] {
    match family(name) {
        Some(f) if !f.buckets.is_empty() => f.buckets,
        _ => &DEFAULT_BUCKETS,
    }
}

/// The unit of `name` (empty when the catalog does not know it).
pub fn unit_of(name: &str) -> &'static str {
    family(name).map_or("", |f| f.unit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Prometheus names keep the exposition's rules: counters end in `_total`, nothing
    /// else does; a unit of time or size is its base unit's suffix; every name is distinct.
    #[test]
    fn prometheus_names_follow_the_rules() {
        for f in FAMILIES {
            assert_eq!(
                f.prometheus.ends_with("_total"),
                f.instrument == Instrument::Counter,
                "{f:?}"
            );
            match f.unit {
                "s" => assert!(f.prometheus.ends_with("_seconds"), "{f:?}"),
                "By" => assert!(f.prometheus.contains("_bytes"), "{f:?}"),
                unit => assert!(unit.starts_with('{'), "{f:?}"),
            }
            assert!(f
                .prometheus
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b == b'_'));
            assert_eq!(
                f.buckets.is_empty(),
                f.instrument != Instrument::Histogram,
                "{f:?}"
            );
            assert_eq!(
                FAMILIES
                    .iter()
                    .filter(|g| g.prometheus == f.prometheus || g.name == f.name)
                    .count(),
                1
            );
        }
    }
}
