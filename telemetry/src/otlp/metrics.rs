//! Metrics exported over OTLP/HTTP with protobuf bodies (feature `otlp`): the instruments of
//! `crate` (call durations by method and status, calls in flight, open
//! connections by transport, batch sizes, rejections by reason, bytes in and out, MCP
//! sessions), POSTed to a collector's `/v1/metrics` every interval and once more when the
//! export is dropped.
//!
//! One source of truth with the Prometheus endpoint (`rpcwire serve --metrics`): what goes
//! through the `metrics` facade is kept by [`OtlpRecorder`] (install it alone, or beside
//! another recorder with `metrics_util::layers::Fanout`), and the call durations and calls in
//! flight counted in process by `rpcwire_telemetry::durations` are read from there, as the
//! Prometheus text reads them. Values are cumulative from the export's start (the OTLP
//! `AGGREGATION_TEMPORALITY_CUMULATIVE`); histograms have the buckets the Prometheus endpoint
//! has (those of [`crate::catalog`]).
//!
//! The body is encoded with the OTLP protobuf messages of `opentelemetry-proto` (already in
//! the build for spans) and sent by the spans' plain `http://` client from a thread of its own
//! (see [`crate::otlp`] for why no other HTTP stack).
//!
//! ```no_run
//! use std::time::Duration;
//! let metrics = rpcwire_telemetry::otlp::metrics::OtlpMetrics::start(
//!     "http://127.0.0.1:4318",
//!     "my-service",
//!     Duration::from_secs(60),
//! )?;
//! metrics.install()?; // the global `metrics` recorder, and the recording turned on
//! // ... serve ...
//! drop(metrics); // exports the last values
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, PoisonError, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

// Units and buckets from the catalog, the Prometheus exposition's too.
use crate::catalog::{buckets_of as bounds_of, unit_of};
use crate::{names, DURATION_BUCKETS, SYSTEM};
use bytes::Bytes;
use metrics::{Counter, Gauge, Histogram, Key, KeyName, Metadata, SharedString, Unit};
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, InstrumentationScope, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::{
    metric, number_data_point, AggregationTemporality, HistogramDataPoint, Metric, NumberDataPoint,
    ResourceMetrics, ScopeMetrics,
};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message as _;

use crate::otlp::{OtlpError, PlainHttp, EXPORT_TIMEOUT};

/// How often the metrics are sent unless told otherwise: the OpenTelemetry SDKs' default
/// (`OTEL_METRIC_EXPORT_INTERVAL`, 60 s).
pub const DEFAULT_INTERVAL: Duration = Duration::from_secs(60);

/// The most series (a name with one set of attribute values) kept; past it a new one is not
/// recorded (with one warning). rpcwire's own labels are bounded far below it (methods past
/// the registered ones are `_OTHER`), so this only bounds what other code records.
pub const MAX_SERIES: usize = 4096;

/// The metrics endpoint of `url`: the URL itself when it names `/v1/metrics`, otherwise that
/// path under it (as `OTEL_EXPORTER_OTLP_ENDPOINT` is read).
pub fn metrics_endpoint(url: &str) -> Result<String, OtlpError> {
    crate::otlp::signal_endpoint(url, "/v1/metrics")
}

/// A histogram with fixed buckets: a counter per bucket (the last past the last bound), the
/// count and the sum (`f64` bits).
#[derive(Debug)]
struct Buckets {
    bounds: &'static [f64],
    counts: Box<[AtomicU64]>,
    sum: AtomicU64,
}

impl Buckets {
    fn new(bounds: &'static [f64]) -> Self {
        Buckets {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum: AtomicU64::new(0f64.to_bits()),
        }
    }
}

impl metrics::HistogramFn for Buckets {
    fn record(&self, value: f64) {
        // The first bound not below the value (OTLP's bounds are inclusive above).
        let i = self.bounds.partition_point(|&b| b < value);
        self.counts[i].fetch_add(1, Ordering::Relaxed);
        let _ = self
            .sum
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + value).to_bits())
            });
    }
}

