//! JSON-RPC 2.0 over WebSocket (feature `ws`): a server and a client on tokio-tungstenite,
//! built on the same core, [`Router`](rpcwire_tokio::Router) and [`Client`](rpcwire_tokio::Client) as every other
//! transport.
//!
//! One JSON-RPC message or batch travels in one text message, either way. Either side may
//! call the other and send notifications; a server reaches one connection through its
//! [`Client`](rpcwire_tokio::Client) ([`WsServer::on_connect`], or [`Context::peer`](rpcwire_tokio::Context::peer)
//! inside a handler) or all of them through its [`Hub`] (the service layer's
//! `rpcwire_service::Hub`).
//!
//! ```
//! use rpcwire_http::ws::{self, WsConfig, WsServer};
//! use rpcwire_tokio::{Builder, Router, RpcError};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new()
//!     .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
//! let server = WsServer::new(Builder::new().router(router), WsConfig::default());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
//! let url = format!("ws://{}/", listener.local_addr()?);
//! tokio::spawn(server.clone().serve_tcp(listener));
//!
//! let session = ws::connect(&url, Builder::new(), &WsConfig::default()).await?;
//! let diff: i64 = session.client().call("subtract", [42, 23]).await?;
//! assert_eq!(diff, 19);
//! server.hub().notify_all("tick", [1])?;    // every connected client gets it
//! session.close().await?;
//! # Ok(()) }
//! ```
//!
//! ## How it runs
//!
//! The WebSocket stream is wrapped in an adapter that the tokio driver of `rpcwire-tokio`
//! reads and writes like any byte stream: an inbound text message becomes one
//! `Content-Length`-framed block, and each block the driver writes leaves as one text message.
//! Framing, validation, batches, correlation and limits stay in the core; this module does the
//! WebSocket parts (handshake, control frames, close codes, keep-alive, send timeout).
//!
//! ## Limits
//!
//! | what | default | set with | at the limit |
//! |---|---|---|---|
//! | inbound message (and frame) | 4 MiB | [`WsConfig::max_message`] | close 1009 |
//! | text that is not UTF-8 | | | close 1007 |
//! | binary message | | | close 1003, with a reason saying to send text |
//! | peer silent after a ping | 30 s interval + 20 s | [`WsConfig::ping_interval`], [`WsConfig::pong_timeout`] | connection dropped |
//! | peer not reading | 10 s | [`WsConfig::send_timeout`] | connection dropped |
//! | connections per server | 10 000 | [`WsServer::max_connections`] | 503 to new upgrades |
//!
//! A peer that stops reading fills its socket; the adapter then takes no more output, the
//! driver stops reading that peer's requests (its memory does not grow), and after
//! [`WsConfig::send_timeout`] without progress the connection is dropped. Other connections are
//! not affected. tungstenite keeps its read and write buffers at the size of the largest
//! message the connection carried (at most [`WsConfig::max_message`]) until it ends.

mod config;
pub(crate) mod handshake;
mod io;
mod server;

pub use config::WsConfig;
pub use handshake::{is_upgrade, BEARER_SUBPROTOCOL_PREFIX, JSONRPC_SUBPROTOCOL};
pub use rpcwire_service::Hub;
pub use server::WsServer;

use rpcwire_tokio::{Builder, Session};

/// Why a WebSocket connection could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WsError {
    /// The handshake or the connection failed (bad URL, refused, not a WebSocket server, a
    /// certificate not trusted, `wss://` in a build without the `tls` feature).
    #[error("WebSocket connection failed: {0}")]
    Connect(#[from] tokio_tungstenite::tungstenite::Error),
    /// The default TLS settings could not be made.
    #[cfg(feature = "tls")]
    #[error("TLS settings: {0}")]
    Tls(#[from] rustls::Error),
}

/// Connects to a WebSocket server (`ws://host:port/path`, or `wss://` with the `tls` feature,
/// trusting Mozilla's root certificates) and runs a JSON-RPC connection over it with
/// `builder`'s settings (give it a [`Router`](rpcwire_tokio::Router) to answer the server's
/// calls and notifications). End it with [`Session::close`].
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rpcwire_http::ws::{connect, WsConfig};
/// let session = connect("ws://127.0.0.1:4000/", rpcwire_tokio::Builder::new(), &WsConfig::default()).await?;
/// let sum: i64 = session.client().call("sum", [1, 2, 4]).await?;
/// session.close().await?;
/// # Ok(()) }
/// ```
pub async fn connect(url: &str, builder: Builder, config: &WsConfig) -> Result<Session, WsError> {
    connect_over(url, builder, config, crate::connect::no_tls()).await
}

/// [`connect`] with these TLS settings for a `wss://` URL (feature `tls`): a private CA's
/// roots, say ([`tls_with_roots`](crate::tls::tls_with_roots)).
#[cfg(feature = "tls")]
pub async fn connect_with_tls(
    url: &str,
    builder: Builder,
    config: &WsConfig,
    tls: std::sync::Arc<rustls::ClientConfig>,
) -> Result<Session, WsError> {
    connect_over(url, builder, config, Some(tls)).await
}

/// [`connect_with_tls`] for an upgrade request of your own: the URL with headers such as
/// `Authorization` (build it with `tokio_tungstenite::tungstenite::client::IntoClientRequest`)
/// and, for `wss://`, TLS settings (`None`: Mozilla's root certificates).
///
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use rpcwire_http::ws::{connect_request, WsConfig};
/// use tokio_tungstenite::tungstenite::client::IntoClientRequest;
///
/// let mut request = "ws://127.0.0.1:4000/".into_client_request()?;
/// request.headers_mut().insert("authorization", "Bearer s3cret".parse()?);
/// let session = connect_request(request, rpcwire_tokio::Builder::new(), &WsConfig::default(), None).await?;
/// # drop(session);
/// # Ok(()) }
/// ```
pub async fn connect_request(
    request: tokio_tungstenite::tungstenite::handshake::client::Request,
    builder: Builder,
    config: &WsConfig,
    #[cfg(feature = "tls")] tls: Option<std::sync::Arc<rustls::ClientConfig>>,
    #[cfg(not(feature = "tls"))] tls: Option<std::convert::Infallible>,
) -> Result<Session, WsError> {
    #[cfg(feature = "tls")]
    return connect_over(request, builder, config, tls).await;
    #[cfg(not(feature = "tls"))]
    {
        let _ = tls;
        connect_over(request, builder, config, crate::connect::no_tls()).await
    }
}

async fn connect_over(
    url: impl tokio_tungstenite::tungstenite::client::IntoClientRequest + Unpin,
    builder: Builder,
    config: &WsConfig,
    tls: crate::connect::Tls,
) -> Result<Session, WsError> {
    // The TLS settings serve `wss://` only: a `ws://` URL connects in plain text.
    #[cfg(feature = "tls")]
    let (ws, _response) = {
        let tls = match tls {
            Some(tls) => tls,
            None => crate::connect::default_tls()?,
        };
        tokio_tungstenite::connect_async_tls_with_config(
            url,
            Some(config.tungstenite()),
            true,
            Some(tokio_tungstenite::Connector::Rustls(tls)),
        )
        .await?
    };
    // No TLS in this build: tungstenite refuses a `wss://` URL with an error saying so.
    #[cfg(not(feature = "tls"))]
    let (ws, _response) = {
        let crate::connect::Tls = tls;
        tokio_tungstenite::connect_async_with_config(url, Some(config.tungstenite()), true).await?
    };
    Ok(io::run(ws, builder, config, None))
}
