//! `rpcwire call --http https://...` and `--ws wss://...`: the demo service behind rustls on
//! loopback with a self-signed certificate, trusted with `--ca-cert FILE`; without it, or with
//! a file that holds no certificate, the call fails with the reason.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use common::{bounded, rpcwire};
use rpcwire_cli::demo_router;
use rpcwire_http::tls::rustls;
use rpcwire_http::ws::{WsConfig, WsServer};
use rpcwire_http::{HttpServer, Protocol};
use rpcwire_tokio::Builder;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A file removed when the test ends.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &str) -> Self {
        let path = std::env::temp_dir().join(format!("rpcwire-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Serves the demo service (POST and WebSocket upgrades at `/rpc`) over TLS on a loopback
/// port with a new self-signed certificate for `localhost`: the port, and the certificate as
/// PEM.
async fn tls_demo() -> (u16, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let pem = made.cert.pem();
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(made.signing_key.serialize_der()));
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![CertificateDer::from(made.cert.der().to_vec())], key)
    .unwrap();
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let ws = WsServer::new(Builder::new().router(demo_router()), WsConfig::default());
    let service = HttpServer::new(Builder::new().router(demo_router()))
        .path("/rpc")
        .websocket(ws)
        .build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, service) = (acceptor.clone(), service.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let protocol = Protocol::from_alpn(tls.get_ref().1.alpn_protocol());
                let _ = rpcwire_http::serve_connection(tls, service, protocol).await;
            });
        }
    });
    (port, pem)
}

#[tokio::test]
async fn https_and_wss_calls_trust_the_given_certificate() {
    bounded(async {
        let (port, pem) = tls_demo().await;
        let ca = TempFile::new("ca.pem", &pem);
        let https = format!("https://localhost:{port}/rpc");
        let wss = format!("wss://localhost:{port}/rpc");

        for (flag, url) in [("--http", &https), ("--ws", &wss)] {
            let out = rpcwire(&[
                "call",
                flag,
                url,
                "--ca-cert",
                ca.path(),
                "subtract",
                "[42, 23]",
            ])
            .await;
            assert_eq!(
                (out.code, out.stdout.as_str()),
                (Some(0), "19\n"),
                "{out:?}"
            );
        }

        // Mozilla's roots, the default, did not sign it: a connection failure, with the reason.
        for transport in [["--http", https.as_str()], ["--ws", wss.as_str()]] {
            let args = [&["call"][..], &transport[..], &["subtract", "[1, 2]"][..]].concat();
            let out = rpcwire(&args).await;
            assert_eq!(out.code, Some(3), "{out:?}");
            assert!(out.stderr.contains("UnknownIssuer"), "{out:?}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_ca_cert_file_that_is_not_usable_is_refused() {
    bounded(async {
        let (port, _) = tls_demo().await;
        let https = format!("https://localhost:{port}/rpc");
        let empty = TempFile::new("empty.pem", "no certificate here\n");
        let out = rpcwire(&[
            "call",
            "--http",
            &https,
            "--ca-cert",
            empty.path(),
            "subtract",
            "[1, 2]",
        ])
        .await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("no PEM certificate"), "{out:?}");
        let out = rpcwire(&[
            "call",
            "--http",
            &https,
            "--ca-cert",
            "/nonexistent/ca.pem",
            "subtract",
            "[1, 2]",
        ])
        .await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(
            out.stderr.contains("cannot read /nonexistent/ca.pem"),
            "{out:?}"
        );
        // Only for URLs: a TCP call has no certificate to check.
        let out = rpcwire(&[
            "call",
            "--tcp",
            "127.0.0.1:1",
            "--ca-cert",
            empty.path(),
            "x",
        ])
        .await;
        assert_eq!(out.code, Some(2), "{out:?}");
    })
    .await;
}
