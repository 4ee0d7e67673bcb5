//! Call durations and calls in flight counted in process (feature `metrics`), for an
//! application that renders them itself: after [`aggregate`], `rpc.server.call.duration`,
//! `rpc.client.call.duration` and `rpc.server.calls_in_flight` no longer go through the
//! `metrics` facade but into fixed histograms with the OpenTelemetry buckets
//! ([`DURATION_BUCKETS`]), one atomic counter per bucket, which [`render_prometheus`] writes in
//! the Prometheus text format under the names and labels the facade's Prometheus exporter
//! gives them. `rpcwire serve --metrics` does so: a recorded sample then costs two relaxed
//! atomic additions instead of the exporter's clock read and queue push per sample (see the
//! observability cost in `BENCHMARKS.md`). Everything else still goes through the facade.
//!
//! Bounded like the facade's labels: one entry per method label (a server's registered names
//! and `_OTHER`; a client's called names, past [`MAX_METHODS`] as `_OTHER`) and per error
//! type of a method (past [`MAX_ERRORS`] as `_OTHER`).

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use crate::telemetry::{names, DURATION_BUCKETS, OTHER_METHOD, SYSTEM};

/// Most method labels kept per side (server, client).
pub const MAX_METHODS: usize = 256;
/// Most error types kept per method.
pub const MAX_ERRORS: usize = 16;

/// The bucket bounds in nanoseconds, for comparing without floating point.
const BOUNDS_NS: [u64; DURATION_BUCKETS.len()] = {
    let mut out = [0u64; DURATION_BUCKETS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = (DURATION_BUCKETS[i] * 1e9) as u64;
        i += 1;
    }
    out
};

/// One histogram: a counter per bucket (the last is `+Inf`), the count and the sum.
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; DURATION_BUCKETS.len() + 1],
    sum_ns: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }

    fn record(&self, ns: u64) {
        // The first bound not below the sample (`le` is inclusive); most calls take less
        // than the first bound.
        let i = if ns <= BOUNDS_NS[0] {
            0
        } else {
            BOUNDS_NS.partition_point(|&b| b < ns)
        };
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }
}

/// One method's histograms: its successful calls', and one per error type seen.
#[derive(Debug)]
pub(crate) struct MethodDurations {
    ok: Histogram,
    errors: RwLock<Vec<(Box<str>, Arc<Histogram>)>>,
}

impl MethodDurations {
    fn new() -> Self {
        MethodDurations {
            ok: Histogram::new(),
            errors: RwLock::new(Vec::new()),
        }
    }

    /// Counts a call that took `elapsed`, with `error` as its `error.type` if it failed.
    pub(crate) fn record(&self, error: Option<&str>, elapsed: Duration) {
        self.record_ns(error, u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX));
    }

    /// [`record`](Self::record) of a duration in nanoseconds.
    #[inline]
    pub(crate) fn record_ns(&self, error: Option<&str>, ns: u64) {
        let Some(kind) = error else {
            return self.ok.record(ns);
        };
        self.record_error(kind, ns);
    }

    /// Counts a call answered with the error `code` (its `error.type`).
    #[inline(never)]
    fn record_code(&self, code: i32, ns: u64) {
        self.record_error(&code.to_string(), ns);
    }

    #[inline(never)]
    fn record_error(&self, kind: &str, ns: u64) {
        let known = self
            .errors
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(k, _)| &**k == kind)
            .map(|(_, h)| Arc::clone(h));
        let h = known.unwrap_or_else(|| {
            let mut errors = self.errors.write().unwrap_or_else(PoisonError::into_inner);
            let kind = if errors.len() >= MAX_ERRORS - 1 && errors.iter().all(|(k, _)| &**k != kind)
            {
                OTHER_METHOD
            } else {
                kind
            };
            if let Some((_, h)) = errors.iter().find(|(k, _)| &**k == kind) {
                return Arc::clone(h);
            }
            let h = Arc::new(Histogram::new());
            errors.push((kind.into(), Arc::clone(&h)));
            h
        });
        h.record(ns);
    }
}

