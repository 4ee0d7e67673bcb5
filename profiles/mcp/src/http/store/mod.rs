//! What replicas of one MCP server share so that any of them serves any session of the
//! 2025-11-25 revision, without sticky routing ([`McpHttpServer::store`]):
//!
//! - [`SessionStore`]: the sessions (what a replica needs to take a request in a session it
//!   did not create: the negotiated revision, the client's info and capabilities, whether it
//!   is initialized, its owner, its log level), each ending when idle past its time to live;
//! - [`EventLog`]: the events of every resumable request stream (append, read after an event
//!   id, trimmed to the stream's bounds in events and bytes), so that a client whose stream
//!   broke resumes it with `Last-Event-ID` on any replica, and a wait for new ones that a
//!   replica's append ends on every other;
//! - [`Forwarder`]: the client's answers to the server's requests (elicitation, sampling) and
//!   its cancellations, when they reach a replica other than the one running the request.
//!
//! [`MemoryStore`] keeps all three in one process (replicas that are tasks of one process,
//! tests); `RedisStore` (feature `redis`) in Redis or Valkey. With no store set the server
//! keeps its sessions in its own bounded table, as before: nothing here is on its path.
//!
//! The traits return boxed futures (object safe: a server holds an `Arc<dyn ...>`) and fail
//! with a [`StoreError`]; a request that meets one is answered 503.
//!
//! Settings, each with a documented default: how a server reads the logs
//! ([`SharedStore::reread_every`], [`SharedStore::read_batch`]) and its sessions
//! ([`SharedStore::session_check_every`]), how many forwarded messages
//! a replica may have waiting ([`MemoryStore::forward_queue`], and `RedisStoreOptions` with
//! the feature `redis`), the bounds of [`MemoryStore::new`].
//!
//! Two replicas in one process (each would be a process of its own on a `RedisStore`):
//!
//! ```
//! use std::sync::Arc;
//! use rpcwire_mcp::http::store::{MemoryStore, SharedStore};
//! use rpcwire_mcp::http::McpHttpServer;
//! use rpcwire_mcp::tokio::McpServer;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let store = SharedStore::new(Arc::new(MemoryStore::default()));
//! let a = McpHttpServer::new(McpServer::new("demo", "1.0")).store(store.clone()).build();
//! let b = McpHttpServer::new(McpServer::new("demo", "1.0")).store(store).build();
//! // A session `initialize`d on `a` is served by `b`: serve both behind any load balancer.
//! # drop((a, b));
//! # }
//! ```
//!
//! [`McpHttpServer::store`]: super::McpHttpServer::store

mod memory;
#[cfg(feature = "redis")]
mod redis;

use std::prelude::rust_2021::*;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::{json, Value};

pub use memory::MemoryStore;
#[cfg(feature = "redis")]
pub use redis::{RedisStore, RedisStoreError, RedisStoreOptions};

/// The default of [`MemoryStore::forward_queue`] (and of `RedisStoreOptions::forward_queue`):
/// how many forwarded messages a replica may have waiting.
pub const DEFAULT_FORWARD_QUEUE: usize = 64;

/// The default of [`SharedStore::reread_every`]: the longest a resumed stream waits for a
/// wake-up before it reads its log again.
pub const DEFAULT_REREAD: Duration = Duration::from_secs(1);

/// The default of [`SharedStore::read_batch`]: how many events one read of a log takes.
pub const DEFAULT_READ_BATCH: usize = 64;

/// A store operation's future.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store holds the most it may (sessions or streams): nothing was added.
    #[error("the store is full")]
    Full,
    /// A session id already in the store (never overwritten).
    #[error("the session id is in use")]
    Taken,
    /// A stored record could not be read back (written by something else?).
    #[error("a stored record could not be read")]
    Corrupt,
    /// The store's backend failed (Redis unreachable, say).
    #[error("the store failed")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// One session as replicas share it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SessionRecord {
    /// The session's id (`Mcp-Session-Id`).
    pub id: String,
    /// The identity that created it (issuer and subject), when requests are authenticated:
    /// only it may use the session.
    pub owner: Option<String>,
    /// The revision its `initialize` settled, once answered.
    pub version: Option<String>,
    /// The client's `clientInfo`, from its `initialize`.
    pub client_info: Option<Value>,
    /// The client's `capabilities`, from its `initialize`.
    pub client_capabilities: Option<Value>,
    /// Whether the client sent `notifications/initialized`.
    pub initialized: bool,
    /// The level `logging/setLevel` set.
    pub level: Option<String>,
}