/// One series kept.
#[derive(Debug, Clone)]
enum Series {
    /// A counter's total.
    Counter(Arc<AtomicU64>),
    /// A gauge's value (`f64` bits, as `metrics` keeps it).
    Gauge(Arc<AtomicU64>),
    Histogram(Arc<Buckets>),
}

#[derive(Debug, Default)]
struct Store {
    series: RwLock<HashMap<Key, Series>>,
    /// The warning that [`MAX_SERIES`] was reached has been given.
    full: AtomicBool,
}

impl Store {
    /// The series of `key`, made by `make` when missing; `None` when full.
    fn series(&self, key: &Key, make: impl FnOnce() -> Series) -> Option<Series> {
        if let Some(s) = self
            .series
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
        {
            return Some(s.clone());
        }
        let mut all = self.series.write().unwrap_or_else(PoisonError::into_inner);
        if let Some(s) = all.get(key) {
            return Some(s.clone());
        }
        if all.len() >= MAX_SERIES {
            if !self.full.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    max = MAX_SERIES,
                    metric = key.name(),
                    "OTLP metrics: too many series, new ones are not recorded"
                );
            }
            return None;
        }
        let s = make();
        all.insert(key.clone(), s.clone());
        Some(s)
    }
}

/// The `metrics` recorder of an [`OtlpMetrics`] export: keeps what goes through the facade
/// for it. Cheap to clone (the clones share the values).
#[derive(Debug, Clone, Default)]
pub struct OtlpRecorder(Arc<Store>);

impl metrics::Recorder for OtlpRecorder {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}

    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        match self
            .0
            .series(key, || Series::Counter(Arc::new(AtomicU64::new(0))))
        {
            Some(Series::Counter(c)) => Counter::from_arc(c),
            _ => Counter::noop(),
        }
    }

    fn register_gauge(&self, key: &Key, _: &Metadata<'_>) -> Gauge {
        let make = || Series::Gauge(Arc::new(AtomicU64::new(0f64.to_bits())));
        match self.0.series(key, make) {
            Some(Series::Gauge(g)) => Gauge::from_arc(g),
            _ => Gauge::noop(),
        }
    }

    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        let make = || Series::Histogram(Arc::new(Buckets::new(bounds_of(key.name()))));
        match self.0.series(key, make) {
            Some(Series::Histogram(h)) => Histogram::from_arc(h),
            _ => Histogram::noop(),
        }
    }
}

