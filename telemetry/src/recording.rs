//! What is recorded (metrics, the live view), and the counts a transport or the dispatcher
//! reports outside of calls: refusals, bytes, batch sizes, gauges.

#[cfg(feature = "metrics")]
use crate::names;
use crate::Rejection;

/// What is recorded, one bit each: metrics ([`enable_metrics`]) and the live view
/// ([`crate::live_stats::enable`]); all off until enabled, so that a build with the feature but
/// neither does no such work at all: no clock read, no label built. One load tells both.
#[cfg(feature = "metrics")]
static RECORDING: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
#[cfg(feature = "metrics")]
pub(crate) const METRICS_BIT: u8 = 1;
#[cfg(feature = "metrics")]
pub(crate) const LIVE_BIT: u8 = 2;
/// With [`METRICS_BIT`]: the call durations are counted in process
/// ([`crate::durations::aggregate`] ran first), the path of a metered call kept inline.
#[cfg(feature = "metrics")]
pub(crate) const COUNTED_BIT: u8 = 4;

/// Starts recording metrics (feature `metrics`): call it once a recorder is installed
/// (`rpcwire serve --metrics` does). Until then every metrics point is one relaxed load.
#[cfg(feature = "metrics")]
pub fn enable_metrics() {
    let counted = if crate::durations::on() {
        COUNTED_BIT
    } else {
        0
    };
    RECORDING.fetch_or(METRICS_BIT | counted, std::sync::atomic::Ordering::Relaxed);
}

/// Starts feeding the live view (see [`crate::live_stats::enable`]).
#[cfg(feature = "metrics")]
pub fn enable_live_stats() {
    RECORDING.fetch_or(LIVE_BIT, std::sync::atomic::Ordering::Relaxed);
}

/// What is recorded now: `(metrics, live view)`.
#[inline]
pub(crate) fn recording() -> (bool, bool) {
    #[cfg(feature = "metrics")]
    {
        let on = RECORDING.load(std::sync::atomic::Ordering::Relaxed);
        (on & METRICS_BIT != 0, on & LIVE_BIT != 0)
    }
    #[cfg(not(feature = "metrics"))]
    (false, false)
}

/// True when metrics are recorded.
#[inline]
pub fn metered() -> bool {
    recording().0
}

/// What is recorded, as bits (0: nothing; always 0 without the feature): one load, the same
/// check on every call whatever is on.
#[inline]
pub(crate) fn recording_bits() -> u8 {
    #[cfg(feature = "metrics")]
    {
        RECORDING.load(std::sync::atomic::Ordering::Relaxed)
    }
    #[cfg(not(feature = "metrics"))]
    0
}

/// Metric handles kept once looked up (feature `metrics`): the `metrics!` macros build a key
/// and look it up in the recorder's registry on every use (hashing the name and labels,
/// allocating the label values), which cost more than the call being measured did on a fast
/// transport. Handles without labels live for the process; those by method and outcome live
/// in a small per-thread cache (no lock on the call path). Both assume the recorder is
/// installed globally before [`enable_metrics`], as `rpcwire serve --metrics` does.
#[cfg(feature = "metrics")]
pub(crate) mod handles {
    use std::cell::RefCell;
    use std::collections::HashMap;
    use std::sync::{Arc, OnceLock};

    use metrics::{Counter, Gauge, Histogram};

    use crate::{names, SYSTEM};

    /// Most methods a thread keeps handles for (the server's are the registered ones plus
    /// `_OTHER`; a client's are the names it calls); past it the cache starts over.
    const MAX_METHODS: usize = 256;
    /// Most error outcomes kept per method; others are looked up each time.
    const MAX_ERRORS: usize = 16;

