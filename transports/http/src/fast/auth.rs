//! Authentication on the fast path's plain lane: each request's caller, made as
//! hyper's path makes it (the builder's authenticator asked with the request's headers; the
//! headers themselves in the caller's metadata), and refused with the same answer.
//!
//! What keeps it cheap on a keep-alive connection: when the authenticator says its answer
//! depends on one header alone ([`Authenticator::credential_header`]), the connection keeps
//! the last value it let in, byte for byte, with the identity it stood for; a later request
//! with the same bytes gets that identity without asking the authenticator again (no hashing,
//! no cache lookup) until the identity expires. A head carrying the kept value is parsed
//! without the value's line ([`kept_line`]): the value is compared once, not checked
//! byte by byte again, and the head without it (copied once, for the parse) becomes the
//! caller's. The request's headers are kept as the head's bytes and made into an
//! `http::HeaderMap` only for a handler that reads them ([`RequestHead`]), and the caller
//! itself is renewed in place when the last request's call let go of it.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use bytes::Bytes;
use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Response};
use rpcwire_service::Service;
use rpcwire_tokio::{Caller, Identity, LazyMeta};
use tokio::time::Instant;

use crate::body::Body;
use crate::transport::HTTP;

use super::kept_line::{self, KeptLine};
use super::limits::{KEEP, MAX_HEADERS};

/// A request's head as bytes, its `http::HeaderMap` (the metadata hyper's path gives a
/// caller) made on the first read. The head may be kept without its credential line (the
/// fast path parses it so, see [`kept_line`]): the line's field is then put back in
/// its place when the map is made.
pub(crate) struct RequestHead {
    bytes: Vec<u8>,
    /// The credential field left out of `bytes`: where its line was, its name and value.
    left_out: Option<(usize, HeaderName, Bytes)>,
    headers: OnceLock<HeaderMap>,
}

impl RequestHead {
    fn new(bytes: &[u8]) -> Self {
        RequestHead {
            bytes: bytes.to_vec(),
            left_out: None,
            headers: OnceLock::new(),
        }
    }

    /// Another request's head, in the same buffer.
    fn renew(&mut self, bytes: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        self.left_out = None;
        if self.headers.get().is_some() {
            self.headers = OnceLock::new();
        }
    }

    /// Another request's head, given as `bytes` without its credential line (which stood at
    /// `at`, with `name` and `value`): no copy, `bytes` and the old head's bytes are swapped.
    /// A head is renewed only by the connection that keeps its credential, so a line left out
    /// before is this one's: only its place may differ.
    #[inline(always)] // runs for every request that carries the kept credential: no call
    fn renew_without(&mut self, bytes: &mut Vec<u8>, at: usize, name: &HeaderName, value: &Bytes) {
        std::mem::swap(&mut self.bytes, bytes);
        match &mut self.left_out {
            Some((was, _, _)) => *was = at,
            left_out => *left_out = Some((at, name.clone(), value.clone())),
        }
        if self.headers.get().is_some() {
            self.headers = OnceLock::new();
        }
    }

    fn headers(&self) -> &HeaderMap {
        self.headers
            .get_or_init(|| header_map(&self.bytes, self.left_out.as_ref()))
    }
}

impl LazyMeta for RequestHead {
    fn get(&self) -> &(dyn Any + Send + Sync) {
        self.headers()
    }
}

/// The header fields of a head the fast path took (so whole, and with at most
/// [`MAX_HEADERS`] fields), as hyper's parser (httparse as well) puts them in a request; with
/// `left_out`'s field put back where its line was.
pub(crate) fn header_map(head: &[u8], left_out: Option<&(usize, HeaderName, Bytes)>) -> HeaderMap {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let mut map = HeaderMap::new();
    if req.parse(head).is_err() {
        return map;
    }
    let mut left_out = left_out.and_then(|(at, name, value)| {
        Some((
            *at,
            name,
            HeaderValue::from_maybe_shared(value.clone()).ok()?,
        ))
    });
    for field in req.headers.iter() {
        // The first field after the left-out line's place: that field goes first.
        let offset = field.name.as_ptr() as usize - head.as_ptr() as usize;
        if let Some((_, name, value)) = left_out.take_if(|(at, _, _)| offset >= *at) {
            map.append(name.clone(), value);
        }
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(field.name.as_bytes()),
            HeaderValue::from_bytes(field.value),
        ) else {
            continue;
        };
        map.append(name, value);
    }
    // The last line of the head.
    if let Some((_, name, value)) = left_out {
        map.append(name.clone(), value);
    }
    map
}

/// What a connection remembers of the caller it last let in.
pub(crate) struct Admitted {
    /// The credential header's value let in (`None`: the authenticator reads more than one
    /// header, so nothing is reused).
    key: Option<Key>,
    /// When the identity stops being valid.
    until: Option<Instant>,
    identity: Identity,
    /// The caller the last request ran as.
    caller: Arc<Caller>,
}

/// The credential a connection keeps, and what finding it again in a head takes.
struct Key {
    /// The value let in, as the request carried it.
    value: Bytes,
    /// The header's name, for the handlers' `HeaderMap`.
    name: HeaderName,
    /// The value's line as it stood in the last head it was found in.
    last: kept_line::LastLine,
    /// The last head without the value's line ([`Admitted::without_kept_line`]), swapped
    /// with the caller's (so the head is copied once per request, without the credential).
    scratch: Vec<u8>,
}

impl Admitted {
    /// The caller the last request was let in as.
    pub(crate) fn caller(&self) -> &Arc<Caller> {
        &self.caller
    }

