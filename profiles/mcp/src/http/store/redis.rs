//! [`RedisStore`] (feature `redis`): the shared store in Redis or Valkey.
//!
//! - a session is a hash `PREFIX:s:ID` (its record's fields, and `n`, the counter of its
//!   request streams) with the session's time to live, started again by each use;
//! - a stream's events are a Redis Stream `PREFIX:e:ID:N` with entry ids `0-<seq>`, so that a
//!   replay is `XRANGE (0-<after> +`; beside it a hash `PREFIX:e:ID:N:m` says whether the
//!   stream is open or finished, its bytes, and the last seq trimmed. Appending, trimming to
//!   the bounds in events and bytes, and waking readers happen in one script, atomically;
//! - new events wake readers on every replica through pub/sub (`PREFIX:wake`, the stream's
//!   key), and a reader also reads again at least every wait's timeout, so a lost message
//!   (pub/sub delivers at most once) delays it, never stalls it;
//! - forwarded answers and cancellations go on `PREFIX:fwd`.
//!
//! One multiplexed connection carries every command (commands are pipelined on it; nothing
//! here blocks it: waits are pub/sub, not `XREAD BLOCK`), and one more connection listens to
//! the two channels, reconnecting when it breaks ([`RedisStoreOptions::reconnect_every`]).

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use redis::aio::MultiplexedConnection;
use redis::{Script, Value as RedisValue};
use tokio::sync::{mpsc, Notify};

use super::{
    EventLog, Forwarded, Forwarder, LogBounds, LogRead, SessionChange, SessionRecord, SessionStore,
    StoreError, StoreFuture, StreamKey,
};

/// How often a quiet pub/sub connection looks whether its store was dropped: the task (and
/// its connection) ends at most this long after the last `Arc` goes. Not a bound on anything
/// a peer sends, so not a setting.
const DROP_CHECK: Duration = Duration::from_secs(5);

/// How [`RedisStore::connect_with`] connects, and the bounds of what it holds; each setter
/// says its default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedisStoreOptions {
    prefix: String,
    timeout: Duration,
    forward_queue: usize,
    reconnect_every: Duration,
}

impl RedisStoreOptions {
    /// Keys under `prefix` (say `rpcwire:mcp`: replicas of one server share one prefix),
    /// with every other setting at its default.
    pub fn new(prefix: &str) -> Self {
        RedisStoreOptions {
            prefix: prefix.to_owned(),
            timeout: Duration::from_secs(5),
            forward_queue: super::DEFAULT_FORWARD_QUEUE,
            reconnect_every: Duration::from_secs(1),
        }
    }

    /// How long connecting, and every command after, may take before it fails (default 5 s,
    /// at least 1 ms): a request that meets the failure is answered 503.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How many forwarded messages each subscriber ([`Forwarder::subscribe`]) may have unread
    /// (default [`DEFAULT_FORWARD_QUEUE`](super::DEFAULT_FORWARD_QUEUE), 64; at least 1): one
    /// that arrives while a subscriber holds that many is dropped for it, and the pub/sub
    /// task goes on (it never waits for a subscriber).
    pub fn forward_queue(mut self, messages: usize) -> Self {
        self.forward_queue = messages.max(1);
        self
    }

    /// How long the pub/sub task waits before connecting again once its connection broke
    /// (default 1 s, at least 1 ms). Readers waiting meanwhile read again after the server's
    /// [`reread_every`](super::SharedStore::reread_every).
    pub fn reconnect_every(mut self, every: Duration) -> Self {
        self.reconnect_every = every.max(Duration::from_millis(1));
        self
    }
}

/// Why [`RedisStore::connect`] failed.
#[derive(Debug, thiserror::Error)]
#[error("could not connect to Redis")]
pub struct RedisStoreError(#[source] redis::RedisError);

/// Readers waiting on one stream's key, woken by the pub/sub task.
type Waiters = Mutex<HashMap<String, (Arc<Notify>, usize)>>;

/// The shared store in Redis or Valkey (see the module docs for its keys). Cheap to share
/// (`Arc`); its pub/sub task stops when the last `Arc` is dropped.
pub struct RedisStore {
    conn: MultiplexedConnection,
    prefix: String,
    waiters: Arc<Waiters>,
    subscribers: Arc<Mutex<Vec<mpsc::Sender<Forwarded>>>>,
    scripts: Scripts,
    forward_queue: usize,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("prefix", &self.prefix)
            .finish_non_exhaustive()
    }
}

