//! Head sampling of call spans, decided by rpcwire before any span is built (the ratio's
//! setters are re-exported at the crate's root).
//!
//! Recording every call span costs far more than the call (the OpenTelemetry SDK's per-span
//! work: ids, attributes, the batch queue, the export). A [`SampleRatio`] below 1 keeps that
//! cost to the calls sampled: the decision is made per call before the `tracing` span is
//! created, so an unsampled call builds no span at all (it costs a parent check, a countdown
//! and a few thread-local stores).
//!
//! The decision is parent-based, as OpenTelemetry's `ParentBased(TraceIdRatioBased)` makes it:
//! - a server call with a remote parent (a W3C `traceparent` from the HTTP headers or the
//!   params' `_meta`; the latter with the feature `otel`) follows the parent's `sampled` flag
//!   (trace-flags bit 0), whatever the ratio;
//! - a server call without one, and a client call made outside any span (a root), is sampled
//!   with probability `ratio`, each independently of the others. Rather than a draw per root
//!   call, each thread counts down the roots it passes over until the next sampled one, a
//!   count drawn from the geometric distribution of the gaps between successes of that
//!   Bernoulli process (the same process, one draw per sampled call instead of one per call;
//!   a per-thread generator, wyrand: no lock, no system call);
//! - a client call made within a span follows that span (and the OpenTelemetry SDK's
//!   sampler decides as it always did).
//!
//! An unsampled call keeps its trace coherent: while its handler's future is polled (the
//! first time in place, then in a task) a thread-local holds the call's trace id (its
//! parent's, or, for a root, one drawn at the first outgoing call its handler makes: most
//! make none), and a client call made by the handler builds no span either and sends a
//! `traceparent` of that trace with the `sampled` flag cleared (a fresh parent id, flags
//! `00`; HTTP header and MCP `_meta` alike), so the next hop does not start a sampled trace
//! of its own. An unsampled root client call sends one of a trace drawn for it the same way.
//!
//! Gaps, known: a `tracestate` that came with an unsampled call is not sent on (only its trace
//! id is kept); a handler that moves work to a task of its own (`tokio::spawn`) leaves the
//! thread-local behind, so that task's client calls are roots (sampled by the ratio), and so
//! are those of a synchronous handler (`sync_method`, `raw_method`) that blocks on one
//! (`block_on`, which blocks its connection meanwhile): a synchronous handler cannot
//! otherwise start one (a client call is a future), and holding the trace around each of
//! them cost a dozen instructions a call; the member calls of a batch without a remote parent
//! are sampled each on its own (a batch span is not sampled: it is always recorded while a
//! subscriber listens); connection spans are not sampled.
//!
//! The default ratio is 1: every call span recorded while a subscriber listens (only a remote
//! parent flagged unsampled is then left out).
//!
//! ```
//! use rpcwire_telemetry::{set_sample_ratio, sample_ratio, SampleRatio};
//!
//! // One call in a hundred without a sampled remote parent gets a span.
//! let ratio: SampleRatio = "0.01".parse()?;
//! set_sample_ratio(ratio);
//! assert_eq!(sample_ratio().get(), 0.01);
//! assert!("1.5".parse::<SampleRatio>().is_err());
//! assert!(SampleRatio::new(f64::NAN).is_err());
//! # set_sample_ratio(SampleRatio::ALWAYS);
//! # Ok::<(), rpcwire_telemetry::SampleRatioError>(())
//! ```

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// The fraction of root calls whose spans are recorded: a number in `[0, 1]`.
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct SampleRatio(f64);

/// Why a sample ratio was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SampleRatioError {
    /// Not a number (text that does not parse as one, or NaN).
    #[error("not a number: {0:?}")]
    NotANumber(String),
    /// Below 0 or above 1.
    #[error("{0} is not within [0, 1]")]
    OutOfRange(String),
    /// An `OTEL_TRACES_SAMPLER` that rpcwire's head sampling cannot be (see
    /// [`SampleRatio::from_otel_sampler`]).
    #[error("OTEL_TRACES_SAMPLER={0:?} is not a sampler rpcwire has (always_on, always_off, traceidratio, or their parentbased_ forms)")]
    UnknownSampler(String),
}

impl SampleRatio {
    /// Every root call sampled (the default).
    pub const ALWAYS: SampleRatio = SampleRatio(1.0);
    /// No root call sampled (a sampled remote parent still is followed).
    pub const NEVER: SampleRatio = SampleRatio(0.0);

