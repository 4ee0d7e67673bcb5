//! `rpcwire serve --http` and `rpcwire call --http`: every example of the JSON-RPC 2.0
//! specification POSTed as it is printed gets the specification's answer (notification-only
//! bodies: 202 and no body); calls print progress notifications on stderr as they arrive.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, normalize, rpcwire, serve_http};
use rpcwire_demo::spec::SPEC_EXAMPLES;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// One HTTP/1.1 exchange written by hand: (status, body).
async fn post(url: &str, content_type: &str, body: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (host, path) = rest.split_at(rest.find('/').unwrap());
    let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await.unwrap();
    stream.write_all(body.as_bytes()).await.unwrap();
    let mut all = Vec::new();
    stream.read_to_end(&mut all).await.unwrap();
    let text = String::from_utf8(all).unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status = head.split(' ').nth(1).unwrap().parse().unwrap();
    (status, body.to_owned())
}

#[tokio::test]
async fn every_spec_example_over_post() {
    bounded(async {
        let (_server, url) = serve_http(&[]).await;
        for example in SPEC_EXAMPLES {
            let (status, body) = post(&url, "application/json", example.request).await;
            match example.response {
                None => assert_eq!((status, body.as_str()), (202, ""), "{}", example.name),
                Some(expected) => {
                    assert_eq!(status, 200, "{}", example.name);
                    assert_eq!(normalize(&body), normalize(expected), "{}", example.name);
                }
            }
        }
        let (status, _) = post(&url, "text/plain", "{}").await;
        assert_eq!(status, 415);
    })
    .await;
}

#[tokio::test]
async fn call_prints_progress_then_the_result() {
    bounded(async {
        let (_server, url) = serve_http(&["--path", "/api"]).await;
        assert!(url.ends_with("/api"));
        let out = rpcwire(&["call", "--http", &url, "subtract", "[42, 23]"]).await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), "19\n"));
        let out = rpcwire(&["call", "--http", &url, "count", "[3]"]).await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), "3\n"), "{out:?}");
        let progress: Vec<&str> = out.stderr.lines().collect();
        assert_eq!(
            progress,
            [
                r#"progress {"done":1,"of":3}"#,
                r#"progress {"done":2,"of":3}"#,
                r#"progress {"done":3,"of":3}"#
            ]
        );
        let out = rpcwire(&["call", "--http", &url, "nope"]).await;
        assert_eq!(out.code, Some(1));
        assert!(out.stderr.contains("-32601"), "{out:?}");
        let out = rpcwire(&["call", "--http", &url, "--notify", "update", "[1]"]).await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""));
        // A wrong path: 404, a connection-level failure (exit 3).
        let wrong = url.replace("/api", "/rpc");
        let out = rpcwire(&["call", "--http", &wrong, "subtract", "[1, 2]"]).await;
        assert_eq!(out.code, Some(3), "{out:?}");
        assert!(out.stderr.contains("404"), "{out:?}");
    })
    .await;
}

#[tokio::test]
async fn a_notification_leaves_before_call_exits() {
    bounded(async {
        let (_server, url) = serve_http(&[]).await;
        // Listen on the GET stream, then publish with a notification from `call --notify`.
        let rest = url.strip_prefix("http://").unwrap();
        let (host, path) = rest.split_at(rest.find('/').unwrap());
        let mut stream = tokio::net::TcpStream::connect(host).await.unwrap();
        let head =
            format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n");
        stream.write_all(head.as_bytes()).await.unwrap();
        let mut seen = Vec::new();
        let mut buf = [0u8; 4096];
        while !String::from_utf8_lossy(&seen).contains("stream open") {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
        }
        let out = rpcwire(&["call", "--http", &url, "--notify", "publish", "[42]"]).await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), ""), "{out:?}");
        while !String::from_utf8_lossy(&seen).contains(r#""params":[42]"#) {
            let n = stream.read(&mut buf).await.unwrap();
            assert!(n > 0);
            seen.extend_from_slice(&buf[..n]);
        }
        assert!(String::from_utf8_lossy(&seen).contains(r#""method":"news""#));
    })
    .await;
}

#[tokio::test]
async fn websocket_on_the_same_port_and_path() {
    bounded(async {
        let (_server, url) = serve_http(&["--path", "/rpc"]).await;
        let ws_url = url.replacen("http://", "ws://", 1);
        let out = rpcwire(&["call", "--ws", &ws_url, "subtract", "[42, 23]"]).await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
        // POST still answers on the same path.
        let out = rpcwire(&["call", "--http", &url, "subtract", "[42, 23]"]).await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
    })
    .await;
}
