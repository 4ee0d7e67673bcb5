//! The refusal a server built on this crate gives past authentication, shared by
//! [`HttpServer`](crate::HttpServer) and the profiles' servers (MCP Streamable HTTP): a
//! request whose signature does not hold (feature `signing`: 401, or 429 while the caller's
//! nonce cache is full). The reason goes to the log only.

#[cfg(feature = "signing")]
use {
    crate::body::Body,
    crate::response::refuse,
    http::{Response, StatusCode},
    rpcwire_tokio::Caller,
};

/// Checks the signature of a request body (`X-Rpcwire-*` headers,
/// [`rpcwire_tokio::signing`]) in constant time, before the body is parsed; nonces are
/// remembered per caller (the authenticated subject, or `anonymous`). The answer to a
/// refused one: 401, or 429 while the caller's nonce cache is full.
#[cfg(feature = "signing")]
pub fn signature_refused(
    signing: &rpcwire_tokio::signing::RequestSigning,
    caller: Option<&std::sync::Arc<Caller>>,
    headers: &http::HeaderMap,
    body: &[u8],
) -> Result<(), Box<Response<Body>>> {
    use rpcwire_tokio::signing::SignatureError;
    let subject = caller.map_or("anonymous", |c| c.identity().subject());
    let lookup = crate::caller::HeaderLookup(headers);
    let Err(reason) = signing.verify(subject, &lookup, body, std::time::SystemTime::now()) else {
        return Ok(());
    };
    tracing::debug!(%reason, "request refused: signature");
    let (code, text) = match reason {
        SignatureError::Busy => (StatusCode::TOO_MANY_REQUESTS, "too many signed requests\n"),
        _ => (StatusCode::UNAUTHORIZED, "request signature refused\n"),
    };
    Err(Box::new(refuse(code, text)))
}
