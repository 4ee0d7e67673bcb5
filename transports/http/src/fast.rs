//! The HTTP/1.1 fast path of [`serve`](crate::serve): the dominant request — a POST of JSON to
//! the served path with a `Content-Length`, answered as plain JSON — is read, run and answered
//! in the connection's own task, with no hyper machinery in between; anything else hands the
//! connection, with the bytes already read, to hyper for the rest of its life.
//!
//! The fast path only takes requests whose answer it knows to be the one hyper's path gives
//! ([`Inner::answer`] decides both); every request it does not take (another method or path,
//! `Transfer-Encoding`, `Expect`, `Upgrade`, HTTP/1.0, a head it cannot parse or longer than
//! [`MAX_HEAD`], more than [`MAX_HEADERS`] headers, a refused `Host`, `Origin`, `Content-Type`
//! or `Accept`, a body over the limit, a client that accepts event streams, a server with
//! profile checks) goes to hyper, which answers it exactly as before.

use std::future::Future;
use std::io;
use std::num::NonZeroU16;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime};

use bytes::{Buf, Bytes};
use http::header::HeaderValue;
use http::{Response, StatusCode};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};
use tokio::time::Instant;

use crate::body::Body;
use crate::fast_auth::{admit, kept, Admitted, Renew};
use crate::kept_line::KeptLine;
use crate::pipe::read_from;
use last_head::LastHead;

mod last_head;

use crate::server::{
    accepts_values, hyper_service, is_json_media_bytes, run_hyper, ConnectionError, Inner,
    Protocol, Reply, RpcService,
};

/// The longest request head the fast path reads; a longer one goes to hyper (which takes
/// heads up to its own, larger limit and answers 431 past it).
pub(crate) const MAX_HEAD: usize = 8 << 10;

/// The most header fields the fast path parses; more go to hyper.
pub(crate) const MAX_HEADERS: usize = 32;

/// The read buffer's capacity kept between requests; a larger one (a large body) is given back
/// once its request is answered.
pub(crate) const KEEP: usize = 2 << 10;

/// How a connection's fast path ended.
pub(crate) enum End {
    /// The peer closed, an error, or `Connection: close` answered: close the socket.
    Close,
    /// A request the fast path does not take: hyper serves the rest of the connection, from
    /// these bytes on.
    Hyper(Vec<u8>),
}

/// A connection whose calls are traced (a subscriber listens to call spans): each request's
/// caller carries the connection's peer (`network.peer.*`) and the request's W3C trace
/// context (`traceparent`, `tracestate`), as on hyper's path.
pub(crate) struct Traced {
    /// The peer of the connection, when the accept loop told it.
    peer: Option<std::net::SocketAddr>,
}

/// Serves one HTTP/1 connection from `peer`: the fast path while requests fit it, then hyper.
pub(crate) async fn serve<I>(
    mut stream: I,
    service: RpcService,
    peer: Option<std::net::SocketAddr>,
) -> Result<(), ConnectionError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let inner = Arc::clone(&service.inner);
    // Decided once per connection, as hyper's path decides whether to tell requests their peer.
    // Callers carry the connection's peer while spans are listened to (their
    // `network.peer.*`) and under a rate limit (the key of an anonymous caller's bucket).
    let traced = (rpcwire_telemetry::spans_enabled()
        || crate::server::HandlesIncoming::wants_peer(&service))
    .then_some(Traced { peer });
    // Profile checks look at every request's parts: hyper's path builds them.
    // Authentication is the fast path's (`fast_auth`).
    let end = if !inner.fast_path || inner.check.is_some() || inner.check_body.is_some() {
        End::Hyper(Vec::new())
    } else {
        run(&mut stream, &inner, traced.as_ref()).await?
    };
    let idle = inner.endpoint.idle_connection;
    drop(inner);
    if let End::Hyper(read) = end {
        match traced.and_then(|t| t.peer) {
            // hyper's requests are told their peer as `serve_connection_from` tells them.
            Some(peer) => {
                let info = crate::server::ConnectionInfo {
                    peer: Some(peer),
                    certificate: None,
                };
                let service = crate::server::WithConnection { service, info };
                hyper_rest(read, stream, idle, service).await?;
            }
            None => hyper_rest(read, stream, idle, service).await?,
        }
    }
    Ok(())
}

/// hyper, serving the rest of an HTTP/1.1 connection handed over with `read` already read
/// from it. Boxed: hyper's connection state is allocated only for connections that need it.
pub(crate) fn hyper_rest<I, S>(
    read: Vec<u8>,
    stream: I,
    idle: Duration,
    service: S,
) -> Pin<Box<impl Future<Output = Result<(), hyper::Error>> + Send>>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: crate::server::HandlesIncoming,
{
    let io = Rewind::new(read, stream);
    Box::pin(run_hyper(io, Protocol::Http1, idle, hyper_service(service)))
}

/// A request head the fast path takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Head {
    /// Bytes of the head, the blank line included.
    len: usize,
    /// `Content-Length`.
    body: usize,
    /// `Connection: close`: answer, then close.
    close: bool,
    /// Where the value of the authenticator's credential header is in the buffer (start and
    /// end; 16 bits, the start never 0: every idle connection keeps a `Head`'s room in its
    /// future, and a head whose places do not fit is hyper's).
    credential: Option<(NonZeroU16, u16)>,
    /// The head was parsed without its credential line, which starts there (never at 0): the
    /// value is the one the connection keeps ([`crate::kept_line`]), and the head without the
    /// line is in the connection's [`Admitted`].
    left_out: Option<NonZeroU16>,
    /// Where the `Content-Length` value's digits are in the buffer (start and end), for
    /// [`LastHead`].
    length: (u16, u16),
    /// Where the `traceparent` value is in the buffer (start and end), read only on a traced
    /// connection ([`Traced`]).
    traceparent: Option<(NonZeroU16, u16)>,
    /// Where the `tracestate` value is, likewise.
    tracestate: Option<(NonZeroU16, u16)>,
}

impl Head {
    /// The credential header's value, in `buf`.
    fn credential<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        self.credential
            .map(|(from, to)| &buf[from.get() as usize..to as usize])
    }

    /// The `traceparent` and `tracestate` values, in `buf`.
    fn trace_context<'a>(&self, buf: &'a [u8]) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let value = |at: Option<(NonZeroU16, u16)>| {
            at.map(|(from, to)| &buf[from.get() as usize..to as usize])
        };
        (value(self.traceparent), value(self.tracestate))
    }

    /// Where the line left out of the head started.
    fn left_out(&self) -> Option<usize> {
        self.left_out.map(|at| at.get() as usize)
    }
}

/// A place in the buffer as 16 bits, not 0 (a head the fast path takes is shorter than
/// [`MAX_HEAD`] but for a head read whole at once: one whose places do not fit goes to hyper).
fn place(at: usize) -> Option<NonZeroU16> {
    NonZeroU16::new(u16::try_from(at).ok()?)
}

/// What the buffer starts with.
enum Parsed {
    /// Not a whole head yet.
    Partial,
    /// A request for the fast path.
    Fast(Head),
    /// A request for hyper.
    Other,
}

/// The header fields the fast path reads.
enum Field {
    Host,
    Accept,
    Origin,
    Connection,
    ContentType,
    ContentLength,
}

/// An ASCII header value as text.
fn text(value: &[u8]) -> Option<&str> {
    std::str::from_utf8(value).ok()
}

/// A `Content-Length` value: digits only, at least one, within `usize`.
pub(crate) fn decimal(value: &[u8]) -> Option<usize> {
    if value.is_empty() {
        return None;
    }
    value.iter().try_fold(0usize, |n, &b| {
        if !b.is_ascii_digit() {
            return None;
        }
        n.checked_mul(10)?.checked_add(usize::from(b - b'0'))
    })
}

