//! The driver reads into a buffer of its own and gives the core whole lines where they lie
//! (a line cut by the end of a read waits for the rest): however the bytes arrive, the
//! answers are those of the same bytes read at once.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use proptest::prelude::*;
use rpcwire_tokio::{Builder, Router, RpcError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn router() -> Router {
    Router::new()
        .sync_method("sub", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .sync_method("fail", |(): ()| {
            Err::<(), _>(RpcError::new(rpcwire_tokio::ErrorCode(-32000), "no"))
        })
}

/// The pieces a stream is made of: requests, notifications, batches, blank and CRLF lines,
/// lines that are not JSON or not whole, whitespace before a line.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0i64..1000, 0u32..10_000).prop_map(|(a, id)| format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[{a},1],\"id\":{id}}}\n"
        )),
        1 => (0u32..100).prop_map(|id| format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[5,2],\"id\":\"s{id}\"}}\r\n"
        )),
        1 => Just("{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[1,1]}\n".to_owned()),
        1 => Just("{\"jsonrpc\":\"2.0\",\"method\":\"fail\",\"id\":7}\n".to_owned()),
        1 => Just("{\"jsonrpc\":\"2.0\",\"method\":\"nope\",\"id\":8}\n".to_owned()),
        1 => Just(
            "[{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[3,1],\"id\":1},\
             {\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[9,1],\"id\":2}]\n"
                .to_owned()
        ),
        1 => Just("\n".to_owned()),
        1 => Just("   \r\n".to_owned()),
        1 => Just("@@ not json\n".to_owned()),
        1 => Just("{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[1,\n".to_owned()),
        1 => Just("  {\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[8,1],\"id\":3}\n".to_owned()),
        1 => Just("{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":1}\n".to_owned()),
    ]
}

/// Everything the server writes for `input`, written in pieces of `cuts` lengths (the rest
/// at once) into a pipe of `pipe` bytes, then closed.
fn answers(input: &[u8], cuts: &[usize], pipe: usize) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (ours, theirs) = tokio::io::duplex(pipe);
        let (reader, writer) = tokio::io::split(theirs);
        let (client, driver) = Builder::new().router(router()).run_inline(reader, writer);
        drop(client);
        let server = tokio::spawn(driver);
        let (mut r, mut w) = tokio::io::split(ours);
        let feed = async move {
            let mut rest = input;
            for &cut in cuts {
                let n = cut.min(rest.len());
                w.write_all(&rest[..n]).await.unwrap();
                w.flush().await.unwrap();
                tokio::task::yield_now().await;
                rest = &rest[n..];
            }
            w.write_all(rest).await.unwrap();
            w.shutdown().await.unwrap();
        };
        let mut out = Vec::new();
        let read = r.read_to_end(&mut out);
        let (_, read) = tokio::time::timeout(std::time::Duration::from_secs(20), async {
            tokio::join!(feed, read)
        })
        .await
        .expect("the server answers and closes in time");
        read.unwrap();
        let _ = server.await;
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn any_split_gives_the_answers_of_one_read(
        pieces in prop::collection::vec(piece(), 1..40),
        last in prop::option::of(Just("{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[2,1],\"id\":99}")),
        cuts in prop::collection::vec(1usize..90, 0..40),
        pipe in 1usize..300,
    ) {
        let mut input = pieces.concat().into_bytes();
        // A last line without its newline is still answered.
        if let Some(last) = last {
            input.extend_from_slice(last.as_bytes());
        }
        let whole = answers(&input, &[], 1 << 20);
        let split = answers(&input, &cuts, pipe);
        prop_assert_eq!(String::from_utf8_lossy(&split), String::from_utf8_lossy(&whole));
    }
}

/// A line longer than the longest read (32 KiB) comes in many reads and goes through the
/// core's receive buffer; the lines after it are read where they lie again.
#[test]
fn a_line_longer_than_a_read_is_answered_and_so_are_the_next() {
    let mut input = b"{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[".to_vec();
    input.extend(std::iter::repeat_n(b' ', 100 << 10));
    input.extend_from_slice(b"10,4],\"id\":1}\n");
    for id in 2..50 {
        input.extend_from_slice(
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[{id},1],\"id\":{id}}}\n")
                .as_bytes(),
        );
    }
    let out = answers(&input, &[4096; 40], 8192);
    let text = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 49, "{text}");
    assert_eq!(lines[0], r#"{"jsonrpc":"2.0","result":6,"id":1}"#);
    assert_eq!(lines[48], r#"{"jsonrpc":"2.0","result":48,"id":49}"#);
}

/// A line-framed server reads `Content-Length` blocks too, and a block's body need not end
/// with a line end: it is answered as soon as it is whole, with no more input (the read
/// buffer's cut at the last line end must not hold it back), with or without line ends
/// inside the body.
#[test]
fn a_header_block_whose_body_ends_without_a_line_end_is_answered_at_once() {
    let bodies = [
        "{\"jsonrpc\":\"2.0\",\"method\":\"sub\",\"params\":[7,2],\"id\":1}",
        "{\"jsonrpc\":\"2.0\",\n\"method\":\"sub\",\n\"params\":[7,2],\"id\":1}",
    ];
    for body in bodies {
        for cut in [0, 5, 20] {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let (ours, theirs) = tokio::io::duplex(1 << 16);
                let (reader, writer) = tokio::io::split(theirs);
                let (_client, driver) = Builder::new().router(router()).run_inline(reader, writer);
                let server = tokio::spawn(driver);
                let (mut r, mut w) = tokio::io::split(ours);
                let message = format!("Content-Length: {}\r\n\r\n{body}", body.len());
                let (first, rest) = message.as_bytes().split_at(message.len() - cut);
                w.write_all(first).await.unwrap();
                w.flush().await.unwrap();
                tokio::task::yield_now().await;
                w.write_all(rest).await.unwrap();
                w.flush().await.unwrap();
                // The write side stays open: the answer comes from the block alone.
                let mut answer = Vec::new();
                let mut byte = [0u8; 1];
                tokio::time::timeout(std::time::Duration::from_secs(10), async {
                    while !answer.ends_with(b"\n") {
                        r.read_exact(&mut byte).await.unwrap();
                        answer.push(byte[0]);
                    }
                })
                .await
                .expect("answered without more input");
                assert_eq!(answer, b"{\"jsonrpc\":\"2.0\",\"result\":5,\"id\":1}\n");
                drop(w);
                server.abort();
            });
        }
    }
}