    /// `ratio` when it is a number in `[0, 1]`.
    pub fn new(ratio: f64) -> Result<Self, SampleRatioError> {
        if ratio.is_nan() {
            return Err(SampleRatioError::NotANumber(ratio.to_string()));
        }
        if !(0.0..=1.0).contains(&ratio) {
            return Err(SampleRatioError::OutOfRange(ratio.to_string()));
        }
        Ok(SampleRatio(ratio))
    }

    /// The ratio.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The draw threshold: a draw `d` (uniform over `u64`) samples when `d < threshold`, and
    /// [`u64::MAX`] samples everything (no draw). `ratio * 2^64`, rounded, but at least 1 for
    /// any ratio above 0 (however tiny, it samples sometimes) and below `u64::MAX` for any
    /// ratio below 1.
    pub(crate) fn threshold(self) -> u64 {
        if self.0 >= 1.0 {
            return u64::MAX;
        }
        if self.0 <= 0.0 {
            return 0;
        }
        // 2^64 as f64 is exact; a product at or over it saturates in the cast.
        let t = (self.0 * 18_446_744_073_709_551_616.0).round() as u64;
        t.clamp(1, u64::MAX - 1)
    }
}

impl SampleRatio {
    /// The ratio that OpenTelemetry's standard sampler settings ask for: the values of the
    /// environment variables `OTEL_TRACES_SAMPLER` (`sampler`) and `OTEL_TRACES_SAMPLER_ARG`
    /// (`arg`); `Ok(None)` when no sampler is named (unset or empty).
    ///
    /// `always_on` and `parentbased_always_on` are 1, `always_off` and
    /// `parentbased_always_off` 0, `traceidratio` and `parentbased_traceidratio` the ratio in
    /// `arg` (1 when it is unset or empty, as the specification says). rpcwire's sampling is
    /// always parent-based (a call with a `traceparent` follows its sampled flag): the forms
    /// without `parentbased_` are taken as theirs. Names are read in any case. Any other
    /// sampler (`jaeger_remote`, `xray`, ...), or an `arg` that is no ratio, is an error.
    ///
    /// ```
    /// use rpcwire_telemetry::SampleRatio;
    /// let ratio = SampleRatio::from_otel_sampler(Some("parentbased_traceidratio"), Some("0.25"));
    /// assert_eq!(ratio, Ok(Some(SampleRatio::new(0.25)?)));
    /// assert_eq!(SampleRatio::from_otel_sampler(Some("always_off"), None), Ok(Some(SampleRatio::NEVER)));
    /// assert_eq!(SampleRatio::from_otel_sampler(None, Some("0.5")), Ok(None));
    /// assert!(SampleRatio::from_otel_sampler(Some("xray"), None).is_err());
    /// # Ok::<(), rpcwire_telemetry::SampleRatioError>(())
    /// ```
    pub fn from_otel_sampler(
        sampler: Option<&str>,
        arg: Option<&str>,
    ) -> Result<Option<Self>, SampleRatioError> {
        let Some(sampler) = sampler.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(None);
        };
        // Enumerated values are read without regard to case (the specification's rule).
        let lower = sampler.to_ascii_lowercase();
        let named = lower.strip_prefix("parentbased_").unwrap_or(&lower);
        match named {
            "always_on" => Ok(Some(Self::ALWAYS)),
            "always_off" => Ok(Some(Self::NEVER)),
            "traceidratio" => match arg.map(str::trim).filter(|a| !a.is_empty()) {
                None => Ok(Some(Self::ALWAYS)),
                Some(ratio) => ratio.parse().map(Some),
            },
            _ => Err(SampleRatioError::UnknownSampler(sampler.to_owned())),
        }
    }

    /// [`from_otel_sampler`](Self::from_otel_sampler) of this process's environment
    /// (`OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`; a value that is not UTF-8 is an
    /// unknown sampler or a ratio that is not a number).
    pub fn from_env() -> Result<Option<Self>, SampleRatioError> {
        let var = |name| {
            std::env::var_os(name).map(|v| {
                v.to_str()
                    .map_or_else(|| "\u{fffd}".to_owned(), str::to_owned)
            })
        };
        let sampler = var("OTEL_TRACES_SAMPLER");
        let arg = var("OTEL_TRACES_SAMPLER_ARG");
        Self::from_otel_sampler(sampler.as_deref(), arg.as_deref())
    }
}

