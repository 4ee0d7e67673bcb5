//! Python's `httpx` and `websockets` (`.ci/install/oauth-interop.sh`) against
//! `rpcwire serve --http --tls-cert --tls-key --jwks`: HTTPS and WSS with a CA made here and
//! tokens from `oauth2-mock-server`. With the CA and a token they get answers; without a
//! token, 401 (no 101 for the upgrade); without the CA, the TLS handshake fails. (`curl` and
//! `rpcwire call` over HTTPS are `cli_http_auth.rs` and `cli_tls.rs`.)
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, serve};
use rpcwire_tests::oauth::{python, Issuer};
use rpcwire_tests::pki::{LoopbackPki, Scratch};

const AUDIENCE: &str = "https://rpc.test/rpc";

#[tokio::test(flavor = "multi_thread")]
async fn httpx_and_websockets_over_https_and_wss_with_jwts() {
    let Some(python) = python() else {
        rpcwire_tests::skip("the Python clients are not installed (.ci/install/oauth-interop.sh)");
        return;
    };
    let Some(mut issuer) = tokio::task::block_in_place(Issuer::start) else {
        return;
    };
    let token = tokio::task::block_in_place(|| {
        issuer.token(
            serde_json::json!({"sub": "py", "aud": AUDIENCE, "scope": "calc"}),
            600,
        )
    });
    bounded(async {
        let scratch = Scratch::new("cli-auth-python").unwrap();
        let LoopbackPki {
            ca_file, cert, key, ..
        } = LoopbackPki::new(&scratch, "rpcwire HTTPS test CA").unwrap();
        let policy = scratch.write("policy", "* calc\n").unwrap();
        let (_server, url) = serve(
            "--http",
            &[
                "--tls-cert",
                cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
                "--jwks",
                &issuer.jwks,
                "--issuer",
                &issuer.issuer,
                "--audience",
                AUDIENCE,
                "--policy",
                policy.to_str().unwrap(),
            ],
        )
        .await;
        assert!(url.starts_with("https://"), "{url}");
        let script = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/interop/python_tls_clients.py"
        );
        let out = tokio::process::Command::new(python)
            .args([script, &url, ca_file.to_str().unwrap(), &token])
            .output()
            .await
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && stdout.lines().any(|l| l == "python-tls: all checks passed"),
            "stdout:\n{stdout}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{stdout}");
    })
    .await;
}