struct Scripts {
    create: Script,
    update: Script,
    next_stream: Script,
    append: Script,
    read: Script,
    finish: Script,
}

impl Scripts {
    fn new() -> Self {
        Scripts {
            // KEYS[1] the session; ARGV: ttl ms, then field, value pairs.
            create: Script::new(
                r"if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
                  redis.call('HSET', KEYS[1], unpack(ARGV, 2))
                  redis.call('PEXPIRE', KEYS[1], ARGV[1])
                  return 1",
            ),
            // KEYS[1] the session; ARGV: ttl ms, field, value.
            update: Script::new(
                r"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
                  redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
                  redis.call('PEXPIRE', KEYS[1], ARGV[1])
                  return 1",
            ),
            // KEYS[1] the session; ARGV: ttl ms. 0: no such session.
            next_stream: Script::new(
                r"if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
                  local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
                  redis.call('PEXPIRE', KEYS[1], ARGV[1])
                  return n",
            ),
            // KEYS[1] the events, KEYS[2] their meta; ARGV: seq, event, most events, most
            // bytes, ttl ms, wake channel. -1: no such stream; 0: some were trimmed.
            append: Script::new(
                r"if redis.call('EXISTS', KEYS[2]) == 0 then return -1 end
                  redis.call('XADD', KEYS[1], '0-' .. ARGV[1], 'd', ARGV[2])
                  local bytes = redis.call('HINCRBY', KEYS[2], 'bytes', string.len(ARGV[2]))
                  local n = redis.call('XLEN', KEYS[1])
                  local whole = 1
                  while n > 1 and (n > tonumber(ARGV[3]) or bytes > tonumber(ARGV[4])) do
                    local first = redis.call('XRANGE', KEYS[1], '-', '+', 'COUNT', 1)[1]
                    redis.call('XDEL', KEYS[1], first[1])
                    bytes = redis.call('HINCRBY', KEYS[2], 'bytes', -string.len(first[2][2]))
                    redis.call('HSET', KEYS[2], 'trimmed', string.sub(first[1], 3))
                    n = n - 1
                    whole = 0
                  end
                  redis.call('PEXPIRE', KEYS[1], ARGV[5])
                  redis.call('PEXPIRE', KEYS[2], ARGV[5])
                  redis.call('PUBLISH', ARGV[6], KEYS[1])
                  return whole",
            ),
            // KEYS[1] the events, KEYS[2] their meta; ARGV: after, most events. Nil: no such
            // stream, or an event after `after` was trimmed; else state, last id, then id and
            // event pairs.
            read: Script::new(
                r"local meta = redis.call('HMGET', KEYS[2], 'state', 'trimmed')
                  if not meta[1] then return false end
                  if tonumber(ARGV[1]) < tonumber(meta[2] or '0') then return false end
                  local events = redis.call('XRANGE', KEYS[1], '(0-' .. ARGV[1], '+', 'COUNT', ARGV[2])
                  local last = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
                  local out = {meta[1], '0-0'}
                  if last[1] then out[2] = last[1][1] end
                  for _, e in ipairs(events) do
                    table.insert(out, e[1])
                    table.insert(out, e[2][2])
                  end
                  return out",
            ),
            // KEYS[1] the events, KEYS[2] their meta; ARGV: ttl ms, wake channel.
            finish: Script::new(
                r"if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
                  redis.call('HSET', KEYS[2], 'state', 'done')
                  redis.call('PEXPIRE', KEYS[1], ARGV[1])
                  redis.call('PEXPIRE', KEYS[2], ARGV[1])
                  redis.call('PUBLISH', ARGV[2], KEYS[1])
                  return 1",
            ),
        }
    }
}

fn backend(e: redis::RedisError) -> StoreError {
    StoreError::Backend(Box::new(e))
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX).max(1)
}

