//! `https://` and `wss://` (feature `tls`): the clients against servers behind rustls on
//! loopback (`serve_connection`), with a certificate made for the test. HTTP/1.1 and HTTP/2
//! (chosen by ALPN), progress over event streams, a WebSocket upgraded on the POST endpoint,
//! and a certificate the client does not trust refused with the reason. (MCP over `https://`
//! is tested in `rpcwire-mcp`.)

#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_http::tls::{rustls, tls_with_roots};
use rpcwire_http::ws::{self, WsConfig, WsServer};
use rpcwire_http::{HttpClient, HttpServer, Protocol};
use rpcwire_tests::tls::{tls_server, Cert, Seen};
use rpcwire_tokio::{Builder, Context, Router, RpcError};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

/// Client settings that trust `cert` only.
fn trusting(cert: &Cert) -> Arc<rustls::ClientConfig> {
    Arc::new(tls_with_roots(cert.roots()).unwrap())
}

fn router() -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method_with_context("count", |cx: Context, (n,): (u64,)| async move {
            for i in 1..=n {
                cx.peer().notify("progress", json!({ "done": i })).await?;
            }
            Ok::<_, RpcError>(n)
        })
}

/// The JSON-RPC server behind TLS offering `alpn`, with WebSocket upgrades on its path.
async fn rpc_server(cert: &Cert, alpn: &[&[u8]]) -> (String, Seen<Protocol>) {
    let ws = WsServer::new(Builder::new().router(router()), WsConfig::default());
    let service = HttpServer::new(Builder::new().router(router()))
        .path("/rpc")
        .websocket(ws)
        .build();
    let (port, seen) = tls_server(
        cert.acceptor(alpn),
        Protocol::from_alpn,
        move |tls, protocol| {
            let service = service.clone();
            async move {
                let _ = rpcwire_http::serve_connection(tls, service, protocol).await;
            }
        },
    )
    .await;
    (format!("https://localhost:{port}/rpc"), seen)
}

