//! Resumable POST event streams (session mode): each event of a request's stream has an id
//! (`p<stream>-<seq>`, after a first "priming" event with an id and no data), the request goes
//! on when its client disconnects, and a GET with `Last-Event-ID` naming one of those events
//! carries the rest of that stream, the answer included.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use rpcwire::wire::sse;
use tokio::sync::{mpsc, watch};

use crate::stream::{StreamLimits, VecSink};

/// The most disconnected request streams a session keeps for resumption; a request whose
/// client disconnects beyond it is cancelled.
pub(crate) const MAX_DETACHED: usize = 16;

/// `p<stream>-<seq>` → (stream, seq).
pub(crate) fn parse_event_id(id: &str) -> Option<(u64, u64)> {
    let (stream, seq) = id.strip_prefix('p')?.split_once('-')?;
    Some((stream.parse().ok()?, seq.parse().ok()?))
}

/// One event, encoded, with its id.
pub(crate) fn encode(stream: u64, seq: u64, message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 40);
    let id = format!("p{stream}-{seq}");
    let data = std::str::from_utf8(message).unwrap_or("");
    sse::write_event(&mut VecSink(&mut out), Some("message"), Some(&id), data);
    Bytes::from(out)
}

/// The priming event: an id, the reconnection time, no data.
pub(crate) fn priming(stream: u64, retry_ms: u64) -> Bytes {
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

/// A request's event stream, kept for resumption while its client is away.
pub(crate) struct PostStream {
    events: Mutex<Events>,
    changed: watch::Sender<()>,
}

impl PostStream {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(PostStream {
            events: Mutex::new(Events::default()),
            changed: watch::channel(()).0,
        })
    }

    /// Records the next event; false when the buffer went past its limits (the oldest were
    /// dropped: a resuming client would miss events).
    pub(crate) fn push(&self, event: Bytes, limits: &StreamLimits) -> (u64, bool) {
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

    /// Marks the stream complete (its answer is in, or it ended without one).
    pub(crate) fn finish(&self) {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .done = true;
        self.changed.send_replace(());
    }

    /// Serves the events after `after` into `tx`, waiting for more until the stream is done
    /// (or the client leaves, or events after `after` were already dropped). True when the
    /// client got the whole stream.
    pub(crate) async fn resume(self: Arc<Self>, mut after: u64, tx: mpsc::Sender<Bytes>) -> bool {
        let mut changes = self.changed.subscribe();
        loop {
            changes.mark_unchanged();
            let (batch, done) = {
                let e = self.events.lock().unwrap_or_else(PoisonError::into_inner);
                let oldest = e.list.front().map_or(e.last + 1, |x| x.0);
                if after + 1 < oldest {
                    tracing::debug!("a resumed request stream fell behind its buffer");
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

/// A session's request streams whose clients went away.
#[derive(Default)]
pub(crate) struct Detached {
    streams: Mutex<HashMap<u64, Arc<PostStream>>>,
}

impl Detached {
    /// Keeps `stream` for resumption; false when the session already keeps the most.
    pub(crate) fn keep(&self, id: u64, stream: &Arc<PostStream>) -> bool {
        let mut streams = self.streams.lock().unwrap_or_else(PoisonError::into_inner);
        if streams.len() >= MAX_DETACHED {
            return false;
        }
        streams.insert(id, Arc::clone(stream));
        true
    }

    pub(crate) fn get(&self, id: u64) -> Option<Arc<PostStream>> {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&id)
            .cloned()
    }

    /// Forgets a stream once a resumed client has had all of it.
    pub(crate) fn forget(&self, id: u64) {
        self.streams
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&id);
    }
}
