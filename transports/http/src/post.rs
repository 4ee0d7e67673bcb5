//! Reading a POST's body as every server of the crate reads it: the head's checks (415, 406,
//! 413), the body within its size and time (413, 408), and the refusal sent once a refused
//! body has been read past, so that a keep-alive connection carries the next request.

use std::future::Future;
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::header::{self, HeaderMap, HeaderValue};
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Collected, Limited};

use crate::body::Body;
use crate::media::is_json_content_type;
use crate::response::refuse;

/// The refusal a POST gets from its head alone, before its body is read: 415 without a JSON
/// body, 406 when the client accepts no answer this server gives (`answerable` false), 413
/// when the declared length is over `max_body`. `None` when the head passes. The JSON-RPC
/// server and the profiles' servers ([`read_post_body`]) check the same, in this order.
pub(crate) fn refuse_post_head(
    headers: &HeaderMap,
    answerable: bool,
    max_body: usize,
) -> Option<Response<Body>> {
    if !is_json_content_type(headers) {
        return Some(refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send application/json\n",
        ));
    }
    if !answerable {
        return Some(refuse(
            StatusCode::NOT_ACCEPTABLE,
            "answers are application/json or text/event-stream\n",
        ));
    }
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max_body as u64) {
        // Not read: `after_body` answers `connection: close` on HTTP/1.
        return Some(refuse(StatusCode::PAYLOAD_TOO_LARGE, "body too large\n"));
    }
    None
}

/// What reading a body through `Limited` fails with.
type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A POST's body read for a profile's server: the head checked as every POST's is
/// (`Content-Type` JSON or 415, `answerable` or 406: the client accepts an answer the server
/// can give, a declared length within `max_body` or 413), then the body read within
/// `max_body` (413) and `timeout` (408, with `connection: close`). `Err` is the refusal to
/// send, given once a refused body has been read past, so that a keep-alive connection
/// carries the next request.
pub async fn read_post_body<B>(
    parts: http::request::Parts,
    body: B,
    answerable: bool,
    max_body: usize,
    timeout: Duration,
) -> Result<(http::request::Parts, Bytes), Box<Response<Body>>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let in_time = |read| async move { tokio::time::timeout(timeout, read).await.map_err(|_| ()) };
    post_body(parts, body, answerable, max_body, timeout, in_time).await
}

/// A POST's body, once its head has passed the checks every POST passes
/// ([`refuse_post_head`]; `answerable`: the client accepts an answer this server can give),
/// read within `max_body` and the time `in_time` allows (it resolves to `Err(())` when the
/// read took too long). `Err` is the refusal, sent after reading past the body when the head
/// was refused. Both servers' POSTs start here.
pub(crate) async fn post_body<B, T>(
    parts: http::request::Parts,
    body: B,
    answerable: bool,
    max_body: usize,
    timeout: Duration,
    in_time: impl FnOnce(http_body_util::combinators::Collect<Limited<B>>) -> T,
) -> Result<(http::request::Parts, Bytes), Box<Response<Body>>>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    T: Future<Output = Result<Result<Collected<B::Data>, BoxError>, ()>>,
{
    if let Some(r) = refuse_post_head(&parts.headers, answerable, max_body) {
        let req = Request::from_parts(parts, body);
        return Err(Box::new(after_body(req, max_body, timeout, r).await));
    }
    let collected = in_time(Limited::new(body, max_body).collect()).await;
    Ok((parts, read_body(collected)?))
}

/// A POST body read within its limit and time (`Err(())`: too slow), or its refusal: 413
/// over the limit, 400 unreadable, 408 too slow.
fn read_body<D: Buf>(
    collected: Result<Result<Collected<D>, BoxError>, ()>,
) -> Result<Bytes, Box<Response<Body>>> {
    match collected {
        Ok(Ok(c)) => Ok(c.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(Box::new(refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body too large\n",
        ))),
        Ok(Err(_)) => Err(Box::new(refuse(
            StatusCode::BAD_REQUEST,
            "body could not be read\n",
        ))),
        Err(()) => {
            // The rest of the body may still come, and would be read as the next request:
            // the connection ends with this answer (as on the fast path).
            let mut r = refuse(StatusCode::REQUEST_TIMEOUT, "body too slow\n");
            r.headers_mut()
                .insert(header::CONNECTION, HeaderValue::from_static("close"));
            Err(Box::new(r))
        }
    }
}

/// Sends a refusal once the request's body has been read and dropped (at most
/// `max_body` bytes, within the request time limit), so that its keep-alive connection
/// carries the next request: hyper closes a connection whose request body was left
/// unread, and a client that has already sent its next request on it sees that request
/// dropped unanswered. A body too large or too slow to read is left alone, and an
/// HTTP/1 answer then says `connection: close`.
pub async fn after_body<B>(
    req: Request<B>,
    max_body: usize,
    timeout: Duration,
    mut response: Response<Body>,
) -> Response<Body>
where
    B: http_body::Body + Send + 'static,
    B::Data: Send,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let h1 = req.version() <= http::Version::HTTP_11;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    // A timer of its own: refusals are rare, the service's clock is for the requests.
    let drained = declared.is_none_or(|n| n <= max_body as u64)
        && matches!(
            tokio::time::timeout(timeout, Limited::new(req.into_body(), max_body).collect()).await,
            Ok(Ok(_))
        );
    if !drained && h1 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}
