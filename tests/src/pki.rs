//! Certificates made in a test: a CA that issues server and client certificates, written as
//! PEM files into a scratch folder removed when the test ends.
#![allow(clippy::missing_errors_doc)]

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, CertifiedIssuer, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair,
};

/// Any error of these helpers.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// A folder removed when dropped.
#[derive(Debug)]
pub struct Scratch(PathBuf);

impl Scratch {
    /// A new folder under the system's temporary folder, named after `name` and this process.
    pub fn new(name: &str) -> Result<Self, Error> {
        let dir = std::env::temp_dir().join(format!("rpcwire-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        &self.0
    }

    /// Writes `contents` to `name` in the folder, aside first and then renamed over the old
    /// file (as a deployment replaces a certificate): the path.
    pub fn write(&self, name: &str, contents: &str) -> Result<PathBuf, Error> {
        let path = self.0.join(name);
        let aside = self.0.join(format!("{name}.new"));
        std::fs::write(&aside, contents)?;
        std::fs::rename(&aside, &path)?;
        Ok(path)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A test certificate authority.
pub struct Ca {
    issuer: CertifiedIssuer<'static, KeyPair>,
}

impl std::fmt::Debug for Ca {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Ca")
    }
}

/// What a certificate is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Usage {
    /// A server's (extended key usage serverAuth).
    Server,
    /// A client's, for mutual TLS (clientAuth).
    Client,
}

impl Ca {
    /// A new CA whose certificate's common name is `name`.
    pub fn new(name: &str) -> Result<Self, Error> {
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate()?)?;
        Ok(Ca { issuer })
    }

    /// The CA's certificate (PEM).
    pub fn pem(&self) -> String {
        self.issuer.pem()
    }

    /// A certificate (PEM) and its private key (PEM, PKCS#8) for `common_name`, with the
    /// subject alternative names `sans` (DNS names or IP addresses).
    pub fn issue(
        &self,
        common_name: &str,
        sans: &[&str],
        usage: Usage,
    ) -> Result<(String, String), Error> {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())?;
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = vec![match usage {
            Usage::Server => ExtendedKeyUsagePurpose::ServerAuth,
            Usage::Client => ExtendedKeyUsagePurpose::ClientAuth,
        }];
        let key = KeyPair::generate()?;
        let cert = params.signed_by(&key, &self.issuer)?;
        Ok((cert.pem(), key.serialize_pem()))
    }

    /// Issues a certificate and writes it and its key into `scratch` as `<stem>.pem` and
    /// `<stem>.key`: their paths.
    pub fn issue_files(
        &self,
        scratch: &Scratch,
        stem: &str,
        common_name: &str,
        sans: &[&str],
        usage: Usage,
    ) -> Result<(PathBuf, PathBuf), Error> {
        let (cert, key) = self.issue(common_name, sans, usage)?;
        Ok((
            scratch.write(&format!("{stem}.pem"), &cert)?,
            scratch.write(&format!("{stem}.key"), &key)?,
        ))
    }
}

/// A test CA and a server certificate for the loopback names (`localhost`, `127.0.0.1`),
/// written into a scratch directory as `ca.pem`, `server.pem` and `server.key`: what a test of
/// a TLS server on loopback starts from.
#[derive(Debug)]
pub struct LoopbackPki {
    /// The CA (to issue client certificates from).
    pub ca: Ca,
    /// The CA's certificate file.
    pub ca_file: PathBuf,
    /// The server's certificate file.
    pub cert: PathBuf,
    /// The server's key file.
    pub key: PathBuf,
}

impl LoopbackPki {
    /// A CA named `ca_name` and its server certificate, in `scratch`.
    pub fn new(scratch: &Scratch, ca_name: &str) -> Result<Self, Error> {
        let ca = Ca::new(ca_name)?;
        let ca_file = scratch.write("ca.pem", &ca.pem())?;
        let (cert, key) = ca.issue_files(
            scratch,
            "server",
            "server",
            &["localhost", "127.0.0.1"],
            Usage::Server,
        )?;
        Ok(LoopbackPki {
            ca,
            ca_file,
            cert,
            key,
        })
    }
}
