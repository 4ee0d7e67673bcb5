//! The floor of the `http` bench: hyper 1's HTTP/1.1 server answering every request with W1's
//! fixed answer, no JSON-RPC at all (what any hyper-based JSON-RPC server pays before its own
//! work). Prints `listening on ADDR` on stderr; threads from `RPCWIRE_THREADS`.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Request, Response};

const ANSWER: &[u8] = br#"{"jsonrpc":"2.0","result":19,"id":1}"#;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:0".to_owned());
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if let Some(n) = std::env::var("RPCWIRE_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        rt.worker_threads(n);
    }
    rt.enable_all().build()?.block_on(async move {
        let listener = tokio::net::TcpListener::bind(addr).await?;
        eprintln!("hyper floor: listening on {}", listener.local_addr()?);
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            tokio::spawn(async move {
                let service =
                    hyper::service::service_fn(|req: Request<hyper::body::Incoming>| async move {
                        // Read the body, as a server must.
                        let _ = req.into_body().collect().await;
                        let mut r = Response::new(Full::new(Bytes::from_static(ANSWER)));
                        r.headers_mut().insert(
                            hyper::header::CONTENT_TYPE,
                            hyper::header::HeaderValue::from_static("application/json"),
                        );
                        Ok::<_, Infallible>(r)
                    });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}
