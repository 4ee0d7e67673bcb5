//! [`MemoryStore`]: the shared store's three parts in one process, bounded in sessions and
//! streams, each ending past its time to live.

use std::prelude::rust_2021::*;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::pin::Pin;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, Notify};
use tokio::time::Instant;

use super::{
    EventLog, Forwarded, Forwarder, LogBounds, LogRead, SessionChange, SessionRecord, SessionStore,
    StoreError, StoreFuture, StreamKey, DEFAULT_FORWARD_QUEUE,
};

struct StoredSession {
    record: SessionRecord,
    streams: u64,
    expires: Instant,
}

#[derive(Default)]
struct Log {
    events: VecDeque<(u64, Bytes)>,
    bytes: usize,
    /// The last seq trimmed (0: none): a read after an earlier one would miss events.
    trimmed: u64,
    finished: bool,
    expires: Option<Instant>,
}

#[derive(Default)]
struct State {
    sessions: HashMap<String, StoredSession>,
    logs: BTreeMap<StreamKey, Log>,
    subscribers: Vec<mpsc::Sender<Forwarded>>,
}

/// Sessions, event logs and forwarding in one process: for replicas that are services of one
/// process, and for tests. At most `max_sessions` sessions and `max_streams` logs at once
/// (expired ones are swept when room is needed); [`StoreError::Full`] beyond. Each
/// subscriber of forwarded messages holds at most [`forward_queue`](Self::forward_queue)
/// unread.
pub struct MemoryStore {
    state: Mutex<State>,
    /// Wakes every [`EventLog::wait`] on any append or finish (they read again: a few waiters
    /// per process, and a read is a lookup).
    changed: Notify,
    max_sessions: usize,
    max_streams: usize,
    forward_queue: usize,
}

impl std::fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self.lock();
        f.debug_struct("MemoryStore")
            .field("sessions", &s.sessions.len())
            .field("streams", &s.logs.len())
            .finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    /// 1024 sessions, 16 384 streams.
    fn default() -> Self {
        Self::new(1024, 16 * 1024)
    }
}

impl MemoryStore {
    /// At most `max_sessions` sessions and `max_streams` streams (each at least 1).
    pub fn new(max_sessions: usize, max_streams: usize) -> Self {
        MemoryStore {
            state: Mutex::new(State::default()),
            changed: Notify::new(),
            max_sessions: max_sessions.max(1),
            max_streams: max_streams.max(1),
            forward_queue: DEFAULT_FORWARD_QUEUE,
        }
    }

    /// How many forwarded messages each subscriber ([`Forwarder::subscribe`]) may have
    /// unread (default [`DEFAULT_FORWARD_QUEUE`], 64; at least 1). A message forwarded while
    /// a subscriber holds that many is dropped for it (`forward` never waits); the request
    /// it was for waits until its own time limit.
    pub fn forward_queue(mut self, messages: usize) -> Self {
        self.forward_queue = messages.max(1);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The session `id` if it has not expired (an expired one is removed).
    fn live_session<'s>(state: &'s mut State, id: &str) -> Option<&'s mut StoredSession> {
        let now = Instant::now();
        if state.sessions.get(id).is_some_and(|s| s.expires <= now) {
            state.sessions.remove(id);
        }
        state.sessions.get_mut(id)
    }

    fn live_log<'s>(state: &'s mut State, key: &StreamKey) -> Option<&'s mut Log> {
        let now = Instant::now();
        if state
            .logs
            .get(key)
            .is_some_and(|l| l.expires.is_some_and(|e| e <= now))
        {
            state.logs.remove(key);
        }
        state.logs.get_mut(key)
    }
}

fn ready<T: Send + 'static>(value: Result<T, StoreError>) -> StoreFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl SessionStore for MemoryStore {
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        let mut state = self.lock();
        let now = Instant::now();
        if Self::live_session(&mut state, &record.id).is_some() {
            return ready(Err(StoreError::Taken));
        }
        if state.sessions.len() >= self.max_sessions {
            state.sessions.retain(|_, s| s.expires > now);
            if state.sessions.len() >= self.max_sessions {
                return ready(Err(StoreError::Full));
            }
        }
        state.sessions.insert(
            record.id.clone(),
            StoredSession {
                record: record.clone(),
                streams: 0,
                expires: now + ttl,
            },
        );
        ready(Ok(()))
    }

    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        let mut state = self.lock();
        let found = Self::live_session(&mut state, id).map(|s| {
            s.expires = Instant::now() + ttl;
            s.record.clone()
        });
        ready(Ok(found))
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let found = Self::live_session(&mut state, id).map(|s| {
            change.apply(&mut s.record);
            s.expires = Instant::now() + ttl;
        });
        ready(Ok(found.is_some()))
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let found = Self::live_session(&mut state, id).is_some();
        state.sessions.remove(id);
        ready(Ok(found))
    }

    fn next_stream<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, u64> {
        let mut state = self.lock();
        let n = match Self::live_session(&mut state, id) {
            Some(s) => {
                s.expires = Instant::now() + ttl;
                s.streams += 1;
                s.streams
            }
            None => 0,
        };
        ready(Ok(n))
    }
}

