//! When the SQL stores count their tasks and evict ([`Passes`]): the bounds without a lock
//! and a count in every call.

/// When a SQL store counts its tasks and evicts, so that the bounds of [`StoreLimits`] and
/// [`EventLogLimits`](super::EventLogLimits) hold without a lock and a count in every call
/// (a lock that several replicas share serializes all their calls, and a count or an
/// eviction scan is as long as the table):
///
/// - a new task is inserted without counting while the store's estimate of the tasks held
///   (the count at its last pass, plus the tasks it created since, plus those it is creating)
///   is more than `4 × every` below `max_tasks`; closer, and whenever `max_tasks` itself is
///   at most `4 × every`, each insert counts under the lock and refuses when full, exactly;
/// - a pass (under the lock: drop the finished tasks past their age and past `max_finished`,
///   count what is left) runs after every `every` writes that create or finish a task, and
///   after any such write once the last pass is `interval` old; after every one of them when
///   `max_finished` is at most `4 × every`;
/// - the oldest event logs past their number go in a pass after every `every` new logs
///   (after each when the number is at most `4 × every`).
///
/// So a store alone on its database never holds more than `max_tasks`; finished tasks and
/// logs go over their bounds by fewer than `every` between passes. Several stores (replicas)
/// on one database each count only their own writes between passes: with R of them, the
/// tasks may exceed `max_tasks` by at most R × `every`, and the finished tasks and the logs
/// theirs by at most R × `every`. `every = 1` checks every write, as a single lock would.
///
/// [`StoreLimits`]: super::StoreLimits
#[derive(Debug)]
pub(super) struct Passes {
    every: usize,
    interval: std::time::Duration,
    counts: std::sync::Mutex<Counts>,
}

/// What a store knows of its tables since its last pass.
#[derive(Debug)]
struct Counts {
    /// Tasks held at the last count.
    tasks: usize,
    /// Tasks this store created since.
    created: usize,
    /// Inserts under way that may create a task (reserved before they run).
    creating: usize,
    /// Writes that created or finished a task since the last pass.
    writes: usize,
    /// When the last pass ran.
    last: std::time::Instant,
    /// Logs this store created since the last pass over the logs.
    logs: usize,
}

/// A put let through without counting: settled by [`Passes::put_done`].
#[derive(Debug)]
#[must_use]
pub(super) struct Reserved(());

impl Passes {
    /// Passes every `every` writes (at least 1) or `interval`; `tasks` held now.
    pub(super) fn new(every: usize, interval: std::time::Duration, tasks: usize) -> Self {
        Passes {
            every: every.max(1),
            interval,
            counts: std::sync::Mutex::new(Counts {
                tasks,
                created: 0,
                creating: 0,
                writes: 0,
                last: std::time::Instant::now(),
                logs: 0,
            }),
        }
    }

    /// These counts, passing every `every` writes or `interval`.
    #[cfg(feature = "sqlite")]
    pub(super) fn reconfigured(&self, every: usize, interval: std::time::Duration) -> Self {
        let tasks = {
            let c = self.counts();
            c.tasks + c.created
        };
        Passes::new(every, interval, tasks)
    }

    fn counts(&self) -> std::sync::MutexGuard<'_, Counts> {
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The margin below a bound within which every write is checked.
    fn margin(&self) -> usize {
        self.every.saturating_mul(4)
    }

    /// Whether a put may run without counting (far below `max_tasks`): then reserved until
    /// [`put_done`](Self::put_done).
    pub(super) fn reserve(&self, max_tasks: usize) -> Option<Reserved> {
        let mut c = self.counts();
        let estimate = c.tasks + c.created + c.creating;
        (estimate.saturating_add(self.margin()) < max_tasks).then(|| {
            c.creating += 1;
            Reserved(())
        })
    }

    /// Inserts under way that may create a task (a counting put adds them to its count).
    #[cfg(feature = "postgres")]
    pub(super) fn creating(&self) -> usize {
        self.counts().creating
    }

    /// A put done (`reserved` when it ran without counting): whether it `created` the task
    /// or `finished` it; whether a pass is due.
    pub(super) fn put_done(
        &self,
        reserved: Option<Reserved>,
        created: bool,
        finished: bool,
        max_finished: usize,
    ) -> bool {
        let mut c = self.counts();
        if reserved.is_some() {
            c.creating = c.creating.saturating_sub(1);
        }
        c.created += usize::from(created);
        c.writes += usize::from(created) + usize::from(finished);
        c.writes > 0
            && (c.writes >= self.every
                || max_finished <= self.margin()
                || c.last.elapsed() >= self.interval)
    }

    /// A counting put found `tasks` held, its own insert included.
    pub(super) fn counted(&self, tasks: usize) {
        let mut c = self.counts();
        c.tasks = tasks;
        c.created = 0;
    }

    /// A pass starts: the writes it covers (give them to [`passed`](Self::passed)).
    pub(super) fn pass_starts(&self) -> (usize, usize) {
        let mut c = self.counts();
        c.last = std::time::Instant::now();
        let covered = (c.writes, c.created);
        c.writes = 0;
        covered
    }

    /// A pass that started with `covered` ([`pass_starts`](Self::pass_starts)) left `tasks`.
    pub(super) fn passed(&self, covered: (usize, usize), tasks: usize) {
        let mut c = self.counts();
        c.tasks = tasks;
        // Creates since the pass's count stay counted (some twice: an overestimate, safe).
        c.created = c.created.saturating_sub(covered.1);
    }

    /// A pass failed: its writes are due again.
    pub(super) fn pass_failed(&self, covered: (usize, usize)) {
        self.counts().writes += covered.0;
    }

    /// This store created a log: whether a pass over the logs (at most `max_logs`) is due.
    pub(super) fn log_created(&self, max_logs: usize) -> bool {
        let mut c = self.counts();
        c.logs += 1;
        if c.logs >= self.every || max_logs <= self.margin() {
            c.logs = 0;
            return true;
        }
        false
    }
}