impl Default for SampleRatio {
    fn default() -> Self {
        Self::ALWAYS
    }
}

impl std::str::FromStr for SampleRatio {
    type Err = SampleRatioError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let ratio: f64 = text
            .trim()
            .parse()
            .map_err(|_| SampleRatioError::NotANumber(text.to_owned()))?;
        Self::new(ratio)
    }
}

impl std::fmt::Display for SampleRatio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

/// The threshold of the ratio in force (see [`SampleRatio::threshold`]).
static THRESHOLD: AtomicU64 = AtomicU64::new(u64::MAX);
/// The ratio in force, as `f64` bits (for [`sample_ratio`] only).
static RATIO_BITS: AtomicU64 = AtomicU64::new(0x3ff0_0000_0000_0000); // 1.0

/// Sets the ratio of root calls whose spans are recorded, for the whole process (calls already
/// started keep their decision).
pub fn set_sample_ratio(ratio: SampleRatio) {
    RATIO_BITS.store(ratio.0.to_bits(), Ordering::Relaxed);
    THRESHOLD.store(ratio.threshold(), Ordering::Relaxed);
}

/// The ratio in force.
pub fn sample_ratio() -> SampleRatio {
    SampleRatio(f64::from_bits(RATIO_BITS.load(Ordering::Relaxed)))
}

thread_local! {
    /// The generator's state (wyrand); 0 until first used on the thread.
    static RNG: Cell<u64> = const { Cell::new(0) };
    /// The root calls this thread passes over before it samples one, and the threshold that
    /// count was drawn for (0: none drawn yet; a new ratio draws again).
    static COUNTDOWN: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
    /// The trace id of the unsampled call whose handler runs now on this thread (0: none).
    static UNSAMPLED: Cell<u128> = const { Cell::new(0) };
}

/// The next draw of this thread's generator: wyrand, seeded once per thread from the standard
/// library's per-thread random hash keys (no system call per draw).
#[inline]
pub(crate) fn draw() -> u64 {
    RNG.with(|state| {
        let mut s = state.get();
        if s == 0 {
            s = seed();
        }
        s = s.wrapping_add(0xa076_1d64_78bd_642f);
        state.set(s);
        let t = u128::from(s) * u128::from(s ^ 0xe703_7ed1_a0b4_28db);
        (t >> 64) as u64 ^ t as u64
    })
}

#[cold]
fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(&h as *const _ as usize);
    h.finish() | 1
}

/// True when a root call is sampled now: nothing drawn while the ratio is 1 or 0, else a
/// count down (see [`sample_at`]).
#[inline]
pub(crate) fn sample_root() -> bool {
    let threshold = THRESHOLD.load(Ordering::Relaxed);
    threshold == u64::MAX || (threshold != 0 && sample_at(threshold))
}

/// True when this root call is sampled at the ratio of `threshold` (neither 0 nor
/// [`u64::MAX`]): the thread's count of calls to pass over is taken down by one, and at 0
/// this call is sampled and the next count drawn ([`next_gap`]). The same process as a draw
/// per call (`draw() < threshold`: each call sampled with probability `threshold / 2^64`, on
/// its own), at a load, a compare and a store per call passed over.
#[inline]
pub(crate) fn sample_at(threshold: u64) -> bool {
    COUNTDOWN.with(|cell| {
        let (drawn_for, left) = cell.get();
        if drawn_for == threshold && left != 0 {
            cell.set((threshold, left - 1));
            return false;
        }
        restart(cell, threshold, drawn_for == threshold)
    })
}

/// The end of a count (`due`: this call is sampled), or a count not drawn for `threshold`
/// (a new ratio, or none drawn yet on the thread: the gap before the first sampled call is
/// drawn as any other, so a new ratio holds from the call after it is set).
#[cold]
fn restart(cell: &Cell<(u64, u64)>, threshold: u64, due: bool) -> bool {
    if !due {
        let gap = next_gap(threshold);
        if gap != 0 {
            cell.set((threshold, gap - 1));
            return false;
        }
    }
    cell.set((threshold, next_gap(threshold)));
    true
}

