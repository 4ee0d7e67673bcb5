//! TLS for servers and clients (feature `tls`): rustls with the `ring` provider, through
//! tokio-rustls.
//!
//! [`ServerTls`] reads a certificate chain and its key from PEM files, optionally a CA whose
//! client certificates it requires (mutual TLS), and reloads them without a restart
//! ([`ServerTls::watch`]: when the files change, and on `SIGHUP`): new connections get the new
//! certificate, open ones go on with the one they started with. A verified client
//! certificate's subject and subject alternative names become the caller's
//! [`PeerCertificate`], and, without an authenticator, its [`Identity`](crate::Identity)
//! (subject = the certificate's subject).
//!
//! [`Builder::serve_tls`](crate::Builder::serve_tls) serves JSON-RPC over TLS on a TCP
//! listener; the HTTP transport uses the same [`ServerTls`] for HTTPS and WSS (with ALPN).

use std::io;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::{Duration, SystemTime};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::net::TcpStream;
use tokio_rustls::{TlsAcceptor, TlsConnector};

use rpcwire_service::PeerCertificate;

/// The rustls version this module uses, for building configurations by hand.
pub use rustls;
pub use tokio_rustls::{client::TlsStream as ClientTlsStream, server::TlsStream};

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TlsError {
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: io::Error,
    },
    /// A file holds no PEM item of the kind needed.
    #[error("{path} holds no {what}")]
    Empty {
        /// The file.
        path: PathBuf,
        /// What was looked for ("certificate", "private key").
        what: &'static str,
    },
    /// A PEM item that does not decode.
    #[error("{path}: {reason}")]
    Pem {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// rustls refused the configuration (a key that does not match the certificate, say).
    #[error("TLS configuration refused: {0}")]
    Rustls(#[from] rustls::Error),
    /// The client-certificate verifier could not be built from the CA file.
    #[error("client CA refused: {0}")]
    ClientCa(String),
}

/// The files a [`ServerTls`] reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain (PEM), the server's own certificate first.
    pub cert: PathBuf,
    /// The private key (PEM: PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
    /// With mutual TLS: the CA (PEM) client certificates must be signed by. Clients without a
    /// certificate are then refused in the handshake.
    pub client_ca: Option<PathBuf>,
}

fn read(path: &Path) -> Result<Vec<u8>, TlsError> {
    std::fs::read(path).map_err(|source| TlsError::Read {
        path: path.to_owned(),
        source,
    })
}

/// Every certificate in a PEM file (at least one).
pub fn certificates_from_pem(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let pem = read(path)?;
    let certs = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(TlsError::Empty {
            path: path.to_owned(),
            what: "certificate",
        });
    }
    Ok(certs)
}

/// The first private key in a PEM file.
pub fn private_key_from_pem(path: &Path) -> Result<PrivateKeyDer<'static>, TlsError> {
    let pem = read(path)?;
    PrivateKeyDer::from_pem_slice(&pem).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => TlsError::Empty {
            path: path.to_owned(),
            what: "private key",
        },
        other => TlsError::Pem {
            path: path.to_owned(),
            reason: other.to_string(),
        },
    })
}

/// The `ring` provider, named once.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A root store holding every certificate of a PEM file.
pub fn roots_from_pem(path: &Path) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in certificates_from_pem(path)? {
        roots.add(cert).map_err(|e| TlsError::Pem {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
    }
    Ok(roots)
}

/// A server configuration from the files, offering `alpn` (most preferred first).
fn server_config(files: &TlsFiles, alpn: &[Vec<u8>]) -> Result<ServerConfig, TlsError> {
    let certs = certificates_from_pem(&files.cert)?;
    let key = private_key_from_pem(&files.key)?;
    let builder =
        ServerConfig::builder_with_provider(provider()).with_safe_default_protocol_versions()?;
    let builder = match &files.client_ca {
        Some(ca) => {
            let roots = Arc::new(roots_from_pem(ca)?);
            let verifier = WebPkiClientVerifier::builder_with_provider(roots, provider())
                .build()
                .map_err(|e| TlsError::ClientCa(e.to_string()))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key)?;
    config.alpn_protocols = alpn.to_vec();
    Ok(config)
}

/// When each file was last changed (`None` for one that cannot be read now).
fn stamps(files: &TlsFiles) -> Vec<Option<SystemTime>> {
    let mut paths = vec![&files.cert, &files.key];
    paths.extend(files.client_ca.as_ref());
    paths
        .into_iter()
        .map(|p| std::fs::metadata(p).and_then(|m| m.modified()).ok())
        .collect()
}

/// A server's TLS: the configuration read from [`TlsFiles`], swapped whole when the files
/// are reloaded. Cheap to clone (shared).
///
/// ```no_run
/// use rpcwire_tokio::tls::{ServerTls, TlsFiles};
/// use rpcwire_tokio::{Builder, Router};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let tls = ServerTls::from_files(TlsFiles {
///     cert: "server.pem".into(),
///     key: "server.key".into(),
///     client_ca: None,
/// })?;
/// tls.watch(std::time::Duration::from_secs(2)); // reload when the files change, and on SIGHUP
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:4443").await?;
/// Builder::new().router(Router::new()).serve_tls(listener, tls).await;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct ServerTls {
    shared: Arc<Shared>,
}

struct Shared {
    files: TlsFiles,
    alpn: Vec<Vec<u8>>,
    config: RwLock<Arc<ServerConfig>>,
    /// The files' modification times when last loaded.
    loaded: RwLock<Vec<Option<SystemTime>>>,
}

impl std::fmt::Debug for ServerTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerTls")
            .field("files", &self.shared.files)
            .finish_non_exhaustive()
    }
}

