//! What the driver says in its log when a peer gets something wrong: a notification whose
//! params do not decode is logged at warn level with the method and the decoder's message
//! (it used to be skipped at debug level, unseen).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::bounded;
use rpcwire_tokio::{Builder, Router};

/// Everything logged, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_whose_params_do_not_decode_is_logged_at_warn_level() {
    let captured = Captured::default();
    let writer = captured.clone();
    // This test binary has only this test: the global subscriber is its own.
    tracing_subscriber::fmt()
        .with_max_level(tracing::Level::WARN)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();
    bounded(async {
        let router = Router::new().notification("log", |line: String| async move {
            panic!("params that do not decode reached the handler: {line}");
        });
        let (server, client) = Builder::new().router(router).duplex(Builder::new(), 4096);
        client.client().notify("log", [1, 2]).await.unwrap();
        let text = loop {
            let text = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
            if text.contains("do not decode") {
                break text;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        };
        assert!(text.contains("WARN"), "{text}");
        assert!(
            text.contains("method=\"log\"") || text.contains("method=log"),
            "{text}"
        );
        assert!(
            text.contains("invalid type"),
            "the decoder's message: {text}"
        );
        client.close().await.unwrap();
        server.join().await.unwrap();
    })
    .await;
}
