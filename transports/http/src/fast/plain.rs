//! The fast path's plain lane: the dominant request of a JSON-RPC server (a POST of JSON to
//! the served path with a `Content-Length`, from a client that accepts plain JSON alone) is
//! read, run and answered with no `http::Request`, no `HeaderMap` and no `Response` in
//! between: its head is recognised as the connection's last one ([`super::last_head`]) or
//! parsed for the few fields the answer depends on, its caller kept per credential
//! ([`super::auth`]), its body answered by the service's [`Posts::respond`] and written as
//! hyper writes it.

use std::future::Future;
use std::io;
use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::Response;
use rpcwire_service::Service;
use rpcwire_tokio::{Caller, Identity};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::body::Body;
use crate::endpoint::Endpoint;

use super::auth::{admit, kept, Admitted, Renew};
use super::head::{parse, Head, Parsed, PlainRules};
use super::last_head::LastHead;
use super::limits::KEEP;
use super::read::{read_body, BodyRead, Keep, UnlessClosed};
use super::write::{prepare, respond, write_json, Prepared};

/// A service's plain JSON-RPC POSTs, answered on the plain lane: the JSON-RPC server's.
pub(crate) trait Posts: Send + Sync + 'static {
    /// The path served (`None`: any path without a query).
    fn path(&self) -> Option<&str>;

    /// The lower-case name (letters, digits and `-`) of the header whose value alone the
    /// authenticator reads ([`rpcwire_tokio::Authenticator::credential_header`]): the lane
    /// keeps a connection's caller for that header's value.
    fn credential_header(&self) -> Option<&[u8]>;

    /// The service: its authenticator lets each request's caller in.
    fn service(&self) -> &Service;

    /// The answer to `body`, a POST whose head passed every check, from `caller` (anonymous
    /// when `None`), within `deadline`: the answer the service gives the same request on
    /// hyper's path.
    fn respond<'a>(
        &'a self,
        body: &'a [u8],
        deadline: Instant,
        caller: Option<&'a Arc<Caller>>,
    ) -> impl Future<Output = Answer> + Send + 'a;
}

/// What [`Posts::respond`] answers.
pub(crate) enum Answer {
    /// 200 with this JSON body: the usual answer, written with no `Response` made.
    Json(Bytes),
    /// Any other answer (202, a refusal, 413, 429...). Boxed: the usual answer is moved
    /// about as a pointer and a length, not as a whole response.
    Other(Box<Response<Body>>),
}

/// No plain lane: a profile's service, whose requests are all read whole.
pub(crate) enum NoPosts {}

impl Posts for NoPosts {
    fn path(&self) -> Option<&str> {
        match *self {}
    }

    fn credential_header(&self) -> Option<&[u8]> {
        match *self {}
    }

    fn service(&self) -> &Service {
        match *self {}
    }

    async fn respond(&self, _: &[u8], _: Instant, _: Option<&Arc<Caller>>) -> Answer {
        match *self {}
    }
}

/// A connection whose calls are traced (a subscriber listens to call spans, or the service
/// wants its callers' peers): each request's caller carries the connection's peer
/// (`network.peer.*`, the key of an anonymous caller's rate-limit bucket) and the request's
/// W3C trace context (`traceparent`, `tracestate`), as on hyper's path.
pub(super) struct Traced<'a> {
    /// What the accept loop told of the connection: its peer (for the refusal log too), the
    /// server's end (a pointer: every connection's future holds this).
    pub(super) info: &'a crate::caller::ConnectionInfo,
    /// Whether the connection's calls are traced.
    pub(super) on: bool,
}

/// What a connection's plain lane keeps between requests.
pub(super) struct Lane {
    /// The caller the connection last let in (boxed: a connection without an authenticator
    /// keeps a pointer's worth).
    admitted: Option<Box<Admitted>>,
    /// The last head taken (with an authenticator: only once let in), to recognise the next
    /// without parsing it ([`LastHead`]). With an authenticator the head must be the same to
    /// the byte (the caller let in keeps it); without, its `Content-Length` may differ.
    last: Option<Box<LastHead>>,
    /// No authenticator: a head recognised again may have another `Content-Length`.
    any_length: bool,
    /// On a traced connection: the caller of its requests with no credential and no trace
    /// context (the peer alone), made once.
    peer_caller: Option<Arc<Caller>>,
}

