//! `rpcwire serve --http` and `rpcwire call --http`: the demo service and calls over HTTP
//! (`rpcwire-http`), with progress notifications printed to stderr as they arrive.

use std::process::ExitCode;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rpcwire_cli::demo_router;
use rpcwire_http::ws::{WsConfig, WsServer};
use rpcwire_http::{HostPolicy, HttpClient, HttpServer, RpcService};
use rpcwire_tokio::{Builder, CallError, Context, Router, RpcError};
use serde_json::value::RawValue;

use crate::{EXIT_CONNECTION, EXIT_USAGE};

/// The demo service, plus three methods over HTTP only:
///
/// - `count [n]` sends n `progress` notifications (`{"done": i, "of": n}`, 10 ms apart) to
///   the caller, then answers n;
/// - `publish PARAMS` (a call or a notification) sends the notification `news` with these
///   params on the server's GET event stream (every listener gets it, and it is kept for
///   resumption);
/// - `end_streams` ends every open GET stream (listeners reconnect and resume);
///
/// and with an `upstream` server (`--upstream URL`), `relay {"method", "params"}`: calls
/// `method` there and answers its result (a handler that calls another server: its call's
/// span is the parent of the upstream server's, across the hop).
pub fn router(service: Arc<OnceLock<RpcService>>, upstream: Option<Arc<HttpClient>>) -> Router {
    let stream = Arc::clone(&service);
    let noted = Arc::clone(&service);
    let router = match upstream {
        Some(upstream) => demo_router().method("relay", move |call: Relay| {
            let upstream = Arc::clone(&upstream);
            async move {
                let params = call.params.as_deref();
                Ok::<_, RpcError>(
                    upstream
                        .client()
                        .call_json(&call.method, params, None)
                        .await?,
                )
            }
        }),
        None => demo_router(),
    };
    router
        // `publish` also as a notification (no answer).
        .notification("publish", move |params: Box<RawValue>| {
            let service = Arc::clone(&noted);
            async move {
                if let Some(s) = service.get() {
                    let _ = s.stream_client().notify("news", &params).await;
                }
            }
        })
        .method("publish", move |params: Box<RawValue>| {
            let service = Arc::clone(&stream);
            async move {
                match service.get() {
                    Some(s) => Ok(s.stream_client().notify("news", &params).await?),
                    None => Err(RpcError::internal("not serving yet")),
                }
            }
        })
        .method("end_streams", move |_: Option<Box<RawValue>>| {
            let service = Arc::clone(&service);
            async move {
                if let Some(s) = service.get() {
                    s.end_streams();
                }
                Ok::<_, RpcError>(())
            }
        })
        .method_with_context("count", |cx: Context, (n,): (u64,)| async move {
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

/// The params of `relay`.
#[derive(serde::Deserialize)]
pub struct Relay {
    /// The upstream method.
    method: String,
    /// Its params, if any.
    params: Option<Box<RawValue>>,
}

/// Serves the demo service over HTTP at `addr` and `path` until the process is stopped.
/// `hosts`: the `Host`/`Origin` names accepted (`--any-host`, `--allowed-host`,
/// `--allowed-origin`).
/// `max_body`: the largest request body (413 beyond).
/// `tls`: serve HTTPS (and WSS) with it; `policy`: the access rules of `--policy`;
/// `signing`: every POST signed (`--signing-key`); `console`: the browser console on
/// `/console`; `upstream`: the server the `relay` method calls (`--upstream`).
#[allow(clippy::too_many_arguments)] // one per `serve --http` option
pub async fn serve(
    addr: &str,
    path: &str,
    hosts: HostPolicy,
    max_body: usize,
    builder: Builder,
    tls: Option<rpcwire_tokio::tls::ServerTls>,
    policy: Option<&rpcwire_cli::policy::Policy>,
    signing: Option<Arc<rpcwire_tokio::signing::RequestSigning>>,
    console: bool,
    upstream: Option<&str>,
    probes: &crate::probes::ProbeArgs,
    cors: Option<tower_http::cors::CorsLayer>,
    credential_leeway: Option<Duration>,
) -> ExitCode {
    let shutdown = builder.service_ref().shutdown_ref().clone();
    let upstream = match upstream.map(HttpClient::new).transpose() {
        Ok(client) => client.map(Arc::new),
        Err(e) => {
            eprintln!("rpcwire: --upstream: {e}");
            return ExitCode::from(EXIT_USAGE);
        }
    };
    let with_policy = |router: rpcwire_tokio::Router| match policy {
        Some(policy) => policy.apply(router),
        None => router,
    };
    let (listener, local) = match rpcwire_cli::listen(addr).await {
        Ok(listening) => listening,
        Err(code) => return code,
    };
    // The router's `publish` reaches the service it is part of through this cell (set once
    // built; the process serves until it is stopped, so the cycle is of no concern).
    let cell = Arc::new(OnceLock::new());
    // WebSocket on the same port and path: the same methods, one message per text message.
    let ws = WsServer::new(
        builder
            .clone()
            .router(with_policy(router(Arc::clone(&cell), upstream.clone()))),
        WsConfig {
            max_message: max_body,
            credential_leeway,
            ..WsConfig::default()
        },
    );
    let mut server =
        HttpServer::new(builder.router(with_policy(router(Arc::clone(&cell), upstream))))
            .path(path)
            .max_body(max_body)
            .websocket(ws)
            .console(console)
            .hosts(hosts);
    if let Some(signing) = signing {
        server = server.signed(signing);
    }
    let service = probes.apply(server).build();
    let _ = cell.set(service.clone());
    if let Some(tls) = tls {
        let _watch = tls.watch(Duration::from_secs(2));
        eprintln!(
            "rpcwire: serving the demo service (POST, SSE and WebSocket) on https://{local}{path}"
        );
        if console {
            eprintln!("rpcwire: console on https://{local}/console");
        }
        match cors {
            Some(cors) => crate::cors::serve(listener, service, Some(tls), cors, shutdown).await,
            None => rpcwire_http::serve_tls(listener, service, tls, Duration::from_secs(10)).await,
        }
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "rpcwire: serving the demo service (POST, SSE and WebSocket) on http://{local}{path}"
    );
    if console {
        eprintln!("rpcwire: console on http://{local}/console");
    }
    match cors {
        Some(cors) => crate::cors::serve(listener, service, None, cors, shutdown).await,
        None => rpcwire_http::serve(listener, service).await,
    }
    ExitCode::SUCCESS
}

/// Connects a client to `url` (with `tls` for `https://` when given: a private CA, a client
/// certificate); progress (any notification) is printed on stderr as `method params` as it
/// arrives.
pub fn client(
    url: &str,
    timeout: Duration,
    max_frame: usize,
    tls: Option<std::sync::Arc<rpcwire_http::tls::rustls::ClientConfig>>,
    headers: &[(String, String)],
) -> Result<HttpClient, ExitCode> {
    let mut builder = HttpClient::builder(url);
    for (name, value) in headers {
        builder = match builder.header(name, value) {
            Ok(builder) => builder,
            Err(_) => {
                // The value is not shown: it may be a credential.
                eprintln!("rpcwire: --header {name:?}: not a valid header");
                return Err(ExitCode::from(EXIT_USAGE));
            }
        };
    }
    if let Some(config) = tls {
        builder = builder.tls_config(config);
    }
    builder
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
        return match params {
            Some(p) => c.notify(method, p).await,
            None => c.notify(method, ()).await,
        }
        .map(|()| None);
    }
    c.call_json(method, params, Some(timeout)).await.map(Some)
}

/// An HTTP-level failure (no connection, a status other than 200/202): a sentence on stderr
/// (not the error object the client hands back), exit 3.
pub fn failed(url: &str, e: &CallError) -> Option<ExitCode> {
    let rpc = e
        .rpc()
        .filter(|r| r.code == rpcwire_http::HTTP_ERROR_CODE)?;
    eprintln!("rpcwire: {}", http_failure(url, rpc.data.as_deref()));
    Some(ExitCode::from(EXIT_CONNECTION))
}

/// The `{"status": N, "reason": "..."}` of an HTTP failure as a sentence (status 0: no HTTP
/// answer at all, such as a refused connection).
fn http_failure(url: &str, data: Option<&RawValue>) -> String {
    #[derive(serde::Deserialize)]
    struct Failure {
        status: u16,
        reason: String,
    }
    match data.and_then(|d| serde_json::from_str::<Failure>(d.get()).ok()) {
        Some(Failure { status: 0, reason }) => format!("cannot reach {url}: {reason}"),
        Some(Failure { status, reason }) if reason.is_empty() => {
            format!("{url} answered HTTP {status}")
        }
        Some(Failure { status, reason }) => format!("{url} answered HTTP {status}: {reason}"),
        None => format!("the HTTP exchange with {url} failed"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sentence(data: &str) -> String {
        let raw = RawValue::from_string(data.to_owned()).ok();
        http_failure("http://127.0.0.1:1/rpc", raw.as_deref())
    }

    #[test]
    fn failures_read_as_sentences() {
        assert_eq!(
            sentence(r#"{"status":0,"reason":"connection refused"}"#),
            "cannot reach http://127.0.0.1:1/rpc: connection refused"
        );
        assert_eq!(
            sentence(r#"{"status":404,"reason":"Not Found"}"#),
            "http://127.0.0.1:1/rpc answered HTTP 404: Not Found"
        );
    }
}
