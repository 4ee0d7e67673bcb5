//! The live view's numbers (feature `metrics`): calls, errors and a latency histogram per
//! method, and the open connections, kept in process for the browser console's charts
//! (`rpcwire serve --ws ADDR --console` serves [`snapshot`] as JSON at `/console/stats`).
//!
//! Off until [`enable`]: the server's call path then costs one relaxed load more, shared with
//! the metrics' own check. Bounded: one entry per name the server labels a call with (its
//! registered methods and `_OTHER`), at most [`MAX_METHODS`]; calls of any further name count
//! as `_OTHER`, so a flood of made-up names cannot grow it. Each entry is a fixed histogram
//! of [`BUCKETS`] atomic counters (four buckets per doubling, from 1 µs to about 69 s):
//! percentiles read from it are within 19 % of the true value, ample for a chart.
//!
//! The numbers are cumulative since [`enable`]; the page takes the differences between two
//! snapshots for the rate and the recent percentiles.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{OnceLock, RwLock};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::OTHER_METHOD;

/// Most method names kept apart (registered names and `_OTHER`); calls of further names are
/// counted as `_OTHER`.
pub const MAX_METHODS: usize = 256;

/// Sub-buckets per doubling of the latency.
const PER_DOUBLING: usize = 4;
/// The first bucket holds everything up to 2^MIN_SHIFT ns (1.024 µs).
const MIN_SHIFT: u32 = 10;
/// The last bucket holds everything from 2^MAX_SHIFT ns (68.7 s) up.
const MAX_SHIFT: u32 = 36;
/// Buckets of each method's latency histogram.
pub const BUCKETS: usize = 2 + (MAX_SHIFT - MIN_SHIFT) as usize * PER_DOUBLING;

/// The bucket of a latency in nanoseconds.
fn bucket(nanos: u64) -> usize {
    if nanos < 1 << MIN_SHIFT {
        return 0;
    }
    let shift = 63 - nanos.leading_zeros();
    if shift >= MAX_SHIFT {
        return BUCKETS - 1;
    }
    // The two bits after the leading one pick the quarter of the doubling.
    let quarter = (nanos >> (shift - 2)) & 3;
    1 + (shift - MIN_SHIFT) as usize * PER_DOUBLING + quarter as usize
}

/// The upper bound of bucket `i` in nanoseconds (the last one's lower bound: it has none).
fn bucket_bound(i: usize) -> u64 {
    if i == 0 {
        return 1 << MIN_SHIFT;
    }
    if i >= BUCKETS - 1 {
        return 1 << MAX_SHIFT;
    }
    let k = i - 1;
    let shift = MIN_SHIFT + (k / PER_DOUBLING) as u32;
    (PER_DOUBLING as u64 + (k % PER_DOUBLING) as u64 + 1) << (shift - 2)
}

