//! rpcwire composed with tower: an axum app with the JSON-RPC server mounted at `/rpc` beside
//! a health route, under tower-http's `CorsLayer`, served by rpcwire's own accept loop and
//! TLS handshake (`rpcwire_tokio::accept_loop`, `tls::spawn_handshake`: the connection limit,
//! the drain, certificate reload, mutual TLS) through hyper-util's HTTP/1.1 + HTTP/2 server.
//!
//! - Mutual TLS, from a Rust client: without a client certificate the handshake fails; with
//!   one, a CORS preflight gets its `Access-Control-*` answer, a cross-origin call is answered
//!   (with `Access-Control-Allow-Origin`), and `/healthz` is the app's.
//! - Headless Chromium (the Selenium setup of `.ci/install/ws-interop.sh`), against the same app
//!   with mutual TLS: a page on another origin calls `subtract` with `fetch` and a JSON body,
//!   so the browser sends its own preflight first; with a client certificate in its NSS
//!   database (and the install script's policy that selects it without a dialog) the
//!   preflight and the call are answered, the answer shows up on the page, and the server saw
//!   the browser's certificate on every connection; without one the handshake is refused and
//!   the page's `fetch` fails before anything reaches the app.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::routing::get;
use http::header::{ACCESS_CONTROL_ALLOW_ORIGIN, CONTENT_TYPE};
use http::{HeaderValue, Method};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rpcwire_http::{HostPolicy, HttpServer};
use rpcwire_tests::pki::{LoopbackPki, Scratch, Usage};
use rpcwire_tokio::tls::{ServerTls, TlsFiles};
use rpcwire_tokio::{Builder, Router, RpcError, Shutdown};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio_rustls::rustls;
use tower_http::cors::CorsLayer;

/// The app: rpcwire at `/rpc`, a health route, CORS for `origin`; OPTIONS requests counted.
fn app(origin: &str, preflights: Arc<AtomicUsize>) -> axum::Router {
    let router =
        Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
    // rpcwire's own `Origin` check (DNS-rebinding protection) is told of the page's origin.
    let hosts = HostPolicy::loopback().with(origin);
    let rpc = HttpServer::new(Builder::new().router(router))
        .hosts(hosts)
        .build();
    let cors = CorsLayer::new()
        .allow_origin(HeaderValue::from_str(origin).unwrap())
        .allow_methods([Method::POST])
        .allow_headers([CONTENT_TYPE]);
    axum::Router::new()
        .route_service("/rpc", rpc)
        .route("/healthz", get(|| async { "ok" }))
        .layer(cors)
        .layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                if req.method() == Method::OPTIONS {
                    preflights.fetch_add(1, Ordering::SeqCst);
                }
                next.run(req)
            },
        ))
}

/// The subjects of the client certificates of the connections accepted (one entry a
/// connection: `None` without a certificate).
type Subjects = Arc<Mutex<Vec<Option<String>>>>;

/// Serves `app` on 127.0.0.1 with rpcwire's accept loop and TLS handshake: the README's
/// recipe. Returns the address and the client certificates seen.
async fn serve_tls(app: axum::Router, tls: ServerTls) -> (std::net::SocketAddr, Subjects) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let shutdown = Shutdown::default();
    let subjects = Subjects::default();
    let seen = Arc::clone(&subjects);
    tokio::spawn(async move {
        rpcwire_tokio::accept_loop(listener, 1024, &shutdown, move |tcp, peer, slot| {
            let app = app.clone();
            let handshake = Duration::from_secs(10);
            let seen = Arc::clone(&seen);
            rpcwire_tokio::tls::spawn_handshake(&tls, tcp, peer, handshake, move |stream, cert| {
                seen.lock().unwrap().push(cert.map(|c| c.subject));
                tokio::spawn(async move {
                    let _slot = slot; // held while the connection lives
                    let service = hyper_util::service::TowerToHyperService::new(app);
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection_with_upgrades(TokioIo::new(stream), service)
                        .await;
                });
            });
        })
        .await;
    });
    (addr, subjects)
}