/// Whether `name`, a header field name httparse has checked (token characters only), is
/// `lower` (lower-case letters, digits and `-`) but for the case of its letters. Or-ing 0x20
/// into a byte folds `A`-`Z` onto `a`-`z`, leaves digits as they are and turns no other token
/// character into a letter, a digit or `-` (only control bytes, which are not token
/// characters, would become one), so eight bytes are compared at a time: this runs for every
/// header field of every request.
pub(crate) fn field_is(name: &[u8], lower: &[u8]) -> bool {
    const FOLD: u64 = u64::from_ne_bytes([0x20; 8]);
    if name.len() != lower.len() {
        return false;
    }
    let (mut names, mut lowers) = (name.chunks_exact(8), lower.chunks_exact(8));
    for (n, l) in names.by_ref().zip(lowers.by_ref()) {
        let word = |b: &[u8]| u64::from_ne_bytes(b.try_into().unwrap_or([0; 8]));
        if word(n) | FOLD != word(l) {
            return false;
        }
    }
    names
        .remainder()
        .iter()
        .zip(lowers.remainder())
        .all(|(n, l)| n | 0x20 == *l)
}

/// `traced`: the connection is [`Traced`] (the trace context's headers are found).
/// `credential`: the lower-case name of the header whose value the authenticator reads alone
/// ([`rpcwire_tokio::Authenticator::credential_header`]), found for [`Head::credential`].
/// `admitted`: the caller the connection keeps; a head carrying its credential is parsed
/// without that line ([`crate::kept_line`]), with the same outcome.
fn parse(
    inner: &Inner,
    traced: bool,
    credential: Option<&[u8]>,
    admitted: Option<&mut Admitted>,
    buf: &[u8],
) -> Parsed {
    if buf.is_empty() {
        // Between requests: nothing to parse.
        return Parsed::Partial;
    }
    if let (Some(name), Some(admitted)) = (credential, admitted) {
        if let Some((line, rest, whole)) = admitted.without_kept_line(name, buf) {
            match parse_head(inner, traced, credential, rest, Some(line)) {
                Some(Parsed::Fast(head)) => {
                    admitted.keep_head(head.len - line.len());
                    return Parsed::Fast(head);
                }
                // The head may go on past what was copied: the whole buffer decides.
                Some(Parsed::Partial) if !whole => {}
                Some(other) => return other,
                // The head ended before the line, which is then not in it.
                None => {}
            }
        }
    }
    parse_head(inner, traced, credential, buf, None).unwrap_or(Parsed::Other)
}

/// [`parse`] of `buf`, or of the buffer without the line `left_out` (its value the kept one):
/// then the head's length and the credential's place are the whole buffer's, and `None` says
/// that the head ended before the line (the whole buffer is to be parsed).
#[inline(always)] // runs for every request, from two places in `parse`: no call
fn parse_head(
    inner: &Inner,
    traced: bool,
    credential: Option<&[u8]>,
    buf: &[u8],
    left_out: Option<KeptLine>,
) -> Option<Parsed> {
    // Left uninitialised: httparse writes the fields it fills in, and this runs per request.
    let mut headers =
        [const { std::mem::MaybeUninit::<httparse::Header<'_>>::uninit() }; MAX_HEADERS];
    // One field fewer without the line: as many as the whole head may have in all.
    let slots = MAX_HEADERS - usize::from(left_out.is_some());
    let mut req = httparse::Request::new(&mut []);
    let len = match req.parse_with_uninit_headers(buf, &mut headers[..slots]) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Some(Parsed::Partial),
        Err(_) => return Some(Parsed::Other),
    };
    let (len, left_out) = match left_out {
        Some(line) if len <= line.start => return None,
        Some(line) => (len + line.len(), Some(line)),
        None => (len, None),
    };
    if req.method != Some("POST") || req.version != Some(1) {
        return Some(Parsed::Other);
    }
    let Some(target) = req.path else {
        return Some(Parsed::Other);
    };
    let path_ok = match &inner.path {
        Some(path) => target == path,
        None => target.starts_with('/') && !target.contains('?'),
    };
    if !path_ok {
        return Some(Parsed::Other);
    }
    let (mut length, mut host, mut origin, mut json) = (None, None, None, None);
    let mut length_at = (0, 0);
    let mut close = false;
    let mut credential_at = match left_out {
        Some(line) => {
            let (Some(from), Ok(to)) = (place(line.value), u16::try_from(line.end - 2)) else {
                return Some(Parsed::Other);
            };
            Some((from, to))
        }
        None => None,
    };
    let (mut traceparent, mut tracestate) = (None, None);
    let mut accept = [""; 4];
    let mut accepts = 0;
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        // Only the fields the answer depends on are read (told apart by length first: this
        // runs for every request); httparse has checked the others' characters.
        let is = |field: &[u8]| field_is(name, field);
        let field = match name.len() {
            4 if is(b"host") => Field::Host,
            6 if is(b"accept") => Field::Accept,
            6 if is(b"origin") => Field::Origin,
            10 if is(b"connection") => Field::Connection,
            12 if is(b"content-type") => Field::ContentType,
            14 if is(b"content-length") => Field::ContentLength,
            // Bodies and upgrades that only hyper handles.
            6 if is(b"expect") => return Some(Parsed::Other),
            7 if is(b"upgrade") => return Some(Parsed::Other),
            17 if is(b"transfer-encoding") => return Some(Parsed::Other),
            // A traced call's parent (W3C Trace Context); once each, or hyper's path decides.
            11 if traced && is(b"traceparent") => {
                match at_in_whole(buf, h.value, left_out) {
                    Some(at) if traceparent.is_none() => traceparent = Some(at),
                    _ => return Some(Parsed::Other),
                }
                continue;
            }
            10 if traced && is(b"tracestate") => {
                match at_in_whole(buf, h.value, left_out) {
                    Some(at) if tracestate.is_none() => tracestate = Some(at),
                    _ => return Some(Parsed::Other),
                }
                continue;
            }
            // `credential` is lower-case letters, digits and `-` (see `Inner`), which
            // `field_is` compares exactly, a word at a time.
            _ if credential.is_some_and(|c| field_is(name, c)) => {
                // Twice: hyper's path decides. Its bytes go to the authenticator as they
                // are (as on hyper's path), or are compared with those it let in.
                if credential_at.is_some() {
                    return Some(Parsed::Other);
                }
                let start = h.value.as_ptr() as usize - buf.as_ptr() as usize;
                let (Some(from), Ok(to)) = (place(start), u16::try_from(start + h.value.len()))
                else {
                    return Some(Parsed::Other);
                };
                credential_at = Some((from, to));
                continue;
            }
            _ => continue,
        };
        // What `HeaderValue::to_str` takes on hyper's path: httparse has let through only
        // tabs, visible ASCII and bytes over 0x7f, so ASCII is the test. (`Content-Length`
        // takes digits only, which `decimal` checks.)
        let value = h.value;
        if !matches!(field, Field::ContentLength) && !value.is_ascii() {
            return Some(Parsed::Other);
        }
        match field {
            Field::ContentLength => {
                if length.is_some() {
                    return Some(Parsed::Other);
                }
                match decimal(value) {
                    Some(n) => length = Some(n),
                    None => return Some(Parsed::Other),
                }
                // In the whole buffer: past the line left out, one line's length further.
                let mut at = value.as_ptr() as usize - buf.as_ptr() as usize;
                if let Some(line) = left_out.filter(|line| at >= line.start) {
                    at += line.len();
                }
                length_at = (at, at + value.len());
            }
            Field::ContentType => {
                if json.is_some() {
                    return Some(Parsed::Other);
                }
                json = Some(is_json_media_bytes(value));
            }
            Field::Host => {
                if host.is_some() {
                    return Some(Parsed::Other);
                }
                host = Some(value);
            }
            Field::Origin => {
                if origin.is_some() {
                    return Some(Parsed::Other);
                }
                let Some(value) = text(value) else {
                    return Some(Parsed::Other);
                };
                origin = Some(value);
            }
            Field::Accept => {
                if accepts == accept.len() {
                    return Some(Parsed::Other);
                }
                let Some(value) = text(value) else {
                    return Some(Parsed::Other);
                };
                accept[accepts] = value;
                accepts += 1;
            }
            Field::Connection => {
                let Some(value) = text(value) else {
                    return Some(Parsed::Other);
                };
                for token in value.split(',') {
                    let token = token.trim();
                    if token.eq_ignore_ascii_case("close") {
                        close = true;
                    } else if !token.eq_ignore_ascii_case("keep-alive") {
                        return Some(Parsed::Other); // upgrades and hop-by-hop lists: hyper's
                    }
                }
            }
        }
    }
    let (Some(body), Some(true), Some(host)) = (length, json, host) else {
        return Some(Parsed::Other);
    };
    if body > inner.endpoint.max_body
        || !inner.endpoint.hosts.allows_host_bytes(host)
        || origin.is_some_and(|o| !inner.endpoint.hosts.allows_origin(o))
    {
        return Some(Parsed::Other);
    }
    // Event streams are hyper's (chunked bodies, a task per stream): the fast path takes only
    // clients whose answer is plain JSON.
    let (json_ok, sse_ok) = accepts_values(accept[..accepts].iter().copied());
    if !json_ok || sse_ok {
        return Some(Parsed::Other);
    }
    let left_out = match left_out {
        Some(line) => Some(place(line.start)?),
        None => None,
    };
    let (Ok(from), Ok(to)) = (u16::try_from(length_at.0), u16::try_from(length_at.1)) else {
        return Some(Parsed::Other);
    };
    Some(Parsed::Fast(Head {
        len,
        body,
        close,
        credential: credential_at,
        left_out,
        length: (from, to),
        traceparent,
        tracestate,
    }))
}

