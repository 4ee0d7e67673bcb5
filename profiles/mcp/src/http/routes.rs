//! Where bodies POSTed while a request runs go: the client's answers to the requests its
//! handler sent (sampling, elicitation, roots) and `notifications/cancelled`. Each reaches
//! the one exchange that runs the request, through its input
//! ([`rpcwire_service::Exchange::input`]), and its dispatcher takes it from there (an answer
//! to the call waiting for it, a cancellation to the handler it names, by MCP's cancel rule).
//!
//! The server's requests go out with a wire id unique to the server (the session prefix, a
//! counter), so that an answer finds its exchange whichever connection answered it; the
//! exchange gets it back with the id its connection gave the request.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire::wire::{Id, RawJson};
use serde_json::Value;
use tokio::sync::mpsc;

use super::posted::{member, Posted};

/// An exchange's input: more bodies for its connection.
pub(crate) type Input = mpsc::Sender<Vec<u8>>;

/// A request the server sent the client from one exchange, waiting for its answer.
struct Pending {
    /// The session it belongs to ("" when stateless).
    session: String,
    input: Input,
    /// The id the exchange's connection gave it.
    original: Value,
}

/// The server's routes: its requests waiting for answers, and the requests running.
pub(crate) struct Routes {
    /// The start of the wire ids of the server's requests (the sessions' prefix).
    prefix: String,
    /// Server-to-client requests by their wire id.
    pending: Mutex<HashMap<String, Pending>>,
    /// Running requests by (session, request id as `Id::match_key` writes it).
    running: Mutex<HashMap<(String, String), Input>>,
    counter: AtomicU64,
}

impl Routes {
    /// No routes; wire ids start with `prefix`.
    pub(crate) fn new(prefix: &str) -> Arc<Self> {
        Arc::new(Routes {
            prefix: prefix.to_owned(),
            pending: Mutex::new(HashMap::new()),
            running: Mutex::new(HashMap::new()),
            counter: AtomicU64::new(0),
        })
    }

    /// Routes to the exchange whose input is `input`, for `session`: a cancellation of the
    /// request `id` (`Id::match_key`; none for a batch or an invalid message), and the
    /// answers to the requests it sends ([`Registration::outgoing`]). They go when the
    /// registration is dropped.
    pub(crate) fn register(
        self: &Arc<Self>,
        session: String,
        id: Option<String>,
        input: Input,
    ) -> Registration {
        let running = id.map(|id| {
            let key = (session.clone(), id);
            self.running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(key.clone(), input.clone());
            key
        });
        Registration {
            routes: Arc::clone(self),
            session,
            input,
            running,
            pending: Vec::new(),
        }
    }

    /// A POSTed answer to one of the server's requests goes to the exchange that asked, with
    /// the id its connection gave the request; `Err(body)` gives back an answer to no request
    /// of an exchange's (one to a request sent on a session's GET stream, say).
    pub(crate) async fn answer(&self, session: &str, body: Vec<u8>) -> Result<(), Vec<u8>> {
        // The answer's id is rewritten, so it is read as a value (answers to the server's own
        // requests are few).
        let Ok(mut value) = serde_json::from_slice::<Value>(&body) else {
            return Err(body);
        };
        let Some(wire) = value.get("id").and_then(Value::as_str) else {
            return Err(body);
        };
        let pending = {
            let mut map = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            match map.get(wire) {
                Some(p) if p.session == session => map.remove(wire),
                _ => None,
            }
        };
        let Some(pending) = pending else {
            return Err(body);
        };
        value["id"] = pending.original;
        // The exchange may have ended meanwhile: the answer then has nobody to go to.
        let _ = pending.input.send(value.to_string().into_bytes()).await;
        Ok(())
    }

    /// `notifications/cancelled` (its `params`, the whole `body`) goes to the exchange running
    /// the request it names in `session`, whose dispatcher stops the handler; the request is
    /// left unanswered (MCP's rule), and its exchange ends when the handler has stopped.
    /// False when no request of this server's is named (one running on another replica,
    /// say).
    pub(crate) async fn cancel(
        &self,
        session: &str,
        params: Option<RawJson<'_>>,
        body: Vec<u8>,
    ) -> bool {
        let target = member(params, "requestId")
            .and_then(|id| Id::from_json(id.as_str()))
            .map(|id| id.match_key().into_owned());
        let Some(target) = target else {
            return false;
        };
        // Taken out: once cancelled, nothing more is routed to the request.
        let input = self
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(session.to_owned(), target));
        match input {
            Some(input) => {
                let _ = input.send(body).await;
                true
            }
            None => false,
        }
    }

    /// An answer or a cancellation another replica forwarded (a shared store's
    /// [`Forwarder`](super::store::Forwarder)): taken when it is for one of this server's
    /// requests in `session`, ignored otherwise.
    pub(crate) async fn take_forwarded(&self, forwarded: super::store::Forwarded) {
        use super::store::Forwarded;
        match forwarded {
            Forwarded::Answer { session, body } => {
                let _ = self.answer(&session, body).await;
            }
            Forwarded::Cancel { session, body } => {
                if let Some(Posted::Notification { params, .. }) = Posted::of(&body) {
                    let whole = body.clone();
                    self.cancel(&session, params, whole).await;
                }
            }
        }
    }
}

/// One exchange's routes ([`Routes::register`]), removed when dropped, so that nothing is
/// routed to an exchange that has ended.
pub(crate) struct Registration {
    routes: Arc<Routes>,
    session: String,
    input: Input,
    running: Option<(String, String)>,
    /// The wire ids of its requests waiting for answers.
    pending: Vec<String>,
}

impl Registration {
    /// A message the exchange sends the client: a request gets a wire id unique to the
    /// server, remembered with the exchange's input so that the answer finds its way back;
    /// anything else goes as it is.
    pub(crate) fn outgoing(&mut self, m: Vec<u8>) -> Vec<u8> {
        if !matches!(Posted::of(&m), Some(Posted::Request { .. })) {
            return m;
        }
        let Ok(mut v) = serde_json::from_slice::<Value>(&m) else {
            return m;
        };
        let routes = &self.routes;
        let wire = format!(
            "{}-s{}",
            routes.prefix,
            routes.counter.fetch_add(1, Ordering::Relaxed)
        );
        let original = v["id"].take();
        v["id"] = Value::String(wire.clone());
        routes
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(
                wire.clone(),
                Pending {
                    session: self.session.clone(),
                    input: self.input.clone(),
                    original,
                },
            );
        self.pending.push(wire);
        v.to_string().into_bytes()
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        if let Some(key) = self.running.take() {
            self.routes
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        }
        if !self.pending.is_empty() {
            let mut pending = self
                .routes
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for id in self.pending.drain(..) {
                pending.remove(&id);
            }
        }
    }
}
