//! Resumable event streams: the events of one answer (a request's progress and its
//! answer, a task's updates) kept in a bounded buffer while they are sent, so that a client
//! whose connection broke, or whom the server sent away to poll, comes back with
//! `Last-Event-ID` and gets exactly the events after it.
//!
//! Event ids have the form `p<stream>-<seq>`: the stream's number (a profile numbers the
//! streams of a session, of a task...) and the event's place in it, from 1. A first
//! "priming" event (`p<stream>-0`, no data) tells the client the id to resume from before
//! any message has come.
//!
//! They live in the service layer, not in a transport: they hold a profile's stream state
//! (encoded events, the streams parked per owner), with no HTTP in them; `rpcwire-http`
//! serves them as `text/event-stream` and re-exports them under `rpcwire_http::profile`.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use rpcwire::wire::ser::VecSink;
use rpcwire::wire::sse::{self, Replay};
use tokio::sync::{mpsc, Notify};

/// The default of [`ParkedStreams::new`]: the most streams kept for resumption per owner.
pub const DEFAULT_MAX_PARKED: usize = 16;

/// Limits and timings of an event stream: its resumption buffer, bounded in events and in
/// bytes (the oldest go first; the newest is always kept), its keep-alive comments, and the
/// reconnection time clients are told. `rpcwire-http`'s `Endpoint` setters apply
/// the bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The most events held for resumption.
    pub events: usize,
    /// The most bytes held for resumption.
    pub bytes: usize,
    /// The interval of keep-alive comments on an idle GET stream.
    pub keep_alive: Duration,
    /// The reconnection time sent as `retry:`.
    pub retry: Duration,
}

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
    /// The encoded events, numbered by their `seq`.
    replay: Replay<Bytes>,
    done: bool,
}

/// The encoded events of one stream, bounded in count and bytes ([`StreamLimits`]), that a
/// returning client reads from where it was ([`resume`](ResumableStream::resume)).
pub struct ResumableStream {
    events: Mutex<Events>,
    /// Wakes resumed clients waiting for more (a `Notify`, not a `watch` channel: every open
    /// stream holds one, and a watch channel's shared state is some 350 bytes).
    changed: Notify,
}

impl std::fmt::Debug for ResumableStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        f.debug_struct("ResumableStream")
            .field("held", &e.replay.len())
            .field("bytes", &e.replay.bytes())
            .field("last", &e.replay.last())
            .field("done", &e.done)
            .finish()
    }
}

impl ResumableStream {
    /// An empty stream.
    pub fn new() -> Arc<Self> {
        Arc::new(ResumableStream {
            events: Mutex::new(Events::default()),
            changed: Notify::new(),
        })
    }

    /// Records the next event (already encoded, [`stream_event`]) and returns its sequence
    /// number, and false when the buffer went past `limits` (the oldest events were dropped:
    /// a client resuming from before them would miss events).
    pub fn push(&self, event: Bytes, limits: &StreamLimits) -> (u64, bool) {
        let mut e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        let pushed = e.replay.push(event, limits.events, limits.bytes);
        drop(e);
        self.changed.notify_waiters();
        pushed
    }

