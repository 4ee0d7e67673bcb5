//! A session's request streams when replicas share a store ([`super::store`]): the same
//! stream as [`StreamRelay`](rpcwire_http::profile::StreamRelay)'s (a priming event, then
//! every message with an id `p<stream>-<seq>`), each event appended to the shared
//! [`EventLog`] as it is sent, so that a client whose stream broke resumes it with
//! `Last-Event-ID` on any replica ([`resume`]).
//!
//! Bounds as without a store: each log in events and bytes (the server's
//! [`stream_buffer`](super::McpHttpServer::stream_buffer)), living for the session's idle
//! time after its last event; and at most [`DEFAULT_MAX_PARKED`] streams per session and
//! replica whose client went away while their work goes on (past it the work is given up).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rpcwire_http::profile::{priming_event, stream_event, StreamLimits, DEFAULT_MAX_PARKED};
use tokio::sync::mpsc;

use super::session::Session;
use super::store::{EventLog, LogBounds, StoreError, StreamKey};

/// How many events one read of a log takes.
const READ_BATCH: usize = 64;

/// The longest a resumed stream waits for a wake-up before it reads its log again (a lost
/// wake-up delays it by at most this).
const WAIT_AT_MOST: Duration = Duration::from_secs(1);

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
            if before >= DEFAULT_MAX_PARKED {
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

/// Serves the events of `key` after `after` into `tx`, waiting for more (appended on any
/// replica) until the stream is finished, the client leaves, or the log is gone (expired,
/// or events after `after` were trimmed). The log is forgotten once a client had all of it.
pub(crate) async fn resume(
    log: Arc<dyn EventLog>,
    key: StreamKey,
    mut after: u64,
    tx: mpsc::Sender<Bytes>,
) {
    loop {
        let read = match log.read_after(&key, after, READ_BATCH).await {
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
                () = log.wait(&key, after, WAIT_AT_MOST) => {}
                () = tx.closed() => return,
            }
        }
    }
}
