//! The bounded table of MCP sessions (the 2025-11-25 revision's `Mcp-Session-Id`): bounded in
//! number, ended when idle, each with an id a client cannot guess
//! ([`rpcwire_http::profile::random_id`]) that starts with the server's prefix (so that a load
//! balancer can route a session to the server that holds it).
//!
//! A session is active while something holds it ([`Session::hold`]: a running request, an
//! open event stream); an inactive one ends once it has been idle past the table's idle time
//! (a sweeper task checks, [`SessionTable::start_sweeper`]), and when the table is full the
//! oldest inactive one makes room for a new one. A table full of active sessions refuses new
//! ones ([`SessionError::Full`]).

// Named, not the std prelude's glob: its `panic` would be ambiguous in the tests.
use std::string::String;
use std::vec::Vec;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::{Duration, Instant};

/// What a session keeps, and what it does when the session ends.
pub(crate) trait SessionState: Send + Sync + 'static {
    /// Called once when the session leaves the table (removed, idle past its time, or
    /// evicted to make room), with the table's lock held: end what outlives it (its open
    /// event streams, say), without calling back into the table.
    fn on_end(&self) {}
}

/// The bounds of a [`SessionTable`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct SessionLimits {
    /// The most sessions held at once (at least 1).
    pub(crate) max_sessions: usize,
    /// How long an inactive session lives (at least 10 ms).
    pub(crate) idle: Duration,
}

impl Default for SessionLimits {
    /// 1024 sessions, 10 minutes idle.
    fn default() -> Self {
        SessionLimits {
            max_sessions: 1024,
            idle: Duration::from_secs(600),
        }
    }
}

impl SessionLimits {
    /// These limits with their bounds applied.
    fn bounded(self) -> Self {
        SessionLimits {
            max_sessions: self.max_sessions.max(1),
            idle: self.idle.max(Duration::from_millis(10)),
        }
    }
}

/// Why a [`SessionTable`] made no session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum SessionError {
    /// The table is full of active sessions.
    #[error("too many sessions")]
    Full,
    /// The operating system gave no randomness for an id.
    #[error("no session id could be made")]
    NoRandomness,
    /// A session id already in the table (never overwritten).
    #[error("the session id is in use")]
    Taken,
}

/// One session: its id, its state, and what keeps it alive.
pub(crate) struct Session<T> {
    id: String,
    state: T,
    last_seen: Mutex<Instant>,
    /// Holds ([`Session::hold`]) alive now.
    active: AtomicUsize,
}

impl<T> std::fmt::Debug for Session<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("id", &self.id)
            .field("active", &self.active.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Session<T> {
    /// The session's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// What the profile keeps in it.
    pub(crate) fn state(&self) -> &T {
        &self.state
    }

    /// Notes that the session was used now (its idle time starts again).
    pub(crate) fn touch(&self) {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// Holds the session active (never ended for idleness nor evicted) until the returned
    /// guard is dropped: take one for each running request and open event stream.
    pub(crate) fn hold(self: &Arc<Self>) -> SessionHold<T> {
        self.active.fetch_add(1, Ordering::SeqCst);
        self.touch();
        SessionHold(Arc::clone(self))
    }

    /// True while a [`hold`](Self::hold) guard lives.
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::SeqCst) > 0
    }

    fn last_seen(&self) -> Instant {
        *self
            .last_seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> std::ops::Deref for Session<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.state
    }
}

/// Keeps a session active while it lives ([`Session::hold`]); its drop counts as a use.
pub(crate) struct SessionHold<T>(Arc<Session<T>>);

impl<T> std::fmt::Debug for SessionHold<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("SessionHold").field(&self.0.id).finish()
    }
}

impl<T> Drop for SessionHold<T> {
    fn drop(&mut self) {
        self.0.touch();
        self.0.active.fetch_sub(1, Ordering::SeqCst);
    }
}

struct Table<T> {
    sessions: Mutex<HashMap<String, Arc<Session<T>>>>,
    prefix: String,
    limits: SessionLimits,
    /// The gauge the sessions are counted in (see [`SessionTable::count_as`]).
    gauge: OnceLock<&'static str>,
}

/// A bounded table of sessions by id (cheap to clone: clones share the table).
pub(crate) struct SessionTable<T> {
    table: Arc<Table<T>>,
}

impl<T> Clone for SessionTable<T> {
    fn clone(&self) -> Self {
        SessionTable {
            table: Arc::clone(&self.table),
        }
    }
}

impl<T> std::fmt::Debug for SessionTable<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionTable")
            .field("prefix", &self.table.prefix)
            .field("limits", &self.table.limits)
            .field("sessions", &self.table.lock().len())
            .finish()
    }
}

