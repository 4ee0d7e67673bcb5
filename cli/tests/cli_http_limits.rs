//! `rpcwire serve --http --signing-key FILE --rate-limit N`: an unsigned or replayed POST gets
//! 401, a signed one is answered; past N requests at once a caller gets 429 with
//! `Retry-After`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::net::SocketAddr;
use std::time::SystemTime;

use common::{bounded, serve};
use rpcwire_tests::pki::Scratch;
use rpcwire_tests::raw_http::{self, exchange};
use rpcwire_tokio::signing::RequestSigning;

const CALL: &str = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

fn post(headers: &[(String, String)]) -> String {
    raw_http::json_post("/rpc", headers, CALL)
}

async fn statuses(addr: SocketAddr, requests: &[String]) -> Vec<String> {
    exchange(addr, requests)
        .await
        .into_iter()
        .map(|(head, _)| head)
        .collect()
}

#[tokio::test]
async fn signed_requests_and_a_rate_limit() {
    bounded(async {
        let scratch = Scratch::new("cli-http-limits").unwrap();
        let key = scratch.write("key", "a shared secret\n").unwrap();
        let (_server, url) = serve(
            "--http",
            &["--signing-key", key.to_str().unwrap(), "--rate-limit", "3"],
        )
        .await;
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/rpc")
            .parse()
            .unwrap();
        let signing = RequestSigning::new(b"a shared secret".to_vec());
        let signed = signing.sign(CALL.as_bytes(), SystemTime::now(), "nonce-1");
        let fresh = |nonce| signing.sign(CALL.as_bytes(), SystemTime::now(), nonce);
        let heads = statuses(
            addr,
            &[
                post(&[]),
                post(&signed),
                post(&signed),
                post(&fresh("nonce-2")),
                post(&fresh("nonce-3")),
                post(&fresh("nonce-4")),
            ],
        )
        .await;
        assert!(
            heads[0].starts_with("http/1.1 401"),
            "unsigned: {}",
            heads[0]
        );
        assert!(heads[1].starts_with("http/1.1 200"), "signed: {}", heads[1]);
        assert!(
            heads[2].starts_with("http/1.1 401"),
            "replayed: {}",
            heads[2]
        );
        // Calls are counted by the dispatcher, once each: the refused requests above never
        // reached it, so the fourth call that did is past the burst of 3.
        assert!(heads[3].starts_with("http/1.1 200"), "{}", heads[3]);
        assert!(heads[4].starts_with("http/1.1 200"), "{}", heads[4]);
        assert!(heads[5].starts_with("http/1.1 429"), "{}", heads[5]);
        assert!(heads[5].contains("retry-after:"), "{}", heads[5]);
    })
    .await;
}
