//! How the clients reach a server: the URL they take, and the connector behind their pooled
//! hyper client: plain TCP for `http://`, and TLS for `https://` with the `tls` feature
//! (rustls, with the `ring` provider and Mozilla's root certificates unless a
//! [`rustls::ClientConfig`] is given).

use std::error::Error as StdError;
#[cfg(feature = "tls")]
use std::sync::Arc;

use bytes::Bytes;
use http::Uri;
use http_body_util::Full;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// A client's URL was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    /// Not an absolute `http://` or `https://` URL with a host.
    #[error("not an absolute http:// or https:// URL: {0}")]
    NotHttp(String),
    /// An `https://` URL, and this build has no TLS: enable the `tls` feature of
    /// `rpcwire-http`.
    #[error("{0}: https:// needs the `tls` feature of rpcwire-http")]
    TlsNotEnabled(String),
}

/// `url` as a URI: an absolute `http://` URL with a host, or `https://` with the `tls`
/// feature.
pub fn parse_url(url: &str) -> Result<Uri, UrlError> {
    let uri: Uri = url.parse().map_err(|_| UrlError::NotHttp(url.to_owned()))?;
    if uri.authority().is_none() {
        return Err(UrlError::NotHttp(url.to_owned()));
    }
    match uri.scheme_str() {
        Some("http") => Ok(uri),
        Some("https") if cfg!(feature = "tls") => Ok(uri),
        Some("https") => Err(UrlError::TlsNotEnabled(url.to_owned())),
        _ => Err(UrlError::NotHttp(url.to_owned())),
    }
}

/// The connector of the clients' hyper client (TCP, and TLS for `https://`).
#[cfg(feature = "tls")]
pub type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
/// The connector of the clients' hyper client (TCP: this build has no `tls` feature).
#[cfg(not(feature = "tls"))]
pub type Connector = HttpConnector;

/// A pooling hyper client: keep-alive, HTTP/1.1 (and HTTP/2 when TLS negotiates it), Nagle
/// off so that small calls go out at once.
pub type HyperClient = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// TLS settings a client is built with (the `tls` feature).
#[cfg(feature = "tls")]
pub(crate) type Tls = Option<Arc<rustls::ClientConfig>>;
/// TLS settings a client is built with: none without the `tls` feature.
#[cfg(not(feature = "tls"))]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Tls;

/// No TLS settings given: the default ones for `https://` ([`default_tls`]) with the `tls`
/// feature.
pub(crate) fn no_tls() -> Tls {
    #[cfg(feature = "tls")]
    return None;
    #[cfg(not(feature = "tls"))]
    Tls
}

/// The TLS settings of a client a profile builds ([`http_client`]): opaque, so that a
/// profile's code is the same with and without the `tls` feature. The default is
/// `tls::default_tls` for `https://` URLs (with the feature; without it, `https://` is
/// refused).
#[derive(Debug, Clone)]
pub struct ClientTls(Tls);

impl Default for ClientTls {
    fn default() -> Self {
        ClientTls(no_tls())
    }
}

impl ClientTls {
    /// These rustls settings for `https://` URLs (feature `tls`).
    #[cfg(feature = "tls")]
    pub fn with_config(config: Arc<rustls::ClientConfig>) -> Self {
        ClientTls(Some(config))
    }
}

/// Why a client's TLS settings are not usable (never, without the `tls` feature).
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// rustls refused the settings (the default roots included).
    #[cfg(feature = "tls")]
    #[error(transparent)]
    Rustls(#[from] rustls::Error),
}

/// A pooling hyper client for a profile's client (as the crate's clients use): keep-alive,
/// HTTP/1.1 (and HTTP/2 when TLS negotiates it), Nagle off, `https://` with `tls`.
pub fn http_client(tls: ClientTls) -> Result<HyperClient, TlsError> {
    hyper_client::<TlsError>(tls.0)
}

/// The clients' hyper client, with `tls` for `https://` URLs (`None`: [`default_tls`]); `E`
/// is the client's error type.
#[cfg(feature = "tls")]
pub(crate) fn hyper_client<E: From<rustls::Error>>(tls: Tls) -> Result<HyperClient, E> {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    tcp.enforce_http(false);
    let config = match tls {
        Some(config) => config,
        None => default_tls()?,
    };
    // The builder sets ALPN (h2, http/1.1) on its own copy of the settings.
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(Arc::unwrap_or_clone(config))
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp);
    Ok(hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(connector))
}

/// The clients' hyper client (plain TCP: this build has no `tls` feature); it cannot fail.
#[cfg(not(feature = "tls"))]
pub(crate) fn hyper_client<E>(_: Tls) -> Result<HyperClient, E> {
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    Ok(hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(tcp))
}

/// The TLS settings of a client given none: [`tls_with_roots`] with Mozilla's root
/// certificates (`webpki-roots`), so that a build trusts the same servers on every machine.
/// Give a client your own [`rustls::ClientConfig`] to trust a private CA or the system's
/// store.
#[cfg(feature = "tls")]
pub fn default_tls() -> Result<Arc<rustls::ClientConfig>, rustls::Error> {
    static DEFAULT: std::sync::OnceLock<Arc<rustls::ClientConfig>> = std::sync::OnceLock::new();
    if let Some(config) = DEFAULT.get() {
        return Ok(Arc::clone(config));
    }
    let roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let config = Arc::new(tls_with_roots(roots)?);
    Ok(Arc::clone(DEFAULT.get_or_init(|| config)))
}

/// rustls settings with the `ring` provider (named, so that no process-wide default provider
/// is needed), TLS 1.2 and 1.3, trusting `roots`, no client certificate: for a server whose
/// certificate a private CA signed (a test's self-signed one included).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rpcwire_http::tls::{rustls, tls_with_roots};
///
/// # let ca = rcgen::generate_simple_self_signed(vec!["localhost".into()])?.cert.der().to_vec();
/// let mut roots = rustls::RootCertStore::empty();
/// roots.add(rustls::pki_types::CertificateDer::from(ca))?;
/// let client = rpcwire_http::HttpClient::builder("https://localhost:8443/rpc")
///     .tls_config(std::sync::Arc::new(tls_with_roots(roots)?))
///     .build()?;
/// # drop(client);
/// # Ok(()) }
/// ```
#[cfg(feature = "tls")]
pub fn tls_with_roots(roots: rustls::RootCertStore) -> Result<rustls::ClientConfig, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// `error` and its sources, joined with `": "`: hyper's client error says only "client error
/// (Connect)", and what went wrong (refused, a certificate not trusted) is in its sources.
pub fn error_chain(error: &(dyn StdError + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        // Some errors repeat their source's text in their own.
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_sorted_by_scheme() {
        assert!(parse_url("http://127.0.0.1:1/rpc").is_ok());
        for bad in [
            "127.0.0.1:1/rpc",
            "/rpc",
            "ftp://h/x",
            "http:/rpc",
            "not a url",
        ] {
            assert_eq!(
                parse_url(bad),
                Err(UrlError::NotHttp(bad.to_owned())),
                "{bad}"
            );
        }
        let https = parse_url("https://example.com/mcp");
        if cfg!(feature = "tls") {
            assert!(https.is_ok());
        } else {
            assert_eq!(
                https,
                Err(UrlError::TlsNotEnabled(
                    "https://example.com/mcp".to_owned()
                ))
            );
        }
    }

    #[test]
    fn an_error_chain_names_every_cause_once() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let e = Outer(std::io::Error::new(
            std::io::ErrorKind::ConnectionRefused,
            "connection refused",
        ));
        assert_eq!(error_chain(&e), "outer: connection refused");
    }
}
