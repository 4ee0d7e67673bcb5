//! A POST: its body read and checked (signature, scopes, the session or the stateless
//! revision's headers, batches by revision), then answered. A request (or a batch) runs as
//! an [`McpExchange`] and is answered with JSON or an event stream (the messages its handlers
//! send first, the answer last; in a session, a stream with event ids that outlives a
//! disconnect and resumes on a GET); an answer to one of the server's requests and a
//! cancellation are routed to the exchange they name; other notifications are dispatched and
//! accepted at once.

// Named, not the std prelude's glob: its `panic` would be ambiguous in `tokio::select!`.
use std::borrow::ToOwned;
use std::boxed::Box;
use std::string::{String, ToString};

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderValue;
use http::{Response, StatusCode};
use rpcwire_http::profile::{
    event_stream, read_post_body, refuse, sse_event, status, Body, StreamRelay,
};
use rpcwire_tokio::Caller;
use tokio::sync::mpsc;

use super::exchange::{McpExchange, Next};
use super::posted::{member_str, Posted};
use super::replies::{accepts, completed_answer, json_answer, rpc_error};
use super::server::Inner;
use super::session::{self, Active, Session};
use super::shared_stream::SharedRelay;
use super::stateless::{asks_stateless, removed_method, stateless_headers};
use super::store::{Forwarded, SessionChange, SharedStore, StreamKey};
use super::wire::{Mode, HEADER_SESSION_ID};
use crate::LogLevel;

/// What one POST asks of [`Inner::answer`].
struct Call {
    /// The request's id as a `notifications/cancelled` finds it (`Id::match_key`: the same
    /// JSON value, the same key); none for a batch or an invalid message.
    id: Option<String>,
    /// The client accepts JSON.
    json_ok: bool,
    /// The client accepts an event stream.
    sse_ok: bool,
    /// A batch (a session of a revision that takes them).
    batch: bool,
    /// `initialize` creating a session.
    init: bool,
    /// Who sent it, when anything reads it (the responder's anonymous caller otherwise).
    caller: Option<Arc<Caller>>,
    /// Of the stateless revision (2026-07-28), and its method: its result is completed
    /// (`resultType`, caching hints) and its errors get that revision's HTTP statuses.
    stateless: Option<String>,
}

