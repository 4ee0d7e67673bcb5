//! The accept loops every server of the crate runs (the JSON-RPC server's, a profile's), over
//! TCP and TLS: a bounded number of connections, each told its protocol (HTTP/2 with prior
//! knowledge from its first bytes, or ALPN), then served in a task of its own as its
//! [`Connections`] say: on the HTTP/1.1 fast path, or through hyper.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rpcwire_telemetry::{self as telemetry, ConnectionScope};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::OwnedSemaphorePermit;

use crate::caller::ConnectionInfo;
use crate::fast::{self, Posts};
use crate::handles::{HandlesIncoming, HandlesWhole};
use crate::on_hyper::{serve_hyper_told, ConnectionError, Protocol};

/// How an accept loop takes connections: at most `max_connections` at once (more wait in the
/// listen backlog), each given `idle` to show its protocol, over TLS (each handshake within
/// its time) or not, and whether each is reported (counted among the open ones, with a span
/// of its own: the parent of its calls' spans).
pub(crate) struct Listen {
    pub(crate) max_connections: usize,
    pub(crate) idle: Duration,
    pub(crate) reported: bool,
    #[cfg(feature = "tls")]
    pub(crate) tls: Option<(rpcwire_tokio::tls::ServerTls, Duration)>,
}

impl Listen {
    /// Plain TCP, connections not reported.
    pub(crate) fn tcp(max_connections: usize, idle: Duration) -> Self {
        Listen {
            max_connections: max_connections.max(1),
            idle,
            reported: false,
            #[cfg(feature = "tls")]
            tls: None,
        }
    }
}

/// What an accept loop does with each connection it accepts.
pub(crate) trait Connections: Clone + Send + Sync + 'static {
    /// Serves one connection until it ends.
    fn serve<I>(
        self,
        io: I,
        protocol: Protocol,
        info: ConnectionInfo,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static;
}

/// A service served through hyper alone, its connections closed after `idle` with no request
/// under way.
#[derive(Clone)]
pub(crate) struct OnHyper<S> {
    pub(crate) service: S,
    pub(crate) idle: Duration,
}

impl<S: HandlesIncoming> Connections for OnHyper<S> {
    fn serve<I>(
        self,
        io: I,
        protocol: Protocol,
        info: ConnectionInfo,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        serve_hyper_told(io, self.service, protocol, self.idle, info)
    }
}

/// A service whose HTTP/1.1 connections are served on the fast path ([`fast::serve`]: its
/// plain lane answering `posts`, when given; hyper past the first request it does not
/// take), and the rest (HTTP/2, connections with a client certificate, every connection
/// when `on` is false) through hyper.
pub(crate) struct Fast<S, P> {
    pub(crate) service: S,
    pub(crate) posts: Option<Arc<P>>,
    pub(crate) on: bool,
}

impl<S: Clone, P> Clone for Fast<S, P> {
    fn clone(&self) -> Self {
        Fast {
            service: self.service.clone(),
            posts: self.posts.clone(),
            on: self.on,
        }
    }
}

impl<S: HandlesWhole, P: Posts> Connections for Fast<S, P> {
    fn serve<I>(
        self,
        io: I,
        protocol: Protocol,
        info: ConnectionInfo,
    ) -> impl Future<Output = Result<(), ConnectionError>> + Send + 'static
    where
        I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
    {
        type Boxed = Pin<Box<dyn Future<Output = Result<(), ConnectionError>> + Send>>;
        // The certificate reaches the authenticator through hyper's requests (the fast path
        // keeps a caller per credential header, not per certificate).
        if self.on && protocol == Protocol::Http1 && info.certificate.is_none() {
            tokio_util::either::Either::Left(fast::serve(io, self.service, self.posts, info))
        } else {
            let idle = self.service.endpoint().idle_connection();
            // Boxed: an HTTP/1.1 connection's task is not sized for HTTP/2's state.
            let hyper = serve_hyper_told(io, self.service, protocol, idle, info);
            tokio_util::either::Either::Right(Box::pin(hyper) as Boxed)
        }
    }
}

