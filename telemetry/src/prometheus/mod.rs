//! The Prometheus exposition of rpcwire's metrics (feature `prometheus`): a recorder for the
//! `metrics` facade with every family named, described and bucketed as [`crate::catalog`]
//! says (`# HELP` and `# TYPE` on every family, `_seconds` and `_bytes` unit suffixes,
//! `_total` on counters, explicit buckets on every histogram: no summaries), and a small
//! `GET /metrics` endpoint to serve it.
//!
//! Mounting it in one's own binary takes two lines, before serving:
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let metrics = rpcwire_telemetry::prometheus::install()?;
//! let bound = metrics.serve("127.0.0.1:9464".parse()?).await?; // GET http://{bound}/metrics
//! # Ok(()) }
//! ```
//!
//! or in one: `rpcwire_telemetry::prometheus::metrics_endpoint(addr).await?`. An application
//! with an HTTP router of its own serves [`PrometheusMetrics::render`] at the path it likes
//! instead (with the content type [`CONTENT_TYPE`]).
//!
//! The recorder is `metrics-exporter-prometheus`'s, under a thin layer that gives the keys
//! their Prometheus names ([`PrometheusNames`]); the call durations are counted in process
//! ([`crate::durations`]) and appended to its text.

mod endpoint;

use std::net::SocketAddr;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, Recorder, SharedString, Unit};
use metrics_exporter_prometheus::{
    Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder,
};

use crate::catalog::{family, Instrument, DEFAULT_BUCKETS, FAMILIES};

pub use endpoint::{CONTENT_TYPE, MAX_REQUEST_HEAD, READ_TIMEOUT};

/// Why the Prometheus exposition could not start.
#[derive(Debug, thiserror::Error)]
pub enum PrometheusError {
    /// A global `metrics` recorder was installed already.
    #[error("a metrics recorder is installed already")]
    AlreadyInstalled,
    /// The buckets were refused by the exporter.
    #[error("metrics buckets: {0}")]
    Buckets(String),
    /// The endpoint's address could not be bound.
    #[error("metrics endpoint {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
}

/// A recorder that hands every key to `R` under its Prometheus name (from the catalog; keys
/// it does not know pass unchanged): the OpenTelemetry names stay what the facade is given
/// (and what OTLP exports), the exposition gets its own.
#[derive(Debug)]
pub struct PrometheusNames<R>(R);

impl<R> PrometheusNames<R> {
    /// Wraps `inner`.
    pub fn new(inner: R) -> Self {
        PrometheusNames(inner)
    }
}

/// `key` under its Prometheus name.
fn renamed(key: &Key) -> Option<Key> {
    let f = family(key.name())?;
    let labels: Vec<metrics::Label> = key.labels().cloned().collect();
    Some(Key::from_parts(f.prometheus, labels))
}

fn renamed_name(name: KeyName) -> KeyName {
    family(name.as_str()).map_or(name, |f| KeyName::from(f.prometheus))
}

impl<R: Recorder> Recorder for PrometheusNames<R> {
    fn describe_counter(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0
            .describe_counter(renamed_name(key), unit, description);
    }

    fn describe_gauge(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0.describe_gauge(renamed_name(key), unit, description);
    }

    fn describe_histogram(&self, key: KeyName, unit: Option<Unit>, description: SharedString) {
        self.0
            .describe_histogram(renamed_name(key), unit, description);
    }

    // Registration is not on a call's path: rpcwire keeps the handles it is given.
    fn register_counter(&self, key: &Key, metadata: &Metadata<'_>) -> Counter {
        self.0
            .register_counter(renamed(key).as_ref().unwrap_or(key), metadata)
    }

    fn register_gauge(&self, key: &Key, metadata: &Metadata<'_>) -> Gauge {
        self.0
            .register_gauge(renamed(key).as_ref().unwrap_or(key), metadata)
    }

    fn register_histogram(&self, key: &Key, metadata: &Metadata<'_>) -> Histogram {
        self.0
            .register_histogram(renamed(key).as_ref().unwrap_or(key), metadata)
    }
}

/// The exposition of an installed recorder: render it, or serve it.
#[derive(Debug, Clone)]
pub struct PrometheusMetrics {
    handle: PrometheusHandle,
}