impl SessionRecord {
    /// The record as one JSON text (how the stores keep it).
    pub fn to_json(&self) -> String {
        json!({
            "id": self.id,
            "owner": self.owner,
            "version": self.version,
            "clientInfo": self.client_info,
            "capabilities": self.client_capabilities,
            "initialized": self.initialized,
            "level": self.level,
        })
        .to_string()
    }

    /// A record read back from [`to_json`](Self::to_json)'s text.
    pub fn from_json(text: &[u8]) -> Result<Self, StoreError> {
        let v: Value = serde_json::from_slice(text).map_err(|_| StoreError::Corrupt)?;
        let text_of = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        let value_of = |k: &str| v.get(k).filter(|x| !x.is_null()).cloned();
        Ok(SessionRecord {
            id: text_of("id").ok_or(StoreError::Corrupt)?,
            owner: text_of("owner"),
            version: text_of("version"),
            client_info: value_of("clientInfo"),
            client_capabilities: value_of("capabilities"),
            initialized: v.get("initialized").and_then(Value::as_bool) == Some(true),
            level: text_of("level"),
        })
    }
}

/// A change to a stored session ([`SessionStore::update`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionChange {
    /// Its `initialize` was answered with this revision.
    Version(String),
    /// `logging/setLevel` set this level.
    Level(String),
    /// The client sent `notifications/initialized`.
    Initialized,
}

impl SessionChange {
    /// Applies the change to `record`.
    pub fn apply(&self, record: &mut SessionRecord) {
        match self {
            SessionChange::Version(v) => record.version = Some(v.clone()),
            SessionChange::Level(l) => record.level = Some(l.clone()),
            SessionChange::Initialized => record.initialized = true,
        }
    }
}

/// The sessions replicas share. Every session ends once unused for its time to live (`ttl`,
/// the server's idle timeout): each operation on it starts that time again.
pub trait SessionStore: Send + Sync + 'static {
    /// Adds `record`; [`StoreError::Taken`] when its id is in use.
    fn create<'a>(&'a self, record: &'a SessionRecord, ttl: Duration) -> StoreFuture<'a, ()>;

    /// The session `id`, its time to live started again; `None` when there is none (never
    /// made, ended, or expired).
    fn load<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Applies `change` to the session `id`; false when there is none.
    fn update<'a>(
        &'a self,
        id: &'a str,
        change: SessionChange,
        ttl: Duration,
    ) -> StoreFuture<'a, bool>;

    /// Ends the session `id` (its streams' events go with their own time to live); false when
    /// there was none.
    fn remove<'a>(&'a self, id: &'a str) -> StoreFuture<'a, bool>;

    /// The next number for a request stream of session `id` (1, 2, ...: the `<stream>` of its
    /// event ids `p<stream>-<seq>`, unique in the session whichever replica opens it); 0 when
    /// there is no such session.
    fn next_stream<'a>(&'a self, id: &'a str, ttl: Duration) -> StoreFuture<'a, u64>;
}

/// One resumable stream: the session's id and the stream's number in it. Events are kept,
/// read and waited for by key: a replay never crosses into another stream, nor another
/// session's.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamKey {
    /// The session's id.
    pub session: String,
    /// The stream's number in it.
    pub stream: u64,
}

/// The bounds of one stream's log: the most events and bytes held (the oldest go first; the
/// newest is always kept), and how long the log lives after its last append.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LogBounds {
    /// The most events held.
    pub events: usize,
    /// The most bytes held (the events' own bytes).
    pub bytes: usize,
    /// How long the log lives after its last change.
    pub ttl: Duration,
}

