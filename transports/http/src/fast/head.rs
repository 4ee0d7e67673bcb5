//! Request heads on the fast path: httparse's parse of a head, then what it is: a plain
//! JSON-RPC POST for the plain lane ([`Head`], the places of the few fields it reads), a
//! request read whole ([`Whole`], an `http::Request`), or one for hyper.

use std::num::NonZeroU16;

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Uri, Version};

use crate::endpoint::Endpoint;
use crate::media::{accepts_values, is_json_media_bytes};

use super::auth::Admitted;
use super::kept_line::KeptLine;
use super::limits::MAX_HEADERS;

/// A request head the plain lane takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Head {
    /// Bytes of the head, the blank line included.
    pub(super) len: usize,
    /// `Content-Length`.
    pub(super) body: usize,
    /// `Connection: close`: answer, then close.
    pub(super) close: bool,
    /// Where the value of the authenticator's credential header is in the buffer (start and
    /// end; 16 bits, the start never 0: every idle connection keeps a `Head`'s room in its
    /// future, and a head whose places do not fit is hyper's).
    pub(super) credential: Option<(NonZeroU16, u16)>,
    /// The head was parsed without its credential line, which starts there (never at 0): the
    /// value is the one the connection keeps ([`crate::kept_line`]), and the head without the
    /// line is in the connection's [`Admitted`].
    pub(super) left_out: Option<NonZeroU16>,
    /// Where the `Content-Length` value's digits are in the buffer (start and end), for
    /// [`LastHead`].
    pub(super) length: (u16, u16),
    /// Where the `traceparent` value is in the buffer (start and end), read only on a traced
    /// connection ([`Traced`]).
    pub(super) traceparent: Option<(NonZeroU16, u16)>,
    /// Where the `tracestate` value is, likewise.
    pub(super) tracestate: Option<(NonZeroU16, u16)>,
}

impl Head {
    /// The credential header's value, in `buf`.
    pub(super) fn credential<'a>(&self, buf: &'a [u8]) -> Option<&'a [u8]> {
        self.credential
            .map(|(from, to)| &buf[from.get() as usize..to as usize])
    }

    /// The `traceparent` and `tracestate` values, in `buf`.
    pub(super) fn trace_context<'a>(&self, buf: &'a [u8]) -> (Option<&'a [u8]>, Option<&'a [u8]>) {
        let value = |at: Option<(NonZeroU16, u16)>| {
            at.map(|(from, to)| &buf[from.get() as usize..to as usize])
        };
        (value(self.traceparent), value(self.tracestate))
    }

    /// Where the line left out of the head started.
    pub(super) fn left_out(&self) -> Option<usize> {
        self.left_out.map(|at| at.get() as usize)
    }
}

/// A place in the buffer as 16 bits, not 0 (a head the fast path takes is shorter than
/// [`MAX_HEAD`] but for a head read whole at once: one whose places do not fit goes to hyper).
fn place(at: usize) -> Option<NonZeroU16> {
    NonZeroU16::new(u16::try_from(at).ok()?)
}

/// What the buffer starts with.
pub(super) enum Parsed {
    /// Not a whole head yet.
    Partial,
    /// A request for the plain lane.
    Plain(Head),
    /// A request read whole, for the service's [`HandlesWhole::handle_whole`].
    ///
    /// [`HandlesWhole::handle_whole`]: crate::profile::HandlesWhole::handle_whole
    Whole(Box<Whole>),
    /// A request for hyper.
    Hyper,
}

/// A request head the whole lane takes.
pub(super) struct Whole {
    /// Bytes of the head, the blank line included.
    pub(super) len: usize,
    /// `Content-Length` (0 without one).
    pub(super) body: usize,
    /// `Connection: close`: answer, then close.
    pub(super) close: bool,
    /// The request without its body.
    pub(super) request: Request<()>,
}