    /// Marks the stream complete (its last event is in, or it ended without one): resumed
    /// clients get what is held, then the end.
    pub fn finish(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .done = true;
        self.changed.notify_waiters();
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
        loop {
            // Registered before the events are read: a push after the read wakes it.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let (batch, done) = {
                let e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
                let Some(held) = e.replay.after(after) else {
                    tracing::debug!("a resumed stream fell behind its buffer");
                    return false;
                };
                let batch: Vec<Bytes> = held.map(|(_, b)| b.clone()).collect();
                after = e.replay.last();
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
                () = changed => {}
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

/// A POST answered as a resumable event stream: [`start`](StreamRelay::start) sends the
/// priming event, then each message [`send`](StreamRelay::send) gets goes to the client while
/// it is there and into the stream's buffer. When the client goes away (seen by
/// [`unless_gone`](StreamRelay::unless_gone), or a failed send) or the profile sends it away
/// to poll ([`close`](StreamRelay::close)), the stream is parked under its key, so that the
/// client finds it again with `Last-Event-ID`, and the work goes on. The buffer is finished
/// when the relay is dropped.
///
/// A `false` from [`send`](StreamRelay::send), [`close`](StreamRelay::close) or
/// [`park`](StreamRelay::park) means nobody could resume the stream (no room to park it, or
/// it was parked and outgrew its buffer): give the work up.
pub struct StreamRelay<'a, K: Eq + Hash + Clone = u64> {
    number: u64,
    key: K,
    parking: &'a ParkedStreams<K>,
    stream: Arc<ResumableStream>,
    live: Option<mpsc::Sender<Bytes>>,
    parked: bool,
    seq: u64,
    limits: StreamLimits,
}

impl<K: Eq + Hash + Clone> std::fmt::Debug for StreamRelay<'_, K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StreamRelay")
            .field("number", &self.number)
            .field("live", &self.live.is_some())
            .field("parked", &self.parked)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl<'a, K: Eq + Hash + Clone> StreamRelay<'a, K> {
    /// Starts stream `number` (its event ids are `p<number>-<seq>`) towards the client's
    /// `tx`: sends the priming event with `limits.retry`. `key` is where it is parked in
    /// `parking` if the client goes away.
    pub async fn start(
        number: u64,
        key: K,
        parking: &'a ParkedStreams<K>,
        tx: mpsc::Sender<Bytes>,
        limits: StreamLimits,
    ) -> Self {
        let retry = u64::try_from(limits.retry.as_millis()).unwrap_or(u64::MAX);
        let live = tx
            .send(priming_event(number, retry))
            .await
            .ok()
            .map(|()| tx);
        StreamRelay {
            number,
            key,
            parking,
            stream: ResumableStream::new(),
            live,
            parked: false,
            seq: 0,
            limits,
        }
    }

    /// Sends the next message (kept, and sent while the client is there); false when the work
    /// should be given up (see the type's docs).
    pub async fn send(&mut self, message: &[u8]) -> bool {
        self.seq += 1;
        let event = stream_event(self.number, self.seq, message);
        let whole = self.stream.push(event.clone(), &self.limits).1;
        if let Some(t) = &self.live {
            if t.send(event).await.is_err() {
                self.live = None;
            }
        }
        if self.live.is_none() && !self.parked && !self.park() {
            return false;
        }
        // Parked and past its buffer, a resuming client would miss events.
        whole || !self.parked
    }

    /// Ends the client's stream now (it comes back with `Last-Event-ID`: SSE polling); false
    /// when the work should be given up.
    pub fn close(&mut self) -> bool {
        self.live = None;
        self.parked || self.park()
    }

    /// Parks the stream for resumption (the client went away); false when there is no room.
    pub fn park(&mut self) -> bool {
        self.live = None;
        if !self.parked {
            self.parked = self.parking.keep(self.key.clone(), &self.stream);
        }
        self.parked
    }

    /// `work`'s output, or `None` when the client went away first (then [`park`](Self::park)
    /// and, when it is parked, go on with the work). With no client, just `work`.
    pub async fn unless_gone<F: std::future::Future>(&mut self, work: F) -> Option<F::Output> {
        match &self.live {
            Some(t) => tokio::select! {
                out = work => Some(out),
                () = t.closed() => {
                    self.live = None;
                    None
                }
            },
            None => Some(work.await),
        }
    }

    /// Whether the client is still reading the stream.
    pub fn is_live(&self) -> bool {
        self.live.is_some()
    }
}

impl<K: Eq + Hash + Clone> Drop for StreamRelay<'_, K> {
    fn drop(&mut self) {
        self.stream.finish();
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

    #[tokio::test]
    async fn a_relay_parks_its_stream_when_the_client_goes_and_a_resumer_gets_the_rest() {
        let parking = ParkedStreams::new(1);
        let (tx, mut rx) = mpsc::channel(8);
        let mut relay = StreamRelay::start(4, 4, &parking, tx, limits(8, 1 << 20)).await;
        assert_eq!(rx.recv().await, Some(priming_event(4, 1000)));
        assert!(relay.send(b"{\"n\":1}").await);
        assert_eq!(rx.recv().await, Some(stream_event(4, 1, b"{\"n\":1}")));
        drop(rx);
        let gone = relay.unless_gone(std::future::pending::<()>()).await;
        assert!(gone.is_none() && !relay.is_live());
        assert!(relay.park(), "room for one");
        assert!(relay.send(b"{\"n\":2}").await, "the work goes on");
        drop(relay);
        let parked = parking.get(&4).unwrap_or_else(ResumableStream::new);
        assert!(parked.is_finished(), "finished when the relay went");
        let (tx, mut rx) = mpsc::channel(8);
        assert!(parked.resume(1, tx).await);
        assert_eq!(rx.recv().await, Some(stream_event(4, 2, b"{\"n\":2}")));
        assert_eq!(rx.recv().await, None);

        // No room to park a second stream: the work is given up.
        let (tx, rx) = mpsc::channel(8);
        let mut other = StreamRelay::start(5, 5, &parking, tx, limits(8, 1 << 20)).await;
        drop(rx);
        assert!(!other.send(b"{}").await);
        assert!(!other.close());
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