/// The calls passed over before the next one sampled, each sampled with probability
/// `p = threshold / 2^64`: geometric, `floor(ln(u) / ln(1 - p))` for `u` uniform in (0, 1]
/// (inverse transform; `ln_1p` keeps `ln(1 - p)` exact for the small `p` a ratio usually
/// is). A count past `u64::MAX` (a tiny ratio) saturates.
fn next_gap(threshold: u64) -> u64 {
    let p = threshold as f64 / 18_446_744_073_709_551_616.0;
    // 53 random bits, as a float in (0, 1].
    let u = ((draw() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let gap = u.ln() / (-p).ln_1p();
    // A NaN (not expected: p is in (0, 1)) is 0: sampled.
    gap as u64
}

/// True when every root call is sampled (the ratio is 1).
#[inline]
pub(crate) fn always() -> bool {
    THRESHOLD.load(Ordering::Relaxed) == u64::MAX
}

/// The trace id an unsampled root call holds until its handler makes an outgoing call: the
/// id is drawn then ([`current_unsampled`]), so a call whose handler makes none (most) pays
/// for no draw. A remote parent's trace id of all ones (valid, yet one in 2^128) reads as this
/// marker too: its calls' outgoing calls then send a trace id drawn for them.
pub(crate) const LAZY_ROOT: u128 = u128::MAX;

/// A trace id drawn for an unsampled root (never zero, never [`LAZY_ROOT`]).
pub(crate) fn new_trace_id() -> u128 {
    let id = u128::from(draw()) << 64 | u128::from(draw());
    id.clamp(1, LAZY_ROOT - 1)
}

/// A span id drawn for the parent id an unsampled call sends (never zero).
#[cfg(feature = "otel")]
pub(crate) fn new_span_id() -> [u8; 8] {
    draw().max(1).to_be_bytes()
}

/// The trace id of the unsampled call whose handler runs now on this thread, if any; drawn
/// now for an unsampled root that has none yet (`LAZY_ROOT`), and kept for the handler's
/// next outgoing calls (its scope hands it back to the call: [`Unsampled`]).
#[inline]
pub(crate) fn current_unsampled() -> Option<u128> {
    UNSAMPLED.with(|cell| match cell.get() {
        0 => None,
        LAZY_ROOT => {
            let id = new_trace_id();
            cell.set(id);
            Some(id)
        }
        id => Some(id),
    })
}

/// Runs `f` (a poll of a handler's future: the first in place, the others in its task, by
/// [`Unsampled`]) holding the unsampled trace in `trace` (0: none, and nothing is held); a
/// trace id drawn meanwhile for an unsampled root (`LAZY_ROOT`) is kept in `trace`, so that
/// the later polls send the same one.
#[inline]
pub fn in_trace<T>(trace: &Cell<u128>, f: impl FnOnce() -> T) -> T {
    let held = trace.get();
    if held == 0 {
        return f();
    }
    let _scope = UnsampledScope::enter(held);
    let out = f();
    if held == LAZY_ROOT {
        trace.set(UNSAMPLED.with(Cell::get));
    }
    out
}

/// Holds `trace` (an unsampled call's trace id; 0: none) as the thread's unsampled trace
/// until dropped, when the one held before is back.
pub(crate) struct UnsampledScope(Option<u128>);

impl UnsampledScope {
    /// Holds `trace` (0: nothing) until the scope is dropped.
    #[inline]
    pub(crate) fn enter(trace: u128) -> Self {
        if trace == 0 {
            return UnsampledScope(None);
        }
        UnsampledScope(Some(UNSAMPLED.with(|cell| cell.replace(trace))))
    }
}

impl Drop for UnsampledScope {
    #[inline]
    fn drop(&mut self) {
        if let Some(before) = self.0 {
            UNSAMPLED.with(|cell| cell.set(before));
        }
    }
}

/// A handler's future that holds its unsampled call's trace (`UnsampledScope`) while it is
/// polled (nothing when `trace` is 0: one check per poll).
pub struct Unsampled<F> {
    /// The handler's future.
    pub fut: F,
    /// Its call's unsampled trace id (0: none), as its polls leave it.
    pub trace: Cell<u128>,
}

impl<F: std::future::Future + Unpin> std::future::Future for Unsampled<F> {
    type Output = F::Output;

    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<F::Output> {
        // A trace id drawn while it is polled stays for its later polls' calls.
        let Unsampled { fut, trace } = &mut *self;
        in_trace(trace, || std::pin::Pin::new(fut).poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_at_the_edges() {
        assert_eq!(SampleRatio::new(1.0).unwrap().threshold(), u64::MAX);
        assert_eq!(SampleRatio::new(0.0).unwrap().threshold(), 0);
        assert_eq!(SampleRatio::new(-0.0).unwrap().threshold(), 0);
        assert_eq!(SampleRatio::new(0.5).unwrap().threshold(), 1 << 63);
        assert_eq!(SampleRatio::new(0.25).unwrap().threshold(), 1 << 62);
        // Tiny, yet above 0: sampled sometimes, never never.
        assert_eq!(SampleRatio::new(1e-300).unwrap().threshold(), 1);
        assert_eq!(SampleRatio::new(f64::MIN_POSITIVE).unwrap().threshold(), 1);
        // Just below 1: not everything.
        let below = SampleRatio::new(1.0 - f64::EPSILON / 2.0)
            .unwrap()
            .threshold();
        assert!(below < u64::MAX, "{below}");
        // 1/1000 of 2^64.
        let milli = SampleRatio::new(0.001).unwrap().threshold();
        assert_eq!(milli, 18_446_744_073_709_552);
    }

    #[test]
    fn refused_ratios() {
        assert!(matches!(
            SampleRatio::new(f64::NAN),
            Err(SampleRatioError::NotANumber(_))
        ));
        for r in [-0.1, 1.000_001, f64::INFINITY, f64::NEG_INFINITY] {
            assert!(
                matches!(SampleRatio::new(r), Err(SampleRatioError::OutOfRange(_))),
                "{r}"
            );
        }
        for text in ["NaN", "nan", "x", "", "0.5.1"] {
            assert!(
                matches!(
                    text.parse::<SampleRatio>(),
                    Err(SampleRatioError::NotANumber(_))
                ),
                "{text:?}"
            );
        }
        assert!(matches!(
            "-1".parse::<SampleRatio>(),
            Err(SampleRatioError::OutOfRange(_))
        ));
        assert_eq!("1".parse::<SampleRatio>(), Ok(SampleRatio::ALWAYS));
        assert_eq!(" 0 ".parse::<SampleRatio>(), Ok(SampleRatio::NEVER));
    }

    /// The draws against a threshold sample about the ratio (a loose bound: 100 000 draws at
    /// 0.01 give 1 000 ± 5 standard deviations, ~157).
    #[test]
    fn draws_sample_about_the_ratio() {
        let t = SampleRatio::new(0.01).unwrap().threshold();
        let n = (0..100_000).filter(|_| draw() < t).count();
        assert!((843..=1157).contains(&n), "{n}");
        let t = SampleRatio::NEVER.threshold();
        assert_eq!((0..10_000).filter(|_| draw() < t).count(), 0);
    }

    /// The countdown samples each call with the ratio's probability, on its own: about the
    /// ratio in all (1 000 ± 5 standard deviations of 100 000 calls at 0.01), and counts per
    /// window of 1 000 calls spread as a binomial's do (variance 9.9; a countdown that sampled
    /// every 100th call would give 10 in each window, variance 0). The sample variance of 200
    /// windows lies within about ±1 of 9.9 (one standard deviation); the bounds are 4 of them.
    #[test]
    fn the_countdown_samples_as_independent_draws() {
        let t = SampleRatio::new(0.01).unwrap().threshold();
        let windows: Vec<f64> = (0..200)
            .map(|_| (0..1000).filter(|_| sample_at(t)).count() as f64)
            .collect();
        let total: f64 = windows.iter().sum();
        assert!((1_686.0..=2_314.0).contains(&total), "{total} of 200 000");
        let mean = total / windows.len() as f64;
        let var = windows.iter().map(|n| (n - mean).powi(2)).sum::<f64>() / 199.0;
        assert!((5.9..=13.9).contains(&var), "variance {var}");
        // At one half: about half.
        let half = SampleRatio::new(0.5).unwrap().threshold();
        let n = (0..10_000).filter(|_| sample_at(half)).count();
        assert!((4_750..=5_250).contains(&n), "{n}");
    }

    /// A new ratio holds at once: a countdown drawn for a tiny ratio (a count of about 10^18
    /// calls) is dropped when the ratio changes.
    #[test]
    fn a_new_ratio_drops_the_countdown() {
        let tiny = SampleRatio::new(1e-18).unwrap().threshold();
        assert_eq!((0..1_000).filter(|_| sample_at(tiny)).count(), 0);
        let (_, left) = COUNTDOWN.with(Cell::get);
        assert!(left > 1_000_000, "{left}");
        let half = SampleRatio::new(0.5).unwrap().threshold();
        let n = (0..1_000).filter(|_| sample_at(half)).count();
        assert!((400..=600).contains(&n), "{n}");
        // Gaps at a ratio near 1 are mostly 0: nearly every call sampled.
        let most = SampleRatio::new(0.999).unwrap().threshold();
        assert!((0..1_000).filter(|_| sample_at(most)).count() > 980);
    }

    #[test]
    fn otel_sampler_settings() {
        let r = |s: Option<&str>, a: Option<&str>| SampleRatio::from_otel_sampler(s, a);
        assert_eq!(r(None, None), Ok(None));
        assert_eq!(r(Some(" "), Some("0.5")), Ok(None));
        for on in ["always_on", "parentbased_always_on"] {
            assert_eq!(
                r(Some(on), Some("0.5")),
                Ok(Some(SampleRatio::ALWAYS)),
                "{on}"
            );
        }
        for off in ["always_off", "parentbased_always_off"] {
            assert_eq!(r(Some(off), None), Ok(Some(SampleRatio::NEVER)), "{off}");
        }
        for ratio in ["traceidratio", "parentbased_traceidratio"] {
            assert_eq!(r(Some(ratio), Some("0.001")), Ok(Some(SampleRatio(0.001))));
            // No argument: 1, as the specification says.
            assert_eq!(r(Some(ratio), None), Ok(Some(SampleRatio::ALWAYS)));
            assert_eq!(r(Some(ratio), Some("")), Ok(Some(SampleRatio::ALWAYS)));
            assert!(matches!(
                r(Some(ratio), Some("2")),
                Err(SampleRatioError::OutOfRange(_))
            ));
            assert!(matches!(
                r(Some(ratio), Some("half")),
                Err(SampleRatioError::NotANumber(_))
            ));
        }
        assert_eq!(
            r(Some("ParentBased_Always_Off"), None),
            Ok(Some(SampleRatio::NEVER))
        );
        for unknown in ["jaeger_remote", "parentbased_xray", "parentbased_", "on"] {
            assert_eq!(
                r(Some(unknown), None),
                Err(SampleRatioError::UnknownSampler(unknown.to_owned()))
            );
        }
    }

    #[test]
    fn scopes_nest_and_restore() {
        assert_eq!(current_unsampled(), None);
        {
            let _a = UnsampledScope::enter(7);
            assert_eq!(current_unsampled(), Some(7));
            {
                let _none = UnsampledScope::enter(0);
                assert_eq!(current_unsampled(), Some(7));
                let _b = UnsampledScope::enter(9);
                assert_eq!(current_unsampled(), Some(9));
            }
            assert_eq!(current_unsampled(), Some(7));
        }
        assert_eq!(current_unsampled(), None);
    }

    /// An unsampled root's trace id is drawn at its first outgoing call, and the same for the
    /// next ones, in the same poll and in the later polls of its future.
    #[test]
    fn lazy_root_drawn_once() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};
        {
            let _root = UnsampledScope::enter(LAZY_ROOT);
            let first = current_unsampled().unwrap();
            assert_ne!(first, LAZY_ROOT);
            assert_ne!(first, 0);
            assert_eq!(current_unsampled(), Some(first));
        }
        assert_eq!(current_unsampled(), None);

        // A future polled twice that asks for the trace each time.
        let mut seen = Vec::new();
        let mut polls = 0;
        let fut = std::future::poll_fn(|cx| {
            seen.push(current_unsampled());
            polls += 1;
            if polls < 2 {
                cx.waker().wake_by_ref();
                Poll::Pending
            } else {
                Poll::Ready(())
            }
        });
        let mut fut = Unsampled {
            fut: Box::pin(fut),
            trace: Cell::new(LAZY_ROOT),
        };
        let mut cx = Context::from_waker(Waker::noop());
        assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_pending());
        assert_eq!(current_unsampled(), None);
        assert!(std::pin::Pin::new(&mut fut).poll(&mut cx).is_ready());
        drop(fut);
        assert_eq!(seen.len(), 2);
        assert!(seen[0].is_some_and(|id| id != LAZY_ROOT));
        assert_eq!(seen[0], seen[1]);
    }
}