/// Where `value` (in `buf`) is in the whole buffer, as 16-bit places: past the line left out
/// of `buf`, if any, one line's length further. `None` for places that do not fit.
fn at_in_whole(buf: &[u8], value: &[u8], left_out: Option<KeptLine>) -> Option<(NonZeroU16, u16)> {
    let mut at = value.as_ptr() as usize - buf.as_ptr() as usize;
    if let Some(line) = left_out.filter(|line| at >= line.start) {
        at += line.len();
    }
    Some((place(at)?, u16::try_from(at + value.len()).ok()?))
}

/// Reads more into `buf` (at least one byte, or `Ok(false)` at the end of the stream);
/// `Err(TimedOut)` past `deadline`.
async fn fill<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<bool> {
    if buf.capacity() - buf.len() < 512 {
        buf.reserve(KEEP.max(buf.len()));
    }
    let n = match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
        Ok(n) => n?,
        Err(_) => return Err(io::ErrorKind::TimedOut.into()),
    };
    Ok(n > 0)
}

async fn run<I: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut I,
    inner: &Inner,
    traced: Option<&Traced>,
) -> io::Result<End> {
    let mut buf: Vec<u8> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    // When the head now in the buffer began (slowloris: a head must be whole in time).
    let mut head_since: Option<Instant> = None;
    // The idle timeout: one timer for the connection's life, moved only when it fires early
    // (see `wait_idle`), so that a request costs no timer registration.
    let idle_timer = tokio::time::sleep(inner.endpoint.idle_connection);
    tokio::pin!(idle_timer);
    let mut idle_since = Instant::now();
    // The caller the connection last let in (boxed: a connection without an authenticator
    // keeps a pointer's worth).
    let mut admitted: Option<Box<Admitted>> = None;
    // The last head taken (with an authenticator: only once let in), to recognise the next
    // without parsing it ([`last_head`]). With an authenticator the head must be the same to
    // the byte (the caller let in keeps it); without, its `Content-Length` may differ.
    let mut last: Option<Box<LastHead>> = None;
    let any_length = inner.service.authenticator_ref().is_none();
    // On a traced connection: the caller of its requests with no credential and no trace
    // context (the peer alone), made once.
    let mut peer_caller: Option<Arc<rpcwire_tokio::Caller>> = None;
    loop {
        let credential = inner.credential_header.as_deref();
        // In a block, and kept as a flag: the connection's future holds what lives across
        // its awaits.
        let (recognised, parsed) = {
            let again = match &mut last {
                Some(last) => last.again(&buf, inner.endpoint.max_body, any_length),
                None => None,
            };
            match again {
                Some(head) => (true, Parsed::Fast(head)),
                None => {
                    let parsed = parse(
                        inner,
                        traced.is_some(),
                        credential,
                        admitted.as_deref_mut(),
                        &buf,
                    );
                    // Another head: the last one no longer stands for the caller let in
                    // (until this one is, if it is). Not yet a head: nothing changes.
                    if let (Some(last), Parsed::Fast(_) | Parsed::Other) = (&mut last, &parsed) {
                        last.forget();
                    }
                    (false, parsed)
                }
            }
        };
        let head = match parsed {
            Parsed::Other => return Ok(End::Hyper(buf)),
            Parsed::Fast(head) => head,
            Parsed::Partial => {
                if buf.len() >= MAX_HEAD {
                    return Ok(End::Hyper(buf));
                }
                if buf.is_empty() && out.capacity() > 0 {
                    // Idle (before the first request, or between requests): nothing held but
                    // the socket, for at most the idle timeout.
                    out = Vec::new();
                }
                let idle_end = idle_since + inner.endpoint.idle_connection;
                let timeout = inner.endpoint.timeout;
                let more = read_head(
                    stream,
                    &mut buf,
                    idle_timer.as_mut(),
                    idle_end,
                    &mut head_since,
                    timeout,
                );
                if more.await? {
                    continue;
                }
                return Ok(End::Close);
            }
        };
        head_since = None;
        let start = Instant::now();
        let deadline = start + inner.endpoint.timeout;
        let total = head.len + head.body;
        // Authentication first, from the head alone, as on hyper's path: a refused request's
        // body is then read only to be dropped.
        let caller = match inner.service.authenticator_ref() {
            None => None,
            Some(_) => {
                // A head parsed without the kept line has the kept value, and the last head
                // the connection let in has its caller's: no need to read it.
                let (value, renew) = match (recognised, head.left_out()) {
                    (true, _) => (None, Renew::Unchanged),
                    (false, Some(at)) => (None, Renew::WithoutLine(at)),
                    (false, None) => (head.credential(&buf), Renew::Whole),
                };
                if !kept(&mut admitted, &buf[..head.len], value, renew, start) {
                    // Boxed: the authenticator is asked only on a new credential, refusals are
                    // rare, and every idle connection keeps this future.
                    let asked = Box::pin(ask(
                        &inner.service,
                        &mut admitted,
                        stream,
                        &mut buf,
                        &mut out,
                        &head,
                        start,
                        deadline,
                    ));
                    match asked.await? {
                        Asked::Admitted => {}
                        Asked::Refused { close: true } => return Ok(End::Close),
                        Asked::Refused { close: false } => {
                            idle_since = Instant::now();
                            continue;
                        }
                    }
                }
                // Let in: `admit` has remembered the caller.
                let Some(admitted) = admitted.as_deref() else {
                    return Ok(End::Close);
                };
                Some(admitted.caller())
            }
        };
        // A traced call's caller: the connection's peer and the request's trace context.
        // A `match`, not `Option::map`: the closure made the connection's future 8 bytes
        // larger (`an_idle_connection_keeps_a_small_future`).
        #[allow(clippy::manual_map)]
        let traced_caller = match traced {
            Some(traced) => Some(traced_caller(caller, traced, &mut peer_caller, &head, &buf)),
            None => None,
        };
        let caller = traced_caller.as_ref().or(caller);
        if !recognised {
            match &mut last {
                Some(last) => last.renew(&buf, head),
                None => last = Some(Box::new(LastHead::new(&buf, head))),
            }
        }
        match read_body(stream, &mut buf, total, deadline).await? {
            BodyRead::Whole => {}
            BodyRead::Closed => return Ok(End::Close),
            BodyRead::TooSlow => {
                // As hyper's path answers a body that comes too slowly; the rest of it would be
                // taken for the next request: close after the answer.
                write_reply(
                    &mut out,
                    Reply::Refused(StatusCode::REQUEST_TIMEOUT, "body too slow\n"),
                    true,
                    Instant::now(),
                );
                stream.write_all(&out).await?;
                return Ok(End::Close);
            }
        }
        let body = &buf[head.len..total];
        // A call answered at once (a handler that does not wait) is not raced with a read: no
        // system call is added to it. A client that closes (or half-closes) its connection
        // while its call runs has gone: the call is dropped, which cancels its handlers, as
        // hyper's path does. `out` (empty between answers) takes what arrives meanwhile: the
        // next pipelined requests, up to a head's worth.
        let reply = {
            let answer = inner.answer(body, true, false, deadline, caller);
            UnlessClosed::<_, _, Keep> {
                stream: &mut *stream,
                answer,
                early: &mut out,
                room: std::marker::PhantomData,
            }
            .await
        };
        let Some(reply) = reply else {
            tracing::debug!(parent: rpcwire_telemetry::span_parent(), "the client closed its connection during its call: cancelled");
            return Ok(End::Close);
        };
        buf.drain(..total);
        buf.extend_from_slice(&out);
        out.clear();
        // The answer goes out of the read buffer when nothing more was read (a client that
        // waits for each answer): no second buffer is held between requests.
        let pipelined = !buf.is_empty();
        let written = if pipelined { &mut out } else { &mut buf };
        written.clear();
        // One clock reading for the answer's date and the start of the idle time.
        let now = Instant::now();
        write_reply(written, reply, head.close, now);
        stream.write_all(written).await?;
        written.clear();
        if buf.is_empty() && buf.capacity() > KEEP {
            buf = Vec::new();
        }
        if out.capacity() > KEEP {
            out = Vec::new();
        }
        if head.close {
            stream.shutdown().await.ok();
            return Ok(End::Close);
        }
        idle_since = now;
    }
}