impl ServerTls {
    /// Reads the files (no ALPN: JSON-RPC over TLS on a stream).
    pub fn from_files(files: TlsFiles) -> Result<Self, TlsError> {
        ServerTls::with_alpn(files, &[])
    }

    /// Reads the files, offering the ALPN protocols `alpn` (most preferred first, for
    /// example `[b"h2", b"http/1.1"]` for HTTPS).
    pub fn with_alpn(files: TlsFiles, alpn: &[&[u8]]) -> Result<Self, TlsError> {
        let alpn: Vec<Vec<u8>> = alpn.iter().map(|p| p.to_vec()).collect();
        let stamps = stamps(&files);
        let config = server_config(&files, &alpn)?;
        Ok(ServerTls {
            shared: Arc::new(Shared {
                files,
                alpn,
                config: RwLock::new(Arc::new(config)),
                loaded: RwLock::new(stamps),
            }),
        })
    }

    /// The files it reads.
    pub fn files(&self) -> &TlsFiles {
        &self.shared.files
    }

    /// True when mutual TLS is on (a client CA is configured).
    pub fn requires_client_certificates(&self) -> bool {
        self.shared.files.client_ca.is_some()
    }

    /// The configuration new connections get now.
    pub fn config(&self) -> Arc<ServerConfig> {
        match self.shared.config.read() {
            Ok(config) => Arc::clone(&config),
            Err(poisoned) => Arc::clone(&poisoned.into_inner()),
        }
    }

    /// Reads the files again and serves new connections with what they hold; open
    /// connections keep theirs. On error (a file half written, a key that does not match)
    /// the configuration in use stays.
    pub fn reload(&self) -> Result<(), TlsError> {
        let stamps = stamps(&self.shared.files);
        let config = server_config(&self.shared.files, &self.shared.alpn)?;
        if let Ok(mut current) = self.shared.config.write() {
            *current = Arc::new(config);
        }
        if let Ok(mut loaded) = self.shared.loaded.write() {
            *loaded = stamps;
        }
        tracing::info!(cert = %self.shared.files.cert.display(), "TLS certificate reloaded");
        Ok(())
    }

    /// Reloads when a file's modification time changed since the last load: true when it
    /// reloaded.
    pub fn reload_if_changed(&self) -> Result<bool, TlsError> {
        let now = stamps(&self.shared.files);
        let changed = self
            .shared
            .loaded
            .read()
            .map_or(true, |loaded| *loaded != now);
        if changed {
            self.reload()?;
        }
        Ok(changed)
    }

