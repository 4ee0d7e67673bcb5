//! Call durations and calls in flight counted in process (feature `metrics`), for an
//! application that renders them itself: after [`aggregate`], `rpc.server.call.duration`,
//! `rpc.client.call.duration` and `rpc.server.calls_in_flight` no longer go through the
//! `metrics` facade but into fixed histograms with the OpenTelemetry buckets
//! ([`DURATION_BUCKETS`]), one atomic counter per bucket, which [`render_prometheus`] writes in
//! the Prometheus text format under the names the catalog gives them ([`crate::catalog`]),
//! with the labels the facade's would have. `rpcwire serve --metrics` does so: a recorded
//! sample then costs two relaxed atomic additions instead of the exporter's clock read and
//! queue push per sample (see the observability cost in `BENCHMARKS.md`). Everything else
//! still goes through the facade.
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

use crate::{names, DURATION_BUCKETS, OTHER_METHOD, SYSTEM};

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

/// How one side's histograms count time: the bucket bounds in its unit, and the clock whose
/// ticks that unit is (`None`: nanoseconds).
///
/// The server side counts in the ticks of its own clock ([`ticks`]): a call's duration is
/// the difference of two readings, put in its bucket by bounds converted to ticks once (in
/// [`aggregate`]) and summed in ticks, converted to nanoseconds only when rendered. Scaling
/// each call's two readings to nanoseconds cost more than the rest of the recording did.
#[derive(Debug)]
struct Scale {
    clock: Option<quanta::Clock>,
    bounds: [u64; DURATION_BUCKETS.len()],
}

impl Scale {
    /// The clock's ticks scaled to nanoseconds.
    fn nanos(&self, ticks: u64) -> u64 {
        self.clock
            .as_ref()
            .map_or(ticks, |clock| clock.delta_as_nanos(0, ticks))
    }

    /// The scale of `clock`'s ticks: each bound the most ticks that scale to at most its
    /// nanoseconds (a sample is in bucket `i` exactly when its ticks scaled would be).
    fn of_clock(clock: quanta::Clock) -> Self {
        let bounds = BOUNDS_NS.map(|bound| {
            // The scaling is monotonic up to here (`2^48` ticks: days at any rate a counter
            // runs, and no overflow of the scaling for a tick of up to 2^16 ns).
            let (mut lo, mut hi) = (0u64, 1u64 << 48);
            while lo < hi {
                let mid = lo + (hi - lo).div_ceil(2);
                if clock.delta_as_nanos(0, mid) <= bound {
                    lo = mid;
                } else {
                    hi = mid - 1;
                }
            }
            lo
        });
        Scale {
            clock: Some(clock),
            bounds,
        }
    }
}

/// Nanoseconds: the client side's unit (its durations come from the system clock).
static NANOS: Scale = Scale {
    clock: None,
    bounds: BOUNDS_NS,
};

/// One histogram: a counter per bucket (the last is `+Inf`), the count and the sum, in the
/// unit of its side's [`Scale`].
#[derive(Debug)]
pub(crate) struct Histogram {
    buckets: [AtomicU64; DURATION_BUCKETS.len() + 1],
    sum: AtomicU64,
}

impl Histogram {
    fn new() -> Self {
        Histogram {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum: AtomicU64::new(0),
        }
    }

    /// Counts a sample of `value` in the unit of `bounds`.
    #[inline]
    fn record(&self, value: u64, bounds: &[u64; DURATION_BUCKETS.len()]) {
        // The first bound not below the sample (`le` is inclusive); most calls take less
        // than the first bound.
        let i = if value <= bounds[0] {
            0
        } else {
            bounds.partition_point(|&b| b < value)
        };
        self.buckets[i].fetch_add(1, Ordering::Relaxed);
        self.sum.fetch_add(value, Ordering::Relaxed);
    }
}

/// One method's histograms: its successful calls', and one per error type seen, in the unit
/// of `scale` (its side's).
#[derive(Debug)]
pub(crate) struct MethodDurations {
    ok: Histogram,
    errors: RwLock<Vec<(Box<str>, Arc<Histogram>)>>,
    scale: &'static Scale,
}

