//! What one MCP session of the 2025-11-25 revision keeps (its revision, its log level, its
//! GET streams' hub, its request streams whose clients went away), how a request finds its
//! session, and whose a session is.
//!
//! With a shared store ([`SharedStore`]) the store is where sessions live: the table is this
//! replica's cache of them, every request reads its session's record from the store (which
//! starts its time to live again, and says whether another replica ended it), and what
//! changes a session (its `initialize` answered, a log level, `notifications/initialized`)
//! is written there before the request is answered.

use std::prelude::rust_2021::*;

use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use http::header::HeaderMap;
use http::{Response, StatusCode};
use rpcwire_http::profile::{Body, Endpoint, EventHub, ParkedStreams};
use rpcwire_tokio::Caller;
use serde_json::Value;

use super::auth::owner_key;
use super::replies::{header_str, rpc_error};
use super::session_table::{self, SessionError, SessionHold, SessionState, SessionTable};
use super::store::{SessionChange, SessionRecord, SharedStore, StoreError};
use super::wire::HEADER_SESSION_ID;
use crate::tokio::mcp_builder;
use crate::{LogLevel, ProtocolVersion};

/// What an MCP session keeps.
pub(crate) struct McpSession {
    /// The identity that created it (issuer and subject), when requests are authenticated:
    /// only it may use the session.
    owner: Option<String>,
    version: Mutex<Option<ProtocolVersion>>,
    /// The level `logging/setLevel` set: log messages below it are not sent. Kept here, for
    /// the whole session: its POSTs are answered by whichever pooled connection is free.
    level: Mutex<Option<LogLevel>>,
    /// The GET streams: a connection of the session's own whose messages (server-initiated
    /// notifications and requests) go to every open GET stream.
    pub(crate) hub: Arc<EventHub>,
    /// Request streams whose clients went away, for resumption.
    pub(crate) detached: ParkedStreams,
    /// Numbers the session's request streams.
    pub(crate) next_stream: AtomicU64,
    /// With a shared store: this replica's streams of the session whose client went away
    /// (their events are in the store's log; bounded as `detached` is).
    pub(crate) shared_parked: AtomicUsize,
    /// The most streams of the session parked on this replica, with or without a store
    /// ([`McpHttpServer::max_parked_streams`](super::McpHttpServer::max_parked_streams)).
    pub(crate) max_parked: usize,
}

impl McpSession {
    /// The revision its `initialize` settled, once answered.
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes what a shared store's record says: the revision and the log level.
    fn follow(&self, record: &SessionRecord) {
        let version = record
            .version
            .as_deref()
            .and_then(|v| ProtocolVersion::from_bytes(v.as_bytes()));
        *self.version.lock().unwrap_or_else(PoisonError::into_inner) = version;
        let level = record
            .level
            .as_deref()
            .and_then(|l| LogLevel::from_bytes(l.as_bytes()));
        *self.level.lock().unwrap_or_else(PoisonError::into_inner) = level;
    }

    /// Sets the level below which log messages are dropped.
    pub(crate) fn set_level(&self, level: LogLevel) {
        *self.level.lock().unwrap_or_else(PoisonError::into_inner) = Some(level);
    }

    /// True for a log message (`notifications/message`) below the session's level.
    pub(crate) fn filters(&self, m: &[u8]) -> bool {
        let Some(min) = *self.level.lock().unwrap_or_else(PoisonError::into_inner) else {
            return false;
        };
        // Only log messages are looked at closely.
        if !m.windows(21).any(|w| w == b"notifications/message") {
            return false;
        }
        let Ok(v) = serde_json::from_slice::<Value>(m) else {
            return false;
        };
        v["method"] == "notifications/message"
            && v["params"]["level"]
                .as_str()
                .and_then(|l| LogLevel::from_bytes(l.as_bytes()))
                .is_some_and(|l| l < min)
    }
}

impl SessionState for McpSession {
    /// The session's GET streams end with it.
    fn on_end(&self) {
        self.hub.end_streams();
    }
}