impl PrometheusMetrics {
    /// The exposition now, in the Prometheus text format (version 0.0.4): the facade's
    /// families, then the call durations and calls in flight counted in process.
    pub fn render(&self) -> String {
        self.handle.run_upkeep();
        let mut text = self.handle.render();
        crate::durations::render_prometheus(&mut text);
        text
    }

    /// Serves [`render`](Self::render) at `GET /metrics` on `addr` (port 0 picks one) from a
    /// task of the current tokio runtime, until the runtime ends; returns the address bound.
    pub async fn serve(&self, addr: SocketAddr) -> Result<SocketAddr, PrometheusError> {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| PrometheusError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| PrometheusError::Bind { addr, source })?;
        tokio::spawn(endpoint::accept(listener, self.clone()));
        Ok(local)
    }
}

/// The recorder with rpcwire's names, descriptions and buckets, not installed, and its
/// exposition: for an application that composes recorders itself.
pub fn recorder(
) -> Result<(PrometheusNames<PrometheusRecorder>, PrometheusMetrics), PrometheusError> {
    let mut builder = PrometheusBuilder::new()
        .set_buckets(&DEFAULT_BUCKETS)
        .map_err(|e| PrometheusError::Buckets(e.to_string()))?;
    for f in FAMILIES
        .iter()
        .filter(|f| f.instrument == Instrument::Histogram)
    {
        builder = builder
            .set_buckets_for_metric(Matcher::Full(f.prometheus.into()), f.buckets)
            .map_err(|e| PrometheusError::Buckets(e.to_string()))?;
    }
    let inner = builder.build_recorder();
    let metrics = PrometheusMetrics {
        handle: inner.handle(),
    };
    let recorder = PrometheusNames(inner);
    for f in FAMILIES {
        let (name, help) = (KeyName::from(f.name), SharedString::from(f.help));
        // No unit given: the names carry theirs (the exporter's own suffix would miss the
        // `# TYPE` line).
        match f.instrument {
            Instrument::Counter => recorder.describe_counter(name, None, help),
            Instrument::Gauge => recorder.describe_gauge(name, None, help),
            Instrument::Histogram => recorder.describe_histogram(name, None, help),
        }
    }
    Ok((recorder, metrics))
}

/// Installs the recorder as the global one and starts recording (call durations counted in
/// process, see [`crate::durations`]).
pub fn install() -> Result<PrometheusMetrics, PrometheusError> {
    let (recorder, metrics) = recorder()?;
    metrics::set_global_recorder(recorder).map_err(|_| PrometheusError::AlreadyInstalled)?;
    start_recording();
    Ok(metrics)
}

/// [`install`], with `other` recording the same values beside it (an OTLP export's
/// recorder): one source for both exporters.
pub fn install_beside<R>(other: R) -> Result<PrometheusMetrics, PrometheusError>
where
    R: Recorder + Send + Sync + 'static,
{
    let (recorder, metrics) = recorder()?;
    let both = metrics_util::layers::FanoutBuilder::default()
        .add_recorder(recorder)
        .add_recorder(other)
        .build();
    metrics::set_global_recorder(both).map_err(|_| PrometheusError::AlreadyInstalled)?;
    start_recording();
    Ok(metrics)
}

fn start_recording() {
    // Durations and calls in flight counted in process and appended to the text: a fraction
    // of the exporter's cost per sample (a clock read and a queue push each).
    crate::durations::aggregate();
    crate::enable_metrics();
}

/// [`install`] and [`PrometheusMetrics::serve`] in one: the metrics at
/// `http://{returned address}/metrics`.
pub async fn metrics_endpoint(addr: SocketAddr) -> Result<SocketAddr, PrometheusError> {
    install()?.serve(addr).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_take_their_prometheus_names() {
        let key = Key::from_parts(
            crate::names::REJECTIONS,
            vec![metrics::Label::new("reason", "parse")],
        );
        let k = renamed(&key).unwrap();
        assert_eq!(k.name(), "rpc_server_rejections_total");
        assert_eq!(k.labels().next().unwrap().value(), "parse");
        assert!(renamed(&Key::from_name("someone.else")).is_none());
    }
}
