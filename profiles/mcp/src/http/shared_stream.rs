//! A session's request streams when replicas share a store ([`super::store`]): the same
//! stream as [`StreamRelay`](rpcwire_http::profile::StreamRelay)'s (a priming event, then
//! every message with an id `p<stream>-<seq>`), each event appended to the shared
//! [`EventLog`] as it is sent, so that a client whose stream broke resumes it with
//! `Last-Event-ID` on any replica ([`resume`]).
//!
//! Bounds as without a store: each log in events and bytes (the server's
//! [`stream_buffer`](super::McpHttpServer::stream_buffer)), living for the session's idle
//! time after its last event; and at most
//! [`max_parked_streams`](super::McpHttpServer::max_parked_streams) streams per session and
//! replica whose client went away while their work goes on (past it the work is given up).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rpcwire_http::profile::{priming_event, stream_event, StreamLimits};
use tokio::sync::mpsc;

use super::session::Session;
use super::store::{EventLog, LogBounds, StoreError, StreamKey};

/// A request's stream whose events go to the shared log (see the module docs).
pub(crate) struct SharedRelay {
    log: Arc<dyn EventLog>,
    key: StreamKey,
    bounds: LogBounds,
    live: Option<mpsc::Sender<Bytes>>,
    seq: u64,
    /// The session, whose count of this replica's parked streams this one may be in.
    session: Arc<Session>,
    parked: bool,
}

impl std::fmt::Debug for SharedRelay {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedRelay")
            .field("key", &self.key)
            .field("live", &self.live.is_some())
            .field("parked", &self.parked)
            .field("seq", &self.seq)
            .finish_non_exhaustive()
    }
}

impl SharedRelay {
    /// Opens the log of `key` and sends the priming event to `tx`.
    pub(crate) async fn start(
        log: Arc<dyn EventLog>,
        key: StreamKey,
        limits: StreamLimits,
        ttl: Duration,
        session: Arc<Session>,
        tx: mpsc::Sender<Bytes>,
    ) -> Result<Self, StoreError> {
        let bounds = LogBounds {
            events: limits.events,
            bytes: limits.bytes,
            ttl,
        };
        log.open(&key, bounds).await?;
        let retry = u64::try_from(limits.retry.as_millis()).unwrap_or(u64::MAX);
        let live = tx
            .send(priming_event(key.stream, retry))
            .await
            .ok()
            .map(|()| tx);
        Ok(SharedRelay {
            log,
            key,
            bounds,
            live,
            seq: 0,
            session,
            parked: false,
        })
    }

    /// Sends the next message (appended to the log, and sent while the client is there);
    /// false when the work should be given up (the client went and there is no room to park
    /// the stream, or it was parked and a client resuming it would miss events).
    pub(crate) async fn send(&mut self, message: &[u8]) -> bool {
        self.seq += 1;
        let event = stream_event(self.key.stream, self.seq, message);
        let whole = match self
            .log
            .append(&self.key, self.seq, event.clone(), self.bounds)
            .await
        {
            Ok(whole) => whole,
            Err(e) => {
                tracing::debug!(error = %e, "an event was not stored: the stream cannot be resumed");
                false
            }
        };
        if let Some(t) = &self.live {
            if t.send(event).await.is_err() {
                self.live = None;
            }
        }
        if self.live.is_none() && !self.park() {
            return false;
        }
        whole || !self.parked
    }

    /// Ends the client's stream now (it comes back with `Last-Event-ID`); false when the work
    /// should be given up.
    pub(crate) fn close(&mut self) -> bool {
        self.live = None;
        self.park()
    }

    /// Counts the stream as parked (its client went away); false when the session already
    /// has the most parked streams on this replica.
    pub(crate) fn park(&mut self) -> bool {
        self.live = None;
        if !self.parked {
            let count = &self.session.shared_parked;
            let before = count.fetch_add(1, Ordering::SeqCst);
            if before >= self.session.max_parked {
                count.fetch_sub(1, Ordering::SeqCst);
                return false;
            }
            self.parked = true;
        }
        true
    }

    /// `work`'s output, or `None` when the client went away first. With no client, just
    /// `work`.
    pub(crate) async fn unless_gone<F: std::future::Future>(
        &mut self,
        work: F,
    ) -> Option<F::Output> {
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
}

impl Drop for SharedRelay {
    /// A parked stream's log is marked finished (a resumed client gets its end); a stream
    /// whose client read all of it live is forgotten.
    fn drop(&mut self) {
        let (log, key, bounds, parked) = (
            Arc::clone(&self.log),
            self.key.clone(),
            self.bounds,
            self.parked,
        );
        if parked {
            self.session.shared_parked.fetch_sub(1, Ordering::SeqCst);
        }
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move {
                let done = if parked {
                    log.finish(&key, bounds).await
                } else {
                    log.remove(&key).await
                };
                if let Err(e) = done {
                    tracing::debug!(error = %e, "a stream's end was not stored");
                }
            });
        }
    }
}

/// How a resumed stream reads its log: `batch` events at most per read, and again after
/// `reread` at the latest when no wake-up came (a lost wake-up delays it by at most this).
/// [`SharedStore::reread_every`](super::store::SharedStore::reread_every) and
/// [`read_batch`](super::store::SharedStore::read_batch) set them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    pub(crate) reread: Duration,
    pub(crate) batch: usize,
}

