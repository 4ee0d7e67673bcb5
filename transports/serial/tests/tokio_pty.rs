//! The `tokio` feature over a socat pseudo-terminal pair: bytes cross in both directions
//! between an async port and a blocking one. Skips (printing `SKIPPED:`) without socat,
//! unless CI=true.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers panic on failure

use rpcwire_tests::pty::socat_pair;
use std::io::{BufRead, BufReader, Write};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

#[tokio::test(flavor = "current_thread")]
async fn async_port_talks_to_a_blocking_port() {
    let Some(socat) = socat_pair() else { return };
    let mut async_port =
        rpcwire_serial::open_async(&socat.ends.0, 115_200).expect("open async end");
    let mut blocking = rpcwire_serial::open(&socat.ends.1, 115_200).expect("open blocking end");
    blocking.set_timeout(Duration::from_secs(5)).unwrap();

    AsyncWriteExt::write_all(
        &mut async_port,
        b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n",
    )
    .await
    .unwrap();
    AsyncWriteExt::flush(&mut async_port).await.unwrap();
    let mut line = String::new();
    BufReader::new(blocking.try_clone().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n");

    blocking
        .write_all(b"{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":1}\n")
        .unwrap();
    let mut reader = tokio::io::BufReader::new(async_port);
    let mut back = String::new();
    tokio::time::timeout(Duration::from_secs(5), reader.read_line(&mut back))
        .await
        .expect("answer in time")
        .unwrap();
    assert_eq!(back, "{\"jsonrpc\":\"2.0\",\"result\":1,\"id\":1}\n");
}