/// A session id prefix with every character other than ASCII letters, digits, `.` and `_`
/// replaced with `_` (so that it fits a header value and a load balancer's routing rule).
pub(crate) fn clean_prefix(prefix: &str) -> String {
    prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '.' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

impl<T: SessionState> SessionTable<T> {
    /// An empty table whose ids start with `prefix` (cleaned: [`clean_prefix`]), within
    /// `limits` (bounds applied).
    pub(crate) fn new(prefix: &str, limits: SessionLimits) -> Self {
        SessionTable {
            table: Arc::new(Table {
                sessions: Mutex::new(HashMap::new()),
                prefix: clean_prefix(prefix),
                limits: limits.bounded(),
                gauge: OnceLock::new(),
            }),
        }
    }

    /// Counts the sessions held in the gauge `name` through
    /// [`rpcwire_telemetry::gauge_add`] (recorded with the feature `metrics` once
    /// metrics are enabled; the MCP server counts its sessions as `mcp.server.sessions`). Set
    /// once: later names are ignored.
    pub(crate) fn count_as(&self, name: &'static str) {
        let sessions = self.table.lock();
        if self.table.gauge.set(name).is_ok() {
            rpcwire_telemetry::gauge_add(name, sessions.len() as f64);
        }
    }

    /// The prefix of the ids, cleaned.
    pub(crate) fn prefix(&self) -> &str {
        &self.table.prefix
    }

    /// Starts the task that ends idle sessions (a few times per idle time, between every
    /// 5 ms and every 30 s); it stops when the last clone of the table is dropped. Call it
    /// within a tokio runtime.
    pub(crate) fn start_sweeper(&self) {
        let weak: Weak<Table<T>> = Arc::downgrade(&self.table);
        let every =
            (self.table.limits.idle / 4).clamp(Duration::from_millis(5), Duration::from_secs(30));
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(every).await;
                let Some(table) = weak.upgrade() else { return };
                table.end_idle();
            }
        });
    }

    /// A new session with a [`random_id`](rpcwire_http::profile::random_id), its state made
    /// from the id. At the limit, idle sessions are ended first, then the oldest inactive
    /// one; `Err` when every session is active, or when no id could be made.
    pub(crate) fn create(
        &self,
        state: impl FnOnce(&str) -> T,
    ) -> Result<Arc<Session<T>>, SessionError> {
        let id = rpcwire_http::profile::random_id(&self.table.prefix)
            .ok_or(SessionError::NoRandomness)?;
        self.insert_with(id, state)
    }

    /// How long an inactive session lives.
    pub(crate) fn idle(&self) -> Duration {
        self.table.limits.idle
    }

    /// Makes room, then the session under `id`; its state is made only once there is room
    /// for it. [`SessionError::Taken`] when the id is in use (never overwritten). (A replica
    /// takes in this way a session another replica created, from a shared store.)
    pub(crate) fn insert_with(
        &self,
        id: String,
        state: impl FnOnce(&str) -> T,
    ) -> Result<Arc<Session<T>>, SessionError> {
        let table = &self.table;
        if table.lock().len() >= table.limits.max_sessions {
            table.end_idle();
        }
        let mut sessions = table.lock();
        if sessions.contains_key(&id) {
            return Err(SessionError::Taken);
        }
        if sessions.len() >= table.limits.max_sessions {
            // Full of sessions still within their idle time: the oldest quiet one goes.
            let oldest = sessions
                .values()
                .filter(|s| !s.is_active())
                .min_by_key(|s| s.last_seen())
                .map(|s| s.id.clone());
            match oldest.and_then(|id| sessions.remove(&id)) {
                Some(s) => {
                    tracing::debug!(session = %s.id, "session evicted to make room");
                    table.ended(&s);
                }
                None => return Err(SessionError::Full),
            }
        }
        let session = Arc::new(Session {
            state: state(&id),
            id: id.clone(),
            last_seen: Mutex::new(Instant::now()),
            active: AtomicUsize::new(0),
        });
        sessions.insert(id, Arc::clone(&session));
        table.count(1.0);
        Ok(session)
    }

    /// The session with this id.
    pub(crate) fn get(&self, id: &str) -> Option<Arc<Session<T>>> {
        self.table.lock().get(id).cloned()
    }

    /// Ends the session with this id; false when there is none.
    pub(crate) fn remove(&self, id: &str) -> bool {
        let mut sessions = self.table.lock();
        match sessions.remove(id) {
            Some(s) => {
                self.table.ended(&s);
                true
            }
            None => false,
        }
    }

    /// The number of sessions held.
    pub(crate) fn len(&self) -> usize {
        self.table.lock().len()
    }

    /// The ids of the sessions held.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.table.lock().keys().cloned().collect()
    }
}

impl<T> Table<T> {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Session<T>>>> {
        self.sessions.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `delta` to the sessions' gauge, if counted.
    fn count(&self, delta: f64) {
        if let Some(name) = self.gauge.get() {
            rpcwire_telemetry::gauge_add(name, delta);
        }
    }
}

impl<T> Drop for Table<T> {
    fn drop(&mut self) {
        // The table's sessions end with it (their states drop without `on_end`).
        let held = self.lock().len();
        self.count(-(held as f64));
    }
}

impl<T: SessionState> Table<T> {
    fn end_idle(&self) {
        let now = Instant::now();
        self.lock().retain(|_, s| {
            let keep = s.is_active() || now.duration_since(s.last_seen()) < self.limits.idle;
            if !keep {
                tracing::debug!(session = %s.id, "session ended (idle)");
                s.state.on_end();
                self.count(-1.0);
            }
            keep
        });
    }

