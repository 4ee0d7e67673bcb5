//! A server's event stream: a `rpcwire-tokio` connection whose output goes to every open GET
//! stream (Server-Sent Events) and whose input is the responses clients POST back. The
//! JSON-RPC server has one; a profile may keep one per session.
//!
//! Each message the stream's connection writes becomes one event with an id
//! `<epoch>-<sequence>`; the last events are kept in a buffer bounded in count and bytes, so a
//! client that reconnects with `Last-Event-ID` gets exactly the events after it (when they are
//! still held). The epoch changes with every stream (every server process): an id from another
//! one resumes from the oldest event held.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use rpcwire::wire::sse::{self, Replay};
use rpcwire::wire::Framing;
use rpcwire_tokio::{Builder, Client};
use tokio::sync::{mpsc, watch};

pub use rpcwire::wire::ser::VecSink;
use rpcwire_service::pipe::{send_body, ChannelReader, FrameWriter};
pub use rpcwire_service::resumable::StreamLimits;

/// The server side of the GET streams: a connection whose messages (sent through its
/// [`client`](EventHub::client)) are numbered, kept in a bounded buffer and sent to every
/// open GET stream; a GET with `Last-Event-ID` resumes after the event it names. POSTed
/// responses to its calls go back to it with [`deliver`](EventHub::deliver).
pub struct EventHub {
    epoch: String,
    /// The messages, numbered by their sequence.
    ring: Mutex<Replay<Bytes>>,
    /// The sequence of the last event pushed: GET streams wait on it.
    last: watch::Sender<u64>,
    client: Client,
    /// Bumped to end every open GET stream (their clients reconnect and resume).
    ends: watch::Sender<u64>,
    /// POSTed responses go to the stream connection's input.
    inbound: mpsc::Sender<Bytes>,
    limits: StreamLimits,
    /// Open GET streams end when its drain begins.
    shutdown: std::sync::OnceLock<rpcwire_service::Shutdown>,
}