    /// The kept credential's line in `buf` (a head whose credential header is `name`, lower
    /// case; see [`kept_line`]), and `buf` without it: the bytes before the line, then
    /// those after it up to [`KEEP`] of them (the rest of a usual head, and some of the body
    /// or the next request: the copy stays small), and whether that took all of `buf`.
    pub(crate) fn without_kept_line(
        &mut self,
        name: &[u8],
        buf: &[u8],
    ) -> Option<(KeptLine, &[u8], bool)> {
        let key = self.key.as_mut()?;
        let line = kept_line::find(buf, name, &key.value, &mut key.last)?;
        let end = buf.len().min(line.end.saturating_add(KEEP));
        key.scratch.clear();
        key.scratch.extend_from_slice(&buf[..line.start]);
        key.scratch.extend_from_slice(&buf[line.end..end]);
        Some((line, &key.scratch, end == buf.len()))
    }

    /// Keeps the first `len` bytes of the head [`Self::without_kept_line`] made: the head
    /// itself, without the body after it.
    pub(crate) fn keep_head(&mut self, len: usize) {
        if let Some(key) = &mut self.key {
            key.scratch.truncate(len);
        }
    }
}

/// How a request's head is to be given to the caller it is let in as (see [`kept`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Renew {
    /// The head is the whole of the request's.
    Whole,
    /// The head was parsed without the kept credential's line, which started there (the
    /// value is the kept one, compared already; the head without the line is the one
    /// [`Admitted::keep_head`] kept, and becomes the caller's without a copy).
    WithoutLine(usize),
    /// The head is, byte for byte, the last one the connection let in, which the caller has
    /// already (see `fast::last_head`): its credential is the kept one, and nothing changes.
    Unchanged,
}

/// True when the connection's remembered caller stands for this request too (its credential
/// header's value `credential` is the one let in, byte for byte, and the identity has not
/// expired at `now`): the caller is then renewed with the request's head `head`, as `renew`
/// says. No allocation when the last call has let go of the caller.
#[inline(always)] // runs for every authenticated request, from one place: no call
pub(crate) fn kept(
    admitted: &mut Option<Box<Admitted>>,
    head: &[u8],
    credential: Option<&[u8]>,
    renew: Renew,
    now: Instant,
) -> bool {
    let Some(a) = admitted.as_deref_mut() else {
        return false;
    };
    let Some(key) = &mut a.key else {
        return false;
    };
    let same = match renew {
        Renew::Whole => Some(&key.value[..]) == credential,
        Renew::WithoutLine(_) | Renew::Unchanged => true,
    };
    if !same || a.until.is_some_and(|until| now >= until) {
        return false;
    }
    let at = match renew {
        Renew::Unchanged => return true,
        Renew::Whole => None,
        Renew::WithoutLine(at) => Some(at),
    };
    let lazy = Arc::get_mut(&mut a.caller).and_then(|c| c.lazy_meta_mut::<RequestHead>());
    match (lazy, at) {
        (Some(kept), None) => kept.renew(head),
        (Some(kept), Some(at)) => kept.renew_without(&mut key.scratch, at, &key.name, &key.value),
        // Still held by the last call (a task it spawned, say): a new one.
        (None, None) => {
            let peer = a.caller.peer_addr();
            a.caller = Arc::new(caller(a.identity.clone(), RequestHead::new(head), peer));
        }
        (None, Some(at)) => {
            let head = RequestHead {
                bytes: std::mem::take(&mut key.scratch),
                left_out: Some((at, key.name.clone(), key.value.clone())),
                headers: OnceLock::new(),
            };
            let peer = a.caller.peer_addr();
            a.caller = Arc::new(caller(a.identity.clone(), head, peer));
        }
    }
    true
}

/// Asks the authenticator about a request (its head `head`, its credential header's value
/// `credential`, read at `now`) and remembers the caller in `admitted`; or the refusal
/// hyper's path answers with (the same status, challenge and body).
pub(crate) async fn admit(
    service: &Service,
    admitted: &mut Option<Box<Admitted>>,
    peer: Option<std::net::SocketAddr>,
    head: &[u8],
    credential: Option<&[u8]>,
    now: Instant,
) -> Result<(), Response<Body>> {
    let head = RequestHead::new(head);
    // The peer, for the refusal log: the caller remembered is made from the identity alone.
    let identity = crate::caller::admit(service, head.headers(), HTTP, peer, None)
        .await?
        .identity()
        .clone();
    let Some(authenticator) = service.authenticator_ref() else {
        return Ok(());
    };
    // The expiry on the monotonic clock the connection reads anyway.
    let until = identity
        .expires()
        .map(|at| now + at.duration_since(SystemTime::now()).unwrap_or_default());
    let name = authenticator
        .credential_header()
        .and_then(|name| HeaderName::from_bytes(name.as_bytes()).ok());
    // The scratch buffer of the connection's last credential is kept for the next.
    let scratch = admitted
        .as_mut()
        .and_then(|a| a.key.take())
        .map(|k| k.scratch)
        .unwrap_or_default();
    let key = name.zip(credential).map(|(name, value)| Key {
        value: Bytes::copy_from_slice(value),
        name,
        last: kept_line::LastLine::default(),
        scratch,
    });
    *admitted = Some(Box::new(Admitted {
        key,
        until,
        caller: Arc::new(caller(identity.clone(), head, peer)),
        identity,
    }));
    Ok(())
}

/// The caller let in, with the connection's peer when the connection told it (the refusal
/// log names it when the access rules refuse a call).
fn caller(identity: Identity, head: RequestHead, peer: Option<std::net::SocketAddr>) -> Caller {
    let caller = Caller::new(identity, HTTP).with_lazy_meta(head);
    match peer {
        Some(peer) => caller.with_peer(peer),
        None => caller,
    }
}
