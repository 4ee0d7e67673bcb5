//! JSON-RPC over TLS on a TCP listener: certificates made here (a CA, a server certificate
//! for `localhost` and 127.0.0.1, client certificates), a client that trusts the CA is
//! answered and one that does not fails the handshake; with mutual TLS a client without a
//! certificate is refused and one with a certificate reaches a handler that sees its subject;
//! a certificate replaced on disk is served to new connections while an open one goes on.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use common::bounded;
use rpcwire_tests::pki::{Ca, Scratch, Usage};
use rpcwire_tokio::tls::{client_config, ServerTls, TlsFiles};
use rpcwire_tokio::{Builder, Router, RpcError};

type Result<T = ()> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn whoami_router() -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method_with_context("whoami", |ctx, _: ()| async move {
            let cert = ctx
                .caller()
                .certificate()
                .map(|c| (c.subject.clone(), c.sans.clone()));
            Ok::<_, RpcError>((ctx.identity().subject().to_owned(), cert))
        })
}

async fn start(tls: ServerTls) -> Result<(std::net::SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = Builder::new()
        .router(whoami_router())
        .map_service(|s| s.handshake_timeout(Duration::from_secs(5)))
        .serve_tls(listener, tls);
    Ok((addr, tokio::spawn(server)))
}

fn files(scratch: &Scratch, ca: &Ca, mutual: bool) -> Result<TlsFiles> {
    let (cert, key) = ca.issue_files(
        scratch,
        "server",
        "rpcwire test server",
        &["localhost", "127.0.0.1"],
        Usage::Server,
    )?;
    Ok(TlsFiles {
        cert,
        key,
        client_ca: if mutual {
            Some(scratch.write("clients.pem", &ca.pem())?)
        } else {
            None
        },
    })
}

#[tokio::test]
async fn a_client_that_trusts_the_ca_is_answered_and_one_that_does_not_fails() -> Result {
    let scratch = Scratch::new("tls-trust")?;
    let ca = Ca::new("rpcwire test CA")?;
    let (addr, server) = start(ServerTls::from_files(files(&scratch, &ca, false)?)?).await?;

    let trusting = Arc::new(client_config(&scratch.write("ca.pem", &ca.pem())?, None)?);
    for name in ["localhost", "127.0.0.1"] {
        let session =
            bounded(Builder::new().connect_tls(addr, name, Arc::clone(&trusting))).await?;
        let diff: i64 = bounded(session.client().call("subtract", [42, 23])).await?;
        assert_eq!(diff, 19);
        let (subject, cert): (String, Option<(String, Vec<String>)>) =
            bounded(session.client().call("whoami", ())).await?;
        assert_eq!(
            subject, "anonymous",
            "no client certificate, no authenticator"
        );
        assert!(cert.is_none());
        session.join().await?;
    }

    let other_ca = Ca::new("another CA")?;
    let stranger = Arc::new(client_config(
        &scratch.write("other.pem", &other_ca.pem())?,
        None,
    )?);
    let refused = bounded(Builder::new().connect_tls(addr, "localhost", stranger)).await;
    let reason = refused.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        reason.contains("certificate"),
        "handshake must fail: {reason}"
    );
    server.abort();
    Ok(())
}

