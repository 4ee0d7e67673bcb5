//! The HTTP edge of the server: what stays HTTP's (the `Host` / `Origin` check, the Agent
//! Card, the endpoint's path and method, the POST's content type, size and time, the caller's
//! authentication), and each POST body answered through the service's [`Responder`]: the
//! core reads and checks the JSON-RPC envelope, the dispatcher runs the call. The answer is
//! the core's JSON, or the event stream a streaming method handed over.

use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use rpcwire_http::profile::{
    admit, after_body, connection_certificate, connection_peer, json, read_post_body, refuse,
    status, traced_request_caller, AcceptedMedia, Body, Endpoint,
};
use rpcwire_http::{has_query_token, BearerChallenge};
use rpcwire_service::{Responder, Sent};

use crate::types::AGENT_CARD_PATH;

pub(crate) use super::card::CardResource;

use super::post::Post;
use super::streams::Streams;
use super::tasks::Tasks;

/// What the edge of one server holds.
pub(crate) struct Edge {
    /// The Agent Card, encoded once, with its caching headers.
    pub(crate) card: CardResource,
    /// The JSON-RPC endpoint's path.
    pub(crate) path: String,
    pub(crate) endpoint: Endpoint,
    /// Answers every POST body with the service (its router holds the methods).
    pub(crate) responder: Responder,
    pub(crate) streams: Arc<Streams>,
    pub(crate) tasks: Arc<Tasks>,
}

impl Edge {
    /// Answers one HTTP request.
    pub(crate) async fn handle<B>(self: Arc<Self>, req: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (max_body, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        if let Some(refusal) = self.refusal(&req) {
            return after_body(req, max_body, timeout, refusal).await;
        }
        if req.uri().path() == AGENT_CARD_PATH {
            // GET only (`refusal` answered anything else).
            let answer = self.card.answer(req.headers());
            return after_body(req, max_body, timeout, answer).await;
        }
        // Authentication first: nothing runs for a caller refused.
        let service = self.responder.service();
        if service.authenticator_ref().is_some() && has_query_token(req.uri()) {
            // Never read: a URL ends up in logs and histories.
            let refusal = BearerChallenge::default().token_in_query();
            return after_body(req, max_body, timeout, refusal).await;
        }
        let peer = connection_peer(&req);
        let headers = req.headers();
        let caller = match admit(
            service,
            headers,
            rpcwire_http::transport::HTTP,
            peer,
            connection_certificate(&req),
        )
        .await
        {
            Ok(caller) if rpcwire_telemetry::spans_enabled() => traced_request_caller(caller, &req),
            Ok(caller) => caller,
            Err(refusal) => return after_body(req, max_body, timeout, refusal).await,
        };
        let (parts, body) = req.into_parts();
        // Answers are JSON or an event stream: any `Accept` that allows either will do.
        let answerable = AcceptedMedia::of(&parts.headers).is_none_or(|m| m.json || m.sse || m.any);
        let (mut parts, body) =
            match read_post_body(parts, body, answerable, max_body, timeout).await {
                Ok(read) => read,
                Err(refusal) => return *refusal,
            };
        let caller = Arc::new(caller.with_meta(Post::new(std::mem::take(&mut parts.headers))));
        let mut exchange = self.responder.exchange(&caller, &body);
        let answer = loop {
            match exchange.next().await {
                Some(Sent::Answer(answer)) => break Some(answer),
                // The methods send the client nothing before their answer.
                Some(Sent::Message(_)) => {}
                None => break None,
            }
        };
        drop(exchange);
        if let Some(stream) = caller.meta::<Post>().and_then(Post::take) {
            // A streaming method's answer is its stream (its JSON answer is `null`).
            return self.streams.answer(stream);
        }
        match answer {
            Some(answer) => json(Bytes::from(answer)),
            // Notifications and responses: A2A defines none, and none is answered.
            None => status(StatusCode::ACCEPTED),
        }
    }

    /// Why `req` is refused before its caller is asked who it is: a `Host` or `Origin` not
    /// allowed (403), a path with no endpoint (404), a method the path does not take (405).
    fn refusal<B>(&self, req: &Request<B>) -> Option<Response<Body>> {
        if let Some(why) = self.endpoint.refusal(req) {
            return Some(refuse(StatusCode::FORBIDDEN, why));
        }
        let (allow, why) = match req.uri().path() {
            AGENT_CARD_PATH => ("GET", "GET the card\n"),
            path if path == self.path => ("POST", "POST JSON-RPC requests\n"),
            _ => return Some(refuse(StatusCode::NOT_FOUND, "no A2A endpoint here\n")),
        };
        if req.method().as_str() == allow {
            return None;
        }
        let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, why);
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
        Some(r)
    }
}