    /// Spawns a task that reloads when the files change (checked every `every`) and, on
    /// Unix, when the process receives `SIGHUP`. Failed reloads are logged and the
    /// configuration in use stays. The task ends when every clone of this `ServerTls` is
    /// dropped.
    pub fn watch(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let weak = Arc::downgrade(&self.shared);
        let every = every.max(Duration::from_millis(10));
        tokio::spawn(async move {
            #[cfg(unix)]
            let mut hangup =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup()).ok();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                #[cfg(unix)]
                let forced = {
                    let hup = async {
                        match hangup.as_mut() {
                            Some(signal) => signal.recv().await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        _ = tick.tick() => false,
                        _ = hup => true,
                    }
                };
                #[cfg(not(unix))]
                let forced = {
                    tick.tick().await;
                    false
                };
                let Some(shared) = weak.upgrade() else {
                    return;
                };
                let tls = ServerTls { shared };
                let outcome = if forced {
                    tls.reload().map(|()| true)
                } else {
                    tls.reload_if_changed()
                };
                if let Err(e) = outcome {
                    tracing::warn!(error = %e, "TLS reload failed: the previous certificate stays");
                }
            }
        })
    }

    /// Completes the server side of a handshake on `stream`, within `timeout`: the TLS
    /// stream and the client's verified certificate (with mutual TLS).
    pub async fn accept<S>(
        &self,
        stream: S,
        timeout: Duration,
    ) -> io::Result<(TlsStream<S>, Option<PeerCertificate>)>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    {
        let acceptor = TlsAcceptor::from(self.config());
        let tls = tokio::time::timeout(timeout, acceptor.accept(stream))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::TimedOut, "TLS handshake timed out"))??;
        let certificate = tls
            .get_ref()
            .1
            .peer_certificates()
            .and_then(|chain| chain.first())
            .map(|der| peer_certificate(der.as_ref()));
        Ok((tls, certificate))
    }
}

/// Runs the server side of `stream`'s handshake ([`ServerTls::accept`], within `timeout`) in a
/// task of its own and hands the TLS stream and the client's verified certificate to `then`;
/// a handshake that fails or runs late is logged (`peer` named) and the connection dropped.
/// The task ends with `then`, so that its future, sized for the handshake, is not kept while
/// the connection runs. The accept loops over TLS (this crate's, `rpcwire-http`'s) use it.
pub fn spawn_handshake<F>(
    tls: &ServerTls,
    stream: TcpStream,
    peer: Option<std::net::SocketAddr>,
    timeout: Duration,
    then: F,
) where
    F: FnOnce(TlsStream<TcpStream>, Option<PeerCertificate>) + Send + 'static,
{
    let tls = tls.clone();
    tokio::spawn(async move {
        match tls.accept(stream, timeout).await {
            Ok((stream, certificate)) => then(stream, certificate),
            Err(e) => tracing::debug!(?peer, error = %e, "TLS handshake failed"),
        }
    });
}

/// The subject and subject alternative names of a certificate (already verified by rustls);
/// a certificate that does not parse keeps its DER with an empty subject.
pub fn peer_certificate(der: &[u8]) -> PeerCertificate {
    use x509_parser::extensions::GeneralName;
    let mut subject = String::new();
    let mut sans = Vec::new();
    if let Ok((_, cert)) = x509_parser::parse_x509_certificate(der) {
        subject = cert.subject().to_string();
        if let Ok(Some(ext)) = cert.subject_alternative_name() {
            for name in &ext.value.general_names {
                match name {
                    GeneralName::DNSName(n) => sans.push((*n).to_owned()),
                    GeneralName::RFC822Name(n) => sans.push((*n).to_owned()),
                    GeneralName::URI(n) => sans.push((*n).to_owned()),
                    GeneralName::IPAddress(bytes) => {
                        let ip = match bytes.len() {
                            4 => <[u8; 4]>::try_from(*bytes)
                                .ok()
                                .map(|b| std::net::IpAddr::from(b).to_string()),
                            16 => <[u8; 16]>::try_from(*bytes)
                                .ok()
                                .map(|b| std::net::IpAddr::from(b).to_string()),
                            _ => None,
                        };
                        sans.extend(ip);
                    }
                    _ => {}
                }
            }
        }
    }
    PeerCertificate {
        subject,
        sans,
        der: der.to_vec(),
    }
}

/// A client configuration trusting the CA certificates in `ca` (PEM), optionally presenting
/// a client certificate (`cert`, `key`: PEM files) for mutual TLS.
pub fn client_config(
    ca: &Path,
    identity: Option<(&Path, &Path)>,
) -> Result<ClientConfig, TlsError> {
    let roots = roots_from_pem(ca)?;
    let builder = ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots);
    Ok(match identity {
        Some((cert, key)) => builder
            .with_client_auth_cert(certificates_from_pem(cert)?, private_key_from_pem(key)?)?,
        None => builder.with_no_client_auth(),
    })
}

/// Connects to `addr` over TLS, checking the server's certificate for `server_name`.
pub async fn connect(
    addr: SocketAddr,
    server_name: &str,
    config: Arc<ClientConfig>,
) -> io::Result<ClientTlsStream<TcpStream>> {
    let name = ServerName::try_from(server_name.to_owned())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    TlsConnector::from(config).connect(name, stream).await
}
