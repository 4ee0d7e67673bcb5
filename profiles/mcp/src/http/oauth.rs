//! The Streamable HTTP client's OAuth 2.1 (MCP "Authorization", feature `oauth`): on a 401
//! the client finds the protected resource metadata (RFC 9728: the `WWW-Authenticate` hint,
//! else the path-based then the root well-known URL), the authorization server's metadata
//! (RFC 8414 and OpenID discovery, the issuer checked), identifies itself (pre-registered
//! credentials, a Client ID Metadata Document, or dynamic registration), runs the authorization
//! code flow with PKCE (S256) and the `resource` indicator (RFC 8707) through the user's
//! [`Authorizer`] (the browser step), checks the response's `iss` (RFC 9207), and redeems the
//! code with the token endpoint's client authentication (`client_secret_basic`,
//! `client_secret_post` or `none`). A 401 with a refresh token refreshes first; a 403
//! `insufficient_scope` re-authorizes with the challenge's scope, at most
//! [`OAuthConfig::max_authorizations`] times per request.
//!
//! Hand-written over the client's own hyper stack (no second HTTP client): the `oauth2` crate
//! would bring its own request types and still leave discovery, PRM, CIMD and the MCP rules
//! to write.

use std::prelude::rust_2021::*;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use rpcwire_http::profile::HyperClient;
use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use url::Url;

/// The default of [`OAuthConfig::max_response`].
pub const DEFAULT_MAX_RESPONSE: usize = 256 << 10;

/// Why the client could not get a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OAuthError {
    /// No protected resource metadata was found.
    #[error("no protected resource metadata (RFC 9728) for {0}")]
    NoResourceMetadata(String),
    /// The metadata's `resource` is not the server's URL.
    #[error("the protected resource metadata names resource {found}, not {expected}")]
    ResourceMismatch {
        /// The server's URL.
        expected: String,
        /// The metadata's `resource`.
        found: String,
    },
    /// No authorization server metadata was found.
    #[error("no authorization server metadata for {0}")]
    NoServerMetadata(String),
    /// The authorization server's metadata names another issuer.
    #[error("the authorization server metadata names issuer {found}, not {expected}")]
    IssuerMismatch {
        /// The issuer the metadata was looked up for.
        expected: String,
        /// The metadata's `issuer`.
        found: String,
    },
    /// The authorization response's `iss` is missing (when advertised) or not the issuer.
    #[error("the authorization response's iss is {0:?}, not the issuer's")]
    WrongIss(Option<String>),
    /// The authorization response does not carry this flow's `state`, or has no code.
    #[error("the authorization response is not this flow's: {0}")]
    BadResponse(String),
    /// The client has no way to identify itself to this server.
    #[error("no client registration: no pre-registered client, no CIMD support, no registration endpoint")]
    NoRegistration,
    /// The authorization server refused a request (its `error`).
    #[error("the authorization server refused: {0}")]
    Refused(String),
    /// The [`Authorizer`] failed (the user did not authorize).
    #[error("authorization failed: {0}")]
    Authorizer(String),
    /// An exchange with a metadata, registration or token endpoint failed.
    #[error("HTTP: {0}")]
    Http(String),
    /// The server kept refusing the tokens it got (the per-request limit).
    #[error("the server refused {0} authorizations in a row")]
    TooManyAuthorizations(usize),
}

/// The browser step of the authorization code flow: show the user `authorization_url`, and
/// return the URL the authorization server redirected to (with `code`, `state`, `iss`).
pub trait Authorizer: Send + Sync + 'static {
    /// Authorizes; the redirect URL.
    fn authorize(
        &self,
        authorization_url: String,
    ) -> Pin<Box<dyn Future<Output = Result<String, OAuthError>> + Send + '_>>;
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TokenAuth {
    Basic,
    Post,
    None,
}