/// Serves `connections` on every connection accepted on `listener` as `how` says (on TCP,
/// HTTP/1.1 or HTTP/2 with prior knowledge, told from the first bytes; on TLS, as ALPN
/// chose, a client certificate verified under mutual TLS told to every request of its
/// connection), until the future is dropped.
pub(crate) async fn listen<C: Connections>(
    listener: tokio::net::TcpListener,
    how: Listen,
    connections: C,
) {
    let (idle, reported) = (how.idle, how.reported);
    accept_loop(
        listener,
        how.max_connections,
        move |stream, peer, permit| {
            let connections = connections.clone();
            #[cfg(feature = "tls")]
            let tls = how.tls.clone();
            tokio::spawn(async move {
                #[cfg(feature = "tls")]
                if let Some((tls, timeout)) = tls {
                    let (stream, certificate) = match tls.accept(stream, timeout).await {
                        Ok(accepted) => accepted,
                        Err(e) => {
                            tracing::debug!(%peer, error = %e, "TLS handshake failed");
                            return;
                        }
                    };
                    let protocol = Protocol::from_alpn(stream.get_ref().1.alpn_protocol());
                    let info = ConnectionInfo {
                        peer: Some(peer),
                        certificate: certificate.map(Arc::new),
                    };
                    // A task of its own: it holds only the connection's state, not the handshake's.
                    tokio::spawn(accepted(
                        connections,
                        stream,
                        protocol,
                        info,
                        permit,
                        reported,
                    ));
                    return;
                }
                let protocol = match is_h2(&stream, idle).await {
                    Some(true) => Protocol::Http2,
                    Some(false) => Protocol::Http1,
                    None => return,
                };
                // A task of its own: it holds only that protocol's state, not the sniffing's.
                let info = ConnectionInfo::of_peer(Some(peer));
                tokio::spawn(accepted(
                    connections,
                    stream,
                    protocol,
                    info,
                    permit,
                    reported,
                ));
            });
        },
    )
    .await;
}

/// One connection an accept loop took, served by `connections` while it holds its slot.
fn accepted<C, I>(
    connections: C,
    io: I,
    protocol: Protocol,
    info: ConnectionInfo,
    permit: OwnedSemaphorePermit,
    reported: bool,
) -> impl Future<Output = ()> + Send
where
    C: Connections,
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let peer = info.peer;
    let reported = reported.then(|| ConnectionScope::open_on(crate::transport::HTTP, peer));
    // Boxed and awaited in place: an `async` block that moved it into its `.await` would hold
    // it twice.
    let connection = Box::pin(connections.serve(io, protocol, info));
    let (scope, span) = match reported {
        Some((scope, span)) => (Some(scope), span),
        None => (None, tracing::Span::none()),
    };
    Accepted {
        connection,
        span,
        held: Some((scope, permit)),
        peer,
        protocol,
    }
}

/// A connection [`accepted`] serves: its span (when reported) is the parent of its calls' and
/// batches' spans ([`telemetry::ConnectionParent`]), not entered on each poll (which cost
/// about 1 300 instructions a call while spans are listened to, sampled or not).
struct Accepted<F> {
    connection: Pin<Box<F>>,
    span: tracing::Span,
    /// Its count among the open connections and its slot, let go when it ends.
    held: Option<(Option<ConnectionScope>, OwnedSemaphorePermit)>,
    peer: Option<std::net::SocketAddr>,
    protocol: Protocol,
}

impl<F: Future<Output = Result<(), ConnectionError>>> Future for Accepted<F> {
    type Output = ();

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = self.get_mut();
        let ended = {
            let _parent = telemetry::ConnectionParent::hold(&this.span);
            this.connection.as_mut().poll(cx)
        };
        let Poll::Ready(ended) = ended else {
            return Poll::Pending;
        };
        if let Err(e) = ended {
            let (peer, protocol) = (this.peer, this.protocol);
            this.span.in_scope(|| {
                tracing::debug!(?peer, error = %e, ?protocol, "HTTP connection ended with an error");
            });
        }
        this.held = None;
        Poll::Ready(())
    }
}