    pub(crate) fn in_flight() -> &'static Gauge {
        static H: OnceLock<Gauge> = OnceLock::new();
        H.get_or_init(|| metrics::gauge!(names::IN_FLIGHT))
    }

    pub(crate) fn bytes_in() -> &'static Counter {
        static H: OnceLock<Counter> = OnceLock::new();
        H.get_or_init(|| metrics::counter!(names::BYTES_IN))
    }

    pub(crate) fn bytes_out() -> &'static Counter {
        static H: OnceLock<Counter> = OnceLock::new();
        H.get_or_init(|| metrics::counter!(names::BYTES_OUT))
    }

    /// One method's duration histograms: the successful calls', and those of the errors seen.
    struct MethodDurations {
        ok: Histogram,
        errors: Vec<(String, Histogram)>,
    }

    type Methods = HashMap<Arc<str>, MethodDurations>;

    thread_local! {
        static SERVER: RefCell<Methods> = RefCell::new(HashMap::new());
        static CLIENT: RefCell<Methods> = RefCell::new(HashMap::new());
    }

    fn lookup(name: &'static str, method: &str, error: Option<&str>) -> Histogram {
        let method = method.to_owned();
        match error {
            None => metrics::histogram!(name, "rpc.system.name" => SYSTEM, "rpc.method" => method),
            Some(kind) => metrics::histogram!(
                name,
                "rpc.system.name" => SYSTEM,
                "rpc.method" => method,
                "error.type" => kind.to_owned(),
            ),
        }
    }

    /// The shared name of `method` (its cache key), its entry made when missing: a call keeps
    /// it from start to end without allocating.
    fn intern(methods: &mut Methods, name: &'static str, method: &str) -> Arc<str> {
        if let Some((key, _)) = methods.get_key_value(method) {
            return key.clone();
        }
        if methods.len() >= MAX_METHODS {
            methods.clear();
        }
        let key: Arc<str> = method.into();
        let durations = MethodDurations {
            ok: lookup(name, method, None),
            errors: Vec::new(),
        };
        methods.insert(key.clone(), durations);
        key
    }

    fn record(
        methods: &mut Methods,
        name: &'static str,
        method: &str,
        error: Option<&str>,
        seconds: f64,
    ) {
        if !methods.contains_key(method) {
            intern(methods, name, method);
        }
        let Some(durations) = methods.get_mut(method) else {
            return;
        };
        let Some(kind) = error else {
            durations.ok.record(seconds);
            return;
        };
        if let Some((_, h)) = durations.errors.iter().find(|(k, _)| k == kind) {
            h.record(seconds);
        } else if durations.errors.len() < MAX_ERRORS {
            let h = lookup(name, method, Some(kind));
            h.record(seconds);
            durations.errors.push((kind.to_owned(), h));
        } else {
            lookup(name, method, Some(kind)).record(seconds);
        }
    }

    /// The server-side label of `method` (a registered name or `_OTHER`), kept for its call.
    pub(crate) fn server_label(method: &str) -> Arc<str> {
        SERVER.with_borrow_mut(|m| intern(m, names::SERVER_DURATION, method))
    }

    /// Records a server call's duration by method and outcome.
    pub(crate) fn server_duration(method: &str, error: Option<&str>, seconds: f64) {
        SERVER.with_borrow_mut(|m| record(m, names::SERVER_DURATION, method, error, seconds));
    }

    /// Records a client call's duration by method and outcome.
    pub(crate) fn client_duration(method: &str, error: Option<&str>, seconds: f64) {
        CLIENT.with_borrow_mut(|m| record(m, names::CLIENT_DURATION, method, error, seconds));
    }
}

