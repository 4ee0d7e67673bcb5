//! `--ca-cert FILE`: the certificates an `https://` or `wss://` call trusts, and `--cert FILE
//! --key FILE`: the client certificate it presents (mutual TLS).

use std::path::Path;
use std::sync::Arc;

use rpcwire_http::tls::rustls::pki_types::pem::PemObject;
use rpcwire_http::tls::rustls::pki_types::CertificateDer;
use rpcwire_http::tls::rustls::{ClientConfig, RootCertStore};

/// TLS settings that trust the certificates of the PEM file at `path` and nothing else (as
/// curl's `--cacert` replaces its default bundle): a private CA, or a self-signed server's
/// own certificate. The error says what is wrong with the file.
pub fn trusting(path: &Path) -> Result<Arc<ClientConfig>, String> {
    client(Some(path), None)
}

/// TLS settings for an `https://` or `wss://` call: trusting the certificates of `ca` (else
/// Mozilla's root certificates), and presenting the client certificate `identity`
/// (certificate and key, PEM) for mutual TLS. `None` when neither is given: the client's
/// defaults apply. The error says which file is wrong and why.
pub fn client_tls(
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<Option<Arc<ClientConfig>>, String> {
    if ca.is_none() && identity.is_none() {
        return Ok(None);
    }
    client(ca, identity).map(Some)
}

fn client(
    ca: Option<&Path>,
    identity: Option<(&Path, &Path)>,
) -> Result<Arc<ClientConfig>, String> {
    let roots = match ca {
        Some(path) => roots(path)?,
        None => RootCertStore {
            roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
        },
    };
    let builder = ClientConfig::builder_with_provider(Arc::new(
        rpcwire_http::tls::rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| format!("TLS settings: {e}"))?
    .with_root_certificates(roots);
    let config = match identity {
        None => builder.with_no_client_auth(),
        Some((cert, key)) => {
            let chain = rpcwire_tokio::tls::certificates_from_pem(cert)
                .map_err(|e| format!("--cert {}: {e}", cert.display()))?;
            let key = rpcwire_tokio::tls::private_key_from_pem(key)
                .map_err(|e| format!("--key {}: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("--cert/--key: {e}"))?
        }
    };
    Ok(Arc::new(config))
}

/// The certificates of the PEM file at `path`, as trust roots.
fn roots(path: &Path) -> Result<RootCertStore, String> {
    let shown = path.display();
    let certs =
        CertificateDer::pem_file_iter(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    let mut roots = RootCertStore::empty();
    for cert in certs {
        let cert = cert.map_err(|e| format!("{shown}: {e}"))?;
        roots
            .add(cert)
            .map_err(|e| format!("{shown}: not a usable CA certificate: {e}"))?;
    }
    if roots.is_empty() {
        return Err(format!("{shown}: no PEM certificate in it"));
    }
    Ok(roots)
}
