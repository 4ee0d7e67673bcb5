//! Writing responses on the fast path, as hyper's HTTP/1.1 server writes them (the same
//! status line, header fields in the same order, `content-length` or chunked framing, then
//! `date`): the plain lane's usual answer straight into the read buffer, and any other
//! `Response` with its body, a stream's chunks as they come.

use std::io;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, SystemTime};

use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use http_body::Body as _;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::time::Instant;

use crate::body::Body;

use super::read::{Streaming, UnlessClosed};

/// Writes the usual answer, a 200 with a JSON body, as hyper writes it (`connection: close`
/// when the client asked to close): its head up to the length's digits in one piece, then
/// the digits, the date's lines and the body.
pub(super) fn write_json(out: &mut Vec<u8>, body: &[u8], close: bool, now: Instant) {
    // The head is at most about 160 bytes.
    out.reserve(192 + body.len());
    if close {
        out.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\ncontent-length: ",
        );
    } else {
        out.extend_from_slice(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ",
        );
    }
    push_decimal(out, body.len());
    date_lines(out, now);
    out.extend_from_slice(body);
}

/// A response ready to be written: its head (as hyper writes it), its body, how the body is
/// framed, and whether the connection ends with it.
pub(super) struct Prepared {
    out: Vec<u8>,
    body: Body,
    framing: Framing,
    last: bool,
}

/// `response` made ready to write, for a client that asked to `close` or not. A 1xx status
/// (which a service cannot mean as a response) becomes the bare 500 hyper answers, and the
/// connection closes.
pub(super) fn prepare(response: Response<Body>, close: bool) -> Prepared {
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
pub(super) async fn respond<I: AsyncRead + AsyncWrite + Unpin>(
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

/// Appends `n` in decimal (without `fmt`'s machinery: this runs for every answer).
pub(super) fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
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
fn date(out: &mut Vec<u8>, now: Instant) {
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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn decimals_are_written_as_format_writes_them() {
        for n in [0, 7, 9, 10, 99, 100, 12_345, u32::MAX as usize, usize::MAX] {
            let mut out = b"x".to_vec();
            push_decimal(&mut out, n);
            assert_eq!(out, format!("x{n}").into_bytes());
        }
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
