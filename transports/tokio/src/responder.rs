//! Answering one whole message body at a time in the caller's task, with no connection task:
//! what a request/response transport (an HTTP POST) needs for each body whose handlers never
//! talk back to the peer.
//!
//! A connection ([`Builder::run_inline`]) costs channels, a [`Client`] and a driver per body;
//! a [`Responder`] keeps a few core connections in a pool and runs the body through one of
//! them: the core still parses, validates and answers every message (every protocol rule
//! stays in one place), and the handlers are the [`Router`]'s, run exactly as a driver runs
//! them (in place when they finish at once, in tasks under the concurrency limit when they
//! wait).

use std::cell::OnceCell;
use std::sync::{Arc, Mutex};

use rpcwire::wire::classify::is_batch_text;
use rpcwire::wire::framing::split_frame;
use rpcwire::wire::scan::ScanError;
use rpcwire::wire::{parse, Framing, Message, ParseLimits, Parsed, RxBuffer};
use rpcwire::{Config, ErrorCode, Inbound, Input, Instant};
use tokio::sync::mpsc;

use crate::caller::Caller;
use crate::controls::Controls;
use crate::handlers::Handlers;
use crate::router::{forbidden, guarded, CatchUnwind, Conn, Found, Origin, OriginId};
use crate::telemetry;
use crate::{Builder, Client, Router};

/// Connections kept for reuse: enough for every worker of a busy server to find one, few
/// enough that an idle server holds next to nothing.
const POOL: usize = 32;

/// The framing of a pooled connection: what [`drain`] takes apart.
const FRAMING: Framing = Framing::ContentLength;

/// Bytes of buffers a pooled connection may keep; one that grew past this for a large body
/// gives it back before it returns to the pool.
const KEEP: usize = 8 << 10;

/// Answers whole message bodies (a request, a notification, or a batch) in the caller's task:
/// made by [`Builder::responder`], with that builder's router, limits and concurrency.
///
/// It answers any body, but a handler that reads a [`Context`](crate::Context) gets a peer
/// with no connection behind it (its calls and notifications to the peer fail with
/// [`CallError::Closed`](crate::CallError::Closed)). [`takes`](Responder::takes) tells
/// whether a body calls only handlers that do not: run other bodies on a connection
/// ([`Builder::run_inline`]) instead.
///
/// ```
/// use rpcwire_tokio::{Builder, Router, RpcError};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let router = Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
/// let responder = Builder::new().router(router).responder();
/// let body = br#"[{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1},{"jsonrpc":"2.0","method":"nope","id":2}]"#;
/// assert!(responder.takes(body));
/// let mut answer = Vec::new();
/// responder.respond(body, &mut answer).await;
/// assert_eq!(
///     String::from_utf8(answer).unwrap(),
///     r#"[{"jsonrpc":"2.0","result":19,"id":1},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}]"#
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct Responder {
    shared: Arc<Shared>,
}

struct Shared {
    config: Config,
    concurrency: usize,
    router: Option<Arc<Router>>,
    /// Handed to handlers as their peer: no connection is behind it.
    detached: Client,
    /// The caller of bodies answered by [`Responder::respond`] (the builder's, see
    /// [`Builder::caller`]).
    caller: Arc<Caller>,
    /// The profile's cancel notification: a body holding one needs a connection.
    cancel_method: Option<String>,
    /// No handler reads a context and there is no cancel notification: every body is taken
    /// without a look.
    takes_all: bool,
    /// Boxed: a connection task that awaits [`Responder::respond`] holds a pointer, not a
    /// core connection, for its whole life.
    #[allow(clippy::vec_box)]
    pool: Mutex<Vec<Box<Slot>>>,
}

/// A core connection with its receive buffer, and a decoder for what it sends.
struct Slot {
    conn: Conn,
    rx: RxBuffer<Vec<u8>>,
    /// Kept with the connection: a new one allocates (its task set), and a slot goes back to
    /// the pool only with no handler left in it.
    handlers: Handlers,
    /// Where the body being answered started in the connection's counters (for the batch
    /// size; kept here, not in the answering future, whose size every request pays).
    batch_mark: u64,
    /// Position in the router of the method called last: tried before the lookup by name
    /// (most bodies call the method the body before called).
    last_method: Option<usize>,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("router", &self.shared.router)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// A [`Responder`] answering whole bodies with this builder's router, limits and
    /// concurrency (the framing does not apply: a body is one JSON text).
    pub fn responder(&self) -> Responder {
        let (cmd, _) = mpsc::channel(1);
        let ctl = Controls::detached();
        Responder {
            shared: Arc::new(Shared {
                config: Config {
                    // The body is framed here by its length, so it may hold any JSON text.
                    framing: FRAMING,
                    // Nothing is called from here, so nothing times out.
                    request_timeout: None,
                    ..self.config
                },
                concurrency: self.concurrency,
                router: self.router.clone(),
                detached: Client::new(cmd, ctl, None),
                caller: self.caller_or_anonymous(),
                cancel_method: self.cancel.as_ref().map(|c| c.method.clone()),
                takes_all: self.cancel.is_none()
                    && !self
                        .router
                        .as_ref()
                        .is_some_and(|r| r.reads_context_anywhere()),
                pool: Mutex::new(Vec::new()),
            }),
        }
    }
}