impl MethodDurations {
    fn new(scale: &'static Scale) -> Self {
        MethodDurations {
            ok: Histogram::new(),
            errors: RwLock::new(Vec::new()),
            scale,
        }
    }

    /// Counts a call that took `elapsed` (a client's: its side counts nanoseconds), with
    /// `error` as its `error.type` if it failed.
    pub(crate) fn record(&self, error: Option<&str>, elapsed: Duration) {
        debug_assert!(self.scale.clock.is_none());
        let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        match error {
            None => self.ok.record(ns, &self.scale.bounds),
            Some(kind) => self.record_error(kind, ns),
        }
    }

    /// Counts a call answered with the error `code` (its `error.type`).
    #[inline(never)]
    fn record_code(&self, code: i32, value: u64) {
        self.record_error(&code.to_string(), value);
    }

    /// Counts a failed call's `value` (in the side's unit) under its error type.
    #[inline(never)]
    fn record_error(&self, kind: &str, value: u64) {
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
        h.record(value, &self.scale.bounds);
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
    scale: &'static Scale,
}

impl Side {
    fn new(metric: &'static str, scale: &'static Scale) -> Self {
        Side {
            metric,
            methods: RwLock::new(HashMap::default()),
            scale,
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
            .or_insert_with(|| Box::leak(Box::new(MethodDurations::new(self.scale))))
    }
}

static ON: AtomicBool = AtomicBool::new(false);
/// The clock of the server calls' durations: the CPU's time-stamp counter where it is
/// invariant (else the monotonic clock), as the Prometheus exporter's own: a read is a few
/// instructions and a call's two reads are scaled to nanoseconds once, where the system clock
/// costs a call into the vDSO per read and a `timespec` subtraction per call; with the bucket
/// bounds in its ticks (see [`Scale`]). Set by [`aggregate`] (its calibration, shared with the
/// exporter's, runs then, once per process).
static TICKS: OnceLock<Scale> = OnceLock::new();
static SERVER: LazyLock<Side> = LazyLock::new(|| {
    let scale = TICKS.get_or_init(|| Scale::of_clock(quanta::Clock::new()));
    Side::new(names::SERVER_DURATION, scale)
});
static CLIENT: LazyLock<Side> = LazyLock::new(|| Side::new(names::CLIENT_DURATION, &NANOS));
static IN_FLIGHT: AtomicI64 = AtomicI64::new(0);

/// Counts durations and calls in flight here from now on instead of through the facade
/// (see the module's documentation); call it before [`crate::enable_metrics`].
pub fn aggregate() {
    // The server side's clock and its bounds in ticks, made now rather than on a first call.
    LazyLock::force(&SERVER);
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
    TICKS
        .get()
        .and_then(|scale| scale.clock.as_ref())
        .map_or(0, quanta::Clock::raw)
}

/// A server call whose start the clock read as `started` ([`ticks`]) ended, answered with
/// the error `error` if any (its `error.type`, made text only then). Counted in ticks (see
/// [`Scale`]); a reading before the start (a counter out of step between cores) counts 0.
#[inline]
pub(crate) fn server_end(m: &MethodDurations, error: Option<i32>, started: u64) {
    let ticks = m
        .scale
        .clock
        .as_ref()
        .map_or(0, |clock| clock.raw().saturating_sub(started));
    match error {
        None => m.ok.record(ticks, &m.scale.bounds),
        Some(code) => m.record_code(code, ticks),
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

/// The Prometheus name of a metric, and its `# HELP` and `# TYPE` lines (from the catalog,
/// as the facade's families get theirs).
fn family_head(out: &mut String, metric: &str) -> &'static str {
    let Some(f) = crate::catalog::family(metric) else {
        return "";
    };
    let kind = match f.instrument {
        crate::catalog::Instrument::Counter => "counter",
        crate::catalog::Instrument::Gauge => "gauge",
        crate::catalog::Instrument::Histogram => "histogram",
    };
    let _ = writeln!(out, "# HELP {} {}", f.prometheus, f.help);
    let _ = writeln!(out, "# TYPE {} {kind}", f.prometheus);
    f.prometheus
}

fn render_histogram(
    out: &mut String,
    name: &str,
    method: &str,
    error: Option<&str>,
    h: &Histogram,
    scale: &Scale,
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
    let sum = scale.nanos(h.sum.load(Ordering::Relaxed)) as f64 / 1e9;
    let _ = writeln!(out, "{name}_sum{{{labels}}} {sum}");
    let _ = writeln!(out, "{name}_count{{{labels}}} {seen}");
}

/// Writes the durations and calls in flight counted here in the Prometheus text format
/// (nothing before [`aggregate`]); append it to the facade exporter's text.
pub fn render_prometheus(out: &mut String) {
    if !on() {
        return;
    }
    let in_flight = family_head(out, names::IN_FLIGHT);
    let _ = writeln!(out, "{in_flight} {}", IN_FLIGHT.load(Ordering::Relaxed));
    for side in [&*SERVER, &*CLIENT] {
        let methods = side.methods.read().unwrap_or_else(PoisonError::into_inner);
        if methods.is_empty() {
            continue;
        }
        let name = family_head(out, side.metric);
        let mut sorted: Vec<_> = methods.iter().collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (method, m) in sorted {
            render_histogram(out, name, method, None, &m.ok, m.scale);
            let errors = m.errors.read().unwrap_or_else(PoisonError::into_inner);
            for (kind, h) in errors.iter() {
                render_histogram(out, name, method, Some(kind), h, m.scale);
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
                sum: Duration::from_nanos(m.scale.nanos(h.sum.load(Ordering::Relaxed))),
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
        let ns = &NANOS.bounds;
        h.record(10_000, ns); // 10 µs: le 0.005
        h.record(5_000_000, ns); // 5 ms: le 0.005 (inclusive)
        h.record(6_000_000, ns); // 6 ms: le 0.01
        h.record(11_000_000_000, ns); // 11 s: +Inf
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
        render_histogram(&mut out, "d", "a\"b", Some("-32602"), &h, &NANOS);
        assert!(out.contains("d_bucket{rpc_system_name=\"jsonrpc\",rpc_method=\"a\\\"b\",error_type=\"-32602\",le=\"0.005\"} 2\n"), "{out}");
        assert!(out.contains("le=\"0.01\"} 3\n"), "{out}");
        assert!(out.contains("le=\"+Inf\"} 4\n"), "{out}");
        assert!(out.contains("d_count{rpc_system_name=\"jsonrpc\",rpc_method=\"a\\\"b\",error_type=\"-32602\"} 4\n"), "{out}");
        assert!(out.contains("d_sum{rpc_system_name=\"jsonrpc\",rpc_method=\"a\\\"b\",error_type=\"-32602\"} 11.01101\n"), "{out}");
    }

    /// Counted in ticks, a sample lands in the bucket its ticks scaled to nanoseconds would:
    /// each bound in ticks is the last count of ticks at or under the bound in nanoseconds.
    #[test]
    fn tick_bounds_bucket_as_nanoseconds_would() {
        let scale = Scale::of_clock(quanta::Clock::new());
        let clock = scale.clock.as_ref().unwrap();
        for (i, (&ticks, &ns)) in scale.bounds.iter().zip(&BOUNDS_NS).enumerate() {
            assert!(clock.delta_as_nanos(0, ticks) <= ns, "bound {i}");
            assert!(clock.delta_as_nanos(0, ticks + 1) > ns, "bound {i}");
            let h = Histogram::new();
            h.record(ticks, &scale.bounds);
            h.record(ticks + 1, &scale.bounds);
            assert_eq!(h.buckets[i].load(Ordering::Relaxed), 1, "bound {i}");
            assert_eq!(h.buckets[i + 1].load(Ordering::Relaxed), 1, "bound {i}");
        }
        // The sum is rendered in seconds.
        let h = Histogram::new();
        h.record(scale.bounds[3], &scale.bounds); // 50 ms, less a tick
        let mut out = String::new();
        render_histogram(&mut out, "d", "m", None, &h, &scale);
        let sum: f64 = out
            .lines()
            .find_map(|l| l.strip_prefix("d_sum{rpc_system_name=\"jsonrpc\",rpc_method=\"m\"} "))
            .unwrap()
            .parse()
            .unwrap();
        assert!((0.049_99..=0.05).contains(&sum), "{sum}");
    }

    #[test]
    fn labels_stay_bounded() {
        let side = Side::new("x", &NANOS);
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
