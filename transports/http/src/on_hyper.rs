//! hyper under a connection: its HTTP/1.1 and HTTP/2 settings, the service it calls, and
//! serving one connection through it (what every server of the crate runs once a connection
//! is not, or no longer, on the fast path).

use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response};

use crate::body::Body;
use crate::caller::ConnectionInfo;
use crate::handles::{HandlesIncoming, HandlesWhole, ResponseFuture};
use rpcwire_service::Shutdown;

/// hyper's HTTP/1.1 settings for the crate's servers. `idle` is hyper's header read timeout:
/// it runs from the moment a connection waits for a request until that request's head is
/// whole, so it closes both a slow head and an idle keep-alive connection.
pub(crate) fn http1_builder(idle: Duration) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(idle);
    builder
}

/// hyper's HTTP/2 settings for the crate's servers.
pub(crate) fn http2_builder() -> hyper::server::conn::http2::Builder<hyper_util::rt::TokioExecutor>
{
    let mut builder =
        hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new());
    builder
        .timer(hyper_util::rt::TokioTimer::new())
        // Each stream may hold a request's connection or an event stream: bound them.
        .max_concurrent_streams(256);
    builder
}

/// `service` as hyper's service, its future named `Send` (a closure's inferred one is not
/// proved `Send` under the HTTP/2 idle watch's higher-ranked bounds).
/// While `drain` drains, every request is answered 503 with `Connection: close` before it runs.
pub(crate) fn hyper_service<S: HandlesIncoming>(
    service: S,
    drain: Shutdown,
) -> impl hyper::service::Service<
    Request<hyper::body::Incoming>,
    Response = Response<Body>,
    Error = Infallible,
    Future = impl Future<Output = Result<Response<Body>, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let fut = (!drain.is_draining()).then(|| service.handle_incoming(req));
        async move {
            Ok::<_, Infallible>(match fut {
                Some(fut) => fut.await,
                None => crate::response::shutting_down(),
            })
        }
    })
}

/// The HTTP version of a connection handed to [`serve_connection`](crate::serve_connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// HTTP/1.1 (keep-alive, upgrades).
    Http1,
    /// HTTP/2.
    Http2,
}

impl Protocol {
    /// The protocol a TLS handshake's ALPN chose: `h2` is HTTP/2, anything else (none
    /// included) HTTP/1.1.
    pub fn from_alpn(alpn: Option<&[u8]>) -> Self {
        if alpn == Some(b"h2") {
            Protocol::Http2
        } else {
            Protocol::Http1
        }
    }
}

/// Why a connection served by [`serve_connection`](crate::serve_connection) ended with an error (a
/// peer that resets its connection, say).
#[derive(Debug, thiserror::Error)]
pub enum ConnectionError {
    /// Reading or writing the connection failed on the HTTP/1.1 fast path.
    #[error("connection I/O failed: {0}")]
    Io(#[from] std::io::Error),
    /// hyper's connection failed.
    #[error(transparent)]
    Http(#[from] hyper::Error),
}

/// Serves `service` through hyper on one connection accepted by your own code (a TLS stream,
/// with [`Protocol::from_alpn`]), until it ends; a connection with no request under way (on
/// HTTP/2: no stream; an open event stream counts as one) is closed after `idle`. See [`serve_connection`](crate::serve_connection)
/// for the accept loop around it. What every server of the crate runs once a connection is
/// not (or no longer) on the fast path.
pub async fn serve_hyper_connection<I, S>(
    io: I,
    service: S,
    protocol: Protocol,
    idle: Duration,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HandlesIncoming,
{
    serve_hyper(io, service, protocol, idle, Shutdown::default()).await
}

/// [`serve_hyper_connection`] under `drain`: requests that arrive while it drains are refused
/// (503), and an HTTP/2 connection is shut down gracefully (GOAWAY) when it begins. (An
/// HTTP/1.1 connection is not closed while idle: a request may be on its way; its next one
/// is answered 503 with `Connection: close`.)
async fn serve_hyper<I, S>(
    io: I,
    service: S,
    protocol: Protocol,
    idle: Duration,
    drain: Shutdown,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HandlesIncoming,
{
    let draining = drain.draining();
    let io = hyper_util::rt::TokioIo::new(io);
    let service = hyper_service(service, drain);
    match protocol {
        Protocol::Http1 => {
            http1_builder(idle)
                .serve_connection(io, service)
                .with_upgrades()
                .await?
        }
        Protocol::Http2 => {
            let activity = crate::h2_idle::Activity::new();
            let service = crate::h2_idle::CountStreams {
                service,
                activity: Arc::clone(&activity),
            };
            let conn = http2_builder().serve_connection(io, service);
            crate::h2_idle::serve_until_idle(conn, activity, idle, draining, |conn| {
                conn.graceful_shutdown()
            })
            .await?
        }
    }
    Ok(())
}

/// [`serve_hyper_connection`] under the service's drain, of a connection that tells its
/// requests what it knows
/// ([`connection_peer`](crate::profile::connection_peer), the client certificate) when they
/// are to be told ([`ConnectionInfo::is_told`]).
pub(crate) async fn serve_hyper_told<I, S>(
    io: I,
    service: S,
    protocol: Protocol,
    idle: Duration,
    info: ConnectionInfo,
) -> Result<(), ConnectionError>
where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: HandlesWhole,
{
    let drain = service.endpoint().shutdown().clone();
    if info.is_told(service.wants_peer()) {
        serve_hyper(io, WithConnection { service, info }, protocol, idle, drain).await
    } else {
        serve_hyper(io, service, protocol, idle, drain).await
    }
}

/// A service that tells each request what its connection knows.
#[derive(Clone)]
pub(crate) struct WithConnection<S> {
    pub(crate) service: S,
    pub(crate) info: ConnectionInfo,
}

impl<S: HandlesIncoming> HandlesIncoming for WithConnection<S> {
    fn handle_incoming(&self, mut req: Request<hyper::body::Incoming>) -> ResponseFuture {
        req.extensions_mut().insert(self.info.clone());
        self.service.handle_incoming(req)
    }
}
