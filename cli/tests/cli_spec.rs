//! Every example of the JSON-RPC 2.0 specification, sent as raw bytes to `rpcwire serve
//! --stdio` and `rpcwire serve --tcp`, gets exactly the specification's response.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::{bounded, content_length_bodies, normalize, serve_stdio, serve_tcp};
use rpcwire_demo::spec::{one_line, SPEC_EXAMPLES};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn line(text: &str) -> Vec<u8> {
    let mut l: Vec<u8> = one_line(text).collect();
    l.push(b'\n');
    l
}

fn content_length(text: &str) -> Vec<u8> {
    let mut f = format!("Content-Length: {}\r\n\r\n", text.len()).into_bytes();
    f.extend_from_slice(text.as_bytes());
    f
}

fn check(name: &str, expected: Option<&str>, got: &[u8]) {
    let got = String::from_utf8(got.to_vec()).unwrap();
    match expected {
        None => assert!(
            got.is_empty(),
            "{name}: expected no bytes at all, got {got:?}"
        ),
        Some(want) => {
            let lines: Vec<&str> = got.lines().collect();
            assert_eq!(lines.len(), 1, "{name}: expected one answer, got {got:?}");
            assert_eq!(normalize(lines[0]), normalize(want), "{name}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_examples_over_stdio_line_framing() {
    bounded(async {
        for ex in SPEC_EXAMPLES {
            let out = serve_stdio(&[], &line(ex.request)).await;
            check(ex.name, ex.response, &out);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_examples_over_stdio_content_length_framing() {
    bounded(async {
        for ex in SPEC_EXAMPLES {
            // Sent exactly as the specification prints them (multi-line texts included).
            let out = serve_stdio(
                &["--framing", "content-length"],
                &content_length(ex.request),
            )
            .await;
            let bodies = content_length_bodies(&out);
            match ex.response {
                None => assert!(
                    bodies.is_empty(),
                    "{}: expected nothing, got {bodies:?}",
                    ex.name
                ),
                Some(want) => {
                    assert_eq!(bodies.len(), 1, "{}: {bodies:?}", ex.name);
                    assert_eq!(normalize(&bodies[0]), normalize(want), "{}", ex.name);
                }
            }
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spec_examples_over_tcp() {
    bounded(async {
        let (_server, addr) = serve_tcp(&[]).await;
        for ex in SPEC_EXAMPLES {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(&line(ex.request)).await.unwrap();
            s.shutdown().await.unwrap(); // half-close: the answers still come back
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            check(ex.name, ex.response, &out);
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_spec_examples_in_one_stream() {
    bounded(async {
        let mut input = Vec::new();
        let mut want: Vec<serde_json::Value> = Vec::new();
        for ex in SPEC_EXAMPLES {
            input.extend(line(ex.request));
            if let Some(r) = ex.response {
                want.push(normalize(r));
            }
        }
        let out = serve_stdio(&[], &input).await;
        let mut got: Vec<serde_json::Value> = String::from_utf8(out)
            .unwrap()
            .lines()
            .map(normalize)
            .collect();
        // Answers may come in any order.
        got.sort_by_key(|v| v.to_string());
        want.sort_by_key(|v| v.to_string());
        assert_eq!(got, want);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn numbers_keep_their_kind_and_ids_come_back_unchanged() {
    bounded(async {
        let input = concat!(
            r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":0}"#, "\n",
            r#"{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":-7}"#, "\n",
            r#"{"jsonrpc":"2.0","method":"sum","params":[0.5,0.25],"id":9007199254740993}"#, "\n",
            r#"{"jsonrpc":"2.0","method":"subtract","params":{"minuend":1.5,"subtrahend":1},"id":"s"}"#, "\n",
            r#"{"jsonrpc":"2.0","method":"echo","params":[1.0,-0,1e2,12345678901234567890],"id":1.5}"#, "\n",
            r#"{"jsonrpc":"2.0","method":"get_data","id":null}"#, "\n",
        );
        let out = String::from_utf8(serve_stdio(&[], input.as_bytes()).await).unwrap();
        let mut lines: Vec<&str> = out.lines().collect();
        lines.sort_unstable();
        let mut want = vec![
            r#"{"jsonrpc":"2.0","result":19,"id":0}"#,
            r#"{"jsonrpc":"2.0","result":7,"id":-7}"#,
            r#"{"jsonrpc":"2.0","result":0.75,"id":9007199254740993}"#,
            r#"{"jsonrpc":"2.0","result":0.5,"id":"s"}"#,
            r#"{"jsonrpc":"2.0","result":[1.0,-0,1e2,12345678901234567890],"id":1.5}"#,
            r#"{"jsonrpc":"2.0","result":["hello",5],"id":null}"#,
        ];
        want.sort_unstable();
        assert_eq!(lines, want);
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_closing_still_answers_requests_in_flight() {
    bounded(async {
        let input = concat!(
            r#"{"jsonrpc":"2.0","method":"sleep","params":{"ms":300},"id":1}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"sleep","params":{"ms":100},"id":2}"#,
            "\n",
            // The last line lacks its newline.
            r#"{"jsonrpc":"2.0","method":"get_data","id":3}"#,
        );
        let out = String::from_utf8(serve_stdio(&[], input.as_bytes()).await).unwrap();
        let ids: Vec<i64> = out
            .lines()
            .map(|l| normalize(l)["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [3, 2, 1], "answered as they finish: {out}");
    })
    .await;
}
