//! The application's handlers as a connection's driver runs them: in place while they finish
//! at once, in tasks when they wait, each counted against the concurrency limit until its
//! answer is written into the core.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Instant as StdInstant;

use rpcwire::wire::{Id, RawJson};
use rpcwire::{ErrorCode, RequestHandle, RespondError};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::client::raw::Raw;
use crate::router::{
    guarded, BoxFuture, Cancellation, CatchUnwind, MethodFn, NotifyFn, Origin, OriginId, Outcome,
};
use crate::{Conn, RpcError};
use rpcwire_telemetry::{MethodMeter, ServerCall};

/// A spawned handler's outcome.
#[derive(Debug)]
pub(crate) struct Done {
    handle: Option<RequestHandle>,
    reply: Result<String, RpcError>,
}

/// The cancellation signals of the handlers running in tasks, by their request's id (what a
/// cancel notification names), as [`id_key`] writes it.
#[derive(Default)]
struct Cancels {
    by_id: HashMap<String, (RequestHandle, Cancellation)>,
    ids: HashMap<RequestHandle, String>,
    /// The requests the peer cancelled, until their handlers finish.
    fired: HashSet<RequestHandle>,
}

impl Cancels {
    fn watch(&mut self, handle: RequestHandle, id: &str, cancel: Cancellation) {
        let key = id_key(id);
        self.by_id.insert(key.clone(), (handle, cancel));
        self.ids.insert(handle, key);
    }

    /// Stops watching a finished request; true when the peer had cancelled it.
    fn forget(&mut self, handle: RequestHandle) -> bool {
        if let Some(id) = self.ids.remove(&handle) {
            self.by_id.remove(&id);
        }
        self.fired.remove(&handle)
    }

    /// Fires the signal of the request with this id; false when none is running.
    fn fire(&mut self, id: &str) -> bool {
        match self.by_id.get(&id_key(id)) {
            Some((handle, cancel)) => {
                cancel.fire();
                self.fired.insert(*handle);
                true
            }
            None => false,
        }
    }

    fn fire_all(&mut self) {
        for (_, cancel) in self.by_id.values() {
            cancel.fire();
        }
    }
}

/// A request id's JSON text as the key a cancel notification finds it by: the same JSON value
/// gives the same key (`"w\u0031"` and `"w1"`; [`Id::match_key`]).
pub(crate) fn id_key(id: &str) -> String {
    Id::from_json(id).map_or_else(|| id.to_owned(), |id| id.match_key().into_owned())
}

/// The handlers of one connection that have not finished, and the answers of those that
/// have but found no transmit room yet.
pub(crate) struct Handlers {
    /// Handlers running plus answers waiting for transmit room (bounded by `concurrency`).
    running: usize,
    tasks: JoinSet<Done>,
    /// Answers that found no transmit room yet; `None` releases the request unanswered.
    unwritten: VecDeque<(RequestHandle, Option<Result<String, RpcError>>)>,
    /// Cancellation signals of the handlers running in tasks, by request id.
    cancels: Cancels,
    /// A request the peer cancelled is still answered (see `Service::answer_cancelled`).
    answer_cancelled: bool,
}

impl Handlers {
    /// No handlers yet; `answer_cancelled` as the profile says.
    pub(crate) fn new(answer_cancelled: bool) -> Self {
        Handlers {
            running: 0,
            tasks: JoinSet::new(),
            unwritten: VecDeque::new(),
            cancels: Cancels::default(),
            answer_cancelled,
        }
    }

    /// Nothing running, waiting or watched: what a responder's pooled slot is left with.
    pub(crate) fn is_idle(&self) -> bool {
        self.running == 0
            && self.tasks.is_empty()
            && self.unwritten.is_empty()
            && self.cancels.by_id.is_empty()
    }

    /// Handlers running plus answers waiting for transmit room.
    pub(crate) fn running(&self) -> usize {
        self.running
    }

    /// The tasks of the handlers that wait, to join in the driver's `select!`.
    pub(crate) fn tasks(&mut self) -> &mut JoinSet<Done> {
        &mut self.tasks
    }

