//! What a WebSocket upgrade request says: whether it is one ([`is_upgrade`]), and the bearer
//! token a browser names as a subprotocol.
//!
//! A browser's `WebSocket` cannot set `Authorization`, and a token in the URL is refused (URLs
//! end up in logs and histories). So a browser client (the console does) names its token as
//! a subprotocol, `rpcwire.bearer.<token in unpadded base64url>`, beside
//! [`JSONRPC_SUBPROTOCOL`]. The server reads the token as `Authorization: Bearer <token>`
//! before its authenticator is asked, takes the token's entry out of `Sec-WebSocket-Protocol`
//! (so it is never echoed, and never in what handlers see as that header), and answers with
//! [`JSONRPC_SUBPROTOCOL`], which a browser requires when it offered any. Kubernetes' API
//! server reads browser tokens the same way.
//!
//! ```js
//! const b64url = (t) => btoa(t).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
//! const ws = new WebSocket(url, ['rpcwire.jsonrpc', 'rpcwire.bearer.' + b64url(token)]);
//! ```

use base64::Engine as _;
use http::header::{AUTHORIZATION, SEC_WEBSOCKET_PROTOCOL};
use http::{HeaderMap, HeaderValue, Request};

/// True when `req` asks to become a WebSocket (`Upgrade: websocket` with `Connection: upgrade`), so
/// that an HTTP service can hand it to [`WsServer::upgrade`](super::WsServer::upgrade) on the same
/// port and path as its other requests.
pub fn is_upgrade<B>(req: &Request<B>) -> bool {
    let has_token = |name: http::header::HeaderName, token: &str| {
        req.headers().get_all(name).iter().any(|v| {
            v.to_str().is_ok_and(|v| {
                v.split(',')
                    .any(|part| part.trim().eq_ignore_ascii_case(token))
            })
        })
    };
    has_token(http::header::CONNECTION, "upgrade") && has_token(http::header::UPGRADE, "websocket")
}

/// The subprotocol a server picks when a client offers it: JSON-RPC over the WebSocket, as
/// the server speaks without any.
pub const JSONRPC_SUBPROTOCOL: &str = "rpcwire.jsonrpc";

/// The prefix of the subprotocol that carries a bearer token (unpadded base64url after it).
pub const BEARER_SUBPROTOCOL_PREFIX: &str = "rpcwire.bearer.";

/// A bearer subprotocol that cannot be read: refused as malformed credentials (400).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Moves the token of a bearer subprotocol in `headers` to `Authorization: Bearer <token>`
/// and takes its entry out of `Sec-WebSocket-Protocol` (the header is dropped when nothing
/// else is offered). Nothing changes when no bearer subprotocol is offered. Two of them, one
/// beside an `Authorization` header, or one that is not base64url of visible ASCII are
/// [`Malformed`].
pub(crate) fn bearer_to_authorization(headers: &mut HeaderMap) -> Result<(), Malformed> {
    let offered = offered(headers);
    let mut tokens = offered
        .iter()
        .filter_map(|p| p.strip_prefix(BEARER_SUBPROTOCOL_PREFIX));
    let Some(encoded) = tokens.next() else {
        return Ok(());
    };
    if tokens.next().is_some() || headers.contains_key(AUTHORIZATION) {
        return Err(Malformed);
    }
    let token = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(encoded)
        .map_err(|_| Malformed)?;
    // Visible ASCII only (a JWT's or an API key's characters): no spaces, no line breaks.
    let visible = |b: &u8| b.is_ascii_graphic();
    if token.is_empty() || !token.iter().all(visible) {
        return Err(Malformed);
    }
    let mut value = b"Bearer ".to_vec();
    value.extend_from_slice(&token);
    let value = HeaderValue::from_bytes(&value).map_err(|_| Malformed)?;
    let rest: Vec<&str> = offered
        .iter()
        .copied()
        .filter(|p| !p.starts_with(BEARER_SUBPROTOCOL_PREFIX))
        .collect();
    let rest = (!rest.is_empty())
        .then(|| HeaderValue::from_str(&rest.join(", ")))
        .transpose()
        .map_err(|_| Malformed)?;
    headers.remove(SEC_WEBSOCKET_PROTOCOL);
    if let Some(rest) = rest {
        headers.insert(SEC_WEBSOCKET_PROTOCOL, rest);
    }
    headers.insert(AUTHORIZATION, value);
    Ok(())
}