/// Counts a refused message (feature `metrics`; nothing otherwise).
#[inline]
pub fn reject(reason: Rejection) {
    #[cfg(feature = "metrics")]
    if metered() {
        count_rejection(reason);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = reason;
}

/// The recording of [`reject`], out of line: the callers (the driver's input loop among them)
/// keep only the check, and so compile alike with the feature and without.
#[cfg(feature = "metrics")]
#[cold]
#[inline(never)]
fn count_rejection(reason: Rejection) {
    metrics::counter!(names::REJECTIONS, "reason" => reason.as_str()).increment(1);
}

/// Adds `delta` to the gauge `name` (feature `metrics`, when recorded; nothing otherwise):
/// for counts kept outside this crate, such as a session table's.
#[inline]
pub fn gauge_add(name: &'static str, delta: f64) {
    #[cfg(feature = "metrics")]
    if metered() {
        add_to_gauge(name, delta);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = (name, delta);
}

#[cfg(feature = "metrics")]
#[inline(never)]
fn add_to_gauge(name: &'static str, delta: f64) {
    metrics::gauge!(name).increment(delta);
}

/// Measures the batches a driver connection receives from the core's counters (the core
/// tells messages, not batch boundaries): a batch opens when the batches accepted move with a
/// new frame, and its size is the messages taken until the next frame or until the input is
/// drained (a batch is decoded whole from buffered input). A connection has one while metrics
/// are recorded when it opens (kept with its batch spans' state, see `batch_trace`: a
/// connection without either holds and checks one empty pointer).
#[cfg(feature = "metrics")]
#[derive(Debug, Default)]
pub struct BatchSizer {
    frames: u64,
    /// Batches received, and of them those refused whole (which hand out nothing to count).
    batches: u64,
    rejections: u64,
    messages: u64,
    /// The message count before the open batch's first message, plus one (0: none open).
    open: u64,
}

#[cfg(feature = "metrics")]
impl BatchSizer {
    fn messages(stats: &rpcwire::Stats) -> u64 {
        stats.requests_in + stats.notifications_in + stats.responses_in + stats.invalid_messages
    }

    /// After the core handed out an item while no batch is open and none came since the last
    /// look: the messages so far, the count a batch that comes next starts after (inlined
    /// where the counters are read: only the fields it adds are loaded).
    #[inline]
    pub fn count(&mut self, stats: &rpcwire::Stats) {
        self.messages = Self::messages(stats);
    }

    /// True while a batch is open (its size not yet recorded).
    pub fn is_open(&self) -> bool {
        self.open > 0
    }

    /// After the core handed out an item (`drained` false) or said it needs more input, when
    /// a batch came since the last look or one is open (else [`count`](Self::count)). Its
    /// `frames` may lag behind then (the frames of one message are not looked at): a batch is a
    /// new frame, so the lag hides none.
    #[inline]
    pub fn observe(&mut self, stats: &rpcwire::Stats, drained: bool) {
        let messages = Self::messages(stats);
        if stats.frames_in != self.frames {
            self.frames = stats.frames_in;
            self.close(self.messages);
            if stats.batches_in != self.batches {
                self.batch_frame(stats.batches_in, stats.batch_rejections);
            }
        }
        self.messages = messages;
        if drained {
            self.close(messages);
        }
    }

    /// A batch came since the last look: it opens unless it was refused whole.
    #[inline(never)]
    fn batch_frame(&mut self, batches: u64, rejections: u64) {
        if batches - self.batches > rejections - self.rejections {
            self.open = self.messages + 1;
        }
        self.batches = batches;
        self.rejections = rejections;
    }

    /// Closes the open batch, if any (a call per frame: the check is inlined).
    #[inline]
    fn close(&mut self, messages: u64) {
        if self.open > 0 {
            self.record(messages);
        }
    }

    #[inline(never)]
    fn record(&mut self, messages: u64) {
        let size = messages.saturating_sub(self.open - 1);
        self.open = 0;
        metrics::histogram!(names::BATCH_SIZE).record(size as f64);
    }
}

/// Counts bytes read from a peer (feature `metrics`; nothing otherwise).
#[inline]
pub fn bytes_in(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        count_bytes(handles::bytes_in, n);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// Adds `n` to a byte counter, out of line (the driver's I/O loop keeps only the check).
#[cfg(feature = "metrics")]
#[inline(never)]
fn count_bytes(counter: fn() -> &'static metrics::Counter, n: usize) {
    counter().increment(n as u64);
}

/// Counts bytes written to a peer (feature `metrics`; nothing otherwise).
#[inline]
pub fn bytes_out(n: usize) {
    #[cfg(feature = "metrics")]
    if metered() {
        count_bytes(handles::bytes_out, n);
    }
    #[cfg(not(feature = "metrics"))]
    let _ = n;
}

/// Counts what the connection refused by itself (feature `metrics`).
#[inline]
pub fn problem(problem: &rpcwire::Problem<'_>) {
    use rpcwire::Problem;
    let reason = match problem {
        Problem::ParseError(_) => Rejection::Parse,
        Problem::FrameTooLarge { .. } | Problem::BatchTooLarge { .. } | Problem::IdTooLong(_) => {
            Rejection::Limit
        }
        Problem::Busy(_) => Rejection::Overload,
        _ => return,
    };
    reject(reason);
}