    /// Runs a request handler in place; what it leaves to do (an answer to write, a future to
    /// wait for) counts against the concurrency limit until written. A panic is answered
    /// Internal error.
    ///
    /// `meter` is the handles of the router's method, `None` when the method is not one of
    /// the router's names (a fallback handler's): its spans and metrics name it `_OTHER`.
    /// `received` is when the request was read, if the transport read the clocks then.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn start_request(
        &mut self,
        handler: &MethodFn,
        origin: &Origin<'_>,
        params: Option<RawJson<'_>>,
        conn: &mut Conn,
        handle: RequestHandle,
        meter: Option<&MethodMeter>,
        received: Option<&rpcwire_telemetry::Received>,
    ) {
        let method = origin.method;
        let id = || origin.id.map_or("", OriginId::text);
        let mut call = ServerCall::new();
        call.start(method, meter, id, origin.caller.remote(), params, received);
        call.note_subject(origin.caller.identity().subject());
        call.note_params(params);
        // An unsampled call's trace, for the outgoing calls its handler's future makes: held
        // around its first poll, in place (`router::erase`), and its later ones (below).
        let unsampled = call.unsampled();
        if unsampled != 0 {
            origin.unsampled.set(unsampled);
        }
        let outcome = {
            let _entered = call.span().enter();
            guarded(|| handler(origin, params, conn, handle)).unwrap_or_else(|()| {
                tracing::error!(%method, "handler panicked");
                let _ = conn.reject(handle, ErrorCode::INTERNAL_ERROR);
                Outcome::Done(Some(ErrorCode::INTERNAL_ERROR.0))
            })
        };
        match outcome {
            Outcome::Done(error) => {
                call.note_answered_in_place();
                if tracing::enabled!(tracing::Level::DEBUG) {
                    let _entered = call.span().enter();
                    tracing::debug!(latency_us = 0u64, error, "handled");
                }
                call.end(error);
                call.release();
            }
            Outcome::Ready(reply) => {
                call.note_reply(&reply);
                call.end(reply.as_ref().err().map(|e| e.code));
                call.release();
                self.running += 1;
                self.unwritten.push_back((handle, Some(reply)));
            }
            Outcome::Pending(fut) => {
                if let Some(cancel) = origin.cancel.get() {
                    self.cancels.watch(handle, id(), cancel.clone());
                }
                self.running += 1;
                let in_flight = call.waits();
                let span = call.span().clone();
                // An unsampled call's trace (as its first poll left it), held while its
                // future is polled.
                let trace = origin.unsampled.get();
                let mut call = call;
                self.tasks.spawn(
                    async move {
                        let started = StdInstant::now();
                        let fut = rpcwire_telemetry::sampling::Unsampled {
                            fut: CatchUnwind(fut),
                            trace: std::cell::Cell::new(trace),
                        };
                        let reply = fut.await.unwrap_or_else(|()| {
                            // The panic is in the log; the caller learns only that it failed.
                            tracing::error!("handler panicked");
                            Err(RpcError::standard(ErrorCode::INTERNAL_ERROR))
                        });
                        let latency_us =
                            u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                        let error = reply.as_ref().err().map(|e| e.code);
                        tracing::debug!(latency_us, error, "handled");
                        call.note_reply(&reply);
                        call.end(error);
                        call.release();
                        drop(in_flight);
                        Done {
                            handle: Some(handle),
                            reply,
                        }
                    }
                    .instrument(span),
                );
            }
        }
    }

    /// Runs a notification handler in place, and in a task if it waits.
    pub(crate) fn start_notification(
        &mut self,
        handler: &NotifyFn,
        origin: &Origin<'_>,
        params: Option<RawJson<'_>>,
    ) {
        let method = origin.method;
        let fut = match guarded(|| handler(origin, params)) {
            Ok(None) => return log_handled(method),
            Ok(Some(fut)) => fut,
            Err(()) => return tracing::error!(%method, "notification handler panicked"),
        };
        self.spawn_notification(method, fut);
    }

    fn spawn_notification(&mut self, method: &str, fut: BoxFuture<()>) {
        self.running += 1;
        let span = tracing::info_span!("rpc.request", method = %method);
        self.tasks.spawn(
            async move {
                if CatchUnwind(fut).await.is_err() {
                    tracing::error!("notification handler panicked");
                }
                Done {
                    handle: None,
                    reply: Ok(String::new()),
                }
            }
            .instrument(span),
        );
    }

    /// Takes a task's end: a request's answer waits to be written, a notification's slot is
    /// free.
    pub(crate) fn finished(&mut self, done: Result<Done, tokio::task::JoinError>) {
        match done {
            Ok(Done {
                handle: Some(handle),
                reply,
            }) => {
                let cancelled = self.cancels.forget(handle);
                let reply = (self.answer_cancelled || !cancelled).then_some(reply);
                self.unwritten.push_back((handle, reply));
            }
            Ok(Done { handle: None, .. }) => self.running = self.running.saturating_sub(1),
            // Handler tasks catch their panics; a join error means the task was aborted.
            Err(e) => {
                tracing::warn!(error = %e, "handler task lost");
                self.running = self.running.saturating_sub(1);
            }
        }
    }

    /// Writes finished handlers' answers into the core while it has room.
    pub(crate) fn write_answers(&mut self, conn: &mut Conn) {
        while let Some((handle, reply)) = self.unwritten.front() {
            let res = match reply {
                None => conn.release(*handle),
                Some(Ok(json)) => conn.respond(*handle, &Raw(json)),
                Some(Err(e)) => conn.respond_error(
                    *handle,
                    e.error_code(),
                    Some(&e.message),
                    e.data.as_ref().map(|d| Raw(d.get())).as_ref(),
                ),
            };
            match res {
                Ok(()) => {}
                Err(RespondError::WouldBlock { .. }) => return,
                Err(RespondError::TooLarge { required }) => {
                    tracing::warn!(required, "answer too large: sent Internal error instead");
                }
                Err(RespondError::Serialize(e)) => {
                    tracing::warn!(error = %e, "answer not serializable: sending Internal error");
                    let _ = conn.reject(*handle, ErrorCode::INTERNAL_ERROR);
                }
                Err(RespondError::UnknownHandle) => {
                    tracing::debug!("answer for a request no longer open");
                }
            }
            self.unwritten.pop_front();
            self.running = self.running.saturating_sub(1);
        }
    }

    /// Fires the cancellation signal of the running request with this id (the JSON text of
    /// a cancel notification's id); false when none is running.
    pub(crate) fn cancel(&mut self, id: &str) -> bool {
        self.cancels.fire(id)
    }

    /// Cancels and aborts every running handler (the connection is gone).
    pub(crate) fn abort_all(&mut self) {
        self.cancels.fire_all();
        self.tasks.abort_all();
    }
}

/// Logs a notification handled in place, as a spawned handler's task does (an `rpc.request`
/// span with the method, and a `handled` event), when debug logging is on: it costs a cached
/// level check otherwise.
fn log_handled(method: &str) {
    if tracing::enabled!(tracing::Level::DEBUG) {
        let _span = tracing::info_span!("rpc.request", method = %method).entered();
        tracing::debug!(latency_us = 0u64, "handled");
    }
}
