#![cfg_attr(docsrs, feature(doc_cfg))]
//! # rpcwire-http
//!
//! JSON-RPC 2.0 over HTTP for [`rpcwire`], on hyper 1: a server ([`HttpServer`] →
//! [`RpcService`], a tower `Service` that mounts in axum or runs with [`serve`]) and a client
//! ([`HttpClient`]). Every protocol rule stays in the core and every policy in the service
//! layer: each POST body runs through a core connection and the service's one dispatcher
//! ([`rpcwire_service::Responder`]), with the same [`Router`](rpcwire_tokio::Router), access
//! rules and rate limits as over stdio and TCP; this crate maps what comes out to status
//! codes and headers.
//!
//! - POST at a configurable path, `application/json` in and out: a request or batch gets 200
//!   with its answer; a body of only notifications or responses gets 202 and no body; parse
//!   errors and invalid requests get the specification's error objects.
//! - Limits with clear statuses: body size (413), content type (415), method (405 with
//!   `Allow`), `Accept` (406), request time (503; a body that arrives too slowly, 408), `Host`
//!   and `Origin` (403; loopback names only by default).
//! - Server-Sent Events: a request whose handlers send messages before the answer (progress
//!   through [`Context::peer`](rpcwire_tokio::Context::peer)) is answered as
//!   `text/event-stream` when the client accepts it (those messages first, the answer last,
//!   then the end), and as plain JSON otherwise.
//! - GET opens the server's event stream ([`RpcService::stream_client`] sends on it):
//!   keep-alive comments, event ids, resumption with `Last-Event-ID` from a bounded buffer.
//! - WebSocket (feature `ws`, module `ws`): one message or batch per text message, calls in
//!   both directions, notifications to one connection or all; served standalone or as an
//!   upgrade on the same port and path ([`HttpServer::upgrade`]).
//! - TLS (feature `tls`, module `tls`): the clients take `https://` and `wss://` URLs;
//!   `serve_tls` serves HTTPS and WSS (or serve connections you accept yourself with
//!   [`serve_connection`]).
//! - Authentication: the builder's authenticator asks every request for credentials
//!   ([`BearerChallenge`] answers the refusals); JWT keys from a JWKS URL (feature `jwks`,
//!   module `jwks`); signed and replay-proof requests (feature `signing`,
//!   `HttpServer::signed`).
//! - Building blocks for profiles ([`profile`]): reading a POST, resumable streams, the event
//!   hub, ids no client can guess, the `Host` / `Origin` check, the serve plumbing. The crate knows no profile: MCP Streamable HTTP lives in `rpcwire-mcp`
//!   (feature `http`), built from these.
//!
//! ```
//! use rpcwire_http::{HttpClient, HttpServer};
//! use rpcwire_tokio::{Builder, Router, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
//! let service = HttpServer::new(Builder::new().router(router)).path("/rpc").build();
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("http://{}/rpc", listener.local_addr()?);
//! tokio::spawn(rpcwire_http::serve(listener, service));
//!
//! let client = HttpClient::new(&url)?;
//! let diff: i64 = client.client().call("subtract", [42, 23]).await?;
//! assert_eq!(diff, 19);
//! # Ok(()) }
//! ```
//!
//! ## In an axum app, under tower layers, on rpcwire's accept loop
//!
//! [`RpcService`] is a plain tower `Service<http::Request<B>>`: mount it in axum beside other
//! routes and wrap it in any tower-http layer (here `CorsLayer`). rpcwire's accept loop and
//! TLS handshake (`rpcwire_tokio::accept_loop`, `rpcwire_tokio::tls::spawn_handshake`: the
//! connection limit, the drain, certificate reload, mutual TLS) serve any tower service
//! through hyper-util, the app included:
//!
//! ```no_run
//! use std::time::Duration;
//! use axum::routing::get;
//! use http::{header::CONTENT_TYPE, HeaderValue, Method};
//! use hyper_util::rt::{TokioExecutor, TokioIo};
//! use rpcwire_http::{HostPolicy, HttpServer};
//! use rpcwire_tokio::tls::{ServerTls, TlsFiles};
//! use rpcwire_tokio::{Builder, Router, RpcError, Shutdown};
//! use tower_http::cors::CorsLayer;
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
//! let origin = "https://app.example.com";
//! let rpc = HttpServer::new(Builder::new().router(router))
//!     .hosts(HostPolicy::loopback().with("api.example.com").with(origin))
//!     .build();
//! let app = axum::Router::new()
//!     .route_service("/rpc", rpc)
//!     .route("/healthz", get(|| async { "ok" }))
//!     .layer(
//!         CorsLayer::new()
//!             .allow_origin(HeaderValue::from_static(origin))
//!             .allow_methods([Method::POST])
//!             .allow_headers([CONTENT_TYPE]),
//!     );
//!
//! let files = TlsFiles { cert: "server.pem".into(), key: "server.key".into(), client_ca: Some("ca.pem".into()) };
//! let tls = ServerTls::with_alpn(files, &[b"h2", b"http/1.1"])?;
//! let _reload = tls.watch(Duration::from_secs(2));
//! let shutdown = Shutdown::new(Duration::from_secs(30));
//! shutdown.on_signals();
//! let listener = tokio::net::TcpListener::bind("0.0.0.0:8443").await?;
//! rpcwire_tokio::accept_loop(listener, 10_000, &shutdown, move |tcp, peer, slot| {
//!     let app = app.clone();
//!     let handshake = Duration::from_secs(10);
//!     rpcwire_tokio::tls::spawn_handshake(&tls, tcp, peer, handshake, move |stream, _cert| {
//!         tokio::spawn(async move {
//!             let _slot = slot; // the connection's place under the limit and in the drain
//!             let service = hyper_util::service::TowerToHyperService::new(app);
//!             let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
//!                 .serve_connection_with_upgrades(TokioIo::new(stream), service)
//!                 .await;
//!         });
//!     });
//! })
//! .await;
//! shutdown.drained().await;
//! # Ok(()) }
//! ```
//!
//! (A connection served this way is not on the HTTP/1.1 fast path, and the drain closes only
//! what the loop accepts: the app's connections end when their clients leave or at the
//! deadline. `transports/http/tests/axum_tls.rs` runs this with mutual TLS and from Chromium.)