/// `caller` (anonymous if none) with what a [`Traced`] connection tells its calls: the
/// fast path's [`crate::server::traced_caller`]. An anonymous request with no trace context
/// (most, and all of a sampled-out load's) shares `kept`, the connection's, made once: no
/// allocation per request.
fn traced_caller(
    caller: Option<&Arc<rpcwire_tokio::Caller>>,
    traced: &Traced,
    kept: &mut Option<Arc<rpcwire_tokio::Caller>>,
    head: &Head,
    buf: &[u8],
) -> Arc<rpcwire_tokio::Caller> {
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
    caller: Option<&Arc<rpcwire_tokio::Caller>>,
    traced: &Traced,
    traceparent: Option<&[u8]>,
    tracestate: Option<&[u8]>,
) -> rpcwire_tokio::Caller {
    let caller = match caller {
        Some(caller) => caller.as_ref().clone(),
        None => {
            rpcwire_tokio::Caller::new(rpcwire_tokio::Identity::anonymous(), crate::transport::HTTP)
        }
    };
    crate::server::with_trace(
        caller,
        traced.peer,
        traceparent.into_iter(),
        tracestate.into_iter(),
    )
}

pin_project_lite::pin_project! {
    /// `answer`'s reply, or `None` when the client closes its side of the connection (or the
    /// connection fails) first. Bytes read meanwhile are appended to `early`, which stops being
    /// read once it holds [`MAX_HEAD`] bytes; when it is full it grows by `R::BYTES` at a
    /// time.
    ///
    /// The call is polled first, and the socket read only while it waits: a call answered at
    /// once (a handler that does not wait) adds no system call. A future written out rather
    /// than an `async fn`: that would hold the call's future twice (its argument and the pinned
    /// copy), and the call pinned beside a `select!` made the connection's future, which every
    /// idle connection keeps, a third larger; this one takes the awaited call's place.
    pub(crate) struct UnlessClosed<'a, I, F, R> {
        pub(crate) stream: &'a mut I,
        #[pin]
        pub(crate) answer: F,
        pub(crate) early: &'a mut Vec<u8>,
        pub(crate) room: std::marker::PhantomData<R>,
    }
}

/// How much [`UnlessClosed`] reserves in its buffer at a time.
pub(crate) trait Room {
    /// The bytes reserved when the buffer is (nearly) full.
    const BYTES: usize;
}

/// [`KEEP`] at a time: the fast path, where a wait is short and pipelined requests likely.
pub(crate) struct Keep;

impl Room for Keep {
    const BYTES: usize = KEEP;
}

impl<I, F, R> Future for UnlessClosed<'_, I, F, R>
where
    I: AsyncRead + Unpin,
    F: Future,
    R: Room,
{
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = self.project();
        if let Poll::Ready(reply) = this.answer.poll(cx) {
            return Poll::Ready(Some(reply));
        }
        while this.early.len() < MAX_HEAD {
            // Room for a few requests per read (a `Vec` alone would offer 64 bytes).
            if this.early.capacity() - this.early.len() < R::BYTES.min(512) {
                this.early.reserve(R::BYTES);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut **this.stream), cx, *this.early) {
                Poll::Pending => break,
                Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(None),
                Poll::Ready(Ok(_)) => {}
            }
        }
        Poll::Pending
    }
}