impl Lane {
    /// The lane of a connection to `posts`' service.
    pub(super) fn new(posts: &impl Posts) -> Self {
        Lane {
            admitted: None,
            last: None,
            any_length: posts.service().authenticator_ref().is_none(),
            peer_caller: None,
        }
    }

    /// What `buf` starts with, and whether it is the last head taken, recognised again.
    #[inline(always)] // runs for every request, from one place: no call
    pub(super) fn next(
        &mut self,
        posts: &impl Posts,
        endpoint: &Endpoint,
        traced: bool,
        buf: &[u8],
    ) -> (bool, Parsed) {
        if let Some(head) = self
            .last
            .as_mut()
            .and_then(|last| last.again(buf, endpoint.max_body(), self.any_length))
        {
            return (true, Parsed::Plain(head));
        }
        let rules = PlainRules {
            path: posts.path(),
            credential: posts.credential_header(),
            traced,
        };
        let parsed = parse(Some(rules), self.admitted.as_deref_mut(), endpoint, buf);
        // Another head: the last one no longer stands for the caller let in (until this one
        // is, if it is). Not yet a head: nothing changes.
        if let (Some(last), false) = (&mut self.last, matches!(parsed, Parsed::Partial)) {
            last.forget();
        }
        (false, parsed)
    }

