//! `rpcwire serve --http --cors-origin ORIGIN`: CORS by tower-http's `CorsLayer` around the
//! JSON-RPC service, served by rpcwire's accept loop (and TLS handshake) through hyper-util,
//! as a library user composes it (see `rpcwire-http`'s crate docs).

use std::time::Duration;

use clap::Args;
use http::header::{AUTHORIZATION, CONTENT_TYPE};
use http::{HeaderValue, Method};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rpcwire_http::RpcService;
use rpcwire_tokio::Shutdown;
use tower_http::cors::CorsLayer;
use tower_layer::Layer;

/// The CORS flag.
#[derive(Debug, Args)]
pub(crate) struct CorsArgs {
    /// With --http: let pages of this origin call the server from a browser (repeatable;
    /// `https://app.example.com`, a port if not the scheme's): preflights are answered and
    /// answers carry `Access-Control-Allow-Origin` (tower-http's CorsLayer; methods GET and
    /// POST, headers Content-Type and Authorization), and the origin passes the Origin check.
    /// Every connection then runs through hyper (not the HTTP/1.1 fast path); not with
    /// --client-ca.
    #[arg(
        long,
        value_name = "ORIGIN",
        requires = "http",
        conflicts_with = "client_ca"
    )]
    pub(crate) cors_origin: Vec<String>,
}

impl CorsArgs {
    /// The layer the flags ask for, if any (`Err`: an origin that is no header value).
    pub(crate) fn layer(&self) -> Result<Option<CorsLayer>, String> {
        if self.cors_origin.is_empty() {
            return Ok(None);
        }
        let origins = self
            .cors_origin
            .iter()
            .map(|o| HeaderValue::from_str(o).map_err(|_| format!("--cors-origin {o:?}")))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(
            CorsLayer::new()
                .allow_origin(origins)
                .allow_methods([Method::GET, Method::POST])
                .allow_headers([CONTENT_TYPE, AUTHORIZATION]),
        ))
    }
}

/// Serves `service` under `cors` on `listener` (over `tls` when given) until the drain
/// begins: rpcwire's accept loop and handshake, hyper-util's HTTP/1.1 + HTTP/2 server.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    service: RpcService,
    tls: Option<rpcwire_tokio::tls::ServerTls>,
    cors: CorsLayer,
    shutdown: Shutdown,
) {
    let limit = rpcwire_tokio::DEFAULT_MAX_CONNECTIONS;
    rpcwire_tokio::accept_loop(listener, limit, &shutdown, move |tcp, peer, slot| {
        let app = cors.layer(service.clone());
        match &tls {
            Some(tls) => {
                let handshake = Duration::from_secs(10);
                rpcwire_tokio::tls::spawn_handshake(tls, tcp, peer, handshake, move |io, _| {
                    tokio::spawn(connection(io, app, slot));
                });
            }
            None => {
                tokio::spawn(connection(tcp, app, slot));
            }
        }
    })
    .await;
}

/// One connection, through hyper-util, while it holds `slot` (its place under the limit and in
/// the drain).
async fn connection<I, S>(io: I, app: S, slot: rpcwire_tokio::Slot)
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: tower_service::Service<
            http::Request<hyper::body::Incoming>,
            Response = http::Response<rpcwire_http::Body>,
            Error = std::convert::Infallible,
        > + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let _slot = slot;
    let app = hyper_util::service::TowerToHyperService::new(app);
    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
        .serve_connection_with_upgrades(TokioIo::new(io), app)
        .await;
}
