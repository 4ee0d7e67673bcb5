//! Resumable POST event streams: the events of one answer (a request's progress and its
//! answer, a task's updates) kept in a bounded buffer while they are sent, so that a client
//! whose connection broke, or whom the server sent away to poll, comes back with
//! `Last-Event-ID` and gets exactly the events after it.
//!
//! Event ids have the form `p<stream>-<seq>`: the stream's number (a profile numbers the
//! streams of a session, of a task...) and the event's place in it, from 1. A first
//! "priming" event (`p<stream>-0`, no data) tells the client the id to resume from before
//! any message has come.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rpcwire::wire::sse;
use tokio::sync::{mpsc, watch};

use crate::stream::{StreamLimits, VecSink};

/// The default of [`ParkedStreams::new`]: the most streams kept for resumption per owner.
pub const DEFAULT_MAX_PARKED: usize = 16;

/// `p<stream>-<seq>` → (stream, seq); `None` for an id of any other form.
pub fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.strip_prefix('p')?.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One `message` event carrying `message` with the id `p<stream>-<seq>`, encoded.
pub fn stream_event(stream: u64, seq: u64, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 40);
    let id = format!("p{stream}-{seq}");
    let data = std::str::from_utf8(message).unwrap_or("");
    sse::write_event(&mut VecSink(&mut out), Some("message"), Some(&id), data);
    Bytes::from(out)
}

/// The priming event of a stream: the reconnection time (`retry:`), the id `p<stream>-0`, no
/// data.
pub fn priming_event(stream: u64, retry_ms: u64) -> Bytes {
    let mut out = Vec::new();
    sse::write_retry(&mut VecSink(&mut out), retry_ms);
    out.extend_from_slice(format!("id: p{stream}-0\ndata:\n\n").as_bytes());
    Bytes::from(out)
}

#[derive(Default)]
struct Events {
    /// (seq, encoded event), oldest first.
    list: VecDeque<(u64, Bytes)>,
    bytes: usize,
    last: u64,
    done: bool,
}

/// The encoded events of one stream, bounded in count and bytes ([`StreamLimits`]), that a
/// returning client reads from where it was ([`resume`](ResumableStream::resume)).
pub struct ResumableStream {
    events: Mutex<Events>,
    changed: watch::Sender<()>,
}

impl std::fmt::Debug for ResumableStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ResumableStream")
            .field("held", &e.list.len())
            .field("bytes", &e.bytes)
            .field("last", &e.last)
            .field("done", &e.done)
            .finish()
    }
}

impl ResumableStream {
    /// An empty stream.
    pub fn new() -> Arc<Self> {
        Arc::new(ResumableStream {
            events: Mutex::new(Events::default()),
            changed: watch::channel(()).0,
        })
    }

    /// Records the next event (already encoded, [`stream_event`]) and returns its sequence
    /// number, and false when the buffer went past `limits` (the oldest events were dropped:
    /// a client resuming from before them would miss events).
    pub fn push(&self, event: Bytes, limits: &StreamLimits) -> (u64, bool) {
        let mut e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        e.last += 1;
        let seq = e.last;
        e.bytes += event.len();
        e.list.push_back((seq, event));
        let mut whole = true;
        while e.list.len() > limits.events || (e.bytes > limits.bytes && e.list.len() > 1) {
            if let Some((_, old)) = e.list.pop_front() {
                e.bytes -= old.len();
                whole = false;
            }
        }
        drop(e);
        self.changed.send_replace(());
        (seq, whole)
    }

    /// Marks the stream complete (its last event is in, or it ended without one): resumed
    /// clients get what is held, then the end.
    pub fn finish(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .done = true;
        self.changed.send_replace(());
    }

    /// Whether [`finish`](Self::finish) was called.
    pub fn is_finished(&self) -> bool {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .done
    }

    /// Serves the events after `after` into `tx`, waiting for more until the stream is
    /// finished (or the client leaves, or events after `after` were already dropped). True
    /// when the client got the whole stream.
    pub async fn resume(self: Arc<Self>, mut after: u64, tx: mpsc::Sender<Bytes>) -> bool {
        let mut changes = self.changed.subscribe();
        loop {
            changes.mark_unchanged();
            let (batch, done) = {
                let e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
                let oldest = e.list.front().map_or(e.last + 1, |x| x.0);
                if after + 1 < oldest {
                    tracing::debug!("a resumed stream fell behind its buffer");
                    return false;
                }
                let batch: Vec<Bytes> = e
                    .list
                    .iter()
                    .filter(|(seq, _)| *seq > after)
                    .map(|(_, b)| b.clone())
                    .collect();
                after = e.last;
                (batch, e.done)
            };
            for event in batch {
                if tx.send(event).await.is_err() {
                    return false;
                }
            }
            if done {
                return true;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return false },
                () = tx.closed() => return false,
            }
        }
    }
}