/// A TLS client trusting `ca`, with a client certificate when given.
fn client(ca: &PathBuf, identity: Option<(String, String)>) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).unwrap() {
        roots.add(cert.unwrap()).unwrap();
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = match identity {
        Some((cert, key)) => {
            let chain = CertificateDer::pem_slice_iter(cert.as_bytes())
                .map(Result::unwrap)
                .collect();
            let key = PrivateKeyDer::from_pem_slice(key.as_bytes()).unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// One HTTP/1.1 request over a new TLS connection: the answer's head and body.
async fn request(
    connector: &tokio_rustls::TlsConnector,
    addr: std::net::SocketAddr,
    head: &str,
    body: &str,
) -> std::io::Result<String> {
    let tcp = tokio::net::TcpStream::connect(addr).await?;
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await?;
    let request = format!(
        "{head}\r\nHost: localhost\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    tls.write_all(request.as_bytes()).await?;
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut answer)).await??;
    Ok(String::from_utf8_lossy(&answer).into_owned())
}

const ORIGIN: &str = "https://app.example";
const CALL: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

#[tokio::test]
async fn axum_with_cors_on_rpcwires_mutual_tls_accept_loop() {
    let scratch = Scratch::new("axum-mtls").unwrap();
    let pki = LoopbackPki::new(&scratch, "axum test CA").unwrap();
    let files = TlsFiles {
        cert: pki.cert.clone(),
        key: pki.key.clone(),
        client_ca: Some(pki.ca_file.clone()),
    };
    let tls = ServerTls::with_alpn(files, &[b"http/1.1"]).unwrap();
    let preflights = Arc::new(AtomicUsize::new(0));
    let (addr, _) = serve_tls(app(ORIGIN, Arc::clone(&preflights)), tls).await;

    // No client certificate: no connection.
    let anonymous = client(&pki.ca_file, None);
    let refused = request(&anonymous, addr, "GET /healthz HTTP/1.1", "").await;
    assert!(
        refused.is_err(),
        "served without a client certificate: {refused:?}"
    );

    let identity = pki.ca.issue("client-7", &[], Usage::Client).unwrap();
    let connector = client(&pki.ca_file, Some(identity));
    let preflight = request(
        &connector,
        addr,
        &format!(
            "OPTIONS /rpc HTTP/1.1\r\nOrigin: {ORIGIN}\r\nAccess-Control-Request-Method: POST\r\n\
             Access-Control-Request-Headers: content-type"
        ),
        "",
    )
    .await
    .unwrap()
    .to_ascii_lowercase();
    assert!(preflight.starts_with("http/1.1 200"), "{preflight}");
    assert!(
        preflight.contains(&format!("{}: {ORIGIN}", ACCESS_CONTROL_ALLOW_ORIGIN)),
        "{preflight}"
    );
    assert!(
        preflight.contains("access-control-allow-methods: post"),
        "{preflight}"
    );
    assert_eq!(preflights.load(Ordering::SeqCst), 1);

    // The cross-origin call, answered with the CORS header.
    let call = request(
        &connector,
        addr,
        &format!("POST /rpc HTTP/1.1\r\nOrigin: {ORIGIN}\r\nContent-Type: application/json"),
        CALL,
    )
    .await
    .unwrap();
    assert!(call.starts_with("HTTP/1.1 200"), "{call}");
    assert!(
        call.to_ascii_lowercase()
            .contains(&format!("{}: {ORIGIN}", ACCESS_CONTROL_ALLOW_ORIGIN)),
        "{call}"
    );
    assert!(
        call.ends_with(r#"{"jsonrpc":"2.0","result":19,"id":1}"#),
        "{call}"
    );

    let health = request(&connector, addr, "GET /healthz HTTP/1.1", "")
        .await
        .unwrap();
    assert!(
        health.starts_with("HTTP/1.1 200") && health.ends_with("ok"),
        "{health}"
    );
}

/// The page a browser loads from another origin: it calls `subtract` on `rpc` with a JSON body
/// (not a "simple" request: the browser sends a preflight first) and shows the result in its
/// title.
fn page(rpc: &str) -> String {
    format!(
        r#"<!doctype html><title>calling</title><script>
fetch("{rpc}", {{method: "POST", headers: {{"content-type": "application/json"}}, body: '{CALL}'}})
  .then(r => r.json()).then(j => document.title = "result:" + j.result)
  .catch(e => document.title = "error:" + e);
</script>"#
    )
}

/// The Chromium policy `.ci/install/ws-interop.sh` installs: Chromium selects, without asking,
/// a client certificate issued by [`BROWSER_CA`] for `https://127.0.0.1` pages.
const CLIENT_CERT_POLICY: &str =
    "/etc/chromium/policies/managed/rpcwire-loopback-client-certificate.json";
/// The common name of the CA that issues the browser's client certificate (the policy's
/// filter names it).
const BROWSER_CA: &str = "rpcwire browser test CA";

/// A HOME for Chromium whose NSS database (`.pki/nssdb`, where Chromium on Linux looks for
/// client certificates) holds `identity` (certificate and key, PEM) when given, or nothing.
/// `None` (after a skip) when NSS's tools or openssl are missing.
fn browser_home(
    scratch: &Scratch,
    name: &str,
    identity: Option<&(String, String)>,
) -> Option<PathBuf> {
    let run = |program: &str, args: &[&str]| -> Option<()> {
        match std::process::Command::new(program).args(args).output() {
            Ok(out) if out.status.success() => Some(()),
            Ok(out) => panic!(
                "{program} {args:?}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
            Err(_) => {
                rpcwire_tests::skip(&format!("no {program} (run .ci/install/ws-interop.sh)"));
                None
            }
        }
    };
    let home = scratch.path().join(name);
    let db = home.join(".pki/nssdb");
    std::fs::create_dir_all(&db).unwrap();
    let db = format!("sql:{}", db.display());
    run("certutil", &["-N", "-d", &db, "--empty-password"])?;
    if let Some((cert, key)) = identity {
        let cert = scratch.write(&format!("{name}.pem"), cert).unwrap();
        let key = scratch.write(&format!("{name}.key"), key).unwrap();
        let p12 = scratch.path().join(format!("{name}.p12"));
        let (cert, key, p12) = (
            cert.to_str().unwrap(),
            key.to_str().unwrap(),
            p12.to_str().unwrap(),
        );
        run(
            "openssl",
            &[
                "pkcs12", "-export", "-in", cert, "-inkey", key, "-out", p12, "-passout", "pass:",
            ],
        )?;
        run("pk12util", &["-i", p12, "-d", &db, "-W", ""])?;
    }
    Some(home)
}

/// Opens `url` in headless Chromium (`tests/browser/cors.py`) with `home` as its HOME: the
/// page's title once its script has set it.
async fn chromium(python: &PathBuf, home: &PathBuf, url: &str) -> String {
    let out = tokio::time::timeout(
        Duration::from_secs(60),
        tokio::process::Command::new(python)
            .arg(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/tests/browser/cors.py"
            ))
            .arg(url)
            .env("HOME", home)
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("Chromium ends within a minute")
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout.trim().to_owned()
}

#[tokio::test]
async fn chromium_preflight_and_cross_origin_call_over_mutual_tls() {
    let python = PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
        .join(".cache/rpcwire-interop/ws/venv/bin/python");
    let tools = [
        python.clone(),
        "/usr/bin/chromium".into(),
        "/usr/bin/chromedriver".into(),
        CLIENT_CERT_POLICY.into(),
    ];
    if let Some(missing) = tools.iter().find(|p| !p.exists()) {
        rpcwire_tests::skip(&format!(
            "{} not installed (run .ci/install/ws-interop.sh)",
            missing.display()
        ));
        return;
    }
    let scratch = Scratch::new("axum-chromium").unwrap();
    let pki = LoopbackPki::new(&scratch, BROWSER_CA).unwrap();
    let identity = pki.ca.issue("browser-7", &[], Usage::Client).unwrap();
    let Some(with_cert) = browser_home(&scratch, "with-cert", Some(&identity)) else {
        return;
    };
    let Some(without_cert) = browser_home(&scratch, "without-cert", None) else {
        return;
    };

    // The page's own server, plain HTTP on another port: another origin.
    let pages = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let origin = format!("http://{}", pages.local_addr().unwrap());
    let files = TlsFiles {
        cert: pki.cert.clone(),
        key: pki.key.clone(),
        client_ca: Some(pki.ca_file.clone()),
    };
    let tls = ServerTls::with_alpn(files, &[b"h2", b"http/1.1"]).unwrap();
    let preflights = Arc::new(AtomicUsize::new(0));
    let (addr, subjects) = serve_tls(app(&origin, Arc::clone(&preflights)), tls).await;

    let html = page(&format!("https://127.0.0.1:{}/rpc", addr.port()));
    let site =
        axum::Router::new().route("/", get(move || async move { axum::response::Html(html) }));
    tokio::spawn(async move { axum::serve(pages, site).await });

    // Without a client certificate: refused in the handshake, nothing reaches the app.
    let title = chromium(&python, &without_cert, &format!("{origin}/")).await;
    assert!(title.starts_with("error:"), "{title}");
    assert_eq!(
        preflights.load(Ordering::SeqCst),
        0,
        "a preflight got through"
    );
    assert!(
        subjects.lock().unwrap().is_empty(),
        "a connection was accepted: {subjects:?}"
    );

    // With one: the browser's preflight, then its call, both over mutual TLS.
    let title = chromium(&python, &with_cert, &format!("{origin}/")).await;
    assert_eq!(title, "result:19");
    assert!(
        preflights.load(Ordering::SeqCst) >= 1,
        "the browser sent its preflight"
    );
    let subjects = subjects.lock().unwrap().clone();
    assert!(!subjects.is_empty());
    assert!(
        subjects
            .iter()
            .all(|s| s.as_deref().is_some_and(|s| s.contains("CN=browser-7"))),
        "every connection presented the browser's certificate: {subjects:?}"
    );
}