fn text(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

fn unix_nanos(at: SystemTime) -> u64 {
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The metrics of one export, by name, as they are built.
#[derive(Default)]
struct Metrics(BTreeMap<String, Metric>);

impl Metrics {
    fn metric(&mut self, name: &str, empty: impl FnOnce() -> metric::Data) -> &mut metric::Data {
        let m = self.0.entry(name.to_owned()).or_insert_with(|| Metric {
            name: name.to_owned(),
            unit: unit_of(name).to_owned(),
            ..Default::default()
        });
        m.data.get_or_insert_with(empty)
    }

    fn sum(&mut self, name: &str, point: NumberDataPoint) {
        let data = self.metric(name, || {
            metric::Data::Sum(opentelemetry_proto::tonic::metrics::v1::Sum {
                data_points: Vec::new(),
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
                is_monotonic: true,
            })
        });
        if let metric::Data::Sum(sum) = data {
            sum.data_points.push(point);
        }
    }

    fn gauge(&mut self, name: &str, point: NumberDataPoint) {
        let data = self.metric(name, || {
            metric::Data::Gauge(opentelemetry_proto::tonic::metrics::v1::Gauge {
                data_points: Vec::new(),
            })
        });
        if let metric::Data::Gauge(gauge) = data {
            gauge.data_points.push(point);
        }
    }

    fn histogram(&mut self, name: &str, point: HistogramDataPoint) {
        let data = self.metric(name, || {
            metric::Data::Histogram(opentelemetry_proto::tonic::metrics::v1::Histogram {
                data_points: Vec::new(),
                aggregation_temporality: AggregationTemporality::Cumulative as i32,
            })
        });
        if let metric::Data::Histogram(h) = data {
            h.data_points.push(point);
        }
    }
}

/// What an export sends: its resource, scope and the time its values count from.
#[derive(Debug)]
struct Source {
    store: Arc<Store>,
    service_name: String,
    start: u64,
}

impl Source {
    /// The export request of the values now.
    fn request(&self) -> ExportMetricsServiceRequest {
        let (start, now) = (self.start, unix_nanos(SystemTime::now()));
        let number = |attributes, value| NumberDataPoint {
            attributes,
            start_time_unix_nano: start,
            time_unix_nano: now,
            value: Some(value),
            ..Default::default()
        };
        let histogram = |attributes, counts: Vec<u64>, bounds: &[f64], sum| HistogramDataPoint {
            attributes,
            start_time_unix_nano: start,
            time_unix_nano: now,
            count: counts.iter().sum(),
            sum: Some(sum),
            bucket_counts: counts,
            explicit_bounds: bounds.to_vec(),
            ..Default::default()
        };
        let mut out = Metrics::default();
        let series = self
            .store
            .series
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        for (key, s) in series.iter() {
            let attributes = key.labels().map(|l| text(l.key(), l.value())).collect();
            match s {
                Series::Counter(c) => {
                    let total = i64::try_from(c.load(Ordering::Relaxed)).unwrap_or(i64::MAX);
                    out.sum(
                        key.name(),
                        number(attributes, number_data_point::Value::AsInt(total)),
                    );
                }
                Series::Gauge(g) => {
                    let value = f64::from_bits(g.load(Ordering::Relaxed));
                    out.gauge(
                        key.name(),
                        number(attributes, number_data_point::Value::AsDouble(value)),
                    );
                }
                Series::Histogram(h) => {
                    let counts = h.counts.iter().map(|c| c.load(Ordering::Relaxed)).collect();
                    let sum = f64::from_bits(h.sum.load(Ordering::Relaxed));
                    out.histogram(key.name(), histogram(attributes, counts, h.bounds, sum));
                }
            }
        }
        drop(series);
        // Counted in process, not through the facade (see `rpcwire_telemetry::durations`).
        if let Some(in_flight) = crate::durations::in_flight() {
            if !out.0.contains_key(names::IN_FLIGHT) {
                let value = number_data_point::Value::AsDouble(in_flight as f64);
                out.gauge(names::IN_FLIGHT, number(Vec::new(), value));
            }
        }
        crate::durations::for_each_histogram(|d| {
            let mut attributes = vec![
                text("rpc.system.name", SYSTEM),
                text("rpc.method", d.method),
            ];
            if let Some(kind) = d.error {
                attributes.push(text("error.type", kind));
            }
            let point = histogram(
                attributes,
                d.buckets.to_vec(),
                &DURATION_BUCKETS,
                d.sum.as_secs_f64(),
            );
            out.histogram(d.metric, point);
        });
        ExportMetricsServiceRequest {
            resource_metrics: vec![ResourceMetrics {
                resource: Some(Resource {
                    attributes: vec![text("service.name", &self.service_name)],
                    ..Default::default()
                }),
                scope_metrics: vec![ScopeMetrics {
                    scope: Some(InstrumentationScope {
                        name: "rpcwire".to_owned(),
                        ..Default::default()
                    }),
                    metrics: out.0.into_values().collect(),
                    ..Default::default()
                }],
                ..Default::default()
            }],
        }
    }
}

/// Why one export failed (logged; the next one sends the values again, they are cumulative).
#[derive(Debug, thiserror::Error)]
enum SendError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the collector answered {0}")]
    Status(http::StatusCode),
    #[error("request: {0}")]
    Request(#[from] http::Error),
}

fn send(client: &PlainHttp, endpoint: &str, source: &Source) -> Result<(), SendError> {
    let body = Bytes::from(source.request().encode_to_vec());
    let request = http::Request::builder()
        .method(http::Method::POST)
        .uri(endpoint)
        .header(http::header::CONTENT_TYPE, "application/x-protobuf")
        .body(body)?;
    let answer = client.post(request)?;
    if !answer.status().is_success() {
        return Err(SendError::Status(answer.status()));
    }
    Ok(())
}

/// A running export of metrics: sends every interval from a thread of its own, and a last
/// time when dropped.
#[derive(Debug)]
pub struct OtlpMetrics {
    recorder: OtlpRecorder,
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl OtlpMetrics {
    /// Starts exporting what [`recorder`](Self::recorder) keeps (and what
    /// `rpcwire_telemetry::durations` counts) to the collector at `url` (`http://host:port`,
    /// metrics going to `/v1/metrics`) every `interval`, as the service `service_name`.
    /// Nothing is recorded until the recorder is installed and metrics are enabled
    /// ([`install`](Self::install) does both).
    pub fn start(url: &str, service_name: &str, interval: Duration) -> Result<Self, OtlpError> {
        let endpoint = metrics_endpoint(url)?;
        if interval.is_zero() {
            return Err(OtlpError::BadInterval);
        }
        let recorder = OtlpRecorder::default();
        let source = Source {
            store: Arc::clone(&recorder.0),
            service_name: service_name.to_owned(),
            start: unix_nanos(SystemTime::now()),
        };
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("rpcwire-otlp-metrics".into())
            .spawn(move || {
                let client = PlainHttp {
                    timeout: EXPORT_TIMEOUT,
                };
                loop {
                    let last = !matches!(
                        stopped.recv_timeout(interval),
                        Err(mpsc::RecvTimeoutError::Timeout)
                    );
                    if let Err(e) = send(&client, &endpoint, &source) {
                        tracing::warn!(error = %e, endpoint, "OTLP: metrics not exported");
                    }
                    if last {
                        break;
                    }
                }
            })
            .map_err(OtlpError::Thread)?;
        Ok(OtlpMetrics {
            recorder,
            stop: Some(stop),
            thread: Some(thread),
        })
    }

    /// The recorder whose values this export sends: install it as the global `metrics`
    /// recorder, alone or in a fanout with another exporter's.
    pub fn recorder(&self) -> OtlpRecorder {
        self.recorder.clone()
    }

    /// Installs [`recorder`](Self::recorder) as the global `metrics` recorder, counts the
    /// call durations in process (`rpcwire_telemetry::durations::aggregate`) and turns the
    /// recording on (`rpcwire_telemetry::enable_metrics`). Fails when a recorder is
    /// installed already.
    pub fn install(&self) -> Result<(), metrics::SetRecorderError<OtlpRecorder>> {
        metrics::set_global_recorder(self.recorder())?;
        crate::durations::aggregate();
        crate::enable_metrics();
        Ok(())
    }
}

impl Drop for OtlpMetrics {
    fn drop(&mut self) {
        // Dropping the sender wakes the thread for its last export.
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::BATCH_SIZE_BUCKETS;
    use metrics::Recorder as _;

    static META: Metadata<'static> =
        Metadata::new("test", metrics::Level::INFO, Some(module_path!()));

    #[test]
    fn endpoints_are_http_urls_under_v1_metrics() {
        assert_eq!(
            metrics_endpoint("http://127.0.0.1:4318/").unwrap(),
            "http://127.0.0.1:4318/v1/metrics"
        );
        assert_eq!(
            metrics_endpoint("http://collector/v1/metrics").unwrap(),
            "http://collector/v1/metrics"
        );
        // A URL naming another signal's path: its collector's metrics path.
        for url in [
            "http://collector:4318/v1/traces",
            "http://collector:4318/v1/traces/",
            "http://collector:4318/v1/logs",
        ] {
            assert_eq!(
                metrics_endpoint(url).unwrap(),
                "http://collector:4318/v1/metrics"
            );
        }
        assert_eq!(
            crate::otlp::traces_endpoint("http://collector:4318/v1/metrics").unwrap(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            crate::otlp::traces_endpoint("http://collector:4318/otel").unwrap(),
            "http://collector:4318/otel/v1/traces"
        );
        assert!(metrics_endpoint("https://collector:4318").is_err());
        assert!(OtlpMetrics::start("http://127.0.0.1:9", "t", Duration::ZERO).is_err());
    }

    #[test]
    fn values_become_otlp_points() {
        let recorder = OtlpRecorder::default();
        let key = |name: &'static str, labels: &[(&'static str, &'static str)]| {
            let labels: Vec<metrics::Label> = labels
                .iter()
                .map(|&(k, v)| metrics::Label::new(k, v))
                .collect();
            Key::from_parts(name, labels)
        };
        recorder
            .register_counter(&key(names::REJECTIONS, &[("reason", "parse")]), &META)
            .increment(3);
        let conns = recorder.register_gauge(
            &key(names::CONNECTIONS, &[("network.transport", "tcp")]),
            &META,
        );
        conns.increment(2.0);
        conns.decrement(1.0);
        let sizes = recorder.register_histogram(&key(names::BATCH_SIZE, &[]), &META);
        for n in [1.0, 2.0, 3.0, 2000.0] {
            sizes.record(n);
        }
        let source = Source {
            store: Arc::clone(&recorder.0),
            service_name: "svc".into(),
            start: 1,
        };
        let request = source.request();
        let bytes = request.encode_to_vec();
        let back = ExportMetricsServiceRequest::decode(&bytes[..]).unwrap();
        let metrics = &back.resource_metrics[0].scope_metrics[0].metrics;
        let by_name = |name: &str| metrics.iter().find(|m| m.name == name).unwrap();
        let Some(metric::Data::Sum(sum)) = &by_name(names::REJECTIONS).data else {
            panic!("not a sum")
        };
        assert!(sum.is_monotonic);
        assert_eq!(
            sum.data_points[0].value,
            Some(number_data_point::Value::AsInt(3))
        );
        assert_eq!(sum.data_points[0].attributes, vec![text("reason", "parse")]);
        let Some(metric::Data::Gauge(gauge)) = &by_name(names::CONNECTIONS).data else {
            panic!("not a gauge")
        };
        assert_eq!(
            gauge.data_points[0].value,
            Some(number_data_point::Value::AsDouble(1.0))
        );
        assert_eq!(by_name(names::CONNECTIONS).unit, "{connection}");
        let Some(metric::Data::Histogram(h)) = &by_name(names::BATCH_SIZE).data else {
            panic!("not a histogram")
        };
        let point = &h.data_points[0];
        assert_eq!(point.explicit_bounds, BATCH_SIZE_BUCKETS.to_vec());
        // 1 (le 1), 2 (le 2), 3 (le 4), 2000 (past 1024).
        assert_eq!(&point.bucket_counts[..3], &[1, 1, 1]);
        assert_eq!(point.bucket_counts[BATCH_SIZE_BUCKETS.len()], 1);
        assert_eq!((point.count, point.sum), (4, Some(2006.0)));
    }

    #[test]
    fn series_stay_bounded() {
        let recorder = OtlpRecorder::default();
        for i in 0..MAX_SERIES + 10 {
            let key = Key::from_parts("c", vec![metrics::Label::new("n", i.to_string())]);
            recorder.register_counter(&key, &META).increment(1);
        }
        assert_eq!(recorder.0.series.read().unwrap().len(), MAX_SERIES);
    }
}