    /// Answers the request whose head is at the start of `buf` (`recognised`: the last one
    /// again), reading its body into `buf` and what comes meanwhile into `out` (empty between
    /// requests); the request's time runs from `start`. `Some(now)`: answered, and the
    /// connection waits for its next request from `now`; `None`: close it.
    ///
    /// Not an `async fn`: that would keep a copy of each argument beside the one it moves
    /// in, and every idle connection's task holds this future's room.
    #[allow(clippy::too_many_arguments)] // the connection's state, borrowed for one request
    #[allow(clippy::manual_async_fn)] // see above
    pub(super) fn serve<'a, I, P>(
        &'a mut self,
        stream: &'a mut I,
        posts: &'a P,
        endpoint: &'a Endpoint,
        traced: &'a Traced<'a>,
        buf: &'a mut Vec<u8>,
        out: &'a mut Vec<u8>,
        head: &'a Head,
        recognised: bool,
    ) -> impl Future<Output = io::Result<Option<Instant>>> + 'a
    where
        I: AsyncRead + AsyncWrite + Unpin,
        P: Posts,
    {
        async move {
            let start = Instant::now();
            let deadline = start + endpoint.timeout();
            let total = head.len + head.body;
            // Authentication first, from the head alone, as on hyper's path: a refused request's
            // body is then read only to be dropped.
            let caller = match posts.service().authenticator_ref() {
                None => None,
                Some(_) => {
                    // A head parsed without the kept line has the kept value, and the last head
                    // the connection let in has its caller's: no need to read it.
                    let (value, renew) = match (recognised, head.left_out()) {
                        (true, _) => (None, Renew::Unchanged),
                        (false, Some(at)) => (None, Renew::WithoutLine(at)),
                        (false, None) => (head.credential(buf), Renew::Whole),
                    };
                    if !kept(&mut self.admitted, &buf[..head.len], value, renew, start) {
                        // Boxed: the authenticator is asked only on a new credential, refusals are
                        // rare, and every idle connection keeps this future.
                        let asked = Box::pin(ask(
                            posts.service(),
                            &mut self.admitted,
                            traced.info.peer,
                            stream,
                            buf,
                            head,
                            start,
                            deadline,
                        ));
                        match asked.await? {
                            Asked::Admitted => {}
                            Asked::Refused { close: true } => return Ok(None),
                            Asked::Refused { close: false } => return Ok(Some(Instant::now())),
                        }
                    }
                    // Let in: `admit` has remembered the caller.
                    let Some(admitted) = self.admitted.as_deref() else {
                        return Ok(None);
                    };
                    Some(admitted.caller())
                }
            };
            // A traced call's caller: the connection's peer and the request's trace context.
            // A `match`, not `Option::map`: the closure made the connection's future 8 bytes
            // larger (`an_idle_connection_keeps_a_small_future`).
            let traced_caller = match traced.on {
                true => Some(traced_caller(
                    caller,
                    traced,
                    &mut self.peer_caller,
                    head,
                    buf,
                )),
                false => None,
            };
            let caller = traced_caller.as_ref().or(caller);
            if !recognised {
                match &mut self.last {
                    Some(last) => last.renew(buf, *head),
                    None => self.last = Some(Box::new(LastHead::new(buf, *head))),
                }
            }
            // Most bodies came with their heads: no read, and no future made for one.
            let read = match buf.len() >= total {
                true => BodyRead::Whole,
                false => read_body(stream, buf, total, deadline).await?,
            };
            match read {
                BodyRead::Whole => {}
                BodyRead::Closed => return Ok(None),
                BodyRead::TooSlow => {
                    body_too_slow(stream).await?;
                    return Ok(None);
                }
            }
            let body = &buf[head.len..total];
            // The usual answer is written here, into the read buffer when nothing more was read
            // (a client that waits for each answer: no second buffer is held between requests);
            // any other is made ready to write. In a block: the answer, taken apart, is not
            // kept across the writes' waits.
            let (now, other) = {
                // A call answered at once (a handler that does not wait) is not raced with a
                // read: no system call is added to it. A client that closes (or half-closes)
                // its connection while its call runs has gone: the call is dropped, which
                // cancels its handlers, as hyper's path does. `out` (empty between answers)
                // takes what arrives meanwhile: the next pipelined requests, up to a head's
                // worth.
                let answer = UnlessClosed::<_, _, Keep> {
                    stream: &mut *stream,
                    answer: posts.respond(body, deadline, caller),
                    early: &mut *out,
                    room: std::marker::PhantomData,
                }
                .await;
                let Some(answer) = answer else {
                    tracing::debug!(parent: rpcwire_telemetry::span_parent(), "the client closed its connection during its call: cancelled");
                    return Ok(None);
                };
                buf.drain(..total);
                buf.extend_from_slice(out);
                out.clear();
                // One clock reading for the answer's date and the start of the idle time.
                let now = Instant::now();
                let other = match answer {
                    Answer::Json(message) => {
                        let written = if buf.is_empty() { &mut *buf } else { &mut *out };
                        write_json(written, &message, head.close, now);
                        None
                    }
                    Answer::Other(response) => Some(prepare(*response, head.close)),
                };
                (now, other)
            };
            // One wait for the writing, the rest made ready before it: what lives across two
            // waits takes room of its own in every idle connection's task.
            if write_answer(stream, buf, out, other, head.close).await? {
                return Ok(None);
            }
            Ok(Some(now))
        }
    }
}

/// Writes an answer: the usual one, already in `out` (requests were pipelined behind it) or
/// else in `buf`, or `other`, made ready. Then gives back a buffer that grew past [`KEEP`]
/// for a large answer or a large body, and closes the connection when the client or the
/// answer asked to (true then).
async fn write_answer<I: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    out: &mut Vec<u8>,
    other: Option<Prepared>,
    close: bool,
) -> io::Result<bool> {
    let close = match other {
        None => {
            let written = if out.is_empty() { &mut *buf } else { &mut *out };
            stream.write_all(written).await?;
            written.clear();
            close
        }
        Some(prepared) => respond(stream, buf, prepared).await?,
    };
    if buf.is_empty() && buf.capacity() > KEEP {
        *buf = Vec::new();
    }
    if out.capacity() > KEEP {
        *out = Vec::new();
    }
    if close {
        stream.shutdown().await.ok();
    }
    Ok(close)
}