/// The streams whose clients went away, kept for resumption, at most a set number (a
/// session's request streams, a task's subscriptions); keyed by stream number or any key.
pub struct ParkedStreams<K = u64> {
    max: usize,
    streams: Mutex<HashMap<K, Arc<ResumableStream>>>,
}

impl<K> std::fmt::Debug for ParkedStreams<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let held = self
            .streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        f.debug_struct("ParkedStreams")
            .field("max", &self.max)
            .field("held", &held)
            .finish()
    }
}

impl<K: Eq + Hash> Default for ParkedStreams<K> {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_PARKED)
    }
}

impl<K: Eq + Hash> ParkedStreams<K> {
    /// Keeps at most `max` streams (at least 1).
    pub fn new(max: usize) -> Self {
        ParkedStreams {
            max: max.max(1),
            streams: Mutex::new(HashMap::new()),
        }
    }

    /// Keeps `stream` for resumption under `key`; false when the most are already kept (the
    /// caller then gives the work up: nobody could resume it).
    pub fn keep(&self, key: K, stream: &Arc<ResumableStream>) -> bool {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if streams.len() >= self.max && !streams.contains_key(&key) {
            return false;
        }
        streams.insert(key, Arc::clone(stream));
        true
    }

    /// The stream kept under `key`.
    pub fn get(&self, key: &K) -> Option<Arc<ResumableStream>> {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Forgets a stream (once a resumed client has had all of it).
    pub fn forget(&self, key: &K) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }

    /// How many streams are kept.
    pub fn len(&self) -> usize {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// True when none is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn limits(events: usize, bytes: usize) -> StreamLimits {
        StreamLimits {
            events,
            bytes,
            keep_alive: Duration::from_secs(1),
            retry: Duration::from_secs(1),
        }
    }

    #[test]
    fn event_ids_round_trip() {
        let event = stream_event(3, 7, br#"{"a":1}"#);
        let text = std::str::from_utf8(&event).unwrap_or("");
        assert!(text.contains("id: p3-7\n"), "{text}");
        assert!(text.contains(r#"data: {"a":1}"#), "{text}");
        assert_eq!(parse_event_id("p3-7"), Some((3, 7)));
        assert_eq!(parse_event_id("3-7"), None);
        assert_eq!(parse_event_id("p3-x"), None);
        let priming = priming_event(3, 1500);
        assert_eq!(&priming[..], b"retry: 1500\nid: p3-0\ndata:\n\n");
    }

    #[tokio::test]
    async fn resumes_after_the_last_seen_event_and_ends_when_finished() {
        let stream = ResumableStream::new();
        for i in 1..=3u64 {
            let (seq, whole) = stream.push(stream_event(1, i, b"{}"), &limits(8, 1 << 20));
            assert_eq!((seq, whole), (i, true));
        }
        stream.finish();
        let (tx, mut rx) = mpsc::channel(8);
        assert!(Arc::clone(&stream).resume(1, tx).await);
        let mut got = Vec::new();
        while let Some(e) = rx.recv().await {
            got.push(e);
        }
        assert_eq!(
            got,
            vec![stream_event(1, 2, b"{}"), stream_event(1, 3, b"{}")]
        );
    }

    #[tokio::test]
    async fn a_client_behind_the_buffer_is_refused() {
        let stream = ResumableStream::new();
        let (_, whole) = stream.push(stream_event(1, 1, b"{}"), &limits(1, 1 << 20));
        assert!(whole);
        let (_, whole) = stream.push(stream_event(1, 2, b"{}"), &limits(1, 1 << 20));
        assert!(!whole, "the first event was dropped");
        stream.finish();
        let (tx, _rx) = mpsc::channel(8);
        assert!(!Arc::clone(&stream).resume(0, tx).await);
        let (tx, _rx) = mpsc::channel(8);
        assert!(stream.resume(1, tx).await);
    }

    #[test]
    fn parked_streams_are_bounded() {
        let parked = ParkedStreams::new(2);
        let s = ResumableStream::new();
        assert!(parked.keep(1, &s));
        assert!(parked.keep(2, &s));
        assert!(!parked.keep(3, &s), "over the limit");
        assert!(parked.keep(2, &s), "a key already kept is replaced");
        parked.forget(&1);
        assert!(parked.get(&1).is_none());
        assert!(parked.keep(3, &s));
        assert_eq!(parked.len(), 2);
    }
}
