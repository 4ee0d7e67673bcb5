//! The HTTP/1.1 path of [`serve_profile`]: a profile's requests whose body has a known length
//! within the service's limit are read whole and answered in the connection's own task, the
//! response written here as hyper writes it (a plain body with `content-length`, a stream
//! with chunked transfer coding), with no hyper connection under them. Anything else hands the
//! connection, with the bytes already read, to hyper for the rest of its life.
//!
//! Why: a hyper HTTP/1.1 connection keeps an 8 KiB read buffer and an 8 KiB header buffer for
//! its whole life, so every open event stream (one connection each, as the A2A and MCP SDK
//! clients open them) held 16 KiB before any of its own state. Here the read buffer is given
//! back while a response streams (a few bytes are kept to see the client leave or pipeline),
//! and the head is written from a buffer freed once it is sent.
//!
//! Requests this path does not take (HTTP/1.0, `HEAD`, `CONNECT`, `Transfer-Encoding`,
//! `Expect`, `Upgrade` or another hop-by-hop `Connection` token, a body over the service's
//! limit, a head it cannot parse, longer than [`MAX_HEAD`] or with more than [`MAX_HEADERS`]
//! fields, a target that is not a path) go to hyper, which answers them exactly as before.

use std::io;
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http::header::{self, HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode, Uri, Version};
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::body::Body;
use crate::endpoint::Endpoint;
use crate::fast::{
    date, decimal, field_is, hyper_rest, push_decimal, read_body, read_head, BodyRead, End, Room,
    UnlessClosed, KEEP, MAX_HEAD, MAX_HEADERS,
};
use crate::server::{
    accept_loop, hyper_service, is_h2, run_hyper, ConnectionError, HandlesIncoming, Protocol,
    ResponseFuture,
};

/// What the socket is read into, a little at a time, while a request is answered or a
/// response streams: enough to see the client close, or to keep a pipelined request.
struct Streaming;

impl Room for Streaming {
    const BYTES: usize = 64;
}

/// A profile's service that also answers requests read whole, so that [`serve_profile`]
/// serves its HTTP/1.1 connections without hyper (see the module's docs); hyper's path
/// ([`HandlesIncoming`]) takes the requests this one does not.
pub trait HandlesWhole: HandlesIncoming {
    /// The service's settings: its body limit (a longer body goes to hyper's path, where the
    /// service refuses it as it reads), request time, connection limit and idle time.
    fn endpoint(&self) -> &Endpoint;

    /// Answers one request whose body (at most [`Endpoint::max_body`] bytes) has been read:
    /// as [`HandlesIncoming::handle_incoming`] answers the same request.
    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture;
}

/// Serves `service` on every connection accepted on `listener` until dropped: HTTP/1.1
/// connections on this crate's own path for whole requests (handed to hyper at the first
/// request it does not take), HTTP/2 through hyper; at most
/// [`Endpoint::max_connections`] at once, each closed after
/// [`Endpoint::idle_connection`] with no request under way.
pub async fn serve_profile<S: HandlesWhole>(listener: tokio::net::TcpListener, service: S) {
    let limit = service.endpoint().max_connections();
    let idle = service.endpoint().idle_connection();
    accept_loop(listener, limit, move |stream, peer, permit| {
        let service = service.clone();
        tokio::spawn(async move {
            let result = match is_h2(&stream, idle).await {
                None => Ok(()),
                Some(false) => serve_connection(stream, service).await,
                // Boxed: an HTTP/1.1 connection's task is not sized for HTTP/2's state.
                Some(true) => Box::pin(run_hyper(
                    stream,
                    Protocol::Http2,
                    idle,
                    hyper_service(service),
                ))
                .await
                .map_err(ConnectionError::from),
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "HTTP connection ended with an error");
            }
            drop(permit);
        });
    })
    .await;
}

/// Serves one HTTP/1.1 connection: whole requests here while they come, then hyper.
pub(crate) async fn serve_connection<I, S>(mut stream: I, service: S) -> Result<(), ConnectionError>
where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    S: HandlesWhole,
{
    if let End::Hyper(read) = run(&mut stream, &service).await? {
        let idle = service.endpoint().idle_connection();
        hyper_rest(read, stream, idle, service).await?;
    }
    Ok(())
}

