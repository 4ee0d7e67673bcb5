//! Verification keys from a JWKS URL (feature `jwks`): [`JwksUrl`], the
//! [`FetchJwks`] that gets an authorization server's JSON Web Key Set over `http://` or
//! `https://` (feature `tls`) with the crate's pooled client. The service layer's
//! [`JwksKeys`] keeps the set, fetches it again on a period and for an unknown `kid` (at most
//! once per least interval), bounds its size and reads it (see
//! [`rpcwire_service::jwt`]); [`keys`] builds both for a URL.
//!
//! A status other than 200 is [`JwksError::Status`]; a document over the size limit is
//! refused by its declared length or, without one, after reading up to the limit.
//!
//! ```no_run
//! use rpcwire_tokio::jwt::JwtAuthenticator;
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let keys = rpcwire_http::jwks::keys("https://auth.example.com/.well-known/jwks.json")?;
//! let auth = JwtAuthenticator::new(keys)
//!     .issuer("https://auth.example.com")
//!     .audience("https://rpc.example.com/mcp");
//! let builder = rpcwire_tokio::Builder::new().map_service(|s| s.authenticator(auth));
//! # drop(builder);
//! # Ok(()) }
//! ```

#[cfg(feature = "tls")]
use std::sync::Arc;

use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
pub use rpcwire_service::jwt::{FetchFuture, FetchJwks, JwksError, JwksKeys, JwksKeysBuilder};

use crate::connect::{error_chain, hyper_client, no_tls, parse_url, HyperClient};
use crate::ClientError;

/// The key set of `url` with the service layer's default settings (see [`JwksKeys`]); for
/// other settings, `JwksKeys::builder(JwksUrl::new(url)?)`.
pub fn keys(url: &str) -> Result<JwksKeys, ClientError> {
    Ok(JwksKeys::new(JwksUrl::new(url)?))
}

/// A JWKS URL fetched with `GET` over the crate's pooled client: the [`FetchJwks`] of a
/// [`JwksKeys`].
#[derive(Clone)]
pub struct JwksUrl {
    url: Uri,
    client: HyperClient,
}

impl std::fmt::Debug for JwksUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwksUrl").field("url", &self.url).finish()
    }
}

impl JwksUrl {
    /// `url` (`http://`, or `https://` with the `tls` feature and Mozilla's roots).
    pub fn new(url: &str) -> Result<Self, ClientError> {
        Ok(JwksUrl {
            url: parse_url(url)?,
            client: hyper_client::<ClientError>(no_tls())?,
        })
    }

    /// `url`, trusting these TLS settings for `https://` (feature `tls`).
    #[cfg(feature = "tls")]
    pub fn with_tls(url: &str, config: Arc<rustls::ClientConfig>) -> Result<Self, ClientError> {
        Ok(JwksUrl {
            url: parse_url(url)?,
            client: hyper_client::<ClientError>(Some(config))?,
        })
    }

    async fn get(&self, max_bytes: usize) -> Result<Vec<u8>, JwksError> {
        let request = Request::builder()
            .method(Method::GET)
            .uri(self.url.clone())
            .header(header::ACCEPT, HeaderValue::from_static("application/json"))
            .body(Full::new(Bytes::new()))
            .map_err(|e| JwksError::Request(e.to_string()))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| JwksError::Request(error_chain(&e)))?;
        if response.status() != StatusCode::OK {
            return Err(JwksError::Status(response.status().as_u16()));
        }
        let declared = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if declared.is_some_and(|n| n > max_bytes as u64) {
            return Err(JwksError::TooLarge(max_bytes));
        }
        let body = http_body_util::Limited::new(response.into_body(), max_bytes)
            .collect()
            .await
            .map_err(|e| {
                if e.is::<http_body_util::LengthLimitError>() {
                    JwksError::TooLarge(max_bytes)
                } else {
                    JwksError::Request(e.to_string())
                }
            })?;
        Ok(body.to_bytes().to_vec())
    }
}

impl FetchJwks for JwksUrl {
    fn fetch(&self, max_bytes: usize) -> FetchFuture<'_> {
        Box::pin(self.get(max_bytes))
    }
}