/// `0-<seq>` → seq.
fn seq_of(id: &[u8]) -> Option<u64> {
    std::str::from_utf8(id)
        .ok()?
        .strip_prefix("0-")?
        .parse()
        .ok()
}

fn bytes_of(v: &RedisValue) -> Option<&[u8]> {
    match v {
        RedisValue::BulkString(b) => Some(b),
        RedisValue::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

impl RedisStore {
    /// Connects to the Redis (or Valkey) at `url` (`redis://HOST:PORT/DB`) and starts the
    /// pub/sub task; keys are under `prefix` (say `rpcwire:mcp`: replicas of one server share
    /// one prefix). Connecting, and every command after, fails after `timeout` (a request
    /// that meets the failure is answered 503). Call it within a tokio runtime. The other
    /// settings at their defaults: [`connect_with`](Self::connect_with) sets them.
    pub async fn connect(
        url: &str,
        prefix: &str,
        timeout: Duration,
    ) -> Result<Arc<Self>, RedisStoreError> {
        Self::connect_with(url, RedisStoreOptions::new(prefix).timeout(timeout)).await
    }

    /// [`connect`](Self::connect) with all of [`RedisStoreOptions`].
    pub async fn connect_with(
        url: &str,
        options: RedisStoreOptions,
    ) -> Result<Arc<Self>, RedisStoreError> {
        let RedisStoreOptions {
            prefix,
            timeout,
            forward_queue,
            reconnect_every,
        } = options;
        let client = redis::Client::open(url).map_err(RedisStoreError)?;
        let config = redis::AsyncConnectionConfig::new()
            .set_connection_timeout(timeout)
            .set_response_timeout(timeout);
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(RedisStoreError)?;
        // The first subscription before `connect` returns: nothing forwarded after it is missed.
        let pubsub = tokio::time::timeout(timeout, client.get_async_pubsub())
            .await
            .map_err(|_| {
                RedisStoreError(redis::RedisError::from(std::io::Error::from(
                    std::io::ErrorKind::TimedOut,
                )))
            })?;
        let mut pubsub = pubsub.map_err(RedisStoreError)?;
        let (wake, fwd) = (format!("{prefix}:wake"), format!("{prefix}:fwd"));
        pubsub.subscribe(&wake).await.map_err(RedisStoreError)?;
        pubsub.subscribe(&fwd).await.map_err(RedisStoreError)?;
        let store = Arc::new(RedisStore {
            conn,
            prefix,
            waiters: Arc::new(Mutex::new(HashMap::new())),
            subscribers: Arc::new(Mutex::new(Vec::new())),
            scripts: Scripts::new(),
            forward_queue,
        });
        tokio::spawn(listen(
            client,
            Some(pubsub),
            Arc::downgrade(&store),
            (wake, fwd),
            reconnect_every,
        ));
        Ok(store)
    }

    fn session_key(&self, id: &str) -> String {
        format!("{}:s:{id}", self.prefix)
    }

    fn stream_keys(&self, key: &StreamKey) -> (String, String) {
        let events = format!("{}:e:{}:{}", self.prefix, key.session, key.stream);
        let meta = format!("{events}:m");
        (events, meta)
    }

    fn wake_channel(&self) -> String {
        format!("{}:wake", self.prefix)
    }

    /// Wakes this replica's readers of `key` (a pub/sub message named it).
    fn wake(waiters: &Waiters, key: &str) {
        let waiters = waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((notify, _)) = waiters.get(key) {
            notify.notify_waiters();
        }
    }
}

/// The pub/sub task: wakes readers and hands forwarded messages to subscribers, until the
/// store is dropped; tries to connect again every `reconnect_every` while Redis is away.
async fn listen(
    client: redis::Client,
    mut first: Option<redis::aio::PubSub>,
    store: Weak<RedisStore>,
    (wake, fwd): (String, String),
    reconnect_every: Duration,
) {
    loop {
        let pubsub = match first.take() {
            Some(p) => Some(p),
            None => match client.get_async_pubsub().await {
                Ok(mut p) => {
                    let ok = p.subscribe(&wake).await.is_ok() && p.subscribe(&fwd).await.is_ok();
                    ok.then_some(p)
                }
                Err(_) => None,
            },
        };
        if let Some(pubsub) = pubsub {
            let mut messages = pubsub.into_on_message();
            loop {
                // A quiet channel is looked up every few seconds: the task ends (and its
                // connection closes) soon after the store is dropped.
                let msg = match tokio::time::timeout(DROP_CHECK, messages.next()).await {
                    Err(_) if store.strong_count() == 0 => return,
                    Err(_) => continue,
                    Ok(None) => break,
                    Ok(Some(msg)) => msg,
                };
                let Some(store) = store.upgrade() else { return };
                let payload = msg.get_payload_bytes();
                if msg.get_channel_name() == wake {
                    if let Ok(key) = std::str::from_utf8(payload) {
                        RedisStore::wake(&store.waiters, key);
                    }
                } else if let Some(m) = Forwarded::decode(payload) {
                    let mut subs = store
                        .subscribers
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner);
                    subs.retain(|s| !s.is_closed());
                    for s in subs.iter() {
                        // Full: dropped for this subscriber (the trait's rule); the task
                        // never waits, so the wake-ups behind it are not held up.
                        let _ = s.try_send(m.clone());
                    }
                }
            }
        }
        if store.strong_count() == 0 {
            return;
        }
        tracing::debug!("the Redis pub/sub connection broke: reconnecting");
        tokio::time::sleep(reconnect_every).await;
    }
}

/// A reader's registration for wake-ups on one key, removed when the last one goes.
struct Waiting<'a> {
    waiters: &'a Waiters,
    key: String,
    notify: Arc<Notify>,
}