/// FNV-1a: method names are short and hashed on every call; SipHash's resistance to chosen
/// collisions buys nothing here (the names are bounded and the table small).
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut h = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for &b in bytes {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

/// Entries are never removed (the table is bounded), so each is made `'static` once: a call
/// holds its method's histograms with no reference count, and a router method keeps them
/// (see `telemetry::MethodMeter`).
type Methods = HashMap<Box<str>, &'static MethodDurations, BuildHasherDefault<Fnv>>;

/// One side's methods (server or client).
struct Side {
    metric: &'static str,
    methods: RwLock<Methods>,
}

impl Side {
    fn new(metric: &'static str) -> Self {
        Side {
            metric,
            methods: RwLock::new(HashMap::default()),
        }
    }

    fn method(&self, label: &str) -> &'static MethodDurations {
        if let Some(m) = self
            .methods
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(label)
        {
            return m;
        }
        let mut methods = self.methods.write().unwrap_or_else(PoisonError::into_inner);
        let label = if methods.len() >= MAX_METHODS - 1 && !methods.contains_key(label) {
            OTHER_METHOD
        } else {
            label
        };
        methods
            .entry(label.into())
            .or_insert_with(|| Box::leak(Box::new(MethodDurations::new())))
    }
}

static ON: AtomicBool = AtomicBool::new(false);
/// The clock of the server calls' durations: the CPU's time-stamp counter where it is
/// invariant (else the monotonic clock), as the Prometheus exporter's own: a read is a few
/// instructions and a call's two reads are scaled to nanoseconds once, where the system clock
/// costs a call into the vDSO per read and a `timespec` subtraction per call. Set by
/// [`aggregate`] (its calibration, shared with the exporter's, runs then, once per process).
static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();
static SERVER: LazyLock<Side> = LazyLock::new(|| Side::new(names::SERVER_DURATION));
static CLIENT: LazyLock<Side> = LazyLock::new(|| Side::new(names::CLIENT_DURATION));
static IN_FLIGHT: AtomicI64 = AtomicI64::new(0);

/// Counts durations and calls in flight here from now on instead of through the facade
/// (see the module's documentation); call it before [`crate::telemetry::enable_metrics`].
pub fn aggregate() {
    CLOCK.get_or_init(quanta::Clock::new);
    ON.store(true, Ordering::Relaxed);
}

/// True after [`aggregate`].
#[inline]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The histograms of the server calls labelled `label` (found once per router method: see
/// `telemetry::MethodMeter`).
pub(crate) fn server_method(label: &str) -> &'static MethodDurations {
    SERVER.method(label)
}

/// A reading of the clock of server call durations, for [`server_end`] (0 before
/// [`aggregate`]).
#[inline]
pub(crate) fn ticks() -> u64 {
    CLOCK.get().map_or(0, quanta::Clock::raw)
}

/// A server call whose start the clock read as `started` ([`ticks`]) ended, answered with
/// the error `error` if any (its `error.type`, made text only then).
#[inline]
pub(crate) fn server_end(m: &MethodDurations, error: Option<i32>, started: u64) {
    let ns = CLOCK
        .get()
        .map_or(0, |clock| clock.delta_as_nanos(started, clock.raw()));
    match error {
        None => m.ok.record(ns),
        Some(code) => m.record_code(code, ns),
    }
}

/// Moves the calls in flight counted here (the calls whose handlers wait: see
/// `telemetry::ServerCall::waits`).
pub(crate) fn in_flight_add(delta: i64) {
    IN_FLIGHT.fetch_add(delta, Ordering::Relaxed);
}

/// Counts a client call of `method`.
pub(crate) fn client(method: &str, error: Option<&str>, elapsed: Duration) {
    CLIENT.method(method).record(error, elapsed);
}

/// A label value as the Prometheus text format writes it.
fn escape(value: &str, out: &mut String) {
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
}

/// The Prometheus name of a metric (`.` as `_`, as the facade's exporter writes it).
fn prometheus_name(metric: &str) -> String {
    metric.replace('.', "_")
}

fn render_histogram(
    out: &mut String,
    name: &str,
    method: &str,
    error: Option<&str>,
    h: &Histogram,
) {
    let mut labels = format!("rpc_system_name=\"{SYSTEM}\",rpc_method=\"");
    escape(method, &mut labels);
    labels.push('"');
    if let Some(kind) = error {
        labels.push_str(",error_type=\"");
        escape(kind, &mut labels);
        labels.push('"');
    }
    let mut seen = 0u64;
    for (i, bucket) in h.buckets.iter().enumerate() {
        seen += bucket.load(Ordering::Relaxed);
        match DURATION_BUCKETS.get(i) {
            Some(le) => {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {seen}");
            }
            None => {
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {seen}");
            }
        }
    }
    let sum = h.sum_ns.load(Ordering::Relaxed) as f64 / 1e9;
    let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {seen}");
}