    /// A session left the table.
    fn ended(&self, session: &Session<T>) {
        session.state.on_end();
        self.count(-1.0);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use super::*;

    #[derive(Default)]
    struct Flag(AtomicBool);

    impl SessionState for Flag {
        fn on_end(&self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// The sessions' gauge counts every way in and out: created, evicted, removed, ended
    /// idle, and the table dropped with sessions in it.
    #[cfg(feature = "metrics")]
    #[test]
    fn sessions_counted_in_their_gauge() {
        use metrics_util::debugging::{DebugValue, DebuggingRecorder};
        const GAUGE: &str = "test.sessions";
        let recorder = DebuggingRecorder::new();
        let snapshotter = recorder.snapshotter();
        rpcwire_telemetry::enable_metrics();
        // A snapshot takes what was added since the last one: the level is their sum.
        let level = std::cell::Cell::new(0.0);
        let gauge = || {
            let added = snapshotter
                .snapshot()
                .into_vec()
                .into_iter()
                .find(|(key, ..)| key.key().name() == GAUGE)
                .map(|(.., value)| match value {
                    DebugValue::Gauge(v) => v.into_inner(),
                    other => panic!("not a gauge: {other:?}"),
                });
            level.set(level.get() + added.unwrap_or(0.0));
            Some(level.get())
        };
        metrics::with_local_recorder(&recorder, || {
            let t = table(2, Duration::from_millis(10));
            let a = t
                .create(|_| Flag::default())
                .unwrap_or_else(|e| panic!("{e}"));
            t.count_as(GAUGE);
            t.count_as("ignored.second.name");
            assert_eq!(gauge(), Some(1.0), "counted from the sessions held");
            let _hold = a.hold();
            let b = t
                .create(|_| Flag::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(gauge(), Some(2.0));
            // Full: `b` (inactive) is evicted for `c`.
            let c = t
                .create(|_| Flag::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert!(t.get(b.id()).is_none());
            assert_eq!(gauge(), Some(2.0));
            assert!(t.remove(c.id()));
            assert!(!t.remove(c.id()));
            assert_eq!(gauge(), Some(1.0));
            drop(_hold);
            let _d = t
                .create(|_| Flag::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(gauge(), Some(2.0));
            std::thread::sleep(Duration::from_millis(30));
            t.table.end_idle();
            assert_eq!(t.len(), 0);
            assert_eq!(gauge(), Some(0.0));
            let _e = t
                .create(|_| Flag::default())
                .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(gauge(), Some(1.0));
            drop(t);
            assert_eq!(gauge(), Some(0.0), "the table's end ends its sessions");
        });
    }

    fn table(max: usize, idle: Duration) -> SessionTable<Flag> {
        SessionTable::new(
            "a b",
            SessionLimits {
                max_sessions: max,
                idle,
            },
        )
    }

    #[test]
    fn ids_are_prefixed_random_and_clean() {
        let t = table(4, Duration::from_secs(60));
        let a = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let b = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(t.prefix(), "a_b");
        assert!(
            a.id().starts_with("a_b-") && a.id().len() == 4 + 32,
            "{}",
            a.id()
        );
        assert_ne!(a.id(), b.id());
        assert_eq!(t.len(), 2);
        assert!(t.remove(a.id()));
        assert!(a.0.load(Ordering::SeqCst), "on_end ran");
        assert!(!t.remove(a.id()));
    }

    #[test]
    fn at_the_limit_the_oldest_inactive_goes_and_active_ones_stay() {
        let t = table(2, Duration::from_secs(60));
        let a = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let _held = a.hold();
        let b = t
            .insert_with("b".into(), |_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            t.insert_with("b".into(), |_| Flag::default()).err(),
            Some(SessionError::Taken)
        );
        let c = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        assert!(b.0.load(Ordering::SeqCst), "b was evicted");
        assert!(t.get("b").is_none() && t.get(a.id()).is_some() && t.get(c.id()).is_some());
        let _held_c = c.hold();
        assert_eq!(
            t.create(|_| Flag::default()).err(),
            Some(SessionError::Full)
        );
    }

    #[tokio::test]
    async fn idle_sessions_end_and_held_ones_do_not() {
        let t = table(8, Duration::from_millis(20));
        t.start_sweeper();
        let a = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let b = t
            .create(|_| Flag::default())
            .unwrap_or_else(|e| panic!("{e}"));
        let held = b.hold();
        for _ in 0..200 {
            if t.get(a.id()).is_none() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(t.get(a.id()).is_none() && a.0.load(Ordering::SeqCst));
        assert!(t.get(b.id()).is_some(), "held: never idle");
        drop(held);
        for _ in 0..200 {
            if t.len() == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert!(t.len() == 0);
    }
}