/// Serves the events of `key` after `after` into `tx`, waiting for more (appended on any
/// replica) until the stream is finished, the client leaves, or the log is gone (expired,
/// or events after `after` were trimmed). The log is forgotten once a client had all of it.
pub(crate) async fn resume(
    log: Arc<dyn EventLog>,
    key: StreamKey,
    mut after: u64,
    tx: mpsc::Sender<Bytes>,
    reading: Reading,
) {
    loop {
        let read = match log.read_after(&key, after, reading.batch).await {
            Ok(Some(read)) => read,
            Ok(None) => {
                tracing::debug!("a resumed stream is unknown, expired or fell behind its log");
                return;
            }
            Err(e) => {
                tracing::debug!(error = %e, "a resumed stream's log could not be read");
                return;
            }
        };
        let got = !read.events.is_empty();
        for (seq, event) in read.events {
            if tx.send(event).await.is_err() {
                return;
            }
            after = seq;
        }
        if read.finished {
            let _ = log.remove(&key).await;
            return;
        }
        if !got {
            tokio::select! {
                () = log.wait(&key, after, reading.reread) => {}
                () = tx.closed() => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::prelude::rust_2021::*;
    use std::sync::Mutex;

    use super::*;
    use crate::http::store::{LogRead, MemoryStore, StoreFuture};

    /// A [`MemoryStore`] log whose wake-ups are all lost (`wait` only sleeps its timeout, as
    /// when a pub/sub message goes missing), and that records each read: the most asked for
    /// and how many came.
    #[derive(Default)]
    struct Deaf {
        inner: MemoryStore,
        reads: Mutex<Vec<(usize, usize)>>,
    }

    impl EventLog for Deaf {
        fn open<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
            self.inner.open(key, bounds)
        }

        fn append<'a>(
            &'a self,
            key: &'a StreamKey,
            seq: u64,
            event: Bytes,
            bounds: LogBounds,
        ) -> StoreFuture<'a, bool> {
            self.inner.append(key, seq, event, bounds)
        }

        fn finish<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
            self.inner.finish(key, bounds)
        }

        fn read_after<'a>(
            &'a self,
            key: &'a StreamKey,
            after: u64,
            max: usize,
        ) -> StoreFuture<'a, Option<LogRead>> {
            Box::pin(async move {
                let read = self.inner.read_after(key, after, max).await?;
                let got = read.as_ref().map_or(0, |r| r.events.len());
                self.reads
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .push((max, got));
                Ok(read)
            })
        }

        fn wait<'a>(
            &'a self,
            _key: &'a StreamKey,
            _after: u64,
            timeout: Duration,
        ) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
            Box::pin(tokio::time::sleep(timeout))
        }

        fn remove<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, ()> {
            EventLog::remove(&self.inner, key)
        }
    }

    const BOUNDS: LogBounds = LogBounds {
        events: 100,
        bytes: 1 << 20,
        ttl: Duration::from_secs(600),
    };

    fn key() -> StreamKey {
        StreamKey {
            session: "s".into(),
            stream: 1,
        }
    }

    /// With every wake-up lost, an event appended while a resumed stream waits reaches it
    /// when the re-read interval is up: not before, and no later.
    #[tokio::test(start_paused = true)]
    async fn a_lost_wake_up_delays_a_resumed_stream_by_the_reread_interval() {
        let log = Arc::new(Deaf::default());
        let (key, reread) = (key(), Duration::from_millis(300));
        assert!(log.open(&key, BOUNDS).await.is_ok());
        let (tx, mut rx) = mpsc::channel(8);
        let reading = Reading { reread, batch: 64 };
        let dyn_log: Arc<dyn EventLog> = Arc::clone(&log) as Arc<dyn EventLog>;
        let reader = tokio::spawn(resume(dyn_log, key.clone(), 0, tx, reading));
        // The reader has read nothing and waits (time stands still until every task waits).
        tokio::time::sleep(Duration::from_millis(10)).await;
        let event = Bytes::from_static(b"one");
        assert!(log.append(&key, 1, event.clone(), BOUNDS).await.is_ok());
        let early = tokio::time::timeout(Duration::from_millis(289), rx.recv()).await;
        assert!(early.is_err(), "not before the interval is up");
        let on_time = tokio::time::timeout(Duration::from_millis(2), rx.recv()).await;
        assert_eq!(on_time.ok().flatten(), Some(event));
        // Finished: the reader ends at its next read.
        assert!(log.finish(&key, BOUNDS).await.is_ok());
        let ended = tokio::time::timeout(reread + Duration::from_millis(1), reader).await;
        assert!(matches!(ended, Ok(Ok(()))), "the reader ended");
    }

    /// A read batch of 3 and a log of 4 events: two reads of at most 3, every event once, in
    /// order.
    #[tokio::test]
    async fn a_resumed_stream_reads_its_log_in_batches() {
        let log = Arc::new(Deaf::default());
        let key = key();
        assert!(log.open(&key, BOUNDS).await.is_ok());
        let events: Vec<Bytes> = (1..=4u8).map(|n| Bytes::from(vec![b'0' + n])).collect();
        for (seq, e) in (1..).zip(&events) {
            assert!(log.append(&key, seq, e.clone(), BOUNDS).await.is_ok());
        }
        assert!(log.finish(&key, BOUNDS).await.is_ok());
        let (tx, mut rx) = mpsc::channel(16);
        let reading = Reading {
            reread: Duration::from_secs(60),
            batch: 3,
        };
        let dyn_log: Arc<dyn EventLog> = Arc::clone(&log) as Arc<dyn EventLog>;
        let done = tokio::time::timeout(
            Duration::from_secs(10),
            resume(dyn_log, key, 0, tx, reading),
        );
        assert!(done.await.is_ok(), "a finished log is served to its end");
        let mut got = Vec::new();
        while let Ok(e) = rx.try_recv() {
            got.push(e);
        }
        assert_eq!(got, events);
        let reads = log
            .reads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        assert_eq!(reads, vec![(3, 3), (3, 1)]);
    }
}