impl Responder {
    /// True when every message of `body` that runs a handler runs one that does not read a
    /// [`Context`](crate::Context) (and none is the profile's cancel notification): [`respond`](Self::respond)
    /// then answers it exactly as a connection would. A body that is not valid JSON counts
    /// as taken (the answer is the core's Parse error).
    pub fn takes(&self, body: &[u8]) -> bool {
        if self.takes_every_body() {
            return true;
        }
        let limits = ParseLimits {
            max_depth: self.shared.config.max_depth,
        };
        self.takes_parsed(parse(body, limits))
    }

    /// True when [`takes`](Self::takes) takes every body without looking at it (no handler
    /// reads a [`Context`](crate::Context), and there is no cancel notification): an adapter
    /// need not parse a body to ask.
    pub fn takes_every_body(&self) -> bool {
        self.shared.router.is_none() || self.shared.takes_all
    }

    /// [`takes`](Self::takes) for a body already parsed ([`parse`]'s result, a parse error
    /// included): for an adapter that has parsed the body to sort it, so that it is parsed
    /// once.
    pub fn takes_parsed(&self, parsed: Result<Parsed<'_>, ScanError>) -> bool {
        let Some(router) = &self.shared.router else {
            return true;
        };
        if self.takes_every_body() {
            return true;
        }
        let takes_one = |element: Result<Message<'_>, _>| match element {
            Ok(Message::Request(r)) => !router.reads_context(r.method.escaped_bytes(), true),
            Ok(Message::Notification(n)) => {
                let method = n.method.to_str();
                self.shared.cancel_method.as_deref() != Some(&*method)
                    && !router.reads_context(method.as_bytes(), false)
            }
            _ => true,
        };
        match parsed {
            Ok(Parsed::Single(element)) => takes_one(element),
            Ok(Parsed::Batch(batch)) => batch.iter().all(takes_one),
            Ok(Parsed::EmptyBatch) | Err(_) => true,
        }
    }

    /// Answers `body`: appends the answer's JSON text to `answer` (a response, or an array of
    /// them for a batch) once every request of it is answered; nothing when it holds no
    /// request (notifications only, or only responses). Notification handlers that wait run
    /// on in tasks of their own.
    ///
    /// Dropping the future (a deadline) drops the handlers that are still waiting.
    pub async fn respond(&self, body: &[u8], answer: &mut Vec<u8>) {
        self.run(body, answer, false, &self.shared.caller).await;
    }

    /// The caller of bodies answered by [`respond`](Self::respond): the builder's, or
    /// anonymous.
    pub fn caller(&self) -> &Arc<Caller> {
        &self.shared.caller
    }

    /// [`respond`](Self::respond) for a body from `caller` (one HTTP request's identity and
    /// metadata): its handlers see it in their [`Context`](crate::Context), and the router's
    /// access rules decide by its identity.
    pub async fn respond_as(&self, caller: &Arc<Caller>, body: &[u8], answer: &mut Vec<u8>) {
        self.run(body, answer, false, caller).await;
    }

    /// [`respond`](Self::respond) for a body that [`takes`](Self::takes) takes, with one
    /// parse where `takes` and `respond` make two: true when it was answered. A body of one
    /// message whose handler reads a [`Context`] (or the profile's cancel notification) is
    /// let go as soon as that is known, with nothing run and nothing written, and so is a
    /// batch (unless [`takes_every_body`](Self::takes_every_body)): false, run it on a
    /// connection.
    ///
    /// [`Context`]: crate::Context
    pub async fn respond_if_taken(&self, body: &[u8], answer: &mut Vec<u8>) -> bool {
        if !self.takes_every_body() && is_batch_text(body) {
            return false;
        }
        self.run(body, answer, true, &self.shared.caller).await
    }

    /// [`respond_if_taken`](Self::respond_if_taken) for a body from `caller` (see
    /// [`respond_as`](Self::respond_as)).
    pub async fn respond_if_taken_as(
        &self,
        caller: &Arc<Caller>,
        body: &[u8],
        answer: &mut Vec<u8>,
    ) -> bool {
        if !self.takes_every_body() && is_batch_text(body) {
            return false;
        }
        self.run(body, answer, true, caller).await
    }

    /// Answers `body`; with `only_taken`, lets go of a message (and stops) whose handler reads
    /// a context, returning false.
    async fn run(
        &self,
        body: &[u8],
        answer: &mut Vec<u8>,
        only_taken: bool,
        caller: &Arc<Caller>,
    ) -> bool {
        let shared = &*self.shared;
        // Nothing can be let go when every body is taken.
        let only_taken = only_taken && !self.takes_every_body();
        let mut slot = shared
            .pool
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_else(|| {
                Box::new(Slot {
                    conn: Conn::new(shared.config),
                    rx: RxBuffer::with_max_frame(FRAMING, shared.config.max_frame),
                    // No cancel notification reaches a body answered here (`takes` refuses
                    // them).
                    handlers: Handlers::new(true),
                    batch_mark: u64::MAX,
                    last_method: None,
                })
            });
        let first = answer.len();
        // Field by field: `batch_mark` and `last_method` are reached through `slot` when
        // needed, so that no reference to them is kept across the waits below.
        let (conn, rx, handlers) = (&mut slot.conn, &mut slot.rx, &mut slot.handlers);
        // The body is one whole frame: handed over as it is, with no framing to find. The
        // buffer of a pooled slot is empty (only clean ones go back to the pool), and an empty
        // buffer takes a whole frame.
        if !rx.push_frame(body) {
            // Not seen: emptied, a buffer takes any whole frame.
            rx.clear();
            rx.push_frame(body);
        }
        let mut taken = true;
        slot.batch_mark = telemetry::batch_body_mark(|| conn.stats());
        loop {
            match conn.handle_input(Instant::ZERO, rx, &mut &[][..]) {
                Input::Item(item) => {
                    let last = &mut slot.last_method;
                    if !shared.dispatch(item, conn, handlers, last, only_taken, caller) {
                        // Let go whole: the frame goes too, and the slot back to the pool.
                        rx.clear();
                        taken = false;
                        break;
                    }
                }
                Input::Blocked => drain(conn, answer, first),
                Input::NeedMore | Input::Closed => {
                    let is_batch = body.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[');
                    telemetry::batch_body_done(slot.batch_mark, is_batch, || conn.stats());
                    break;
                }
            }
            // Within the concurrency limit, as on a connection: wait for a slot to free.
            while handlers.running() >= shared.concurrency {
                handlers.write_answers(conn);
                drain(conn, answer, first);
                if handlers.running() < shared.concurrency {
                    break;
                }
                if let Some(done) = handlers.tasks().join_next().await {
                    handlers.finished(done);
                }
            }
        }
        // The requests that wait.
        loop {
            handlers.write_answers(conn);
            drain(conn, answer, first);
            if handlers.running() == 0 {
                break;
            }
            // None: the answers left wait for transmit room only, made by the drain above.
            if let Some(done) = handlers.tasks().join_next().await {
                handlers.finished(done);
            }
        }
        let clean = conn.inflight_len() == 0 && rx.buffered() == 0 && handlers.is_idle();
        if clean {
            if conn.storage_bytes() > KEEP {
                conn.shrink();
            }
            rx.shrink(KEEP);
            if let Ok(mut pool) = shared.pool.lock() {
                if pool.len() < POOL {
                    pool.push(slot);
                }
            }
        }
        taken
    }
}

