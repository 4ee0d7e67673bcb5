//! The server: a NATS service endpoint whose messages are answered by the service's
//! `Responder`.

use std::time::Duration;

use async_nats::service::ServiceExt;
use futures_util::StreamExt;
use rpcwire_service::MessageAnswers;
use rpcwire_tokio::Builder;

use crate::{NatsError, NATS};

/// Where and how a [`Builder`]'s service is served on NATS ([`serve`](NatsServer::serve)):
/// see the [crate docs](crate).
///
/// Limits: the builder's (the largest message, `max_frame`, answered with Invalid Request past
/// it; the batch size; the service's handler concurrency), and `concurrency`: messages
/// answered at once, past which the server reads no further message (NATS holds them, up to
/// the connection's subscription capacity, then drops them as a slow consumer's).
#[derive(Debug, Clone)]
pub struct NatsServer {
    /// The subject served (wildcards allowed).
    pub subject: String,
    /// The queue group: each message goes to one server of the group. `None`: NATS's default
    /// for services (`q`).
    pub queue_group: Option<String>,
    /// The service's name in NATS's service API (`$SRV.INFO`): letters, digits, `-`, `_`.
    pub name: String,
    /// The service's version there (a semantic version).
    pub version: String,
    /// The most messages answered at once (at least 1).
    pub concurrency: usize,
    /// How long one message's answer may take: past it, its handlers are dropped and each of
    /// its requests is answered with [`TIMED_OUT`] (the caller's own deadline may end it first).
    pub timeout: Duration,
}

/// The code of the error a request gets when its message's answer took longer than the
/// server's [`timeout`](NatsServer::timeout): the service layer's, one of the specification's
/// server errors.
pub use rpcwire_service::TIMED_OUT;

impl NatsServer {
    /// Serves on `subject` as the service `rpcwire` (version of this crate) in NATS's default
    /// queue group, 256 messages at once.
    pub fn new(subject: impl Into<String>) -> Self {
        NatsServer {
            subject: subject.into(),
            queue_group: None,
            name: "rpcwire".to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            concurrency: 256,
            timeout: Duration::from_secs(30),
        }
    }

    /// Registers the service and answers its messages with `builder`'s service until the
    /// NATS connection ends.
    pub async fn serve(self, nats: async_nats::Client, builder: Builder) -> Result<(), NatsError> {
        let mut service = nats.service_builder().description("JSON-RPC 2.0");
        if let Some(group) = &self.queue_group {
            service = service.queue_group(group);
        }
        let service = service.start(&self.name, &self.version).await;
        let service = service.map_err(NatsError::Service)?;
        let endpoint = service
            .endpoint_builder()
            .name("jsonrpc")
            .add(&self.subject);
        let mut endpoint = endpoint.await.map_err(NatsError::Service)?;
        // Messages carry no credentials of their sender: every caller is anonymous, over NATS.
        let (service, config, n) = (builder.service_ref(), builder.config(), self.concurrency);
        let answers = MessageAnswers::anonymous(service, config, NATS, n, self.timeout);
        // A free slot first: at the limit, the next message waits in NATS's hands.
        loop {
            let slot = answers.slot().await;
            let Some(request) = endpoint.next().await else {
                break;
            };
            let body = request.message.payload.clone();
            answers
                .answer(slot, body, |answer| reply(request, answer))
                .await;
        }
        Ok(())
    }
}

/// Sends `answer` to the message's reply subject: nothing for notifications (an empty
/// answer), nor for a message without a reply subject.
async fn reply(request: async_nats::service::Request, answer: Vec<u8>) {
    if !answer.is_empty() && request.message.reply.is_some() {
        if let Err(e) = request.respond(Ok(answer.into())).await {
            tracing::debug!(error = %e, "NATS answer not sent");
        }
    }
}
