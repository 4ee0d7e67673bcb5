//! `--ca-cert FILE`: the certificates an `https://` or `wss://` call trusts.

use std::path::Path;
use std::sync::Arc;

use rpcwire_http::tls::rustls::pki_types::pem::PemObject;
use rpcwire_http::tls::rustls::pki_types::CertificateDer;
use rpcwire_http::tls::rustls::{ClientConfig, RootCertStore};
use rpcwire_http::tls::tls_with_roots;

/// TLS settings that trust the certificates of the PEM file at `path` and nothing else (as
/// curl's `--cacert` replaces its default bundle): a private CA, or a self-signed server's
/// own certificate. The error says what is wrong with the file.
pub fn trusting(path: &Path) -> Result<Arc<ClientConfig>, String> {
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
    tls_with_roots(roots)
        .map(Arc::new)
        .map_err(|e| format!("TLS settings: {e}"))
}