/// The subprotocol to answer an upgrade with: [`JSONRPC_SUBPROTOCOL`] when the client
/// offered it, else none (the client offered none, or only ones this server does not speak).
pub(crate) fn chosen(headers: &HeaderMap) -> Option<HeaderValue> {
    offered(headers)
        .contains(&JSONRPC_SUBPROTOCOL)
        .then(|| HeaderValue::from_static(JSONRPC_SUBPROTOCOL))
}

/// Every subprotocol the upgrade offers, in order (header lines joined; values that are not
/// text are skipped).
fn offered(headers: &HeaderMap) -> Vec<&str> {
    headers
        .get_all(SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(protocols: &[&str]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for p in protocols {
            h.append(SEC_WEBSOCKET_PROTOCOL, HeaderValue::from_str(p).unwrap());
        }
        h
    }

    fn encoded(token: &str) -> String {
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(token);
        format!("{BEARER_SUBPROTOCOL_PREFIX}{b64}")
    }

    #[test]
    fn the_token_becomes_the_authorization_header_and_leaves_the_offer() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln-_";
        let mut h = with(&[&format!("rpcwire.jsonrpc, {}", encoded(jwt))]);
        assert_eq!(bearer_to_authorization(&mut h), Ok(()));
        assert_eq!(h[AUTHORIZATION], format!("Bearer {jwt}").as_str());
        assert_eq!(h[SEC_WEBSOCKET_PROTOCOL], "rpcwire.jsonrpc");
        assert_eq!(
            chosen(&h),
            Some(HeaderValue::from_static("rpcwire.jsonrpc"))
        );
        // Offered alone, on a line of its own: the header goes.
        let mut h = with(&["other", &encoded("secret-1")]);
        assert_eq!(bearer_to_authorization(&mut h), Ok(()));
        assert_eq!(h[AUTHORIZATION], "Bearer secret-1");
        assert_eq!(h[SEC_WEBSOCKET_PROTOCOL], "other");
        assert_eq!(chosen(&h), None);
        let mut h = with(&[&encoded("t")]);
        assert_eq!(bearer_to_authorization(&mut h), Ok(()));
        assert!(!h.contains_key(SEC_WEBSOCKET_PROTOCOL));
    }

    #[test]
    fn without_a_bearer_subprotocol_nothing_changes() {
        for offer in [&[][..], &["rpcwire.jsonrpc"], &["chat, superchat"]] {
            let mut h = with(offer);
            let before = h.clone();
            assert_eq!(bearer_to_authorization(&mut h), Ok(()));
            assert_eq!(h, before);
        }
    }

    #[test]
    fn unreadable_or_doubled_tokens_are_malformed() {
        let mut two = with(&[&encoded("a"), &encoded("b")]);
        let mut beside = with(&[&encoded("a")]);
        beside.insert(AUTHORIZATION, HeaderValue::from_static("Bearer b"));
        let mut not_base64 = with(&["rpcwire.bearer.***"]);
        let mut empty = with(&["rpcwire.bearer."]);
        let mut control = with(&[&encoded("a\r\nX-Evil: 1")]);
        let mut space = with(&[&encoded("a b")]);
        for h in [
            &mut two,
            &mut beside,
            &mut not_base64,
            &mut empty,
            &mut control,
            &mut space,
        ] {
            let before = h.clone();
            assert_eq!(bearer_to_authorization(h), Err(Malformed), "{before:?}");
            assert_eq!(
                *h, before,
                "a refused offer leaves the headers as they were"
            );
        }
    }
}