/// One method's counts.
#[derive(Debug)]
pub(crate) struct MethodStats {
    calls: AtomicU64,
    errors: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl MethodStats {
    fn new() -> Self {
        MethodStats {
            calls: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }

    /// Counts one call that took `elapsed`, failed or not.
    pub(crate) fn record(&self, elapsed: Duration, failed: bool) {
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.buckets[bucket(nanos)].fetch_add(1, Ordering::Relaxed);
        self.calls.fetch_add(1, Ordering::Relaxed);
        if failed {
            self.errors.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Everything the live view counts.
struct Stats {
    started: Instant,
    connections: AtomicI64,
    /// Entries are never removed (the table is bounded), so each is made `'static` once: a
    /// router method keeps its own (see `telemetry::MethodMeter`).
    methods: RwLock<HashMap<Box<str>, &'static MethodStats>>,
}

static STATS: OnceLock<Stats> = OnceLock::new();

/// Starts counting (idempotent). Call it before serving: connections opened earlier are not
/// counted.
pub fn enable() {
    STATS.get_or_init(|| Stats {
        started: Instant::now(),
        connections: AtomicI64::new(0),
        methods: RwLock::new(HashMap::new()),
    });
    crate::recording::enable_live_stats();
}

/// True once [`enable`] ran.
pub fn enabled() -> bool {
    STATS.get().is_some()
}

/// The counts of the calls labelled `label` (a registered method or `_OTHER`); `None` when
/// the live view is off.
pub(crate) fn method(label: &str) -> Option<&'static MethodStats> {
    let stats = STATS.get()?;
    if let Some(m) = stats
        .methods
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .get(label)
    {
        return Some(m);
    }
    let mut methods = stats.methods.write().unwrap_or_else(|e| e.into_inner());
    // Past the bound, further names share `_OTHER` (kept room for it: one less).
    let label = if methods.len() >= MAX_METHODS - 1 && !methods.contains_key(label) {
        OTHER_METHOD
    } else {
        label
    };
    Some(
        methods
            .entry(label.into())
            .or_insert_with(|| Box::leak(Box::new(MethodStats::new()))),
    )
}

/// Counts a connection opened (`1`) or closed (`-1`).
pub(crate) fn connection(delta: i64) {
    if let Some(stats) = STATS.get() {
        stats.connections.fetch_add(delta, Ordering::Relaxed);
    }
}

/// One method's numbers in a [`Snapshot`].
#[derive(Debug, Clone, Serialize)]
pub struct MethodSnapshot {
    /// The `rpc.method` label: a registered name or `_OTHER`.
    pub method: String,
    /// Calls answered.
    pub calls: u64,
    /// Of which answered with an error.
    pub errors: u64,
    /// Median latency since the start, microseconds (a bucket's upper bound).
    pub p50_us: f64,
    /// 95th percentile, microseconds.
    pub p95_us: f64,
    /// 99th percentile, microseconds.
    pub p99_us: f64,
    /// The histogram's non-empty buckets as `[index, count]` (bounds in
    /// [`Snapshot::bucket_bounds_us`]).
    pub buckets: Vec<(usize, u64)>,
}

/// The live view's numbers at one moment, cumulative since [`enable`].
#[derive(Debug, Clone, Serialize)]
pub struct Snapshot {
    /// False when the live view is off (everything else empty).
    pub enabled: bool,
    /// Milliseconds since [`enable`].
    pub uptime_ms: u64,
    /// Connections open now.
    pub connections: i64,
    /// The upper bound of each histogram bucket, microseconds (the last: its lower bound).
    pub bucket_bounds_us: Vec<f64>,
    /// By method, in name order.
    pub methods: Vec<MethodSnapshot>,
}

/// The `q` quantile (0..=1) of a histogram given as counts per bucket, as the bucket's upper
/// bound in microseconds; 0 for an empty one.
pub fn quantile_us(counts: &[u64; BUCKETS], q: f64) -> f64 {
    let total: u64 = counts.iter().sum();
    if total == 0 {
        return 0.0;
    }
    // The smallest bucket whose cumulative count reaches ceil(q * total).
    let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
    let mut seen = 0;
    for (i, &n) in counts.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return bucket_bound(i) as f64 / 1000.0;
        }
    }
    bucket_bound(BUCKETS - 1) as f64 / 1000.0
}

/// The numbers now.
pub fn snapshot() -> Snapshot {
    let Some(stats) = STATS.get() else {
        return Snapshot {
            enabled: false,
            uptime_ms: 0,
            connections: 0,
            bucket_bounds_us: Vec::new(),
            methods: Vec::new(),
        };
    };
    let methods = stats.methods.read().unwrap_or_else(|e| e.into_inner());
    let mut out: Vec<MethodSnapshot> = methods
        .iter()
        .map(|(name, m)| {
            let counts: [u64; BUCKETS] =
                std::array::from_fn(|i| m.buckets[i].load(Ordering::Relaxed));
            MethodSnapshot {
                method: name.to_string(),
                calls: m.calls.load(Ordering::Relaxed),
                errors: m.errors.load(Ordering::Relaxed),
                p50_us: quantile_us(&counts, 0.50),
                p95_us: quantile_us(&counts, 0.95),
                p99_us: quantile_us(&counts, 0.99),
                buckets: counts
                    .iter()
                    .enumerate()
                    .filter(|(_, &n)| n > 0)
                    .map(|(i, &n)| (i, n))
                    .collect(),
            }
        })
        .collect();
    drop(methods);
    out.sort_by(|a, b| a.method.cmp(&b.method));
    Snapshot {
        enabled: true,
        uptime_ms: u64::try_from(stats.started.elapsed().as_millis()).unwrap_or(u64::MAX),
        connections: stats.connections.load(Ordering::Relaxed),
        bucket_bounds_us: (0..BUCKETS)
            .map(|i| bucket_bound(i) as f64 / 1000.0)
            .collect(),
        methods: out,
    }
}

/// [`snapshot`] as JSON text.
pub fn snapshot_json() -> String {
    serde_json::to_string(&snapshot()).unwrap_or_else(|_| "{}".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_ordered_and_contain_their_values() {
        let mut last = 0;
        for i in 0..BUCKETS {
            let bound = bucket_bound(i);
            assert!(
                bound > last || i == BUCKETS - 1,
                "bucket {i}: {bound} <= {last}"
            );
            last = bound;
        }
        for nanos in [
            0,
            1,
            1023,
            1024,
            1279,
            1280,
            1500,
            4096,
            999_999,
            1 << 35,
            u64::MAX,
        ] {
            let i = bucket(nanos);
            assert!(i < BUCKETS);
            if i < BUCKETS - 1 {
                assert!(
                    nanos < bucket_bound(i),
                    "{nanos} in {i} < {}",
                    bucket_bound(i)
                );
            }
            if i > 0 {
                assert!(nanos >= bucket_bound(i - 1), "{nanos} in {i}");
            }
        }
    }

    #[test]
    fn quantiles_within_a_bucket() {
        let mut counts = [0u64; BUCKETS];
        // 90 calls of 10 µs, 10 of 1 ms.
        counts[bucket(10_000)] += 90;
        counts[bucket(1_000_000)] += 10;
        let p50 = quantile_us(&counts, 0.5);
        let p99 = quantile_us(&counts, 0.99);
        assert!((10.0..=12.5).contains(&p50), "{p50}");
        assert!((1000.0..=1250.0).contains(&p99), "{p99}");
        assert_eq!(quantile_us(&[0; BUCKETS], 0.5), 0.0);
    }

    #[test]
    fn a_flood_of_names_stays_within_the_bound() {
        enable();
        for i in 0..10 * MAX_METHODS {
            method(&format!("made.up.{i}"))
                .unwrap()
                .record(Duration::from_micros(3), true);
        }
        let snap = snapshot();
        assert_eq!(snap.methods.len(), MAX_METHODS);
        let other = snap
            .methods
            .iter()
            .find(|m| m.method == OTHER_METHOD)
            .unwrap();
        // Every call past the first MAX_METHODS - 1 names went to `_OTHER`.
        assert_eq!(other.calls, (10 * MAX_METHODS - (MAX_METHODS - 1)) as u64);
        assert_eq!(other.errors, other.calls);
        assert!(
            other.p50_us >= 3.0 && other.p50_us < 3.6,
            "{}",
            other.p50_us
        );
    }
}
