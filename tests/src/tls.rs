//! TLS on loopback for the `https://` and `wss://` tests (feature `tls`): a self-signed
//! certificate made for the test, and an accept loop that hands each TLS connection to the
//! server under test with what its ALPN chose.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::TlsAcceptor;

/// How long a handshake may take.
const WAIT: Duration = Duration::from_secs(10);

/// A self-signed certificate for `localhost`.
pub struct Cert {
    /// The certificate.
    pub der: CertificateDer<'static>,
    key: Vec<u8>,
}

impl Cert {
    /// A new certificate (and key) for `localhost`.
    #[allow(clippy::new_without_default)]
    pub fn new() -> Self {
        let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        Cert {
            der: made.cert.der().clone(),
            key: made.signing_key.serialize_der(),
        }
    }

    /// A server configuration that presents the certificate and offers `alpn`.
    pub fn acceptor(&self, alpn: &[&[u8]]) -> TlsAcceptor {
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.key.clone()));
        let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![self.der.clone()], key)
        .unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        TlsAcceptor::from(Arc::new(config))
    }

    /// Roots that trust this certificate only (for the client's settings).
    pub fn roots(&self) -> rustls::RootCertStore {
        let mut roots = rustls::RootCertStore::empty();
        roots.add(self.der.clone()).unwrap();
        roots
    }
}

/// What a TLS server saw: for each connection that completed a handshake, its protocol as
/// the server under test names it.
pub type Seen<P> = Arc<Mutex<Vec<P>>>;

/// Accepts TLS connections on a loopback port and hands each to `serve` with its protocol
/// (`protocol` of the ALPN chosen); returns the port and what was seen.
pub async fn tls_server<P, F, Fut>(
    acceptor: TlsAcceptor,
    protocol: fn(Option<&[u8]>) -> P,
    serve: F,
) -> (u16, Seen<P>)
where
    P: Copy + Send + 'static,
    F: Fn(tokio_rustls::server::TlsStream<tokio::net::TcpStream>, P) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Seen::default();
    let s = Arc::clone(&seen);
    let serve = Arc::new(serve);
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, seen, serve) = (acceptor.clone(), Arc::clone(&s), Arc::clone(&serve));
            tokio::spawn(async move {
                // A handshake the client gives up on (an untrusted certificate) ends here.
                let Ok(Ok(tls)) = tokio::time::timeout(WAIT, acceptor.accept(tcp)).await else {
                    return;
                };
                let protocol = protocol(tls.get_ref().1.alpn_protocol());
                seen.lock().unwrap().push(protocol);
                serve(tls, protocol).await;
            });
        }
    });
    (port, seen)
}
