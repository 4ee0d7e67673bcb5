//! MCP authorization (2025-11-25) on the Streamable HTTP server: the server as an OAuth 2.1
//! resource server. Every request is authenticated before anything else happens for it (no
//! session is created, no body is run, for a request that fails); the RFC 9728 protected
//! resource metadata names the authorization servers; refusals carry
//! `WWW-Authenticate: Bearer` with the metadata URL (401 for a missing, invalid or expired
//! token, 403 `insufficient_scope` for a token without a needed scope); tokens in the query
//! string are refused unread; a session is bound to the identity that created it.

use std::boxed::Box;
use std::collections::HashMap;
use std::format;
use std::string::String;
use std::string::ToString;
use std::sync::Arc;
use std::vec::Vec;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderValue};
use http::{Response, Uri};
use rpcwire_http::profile::{json, Body};
use rpcwire_http::{has_query_token, BearerChallenge};
use rpcwire_tokio::{Caller, Credentials, Identity};

/// The well-known path of RFC 9728 protected resource metadata.
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// What the server says of itself as a protected resource (RFC 9728), served at
/// `/.well-known/oauth-protected-resource` and at the form suffixed with the MCP endpoint's
/// path (`/.well-known/oauth-protected-resource/mcp`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtectedResource {
    /// The resource identifier: the MCP endpoint's canonical URL
    /// (`https://mcp.example.com/mcp`), also the audience tokens must name (RFC 8707).
    pub resource: String,
    /// The issuer URLs of the authorization servers that issue tokens for it.
    pub authorization_servers: Vec<String>,
    /// The scopes it knows (listed in the metadata; the first challenge names the required
    /// ones).
    pub scopes_supported: Vec<String>,
}

impl ProtectedResource {
    /// The metadata's URL for this resource: the well-known path inserted between the
    /// resource's host and its path (RFC 9728 section 3.1).
    pub fn metadata_url(&self) -> String {
        match self.resource.parse::<Uri>() {
            Ok(uri) if uri.authority().is_some() => {
                let path = uri.path().trim_end_matches('/');
                format!(
                    "{}://{}{METADATA_PATH}{path}",
                    uri.scheme_str().unwrap_or("https"),
                    uri.authority().map_or("", |a| a.as_str()),
                )
            }
            _ => format!("{}{METADATA_PATH}", self.resource.trim_end_matches('/')),
        }
    }

    fn document(&self) -> Bytes {
        Bytes::from(
            serde_json::json!({
                "resource": self.resource,
                "authorization_servers": self.authorization_servers,
                "scopes_supported": self.scopes_supported,
                "bearer_methods_supported": ["header"],
            })
            .to_string(),
        )
    }
}

/// The server's authorization settings.
#[derive(Clone, Default)]
pub(crate) struct AuthSettings {
    pub(crate) resource: Option<ProtectedResource>,
    /// Scopes every request needs.
    pub(crate) required: Vec<String>,
    /// Scopes requests of a method need (besides `required`).
    pub(crate) by_method: HashMap<String, Vec<String>>,
}

/// The authorization a built server applies.
pub(crate) struct Gate {
    /// Authenticates each request ([`Service::admit`](rpcwire_service::Service::admit)).
    service: rpcwire_service::Service,
    challenge: BearerChallenge,
    settings: AuthSettings,
    metadata: Option<(Bytes, String)>,
}

/// The key of an identity a session is bound to: its issuer and subject.
pub(crate) fn owner_key(identity: &Identity) -> String {
    let iss = identity
        .claims()
        .get("iss")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("");
    format!("{iss}\n{}", identity.subject())
}

impl Gate {
    pub(crate) fn new(
        service: rpcwire_service::Service,
        settings: AuthSettings,
        endpoint_path: &str,
    ) -> Self {
        let challenge = BearerChallenge {
            resource_metadata: settings
                .resource
                .as_ref()
                .map(ProtectedResource::metadata_url),
            scope: (!settings.required.is_empty()).then(|| settings.required.join(" ")),
        };
        let metadata = settings
            .resource
            .as_ref()
            .map(|r| (r.document(), format!("{METADATA_PATH}{endpoint_path}")));
        Gate {
            service,
            challenge,
            settings,
            metadata,
        }
    }

    /// True when requests are authenticated.
    /// The metadata document, for a GET of one of its paths.
    pub(crate) fn metadata(&self, path: &str) -> Option<Response<Body>> {
        let (document, suffixed) = self.metadata.as_ref()?;
        if path != METADATA_PATH && path != suffixed {
            return None;
        }
        let mut r = json(document.clone());
        r.headers_mut().insert(
            header::ACCESS_CONTROL_ALLOW_ORIGIN,
            HeaderValue::from_static("*"),
        );
        Some(r)
    }

    /// The request's caller (`None` with no authenticator), or the refusal: 400 for a token
    /// in the query string or a malformed header, 401 for a missing or bad token, 403 for a
    /// token without the scopes every request needs, 503 when the authenticator cannot
    /// decide. The reason is logged, never the credentials.
    pub(crate) async fn admit(
        &self,
        uri: &Uri,
        headers: &HeaderMap,
    ) -> Result<Option<Arc<Caller>>, Box<Response<Body>>> {
        if self.service.authenticator_ref().is_none() {
            return Ok(None);
        };
        if has_query_token(uri) {
            tracing::debug!("MCP request refused: an access token in the query string");
            return Err(Box::new(self.challenge.token_in_query()));
        }
        let lookup = Lookup(headers);
        let credentials = Credentials {
            headers: &lookup,
            ..Credentials::new(rpcwire_http::transport::HTTP, None)
        };
        let identity = match self.service.admit(credentials, Identity::anonymous).await {
            Ok(caller) => caller.identity().clone(),
            Err(reason) => return Err(Box::new(self.challenge.refusal(&reason))),
        };
        self.scopes(&identity, &self.settings.required)?;
        Ok(Some(Arc::new(
            Caller::new(identity, rpcwire_http::transport::HTTP).with_meta(headers.clone()),
        )))
    }

    /// 403 `insufficient_scope` unless `identity` holds every scope of `needed`.
    fn scopes(&self, identity: &Identity, needed: &[String]) -> Result<(), Box<Response<Body>>> {
        if needed.iter().all(|s| identity.has_role(s)) {
            return Ok(());
        }
        tracing::debug!(
            subject = identity.subject(),
            "MCP request refused: insufficient scope"
        );
        let mut all: Vec<&str> = self.settings.required.iter().map(String::as_str).collect();
        for s in needed {
            if !all.contains(&s.as_str()) {
                all.push(s);
            }
        }
        Err(Box::new(self.challenge.insufficient_scope(&all.join(" "))))
    }

    /// 403 unless the caller holds the scopes `method` needs.
    pub(crate) fn method_allowed(
        &self,
        caller: Option<&Arc<Caller>>,
        method: Option<&str>,
    ) -> Result<(), Box<Response<Body>>> {
        let (Some(caller), Some(needed)) =
            (caller, method.and_then(|m| self.settings.by_method.get(m)))
        else {
            return Ok(());
        };
        self.scopes(caller.identity(), needed)
    }
}

/// An `http::HeaderMap` as an authenticator reads it.
struct Lookup<'a>(&'a HeaderMap);

impl rpcwire_tokio::Headers for Lookup<'_> {
    fn get(&self, name: &str) -> Option<&[u8]> {
        self.0.get(name).map(HeaderValue::as_bytes)
    }
}