/// Answers a body that did not come by its deadline as hyper's path does (408, and the
/// connection closes: the rest of the body would be taken for the next request).
async fn body_too_slow<I: AsyncRead + AsyncWrite + Unpin>(stream: &mut I) -> io::Result<()> {
    let r = crate::response::refuse(http::StatusCode::REQUEST_TIMEOUT, "body too slow\n");
    respond(stream, &mut Vec::new(), prepare(r, true)).await?;
    Ok(())
}

/// `caller` (anonymous if none) with what a [`Traced`] connection tells its calls: the
/// plain lane's [`traced_caller`](crate::profile::traced_caller). An anonymous request with
/// no trace context (most, and all of a sampled-out load's) shares `kept`, the connection's,
/// made once: no allocation per request.
fn traced_caller(
    caller: Option<&Arc<Caller>>,
    traced: &Traced<'_>,
    kept: &mut Option<Arc<Caller>>,
    head: &Head,
    buf: &[u8],
) -> Arc<Caller> {
    if caller.is_none() && head.traceparent.is_none() {
        let kept = kept.get_or_insert_with(|| Arc::new(with_trace(None, traced, None, None)));
        return Arc::clone(kept);
    }
    let (traceparent, tracestate) = head.trace_context(buf);
    Arc::new(with_trace(caller, traced, traceparent, tracestate))
}

/// `caller` (anonymous if none) with the peer of `traced` and the trace context of these
/// header values.
fn with_trace(
    caller: Option<&Arc<Caller>>,
    traced: &Traced<'_>,
    traceparent: Option<&[u8]>,
    tracestate: Option<&[u8]>,
) -> Caller {
    let caller = match caller {
        Some(caller) => caller.as_ref().clone(),
        None => Caller::new(Identity::anonymous(), crate::transport::HTTP),
    };
    crate::caller::with_trace(
        caller,
        traced.info.peer,
        &traced.info.end,
        traceparent.into_iter(),
        tracestate.into_iter(),
    )
}

/// What the authenticator said of a request.
enum Asked {
    /// Let in: the caller is remembered.
    Admitted,
    /// Refused, and answered; `close`: the connection is to be closed.
    Refused { close: bool },
}

/// Asks the authenticator about the request whose head is in `buf` and remembers its caller
/// in `admitted`, or answers the refusal ([`refuse_after_body`]).
// The lane's state borrowed field by field (a struct of them would borrow the lane whole).
#[allow(clippy::too_many_arguments)]
async fn ask<I: AsyncRead + AsyncWrite + Unpin>(
    service: &Service,
    admitted: &mut Option<Box<Admitted>>,
    peer: Option<std::net::SocketAddr>,
    stream: &mut I,
    buf: &mut Vec<u8>,
    head: &Head,
    start: Instant,
    deadline: Instant,
) -> io::Result<Asked> {
    let value = head.credential(buf);
    let refusal = match admit(service, admitted, peer, &buf[..head.len], value, start).await {
        Ok(()) => return Ok(Asked::Admitted),
        Err(refusal) => refusal,
    };
    let close = refuse_after_body(stream, buf, refusal, head, deadline).await?;
    Ok(Asked::Refused { close })
}

/// Answers a request refused from its head with `refusal` once its body is read and
/// dropped (within `deadline`), as hyper's path does ([`after_body`]): a body that does not
/// come in time gets the refusal with `connection: close`. True when the connection is to be
/// closed.
///
/// [`after_body`]: crate::profile::after_body
async fn refuse_after_body<I: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    mut refusal: Response<Body>,
    head: &Head,
    deadline: Instant,
) -> io::Result<bool> {
    let total = head.len + head.body;
    let mut close = head.close;
    match read_body(stream, buf, total, deadline).await? {
        BodyRead::Whole => {}
        BodyRead::Closed => return Ok(true),
        BodyRead::TooSlow => {
            refusal
                .headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            close = true;
        }
    }
    buf.drain(..total.min(buf.len()));
    let close = respond(stream, buf, prepare(refusal, close)).await?;
    if close {
        stream.shutdown().await.ok();
    }
    Ok(close)
}