impl<'a> Waiting<'a> {
    fn new(waiters: &'a Waiters, key: String) -> Self {
        let mut map = waiters.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = map
            .entry(key.clone())
            .or_insert_with(|| (Arc::new(Notify::new()), 0));
        entry.1 += 1;
        let notify = Arc::clone(&entry.0);
        drop(map);
        Waiting {
            waiters,
            key,
            notify,
        }
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        let mut map = self.waiters.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = map.get_mut(&self.key) {
            entry.1 -= 1;
            if entry.1 == 0 {
                map.remove(&self.key);
            }
        }
    }
}

impl SessionStore for RedisStore {
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let mut inv = self.scripts.create.key(self.session_key(&record.id));
            inv.arg(millis(ttl));
            inv.arg("r").arg(record.to_json());
            let created: i64 = inv
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            if created == 1 {
                Ok(())
            } else {
                Err(StoreError::Taken)
            }
        })
    }

    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let key = self.session_key(id);
            let (record, _): (Option<Vec<u8>>, i64) = redis::pipe()
                .atomic()
                .hget(&key, "r")
                .pexpire(&key, i64::try_from(millis(ttl)).unwrap_or(i64::MAX))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            record.map(|r| SessionRecord::from_json(&r)).transpose()
        })
    }

    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        ttl: Duration,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            // The record is one field: read, changed, written back. Changes to one session
            // are few and come from its client one at a time (its `initialize` answered, a
            // level set), so the last writer's record holds.
            let Some(mut record) = self.load(id, ttl).await? else {
                return Ok(false);
            };
            change.apply(&mut record);
            let mut inv = self.scripts.update.key(self.session_key(id));
            inv.arg(millis(ttl)).arg("r").arg(record.to_json());
            let done: i64 = inv
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(done == 1)
        })
    }

    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let removed: i64 = redis::cmd("DEL")
                .arg(self.session_key(id))
                .query_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(removed > 0)
        })
    }

    fn next_stream<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, u64> {
        Box::pin(async move {
            let mut inv = self.scripts.next_stream.key(self.session_key(id));
            inv.arg(millis(ttl));
            let n: u64 = inv
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(n)
        })
    }
}