/// A session in the table.
pub(crate) type Session = session_table::Session<McpSession>;
/// Holds a session active (a running request or an open GET stream).
pub(crate) type Active = SessionHold<McpSession>;
/// The server's sessions.
pub(crate) type Sessions = SessionTable<McpSession>;

/// Whose a session is: an authenticated caller's, or nobody's (an anonymous caller: the
/// one a traced server makes for every request, as well as an authenticator's).
fn session_owner(caller: Option<&Arc<Caller>>) -> Option<String> {
    caller
        .filter(|c| c.identity().is_authenticated())
        .map(|c| owner_key(c.identity()))
}

/// A new session for `caller`, or why there is none (the table is full of active sessions,
/// or no id could be made).
pub(crate) fn create(
    sessions: &Sessions,
    endpoint: &Endpoint,
    max_parked: usize,
    caller: Option<&Arc<Caller>>,
) -> Result<Arc<Session>, SessionError> {
    let owner = session_owner(caller);
    sessions.create(|_id| new_state(endpoint, max_parked, owner))
}

fn new_state(endpoint: &Endpoint, max_parked: usize, owner: Option<String>) -> McpSession {
    let (max_body, streams) = (endpoint.max_body(), endpoint.streams());
    McpSession {
        owner,
        version: Mutex::new(None),
        level: Mutex::new(None),
        detached: ParkedStreams::new(max_parked),
        next_stream: AtomicU64::new(0),
        shared_parked: AtomicUsize::new(0),
        max_parked,
        hub: {
            let hub = EventHub::start(mcp_builder(), max_body, streams);
            hub.end_streams_on(endpoint.shutdown());
            hub
        },
    }
}

/// A new session for `caller`, made in the shared store too, with what the client's
/// `initialize` (`params`) says of it; `Err` is the answer (503).
pub(crate) async fn create_shared(
    sessions: &Sessions,
    store: &SharedStore,
    (endpoint, max_parked): (&Endpoint, usize),
    caller: Option<&Arc<Caller>>,
    params: Option<Value>,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    let unavailable = |why: &str| Box::new(rpc_error(StatusCode::SERVICE_UNAVAILABLE, -32000, why));
    let session =
        create(sessions, endpoint, max_parked, caller).map_err(|e| unavailable(&e.to_string()))?;
    let params = params.unwrap_or_default();
    let record = SessionRecord {
        id: session.id().to_owned(),
        owner: session.owner.clone(),
        client_info: params.get("clientInfo").cloned(),
        client_capabilities: params.get("capabilities").cloned(),
        ..SessionRecord::default()
    };
    if let Err(e) = store.sessions.create(&record, sessions.idle()).await {
        sessions.remove(session.id());
        tracing::warn!(error = %e, "a session could not be stored");
        return Err(unavailable("the session store is unavailable"));
    }
    Ok(session)
}

/// Writes `change` to the shared store, if any; a failure is logged (the session goes on
/// as this replica knows it).
pub(crate) async fn note_change(
    store: Option<&SharedStore>,
    sessions: &Sessions,
    id: &str,
    change: SessionChange,
) {
    if let Some(store) = store {
        if let Err(e) = store.sessions.update(id, change, sessions.idle()).await {
            tracing::warn!(error = %e, "a session's change was not stored");
        }
    }
}

/// The session a request names: `Err` is the answer (400 without one, 404 unknown). With
/// authentication, a session created by another identity is answered as unknown.
pub(crate) async fn named(
    sessions: &Sessions,
    store: Option<&SharedStore>,
    (endpoint, max_parked): (&Endpoint, usize),
    headers: &HeaderMap,
    caller: Option<&Arc<Caller>>,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    let Some(id) = header_str(headers, HEADER_SESSION_ID) else {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            -32000,
            "Bad Request: Mcp-Session-Id header is required",
        )));
    };
    let owner = session_owner(caller);
    if let Some(store) = store {
        return shared(sessions, store, (endpoint, max_parked), id, owner).await;
    }
    match sessions.get(id) {
        Some(session) if session.state().owner == owner => Ok(session),
        found => {
            if found.is_some() {
                tracing::debug!("MCP request refused: a session of another identity");
            }
            Err(Box::new(rpc_error(
                StatusCode::NOT_FOUND,
                -32001,
                "Session not found",
            )))
        }
    }
}