/// What the client is and how it is registered.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// The client's name (dynamic registration's `client_name`).
    pub client_name: String,
    /// The redirect URI the [`Authorizer`] receives the answer on.
    pub redirect_uri: String,
    /// A Client ID Metadata Document's URL, used as the `client_id` where the authorization
    /// server supports them.
    pub client_metadata_url: Option<String>,
    /// A pre-registered client id (and secret), used before anything else.
    pub client_id: Option<String>,
    /// The pre-registered client's secret.
    pub client_secret: Option<String>,
    /// Ask for `offline_access` (a refresh token) where the authorization server offers it
    /// (default true).
    pub offline_access: bool,
    /// The most authorizations one request goes through (the first included) before it
    /// fails (default 3).
    pub max_authorizations: usize,
    /// Machine to machine: get tokens with the `client_credentials` grant and the
    /// pre-registered `client_id` and `client_secret`, with no user and no [`Authorizer`]
    /// call (default false).
    pub client_credentials: bool,
    /// The largest metadata, registration or token response read, in bytes (default
    /// [`DEFAULT_MAX_RESPONSE`]); a larger one is as good as none.
    pub max_response: usize,
    /// The longest one metadata, registration or token exchange may take (default 30 s);
    /// the [`Authorizer`] (the user) has no limit here.
    pub timeout: Duration,
    /// Enterprise-managed authorization (the extension, SEP-990): no user step here, the
    /// enterprise identity provider's ID token is exchanged there for an identity assertion
    /// grant (ID-JAG), which the authorization server takes with the JWT bearer grant and the
    /// pre-registered client's authentication.
    pub enterprise: Option<EnterpriseGrant>,
    /// Authenticate at the token endpoint with a signed JWT (`private_key_jwt`, RFC 7523)
    /// instead of a secret (feature `oauth-jwt`).
    #[cfg(feature = "oauth-jwt")]
    pub client_assertion: Option<ClientAssertion>,
}

/// Where and with what the client gets an identity assertion grant (ID-JAG) from the
/// enterprise identity provider ([`OAuthConfig::enterprise`]).
#[derive(Clone)]
pub struct EnterpriseGrant {
    /// The identity provider's token endpoint.
    pub idp_token_endpoint: String,
    /// The user's ID token from that provider.
    pub id_token: String,
    /// The client's id at that provider.
    pub idp_client_id: String,
}

impl std::fmt::Debug for EnterpriseGrant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token stays out of logs.
        f.debug_struct("EnterpriseGrant")
            .field("idp_token_endpoint", &self.idp_token_endpoint)
            .field("idp_client_id", &self.idp_client_id)
            .finish_non_exhaustive()
    }
}

/// The key a client signs its `private_key_jwt` assertions with (feature `oauth-jwt`).
#[cfg(feature = "oauth-jwt")]
#[derive(Clone)]
pub struct ClientAssertion {
    /// The private key, PEM: PKCS#8 (`BEGIN PRIVATE KEY`) for EC and Ed25519 keys, PKCS#1
    /// (`BEGIN RSA PRIVATE KEY`) for RSA.
    pub private_key_pem: String,
    /// The JWS algorithm (`ES256`, `RS256`, ...).
    pub algorithm: String,
}

#[cfg(feature = "oauth-jwt")]
impl std::fmt::Debug for ClientAssertion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key stays out of logs.
        f.debug_struct("ClientAssertion")
            .field("algorithm", &self.algorithm)
            .finish_non_exhaustive()
    }
}