impl EventLog for RedisStore {
    fn open<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            let ttl = i64::try_from(millis(bounds.ttl)).unwrap_or(i64::MAX);
            redis::pipe()
                .atomic()
                .del(&events)
                .del(&meta)
                .hset_multiple(
                    &meta,
                    &[("state", "open"), ("bytes", "0"), ("trimmed", "0")],
                )
                .pexpire(&meta, ttl)
                .query_async::<()>(&mut self.conn.clone())
                .await
                .map_err(backend)
        })
    }

    fn append<'a>(
        &'a self,
        key: &'a StreamKey,
        seq: u64,
        event: Bytes,
        bounds: LogBounds,
    ) -> StoreFuture<'a, bool> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            let mut inv = self.scripts.append.key(events);
            inv.key(meta)
                .arg(seq)
                .arg(&event[..])
                .arg(bounds.events.max(1))
                .arg(bounds.bytes)
                .arg(millis(bounds.ttl))
                .arg(self.wake_channel());
            let whole: i64 = inv
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(whole == 1)
        })
    }

    fn finish<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            let mut inv = self.scripts.finish.key(events);
            inv.key(meta)
                .arg(millis(bounds.ttl))
                .arg(self.wake_channel());
            inv.invoke_async::<i64>(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(())
        })
    }

    fn read_after<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Option<LogRead>> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            let mut inv = self.scripts.read.key(events);
            inv.key(meta).arg(after).arg(max.max(1));
            let reply: RedisValue = inv
                .invoke_async(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            let items = match reply {
                RedisValue::Nil => return Ok(None),
                RedisValue::Array(items) => items,
                _ => return Err(StoreError::Corrupt),
            };
            let state = items
                .first()
                .and_then(bytes_of)
                .ok_or(StoreError::Corrupt)?;
            let last = items
                .get(1)
                .and_then(bytes_of)
                .and_then(seq_of)
                .ok_or(StoreError::Corrupt)?;
            let mut read = Vec::with_capacity(items.len().saturating_sub(2) / 2);
            for pair in items.get(2..).unwrap_or_default().chunks(2) {
                let [id, event] = pair else {
                    return Err(StoreError::Corrupt);
                };
                let seq = bytes_of(id).and_then(seq_of).ok_or(StoreError::Corrupt)?;
                let event = bytes_of(event).ok_or(StoreError::Corrupt)?;
                read.push((seq, Bytes::copy_from_slice(event)));
            }
            let reached = read.last().map_or(after, |(seq, _)| *seq) >= last;
            Ok(Some(LogRead {
                events: read,
                finished: state == b"done" && reached,
            }))
        })
    }

    fn wait<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            // Registered before the stream is looked at: a wake after the look is not missed.
            let waiting = Waiting::new(&self.waiters, events.clone());
            let notified = waiting.notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            let looked: Result<(Option<Vec<u8>>, RedisValue), _> = redis::pipe()
                .hget(&meta, "state")
                .cmd("XREVRANGE")
                .arg(&events)
                .arg("+")
                .arg("-")
                .arg("COUNT")
                .arg(1)
                .query_async(&mut self.conn.clone())
                .await;
            let more = match looked {
                Ok((None, _)) => true,
                Ok((Some(state), _)) if state == b"done" => true,
                Ok((_, RedisValue::Array(last))) => last
                    .first()
                    .and_then(|entry| match entry {
                        RedisValue::Array(e) => e.first().and_then(bytes_of).and_then(seq_of),
                        _ => None,
                    })
                    .is_some_and(|seq| seq > after),
                Ok(_) => false,
                // Redis away: the reader reads again after the timeout.
                Err(_) => false,
            };
            if !more {
                let _ = tokio::time::timeout(timeout, notified).await;
            }
        })
    }

    fn remove<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            let (events, meta) = self.stream_keys(key);
            redis::pipe()
                .del(&events)
                .del(&meta)
                .query_async::<()>(&mut self.conn.clone())
                .await
                .map_err(backend)
        })
    }
}

impl Forwarder for RedisStore {
    fn forward<'a>(&'a self, message: &'a Forwarded) -> StoreFuture<'a, ()> {
        Box::pin(async move {
            redis::cmd("PUBLISH")
                .arg(format!("{}:fwd", self.prefix))
                .arg(message.encode())
                .query_async::<i64>(&mut self.conn.clone())
                .await
                .map_err(backend)?;
            Ok(())
        })
    }

    fn subscribe(&self) -> mpsc::Receiver<Forwarded> {
        let (tx, rx) = mpsc::channel(self.forward_queue);
        let mut subs = self
            .subscribers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        subs.retain(|s| !s.is_closed());
        subs.push(tx);
        rx
    }
}