/// The first bytes of an HTTP/2 connection with prior knowledge.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Accepts connections on `listener` and hands each to `start` with a permit held while it
/// lives: at most `max_connections` are open at once, and at the limit new clients wait in
/// the backlog. A failed accept (out of file descriptors, say) is logged and retried after
/// 50 ms.
pub(crate) async fn accept_loop(
    listener: tokio::net::TcpListener,
    max_connections: usize,
    start: impl Fn(tokio::net::TcpStream, std::net::SocketAddr, tokio::sync::OwnedSemaphorePermit),
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(max_connections));
    loop {
        let Ok(permit) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        start(stream, peer, permit);
    }
}

/// Whether the connection starts with the HTTP/2 preface (`None`: it closed first, or sent
/// nothing within `idle`, and is closed).
pub(crate) async fn is_h2(stream: &tokio::net::TcpStream, idle: Duration) -> Option<bool> {
    let sniff = async {
        let mut buf = [0u8; 24];
        for _ in 0..1000 {
            let n = stream.peek(&mut buf).await.ok()?;
            if n == 0 {
                return None;
            }
            if buf[..n] != H2_PREFACE[..n] {
                return Some(false);
            }
            if n == H2_PREFACE.len() {
                return Some(true);
            }
            // Part of the preface so far: wait for the rest.
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Some(false)
    };
    match tokio::time::timeout(idle, sniff).await {
        Ok(h2) => h2,
        Err(_) => {
            tracing::debug!("a connection sent nothing in time: closed");
            None
        }
    }
}

/// Serves `service` on every connection accepted on `listener` (HTTP/1.1 with keep-alive and
/// upgrades, and HTTP/2 with prior knowledge, told from the first bytes), all through hyper,
/// at most `max_connections` at once (more wait in the listen backlog), until the future is
/// dropped. A connection with no request under way (on HTTP/2: no stream; an open event
/// stream counts as one) is closed after `idle`, which also bounds a request's head.
pub async fn serve_hyper<S: HandlesIncoming>(
    listener: tokio::net::TcpListener,
    service: S,
    max_connections: usize,
    idle: Duration,
) {
    let how = Listen::tcp(max_connections, idle);
    listen(listener, how, OnHyper { service, idle }).await;
}

/// [`serve_hyper`] over TLS (feature `tls`): each connection's handshake within
/// `handshake_timeout`, HTTP/2 or HTTP/1.1 as ALPN chose, at most `max_connections` at once.
#[cfg(feature = "tls")]
pub async fn serve_hyper_tls<S: HandlesIncoming>(
    listener: tokio::net::TcpListener,
    service: S,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
    max_connections: usize,
    idle: Duration,
) {
    let how = Listen {
        tls: Some((tls, handshake_timeout)),
        ..Listen::tcp(max_connections, idle)
    };
    listen(listener, how, OnHyper { service, idle }).await;
}

/// Serves `service` on every connection accepted on `listener` until dropped: HTTP/1.1
/// connections on the crate's fast path, each request read whole and answered with
/// [`HandlesWhole::handle_whole`] (handed to hyper at the first request it does not take),
/// HTTP/2 through hyper; at most [`Endpoint::max_connections`] at once, each closed after
/// [`Endpoint::idle_connection`] with no request under way.
///
/// [`Endpoint::max_connections`]: crate::profile::Endpoint::max_connections
/// [`Endpoint::idle_connection`]: crate::profile::Endpoint::idle_connection
pub async fn serve_profile<S: HandlesWhole>(listener: tokio::net::TcpListener, service: S) {
    let endpoint = service.endpoint();
    let how = Listen::tcp(endpoint.max_connections(), endpoint.idle_connection());
    let posts = None::<Arc<fast::NoPosts>>;
    listen(
        listener,
        how,
        Fast {
            service,
            posts,
            on: true,
        },
    )
    .await;
}
