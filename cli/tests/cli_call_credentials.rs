//! `rpcwire call` presents its credentials on every transport that takes them:
//! `--ws URL --bearer TOKEN` sends the token with the WebSocket upgrade, and
//! `--http https://... --cert FILE --key FILE` (and `--ws wss://...`) presents a client
//! certificate to a server that requires one (mutual TLS).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, rpcwire, serve, serve_ws};
use rpcwire_tests::pki::{LoopbackPki, Scratch, Usage};

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

#[tokio::test]
async fn call_over_websocket_with_a_bearer_token() {
    bounded(async {
        let scratch = Scratch::new("cli-call-ws-bearer").unwrap();
        let tokens = scratch
            .write(
                "tokens",
                "admin-token-1 @root admin\nuser-token-2 @bob user\n",
            )
            .unwrap();
        let policy = scratch.write("policy", "fail admin\n").unwrap();
        let (_server, url) =
            serve_ws(&["--tokens", path(&tokens), "--policy", path(&policy)]).await;

        // No token: the upgrade is refused (401), so the call never connects.
        let out = rpcwire(&["call", "--ws", &url, "subtract", "[42, 23]"]).await;
        assert_eq!(out.code, Some(3), "{out:?}");
        assert!(out.stderr.contains("401"), "{out:?}");
        // A wrong token: refused the same way.
        let out = rpcwire(&[
            "call", "--ws", &url, "--bearer", "nope", "subtract", "[42, 23]",
        ])
        .await;
        assert_eq!(out.code, Some(3), "{out:?}");
        // A valid token: answered, as that token's identity (its roles decide `fail`).
        let out = rpcwire(&[
            "call",
            "--ws",
            &url,
            "--bearer",
            "user-token-2",
            "subtract",
            "[42, 23]",
        ])
        .await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
        let out = rpcwire(&[
            "call",
            "--ws",
            &url,
            "--bearer",
            "user-token-2",
            "fail",
            "[]",
        ])
        .await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(out.stderr.contains("-32040"), "{out:?}");
        let out = rpcwire(&[
            "call",
            "--ws",
            &url,
            "--bearer",
            "admin-token-1",
            "fail",
            "[]",
        ])
        .await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(
            out.stderr.contains("-32000"),
            "admin may call fail: {out:?}"
        );
        // From a file, kept out of the process list.
        let token_file = scratch.write("token", "admin-token-1\n").unwrap();
        let from_file = format!("@{}", path(&token_file));
        let out = rpcwire(&[
            "call", "--ws", &url, "--bearer", &from_file, "subtract", "[1, 1]",
        ])
        .await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), "0\n"), "{out:?}");
    })
    .await;
}

#[tokio::test]
async fn call_over_https_and_wss_with_a_client_certificate() {
    bounded(async {
        let scratch = Scratch::new("cli-call-https-cert").unwrap();
        let LoopbackPki {
            ca,
            ca_file,
            cert,
            key,
        } = LoopbackPki::new(&scratch, "rpcwire CLI mutual TLS CA").unwrap();
        let (client_cert, client_key) = ca
            .issue_files(
                &scratch,
                "client",
                "client-1",
                &["client1.example"],
                Usage::Client,
            )
            .unwrap();
        let (_server, url) = serve(
            "--http",
            &[
                "--tls-cert",
                path(&cert),
                "--tls-key",
                path(&key),
                "--client-ca",
                path(&ca_file),
            ],
        )
        .await;
        assert!(url.starts_with("https://"), "{url}");
        let identity = ["--cert", path(&client_cert), "--key", path(&client_key)];

        // Without a client certificate the handshake is refused.
        let out = rpcwire(&[
            "call",
            "--http",
            &url,
            "--ca-cert",
            path(&ca_file),
            "--timeout",
            "5",
            "subtract",
            "[42, 23]",
        ])
        .await;
        assert_ne!(out.code, Some(0), "no client certificate: {out:?}");
        // With one: answered over HTTPS.
        let head = ["call", "--http", &url, "--ca-cert", path(&ca_file)];
        let out = rpcwire(&[&head[..], &identity[..], &["subtract", "[42, 23]"]].concat()).await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
        // And over WSS on the same port and path.
        let wss = url.replacen("https://", "wss://", 1);
        let head = ["call", "--ws", &wss, "--ca-cert", path(&ca_file)];
        let out = rpcwire(&[&head[..], &identity[..], &["subtract", "[5, 3]"]].concat()).await;
        assert_eq!((out.code, out.stdout.as_str()), (Some(0), "2\n"), "{out:?}");
        // A client certificate with a plain-text URL is a usage error, not silently unused.
        let plain = url.replacen("https://", "http://", 1);
        let head = ["call", "--http", &plain];
        let out = rpcwire(&[&head[..], &identity[..], &["subtract", "[1, 1]"]].concat()).await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("https://"), "{out:?}");
    })
    .await;
}