impl Shared {
    /// Runs the handler of one inbound item, as a connection's driver does. With
    /// `only_taken`, an item whose handler reads a context is let go (a request released with
    /// no answer), and the result is false.
    fn dispatch(
        &self,
        item: Inbound<'_>,
        conn: &mut Conn,
        handlers: &mut Handlers,
        last_method: &mut Option<usize>,
        only_taken: bool,
        caller: &Arc<Caller>,
    ) -> bool {
        let router = self.router.as_deref();
        match item {
            Inbound::Request(req) => {
                let found =
                    router.and_then(|r| r.find_method(req.method.escaped_bytes(), *last_method));
                if only_taken && found.as_ref().is_some_and(|(_, context)| *context) {
                    // A handle the connection just gave: releasing it cannot fail.
                    let _ = conn.release(req.handle);
                    return false;
                }
                let found = found.map(|(found, _)| found);
                let wire_name;
                let (method, handler, meter) = match found {
                    Some(Found::Named {
                        at,
                        name,
                        run,
                        meter,
                    }) => {
                        *last_method = Some(at);
                        (name, run, Some(meter))
                    }
                    Some(Found::Fallback(run)) => {
                        wire_name = req.method.to_str();
                        (&*wire_name, run, None)
                    }
                    None => {
                        let _ = conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND);
                        telemetry::not_found(&req.method.to_str(), req.id.raw(), caller);
                        return true;
                    }
                };
                let origin = Origin {
                    peer: &self.detached,
                    cancel: OnceCell::new(),
                    state: router.and_then(Router::state),
                    details: router.and_then(Router::details),
                    id: Some(OriginId::Wire(req.id)),
                    method,
                    caller,
                    unsampled: std::cell::Cell::new(0),
                };
                let permitted = router.is_none_or(|r| r.permits(caller.identity(), method));
                let handler = if permitted {
                    handler
                } else {
                    telemetry::reject(telemetry::Rejection::Authorization);
                    forbidden()
                };
                let params = req.params;
                handlers.start_request(handler, &origin, params, conn, req.handle, meter, None);
            }
            Inbound::Notification(n) => {
                let method = n.method.to_str();
                if only_taken
                    && (self.cancel_method.as_deref() == Some(&*method)
                        || router.is_some_and(|r| r.reads_context(method.as_bytes(), false)))
                {
                    return false;
                }
                let Some(handler) = router.and_then(|r| r.get_notification(&method)) else {
                    tracing::debug!(%method, "notification ignored: no handler");
                    return true;
                };
                if !router.is_none_or(|r| r.permits(caller.identity(), &method)) {
                    tracing::debug!(
                        %method,
                        subject = caller.identity().subject(),
                        "notification refused by the access rules: dropped"
                    );
                    return true;
                }
                let origin = Origin {
                    peer: &self.detached,
                    cancel: OnceCell::new(),
                    state: router.and_then(Router::state),
                    details: router.and_then(Router::details),
                    id: None,
                    method: &method,
                    caller,
                    unsampled: std::cell::Cell::new(0),
                };
                match guarded(|| handler(&origin, n.params)) {
                    // Not waited for: a notification has no answer to hold the body's up.
                    Ok(Some(fut)) => {
                        tokio::spawn(async move {
                            if CatchUnwind(fut).await.is_err() {
                                tracing::error!("notification handler panicked");
                            }
                        });
                    }
                    Ok(None) => {}
                    Err(()) => tracing::error!(%method, "notification handler panicked"),
                }
            }
            Inbound::Response(_) => {
                tracing::debug!("a response in a body answered by a responder: dropped");
            }
            Inbound::Problem(p) => {
                tracing::debug!(problem = ?p, replied = p.replied(), "peer problem");
            }
        }
        true
    }
}