impl Inner {
    pub(crate) async fn post<B>(
        self: Arc<Self>,
        parts: http::request::Parts,
        body: B,
        caller: Option<Arc<Caller>>,
    ) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (json_ok, sse_ok) = accepts(&parts.headers);
        let answerable = json_ok || sse_ok;
        let (max_body, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        let (parts, body) = match read_post_body(parts, body, answerable, max_body, timeout).await {
            Ok(read) => read,
            Err(refusal) => return *refusal,
        };
        #[cfg(feature = "signing")]
        if let Some(signing) = &self.signing {
            let checked = rpcwire_http::guard::signature_refused(
                signing,
                caller.as_ref(),
                &parts.headers,
                &body,
            );
            if let Err(r) = checked {
                return *r;
            }
        }
        // `posted` borrows a second handle on the body, so that the body itself can move on.
        let text = body.clone();
        let Some(posted) = Posted::of(&text) else {
            return rpc_error(StatusCode::BAD_REQUEST, -32700, "Parse error");
        };
        let is_initialize =
            posted.method() == Some("initialize") && matches!(posted, Posted::Request { .. });
        if let Err(r) = self.gate.method_allowed(caller.as_ref(), posted.method()) {
            return *r;
        }

        // The session (session revisions) or the header checks (the stateless revision,
        // which a session server serves too, to POSTs with no session id that name it).
        let stateless = match self.mode {
            Mode::Stateless => true,
            Mode::Sessions => {
                !parts.headers.contains_key(HEADER_SESSION_ID)
                    && asks_stateless(&parts.headers, &posted)
            }
        };
        let mut session = None;
        if stateless {
            if let Err(r) = stateless_headers(&parts.headers, &posted) {
                return *r;
            }
            if let Some(r) = removed_method(&posted) {
                return *r;
            }
        } else if !is_initialize {
            match self.named(&parts.headers, caller.as_ref()).await {
                Ok(s) => session = Some(s),
                Err(r) => return *r,
            }
        }
        let _active = session.as_ref().map(Session::hold);
        let session_key = session
            .as_ref()
            .map_or(String::new(), |s| s.id().to_owned());

        // A stateless request's handlers read its headers (the `Mcp-Param-*` headers a tool's
        // `x-mcp-header` parameters are checked against): the caller carries them even when
        // nothing else asked for one.
        let caller = match caller {
            None if stateless => Some(Arc::new(
                Caller::new(
                    rpcwire_tokio::Identity::anonymous(),
                    rpcwire_http::transport::HTTP,
                )
                .with_meta(parts.headers.clone()),
            )),
            caller => caller,
        };
        let mut call = Call {
            id: None,
            json_ok,
            sse_ok,
            batch: false,
            init: false,
            caller,
            stateless: stateless.then(|| posted.method().unwrap_or_default().to_owned()),
        };
        match posted {
            Posted::Batch => {
                // Batches: only revisions up to 2025-03-26 take them.
                let takes = session
                    .as_ref()
                    .and_then(|s| s.version())
                    .is_some_and(|v| !v.refuses_batches());
                if !takes {
                    return rpc_error(
                        StatusCode::BAD_REQUEST,
                        -32600,
                        "Invalid Request: this MCP revision does not take JSON-RPC batches",
                    );
                }
                call.batch = true;
                self.answer(session, body, call).await
            }
            Posted::Response => {
                if let Err(body) = self.routes.answer(&session_key, body.to_vec()).await {
                    // Not an answer to a request of this server's exchanges: with a shared
                    // store, an answer to one running on another replica (the server's wire
                    // ids are strings); else one to a request sent on the session's GET
                    // stream, which its connection matches (or drops).
                    match (&session, &self.store) {
                        (Some(_), Some(store)) if answers_wire_id(&body) => {
                            let forwarded = Forwarded::Answer {
                                session: session_key,
                                body,
                            };
                            if let Err(e) = store.forwarder.forward(&forwarded).await {
                                return *session::store_failed(&e);
                            }
                        }
                        (Some(s), _) => {
                            s.hub.deliver(Bytes::from(body)).await;
                        }
                        (None, _) => tracing::debug!("an answer to no pending request"),
                    }
                }
                status(StatusCode::ACCEPTED)
            }
            Posted::Notification { method, params } => {
                if method == "notifications/cancelled" {
                    let here = self
                        .routes
                        .cancel(&session_key, params, body.to_vec())
                        .await;
                    if let (false, Some(store), Some(_)) = (here, &self.store, &session) {
                        // Perhaps a request running on another replica.
                        let forwarded = Forwarded::Cancel {
                            session: session_key,
                            body: body.to_vec(),
                        };
                        if let Err(e) = store.forwarder.forward(&forwarded).await {
                            tracing::warn!(error = %e, "a cancellation was not forwarded");
                        }
                    }
                    return status(StatusCode::ACCEPTED);
                }
                if method == "notifications/initialized" {
                    if let Some(s) = &session {
                        let change = SessionChange::Initialized;
                        session::note_change(self.store.as_ref(), &self.sessions, s.id(), change)
                            .await;
                    }
                }
                // Other notifications are dispatched now and accepted at once: a handler that
                // waits finishes on its own (dropping the exchange leaves it running), and
                // what it sends has no way to the client.
                let caller = call
                    .caller
                    .unwrap_or_else(|| Arc::clone(self.responder.caller()));
                let mut exchange = self.responder.exchange(&caller, &body);
                while exchange.next().await.is_some() {}
                status(StatusCode::ACCEPTED)
            }
            Posted::Request { id, method, params } => {
                if method == "logging/setLevel" {
                    let level = member_str(params, "level")
                        .and_then(|l| LogLevel::from_bytes(l.as_bytes()));
                    if let (Some(s), Some(level)) = (&session, level) {
                        s.set_level(level);
                        let change = SessionChange::Level(level.as_str().to_owned());
                        session::note_change(self.store.as_ref(), &self.sessions, s.id(), change)
                            .await;
                    }
                }
                let mut session = session;
                if is_initialize && !stateless {
                    let made = match &self.store {
                        Some(store) => {
                            let params = params.and_then(|p| serde_json::from_str(p.as_str()).ok());
                            session::create_shared(
                                &self.sessions,
                                store,
                                (&self.endpoint, self.max_parked),
                                call.caller.as_ref(),
                                params,
                            )
                            .await
                        }
                        None => {
                            let (endpoint, caller) = (&self.endpoint, call.caller.as_ref());
                            session::create(&self.sessions, endpoint, self.max_parked, caller)
                                .map_err(|why| {
                                    Box::new(rpc_error(
                                        StatusCode::SERVICE_UNAVAILABLE,
                                        -32000,
                                        &why.to_string(),
                                    ))
                                })
                        }
                    };
                    match made {
                        Ok(s) => session = Some(s),
                        Err(r) => return *r,
                    }
                    call.init = true;
                }
                call.id = Some(id.match_key().into_owned());
                self.answer(session, body, call).await
            }
            Posted::Invalid => self.answer(session, body, call).await,
        }
    }