/// Writes the durations and calls in flight counted here in the Prometheus text format
/// (nothing before [`aggregate`]); append it to the facade exporter's text.
pub fn render_prometheus(out: &mut String) {
    if !on() {
        return;
    }
    let _ = writeln!(out, "# TYPE {} gauge", prometheus_name(names::IN_FLIGHT));
    let _ = writeln!(
        out,
        "{} {}",
        prometheus_name(names::IN_FLIGHT),
        IN_FLIGHT.load(Ordering::Relaxed)
    );
    for side in [&*SERVER, &*CLIENT] {
        let methods = side.methods.read().unwrap_or_else(PoisonError::into_inner);
        if methods.is_empty() {
            continue;
        }
        let name = prometheus_name(side.metric);
        let _ = writeln!(out, "# TYPE {name} histogram");
        let mut sorted: Vec<_> = methods.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (method, m) in sorted {
            render_histogram(out, &name, method, None, &m.ok);
            let errors = m.errors.read().unwrap_or_else(PoisonError::into_inner);
            for (kind, h) in errors.iter() {
                render_histogram(out, &name, method, Some(kind), h);
            }
        }
    }
}

/// One histogram counted here, as [`for_each_histogram`] gives it to an exporter that is not
/// the Prometheus text (OTLP): the same counts [`render_prometheus`] writes.
#[derive(Debug, Clone, PartialEq)]
pub struct DurationCounts<'a> {
    /// [`names::SERVER_DURATION`] or [`names::CLIENT_DURATION`].
    pub metric: &'static str,
    /// The `rpc.method` label.
    pub method: &'a str,
    /// The `error.type` label of a failed call's histogram.
    pub error: Option<&'a str>,
    /// Samples per bucket of [`DURATION_BUCKETS`] (not cumulative); the last one past the
    /// last bound.
    pub buckets: [u64; DURATION_BUCKETS.len() + 1],
    /// The sum of the samples.
    pub sum: Duration,
}

/// Gives every histogram counted here, server's then client's, by method (nothing before
/// [`aggregate`]).
pub fn for_each_histogram(mut f: impl FnMut(&DurationCounts<'_>)) {
    if !on() {
        return;
    }
    for side in [&*SERVER, &*CLIENT] {
        let methods = side.methods.read().unwrap_or_else(PoisonError::into_inner);
        for (method, m) in methods.iter() {
            let counts = |error, h: &Histogram| DurationCounts {
                metric: side.metric,
                method,
                error,
                buckets: std::array::from_fn(|i| h.buckets[i].load(Ordering::Relaxed)),
                sum: Duration::from_nanos(h.sum_ns.load(Ordering::Relaxed)),
            };
            f(&counts(None, &m.ok));
            let errors = m.errors.read().unwrap_or_else(PoisonError::into_inner);
            for (kind, h) in errors.iter() {
                f(&counts(Some(kind), h));
            }
        }
    }
}

/// The server calls in flight counted here (`None` before [`aggregate`]).
pub fn in_flight() -> Option<i64> {
    on().then(|| IN_FLIGHT.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_land_in_their_buckets() {
        let h = Histogram::new();
        h.record(10_000); // 10 µs: le 0.005
        h.record(5_000_000); // 5 ms: le 0.005 (inclusive)
        h.record(6_000_000); // 6 ms: le 0.01
        h.record(11_000_000_000); // 11 s: +Inf
        let counts: Vec<u64> = h
            .buckets
            .iter()
            .map(|b| b.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts[0], 2);
        assert_eq!(counts[1], 1);
        assert_eq!(counts[DURATION_BUCKETS.len()], 1);
        assert_eq!(counts.iter().sum::<u64>(), 4);
        let mut out = String::new();
        render_histogram(&mut out, "d", "a\"b", Some("-32602"), &h);
        assert!(out.contains("d_bucket{rpc_system_name=\"jsonrpc\",rpc_method=\"a\\\"b\",error_type=\"-32602\",le=\"0.005\"} 2\n"), "{out}");
        assert!(out.contains("le=\"0.01\"} 3\n"), "{out}");
        assert!(out.contains("le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("d_count{rpc_system_name=\"jsonrpc\",rpc_method=\"a\\\"b\",error_type=\"-32602\"} 4\n"), "{out}");
    }

    #[test]
    fn labels_stay_bounded() {
        let side = Side::new("x");
        for i in 0..3 * MAX_METHODS {
            let m = side.method(&format!("m{i}"));
            for e in 0..3 * MAX_ERRORS {
                m.record(Some(&format!("e{e}")), Duration::from_millis(1));
            }
        }
        let methods = side.methods.read().unwrap();
        assert_eq!(methods.len(), MAX_METHODS);
        let other = &methods[OTHER_METHOD];
        assert_eq!(other.errors.read().unwrap().len(), MAX_ERRORS);
    }
}