/// Moves what the core has to send into `answer`, without its framing: the first message
/// only (a body has one answer; the core writes nothing else for it), appended after
/// `answer[..first]`. The core queues whole frames (a batch reply is put together apart and
/// queued whole), so they are read where they lie.
fn drain(conn: &mut Conn, answer: &mut Vec<u8>, first: usize) {
    loop {
        let out = conn.poll_transmit();
        if out.is_empty() {
            break;
        }
        let mut rest = out;
        while !rest.is_empty() {
            let Some((frame, len)) = split_frame(FRAMING, rest) else {
                tracing::error!(len = rest.len(), "queued output that is not a whole frame");
                break;
            };
            if answer.len() == first {
                answer.extend_from_slice(frame);
            } else {
                tracing::warn!("a second answer for one body: dropped");
            }
            rest = rest.get(len..).unwrap_or(&[]);
        }
        let taken = out.len();
        conn.advance_transmit(taken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RpcError;

    #[tokio::test]
    async fn a_connection_goes_back_to_the_pool_unless_its_answer_was_dropped() {
        let router = Router::new()
            .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
            .method("slow", |(): ()| async {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok::<_, RpcError>(())
            });
        let responder = Builder::new().router(router).responder();
        let pooled = || {
            responder
                .shared
                .pool
                .lock()
                .map(|p| p.len())
                .unwrap_or(usize::MAX)
        };
        let mut answer = Vec::new();
        let slow = br#"{"jsonrpc":"2.0","method":"slow","id":1}"#;
        let dropped = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            responder.respond(slow, &mut answer),
        )
        .await;
        assert!(dropped.is_err(), "the slow handler cannot have answered");
        assert_eq!(pooled(), 0, "a connection left mid-body is not reused");
        for _ in 0..3 {
            let mut answer = Vec::new();
            responder
                .respond(
                    br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
                    &mut answer,
                )
                .await;
            assert_eq!(answer, br#"{"jsonrpc":"2.0","result":19,"id":1}"#);
            assert_eq!(pooled(), 1);
        }
    }
}