    /// Runs one POST's request (or batch) and answers with JSON or an event stream.
    async fn answer(
        self: Arc<Self>,
        session: Option<Arc<Session>>,
        body: Bytes,
        call: Call,
    ) -> Response<Body> {
        let Call {
            id,
            json_ok,
            sse_ok,
            batch,
            init,
            caller,
            stateless: stateless_method,
        } = call;
        let responder = if batch {
            &self.batch_responder
        } else {
            &self.responder
        };
        let caller = caller.unwrap_or_else(|| Arc::clone(responder.caller()));
        let deadline = tokio::time::Instant::now() + self.endpoint.timeout();
        let mut exchange = McpExchange::start(
            responder,
            &caller,
            &body,
            &self.routes,
            (session.clone(), id),
            deadline,
        );
        let session_header = session
            .as_ref()
            .and_then(|s| HeaderValue::from_str(s.id()).ok());
        let stateless = stateless_method.is_some();
        let versions = self.mode.versions();
        let complete = |answer: Bytes| match &stateless_method {
            Some(method) => completed_answer(method, answer, versions),
            None => answer,
        };
        let first = match exchange.next().await {
            Next::TimedOut => {
                return refuse(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n");
            }
            Next::End => return status(StatusCode::ACCEPTED),
            Next::Answer(answer) => {
                let answer = complete(answer);
                if let Some(s) = session.as_ref().filter(|_| init) {
                    let store = self.store.as_ref();
                    if !session::note_initialized(&self.sessions, store, s, &answer).await {
                        return json_answer(answer, stateless);
                    }
                }
                let mut r = if json_ok || !sse_ok {
                    json_answer(answer, stateless)
                } else {
                    let (tx, rx) = mpsc::channel(1);
                    let _ = tx.try_send(sse_event(&answer));
                    event_stream(rx)
                };
                if let Some(v) = session_header {
                    r.headers_mut().insert(HEADER_SESSION_ID, v);
                }
                return r;
            }
            first @ (Next::Message(_) | Next::Close) => first,
        };
        if !sse_ok {
            // JSON only: messages before the answer have no place (nor can the client answer
            // the server's requests); wait for the answer.
            loop {
                match exchange.next().await {
                    Next::Message(_) | Next::Close => {}
                    Next::Answer(answer) => return json_answer(complete(answer), stateless),
                    Next::End => return status(StatusCode::ACCEPTED),
                    Next::TimedOut => {
                        return refuse(StatusCode::SERVICE_UNAVAILABLE, "request timed out\n")
                    }
                }
            }
        }
        let (tx, rx) = mpsc::channel(8);
        match session {
            Some(session) => {
                let keep = session.hold();
                let run = (exchange, first, tx, init, keep);
                match self.store.clone() {
                    Some(store) => {
                        tokio::spawn(Arc::clone(&self).shared_session_stream(session, store, run))
                    }
                    None => tokio::spawn(Arc::clone(&self).session_stream(session, run)),
                };
            }
            None => {
                let method = stateless_method.unwrap_or_default();
                tokio::spawn(stateless_stream(exchange, first, tx, method, versions));
            }
        }
        let mut r = event_stream(rx);
        if let Some(v) = session_header {
            r.headers_mut().insert(HEADER_SESSION_ID, v);
        }
        r
    }

    /// A session's request stream: a priming event, then every message with an event id,
    /// each also kept for resumption. The request goes on when the client disconnects (or a
    /// handler closes the stream, [`CLOSE_STREAM`](super::CLOSE_STREAM)); a GET with
    /// `Last-Event-ID` then carries the rest. It is cancelled instead when the session
    /// already keeps the most detached streams, or when a detached stream outgrows its
    /// buffer.
    async fn session_stream(self: Arc<Self>, session: Arc<Session>, run: StreamRun) {
        let (mut exchange, mut next, tx, init, keep) = run;
        let _keep = keep;
        let id = session.next_stream.fetch_add(1, Ordering::Relaxed) + 1;
        let limits = self.endpoint.streams();
        let mut relay = StreamRelay::start(id, id, &session.detached, tx, limits).await;
        // Each `return` drops the relay (its buffer is finished) and the exchange (with no
        // client that could resume, the request is cancelled).
        loop {
            match next {
                Next::Message(m) => {
                    if !relay.send(&m).await {
                        return;
                    }
                }
                Next::Answer(answer) => {
                    if init {
                        session::note_initialized(&self.sessions, None, &session, &answer).await;
                    }
                    relay.send(&answer).await;
                    return;
                }
                Next::Close => {
                    if !relay.close() {
                        return;
                    }
                }
                Next::End | Next::TimedOut => return,
            }
            next = match relay.unless_gone(exchange.next()).await {
                Some(n) => n,
                None if relay.park() => exchange.next().await,
                None => return,
            };
        }
    }
}

/// What a session's request stream runs: the exchange, its first output, the client's
/// stream, whether it is `initialize`, and the hold that keeps the session active.
type StreamRun = (McpExchange, Next, mpsc::Sender<Bytes>, bool, Active);

impl Inner {
    /// [`session_stream`](Inner::session_stream) with a shared store: the stream is numbered
    /// by the store and its events appended to the store's log, so that the client may resume
    /// it on any replica.
    async fn shared_session_stream(
        self: Arc<Self>,
        session: Arc<Session>,
        store: SharedStore,
        run: StreamRun,
    ) {
        let (mut exchange, mut next, tx, init, keep) = run;
        let _keep = keep;
        let ttl = self.sessions.idle();
        let number = match store.sessions.next_stream(session.id(), ttl).await {
            Ok(0) | Err(_) => return, // the session ended, or the store is away
            Ok(n) => n,
        };
        let key = StreamKey {
            session: session.id().to_owned(),
            stream: number,
        };
        let limits = self.endpoint.streams();
        let log = Arc::clone(&store.events);
        let held = Arc::clone(&session);
        let mut relay = match SharedRelay::start(log, key, limits, ttl, held, tx).await {
            Ok(relay) => relay,
            Err(e) => {
                tracing::warn!(error = %e, "a request stream could not be stored");
                return;
            }
        };
        loop {
            match next {
                Next::Message(m) => {
                    if !relay.send(&m).await {
                        return;
                    }
                }
                Next::Answer(answer) => {
                    if init {
                        let store = Some(&store);
                        session::note_initialized(&self.sessions, store, &session, &answer).await;
                    }
                    relay.send(&answer).await;
                    return;
                }
                Next::Close => {
                    if !relay.close() {
                        return;
                    }
                }
                Next::End | Next::TimedOut => return,
            }
            next = match relay.unless_gone(exchange.next()).await {
                Some(n) => n,
                None if relay.park() => exchange.next().await,
                None => return,
            };
        }
    }
}

/// True for an answer whose id is a string: the wire ids the server gives its requests
/// ([`Routes`](super::routes::Routes)) are strings.
fn answers_wire_id(body: &[u8]) -> bool {
    serde_json::from_slice::<serde_json::Value>(body)
        .is_ok_and(|v| v.get("id").is_some_and(serde_json::Value::is_string))
}

/// A request's stream with no session (stateless): every message as an event, the answer
/// last. The client closing the stream cancels the request (the revision's rule): dropping
/// the exchange drops its handlers.
async fn stateless_stream(
    mut exchange: McpExchange,
    mut next: Next,
    tx: mpsc::Sender<Bytes>,
    method: String,
    versions: &'static [&'static str],
) {
    loop {
        match next {
            Next::Message(m) => {
                if tx.send(sse_event(&m)).await.is_err() {
                    return;
                }
            }
            Next::Answer(answer) => {
                let answer = if method.is_empty() {
                    answer
                } else {
                    completed_answer(&method, answer, versions)
                };
                let _ = tx.send(sse_event(&answer)).await;
                return;
            }
            // No resumption without a session: the stream stays open.
            Next::Close => {}
            Next::End | Next::TimedOut => return,
        }
        next = tokio::select! {
            next = exchange.next() => next,
            // The client went away while the handlers work: stop them now.
            () = tx.closed() => return,
        };
    }
}