/// Reads more of the next request's head into `buf`: while it is empty, as [`wait_idle`]
/// (the connection idle until `idle_end`); once part of a head is in, by the head's deadline
/// (set in `head_since` when its first bytes came, `timeout` later). `Ok(false)`: close the
/// connection (the peer closed, or was too slow).
pub(crate) async fn read_head<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    timer: Pin<&mut tokio::time::Sleep>,
    idle_end: Instant,
    head_since: &mut Option<Instant>,
    timeout: Duration,
) -> io::Result<bool> {
    let read = if buf.is_empty() {
        wait_idle(stream, buf, timer, idle_end).await
    } else {
        let deadline = *head_since.get_or_insert_with(|| Instant::now() + timeout);
        fill(stream, buf, deadline).await
    };
    match read {
        Ok(more) => Ok(more),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            tracing::debug!(parent: rpcwire_telemetry::span_parent(), "no request, or not its whole head, in time: closed");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// How reading a request's body ended.
pub(crate) enum BodyRead {
    /// The buffer holds it.
    Whole,
    /// The peer closed first.
    Closed,
    /// It did not come by its deadline.
    TooSlow,
}

/// Reads until `buf` holds `total` bytes (a head and its body), by `deadline`.
pub(crate) async fn read_body<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    total: usize,
    deadline: Instant,
) -> io::Result<BodyRead> {
    while buf.len() < total {
        buf.reserve(total - buf.len());
        match fill(stream, buf, deadline).await {
            Ok(true) => {}
            Ok(false) => return Ok(BodyRead::Closed),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(BodyRead::TooSlow),
            Err(e) => return Err(e),
        }
    }
    Ok(BodyRead::Whole)
}

/// Reads the first bytes of the next request into the empty `buf` (`Ok(false)` at the end of
/// the stream); `Err(TimedOut)` once `end` has passed with nothing read. `timer` is the
/// connection's idle timer: it fires at or before `end` (it was set for an earlier idle
/// period), and is moved to `end` only then.
async fn wait_idle<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    mut timer: Pin<&mut tokio::time::Sleep>,
    end: Instant,
) -> io::Result<bool> {
    buf.reserve(KEEP);
    loop {
        tokio::select! {
            biased;
            n = stream.read_buf(buf) => return Ok(n? > 0),
            () = &mut timer => {
                if Instant::now() >= end {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                timer.as_mut().reset(end);
            }
        }
    }
}

/// Writes the HTTP/1.1 response hyper's path sends for `reply` (the same status line, header
/// fields and body; hyper writes them in this order).
fn write_reply(out: &mut Vec<u8>, reply: Reply, close: bool, now: Instant) {
    let (code, content_type, body): (StatusCode, Option<&str>, Bytes) = match reply {
        Reply::Accepted => (StatusCode::ACCEPTED, None, Bytes::new()),
        Reply::Refused(code, why) => (
            code,
            Some("text/plain; charset=utf-8"),
            Bytes::from_static(why.as_bytes()),
        ),
        Reply::Json(message) => (
            Reply::json_status(&message),
            Some("application/json"),
            message,
        ),
        // Event streams need a client that accepts them, and those are hyper's (see `parse`).
        Reply::OneEvent(_) | Reply::Events(..) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Some("text/plain; charset=utf-8"),
            Bytes::from_static(b"unexpected event stream\n"),
        ),
    };
    // The head is at most about 160 bytes.
    out.reserve(192 + body.len());
    if code == StatusCode::OK && content_type == Some("application/json") && !close {
        // The usual answer: its head up to the length's digits in one piece, then the
        // digits, the date's lines and the body.
        out.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ",
        );
        push_decimal(out, body.len());
        date_lines(out, now);
        out.extend_from_slice(&body);
        return;
    }
    if code == StatusCode::OK && content_type == Some("application/json") {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(code.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(code.canonical_reason().unwrap_or("").as_bytes());
        out.extend_from_slice(b"\r\n");
        if let Some(ct) = content_type {
            out.extend_from_slice(b"content-type: ");
            out.extend_from_slice(ct.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
        if code == StatusCode::TOO_MANY_REQUESTS {
            out.extend_from_slice(b"retry-after: 1\r\n");
        }
    }
    write_tail(out, close, body.chunk(), now);
}

/// The end of an answer: `connection: close` when closing, then the fields hyper adds
/// (`content-length`, `date`), the blank line and the body.
fn write_tail(out: &mut Vec<u8>, close: bool, body: &[u8], now: Instant) {
    if close {
        out.extend_from_slice(b"connection: close\r\n");
    }
    out.extend_from_slice(b"content-length: ");
    push_decimal(out, body.len());
    date_lines(out, now);
    out.extend_from_slice(body);
}

/// What the authenticator said of a request.
enum Asked {
    /// Let in: the caller is remembered.
    Admitted,
    /// Refused, and answered; `close`: the connection is to be closed.
    Refused { close: bool },
}

/// Asks the authenticator about the request whose head is in `buf` and remembers its caller
/// in `admitted`, or answers the refusal ([`refuse`]).
#[allow(clippy::too_many_arguments)] // the connection's state, borrowed for one request
async fn ask<I: AsyncRead + AsyncWrite + Unpin>(
    service: &rpcwire_service::Service,
    admitted: &mut Option<Box<Admitted>>,
    stream: &mut I,
    buf: &mut Vec<u8>,
    out: &mut Vec<u8>,
    head: &Head,
    start: Instant,
    deadline: Instant,
) -> io::Result<Asked> {
    let value = head.credential(buf);
    let refusal = match admit(service, admitted, &buf[..head.len], value, start).await {
        Ok(()) => return Ok(Asked::Admitted),
        Err(refusal) => refusal,
    };
    let close = refuse(stream, buf, out, refusal, head, deadline).await?;
    Ok(Asked::Refused { close })
}

/// Answers a request refused from its head with `refusal` once its body is read and
/// dropped (within `deadline`), as hyper's path does ([`crate::server::after_body`]): a
/// body that does not come in time gets the refusal with `connection: close`. True when
/// the connection is to be closed.
async fn refuse<I: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    out: &mut Vec<u8>,
    mut refusal: Response<Body>,
    head: &Head,
    deadline: Instant,
) -> io::Result<bool> {
    let total = head.len + head.body;
    let mut close = head.close;
    while buf.len() < total {
        buf.reserve(total - buf.len());
        match fill(stream, buf, deadline).await {
            Ok(true) => {}
            Ok(false) => return Ok(true),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                refusal
                    .headers_mut()
                    .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                close = true;
                break;
            }
            Err(e) => return Err(e),
        }
    }
    buf.drain(..total.min(buf.len()));
    out.clear();
    write_response(out, refusal, close, Instant::now());
    stream.write_all(out).await?;
    out.clear();
    if close {
        stream.shutdown().await.ok();
    }
    Ok(close)
}

