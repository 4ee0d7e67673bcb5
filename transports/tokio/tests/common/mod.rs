//! Shared helpers for the rpcwire-tokio integration tests.
#![allow(dead_code, missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::future::Future;
use std::time::Duration;

use rpcwire_tokio::{Builder, ErrorCode, Router, RpcError, Session};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::net::{TcpListener, TcpStream};

/// Every test finishes within this, or fails.
pub const LIMIT: Duration = Duration::from_secs(60);

pub async fn bounded<F: Future>(f: F) -> F::Output {
    tokio::time::timeout(LIMIT, f)
        .await
        .expect("test exceeded its time limit")
}

#[derive(Deserialize)]
pub struct Sleep {
    pub ms: u64,
}

/// A router for tests: `echo`, `add`, `sleep` (returns its ms), `fail`, `panic`, and `ask`
/// (calls the peer's `echo` with its params and returns the result).
pub fn router() -> Router {
    Router::new()
        .method("echo", |p: Option<Box<RawValue>>| async move {
            Ok::<_, RpcError>(p)
        })
        .method("add", |(a, b): (i64, i64)| async move {
            Ok::<_, RpcError>(a + b)
        })
        .method("sleep", |p: Sleep| async move {
            tokio::time::sleep(Duration::from_millis(p.ms)).await;
            Ok::<_, RpcError>(p.ms)
        })
        .method("fail", |_: ()| async move {
            Err::<(), _>(
                RpcError::new(ErrorCode(-32000), "it failed")
                    .with_data(&serde_json::json!({"why": "always"})),
            )
        })
        .method("panic", |_: ()| async move {
            if true {
                panic!("handler panics on purpose");
            }
            Ok::<(), RpcError>(())
        })
        .method_with_context("ask", |ctx, p: Box<RawValue>| async move {
            ctx.peer()
                .call::<_, Box<RawValue>>("echo", p)
                .await
                .map_err(RpcError::internal)
        })
}

#[derive(Debug, Clone, Copy)]
pub enum Link {
    Duplex,
    Tcp,
}

/// A server (with `server`'s settings) and a client (with `client`'s) joined by `link`.
pub async fn pair(link: Link, server: Builder, client: Builder) -> (Session, Session) {
    match link {
        Link::Duplex => server.duplex(client, 64 << 10),
        Link::Tcp => {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let addr = listener.local_addr().unwrap();
            let (accepted, connected) = tokio::join!(listener.accept(), TcpStream::connect(addr));
            let (stream, _) = accepted.unwrap();
            let connected = connected.unwrap();
            connected.set_nodelay(true).unwrap();
            stream.set_nodelay(true).unwrap();
            let (r, w) = stream.into_split();
            let (cr, cw) = connected.into_split();
            (server.run(r, w), client.run(cr, cw))
        }
    }
}
