//! How a card says callers authenticate: its `securitySchemes` (by name) and
//! `securityRequirements` (which schemes, with which scopes), typed as `a2a.proto` has them.
//! [`A2aServer::authenticator_with_scheme`](crate::A2aServer::authenticator_with_scheme)
//! writes both from the authenticator it configures.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One way to authenticate (`SecurityScheme`: exactly one member on the wire).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SecurityScheme {
    /// An API key in a header, query parameter or cookie.
    #[serde(alias = "api_key_security_scheme")]
    ApiKeySecurityScheme(ApiKeySecurityScheme),
    /// HTTP authentication (`Bearer`, `Basic`, ...).
    #[serde(alias = "http_auth_security_scheme")]
    HttpAuthSecurityScheme(HttpAuthSecurityScheme),
    /// OAuth 2.0 (its flows kept as JSON).
    #[serde(rename = "oauth2SecurityScheme", alias = "oauth2_security_scheme")]
    OAuth2SecurityScheme(OAuth2SecurityScheme),
    /// OpenID Connect.
    #[serde(alias = "open_id_connect_security_scheme")]
    OpenIdConnectSecurityScheme(OpenIdConnectSecurityScheme),
    /// Mutual TLS.
    #[serde(rename = "mtlsSecurityScheme", alias = "mtls_security_scheme")]
    MtlsSecurityScheme(Described),
}

impl SecurityScheme {
    /// `Authorization: Bearer` tokens; `format` says what they are (`JWT`, or empty).
    pub fn bearer(format: &str) -> Self {
        SecurityScheme::HttpAuthSecurityScheme(HttpAuthSecurityScheme {
            description: String::new(),
            scheme: "Bearer".into(),
            bearer_format: format.into(),
        })
    }

    /// An API key in header `name`.
    pub fn api_key_header(name: &str) -> Self {
        SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
            description: String::new(),
            location: "header".into(),
            name: name.into(),
        })
    }

    /// Client certificates (mutual TLS).
    pub fn mutual_tls() -> Self {
        SecurityScheme::MtlsSecurityScheme(Described::default())
    }
}

/// An API key scheme.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySecurityScheme {
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// `header`, `query` or `cookie`.
    #[serde(default)]
    pub location: String,
    /// The header's, parameter's or cookie's name.
    #[serde(default)]
    pub name: String,
}

/// An HTTP authentication scheme.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpAuthSecurityScheme {
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The scheme's name (`Bearer`, `Basic`).
    #[serde(default)]
    pub scheme: String,
    /// What the bearer tokens are (`JWT`).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "bearer_format"
    )]
    pub bearer_format: String,
}

/// An OAuth 2.0 scheme.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OAuth2SecurityScheme {
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Its flows (`OAuthFlows`, as JSON).
    #[serde(default)]
    pub flows: Value,
    /// The authorization server's metadata URL (RFC 8414).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        alias = "oauth2_metadata_url"
    )]
    pub oauth2_metadata_url: String,
}

/// An OpenID Connect scheme.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OpenIdConnectSecurityScheme {
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The provider's discovery URL.
    #[serde(default, alias = "open_id_connect_url")]
    pub open_id_connect_url: String,
}

/// A scheme with only a description (mutual TLS).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Described {
    /// What it is.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
}

/// Which schemes a caller uses together, each with the scopes it needs
/// (`SecurityRequirement`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct SecurityRequirement {
    /// Scheme name to the scopes needed.
    #[serde(default)]
    pub schemes: BTreeMap<String, StringList>,
}

impl SecurityRequirement {
    /// The requirement of scheme `name` alone, with `scopes`.
    pub fn of(name: &str, scopes: &[&str]) -> Self {
        let list = scopes.iter().map(|s| (*s).to_owned()).collect();
        SecurityRequirement {
            schemes: BTreeMap::from([(name.to_owned(), StringList { list })]),
        }
    }
}

/// A list of strings, as `a2a.proto` wraps one in a map.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct StringList {
    /// The strings.
    #[serde(default)]
    pub list: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_shapes() {
        let schemes = BTreeMap::from([
            ("jwt".to_owned(), SecurityScheme::bearer("JWT")),
            (
                "key".to_owned(),
                SecurityScheme::api_key_header("X-API-Key"),
            ),
            ("mtls".to_owned(), SecurityScheme::mutual_tls()),
        ]);
        let v = serde_json::to_value(&schemes).unwrap_or_default();
        assert_eq!(
            v,
            serde_json::json!({
                "jwt": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}},
                "key": {"apiKeySecurityScheme": {"location": "header", "name": "X-API-Key"}},
                "mtls": {"mtlsSecurityScheme": {}},
            })
        );
        let back: BTreeMap<String, SecurityScheme> = serde_json::from_value(v).unwrap_or_default();
        assert_eq!(back, schemes);
        let r = serde_json::to_value(SecurityRequirement::of("jwt", &["a2a"])).unwrap_or_default();
        assert_eq!(
            r,
            serde_json::json!({"schemes": {"jwt": {"list": ["a2a"]}}})
        );
    }
}