/// What [`EventLog::read_after`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRead {
    /// The events after the one asked for, in order: (seq, encoded event).
    pub events: Vec<(u64, Bytes)>,
    /// True when the stream is finished and `events` reach its last event.
    pub finished: bool,
}

/// The event logs of resumable streams. Sequence numbers start at 1 and each append takes
/// the next one.
pub trait EventLog: Send + Sync + 'static {
    /// Opens the stream `key` (no events yet; a read finds it; one opened before starts
    /// empty again), or fails when the store holds the most streams it may.
    fn open<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()>;

    /// Appends event `seq` (encoded) to `key`, trimming the oldest past `bounds`; false when
    /// some were trimmed (a client resuming from before them would miss events).
    fn append<'a>(
        &'a self,
        key: &'a StreamKey,
        seq: u64,
        event: Bytes,
        bounds: LogBounds,
    ) -> StoreFuture<'a, bool>;

    /// Marks the stream finished: its last event is in.
    fn finish<'a>(&'a self, key: &'a StreamKey, bounds: LogBounds) -> StoreFuture<'a, ()>;

    /// At most `max` events after `after` (0: from the start); `None` when the stream is
    /// unknown (never opened, or expired) or an event after `after` was already trimmed.
    fn read_after<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        max: usize,
    ) -> StoreFuture<'a, Option<LogRead>>;

    /// Returns once the stream may hold an event after `after` or be finished (appended on
    /// any replica), or after `timeout` at the latest: a reader reads again then.
    fn wait<'a>(
        &'a self,
        key: &'a StreamKey,
        after: u64,
        timeout: Duration,
    ) -> Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

    /// Forgets the stream (a client had all of it).
    fn remove<'a>(&'a self, key: &'a StreamKey) -> StoreFuture<'a, ()>;
}

/// A body one replica got for a request another replica runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forwarded {
    /// The client's answer to one of the server's requests (its id is the server's wire id).
    Answer {
        /// The session it was POSTed in.
        session: String,
        /// The answer as POSTed.
        body: Vec<u8>,
    },
    /// `notifications/cancelled` for a request of the session.
    Cancel {
        /// The session it was POSTed in.
        session: String,
        /// The notification as POSTed.
        body: Vec<u8>,
    },
}

impl Forwarded {
    /// The message as the stores carry it: `a` or `c`, the session id, a newline, the body.
    pub fn encode(&self) -> Vec<u8> {
        let (tag, session, body) = match self {
            Forwarded::Answer { session, body } => (b'a', session, body),
            Forwarded::Cancel { session, body } => (b'c', session, body),
        };
        let mut out = Vec::with_capacity(session.len() + body.len() + 2);
        out.push(tag);
        out.extend_from_slice(session.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(body);
        out
    }

    /// A message read back from [`encode`](Self::encode)'s form.
    pub fn decode(message: &[u8]) -> Option<Self> {
        let (&tag, rest) = message.split_first()?;
        let at = rest.iter().position(|&b| b == b'\n')?;
        let session = std::str::from_utf8(rest.get(..at)?).ok()?.to_owned();
        let body = rest.get(at + 1..)?.to_vec();
        match tag {
            b'a' => Some(Forwarded::Answer { session, body }),
            b'c' => Some(Forwarded::Cancel { session, body }),
            _ => None,
        }
    }
}

/// Carries [`Forwarded`] bodies to every replica (each takes those of its own requests and
/// ignores the rest).
pub trait Forwarder: Send + Sync + 'static {
    /// Sends `message` to every replica.
    fn forward<'a>(&'a self, message: &'a Forwarded) -> StoreFuture<'a, ()>;

    /// The messages forwarded by any replica, this one's included: every receiver gets each
    /// one. Bounded (the store's forward queue, [`DEFAULT_FORWARD_QUEUE`] by default): a
    /// receiver holds at most that many unread; past it newer messages are dropped, never
    /// waited for (the request an answer was for then waits until its own time limit).
    fn subscribe(&self) -> tokio::sync::mpsc::Receiver<Forwarded>;
}

