//! What one MCP session of the 2025-11-25 revision keeps (its revision, its log level, its
//! GET streams' hub, its request streams whose clients went away), how a request finds its
//! session, and whose a session is.

use std::prelude::rust_2021::*;

use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use http::header::HeaderMap;
use http::{Response, StatusCode};
use rpcwire_http::profile::{Body, Endpoint, EventHub, ParkedStreams};
use rpcwire_tokio::Caller;
use serde_json::Value;

use super::auth::owner_key;
use super::replies::{header_str, rpc_error};
use super::session_table::{self, SessionError, SessionHold, SessionState, SessionTable};
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
}

impl McpSession {
    /// The revision its `initialize` settled, once answered.
    pub(crate) fn version(&self) -> Option<ProtocolVersion> {
        *self.version.lock().unwrap_or_else(PoisonError::into_inner)
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
    caller: Option<&Arc<Caller>>,
) -> Result<Arc<Session>, SessionError> {
    let (max_body, streams) = (endpoint.max_body(), endpoint.streams());
    let owner = session_owner(caller);
    sessions.create(|_id| McpSession {
        owner,
        version: Mutex::new(None),
        level: Mutex::new(None),
        detached: ParkedStreams::default(),
        next_stream: AtomicU64::new(0),
        hub: {
            let hub = EventHub::start(mcp_builder(), max_body, streams);
            hub.end_streams_on(endpoint.shutdown());
            hub
        },
    })
}

/// The session a request names: `Err` is the answer (400 without one, 404 unknown). With
/// authentication, a session created by another identity is answered as unknown.
pub(crate) fn named(
    sessions: &Sessions,
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

/// Notes what an `initialize` answer settles for its session: the revision, or (an error)
/// that there is no session after all. False when the session was dropped.
pub(crate) fn note_initialized(sessions: &Sessions, session: &Session, answer: &[u8]) -> bool {
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
            true
        }
        None if v.get("error").is_some() => {
            sessions.remove(session.id());
            false
        }
        None => true,
    }
}
