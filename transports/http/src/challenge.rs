//! The answers to a request whose credentials are missing, bad or not enough (RFC 6750
//! section 3): the status and the `WWW-Authenticate: Bearer` challenge, optionally naming
//! the resource's protected-resource metadata (RFC 9728) and the scope needed, as an OAuth
//! 2.1 resource server (MCP's authorization) answers.

use http::header::{self, HeaderValue};
use http::{Response, StatusCode, Uri};
use rpcwire_tokio::AuthError;

use crate::body::Body;
use crate::response::refuse;

/// What a `Bearer` challenge names besides the error: the URL of the protected-resource
/// metadata (`resource_metadata`, RFC 9728 section 5.1) and the scope needed (`scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BearerChallenge {
    /// The URL of the resource's protected-resource metadata.
    pub resource_metadata: Option<String>,
    /// The scopes needed, space-separated.
    pub scope: Option<String>,
}

impl BearerChallenge {
    /// The challenge's value, with `error` when given.
    fn value(&self, error: Option<&str>, scope: Option<&str>) -> String {
        let mut params: Vec<String> = Vec::new();
        if let Some(error) = error {
            params.push(format!("error=\"{error}\""));
        }
        if let Some(url) = &self.resource_metadata {
            params.push(format!("resource_metadata=\"{}\"", quoted(url)));
        }
        if let Some(scope) = scope.or(self.scope.as_deref()) {
            params.push(format!("scope=\"{}\"", quoted(scope)));
        }
        if params.is_empty() {
            "Bearer".to_owned()
        } else {
            format!("Bearer {}", params.join(", "))
        }
    }

    fn answer(&self, status: StatusCode, text: &'static str, challenge: String) -> Response<Body> {
        let mut r = refuse(status, text);
        if let Ok(value) = HeaderValue::from_str(&challenge) {
            r.headers_mut().insert(header::WWW_AUTHENTICATE, value);
        }
        r
    }

    /// The answer to refused credentials: 401 for none (no error code) and for invalid or
    /// expired ones (`invalid_token`), 400 for a malformed `Authorization` header
    /// (`invalid_request`), 503 when the authenticator could not decide.
    pub fn refusal(&self, reason: &AuthError) -> Response<Body> {
        let (status, error, text) = match reason {
            AuthError::Missing => (StatusCode::UNAUTHORIZED, None, "authentication required\n"),
            AuthError::Malformed => (
                StatusCode::BAD_REQUEST,
                Some("invalid_request"),
                "malformed credentials\n",
            ),
            AuthError::Unavailable(_) => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "authentication unavailable\n",
            ),
            _ => (
                StatusCode::UNAUTHORIZED,
                Some("invalid_token"),
                "invalid credentials\n",
            ),
        };
        self.answer(status, text, self.value(error, None))
    }

    /// The answer to a token that lacks a scope: 403 with `insufficient_scope` and the
    /// scopes needed.
    pub fn insufficient_scope(&self, scope: &str) -> Response<Body> {
        self.answer(
            StatusCode::FORBIDDEN,
            "insufficient scope\n",
            self.value(Some("insufficient_scope"), Some(scope)),
        )
    }

    /// The answer to a request with an access token in its query string (RFC 9700 and MCP's
    /// authorization forbid them: URLs end up in logs): 400 `invalid_request`. The token is
    /// not read.
    pub fn token_in_query(&self) -> Response<Body> {
        self.answer(
            StatusCode::BAD_REQUEST,
            "access tokens are not accepted in the query string\n",
            self.value(Some("invalid_request"), None),
        )
    }
}

/// A quoted-string's content: `"` and `\` escaped, control characters dropped.
fn quoted(text: &str) -> String {
    text.chars()
        .filter(|c| !c.is_control())
        .flat_map(|c| match c {
            '"' | '\\' => vec!['\\', c],
            c => vec![c],
        })
        .collect()
}

/// True when the URL's query has an `access_token` parameter (RFC 6750 section 2.3), which
/// a server must refuse rather than read.
pub fn has_query_token(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    })
}

/// The refusal of a request whose credentials stand where none is read, asked before it is
/// authenticated (with an authenticator only): an access token in the query string (400,
/// never read: a URL ends up in logs and histories), or a WebSocket upgrade naming a
/// malformed bearer subprotocol (400). A well-formed one becomes the request's
/// `Authorization` header: a browser's upgrade cannot set that header.
pub(crate) fn misplaced_credentials<B>(
    service: &rpcwire_tokio::Service,
    req: &mut http::Request<B>,
) -> Option<Response<Body>> {
    service.authenticator_ref()?;
    if has_query_token(req.uri()) {
        return Some(BearerChallenge::default().token_in_query());
    }
    #[cfg(feature = "ws")]
    if crate::ws::handshake::is_upgrade(req)
        && crate::ws::handshake::bearer_to_authorization(req.headers_mut()).is_err()
    {
        return Some(unauthenticated(&AuthError::Malformed));
    }
    None
}

/// The answer to refused credentials, with a plain `Bearer` challenge (no metadata URL):
/// see [`BearerChallenge::refusal`].
pub fn unauthenticated(reason: &AuthError) -> Response<Body> {
    BearerChallenge::default().refusal(reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn challenge(r: &Response<Body>) -> &str {
        r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap_or("")
    }

    #[test]
    fn challenges_name_the_error_the_metadata_and_the_scope() {
        let plain = BearerChallenge::default();
        let r = plain.refusal(&AuthError::Missing);
        assert_eq!(
            (r.status(), challenge(&r)),
            (StatusCode::UNAUTHORIZED, "Bearer")
        );
        let r = plain.refusal(&AuthError::Expired);
        assert_eq!(challenge(&r), "Bearer error=\"invalid_token\"");
        let r = plain.refusal(&AuthError::Malformed);
        assert_eq!(r.status(), StatusCode::BAD_REQUEST);

        let rs = BearerChallenge {
            resource_metadata: Some("https://h/.well-known/oauth-protected-resource/mcp".into()),
            scope: Some("mcp".into()),
        };
        let r = rs.refusal(&AuthError::Missing);
        assert_eq!(
            challenge(&r),
            "Bearer resource_metadata=\"https://h/.well-known/oauth-protected-resource/mcp\", scope=\"mcp\""
        );
        let r = rs.refusal(&AuthError::Invalid("bad signature"));
        assert!(challenge(&r).starts_with("Bearer error=\"invalid_token\", resource_metadata="));
        let r = rs.insufficient_scope("mcp admin");
        assert_eq!(r.status(), StatusCode::FORBIDDEN);
        assert!(challenge(&r).contains("error=\"insufficient_scope\""));
        assert!(challenge(&r).ends_with("scope=\"mcp admin\""));
        assert_eq!(quoted("a\"b\\c\n"), "a\\\"b\\\\c");
    }

    #[test]
    fn query_tokens_are_seen_by_name_only() {
        let yes = |u: &str| has_query_token(&u.parse::<Uri>().unwrap_or_default());
        assert!(yes("/mcp?access_token=abc"));
        assert!(yes("/mcp?x=1&access_token"));
        assert!(!yes("/mcp?my_access_token=1"));
        assert!(!yes("/mcp"));
    }
}
