//! `rpcwire serve --tcp ADDR --tls-cert --tls-key [--client-ca] [--policy]` and
//! `rpcwire call --tcp ADDR --tls --ca-cert [--cert --key]`: JSON-RPC over TLS between two
//! processes, with certificates made here; mutual TLS refuses a client without a certificate;
//! the policy file refuses a method to a caller without its role, with -32040.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, rpcwire, serve_tcp};
use rpcwire_tests::pki::{Ca, LoopbackPki, Scratch, Usage};

fn path(p: &std::path::Path) -> &str {
    p.to_str().unwrap()
}

/// `rpcwire call --tcp TARGET --tls --ca-cert CA ARGS...`.
async fn call_tls(target: &str, ca: &std::path::Path, args: &[&str]) -> common::Outcome {
    let head = ["call", "--tcp", target, "--tls", "--ca-cert", path(ca)];
    rpcwire(&[&head[..], args].concat()).await
}

#[tokio::test]
async fn tls_and_mutual_tls_and_a_policy_over_tcp() {
    bounded(async {
        let scratch = Scratch::new("cli-tcp-tls").unwrap();
        let LoopbackPki {
            ca,
            ca_file,
            cert,
            key,
        } = LoopbackPki::new(&scratch, "rpcwire CLI test CA").unwrap();
        let policy = scratch.write("policy", "fail admin\n").unwrap();

        // TLS only.
        let (_server, addr) =
            serve_tcp(&["--tls-cert", path(&cert), "--tls-key", path(&key)]).await;
        let target = format!("localhost:{}", addr.port());
        let out = call_tls(&target, &ca_file, &["subtract", "[42, 23]"]).await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
        // A client that does not trust the CA fails the handshake.
        let stranger = Ca::new("another CA").unwrap();
        let stranger_file = scratch.write("stranger.pem", &stranger.pem()).unwrap();
        let out = call_tls(&target, &stranger_file, &["subtract", "[1, 1]"]).await;
        assert_eq!(out.code, Some(3), "{out:?}");
        assert!(out.stderr.contains("UnknownIssuer"), "{out:?}");
        // Plain TCP to a TLS port gets nothing back: a connection failure or a timeout.
        let out = rpcwire(&[
            "call",
            "--tcp",
            &target,
            "--timeout",
            "2",
            "subtract",
            "[1, 1]",
        ])
        .await;
        assert_ne!(out.code, Some(0), "{out:?}");

        // Mutual TLS with a policy.
        let (_server, addr) = serve_tcp(&[
            "--tls-cert",
            path(&cert),
            "--tls-key",
            path(&key),
            "--client-ca",
            path(&ca_file),
            "--policy",
            path(&policy),
        ])
        .await;
        let target = format!("localhost:{}", addr.port());
        let out = call_tls(&target, &ca_file, &["--timeout", "5", "subtract", "[1, 1]"]).await;
        assert_ne!(out.code, Some(0), "no client certificate: {out:?}");
        let (client_cert, client_key) = ca
            .issue_files(
                &scratch,
                "client",
                "client-1",
                &["client1.example"],
                Usage::Client,
            )
            .unwrap();
        let with_cert = |method: &'static str, params: &'static str| {
            let (target, ca_file) = (target.clone(), ca_file.clone());
            let (client_cert, client_key) = (client_cert.clone(), client_key.clone());
            async move {
                let identity = ["--cert", path(&client_cert), "--key", path(&client_key)];
                call_tls(
                    &target,
                    &ca_file,
                    &[&identity[..], &[method, params]].concat(),
                )
                .await
            }
        };
        let out = with_cert("subtract", "[42, 23]").await;
        assert_eq!(
            (out.code, out.stdout.as_str()),
            (Some(0), "19\n"),
            "{out:?}"
        );
        // `fail` needs the role admin, which a certificate's subject does not hold.
        let out = with_cert("fail", "[]").await;
        assert_eq!(out.code, Some(1), "{out:?}");
        assert!(
            out.stderr.contains("-32040") && out.stderr.contains("Forbidden"),
            "{out:?}"
        );
    })
    .await;
}

#[tokio::test]
async fn bad_tls_files_and_policies_are_usage_errors() {
    bounded(async {
        let scratch = Scratch::new("cli-bad-tls").unwrap();
        let empty = scratch.write("empty.pem", "nothing here\n").unwrap();
        let out = rpcwire(&[
            "serve",
            "--tcp",
            "127.0.0.1:0",
            "--tls-cert",
            path(&empty),
            "--tls-key",
            path(&empty),
        ])
        .await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("holds no certificate"), "{out:?}");
        let policy = scratch.write("policy", "a x\na y\n").unwrap();
        let out = rpcwire(&["serve", "--tcp", "127.0.0.1:0", "--policy", path(&policy)]).await;
        assert_eq!(out.code, Some(2), "{out:?}");
        assert!(out.stderr.contains("policy line 2"), "{out:?}");
    })
    .await;
}