mod body;
mod caller;
mod challenge;
mod client;
mod connect;
mod console;
mod endpoint;
mod fast;
#[cfg(feature = "signing")]
pub mod guard;
mod h2_idle;
mod handles;
#[cfg(feature = "jwks")]
pub mod jwks;
mod listen;
mod media;
mod on_hyper;
mod post;
pub mod profile;
mod response;
mod server;
mod stream;
pub mod transport;
#[cfg(feature = "ws")]
pub mod ws;

pub use body::Body;
pub use challenge::{has_query_token, unauthenticated, BearerChallenge};
pub use client::{ClientError, EventStream, HttpClient, HttpClientBuilder, HTTP_ERROR_CODE};
pub use connect::UrlError;
pub use console::CONSOLE_STATS;
pub use endpoint::{HostPolicy, DEFAULT_IDLE_CONNECTION, DEFAULT_MAX_BODY};
pub use handles::ResponseFuture;
pub use on_hyper::{ConnectionError, Protocol};
pub use rpcwire::wire::classify::{classify, BodyKind};
#[cfg(feature = "tls")]
pub use server::serve_tls;
pub use server::{
    serve, serve_connection, BodyCheck, HttpServer, RequestCheck, RpcService, UpgradeHook,
};

/// TLS for the clients' `https://` URLs (feature `tls`): rustls with the `ring` provider.
///
/// Every client ([`HttpClient`], a profile's client such as MCP's) takes an `https://` URL and, optionally, a
/// [`rustls::ClientConfig`] (`tls_config` on its builder); without one it trusts Mozilla's
/// root certificates ([`default_tls`](crate::tls::default_tls)). The server side is
/// `serve_tls` (and `profile::serve_profile_tls` for a profile's service), with
/// `rpcwire_tokio::tls::ServerTls`.
#[cfg(feature = "tls")]
pub mod tls {
    pub use crate::connect::{default_tls, tls_with_roots};
    /// The rustls version the clients use, for building a [`rustls::ClientConfig`].
    pub use rustls;
}