/// The three parts of a shared store, as a server holds them, and how the server reads the
/// event logs.
#[derive(Clone)]
pub struct SharedStore {
    pub(crate) sessions: Arc<dyn SessionStore>,
    pub(crate) events: Arc<dyn EventLog>,
    pub(crate) forwarder: Arc<dyn Forwarder>,
    /// [`reread_every`](Self::reread_every).
    pub(crate) reread: Duration,
    /// [`read_batch`](Self::read_batch).
    pub(crate) read_batch: usize,
    /// [`session_check_every`](Self::session_check_every); `None`: from the idle time.
    pub(crate) session_check: Option<Duration>,
}

impl std::fmt::Debug for SharedStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedStore")
            .field("reread", &self.reread)
            .field("read_batch", &self.read_batch)
            .field("session_check", &self.session_check)
            .finish_non_exhaustive()
    }
}

impl SharedStore {
    /// A store of all three parts in one (as [`MemoryStore`] and `RedisStore` are).
    pub fn new<S: SessionStore + EventLog + Forwarder>(store: Arc<S>) -> Self {
        Self::from_parts(
            Arc::clone(&store) as Arc<dyn SessionStore>,
            Arc::clone(&store) as Arc<dyn EventLog>,
            store,
        )
    }

    /// A store of three parts kept apart.
    pub fn from_parts(
        sessions: Arc<dyn SessionStore>,
        events: Arc<dyn EventLog>,
        forwarder: Arc<dyn Forwarder>,
    ) -> Self {
        SharedStore {
            sessions,
            events,
            forwarder,
            reread: DEFAULT_REREAD,
            read_batch: DEFAULT_READ_BATCH,
            session_check: None,
        }
    }

    /// The longest a resumed stream (a GET with `Last-Event-ID`) waits for a wake-up before
    /// it reads its log again (default [`DEFAULT_REREAD`], 1 s; at least 1 ms). Wake-ups
    /// come with each append, from any replica; this bounds how late an event whose wake-up
    /// was lost (Redis pub/sub delivers at most once) reaches the client, at the cost of one
    /// read per interval and open resumed stream.
    pub fn reread_every(mut self, every: Duration) -> Self {
        self.reread = every.max(Duration::from_millis(1));
        self
    }

    /// How many events one read of a log takes (default [`DEFAULT_READ_BATCH`], 64; at least
    /// 1): a resumed stream's memory for events not yet sent, and its reads per event.
    pub fn read_batch(mut self, events: usize) -> Self {
        self.read_batch = events.max(1);
        self
    }

    /// How often a session's open GET stream reads the session from the store (at least
    /// 1 ms): each read starts the session's time to live again there, and the stream ends
    /// once the session is gone (ended on another replica, or expired). By default a quarter
    /// of the server's [`idle_timeout`](super::McpHttpServer::idle_timeout), between 5 ms and
    /// 30 s: with the default 10 min idle time, a GET stream outlives a DELETE on another
    /// replica by up to 30 s.
    pub fn session_check_every(mut self, every: Duration) -> Self {
        self.session_check = Some(every.max(Duration::from_millis(1)));
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_and_forwarded_messages_round_trip() {
        let r = SessionRecord {
            id: "s-1".into(),
            owner: Some("iss sub".into()),
            version: Some("2025-11-25".into()),
            client_info: Some(json!({"name": "c", "version": "1"})),
            client_capabilities: Some(json!({"elicitation": {}})),
            initialized: true,
            level: Some("info".into()),
        };
        assert_eq!(
            SessionRecord::from_json(r.to_json().as_bytes()).ok(),
            Some(r)
        );
        assert!(matches!(
            SessionRecord::from_json(b"{}"),
            Err(StoreError::Corrupt)
        ));
        for m in [
            Forwarded::Answer {
                session: "s-1".into(),
                body: b"{\"a\":\n1}".to_vec(),
            },
            Forwarded::Cancel {
                session: String::new(),
                body: Vec::new(),
            },
        ] {
            assert_eq!(Forwarded::decode(&m.encode()), Some(m));
        }
        assert_eq!(Forwarded::decode(b"xs\n{}"), None);
        assert_eq!(Forwarded::decode(b"as-no-newline"), None);
    }
}