/// Writes the HTTP/1.1 response hyper's path sends for `response`, a refusal with its whole
/// body (the status line, its header fields in order, then those hyper adds).
fn write_response(out: &mut Vec<u8>, response: Response<Body>, close: bool, now: Instant) {
    let (parts, body) = response.into_parts();
    let body = body.into_full().unwrap_or_default();
    out.reserve(256 + body.len());
    out.extend_from_slice(b"HTTP/1.1 ");
    out.extend_from_slice(parts.status.as_str().as_bytes());
    out.push(b' ');
    out.extend_from_slice(parts.status.canonical_reason().unwrap_or("").as_bytes());
    out.extend_from_slice(b"\r\n");
    for (name, value) in &parts.headers {
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    // A `connection: close` the refusal carries already is not written twice.
    let close = close && !parts.headers.contains_key(http::header::CONNECTION);
    write_tail(out, close, &body, now);
}

/// Appends `n` in decimal (without `fmt`'s machinery: this runs for every answer).
pub(crate) fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    if n < 100 {
        // The usual answer's length, without the loop and the copy.
        if n >= 10 {
            out.push(b'0' + (n / 10) as u8);
        }
        out.push(b'0' + (n % 10) as u8);
        return;
    }
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// The bytes [`date_lines`] writes before the date, and after it.
const DATE_BEFORE: &[u8] = b"\r\ndate: ";
const DATE_AFTER: &[u8] = b"\r\n\r\n";

/// Appends the current `Date` value: formatted once a second per thread, as hyper does, and
/// looked up by the monotonic `now` the caller has read anyway (the wall clock is read only
/// when the second has changed).
pub(crate) fn date(out: &mut Vec<u8>, now: Instant) {
    with_date(now, |lines| {
        out.extend_from_slice(&lines[DATE_BEFORE.len()..lines.len() - DATE_AFTER.len()]);
    });
}

/// Appends the end of an answer's head from the line end before its `date` field on: CR LF,
/// `date: `, the current date ([`date`]), and the blank line, in one piece.
fn date_lines(out: &mut Vec<u8>, now: Instant) {
    with_date(now, |lines| out.extend_from_slice(lines));
}

/// Runs `f` with the current date's lines (`\r\ndate: <date>\r\n\r\n`).
fn with_date(now: Instant, f: impl FnOnce(&[u8])) {
    struct Cached {
        /// When the text stops being the current second.
        until: Option<Instant>,
        /// The date's lines, as [`date_lines`] writes them.
        text: Vec<u8>,
    }
    thread_local! {
        static CACHED: std::cell::RefCell<Cached> =
            const { std::cell::RefCell::new(Cached { until: None, text: Vec::new() }) };
    }
    CACHED.with(|c| {
        let mut c = c.borrow_mut();
        if c.until.is_none_or(|until| now >= until) {
            let wall = SystemTime::now();
            let into_second = wall
                .duration_since(SystemTime::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let left =
                Duration::from_nanos(u64::from(1_000_000_000 - into_second.min(999_999_999)));
            let mut text = DATE_BEFORE.to_vec();
            text.extend_from_slice(httpdate::fmt_http_date(wall).as_bytes());
            text.extend_from_slice(DATE_AFTER);
            *c = Cached {
                until: Some(now + left),
                text,
            };
        }
        f(&c.text);
    });
}

/// The connection, with bytes already read from it served first: what hyper reads when the
/// fast path hands a connection over.
pub(crate) struct Rewind<I> {
    read: Bytes,
    io: I,
}

impl<I> Rewind<I> {
    fn new(read: Vec<u8>, io: I) -> Self {
        Rewind {
            read: Bytes::from(read),
            io,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read.has_remaining() {
            read_from(&mut this.read, buf);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `field_is` agrees with a case-insensitive comparison for every token character
    /// against every character a lower-case name it is given may hold.
    #[test]
    fn field_is_compares_names_exactly() {
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        let lower = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-';
        for n in (0..=255u8).filter(|&b| token(b)) {
            for l in (0..=255u8).filter(|&b| lower(b)) {
                let expected = n.eq_ignore_ascii_case(&l);
                // Alone (the tail loop) and ninth of nine (after one whole word).
                assert_eq!(field_is(&[n], &[l]), expected, "{n:#x} ~ {l:#x}");
                let (mut name, mut want) = (*b"x-api-ke?", *b"x-api-ke?");
                name[8] = n;
                want[8] = l;
                assert_eq!(field_is(&name, &want), expected, "{n:#x} ~ {l:#x}");
                name[8] = b'y';
                want[8] = b'y';
                name[3] = n;
                want[3] = l;
                assert_eq!(
                    field_is(&name, &want),
                    expected,
                    "{n:#x} ~ {l:#x} in a word"
                );
            }
        }
    }

    /// Every idle keep-alive connection keeps its `run` future (in its task) for as long as it
    /// stays open: a change that makes the future larger costs that much per connection, as a
    /// call pinned beside a `select!` once did (1 416 bytes). Raise the bound knowingly:
    /// 1 152 until a request's caller (a pointer kept through the nested answering futures,
    /// for authentication and access rules) made it 1 216, 1 240 with authentication on the
    /// fast path (the connection's remembered caller, the request's start time), 1 248
    /// with the choice of a traced batch's span, 1 256 with the last head kept to
    /// recognise the next (a pointer: `last_head`), and 1 296 with traced calls on the fast
    /// path (the connection's `Traced`, its peer's caller and the request's, and the trace
    /// headers' places in the head: 40 bytes, in place of hyper's whole connection state
    /// per traced connection).
    #[tokio::test]
    async fn an_idle_connection_keeps_a_small_future() {
        let service = crate::HttpServer::new(rpcwire_tokio::Builder::new()).build();
        let (mut stream, _peer) = tokio::io::duplex(64);
        let future = run(&mut stream, &service.inner, None);
        let size = std::mem::size_of_val(&future);
        println!("the fast path's connection future: {size} bytes");
        assert!(
            size <= 1_296,
            "the fast path's connection future is {size} bytes"
        );
    }

    /// A head recognised as the last one ([`LastHead::again`]) is the head `parse` makes of
    /// the same bytes: random heads (the usual fields in any order, a credential before or
    /// after `Content-Length`, spaces around its value), then the next request's bytes: the
    /// same, other digits (leading zeros, over the body limit, too many for a `usize`), one
    /// byte changed, added or removed anywhere, or cut anywhere; with and without an
    /// authenticator (then only the same bytes are recognised).
    #[tokio::test]
    async fn a_head_recognised_again_is_the_parse_of_its_bytes() {
        use proptest::prelude::*;
        use proptest::sample::select;
        use proptest::test_runner::{Config, TestRunner};

        let plain = crate::HttpServer::new(rpcwire_tokio::Builder::new())
            .path("/rpc")
            .build();
        let token = one_token_service();
        let max_body = plain.inner.endpoint.max_body;
        let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
        let fields = (
            proptest::sample::subsequence(
                vec![
                    format!("Authorization: {TOKEN}\r\n"),
                    "Accept: application/json\r\n".to_owned(),
                    "X-Other: y\r\n".to_owned(),
                ],
                0..=3,
            )
            .prop_map(|mut lines| {
                lines.push("Host: 127.0.0.1\r\n".to_owned());
                lines.push("Content-Type: application/json\r\n".to_owned());
                lines
            })
            .prop_shuffle(),
            select(vec!["", " ", "  ", "\t"]),
            select(vec!["", " ", "\t "]),
            any::<usize>(),
        );
        let change = (
            0..6u8,
            any::<usize>(),
            any::<u8>(),
            prop_oneof![
                3 => proptest::string::string_regex("[0-9]{1,4}").expect("digits"),
                1 => proptest::string::string_regex("[0-9]{5,22}").expect("digits"),
            ],
        );
        let (hits, digits_hits) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let mut runner = TestRunner::new(Config {
            cases: 3_000,
            failure_persistence: None,
            ..Config::default()
        });
        let result = runner.run(
            &(fields, change, any::<bool>()),
            |((lines, lead, trail, at), (how, place, byte, digits), with_token)| {
                let service = if with_token { &token } else { &plain };
                let inner = &service.inner;
                let credential = inner.credential_header.as_deref();
                let mut lines = lines;
                let length = format!("Content-Length:{lead}{}{trail}\r\n", body.len());
                lines.insert(at % (lines.len() + 1), length);
                let head = format!("POST /rpc HTTP/1.1\r\n{}\r\n", lines.concat());
                let first = [head.as_bytes(), body.as_bytes()].concat();
                let Parsed::Fast(parsed) = parse(inner, false, credential, None, &first) else {
                    // Without a host or a type, say: hyper's, never kept.
                    return Ok(());
                };
                let mut last = LastHead::new(&first, parsed);
                let (from, to) = (parsed.length.0 as usize, parsed.length.1 as usize);
                let length = body.len().to_string();
                prop_assert_eq!(&first[from..to], length.as_bytes());
                let mut next = first.clone();
                match how {
                    0 => {}
                    1 => {
                        next.splice(from..to, digits.bytes());
                    }
                    2 => next[place % first.len()] = byte,
                    3 => next.insert(place % (first.len() + 1), byte),
                    4 => {
                        next.remove(place % first.len());
                    }
                    _ => next.truncate(place % first.len()),
                }
                let any_length = !with_token;
                let Some(again) = last.again(&next, max_body, any_length) else {
                    // The same head, or (without an authenticator) other digits that fit,
                    // is recognised.
                    let fits =
                        digits.len() <= 19 && digits.parse::<usize>().is_ok_and(|n| n <= max_body);
                    prop_assert!(how != 0, "the same head");
                    prop_assert!(!(how == 1 && any_length && fits), "{digits}");
                    return Ok(());
                };
                hits.set(hits.get() + 1);
                digits_hits.set(digits_hits.get() + usize::from(how == 1 && next != first));
                let Parsed::Fast(reparsed) = parse(inner, false, credential, None, &next) else {
                    panic!("recognised, but not the fast path's: {next:?}");
                };
                prop_assert_eq!(again, reparsed);
                // Recognised with an authenticator: the very same bytes.
                prop_assert!(any_length || next[..again.len] == first[..parsed.len]);
                Ok(())
            },
        );
        result.expect("recognised heads are parsed alike");
        let (hits, digits_hits) = (hits.get(), digits_hits.get());
        assert!(hits > 1_000 && digits_hits > 100, "{hits} {digits_hits}");
    }

    /// Lets in `Bearer ` and the token below, from `Authorization` alone.
    struct OneToken;

    const TOKEN: &str =
        "Bearer eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJiZW5jaCJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ";

    impl rpcwire_tokio::Authenticator for OneToken {
        fn authenticate<'a>(
            &'a self,
            credentials: rpcwire_tokio::Credentials<'a>,
        ) -> rpcwire_tokio::AuthFuture<'a> {
            let found = match credentials.bearer() {
                Ok(Some(t)) if t == &TOKEN[7..] => Ok(rpcwire_tokio::Identity::new("one")),
                Ok(_) => Err(rpcwire_tokio::AuthError::Missing),
                Err(e) => Err(e),
            };
            Box::pin(std::future::ready(found))
        }

        fn credential_header(&self) -> Option<&str> {
            Some("authorization")
        }
    }

    /// A traced connection's fast path serves a call carrying a W3C trace context: its caller
    /// gets the `traceparent` and `tracestate` values and the connection's peer (what its
    /// span's parent and `network.peer.*` come from), with and without a kept credential line
    /// before them; an untraced connection reads neither header; a repeated `traceparent`
    /// is hyper's.
    #[tokio::test]
    async fn a_traced_connection_serves_its_trace_context_on_the_fast_path() {
        const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let router = rpcwire_tokio::Router::new().method_with_context(
            "whoami",
            |cx: rpcwire_tokio::Context, _: Option<serde_json::Value>| async move {
                let caller = cx.caller();
                Ok::<_, rpcwire_tokio::RpcError>(serde_json::json!([
                    caller.trace_context().map(|t| t.traceparent()),
                    caller.trace_context().and_then(|t| t.tracestate()),
                    caller.peer_addr().map(|p| p.to_string()),
                ]))
            },
        );
        let service = crate::HttpServer::new(rpcwire_tokio::Builder::new().router(router))
            .path("/rpc")
            .build();
        let peer: std::net::SocketAddr = "127.0.0.1:4242".parse().unwrap();
        let body = r#"{"jsonrpc":"2.0","method":"whoami","id":1}"#;
        // The connection's answer to `extra` header lines, and how the fast path ended.
        let served = |traced: Option<Traced>, extra: String| {
            let inner = Arc::clone(&service.inner);
            async move {
                let (mut client, mut server) = tokio::io::duplex(1 << 16);
                let head = format!(
                    "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
                     {extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                client.write_all(head.as_bytes()).await.unwrap();
                let end = run(&mut server, &inner, traced.as_ref()).await.unwrap();
                drop(server);
                let mut answer = String::new();
                client.read_to_string(&mut answer).await.unwrap();
                let json = answer.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
                (matches!(end, End::Close), json)
            }
        };
        let result = |json: &str| -> serde_json::Value {
            serde_json::from_str::<serde_json::Value>(json).unwrap()["result"].clone()
        };
        let traced = || Some(Traced { peer: Some(peer) });
        let with_context = format!("traceparent: {TP}\r\nTraceState: a=1\r\n");
        let (fast, json) = served(traced(), with_context.clone()).await;
        assert!(fast, "the fast path answered: {json}");
        assert_eq!(
            result(&json),
            serde_json::json!([TP, "a=1", "127.0.0.1:4242"])
        );
        // Without a peer (a connection handed to `serve_connection`): the context alone.
        let (fast, json) = served(Some(Traced { peer: None }), with_context.clone()).await;
        assert!(fast);
        assert_eq!(result(&json), serde_json::json!([TP, "a=1", null]));
        // Untraced: neither is read.
        let (fast, json) = served(None, with_context).await;
        assert!(fast);
        assert_eq!(result(&json), serde_json::json!([null, null, null]));
        // Traced, no context: the peer alone.
        let (fast, json) = served(traced(), String::new()).await;
        assert!(fast);
        assert_eq!(
            result(&json),
            serde_json::json!([null, null, "127.0.0.1:4242"])
        );
        // Twice: hyper's path decides (and ignores it), nothing answered here.
        let (fast, json) = served(
            traced(),
            format!("traceparent: {TP}\r\ntraceparent: {TP}\r\n"),
        )
        .await;
        assert!(!fast && json.is_empty(), "{json}");
    }

    /// A service at `/rpc` with [`OneToken`].
    fn one_token_service() -> RpcService {
        crate::HttpServer::new(
            rpcwire_tokio::Builder::new().map_service(|s| s.authenticator(OneToken)),
        )
        .path("/rpc")
        .build()
    }

    /// A connection's caller let in by the token, from `head`.
    async fn token_kept(head: &str) -> Option<Box<Admitted>> {
        let mut admitted = None;
        let (head, token) = (head.as_bytes(), Some(TOKEN.as_bytes()));
        let service = rpcwire_service::Service::client_only().authenticator(OneToken);
        admit(&service, &mut admitted, head, token, Instant::now())
            .await
            .expect("let in");
        admitted
    }

    /// What `parse` made of a head, comparable: the credential as its bytes.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Partial,
        Other,
        Fast(usize, usize, bool, Option<Vec<u8>>),
    }

    fn seen(parsed: Parsed, buf: &[u8]) -> (Seen, Option<usize>) {
        match parsed {
            Parsed::Partial => (Seen::Partial, None),
            Parsed::Other => (Seen::Other, None),
            Parsed::Fast(h) => {
                let value = h.credential(buf).map(<[u8]>::to_vec);
                (Seen::Fast(h.len, h.body, h.close, value), h.left_out())
            }
        }
    }

    /// A head parsed without the kept credential's line is parsed as the whole head is:
    /// random heads whose lines are the kept credential (in any case, with any spaces),
    /// nearly it (a byte changed, added or removed, a control byte, NUL, CR, LF, an obsolete
    /// fold, trailing space inside or after it), other fields, repeated or broken lines, cut
    /// anywhere, get the same outcome from `parse` with the kept caller as without it, and
    /// the handlers' header map of a head parsed without the line is the whole head's.
    #[tokio::test]
    async fn heads_parsed_without_the_kept_line_are_parsed_alike() {
        use proptest::prelude::*;
        use proptest::sample::select;
        use proptest::test_runner::{Config, TestRunner};

        let service = one_token_service();
        let inner = &service.inner;
        let name = inner.credential_header.as_deref();
        let first = format!("POST /rpc HTTP/1.1\r\nAuthorization: {TOKEN}\r\n\r\n");
        let admitted = token_kept(&first).await;

        let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
        let bytes = |s: &str| s.as_bytes().to_vec();
        let line = |n: &str, v: &[u8]| [n.as_bytes(), b":", v, b"\r\n"].concat();
        let token = || bytes(TOKEN);
        let fields = vec![
            line("Host", b" 127.0.0.1"),
            line("Content-Type", b" application/json"),
            line("Content-Length", format!(" {}", body.len()).as_bytes()),
            line("Content-Length", b" 1"),
            line("Accept", b" application/json"),
            line("Connection", b" close"),
            line("X-Trace", b" abc"),
            line("Authorization", &[b" ", &token()[..]].concat()),
            line("authorization", &[b"\t \t", &token()[..]].concat()),
            line("AUTHORIZATION", &[b"", &token()[..]].concat()),
            line("Authorization", &[b" ", &token()[..], b" "].concat()),
            line("Authorization", b" Bearer other"),
            line("Authorization ", &[b" ", &token()[..]].concat()),
            line("X-Authorization", &[b" ", &token()[..]].concat()),
            b" folded\r\n".to_vec(),
            b"\tfolded\r\n".to_vec(),
            b"Bad Name: x\r\n".to_vec(),
            // Longer than what is copied after the kept line.
            line("X-Long", "y".repeat(KEEP + 100).as_bytes()),
            // With the kept line: one field more than the fast path parses.
            (0..MAX_HEADERS - 3)
                .flat_map(|i| line(&format!("X-{i}"), b" y"))
                .collect(),
            [b"Authorization: ", &token()[..], b"\n"].concat(),
            // A trace context (read on traced connections): its places move with the line.
            line(
                "traceparent",
                b" 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            ),
            line("TraceState", b" a=1,b=2"),
        ];
        let n = fields.len();
        // `run` takes an `Fn`.
        let admitted = std::cell::RefCell::new(admitted);
        let (left_outs, fasts) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
        let head = (
            select(vec![
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.1",
                "POST /rpc HTTP/1.0",
                "GET /rpc HTTP/1.1",
                "POST /x HTTP/1.1",
                "\r\nPOST /rpc HTTP/1.1",
            ]),
            // Which of the usual fields (host, type, length) are left out, one time in ten.
            proptest::collection::vec(proptest::bool::weighted(0.1), 3),
            // Other lines, and where they go: the kept credential's as it may stand, often.
            proptest::collection::vec(
                (
                    select((3..n).chain([7, 7, 8, 9, 7, 7, 8, 9]).collect::<Vec<_>>()),
                    any::<usize>(),
                ),
                1..4,
            ),
            // A change to one line: (which line, where, how, the byte).
            proptest::option::weighted(
                0.3,
                (
                    any::<usize>(),
                    any::<usize>(),
                    0..3u8,
                    select(vec![
                        0u8, b'\t', b'\r', b'\n', b' ', 0x01, 0x7f, 0x80, 0xff, b'x', b'.', b':',
                    ]),
                ),
            ),
            proptest::bool::weighted(0.2),
            any::<usize>(),
            proptest::bool::weighted(0.2),
        );
        let mut runner = TestRunner::new(Config {
            cases: 4_000,
            failure_persistence: None,
            ..Config::default()
        });
        runner
            .run(
                &head,
                |(request_line, omit, extra, change, cut, at, kept_in_body)| {
                    let mut lines: Vec<Vec<u8>> = (0..3)
                        .filter(|&i| !omit[i])
                        .map(|i| fields[i].clone())
                        .collect();
                    for (i, place) in extra {
                        let place = place % (lines.len() + 1);
                        lines.insert(place, fields[i].clone());
                    }
                    if let (Some((which, pos, how, b)), false) = (change, lines.is_empty()) {
                        let count = lines.len();
                        let l = &mut lines[which % count];
                        let pos = pos % l.len();
                        match how {
                            0 => l[pos] = b,
                            1 => l.insert(pos, b),
                            _ => {
                                l.remove(pos);
                            }
                        }
                    }
                    let mut buf = [request_line.as_bytes(), b"\r\n"].concat();
                    for l in &lines {
                        buf.extend_from_slice(l);
                    }
                    buf.extend_from_slice(b"\r\n");
                    if kept_in_body {
                        // The kept line right after the head: not the head's.
                        buf.extend_from_slice(&fields[7]);
                    }
                    buf.extend_from_slice(body.as_bytes());
                    if cut {
                        buf.truncate(at % (buf.len() + 1));
                    }
                    let mut admitted = admitted.borrow_mut();
                    let whole = parse(inner, true, name, None, &buf);
                    let with = parse(inner, true, name, admitted.as_deref_mut(), &buf);
                    // The trace context's values, found in the whole buffer either way.
                    let trace = |parsed: &Parsed| match parsed {
                        Parsed::Fast(h) => {
                            let (parent, state) = h.trace_context(&buf);
                            Some((parent.map(<[u8]>::to_vec), state.map(<[u8]>::to_vec)))
                        }
                        _ => None,
                    };
                    prop_assert_eq!(trace(&with), trace(&whole));
                    let whole = seen(whole, &buf);
                    let left_out = matches!(&with, Parsed::Fast(h) if h.left_out.is_some());
                    let (head_len, credential) = match &with {
                        Parsed::Fast(h) => (h.len, h.credential(&buf)),
                        _ => (0, None),
                    };
                    let with = seen(with, &buf);
                    prop_assert_eq!(&with.0, &whole.0, "{:?}", String::from_utf8_lossy(&buf));
                    fasts.set(fasts.get() + usize::from(matches!(with.0, Seen::Fast(..))));
                    left_outs.set(left_outs.get() + usize::from(left_out));
                    if left_out {
                        // The value is the kept one, and the handlers see the whole head's fields.
                        let Seen::Fast(_, _, _, Some(value)) = &with.0 else {
                            panic!("a credential");
                        };
                        prop_assert_eq!(&value[..], TOKEN.as_bytes());
                        let renew = match with.1 {
                            Some(at) => crate::fast_auth::Renew::WithoutLine(at),
                            None => crate::fast_auth::Renew::Whole,
                        };
                        prop_assert!(kept(
                            &mut admitted,
                            &buf[..head_len],
                            credential,
                            renew,
                            Instant::now()
                        ));
                        let caller = admitted.as_deref().expect("kept").caller();
                        let map = caller.meta::<http::HeaderMap>().expect("headers");
                        let expected = crate::fast_auth::header_map(&buf[..head_len], None);
                        prop_assert_eq!(map, &expected);
                        let order = |m: &http::HeaderMap| {
                            m.iter()
                                .map(|(n, v)| (n.clone(), v.clone()))
                                .collect::<Vec<_>>()
                        };
                        prop_assert_eq!(order(map), order(&expected));
                    }
                    Ok(())
                },
            )
            .unwrap();
        // The cases cover both ways (about a fifth of them taken, about a third of those
        // parsed without the line).
        println!(
            "{} taken, {} without the line",
            fasts.get(),
            left_outs.get()
        );
        assert!(left_outs.get() >= 150 && fasts.get() > left_outs.get());
    }

    /// A kept line where the last head had it but after this head's end is not this head's
    /// (the head is parsed whole, its credential missing).
    #[tokio::test]
    async fn a_kept_line_after_the_head_is_not_in_it() {
        let service = one_token_service();
        let inner = &service.inner;
        let name = inner.credential_header.as_deref();
        let line = format!("Authorization: {TOKEN}\r\n");
        let head = format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: 2\r\nX-Pad: 0123456789ab\r\n{line}\r\n[]"
        );
        let mut admitted = token_kept(&head).await;
        let Parsed::Fast(h) = parse(inner, false, name, admitted.as_deref_mut(), head.as_bytes())
        else {
            panic!("taken");
        };
        assert!(
            h.left_out.is_some(),
            "the line is found (and its place kept)"
        );
        // The same place, now in the body of a shorter head (a body of three digits' length).
        let filler = format!("{}\n", "x".repeat(16));
        let body = format!("{filler}{line}[]");
        let short = format!(
            "POST /rpc HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\n\r\n{body}",
            body.len()
        );
        assert_eq!(short.find("Authorization"), head.find("Authorization"));
        let with = seen(
            parse(
                inner,
                false,
                name,
                admitted.as_deref_mut(),
                short.as_bytes(),
            ),
            short.as_bytes(),
        );
        let whole = seen(
            parse(inner, false, name, None, short.as_bytes()),
            short.as_bytes(),
        );
        assert_eq!(with, whole);
        assert_eq!(
            with.0,
            Seen::Fast(short.len() - body.len(), body.len(), false, None)
        );
    }

    #[test]
    fn the_date_is_the_wall_clock_second() {
        let now = Instant::now();
        let (mut first, mut again) = (Vec::new(), Vec::new());
        date(&mut first, now);
        date(&mut again, now);
        assert_eq!(first, again, "one second's text is kept");
        let shown = httpdate::parse_http_date(std::str::from_utf8(&first).unwrap()).unwrap();
        let off = SystemTime::now()
            .duration_since(shown)
            .unwrap_or_else(|e| e.duration());
        assert!(off < Duration::from_secs(2), "{off:?}");
        // Past the second it was made in, the text is made again from the wall clock.
        let mut later = Vec::new();
        date(&mut later, now + Duration::from_millis(1001));
        let later = httpdate::parse_http_date(std::str::from_utf8(&later).unwrap()).unwrap();
        assert!(later >= shown);
    }

    #[test]
    fn field_names_match_in_any_case_and_nothing_else() {
        for (name, lower) in [
            (&b"Host"[..], &b"host"[..]),
            (b"CONTENT-LENGTH", b"content-length"),
            (b"content-Type", b"content-type"),
            (b"Transfer-Encoding", b"transfer-encoding"),
        ] {
            assert!(field_is(name, lower), "{name:?}");
        }
        for (name, lower) in [
            (&b"Hos"[..], &b"host"[..]),
            (b"content-lengtH2", b"content-length"),
            (b"content_length", b"content-length"),
            (b"content-lengti", b"content-length"),
            (b"content+type", b"content-type"),
            (b"Hosu", b"host"),
        ] {
            assert!(!field_is(name, lower), "{name:?}");
        }
        // Agrees with the byte-wise comparison over every token character in every place.
        let tokens: Vec<u8> = (33u8..127)
            .filter(|b| !b"\"(),/:;<=>?@[\\]{}".contains(b))
            .collect();
        for field in [&b"host"[..], b"content-length", b"transfer-encoding"] {
            for at in 0..field.len() {
                for &t in &tokens {
                    let mut name = field.to_vec();
                    name[at] = t;
                    assert_eq!(
                        field_is(&name, field),
                        name.eq_ignore_ascii_case(field),
                        "{:?}",
                        String::from_utf8_lossy(&name)
                    );
                }
            }
        }
    }

    #[test]
    fn content_lengths_are_digits_within_usize() {
        for (value, expected) in [
            (&b"0"[..], Some(0)),
            (b"62", Some(62)),
            (b"007", Some(7)),
            (b"18446744073709551615", Some(usize::MAX)),
            (b"18446744073709551616", None),
            (b"", None),
            (b"+1", None),
            (b" 1", None),
            (b"1a", None),
            (b"-0", None),
        ] {
            assert_eq!(
                decimal(value),
                expected,
                "{}",
                String::from_utf8_lossy(value)
            );
        }
    }

    #[test]
    fn decimals_are_written_as_format_writes_them() {
        for n in [0, 7, 9, 10, 99, 100, 12_345, u32::MAX as usize, usize::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
    }
}