#[cfg(feature = "oauth-jwt")]
impl ClientAssertion {
    /// A fresh assertion for `client_id` at the authorization server `audience` (its issuer),
    /// valid for five minutes.
    fn sign(&self, client_id: &str, audience: &str) -> Result<String, OAuthError> {
        use jsonwebtoken::{encode, Algorithm, EncodingKey, Header};
        let bad_key = |e: jsonwebtoken::errors::Error| OAuthError::Authorizer(e.to_string());
        let algorithm: Algorithm = self.algorithm.parse().map_err(bad_key)?;
        // The PEM's body is the PKCS#8 DER the signer takes (jsonwebtoken's own PEM reader
        // would bring two more crates for these few lines).
        let der: String = self
            .private_key_pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect();
        let der = STANDARD
            .decode(der.trim())
            .map_err(|e| OAuthError::Authorizer(format!("client assertion key: {e}")))?;
        let key = match algorithm {
            Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_der(&der),
            Algorithm::EdDSA => EncodingKey::from_ed_der(&der),
            _ => EncodingKey::from_rsa_der(&der),
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let claims = serde_json::json!({
            "iss": client_id, "sub": client_id, "aud": audience,
            "iat": now, "exp": now + 300, "jti": random_token(),
        });
        encode(&Header::new(algorithm), &claims, &key).map_err(bad_key)
    }
}

impl OAuthConfig {
    /// A client named `client_name` that receives the answer on `redirect_uri`.
    pub fn new(client_name: &str, redirect_uri: &str) -> Self {
        OAuthConfig {
            client_name: client_name.to_owned(),
            redirect_uri: redirect_uri.to_owned(),
            client_metadata_url: None,
            client_id: None,
            client_secret: None,
            offline_access: true,
            max_authorizations: 3,
            client_credentials: false,
            max_response: DEFAULT_MAX_RESPONSE,
            timeout: Duration::from_secs(30),
            enterprise: None,
            #[cfg(feature = "oauth-jwt")]
            client_assertion: None,
        }
    }
}

/// A client's identity at one authorization server.
#[derive(Debug, Clone)]
struct Registration {
    issuer: String,
    client_id: String,
    secret: Option<String>,
}

#[derive(Debug, Default)]
struct State {
    access: Option<String>,
    refresh: Option<String>,
    registration: Option<Registration>,
    /// The scope last asked for.
    scope: Option<String>,
}

/// The authorization server's metadata, as far as the flow reads it.
#[derive(Debug, Clone, Deserialize)]
struct ServerMetadata {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    #[serde(default)]
    registration_endpoint: Option<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    grant_types_supported: Option<Vec<String>>,
    #[serde(default)]
    token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    client_id_metadata_document_supported: Option<bool>,
    #[serde(default)]
    authorization_response_iss_parameter_supported: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
struct ResourceMetadata {
    resource: String,
    #[serde(default)]
    authorization_servers: Vec<String>,
    #[serde(default)]
    scopes_supported: Option<Vec<String>>,
}

/// A `WWW-Authenticate: Bearer` challenge's parameters.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) resource_metadata: Option<String>,
    pub(crate) scope: Option<String>,
    pub(crate) error: Option<String>,
}

impl Challenge {
    /// Reads the `Bearer` challenge's auth-params (RFC 9110 §11.2: `name=token` or
    /// `name="quoted string"`, comma-separated).
    pub(crate) fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let rest = header.trim_start();
        let Some(rest) = rest
            .get(..6)
            .filter(|s| s.eq_ignore_ascii_case("bearer"))
            .map(|_| &rest[6..])
        else {
            return challenge;
        };
        let mut chars = rest.chars().peekable();
        loop {
            while chars.peek().is_some_and(|c| *c == ',' || c.is_whitespace()) {
                chars.next();
            }
            let name: String = chars
                .by_ref()
                .take_while(|c| *c != '=')
                .collect::<String>()
                .trim()
                .to_ascii_lowercase();
            if name.is_empty() {
                break;
            }
            let mut value = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => value.extend(chars.next()),
                        '"' => break,
                        c => value.push(c),
                    }
                }
            } else {
                value = chars
                    .by_ref()
                    .take_while(|c| *c != ',')
                    .collect::<String>()
                    .trim()
                    .to_owned();
            }
            match name.as_str() {
                "resource_metadata" => challenge.resource_metadata = Some(value),
                "scope" => challenge.scope = Some(value),
                "error" => challenge.error = Some(value),
                _ => {}
            }
        }
        challenge
    }
}

