//! One POST's exchange: its body answered by the server's
//! [`Responder`](rpcwire_service::Responder) (a pooled core connection and the service's
//! dispatcher, in the POST's own task), with what MCP adds to what comes out: the session's
//! log level applied, the stream-closing signal ([`CLOSE_STREAM`](super::CLOSE_STREAM))
//! taken out, the server's requests given wire ids and their answers routed back
//! ([`Routes`]), and the request's time limit.

// Named, not the std prelude's glob: its `panic` would be ambiguous in `tokio::select!`.
use std::string::String;
use std::sync::Arc;
use std::vec::Vec;

use bytes::Bytes;
use rpcwire_service::{Caller, Exchange, Responder, Sent};

use super::posted::is_close;
use super::routes::{Registration, Routes};
use super::session::Session;

/// A POST's exchange with MCP's additions (see the module docs).
pub(crate) struct McpExchange {
    exchange: Exchange,
    /// Its routes, until it has answered.
    registration: Option<Registration>,
    /// The session whose log level applies.
    session: Option<Arc<Session>>,
    deadline: tokio::time::Instant,
}

/// What an [`McpExchange`] gives next.
pub(crate) enum Next {
    /// A message for the client (a server request already given its wire id).
    Message(Bytes),
    /// The answer (the last message).
    Answer(Bytes),
    /// A handler asked for its stream to be closed ([`CLOSE_STREAM`](super::CLOSE_STREAM)).
    Close,
    /// Nothing more: a body with no request, or a request cancelled (MCP leaves it
    /// unanswered).
    End,
    /// The request's time ran out: dropping the exchange stops its handlers.
    TimedOut,
}

impl McpExchange {
    /// Starts answering `body` from `caller` with `responder` (its messages are dispatched
    /// now), within `deadline`; `id` is the request's (`Id::match_key`), for a cancellation
    /// to find it in `session` (`""` when stateless).
    pub(crate) fn start(
        responder: &Responder,
        caller: &Arc<Caller>,
        body: &[u8],
        routes: &Arc<Routes>,
        (session, id): (Option<Arc<Session>>, Option<String>),
        deadline: tokio::time::Instant,
    ) -> Self {
        let mut exchange = responder.exchange(caller, body);
        let key = session.as_ref().map_or(String::new(), |s| s.id().into());
        let registration = routes.register(key, id, exchange.input());
        McpExchange {
            exchange,
            registration: Some(registration),
            session,
            deadline,
        }
    }

    /// The next thing the exchange gives. Cancel-safe, as
    /// [`Exchange::next`](rpcwire_service::Exchange::next) is: it may be raced against the
    /// client going away and called again.
    pub(crate) async fn next(&mut self) -> Next {
        loop {
            let sent = match tokio::time::timeout_at(self.deadline, self.exchange.next()).await {
                Err(_) => return Next::TimedOut,
                Ok(None) => {
                    // Ended unanswered: nothing waits for the client any more.
                    self.registration = None;
                    return Next::End;
                }
                Ok(Some(sent)) => sent,
            };
            return match sent {
                Sent::Answer(m) => {
                    // Answered: nothing waits for the client any more.
                    self.registration = None;
                    Next::Answer(m.into())
                }
                Sent::Message(m) if self.filtered(&m) => continue,
                Sent::Message(m) if is_close(&m) => Next::Close,
                Sent::Message(m) => Next::Message(self.outgoing(m).into()),
            };
        }
    }

    /// True for a log message below the session's level.
    fn filtered(&self, m: &[u8]) -> bool {
        self.session.as_ref().is_some_and(|s| s.filters(m))
    }

    /// A request to the client gets a wire id routed back to this exchange.
    fn outgoing(&mut self, m: Vec<u8>) -> Vec<u8> {
        match &mut self.registration {
            Some(registration) => registration.outgoing(m),
            None => m,
        }
    }
}