/// A request head this path takes.
struct Head {
    /// Bytes of the head, the blank line included.
    len: usize,
    /// `Content-Length` (0 without one).
    body: usize,
    /// `Connection: close`: answer, then close.
    close: bool,
    /// The request without its body.
    request: Request<()>,
}

/// What the buffer starts with.
enum Parsed {
    /// Not a whole head yet.
    Partial,
    /// A request for this path.
    Whole(Box<Head>),
    /// A request for hyper.
    Other,
}

fn parse(endpoint: &Endpoint, buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Partial;
    }
    let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut headers);
    let len = match req.parse(buf) {
        Ok(httparse::Status::Complete(len)) => len,
        Ok(httparse::Status::Partial) => return Parsed::Partial,
        Err(_) => return Parsed::Other,
    };
    if req.version != Some(1) {
        return Parsed::Other;
    }
    let Some(Ok(method)) = req.method.map(|m| Method::from_bytes(m.as_bytes())) else {
        return Parsed::Other;
    };
    // `HEAD` answers have no body, `CONNECT` tunnels: hyper's.
    if method == Method::HEAD || method == Method::CONNECT {
        return Parsed::Other;
    }
    let Some(Ok(uri)) = req.path.filter(|p| p.starts_with('/')).map(Uri::try_from) else {
        return Parsed::Other;
    };
    let mut map = HeaderMap::with_capacity(req.headers.len());
    let (mut length, mut close) = (None, false);
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        let is = |field: &[u8]| field_is(name, field);
        if is(b"transfer-encoding") || is(b"expect") || is(b"upgrade") {
            return Parsed::Other;
        }
        if is(b"content-length") {
            if length.is_some() {
                return Parsed::Other;
            }
            match decimal(h.value) {
                Some(n) => length = Some(n),
                None => return Parsed::Other,
            }
        } else if is(b"connection") {
            let Ok(value) = std::str::from_utf8(h.value) else {
                return Parsed::Other;
            };
            for token in value.split(',') {
                let token = token.trim();
                if token.eq_ignore_ascii_case("close") {
                    close = true;
                } else if !token.eq_ignore_ascii_case("keep-alive") {
                    return Parsed::Other; // upgrades and hop-by-hop lists: hyper's
                }
            }
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(h.value),
        ) else {
            return Parsed::Other;
        };
        map.append(name, value);
    }
    let body = length.unwrap_or(0);
    if body > endpoint.max_body() {
        // The service refuses it while reading it, on hyper's path.
        return Parsed::Other;
    }
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = map;
    Parsed::Whole(Box::new(Head {
        len,
        body,
        close,
        request,
    }))
}

async fn run<I, S>(stream: &mut I, service: &S) -> io::Result<End>
where
    I: AsyncRead + AsyncWrite + Unpin,
    S: HandlesWhole,
{
    let endpoint = service.endpoint();
    let mut buf: Vec<u8> = Vec::new();
    let mut head_since: Option<Instant> = None;
    let idle_timer = tokio::time::sleep(endpoint.idle_connection());
    tokio::pin!(idle_timer);
    let mut idle_since = Instant::now();
    loop {
        let head = match parse(endpoint, &buf) {
            Parsed::Other => return Ok(End::Hyper(buf)),
            Parsed::Whole(head) => head,
            Parsed::Partial => {
                if buf.len() >= MAX_HEAD {
                    return Ok(End::Hyper(buf));
                }
                let idle_end = idle_since + endpoint.idle_connection();
                let more = read_head(
                    stream,
                    &mut buf,
                    idle_timer.as_mut(),
                    idle_end,
                    &mut head_since,
                    endpoint.timeout(),
                );
                if more.await? {
                    continue;
                }
                return Ok(End::Close);
            }
        };
        head_since = None;
        // The head stays boxed while its body comes: the connection's future holds a pointer
        // across that wait, not the request.
        let (len, close) = (head.len, head.close);
        let total = len + head.body;
        let deadline = Instant::now() + endpoint.timeout();
        match read_body(stream, &mut buf, total, deadline).await? {
            BodyRead::Whole => {}
            BodyRead::Closed => return Ok(End::Close),
            BodyRead::TooSlow => {
                // As the services answer a body that comes too slowly on hyper's path
                // (`read_post_body`); the rest of it would be taken for the next request.
                let mut r = crate::server::refuse(StatusCode::REQUEST_TIMEOUT, "body too slow\n");
                r.headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                respond(stream, &mut Vec::new(), prepare(r, true)).await?;
                return Ok(End::Close);
            }
        }
        let request = head
            .request
            .map(|()| Body::full(Bytes::copy_from_slice(&buf[len..total])));
        buf.drain(..total);
        if buf.is_empty() {
            // Nothing pipelined: the buffer is not held while the request is answered (an
            // event stream may stay open for hours).
            buf = Vec::new();
        }
        // A client that closes its connection while its request is answered has gone: the
        // answer is dropped, as hyper's path drops it. Bytes read meanwhile (the next
        // pipelined requests) are kept.
        let answer = UnlessClosed::<_, _, Streaming> {
            stream: &mut *stream,
            answer: service.handle_whole(request),
            early: &mut buf,
            room: std::marker::PhantomData,
        }
        .await;
        let Some(response) = answer else {
            tracing::debug!("the client closed its connection during its request");
            return Ok(End::Close);
        };
        let last = respond(stream, &mut buf, prepare(response, close)).await?;
        if last {
            stream.shutdown().await.ok();
            return Ok(End::Close);
        }
        if buf.is_empty() && buf.capacity() > KEEP {
            buf = Vec::new();
        }
        idle_since = Instant::now();
    }
}

