//! `rpcwire serve --http ADDR --tls-cert --tls-key --tokens FILE --policy FILE`: HTTPS with a
//! certificate made here, bearer tokens checked per request (401 with `WWW-Authenticate`
//! without one, 400 for a malformed header, no 101 for an unauthenticated WebSocket upgrade),
//! per-method roles (-32040 for a user token calling an admin method, member by member in a
//! batch), checked with curl and with `rpcwire call --bearer`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, rpcwire, serve};
use rpcwire_tests::pki::{LoopbackPki, Scratch};

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// curl's status line, headers and body for a POST of `body` with `extra` arguments.
async fn curl(url: &str, ca: &std::path::Path, extra: &[&str], body: &str) -> Option<String> {
    let out = tokio::process::Command::new("curl")
        .args(["-s", "-i", "--max-time", "10", "--cacert", path(ca)])
        .args([
            "-H",
            "content-type: application/json",
            "--data-binary",
            body,
        ])
        .args(extra)
        .arg(url)
        .output()
        .await
        .ok()?;
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[tokio::test]
async fn https_with_bearer_tokens_and_roles() {
    if std::process::Command::new("curl")
        .arg("--version")
        .output()
        .is_err()
    {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "curl is required under CI=true"
        );
        println!("SKIPPED: curl is not installed");
        return;
    }
    bounded(async {
        let scratch = Scratch::new("cli-http-auth").unwrap();
        let LoopbackPki {
            ca_file, cert, key, ..
        } = LoopbackPki::new(&scratch, "rpcwire HTTPS test CA").unwrap();
        let tokens = scratch
            .write("tokens", "admin-token-1 @root admin user\nuser-token-2 @bob user\n")
            .unwrap();
        let policy = scratch.write("policy", "fail admin\n* user\n").unwrap();
        let (_server, url) = serve(
            "--http",
            &[
                "--tls-cert", path(&cert), "--tls-key", path(&key),
                "--tokens", path(&tokens), "--policy", path(&policy),
            ],
        )
        .await;
        assert!(url.starts_with("https://127.0.0.1:"), "{url}");
        let url = url.replace("127.0.0.1", "localhost");
        let call = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

        // No token: 401 with the challenge; a malformed header: 400.
        let out = curl(&url, &ca_file, &[], call).await.unwrap();
        assert!(out.starts_with("HTTP/2 401") || out.starts_with("HTTP/1.1 401"), "{out}");
        assert!(out.to_ascii_lowercase().contains("www-authenticate: bearer"), "{out}");
        let out = curl(&url, &ca_file, &["-H", "authorization: Basic dTpw"], call).await.unwrap();
        assert!(out.contains(" 400"), "{out}");
        let long = format!("authorization: Bearer {}", "x".repeat(7000));
        let out = curl(&url, &ca_file, &["-H", &long], call).await.unwrap();
        assert!(out.contains(" 400"), "a token over 4 KiB is refused unread: {out}");
        let out = curl(&url, &ca_file, &["-H", "authorization: Bearer wrong"], call).await.unwrap();
        assert!(out.contains(" 401") && out.contains("invalid_token"), "{out}");

        // A valid token: answered; a user token calling an admin method: -32040, and in a
        // batch only that member.
        let bob = ["-H", "authorization: Bearer user-token-2"];
        let out = curl(&url, &ca_file, &bob, call).await.unwrap();
        assert!(out.contains(r#""result":19"#), "{out}");
        let batch = r#"[{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":1},{"jsonrpc":"2.0","method":"fail","id":2}]"#;
        let out = curl(&url, &ca_file, &bob, batch).await.unwrap();
        assert!(out.contains(r#""result":2"#) && out.contains("-32040"), "{out}");
        let root = ["-H", "authorization: Bearer admin-token-1"];
        let out = curl(&url, &ca_file, &root, r#"{"jsonrpc":"2.0","method":"fail","id":3}"#)
            .await
            .unwrap();
        assert!(out.contains("-32000"), "the admin reaches fail's own error: {out}");

        // A WebSocket upgrade without a token is refused before 101.
        let upgrade = tokio::process::Command::new("curl")
            .args(["-s", "-i", "--max-time", "5", "--http1.1", "--cacert", path(&ca_file)])
            .args(["-H", "connection: Upgrade", "-H", "upgrade: websocket"])
            .args(["-H", "sec-websocket-version: 13", "-H", "sec-websocket-key: dGhlIHNhbXBsZSBub25jZQ=="])
            .arg(&url)
            .output()
            .await
            .unwrap();
        let out = String::from_utf8_lossy(&upgrade.stdout);
        assert!(out.starts_with("HTTP/1.1 401"), "{out}");

        // `rpcwire call --bearer`, from the command line, a file and the environment.
        let token_file = scratch.write("bob.token", "user-token-2\n").unwrap();
        let from_file = format!("@{}", path(&token_file));
        for bearer in ["user-token-2", from_file.as_str(), "env:RPCWIRE_TEST_TOKEN"] {
            let out = tokio::process::Command::new(common::bin())
                .args(["call", "--http", &url, "--ca-cert", path(&ca_file), "--bearer", bearer])
                .args(["subtract", "[42, 23]"])
                .env("RPCWIRE_TEST_TOKEN", "user-token-2")
                .output()
                .await
                .unwrap();
            assert_eq!(String::from_utf8_lossy(&out.stdout), "19\n", "{bearer}: {out:?}");
            assert!(!String::from_utf8_lossy(&out.stderr).contains("user-token-2"));
        }
        let out = rpcwire(&["call", "--http", &url, "--ca-cert", path(&ca_file), "subtract", "[1, 1]"]).await;
        assert_eq!(out.code, Some(3), "no token: {out:?}");
        assert!(out.stderr.contains("401"), "{out:?}");
    })
    .await;
}