/// What the plain lane takes, when the connection has one.
#[derive(Debug, Clone, Copy)]
pub(super) struct PlainRules<'a> {
    /// The served path (`None`: any path without a query).
    pub(super) path: Option<&'a str>,
    /// The lower-case name of the header whose value alone the authenticator reads
    /// ([`rpcwire_tokio::Authenticator::credential_header`]), found for [`Head::credential`].
    pub(super) credential: Option<&'a [u8]>,
    /// The connection's calls are traced: the trace context's headers are found.
    pub(super) traced: bool,
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
pub(super) fn decimal(value: &[u8]) -> Option<usize> {
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
pub(super) fn field_is(name: &[u8], lower: &[u8]) -> bool {
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

/// What the buffer starts with: a head for the plain lane (when the connection has one, by
/// `plain`'s rules), one read whole, one for hyper, or not a whole head yet. `admitted`: the
/// caller the plain lane keeps; a head carrying its credential is parsed without that line
/// ([`super::kept_line`]), with the same outcome.
pub(super) fn parse(
    plain: Option<PlainRules<'_>>,
    admitted: Option<&mut Admitted>,
    endpoint: &Endpoint,
    buf: &[u8],
) -> Parsed {
    if buf.is_empty() {
        // Between requests: nothing to parse.
        return Parsed::Partial;
    }
    if let (Some(rules), Some(admitted)) = (plain, admitted) {
        let kept = rules
            .credential
            .and_then(|name| admitted.without_kept_line(name, buf));
        if let Some((line, rest, whole)) = kept {
            match parse_head(plain, endpoint, rest, Some(line)) {
                Some(Parsed::Plain(head)) => {
                    admitted.keep_head(head.len - line.len());
                    return Parsed::Plain(head);
                }
                // The head may go on past what was copied: the whole buffer decides.
                Some(Parsed::Partial) if !whole => {}
                Some(other) => return other,
                // Not the plain lane's, or the head ended before the line.
                None => {}
            }
        }
    }
    parse_head(plain, endpoint, buf, None).unwrap_or(Parsed::Hyper)
}

/// [`parse`] of `buf`, or of the buffer without the line `left_out` (its value the kept one):
/// then the head's length and the credential's place are the whole buffer's, and `None` says
/// that the head ended before the line, or is not the plain lane's (the whole buffer is to
/// be parsed).
#[inline(always)] // runs for every request, from two places in `parse`: no call
fn parse_head(
    plain: Option<PlainRules<'_>>,
    endpoint: &Endpoint,
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
        Err(_) => return Some(Parsed::Hyper),
    };
    let len = match left_out {
        Some(line) if len <= line.start => return None,
        Some(line) => len + line.len(),
        None => len,
    };
    if let Some(rules) = plain {
        if let Some(head) = plain_head(rules, endpoint, &req, buf, len, left_out) {
            return Some(Parsed::Plain(head));
        }
    }
    match left_out {
        Some(_) => None,
        None => Some(whole_head(&req, len, endpoint.max_body())),
    }
}

/// The plain lane's head, from the request httparse parsed of `buf` (`len` long in the whole
/// buffer, `left_out` of `buf` if given), or `None` when the request is not one it takes: a
/// POST of JSON to the served path with a `Content-Length` within the limit, from an accepted
/// host and origin, whose client accepts plain JSON alone.
#[inline(always)] // runs for every request, from one place: no call
fn plain_head(
    plain: PlainRules<'_>,
    endpoint: &Endpoint,
    req: &httparse::Request<'_, '_>,
    buf: &[u8],
    len: usize,
    left_out: Option<KeptLine>,
) -> Option<Head> {
    if req.method != Some("POST") || req.version != Some(1) {
        return None;
    }
    let target = req.path?;
    let path_ok = match plain.path {
        Some(path) => target == path,
        None => target.starts_with('/') && !target.contains('?'),
    };
    if !path_ok {
        return None;
    }
    let (mut length, mut host, mut origin, mut json) = (None, None, None, None);
    let mut length_at = (0, 0);
    let mut close = false;
    let mut credential_at = match left_out {
        Some(line) => {
            let (Some(from), Ok(to)) = (place(line.value), u16::try_from(line.end - 2)) else {
                return None;
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
            6 if is(b"expect") => return None,
            7 if is(b"upgrade") => return None,
            17 if is(b"transfer-encoding") => return None,
            // A traced call's parent (W3C Trace Context); once each, or the whole lane decides.
            11 if plain.traced && is(b"traceparent") => {
                match at_in_whole(buf, h.value, left_out) {
                    Some(at) if traceparent.is_none() => traceparent = Some(at),
                    _ => return None,
                }
                continue;
            }
            10 if plain.traced && is(b"tracestate") => {
                match at_in_whole(buf, h.value, left_out) {
                    Some(at) if tracestate.is_none() => tracestate = Some(at),
                    _ => return None,
                }
                continue;
            }
            // `credential` is lower-case letters, digits and `-` (see `PlainRules`), which
            // `field_is` compares exactly, a word at a time.
            _ if plain.credential.is_some_and(|c| field_is(name, c)) => {
                // Twice: hyper's path decides. Its bytes go to the authenticator as they
                // are (as on hyper's path), or are compared with those it let in.
                if credential_at.is_some() {
                    return None;
                }
                let start = h.value.as_ptr() as usize - buf.as_ptr() as usize;
                let (Some(from), Ok(to)) = (place(start), u16::try_from(start + h.value.len()))
                else {
                    return None;
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
            return None;
        }
        match field {
            Field::ContentLength => {
                if length.is_some() {
                    return None;
                }
                match decimal(value) {
                    Some(n) => length = Some(n),
                    None => return None,
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
                    return None;
                }
                json = Some(is_json_media_bytes(value));
            }
            Field::Host => {
                if host.is_some() {
                    return None;
                }
                host = Some(value);
            }
            Field::Origin => {
                if origin.is_some() {
                    return None;
                }
                let value = text(value)?;
                origin = Some(value);
            }
            Field::Accept => {
                if accepts == accept.len() {
                    return None;
                }
                let value = text(value)?;
                accept[accepts] = value;
                accepts += 1;
            }
            Field::Connection => close |= text(value).and_then(connection_close)?,
        }
    }
    let (Some(body), Some(true), Some(host)) = (length, json, host) else {
        return None;
    };
    if body > endpoint.max_body()
        || !endpoint.hosts().allows_host_bytes(host)
        || origin.is_some_and(|o| !endpoint.hosts().allows_origin(o))
    {
        return None;
    }
    // Event streams are the whole lane's (a task per stream, its chunks written as they
    // come): the plain lane takes only clients whose answer is plain JSON.
    let (json_ok, sse_ok) = accepts_values(accept[..accepts].iter().copied());
    if !json_ok || sse_ok {
        return None;
    }
    let left_out = match left_out {
        Some(line) => Some(place(line.start)?),
        None => None,
    };
    let (Ok(from), Ok(to)) = (u16::try_from(length_at.0), u16::try_from(length_at.1)) else {
        return None;
    };
    Some(Head {
        len,
        body,
        close,
        credential: credential_at,
        left_out,
        length: (from, to),
        traceparent,
        tracestate,
    })
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

/// A head read whole, from the request httparse parsed (`len` bytes long): every method but
/// `HEAD` (whose answers have no body) and `CONNECT` (a tunnel), on HTTP/1.1, to a path, with
/// a body of known length within `max_body`; or hyper's (`Transfer-Encoding`, `Expect`,
/// `Upgrade` or another hop-by-hop `Connection` token, a field that is not one).
fn whole_head(req: &httparse::Request<'_, '_>, len: usize, max_body: usize) -> Parsed {
    if req.version != Some(1) {
        return Parsed::Hyper;
    }
    let Some(Ok(method)) = req.method.map(|m| Method::from_bytes(m.as_bytes())) else {
        return Parsed::Hyper;
    };
    if method == Method::HEAD || method == Method::CONNECT {
        return Parsed::Hyper;
    }
    let Some(Ok(uri)) = req.path.filter(|p| p.starts_with('/')).map(Uri::try_from) else {
        return Parsed::Hyper;
    };
    let mut map = HeaderMap::with_capacity(req.headers.len());
    let (mut length, mut close) = (None, false);
    for h in req.headers.iter() {
        let name = h.name.as_bytes();
        let is = |field: &[u8]| field_is(name, field);
        if is(b"transfer-encoding") || is(b"expect") || is(b"upgrade") {
            return Parsed::Hyper;
        }
        if is(b"content-length") {
            if length.is_some() {
                return Parsed::Hyper;
            }
            match decimal(h.value) {
                Some(n) => length = Some(n),
                None => return Parsed::Hyper,
            }
        } else if is(b"connection") {
            match text(h.value).and_then(connection_close) {
                Some(closes) => close |= closes,
                None => return Parsed::Hyper,
            }
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name),
            HeaderValue::from_bytes(h.value),
        ) else {
            return Parsed::Hyper;
        };
        map.append(name, value);
    }
    let body = length.unwrap_or(0);
    if body > max_body {
        // The service refuses it while reading it, on hyper's path.
        return Parsed::Hyper;
    }
    let mut request = Request::new(());
    *request.method_mut() = method;
    *request.uri_mut() = uri;
    *request.version_mut() = Version::HTTP_11;
    *request.headers_mut() = map;
    Parsed::Whole(Box::new(Whole {
        len,
        body,
        close,
        request,
    }))
}

/// Whether a `Connection` value asks to close (`Some(true)`), or only to keep the connection
/// alive (`Some(false)`); `None` for any other token (an upgrade, a hop-by-hop list: hyper's).
fn connection_close(value: &str) -> Option<bool> {
    let mut close = false;
    for token in value.split(',') {
        let token = token.trim();
        if token.eq_ignore_ascii_case("close") {
            close = true;
        } else if !token.eq_ignore_ascii_case("keep-alive") {
            return None;
        }
    }
    Some(close)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> Endpoint {
        let mut e = Endpoint::new(std::time::Duration::from_secs(1), 1);
        e.set_max_body(1024);
        e
    }

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
    fn the_requests_taken_whole_and_those_left_to_hyper() {
        let whole = |head: &str| match parse(None, None, &endpoint(), head.as_bytes()) {
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
                matches!(
                    parse(None, None, &endpoint(), other.as_bytes()),
                    Parsed::Hyper
                ),
                "{other:?}"
            );
        }
        let many: String = (0..=MAX_HEADERS).map(|i| format!("x{i}: y\r\n")).collect();
        let many = format!("GET / HTTP/1.1\r\n{many}\r\n");
        assert!(matches!(
            parse(None, None, &endpoint(), many.as_bytes()),
            Parsed::Hyper
        ));
        assert!(matches!(
            parse(None, None, &endpoint(), b"GET / HTTP/1.1\r\nHost: h\r\n"),
            Parsed::Partial
        ));
    }
}