/// A response ready to be written: its head (as hyper writes it), its body, how the body is
/// framed, and whether the connection ends with it.
struct Prepared {
    out: Vec<u8>,
    body: Body,
    framing: Framing,
    last: bool,
}

/// `response` made ready to write, for a client that asked to `close` or not. A 1xx status
/// (which a service cannot mean as a response) becomes the bare 500 hyper answers, and the
/// connection closes.
fn prepare(response: Response<Body>, close: bool) -> Prepared {
    let (mut parts, body) = response.into_parts();
    if parts.status.is_informational() {
        parts = Response::new(()).into_parts().0;
        parts.status = StatusCode::INTERNAL_SERVER_ERROR;
        let (out, _, _) = head(&mut parts, &Body::empty(), true);
        return Prepared {
            out,
            body: Body::empty(),
            framing: Framing::Bodiless,
            last: true,
        };
    }
    let (out, framing, last) = head(&mut parts, &body, close);
    Prepared {
        out,
        body,
        framing,
        last,
    }
}

/// How a response's body is framed on the wire.
enum Framing {
    /// No body: the statuses that have none (204, 304).
    Bodiless,
    /// `content-length`.
    Length,
    /// `transfer-encoding: chunked`.
    Chunked,
}

/// Writes `response` as hyper's HTTP/1.1 server writes it: the status line, the response's
/// own header fields in order (several `connection` values joined on one line), `connection:
/// close` when the client asked to close, then `content-length` for a body of known size or
/// `transfer-encoding: chunked` for a stream, then `date`. The body follows, each data frame
/// a chunk of a chunked body. Bytes the client sends meanwhile go to `early`. Returns whether
/// the connection ends with it (the client asked, the response says `connection: close`, or
/// the client went away during a stream).
async fn respond<I: AsyncRead + AsyncWrite + Unpin>(
    stream: &mut I,
    early: &mut Vec<u8>,
    response: Prepared,
) -> io::Result<bool> {
    // Taken apart by a plain function first: an `async fn` keeps its arguments for its whole
    // life, and this one lives as long as a stream is open.
    let Prepared {
        mut out,
        mut body,
        framing,
        last,
    } = response;
    match framing {
        Framing::Bodiless => write_all_and(stream, &out, last).await,
        Framing::Length => {
            // One frame (or none): the crate's bodies of known size.
            while let Some(frame) =
                std::future::poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await
            {
                if let Some(data) = frame.ok().and_then(|f| f.into_data().ok()) {
                    out.extend_from_slice(&data);
                }
            }
            write_all_and(stream, &out, last).await
        }
        Framing::Chunked => {
            loop {
                // Frames that are ready go out together; the socket is watched for the
                // client leaving only while none is.
                let flush = !out.is_empty();
                let step = UnlessClosed::<_, _, Streaming> {
                    stream: &mut *stream,
                    answer: std::future::poll_fn(|cx| match Pin::new(&mut body).poll_frame(cx) {
                        Poll::Pending if flush => Poll::Ready(None),
                        Poll::Pending => Poll::Pending,
                        Poll::Ready(frame) => Poll::Ready(Some(frame)),
                    }),
                    early: &mut *early,
                    room: std::marker::PhantomData,
                }
                .await;
                match step {
                    // The client has gone: the body is dropped (its producer sees it).
                    None => return Ok(true),
                    Some(None) => {
                        stream.write_all(&out).await?;
                        // Given back between events: a stream may wait for hours.
                        out = Vec::new();
                    }
                    Some(Some(Some(Ok(frame)))) => {
                        if let Ok(data) = frame.into_data() {
                            if !data.is_empty() {
                                out.reserve(data.len() + 12);
                                push_hex(&mut out, data.len());
                                out.extend_from_slice(b"\r\n");
                                out.extend_from_slice(&data);
                                out.extend_from_slice(b"\r\n");
                            }
                        }
                    }
                    Some(Some(None | Some(Err(_)))) => {
                        out.extend_from_slice(b"0\r\n\r\n");
                        return write_all_and(stream, &out, last).await;
                    }
                }
            }
        }
    }
}

