//! `rpcwire serve --http` and `rpcwire call --http`: the demo service and calls over HTTP
//! (`rpcwire-http`), with progress notifications printed to stderr as they arrive.

use std::process::ExitCode;
use std::time::Duration;

use rpcwire_cli::demo_router;
use rpcwire_http::{HostPolicy, HttpClient, HttpServer};
use rpcwire_tokio::{Builder, CallError, Context, Router, RpcError};
use serde_json::value::RawValue;

use crate::{EXIT_CONNECTION, EXIT_USAGE};

/// The demo service, plus `count` (HTTP only): `[n]` sends n `progress` notifications
/// (`{"done": i, "of": n}`, 10 ms apart) to the caller, then answers n.
pub fn router() -> Router {
    demo_router().method_with_context("count", |cx: Context, (n,): (u64,)| async move {
        if n > 10_000 {
            return Err(RpcError::invalid_params("n must be at most 10000"));
        }
        for done in 1..=n {
            cx.peer()
                .notify("progress", serde_json::json!({"done": done, "of": n}))
                .await?;
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        Ok(n)
    })
}

/// Serves the demo service over HTTP at `addr` and `path` until the process is stopped.
/// `any_host`: accept any `Host`/`Origin` (behind a proxy, or on a non-loopback address).
pub async fn serve(addr: &str, path: &str, any_host: bool, builder: Builder) -> ExitCode {
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("rpcwire: cannot listen on {addr}: {e}");
            return ExitCode::from(EXIT_CONNECTION);
        }
    };
    let local = listener
        .local_addr()
        .map_or_else(|_| addr.to_owned(), |a| a.to_string());
    let mut server = HttpServer::new(builder.router(router())).path(path);
    if any_host {
        server = server.hosts(HostPolicy::Any);
    }
    eprintln!("rpcwire: serving the demo service on http://{local}{path}");
    rpcwire_http::serve(listener, server.build()).await;
    ExitCode::SUCCESS
}

/// Connects a client to `url`; progress (any notification) is printed on stderr as
/// `method params` as it arrives.
pub fn client(url: &str, timeout: Duration, max_frame: usize) -> Result<HttpClient, ExitCode> {
    HttpClient::builder(url)
        .rpc(Builder::new().request_timeout(Some(timeout)))
        .timeout(timeout)
        .max_body(max_frame)
        .on_notification(|method, params| {
            eprintln!("{method} {}", params.unwrap_or("null"));
        })
        .build()
        .map_err(|e| {
            eprintln!("rpcwire: {e}");
            ExitCode::from(EXIT_USAGE)
        })
}

/// Sends one call (or notification) over `client`.
pub async fn send(
    client: &HttpClient,
    method: &str,
    params: Option<&RawValue>,
    notify: bool,
    timeout: Duration,
) -> Result<Option<Box<RawValue>>, CallError> {
    let c = client.client();
    if notify {
        let sent = match params {
            Some(p) => c.notify(method, p).await,
            None => c.notify(method, ()).await,
        };
        // The notification goes out as its own POST: give it a moment to leave.
        tokio::time::sleep(Duration::from_millis(50).min(timeout)).await;
        return sent.map(|()| None);
    }
    c.call_json(method, params, Some(timeout)).await.map(Some)
}

/// An HTTP-level failure (no connection, a status other than 200/202): printed, exit 3.
pub fn failed(e: &CallError) -> Option<ExitCode> {
    let rpc = e
        .rpc()
        .filter(|r| r.code == rpcwire_http::HTTP_ERROR_CODE)?;
    let data = rpc.data.as_ref().map_or("", |d| d.get());
    eprintln!("rpcwire: HTTP exchange failed: {data}");
    Some(ExitCode::from(EXIT_CONNECTION))
}
