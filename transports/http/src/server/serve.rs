//! Serving [`RpcService`] on connections: the accept loops over TCP and TLS, and one
//! connection accepted by other code. HTTP/1.1 runs on the fast path with its plain lane
//! (the server's [`Posts`]); HTTP/2 through hyper.

use std::future::Future;
use std::sync::Arc;

use crate::caller::ConnectionInfo;
use crate::listen::{listen, Fast, Listen};
use crate::on_hyper::{ConnectionError, Protocol};

use super::rpc::{Inner, RpcService};

/// Serves `service` on every connection accepted on `listener` (HTTP/1.1 with keep-alive and
/// upgrades, and HTTP/2 with prior knowledge), at most
/// [`HttpServer::max_connections`](crate::HttpServer::max_connections) at once. Runs until the
/// future is dropped.
///
/// Each connection's protocol is told from its first bytes, then the connection runs in a task
/// holding only that protocol's state. HTTP/1.1 runs on the fast path, in the connection's own task
/// (the same answers as through hyper, with no hyper state: an idle keep-alive connection holds its
/// socket and a 2 KiB buffer): plain-JSON POSTs are answered with no HTTP machinery in between,
/// other requests are read whole; the first request it does not take (upgrades, chunked bodies,
/// bodies over the limit...) hands the connection, with the bytes already read, to hyper. A request
/// head, once begun, must arrive whole within [`HttpServer::timeout`](crate::HttpServer::timeout)
/// on the fast path, and a connection with no request under way (on HTTP/2: no stream) is closed
/// after [`HttpServer::idle_connection_timeout`](crate::HttpServer::idle_connection_timeout).
pub async fn serve(listener: tokio::net::TcpListener, service: RpcService) {
    listen(listener, how(&service), connections(service)).await;
}

/// [`serve`] over TLS (feature `tls`): HTTPS with HTTP/2 or HTTP/1.1 by ALPN, and WSS on the
/// same port through the service's upgrade hook. Each connection's handshake must finish
/// within `handshake_timeout`; certificates come from `tls` and reload as
/// [`ServerTls`](rpcwire_tokio::tls::ServerTls) says (open connections keep theirs). A
/// client certificate verified under mutual TLS reaches the builder's authenticator with
/// each request of its connection (such connections are served by hyper).
///
/// ```no_run
/// use rpcwire_http::HttpServer;
/// use rpcwire_tokio::tls::{ServerTls, TlsFiles};
/// use rpcwire_tokio::{Builder, Router};
///
/// # #[tokio::main]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let files = TlsFiles { cert: "server.pem".into(), key: "server.key".into(), client_ca: None };
/// let tls = ServerTls::with_alpn(files, &[b"h2", b"http/1.1"])?;
/// tls.watch(std::time::Duration::from_secs(2));
/// let service = HttpServer::new(Builder::new().router(Router::new())).path("/rpc").build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
/// rpcwire_http::serve_tls(listener, service, tls, std::time::Duration::from_secs(10)).await;
/// # Ok(()) }
/// ```
#[cfg(feature = "tls")]
pub async fn serve_tls(
    listener: tokio::net::TcpListener,
    service: RpcService,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: std::time::Duration,
) {
    let how = Listen {
        tls: Some((tls, handshake_timeout)),
        ..how(&service)
    };
    listen(listener, how, connections(service)).await;
}

/// Serves `service` on one connection accepted by your own code, until it ends: a TLS stream
/// (tokio-rustls, with [`Protocol::from_alpn`]), a Unix socket, an in-memory pipe. HTTP/1.1 runs as
/// on [`serve`]'s connections (the fast path, then hyper past the first request it does not take;
/// hyper alone for a connection with a client certificate); the idle limit is
/// [`HttpServer::idle_connection_timeout`](crate::HttpServer::idle_connection_timeout).
/// Bound the number of connections in the accept loop, as [`serve`] does with
/// [`HttpServer::max_connections`](crate::HttpServer::max_connections).
///
/// ```no_run
/// use rpcwire_http::{serve_connection, HttpServer, Protocol};
///
/// # async fn run(acceptor: tokio_rustls::TlsAcceptor) -> std::io::Result<()> {
/// let service = HttpServer::new(rpcwire_tokio::Builder::new()).build();
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:8443").await?;
/// loop {
///     let (tcp, _) = listener.accept().await?;
///     let (acceptor, service) = (acceptor.clone(), service.clone());
///     tokio::spawn(async move {
///         let Ok(tls) = acceptor.accept(tcp).await else { return };
///         let protocol = Protocol::from_alpn(tls.get_ref().1.alpn_protocol());
///         let _ = serve_connection(tls, service, protocol).await;
///     });
/// }
/// # }
/// ```
pub fn serve_connection<I>(
    io: I,
    service: RpcService,
    protocol: Protocol,
) -> impl Future<Output = Result<(), ConnectionError>> + Send
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    connections(service).serve(io, protocol, ConnectionInfo::of_peer(None))
}

/// How the server takes connections: as many as its settings say, each reported (counted,
/// with a span of its own).
fn how(service: &RpcService) -> Listen {
    let endpoint = &service.inner.endpoint;
    Listen {
        reported: true,
        ..Listen::tcp(endpoint.max_connections, endpoint.idle_connection)
    }
}

/// How the server's connections are served: HTTP/1.1 on the fast path (unless
/// [`HttpServer::fast_path`](crate::HttpServer::fast_path) is off), its plain lane taking the
/// server's POSTs unless profile checks look at every request's parts.
fn connections(service: RpcService) -> Fast<RpcService, Inner> {
    let inner = &service.inner;
    let plain = inner.check.is_none() && inner.check_body.is_none();
    Fast {
        posts: plain.then(|| Arc::clone(inner)),
        on: inner.fast_path,
        service,
    }
}