async fn write_all_and<I: AsyncWrite + Unpin>(
    stream: &mut I,
    bytes: &[u8],
    last: bool,
) -> io::Result<bool> {
    stream.write_all(bytes).await?;
    Ok(last)
}

/// The response's head as hyper writes it, how its body is framed, and whether the
/// connection ends after it.
fn head(parts: &mut http::response::Parts, body: &Body, close: bool) -> (Vec<u8>, Framing, bool) {
    let mut out = Vec::with_capacity(64 + parts.headers.len() * 32);
    if parts.status == StatusCode::OK {
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
    } else {
        out.extend_from_slice(b"HTTP/1.1 ");
        out.extend_from_slice(parts.status.as_str().as_bytes());
        out.push(b' ');
        out.extend_from_slice(
            parts
                .status
                .canonical_reason()
                .unwrap_or("<none>")
                .as_bytes(),
        );
        out.extend_from_slice(b"\r\n");
    }
    let headers = &mut parts.headers;
    if close {
        match headers.entry(header::CONNECTION) {
            header::Entry::Occupied(mut e) => {
                if !e.iter().any(has_close) {
                    e.append(HeaderValue::from_static("close"));
                }
            }
            header::Entry::Vacant(e) => {
                e.insert(HeaderValue::from_static("close"));
            }
        }
    }
    let mut last = close;
    let mut wrote_date = false;
    for name in headers.keys() {
        // The framing is the body's, as hyper decides it when the response sets none (the
        // crate's responses never do).
        if name == header::CONTENT_LENGTH
            || name == header::TRANSFER_ENCODING
            || name == header::TRAILER
        {
            continue;
        }
        let mut values = headers.get_all(name).iter();
        if name == header::CONNECTION {
            out.extend_from_slice(b"connection: ");
            for (i, v) in values.enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                last |= has_close(v);
                out.extend_from_slice(v.as_bytes());
            }
            out.extend_from_slice(b"\r\n");
            continue;
        }
        wrote_date |= name == header::DATE;
        for v in values.by_ref() {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(v.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    let bodiless = matches!(
        parts.status,
        StatusCode::NO_CONTENT | StatusCode::NOT_MODIFIED
    );
    let framing = match body.size_hint().exact() {
        _ if bodiless => Framing::Bodiless,
        Some(n) => {
            out.extend_from_slice(b"content-length: ");
            push_decimal(&mut out, usize::try_from(n).unwrap_or(usize::MAX));
            out.extend_from_slice(b"\r\n");
            Framing::Length
        }
        None => {
            out.extend_from_slice(b"transfer-encoding: chunked\r\n");
            Framing::Chunked
        }
    };
    if wrote_date {
        out.extend_from_slice(b"\r\n");
    } else {
        out.extend_from_slice(b"date: ");
        date(&mut out, Instant::now());
        out.extend_from_slice(b"\r\n\r\n");
    }
    (out, framing, last)
}

/// Whether a `Connection` value names `close` (among its tokens).
fn has_close(value: &HeaderValue) -> bool {
    value
        .to_str()
        .is_ok_and(|v| v.split(',').any(|t| t.trim().eq_ignore_ascii_case("close")))
}

/// Appends `n` in upper-case hexadecimal (a chunk's size line, as hyper writes it).
fn push_hex(out: &mut Vec<u8>, n: usize) {
    const DIGITS: &[u8; 16] = b"0123456789ABCDEF";
    let mut digits = [0u8; 16];
    let mut at = digits.len();
    let mut n = n;
    loop {
        at -= 1;
        digits[at] = DIGITS[n & 15];
        n >>= 4;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Clone)]
    struct Refuses(Endpoint);

    impl HandlesIncoming for Refuses {
        fn handle_incoming(&self, _: Request<hyper::body::Incoming>) -> ResponseFuture {
            Box::pin(async { crate::server::status(StatusCode::NOT_FOUND) })
        }
    }

    impl HandlesWhole for Refuses {
        fn endpoint(&self) -> &Endpoint {
            &self.0
        }

        fn handle_whole(&self, _: Request<Body>) -> ResponseFuture {
            Box::pin(async { crate::server::status(StatusCode::NOT_FOUND) })
        }
    }

    /// Every open event stream keeps its connection's future (in its task) for as long as it
    /// is open: a change that makes it larger costs that much per stream. Raise the bound
    /// knowingly: 1 728 bytes while `respond` took the response itself (an `async fn` keeps its
    /// arguments) and the request head stayed unboxed across the body's read; 1 240 since.
    #[test]
    fn an_open_stream_keeps_a_small_connection_future() {
        let service = Refuses(endpoint());
        let (stream, _peer) = tokio::io::duplex(64);
        let future = serve_connection(stream, service);
        let size = std::mem::size_of_val(&future);
        println!("the whole path's connection future: {size} bytes");
        assert!(
            size <= 1_280,
            "the whole path's connection future is {size} bytes"
        );
    }

    fn endpoint() -> Endpoint {
        let mut e = Endpoint::new(std::time::Duration::from_secs(1), 1);
        e.set_max_body(1024);
        e
    }

    #[test]
    fn the_requests_taken_whole_and_those_left_to_hyper() {
        let whole = |head: &str| match parse(&endpoint(), head.as_bytes()) {
            Parsed::Whole(h) => Some((h.len, h.body, h.close, h.request)),
            _ => None,
        };
        let head =
            "POST /a2a?x=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 1024\r\nA: 1\r\na: 2\r\n\r\n";
        let (len, body, close, req) = whole(&format!("{head}{{...")).expect("taken");
        assert_eq!((len, body, close), (head.len(), 1024, false));
        assert_eq!(req.uri(), "/a2a?x=1");
        assert_eq!(req.version(), Version::HTTP_11);
        assert_eq!(req.headers().get_all("a").iter().count(), 2);
        let (_, body, close, req) =
            whole("GET / HTTP/1.1\r\nConnection: keep-alive, Close\r\n\r\n").expect("taken");
        assert_eq!((body, close, req.method()), (0, true, &Method::GET));
        for other in [
            "POST / HTTP/1.1\r\nContent-Length: 1025\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n",
            "POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n",
            "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
            "POST / HTTP/1.1\r\nExpect: 100-continue\r\n\r\n",
            "GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: upgrade\r\n\r\n",
            "GET / HTTP/1.0\r\n\r\n",
            "HEAD / HTTP/1.1\r\n\r\n",
            "CONNECT h:1 HTTP/1.1\r\n\r\n",
            "GET http://h/ HTTP/1.1\r\n\r\n",
            "GET / HTTP/1.1\r\nBad Name: x\r\n\r\n",
        ] {
            assert!(
                matches!(parse(&endpoint(), other.as_bytes()), Parsed::Other),
                "{other:?}"
            );
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x{i}: y\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(parse(&endpoint(), many.as_bytes()), Parsed::Other));
        assert!(matches!(
            parse(&endpoint(), b"GET / HTTP/1.1\r\nHost: h\r\n"),
            Parsed::Partial
        ));
    }

    #[test]
    fn chunk_sizes_are_upper_case_hex_as_hyper_writes_them() {
        for n in [0usize, 1, 9, 10, 15, 16, 255, 4096, 0xABCDEF, usize::MAX] {
            let mut out = Vec::new();
            push_hex(&mut out, n);
            assert_eq!(out, format!("{n:X}").into_bytes());
        }
    }
}
