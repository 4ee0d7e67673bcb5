//! The client: a `rpcwire-tokio` connection whose messages go out over NATS (requests with
//! reply subjects, notifications as plain publishes) and whose input is their answers and the
//! messages of the subjects it listens to.

use std::time::Duration;

use async_nats::RequestErrorKind;
use bytes::Bytes;
use futures_util::StreamExt;
use rpcwire::wire::classify::classify;
use rpcwire_service::undelivered;
use rpcwire_tokio::{Builder, CallError, ErrorCode, Messages, RpcError, Session};

use crate::NatsError;

/// The code of the error a call ends with at once when no server listens on the subject
/// (NATS's "no responders"): one of the specification's implementation-defined server errors.
pub const NO_RESPONDERS: i32 = -32098;

/// The code of the error a call ends with when NATS refuses to send its message (larger than
/// the server's `max_payload`, the connection gone); the message names why.
pub const NOT_SENT: i32 = -32097;

/// The code of the error a call ends with when NATS could not deliver its message.
fn code(kind: RequestErrorKind) -> i32 {
    if kind == RequestErrorKind::NoResponders {
        NO_RESPONDERS
    } else {
        NOT_SENT
    }
}

/// The longest a request waits in NATS for its answer when the connection's calls have no
/// default deadline (`Builder::request_timeout(None)`).
pub const MAX_WAIT: Duration = Duration::from_secs(300);

/// Whether a call ended because no server listens on its subject.
pub fn is_no_responders(error: &CallError) -> bool {
    error.rpc().is_some_and(|e| e.code == NO_RESPONDERS)
}

/// A client of a [`NatsServer`](crate::NatsServer)'s subject ([`start`](NatsClient::start)).
#[derive(Debug, Clone)]
pub struct NatsClient {
    /// The subject the service is served on.
    pub subject: String,
    /// Subjects whose messages the client also receives (the server's notifications), handed
    /// to the builder's [`Router`](rpcwire_tokio::Router).
    pub listen: Vec<String>,
}

impl NatsClient {
    /// A client of the service on `subject`, listening to nothing else.
    pub fn new(subject: impl Into<String>) -> Self {
        NatsClient {
            subject: subject.into(),
            listen: Vec::new(),
        }
    }

    /// Subscribes and starts a connection with `builder`'s settings (the calls' default
    /// deadline, the largest frame, a router for what the subjects listened to bring), once
    /// the server has the subscriptions. A call's deadline ends it (`CallError::Timeout`),
    /// whatever NATS does.
    pub async fn start(
        self,
        nats: async_nats::Client,
        builder: Builder,
    ) -> Result<Session, NatsError> {
        // A request waits in NATS as long as a call waits by default, and never forever: a
        // call that ended at its own deadline leaves no task waiting for a server that never
        // answers past this.
        let wait = Some(builder.config().request_timeout.unwrap_or(MAX_WAIT));
        let (session, messages) = builder.run_messages(64);
        let Messages {
            mut outgoing,
            incoming,
        } = messages;
        for subject in self.listen {
            let mut messages = nats.subscribe(subject).await?;
            let incoming = incoming.clone();
            tokio::spawn(async move {
                while let Some(m) = messages.next().await {
                    if !incoming.send(m.payload).await {
                        break;
                    }
                }
            });
        }
        // Subscribed at the server when this returns: what is published after it arrives.
        let _ = nats.flush().await;
        let subject = self.subject;
        tokio::spawn(async move {
            while let Some(frame) = outgoing.recv().await {
                // Nothing to answer (notifications, answers to the server): a plain publish.
                if classify(&frame, usize::MAX).is_silent() {
                    if let Err(e) = nats.publish(subject.clone(), frame).await {
                        tracing::debug!(error = %e, "NATS publish failed");
                    }
                    continue;
                }
                let (nats, subject, incoming) = (nats.clone(), subject.clone(), incoming.clone());
                tokio::spawn(async move {
                    let request = async_nats::Request::new().payload(frame.clone());
                    let answer = match nats.send_request(subject, request.timeout(wait)).await {
                        Ok(m) => Some(m.payload),
                        // The call's own deadline ends it.
                        Err(e) if e.kind() == RequestErrorKind::TimedOut => None,
                        Err(e) => {
                            let error = RpcError::new(ErrorCode(code(e.kind())), e.kind());
                            undelivered(&frame, &error).map(Bytes::from)
                        }
                    };
                    if let Some(answer) = answer {
                        incoming.send(answer).await;
                    }
                });
            }
            // The connection ended: what it published last (a notification) leaves now.
            let _ = nats.flush().await;
        });
        Ok(session)
    }
}