impl std::fmt::Debug for EventHub {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventHub")
            .field("epoch", &self.epoch)
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl EventHub {
    /// Starts the stream's connection with `builder`'s settings and router (its framing set
    /// to the pipes' own; frames of at most `max_frame` bytes), on the current tokio runtime.
    pub fn start(builder: Builder, max_frame: usize, limits: StreamLimits) -> Arc<EventHub> {
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(16);
        let session = builder
            .caller_if_unset(|| {
                rpcwire_tokio::Caller::anonymous().with_transport(crate::transport::EVENT_STREAM)
            })
            .framing(Framing::ContentLength)
            .run(
                ChannelReader::new(in_rx),
                FrameWriter::new(out_tx, max_frame),
            );
        let (client, _task) = session.into_parts();
        let epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        let hub = Arc::new(EventHub {
            epoch: format!("{epoch:x}"),
            ring: Mutex::new(Replay::new()),
            last: watch::channel(0).0,
            ends: watch::channel(0).0,
            client,
            inbound: in_tx,
            limits,
            shutdown: std::sync::OnceLock::new(),
        });
        // Messages of the stream's connection into the buffer; ends with the connection.
        let weak = Arc::downgrade(&hub);
        tokio::spawn(async move {
            while let Some(message) = out_rx.recv().await {
                let Some(hub) = weak.upgrade() else { break };
                hub.push(message);
            }
        });
        hub
    }

    /// The client whose notifications and calls go out on the stream.
    pub fn client(&self) -> &Client {
        &self.client
    }

    fn push(&self, message: Bytes) {
        let Ok(mut ring) = self.ring.lock() else {
            return;
        };
        let (seq, _) = ring.push(message, self.limits.events, self.limits.bytes);
        drop(ring);
        self.last.send_replace(seq);
    }

    /// Hands a body of responses to the stream's connection (which matches them to its calls).
    pub async fn deliver(&self, body: Bytes) -> bool {
        send_body(&self.inbound, body).await
    }

    /// Ends every open GET stream; clients that reconnect with `Last-Event-ID` resume.
    pub fn end_streams(&self) {
        self.ends.send_modify(|n| *n += 1);
    }

    /// Ends every open GET stream when `shutdown`'s drain begins (a server's requests are
    /// refused from then on, new streams included). Set once: later calls change nothing.
    pub fn end_streams_on(&self, shutdown: &rpcwire_service::Shutdown) {
        let _ = self.shutdown.set(shutdown.clone());
    }

    /// Where a GET stream starts: after the event `last_event_id` names when it is one of
    /// ours, from the oldest event held when it is another stream's, else with the next event.
    pub fn start_after(&self, last_event_id: Option<&str>) -> u64 {
        let (oldest, next) = match self.ring.lock() {
            Ok(ring) => (ring.oldest(), ring.last() + 1),
            Err(_) => return 0,
        };
        let Some(id) = last_event_id else {
            return next - 1;
        };
        match id.split_once('-') {
            Some((epoch, seq)) if epoch == self.epoch => match seq.parse::<u64>() {
                Ok(seq) if seq < next => seq,
                _ => next - 1,
            },
            _ => oldest.saturating_sub(1),
        }
    }

    /// Events after `after`, encoded, and the sequence of the last; `None` when events after
    /// `after` were already dropped from the buffer (the stream fell too far behind).
    fn encode_after(&self, after: u64, out: &mut Vec<u8>) -> Option<u64> {
        let ring = self.ring.lock().ok()?;
        let mut last = after;
        for (seq, message) in ring.after(after)? {
            let id = format!("{}-{seq}", self.epoch);
            let data = std::str::from_utf8(message).unwrap_or("");
            sse::write_event(&mut VecSink(out), Some("message"), Some(&id), data);
            last = seq;
        }
        Some(last)
    }

    /// Serves one GET stream into `tx` until the client goes away or falls behind the buffer.
    /// `cursor`: what [`start_after`](Self::start_after) said when the request came (taken
    /// then, so that no event published meanwhile is missed).
    pub async fn serve_stream(self: Arc<Self>, mut cursor: u64, tx: mpsc::Sender<Bytes>) {
        let mut changes = self.last.subscribe();
        let mut ends = self.ends.subscribe();
        let mut head = Vec::new();
        sse::write_retry(
            &mut VecSink(&mut head),
            self.limits.retry.as_millis() as u64,
        );
        // A comment right away: proxies and clients see the stream open.
        sse::write_comment(&mut VecSink(&mut head), "stream open");
        head.push(b'\n');
        if tx.send(Bytes::from(head)).await.is_err() {
            return;
        }
        let mut tick = tokio::time::interval(self.limits.keep_alive);
        tick.reset();
        let shutdown = self.shutdown.get().cloned().unwrap_or_default();
        let mut draining = std::pin::pin!(shutdown.draining());
        loop {
            if ends.has_changed().unwrap_or(true) {
                return;
            }
            changes.mark_unchanged();
            let mut out = Vec::new();
            match self.encode_after(cursor, &mut out) {
                Some(last) => cursor = last,
                None => {
                    tracing::warn!("an event stream fell behind its buffer; ending it");
                    return;
                }
            }
            if !out.is_empty() {
                if tx.send(Bytes::from(out)).await.is_err() {
                    return;
                }
                tick.reset();
                continue;
            }
            tokio::select! {
                changed = changes.changed() => if changed.is_err() { return },
                _ = tick.tick() => {
                    let mut ka = Vec::new();
                    sse::write_comment(&mut VecSink(&mut ka), "keep-alive");
                    ka.push(b'\n');
                    if tx.send(Bytes::from(ka)).await.is_err() {
                        return;
                    }
                }
                () = tx.closed() => return,
                _ = ends.changed() => return,
                // The end of the body: the stream's clean end.
                () = draining.as_mut() => return,
            }
        }
    }
}