impl EventLog for MemoryStore {
    fn open<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
        let mut state = self.lock();
        let now = Instant::now();
        if Self::live_log(&mut state, key).is_none() && state.logs.len() >= self.max_streams {
            state.logs.retain(|_, l| l.expires.is_none_or(|e| e > now));
            if state.logs.len() >= self.max_streams {
                return ready(Err(StoreError::Full));
            }
        }
        // A stream opened again starts empty.
        state.logs.insert(
            key.clone(),
            Log {
                expires: Some(now + bounds.ttl),
                ..Log::default()
            },
        );
        ready(Ok(()))
    }

    fn append<'a>(
        &'a self,
        key: &'a StreamKey,
        seq: u64,
        event: Bytes,
        bounds: LogBounds,
    ) -> StoreFuture<'a, bool> {
        let mut state = self.lock();
        let Some(log) = Self::live_log(&mut state, key) else {
            // Expired or never opened: nobody could resume it.
            return ready(Ok(false));
        };
        log.bytes += event.len();
        log.events.push_back((seq, event));
        let mut whole = true;
        while log.events.len() > 1 && (log.events.len() > bounds.events || log.bytes > bounds.bytes)
        {
            if let Some((dropped, e)) = log.events.pop_front() {
                log.bytes -= e.len();
                log.trimmed = dropped;
                whole = false;
            }
        }
        log.expires = Some(Instant::now() + bounds.ttl);
        drop(state);
        self.changed.notify_waiters();
        ready(Ok(whole))
    }

    fn finish<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
        let mut state = self.lock();
        if let Some(log) = Self::live_log(&mut state, key) {
            log.finished = true;
            log.expires = Some(Instant::now() + bounds.ttl);
        }
        drop(state);
        self.changed.notify_waiters();
        ready(Ok(()))
    }

    fn read_after<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Option<LogRead>> {
        let mut state = self.lock();
        let Some(log) = Self::live_log(&mut state, key) else {
            return ready(Ok(None));
        };
        if after < log.trimmed {
            return ready(Ok(None));
        }
        let events: Vec<(u64, Bytes)> = log
            .events
            .iter()
            .filter(|(seq, _)| *seq > after)
            .take(max.max(1))
            .cloned()
            .collect();
        let last = log.events.back().map_or(0, |(seq, _)| *seq);
        let reached = events.last().map_or(after, |(seq, _)| *seq) >= last;
        ready(Ok(Some(LogRead {
            events,
            finished: log.finished && reached,
        })))
    }

    fn wait<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            // Registered before the log is looked at: an append after the look wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let more = {
                let mut state = self.lock();
                Self::live_log(&mut state, key).is_none_or(|l| {
                    l.finished || l.events.back().is_some_and(|(seq, _)| *seq > after)
                })
            };
            if !more {
                let _ = tokio::time::timeout(timeout, changed).await;
            }
        })
    }

    fn remove<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, ()> {
        self.lock().logs.remove(key);
        ready(Ok(()))
    }
}

impl Forwarder for MemoryStore {
    fn forward<'a>(&'a self, message: &'a Forwarded) -> StoreFuture<'a, ()> {
        let mut state = self.lock();
        state.subscribers.retain(|s| !s.is_closed());
        for s in &state.subscribers {
            // Full: dropped (the trait's rule), the request waits for its own time limit.
            let _ = s.try_send(message.clone());
        }
        ready(Ok(()))
    }

    fn subscribe(&self) -> mpsc::Receiver<Forwarded> {
        let (tx, rx) = mpsc::channel(self.forward_queue);
        let mut state = self.lock();
        state.subscribers.retain(|s| !s.is_closed());
        state.subscribers.push(tx);
        rx
    }
}

#[cfg(test)]
mod tests {
    use std::prelude::rust_2021::*;

    use super::*;

    fn message(n: usize) -> Forwarded {
        Forwarded::Cancel {
            session: "s".into(),
            body: n.to_string().into_bytes(),
        }
    }

    /// A queue of 3: three forwarded messages wait for a subscriber that reads none, the
    /// fourth is dropped without `forward` waiting, and once read the queue takes more.
    #[tokio::test]
    async fn a_forward_queue_holds_its_size_and_drops_the_next() {
        let store = MemoryStore::default().forward_queue(3);
        let mut rx = store.subscribe();
        for n in 1..=4 {
            let m = message(n);
            let sent = tokio::time::timeout(Duration::from_secs(5), store.forward(&m));
            assert!(matches!(sent.await, Ok(Ok(()))), "forward {n} returned");
        }
        for n in 1..=3 {
            assert_eq!(rx.try_recv().ok(), Some(message(n)));
        }
        assert!(rx.try_recv().is_err(), "the fourth was dropped");
        assert!(store.forward(&message(5)).await.is_ok());
        assert_eq!(rx.try_recv().ok(), Some(message(5)));
        // At least 1.
        let one = MemoryStore::default().forward_queue(0);
        let mut rx = one.subscribe();
        assert!(one.forward(&message(1)).await.is_ok());
        assert!(one.forward(&message(2)).await.is_ok());
        assert_eq!(rx.try_recv().ok(), Some(message(1)));
        assert!(rx.try_recv().is_err());
    }
}