/// The client's OAuth state: its configuration, its [`Authorizer`] and its tokens. Shared by
/// every request of one [`McpHttpClient`](super::McpHttpClient).
pub struct OAuth {
    config: OAuthConfig,
    authorizer: Arc<dyn Authorizer>,
    state: Mutex<State>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

/// Two space-separated scope lists as one, each scope once, in order.
fn union(before: Option<&str>, now: Option<&str>) -> Option<String> {
    let mut scopes: Vec<&str> = Vec::new();
    for scope in before.into_iter().chain(now).flat_map(|s| s.split(' ')) {
        if !scope.is_empty() && !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    (!scopes.is_empty()).then(|| scopes.join(" "))
}

fn random_token() -> String {
    let mut bytes = [0u8; 32];
    // The system's secure source; a failure leaves zeros, which only weakens PKCE and state
    // (never seen on the platforms the crate runs on).
    let _ = getrandom::fill(&mut bytes);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn http_error(e: impl std::fmt::Display) -> OAuthError {
    OAuthError::Http(e.to_string())
}

impl OAuth {
    /// OAuth with this configuration, the browser step done by `authorizer`.
    pub fn new(config: OAuthConfig, authorizer: impl Authorizer) -> Self {
        OAuth {
            config,
            authorizer: Arc::new(authorizer),
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The access token to send, if the client has one.
    pub(crate) fn bearer(&self) -> Option<String> {
        self.state().access.clone()
    }

    /// The most authorizations per request.
    pub(crate) fn max_authorizations(&self) -> usize {
        self.config.max_authorizations.max(1)
    }

    async fn exchange(
        &self,
        http: &HyperClient,
        req: Request<Full<Bytes>>,
    ) -> Result<(StatusCode, Value), OAuthError> {
        let exchange = async {
            let response = http.request(req).await.map_err(http_error)?;
            let status = response.status();
            let body = Limited::new(response.into_body(), self.config.max_response)
                .collect()
                .await
                .map_err(http_error)?
                .to_bytes();
            Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
        };
        tokio::time::timeout(self.config.timeout, exchange)
            .await
            .map_err(|_| OAuthError::Http("no answer in time".into()))?
    }

    async fn get_json(&self, http: &HyperClient, url: &str) -> Option<Value> {
        let mut req = Request::new(Full::new(Bytes::new()));
        *req.uri_mut() = url.parse().ok()?;
        req.headers_mut()
            .insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        match self.exchange(http, req).await {
            Ok((status, value)) if status.is_success() && value.is_object() => Some(value),
            _ => None,
        }
    }

    async fn post(
        &self,
        http: &HyperClient,
        url: &str,
        body: Vec<u8>,
        content_type: &'static str,
        basic: Option<String>,
    ) -> Result<(StatusCode, Value), OAuthError> {
        let mut req = Request::new(Full::new(Bytes::from(body)));
        *req.method_mut() = Method::POST;
        *req.uri_mut() = url.parse().map_err(http_error)?;
        let h = req.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        h.insert(header::ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(basic) = basic {
            h.insert(
                header::AUTHORIZATION,
                HeaderValue::from_str(&basic).map_err(http_error)?,
            );
        }
        self.exchange(http, req).await
    }

    /// Answers a 401 or 403 of the MCP server at `server`: a token the next attempt sends.
    pub(crate) async fn on_challenge(
        &self,
        http: &HyperClient,
        server: &str,
        status: u16,
        www_authenticate: Option<&str>,
    ) -> Result<(), OAuthError> {
        let challenge = www_authenticate.map(Challenge::parse).unwrap_or_default();
        let server = Url::parse(server).map_err(http_error)?;
        let prm = self.resource_metadata(http, &server, &challenge).await?;
        let issuer = prm
            .authorization_servers
            .first()
            .cloned()
            .ok_or_else(|| OAuthError::NoServerMetadata(prm.resource.clone()))?;
        let metadata = self.server_metadata(http, &issuer).await?;
        let insufficient =
            status == 403 && challenge.error.as_deref() == Some("insufficient_scope");
        if status == 401 && !insufficient && self.refresh(http, &metadata, &prm).await? {
            return Ok(());
        }
        let scope = challenge
            .scope
            .clone()
            .or_else(|| prm.scopes_supported.as_ref().map(|s| s.join(" ")))
            .filter(|s| !s.is_empty());
        // Step-up: what was asked before and what the challenge asks now (SEP-2350), so the
        // new token loses none of the old one's scopes.
        let scope = if insufficient {
            union(self.state().scope.as_deref(), scope.as_deref())
        } else {
            scope
        };
        if let Some(enterprise) = &self.config.enterprise {
            let form = [
                (
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:token-exchange",
                ),
                (
                    "requested_token_type",
                    "urn:ietf:params:oauth:token-type:id-jag",
                ),
                ("audience", metadata.issuer.as_str()),
                ("resource", prm.resource.as_str()),
                ("subject_token", enterprise.id_token.as_str()),
                (
                    "subject_token_type",
                    "urn:ietf:params:oauth:token-type:id_token",
                ),
                ("client_id", enterprise.idp_client_id.as_str()),
            ];
            let body = form_urlencoded::Serializer::new(String::new())
                .extend_pairs(form)
                .finish();
            let (status, answer) = self
                .post(
                    http,
                    &enterprise.idp_token_endpoint,
                    body.into_bytes(),
                    "application/x-www-form-urlencoded",
                    None,
                )
                .await?;
            let Some(grant) = answer["access_token"]
                .as_str()
                .filter(|_| status.is_success())
            else {
                return Err(OAuthError::Refused(answer.to_string()));
            };
            let registration = self.registration(http, &metadata, scope.as_deref()).await?;
            let form = vec![
                (
                    "grant_type",
                    "urn:ietf:params:oauth:grant-type:jwt-bearer".to_owned(),
                ),
                ("assertion", grant.to_owned()),
            ];
            self.token_request(http, &metadata, &registration, form)
                .await?;
            return Ok(());
        }
        if self.config.client_credentials {
            let registration = self.registration(http, &metadata, scope.as_deref()).await?;
            let mut form = vec![
                ("grant_type", "client_credentials".to_owned()),
                ("resource", prm.resource.clone()),
            ];
            if let Some(scope) = scope {
                form.push(("scope", scope));
            }
            self.token_request(http, &metadata, &registration, form)
                .await?;
            return Ok(());
        }
        let scope = self.with_offline_access(scope, &metadata);
        self.authorize(http, &metadata, &prm, scope).await
    }

    /// `scope` with `offline_access` where the client wants a refresh token and the server
    /// offers both.
    fn with_offline_access(
        &self,
        scope: Option<String>,
        metadata: &ServerMetadata,
    ) -> Option<String> {
        let offered = metadata
            .scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
        let refreshes = metadata
            .grant_types_supported
            .as_ref()
            .is_none_or(|g| g.iter().any(|g| g == "refresh_token"));
        if !(self.config.offline_access && offered && refreshes) {
            return scope;
        }
        match scope {
            Some(s) if s.split(' ').any(|s| s == "offline_access") => Some(s),
            Some(s) => Some(format!("{s} offline_access")),
            None => Some("offline_access".to_owned()),
        }
    }

    /// RFC 9728 discovery: the challenge's URL, else the path-based then the root well-known
    /// URL; the metadata's `resource` must be the server's (its origin, and a prefix of its
    /// path).
    async fn resource_metadata(
        &self,
        http: &HyperClient,
        server: &Url,
        challenge: &Challenge,
    ) -> Result<ResourceMetadata, OAuthError> {
        let origin = server.origin().ascii_serialization();
        let path = server.path().trim_end_matches('/');
        let mut candidates = Vec::new();
        if let Some(hint) = &challenge.resource_metadata {
            candidates.push(hint.clone());
        }
        if !path.is_empty() {
            candidates.push(format!(
                "{origin}/.well-known/oauth-protected-resource{path}"
            ));
        }
        candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
        for url in candidates {
            let Some(value) = self.get_json(http, &url).await else {
                continue;
            };
            let prm: ResourceMetadata = serde_json::from_value(value).map_err(http_error)?;
            let matches = Url::parse(&prm.resource).is_ok_and(|r| {
                r.origin() == server.origin()
                    && server.path().starts_with(r.path().trim_end_matches('/'))
            });
            if !matches {
                return Err(OAuthError::ResourceMismatch {
                    expected: server.to_string(),
                    found: prm.resource,
                });
            }
            return Ok(prm);
        }
        Err(OAuthError::NoResourceMetadata(server.to_string()))
    }

    /// RFC 8414 / OpenID discovery for `issuer`, in the order MCP gives; the metadata's
    /// `issuer` must be `issuer` itself.
    async fn server_metadata(
        &self,
        http: &HyperClient,
        issuer: &str,
    ) -> Result<ServerMetadata, OAuthError> {
        let url = Url::parse(issuer).map_err(http_error)?;
        let origin = url.origin().ascii_serialization();
        let path = url.path().trim_end_matches('/');
        let candidates = if path.is_empty() {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server"),
                format!("{origin}/.well-known/openid-configuration"),
            ]
        } else {
            vec![
                format!("{origin}/.well-known/oauth-authorization-server{path}"),
                format!("{origin}/.well-known/openid-configuration{path}"),
                format!("{origin}{path}/.well-known/openid-configuration"),
            ]
        };
        for candidate in candidates {
            let Some(value) = self.get_json(http, &candidate).await else {
                continue;
            };
            let metadata: ServerMetadata = serde_json::from_value(value).map_err(http_error)?;
            if metadata.issuer != issuer {
                return Err(OAuthError::IssuerMismatch {
                    expected: issuer.to_owned(),
                    found: metadata.issuer,
                });
            }
            return Ok(metadata);
        }
        Err(OAuthError::NoServerMetadata(issuer.to_owned()))
    }

    /// The client's identity at this server: kept from before (same issuer), pre-registered,
    /// a CIMD URL, or registered now.
    async fn registration(
        &self,
        http: &HyperClient,
        metadata: &ServerMetadata,
        scope: Option<&str>,
    ) -> Result<Registration, OAuthError> {
        if let Some(r) = self
            .state()
            .registration
            .clone()
            .filter(|r| r.issuer == metadata.issuer)
        {
            return Ok(r);
        }
        let registration = if let Some(id) = &self.config.client_id {
            Registration {
                issuer: metadata.issuer.clone(),
                client_id: id.clone(),
                secret: self.config.client_secret.clone(),
            }
        } else if let (Some(url), Some(true)) = (
            &self.config.client_metadata_url,
            metadata.client_id_metadata_document_supported,
        ) {
            Registration {
                issuer: metadata.issuer.clone(),
                client_id: url.clone(),
                secret: None,
            }
        } else if let Some(endpoint) = &metadata.registration_endpoint {
            let mut body = serde_json::json!({
                "client_name": self.config.client_name,
                "redirect_uris": [self.config.redirect_uri],
                "grant_types": ["authorization_code", "refresh_token"],
                "response_types": ["code"],
                "application_type": "native",
            });
            if let Some(scope) = scope {
                body["scope"] = scope.into();
            }
            let (status, answer) = self
                .post(
                    http,
                    endpoint,
                    body.to_string().into_bytes(),
                    "application/json",
                    None,
                )
                .await?;
            let Some(client_id) = answer["client_id"].as_str().filter(|_| status.is_success())
            else {
                return Err(OAuthError::Refused(answer.to_string()));
            };
            Registration {
                issuer: metadata.issuer.clone(),
                client_id: client_id.to_owned(),
                secret: answer["client_secret"].as_str().map(str::to_owned),
            }
        } else {
            return Err(OAuthError::NoRegistration);
        };
        // A new issuer: nothing of the old one's is reused.
        let mut state = self.state();
        state.registration = Some(registration.clone());
        state.access = None;
        state.refresh = None;
        Ok(registration)
    }

    /// The token endpoint's client authentication for this registration.
    fn token_auth(metadata: &ServerMetadata, registration: &Registration) -> TokenAuth {
        let supported = metadata
            .token_endpoint_auth_methods_supported
            .clone()
            .unwrap_or_else(|| vec!["client_secret_basic".to_owned()]);
        let has = |m: &str| supported.iter().any(|s| s == m);
        match &registration.secret {
            Some(_) if has("client_secret_basic") => TokenAuth::Basic,
            Some(_) if has("client_secret_post") => TokenAuth::Post,
            _ => TokenAuth::None,
        }
    }

    /// POSTs a token request (`form` plus the client's authentication); the tokens kept.
    async fn token_request(
        &self,
        http: &HyperClient,
        metadata: &ServerMetadata,
        registration: &Registration,
        mut form: Vec<(&str, String)>,
    ) -> Result<bool, OAuthError> {
        let mut basic = None;
        #[cfg(feature = "oauth-jwt")]
        if let Some(assertion) = &self.config.client_assertion {
            form.push(("client_id", registration.client_id.clone()));
            form.push((
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
            ));
            form.push((
                "client_assertion",
                assertion.sign(&registration.client_id, &metadata.issuer)?,
            ));
            return self.send_token_request(http, metadata, form, None).await;
        }
        match (
            Self::token_auth(metadata, registration),
            &registration.secret,
        ) {
            (TokenAuth::Basic, Some(secret)) => {
                let enc =
                    |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
                let pair = format!("{}:{}", enc(&registration.client_id), enc(secret));
                basic = Some(format!("Basic {}", STANDARD.encode(pair)));
            }
            (TokenAuth::Post, Some(secret)) => {
                form.push(("client_id", registration.client_id.clone()));
                form.push(("client_secret", secret.clone()));
            }
            _ => form.push(("client_id", registration.client_id.clone())),
        }
        self.send_token_request(http, metadata, form, basic).await
    }

    /// POSTs a token request; the tokens kept.
    async fn send_token_request(
        &self,
        http: &HyperClient,
        metadata: &ServerMetadata,
        form: Vec<(&str, String)>,
        basic: Option<String>,
    ) -> Result<bool, OAuthError> {
        let body = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(form.iter().map(|(k, v)| (*k, v.as_str())))
            .finish();
        let (status, answer) = self
            .post(
                http,
                &metadata.token_endpoint,
                body.into_bytes(),
                "application/x-www-form-urlencoded",
                basic,
            )
            .await?;
        let Some(access) = answer["access_token"]
            .as_str()
            .filter(|_| status.is_success())
        else {
            return Err(OAuthError::Refused(answer.to_string()));
        };
        let mut state = self.state();
        state.access = Some(access.to_owned());
        if let Some(refresh) = answer["refresh_token"].as_str() {
            state.refresh = Some(refresh.to_owned());
        }
        Ok(true)
    }

    /// Refreshes the access token when there is a refresh token; false when there is none or
    /// the server refused it (the caller authorizes anew).
    async fn refresh(
        &self,
        http: &HyperClient,
        metadata: &ServerMetadata,
        prm: &ResourceMetadata,
    ) -> Result<bool, OAuthError> {
        let (refresh, registration) = {
            let mut state = self.state();
            let registration = state
                .registration
                .clone()
                .filter(|r| r.issuer == metadata.issuer);
            match (state.refresh.take(), registration) {
                (Some(r), Some(reg)) => (r, reg),
                _ => return Ok(false),
            }
        };
        let form = vec![
            ("grant_type", "refresh_token".to_owned()),
            ("refresh_token", refresh),
            ("resource", prm.resource.clone()),
        ];
        Ok(self
            .token_request(http, metadata, &registration, form)
            .await
            .unwrap_or(false))
    }

    /// The authorization code flow with PKCE, through the [`Authorizer`].
    async fn authorize(
        &self,
        http: &HyperClient,
        metadata: &ServerMetadata,
        prm: &ResourceMetadata,
        scope: Option<String>,
    ) -> Result<(), OAuthError> {
        let registration = self.registration(http, metadata, scope.as_deref()).await?;
        let verifier = random_token();
        let challenge = URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()));
        let state = random_token();
        let mut url = Url::parse(&metadata.authorization_endpoint).map_err(http_error)?;
        {
            let mut query = url.query_pairs_mut();
            query
                .append_pair("response_type", "code")
                .append_pair("client_id", &registration.client_id)
                .append_pair("redirect_uri", &self.config.redirect_uri)
                .append_pair("state", &state)
                .append_pair("code_challenge", &challenge)
                .append_pair("code_challenge_method", "S256")
                .append_pair("resource", &prm.resource);
            if let Some(scope) = &scope {
                query.append_pair("scope", scope);
            }
        }
        self.state().scope = scope;
        let redirect = self.authorizer.authorize(url.to_string()).await?;
        let redirect = Url::parse(&redirect).map_err(|e| OAuthError::BadResponse(e.to_string()))?;
        let param = |name: &str| {
            redirect
                .query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = param("error") {
            return Err(OAuthError::Refused(error));
        }
        if param("state").as_deref() != Some(state.as_str()) {
            return Err(OAuthError::BadResponse("state does not match".into()));
        }
        // RFC 9207: the issuer compared as a plain string; required where advertised.
        let iss = param("iss");
        let advertised = metadata.authorization_response_iss_parameter_supported == Some(true);
        match &iss {
            Some(iss) if *iss == metadata.issuer => {}
            None if !advertised => {}
            _ => return Err(OAuthError::WrongIss(iss)),
        }
        let code = param("code").ok_or_else(|| OAuthError::BadResponse("no code".into()))?;
        let form = vec![
            ("grant_type", "authorization_code".to_owned()),
            ("code", code),
            ("redirect_uri", self.config.redirect_uri.clone()),
            ("code_verifier", verifier),
            ("resource", prm.resource.clone()),
        ];
        self.token_request(http, metadata, &registration, form)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenge_params_quoted_and_bare() {
        let c = Challenge::parse(
            r#"Bearer error="insufficient_scope", scope="a b", resource_metadata="http://x/.well-known/oauth-protected-resource/mcp""#,
        );
        assert_eq!(c.error.as_deref(), Some("insufficient_scope"));
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://x/.well-known/oauth-protected-resource/mcp")
        );
        let c = Challenge::parse(r#"bearer scope=read, error="x\"y""#);
        assert_eq!(c.scope.as_deref(), Some("read"));
        assert_eq!(c.error.as_deref(), Some("x\"y"));
        assert_eq!(Challenge::parse("Basic realm=x"), Challenge::default());
    }

    #[test]
    fn step_up_scope_is_the_union() {
        assert_eq!(union(Some("a b"), Some("b c")).as_deref(), Some("a b c"));
        assert_eq!(union(None, Some("c")).as_deref(), Some("c"));
        assert_eq!(union(None, None), None);
    }
}