#[tokio::test]
async fn mutual_tls_refuses_a_client_without_a_certificate_and_names_one_with() -> Result {
    let scratch = Scratch::new("tls-mutual")?;
    let ca = Ca::new("rpcwire test CA")?;
    let tls = ServerTls::from_files(files(&scratch, &ca, true)?)?;
    assert!(tls.requires_client_certificates());
    let (addr, server) = start(tls).await?;
    let ca_file = scratch.write("ca.pem", &ca.pem())?;

    // No certificate: the server refuses in the handshake; TLS 1.3 may report it only at
    // the first read, so the call fails either way.
    let bare = Arc::new(client_config(&ca_file, None)?);
    match bounded(Builder::new().connect_tls(addr, "localhost", bare)).await {
        Err(_) => {}
        Ok(session) => {
            let call = bounded(session.client().call::<_, i64>("subtract", [1, 1])).await;
            assert!(call.is_err(), "a client without a certificate got {call:?}");
        }
    }

    let (cert_file, key_file) = ca.issue_files(
        &scratch,
        "client",
        "client-7",
        &["client7.example", "10.0.0.7"],
        Usage::Client,
    )?;
    let with_cert = Arc::new(client_config(
        &ca_file,
        Some((cert_file.as_path(), key_file.as_path())),
    )?);
    let session = bounded(Builder::new().connect_tls(addr, "localhost", with_cert)).await?;
    let (subject, cert): (String, Option<(String, Vec<String>)>) =
        bounded(session.client().call("whoami", ())).await?;
    assert_eq!(subject, "CN=client-7");
    assert_eq!(
        cert,
        Some((
            "CN=client-7".to_owned(),
            vec!["client7.example".to_owned(), "10.0.0.7".to_owned()]
        ))
    );
    session.join().await?;
    server.abort();
    Ok(())
}

/// The server certificate's DER, as a client sees it.
async fn served_certificate(addr: std::net::SocketAddr, ca: &Path) -> Result<Vec<u8>> {
    let config = Arc::new(client_config(ca, None)?);
    let stream = rpcwire_tokio::tls::connect(addr, "localhost", config).await?;
    let der = stream
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .map(|c| c.to_vec())
        .ok_or("no certificate")?;
    Ok(der)
}

#[tokio::test]
async fn a_certificate_replaced_on_disk_is_served_to_new_connections_only() -> Result {
    let scratch = Scratch::new("tls-reload")?;
    let ca = Ca::new("rpcwire test CA")?;
    let tls = ServerTls::from_files(files(&scratch, &ca, false)?)?;
    let watcher = tls.watch(Duration::from_millis(50));
    let (addr, server) = start(tls.clone()).await?;
    let ca_file = scratch.write("ca.pem", &ca.pem())?;

    let before = bounded(served_certificate(addr, &ca_file)).await?;
    let open = bounded(Builder::new().connect_tls(
        addr,
        "localhost",
        Arc::new(client_config(&ca_file, None)?),
    ))
    .await?;
    let diff: i64 = bounded(open.client().call("subtract", [5, 2])).await?;
    assert_eq!(diff, 3);

    // A new certificate and key, written as a deployment does; modification times may be
    // coarse, so wait until the watcher has seen it.
    tokio::time::sleep(Duration::from_millis(20)).await;
    files(&scratch, &ca, false)?;
    let after = bounded(async {
        loop {
            let now = served_certificate(addr, &ca_file).await?;
            if now != before {
                return Ok::<_, Box<dyn std::error::Error + Send + Sync>>(now);
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await?;
    assert_ne!(after, before);

    // The connection opened before the reload goes on.
    let diff: i64 = bounded(open.client().call("subtract", [9, 2])).await?;
    assert_eq!(diff, 7);
    open.join().await?;

    // A broken file keeps the certificate in use.
    scratch.write("server.key", "not a key")?;
    assert!(tls.reload().is_err());
    let still = bounded(served_certificate(addr, &ca_file)).await?;
    assert_eq!(still, after);
    watcher.abort();
    server.abort();
    Ok(())
}

#[tokio::test]
async fn a_silent_client_is_dropped_at_the_handshake_timeout() -> Result {
    let scratch = Scratch::new("tls-silent")?;
    let ca = Ca::new("rpcwire test CA")?;
    let tls = ServerTls::from_files(files(&scratch, &ca, false)?)?;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let server = tokio::spawn(
        Builder::new()
            .router(whoami_router())
            .map_service(|s| s.handshake_timeout(Duration::from_millis(200)))
            .serve_tls(listener, tls),
    );
    let mut silent = tokio::net::TcpStream::connect(addr).await?;
    let mut buf = [0u8; 16];
    // The server closes the connection: the read ends (0 bytes or a reset), never hangs.
    let read = bounded(tokio::io::AsyncReadExt::read(&mut silent, &mut buf)).await;
    assert!(matches!(read, Ok(0) | Err(_)), "{read:?}");
    server.abort();
    Ok(())
}