fn not_found() -> Box<Response<Body>> {
    Box::new(rpc_error(
        StatusCode::NOT_FOUND,
        -32001,
        "Session not found",
    ))
}

/// [`named`] with a shared store: the record read (its time to live started again), this
/// replica's copy made or brought up to date.
async fn shared(
    sessions: &Sessions,
    store: &SharedStore,
    (endpoint, max_parked): (&Endpoint, usize),
    id: &str,
    owner: Option<String>,
) -> Result<Arc<Session>, Box<Response<Body>>> {
    let record = match store.sessions.load(id, sessions.idle()).await {
        Ok(Some(record)) => record,
        Ok(None) => {
            // Ended elsewhere (DELETE on another replica) or expired: this copy goes too.
            sessions.remove(id);
            return Err(not_found());
        }
        Err(e) => return Err(store_failed(&e)),
    };
    if record.owner != owner {
        tracing::debug!("MCP request refused: a session of another identity");
        return Err(not_found());
    }
    let session = match sessions.get(id) {
        Some(s) => s,
        None => {
            match sessions.insert_with(id.to_owned(), |_| new_state(endpoint, max_parked, owner)) {
                Ok(s) => s,
                // Another request of the session took it in first.
                Err(SessionError::Taken) => sessions.get(id).ok_or_else(not_found)?,
                Err(e) => {
                    return Err(Box::new(rpc_error(
                        StatusCode::SERVICE_UNAVAILABLE,
                        -32000,
                        &e.to_string(),
                    )))
                }
            }
        }
    };
    session.follow(&record);
    Ok(session)
}

/// Returns once the session `id` is gone from the shared store (ended on another replica, or
/// expired), reading it every [`SharedStore::session_check_every`] (by default a few times per
/// idle time: every 5 ms to 30 s), which starts its time to live again: what is held open on
/// this replica (a GET stream) keeps it alive everywhere, as it keeps it active here. A store
/// that fails is read again at the next tick.
pub(crate) async fn until_ended(store: &SharedStore, sessions: &Sessions, id: &str) {
    let every = store.session_check.unwrap_or_else(|| {
        (sessions.idle() / 4).clamp(Duration::from_millis(5), Duration::from_secs(30))
    });
    loop {
        tokio::time::sleep(every).await;
        if let Ok(None) = store.sessions.load(id, sessions.idle()).await {
            return;
        }
    }
}

/// The answer to a request the shared store failed (503).
pub(crate) fn store_failed(e: &StoreError) -> Box<Response<Body>> {
    tracing::warn!(error = %e, "the session store failed");
    Box::new(rpc_error(
        StatusCode::SERVICE_UNAVAILABLE,
        -32000,
        "the session store is unavailable",
    ))
}

/// Ends a session here and in the shared store, if any; false when there was none.
pub(crate) async fn end(sessions: &Sessions, store: Option<&SharedStore>, id: &str) -> bool {
    let here = sessions.remove(id);
    match store {
        Some(store) => match store.sessions.remove(id).await {
            Ok(there) => here || there,
            Err(e) => {
                tracing::warn!(error = %e, "a session's end was not stored");
                here
            }
        },
        None => here,
    }
}

/// Notes what an `initialize` answer settles for its session: the revision, or (an error)
/// that there is no session after all (here and in the shared store). False when the
/// session was dropped.
pub(crate) async fn note_initialized(
    sessions: &Sessions,
    store: Option<&SharedStore>,
    session: &Session,
    answer: &[u8],
) -> bool {
    let Ok(v) = serde_json::from_slice::<Value>(answer) else {
        return true;
    };
    match v.pointer("/result/protocolVersion").and_then(Value::as_str) {
        Some(version) => {
            *session
                .version
                .lock()
                .unwrap_or_else(PoisonError::into_inner) =
                ProtocolVersion::from_bytes(version.as_bytes());
            let change = SessionChange::Version(version.to_owned());
            note_change(store, sessions, session.id(), change).await;
            true
        }
        None if v.get("error").is_some() => {
            end(sessions, store, session.id()).await;
            false
        }
        None => true,
    }
}