#[tokio::test]
async fn calls_and_progress_over_https_on_http1_and_http2() {
    let cert = Cert::new();
    for (alpn, expected) in [
        (&[b"http/1.1".as_slice()][..], Protocol::Http1),
        (
            &[b"h2".as_slice(), b"http/1.1".as_slice()][..],
            Protocol::Http2,
        ),
    ] {
        let (url, seen) = rpc_server(&cert, alpn).await;
        let progress = Arc::new(Mutex::new(Vec::new()));
        let p = Arc::clone(&progress);
        let client = HttpClient::builder(&url)
            .tls_config(trusting(&cert))
            .on_notification(move |method, params| {
                p.lock()
                    .unwrap()
                    .push(format!("{method} {}", params.unwrap_or("")));
            })
            .build()
            .unwrap();
        let c = client.client();
        let diff: i64 = tokio::time::timeout(WAIT, c.call("subtract", [42, 23]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(diff, 19);
        let n: u64 = tokio::time::timeout(WAIT, c.call("count", [3]))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            *progress.lock().unwrap(),
            [1, 2, 3].map(|i| format!("progress {{\"done\":{i}}}")),
            "progress before the answer, over the event stream"
        );
        // Concurrent calls share the pooled connection(s).
        let all =
            futures_util::future::join_all((0..20).map(|i| c.call::<_, i64>("subtract", [i, 1])));
        for (i, r) in tokio::time::timeout(WAIT, all)
            .await
            .unwrap()
            .into_iter()
            .enumerate()
        {
            assert_eq!(r.unwrap(), i as i64 - 1);
        }
        let seen = seen.lock().unwrap().clone();
        assert!(!seen.is_empty(), "no TLS connection was made");
        assert!(
            seen.iter().all(|p| *p == expected),
            "ALPN {alpn:?}: connections spoke {seen:?}"
        );
        client.close().await;
    }
}

#[tokio::test]
async fn an_untrusted_certificate_is_refused_with_the_reason() {
    let cert = Cert::new();
    let (url, seen) = rpc_server(&cert, &[b"http/1.1"]).await;
    // The default settings trust Mozilla's roots, which did not sign the test's certificate.
    let client = HttpClient::new(&url).unwrap();
    let err = tokio::time::timeout(WAIT, client.client().call::<_, i64>("subtract", [1, 1]))
        .await
        .unwrap()
        .unwrap_err();
    let rpc = err.rpc().expect("an error response");
    assert_eq!(rpc.code, rpcwire_http::HTTP_ERROR_CODE);
    let data: Value = serde_json::to_value(&rpc.data).unwrap();
    let reason = data["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("invalid peer certificate") && reason.contains("UnknownIssuer"),
        "the reason names the certificate problem: {data}"
    );
    assert_eq!(data["status"], 0);
    eprintln!("refused as it should be: {reason}");
    assert!(seen.lock().unwrap().is_empty(), "no handshake completed");

    // Trusting another certificate is no better.
    let other = Cert::new();
    let client = HttpClient::builder(&url)
        .tls_config(trusting(&other))
        .build()
        .unwrap();
    let err = tokio::time::timeout(WAIT, client.client().call::<_, i64>("subtract", [1, 1]))
        .await
        .unwrap()
        .unwrap_err();
    assert_eq!(err.rpc().unwrap().code, rpcwire_http::HTTP_ERROR_CODE);
    assert!(seen.lock().unwrap().is_empty());
}

#[tokio::test]
async fn websocket_over_tls() {
    let cert = Cert::new();
    let (url, seen) = rpc_server(&cert, &[b"http/1.1"]).await;
    let wss = url.replace("https://", "wss://");
    let session = tokio::time::timeout(
        WAIT,
        ws::connect_with_tls(&wss, Builder::new(), &WsConfig::default(), trusting(&cert)),
    )
    .await
    .unwrap()
    .unwrap();
    let diff: i64 = tokio::time::timeout(WAIT, session.client().call("subtract", [42, 23]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(diff, 19);
    session.close().await.unwrap();
    assert_eq!(*seen.lock().unwrap(), [Protocol::Http1]);

    // The default roots do not trust the test's certificate.
    let connected = tokio::time::timeout(
        WAIT,
        ws::connect(&wss, Builder::new(), &WsConfig::default()),
    )
    .await
    .unwrap();
    let Err(refused) = connected else {
        panic!("an untrusted certificate is refused");
    };
    assert!(refused.to_string().contains("UnknownIssuer"), "{refused}");
    assert_eq!(
        seen.lock().unwrap().len(),
        1,
        "no second handshake completed"
    );
}

/// HTTP/1.1 over TLS runs as over TCP: pipelined POSTs answered in order, and a request the
/// fast path does not take (a chunked body) handing the connection, with what was already
/// read, to hyper, which answers it and the next one.
#[tokio::test]
async fn http1_over_tls_pipelines_and_hands_over_to_hyper() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let cert = Cert::new();
    let (url, seen) = rpc_server(&cert, &[b"http/1.1"]).await;
    let port: u16 = url
        .trim_start_matches("https://localhost:")
        .trim_end_matches("/rpc")
        .parse()
        .unwrap();
    let tcp = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let connector = tokio_rustls::TlsConnector::from(trusting(&cert));
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    let call = |id: u32| {
        format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{id}0,{id}],"id":{id}}}"#)
    };
    let head = "POST /rpc HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n";
    let plain = |id: u32| {
        format!(
            "{head}Content-Length: {}\r\n\r\n{}",
            call(id).len(),
            call(id)
        )
    };
    let chunked = |id: u32| {
        let body = call(id);
        format!(
            "{head}Transfer-Encoding: chunked\r\n\r\n{:x}\r\n{body}\r\n0\r\n\r\n",
            body.len()
        )
    };
    let requests = [plain(1), plain(2), chunked(3), plain(4)].concat();
    tls.write_all(requests.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let all_in = |text: &str| (1..=4).all(|id| text.contains(&format!(r#""id":{id}}}"#)));
    while !all_in(&String::from_utf8_lossy(&got)) {
        let n = tokio::time::timeout(WAIT, tls.read(&mut chunk))
            .await
            .expect("the answers in time")
            .unwrap();
        assert!(n > 0, "closed early: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8(got).unwrap();
    let at: Vec<usize> = (1..=4u32)
        .map(|id| {
            text.find(&format!(r#""result":{},"id":{id}}}"#, id * 9))
                .unwrap_or_else(|| panic!("answer {id} in {text}"))
        })
        .collect();
    assert!(at.windows(2).all(|w| w[0] < w[1]), "in order: {text}");
    assert_eq!(text.matches("HTTP/1.1 200 OK").count(), 4, "{text}");
    assert_eq!(*seen.lock().unwrap(), [Protocol::Http1]);
}
