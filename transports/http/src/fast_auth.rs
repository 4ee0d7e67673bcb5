//! Authentication on the HTTP/1.1 fast path ([`crate::fast`]): each request's caller, made as
//! hyper's path makes it (the builder's authenticator asked with the request's headers; the
//! headers themselves in the caller's metadata), and refused with the same answer.
//!
//! What keeps it cheap on a keep-alive connection: when the authenticator says its answer
//! depends on one header alone ([`Authenticator::credential_header`]), the connection keeps
//! the last value it let in, byte for byte, with the identity it stood for; a later request
//! with the same bytes gets that identity without asking the authenticator again (no hashing,
//! no cache lookup) until the identity expires. The request's headers are kept as the head's
//! bytes and made into an `http::HeaderMap` only for a handler that reads them
//! ([`RequestHead`]), and the caller itself is renewed in place when the last request's call
//! let go of it.

use std::any::Any;
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Response};
use rpcwire_tokio::{Authenticator, Caller, Identity, LazyMeta, Transport};
use tokio::time::Instant;

use crate::body::Body;
use crate::fast::MAX_HEADERS;
use crate::server::authenticate;

/// A request's head as bytes, its `http::HeaderMap` (the metadata hyper's path gives a
/// caller) made on the first read.
pub(crate) struct RequestHead {
    bytes: Vec<u8>,
    headers: OnceLock<HeaderMap>,
}

impl RequestHead {
    fn new(bytes: &[u8]) -> Self {
        RequestHead {
            bytes: bytes.to_vec(),
            headers: OnceLock::new(),
        }
    }

    /// Another request's head, in the same buffer.
    fn renew(&mut self, bytes: &[u8]) {
        self.bytes.clear();
        self.bytes.extend_from_slice(bytes);
        if self.headers.get().is_some() {
            self.headers = OnceLock::new();
        }
    }

    fn headers(&self) -> &HeaderMap {
        self.headers.get_or_init(|| header_map(&self.bytes))
    }
}

impl LazyMeta for RequestHead {
    fn get(&self) -> &(dyn Any + Send + Sync) {
        self.headers()
    }
}

/// The header fields of a head the fast path took (so whole, and with at most
/// [`MAX_HEADERS`] fields), as hyper's parser (httparse as well) puts them in a request.
fn header_map(head: &[u8]) -> HeaderMap {
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    let mut map = HeaderMap::new();
    if req.parse(head).is_err() {
        return map;
    }
    for field in req.headers.iter() {
        let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(field.name.as_bytes()),
            HeaderValue::from_bytes(field.value),
        ) else {
            continue;
        };
        map.append(name, value);
    }
    map
}

/// What a connection remembers of the caller it last let in.
pub(crate) struct Admitted {
    /// The credential header's value let in (`None`: the authenticator reads more than one
    /// header, so nothing is reused).
    key: Option<Vec<u8>>,
    /// When the identity stops being valid.
    until: Option<Instant>,
    identity: Identity,
    /// The caller the last request ran as.
    caller: Arc<Caller>,
}

impl Admitted {
    /// The caller the last request was let in as.
    pub(crate) fn caller(&self) -> &Arc<Caller> {
        &self.caller
    }
}

/// True when the connection's remembered caller stands for this request too (its credential
/// header's value `credential` is the one let in, byte for byte, and the identity has not
/// expired at `now`): the caller is then renewed with the request's head `head`. No
/// allocation when the last call has let go of the caller.
pub(crate) fn kept(
    admitted: &mut Option<Box<Admitted>>,
    head: &[u8],
    credential: Option<&[u8]>,
    now: Instant,
) -> bool {
    let Some(a) = admitted.as_deref_mut() else {
        return false;
    };
    let same = a.key.is_some() && a.key.as_deref() == credential;
    if !same || a.until.is_some_and(|until| now >= until) {
        return false;
    }
    match Arc::get_mut(&mut a.caller).and_then(|c| c.lazy_meta_mut::<RequestHead>()) {
        Some(kept) => kept.renew(head),
        // Still held by the last call (a task it spawned, say): a new one.
        None => a.caller = Arc::new(caller(a.identity.clone(), RequestHead::new(head))),
    }
    true
}

/// Asks the authenticator about a request (its head `head`, its credential header's value
/// `credential`, read at `now`) and remembers the caller in `admitted`; or the refusal
/// hyper's path answers with (the same status, challenge and body).
pub(crate) async fn admit(
    authenticator: &dyn Authenticator,
    admitted: &mut Option<Box<Admitted>>,
    head: &[u8],
    credential: Option<&[u8]>,
    now: Instant,
) -> Result<(), Response<Body>> {
    let head = RequestHead::new(head);
    let identity = authenticate(authenticator, head.headers(), Transport::Http, None).await?;
    // The expiry on the monotonic clock the connection reads anyway.
    let until = identity
        .expires()
        .map(|at| now + at.duration_since(SystemTime::now()).unwrap_or_default());
    let key = authenticator
        .credential_header()
        .and(credential)
        .map(<[u8]>::to_vec);
    *admitted = Some(Box::new(Admitted {
        key,
        until,
        caller: Arc::new(caller(identity.clone(), head)),
        identity,
    }));
    Ok(())
}

fn caller(identity: Identity, head: RequestHead) -> Caller {
    Caller::new(identity, Transport::Http).with_lazy_meta(head)
}
