//! The accept loops every server of the crate runs (the JSON-RPC server's, a profile's), over
//! TCP and TLS: a bounded number of connections, each told its protocol (HTTP/2 with prior
//! knowledge from its first bytes, or ALPN), then served in a task of its own as [`Fast`]
//! says: on the HTTP/1.1 fast path, or through hyper. The loop and the TLS handshake are
//! `rpcwire-tokio`'s ([`rpcwire_tokio::accept_loop`], `tls::spawn_handshake`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use rpcwire_telemetry::{self as telemetry, ConnectionScope};
use rpcwire_tokio::Slot;
use tokio::io::{AsyncRead, AsyncWrite};

use crate::caller::{ConnectionInfo, LocalEnd};
use crate::fast::{self, Posts};
use crate::handles::HandlesWhole;
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

/// A service whose HTTP/1.1 connections are served on the fast path ([`fast::serve`]: its
/// plain lane answering `posts`, when given; hyper past the first request it does not
/// take), and the rest (HTTP/2, connections with a client certificate, every connection
/// when `on` is false) through hyper.
pub(crate) struct Fast<S, P> {
    pub(crate) service: S,
    pub(crate) posts: Option<Arc<P>>,
    pub(crate) on: bool,
}

impl<S> Fast<S, fast::NoPosts> {
    /// A profile's service: the fast path on, no plain lane.
    fn profile(service: S) -> Self {
        Fast {
            service,
            posts: None,
            on: true,
        }
    }
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

impl<S: HandlesWhole, P: Posts> Fast<S, P> {
    /// Serves one connection until it ends.
    pub(crate) fn serve<I>(
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
/// connection), until the future is dropped or the service's drain begins.
pub(crate) async fn listen<S: HandlesWhole, P: Posts>(
    listener: tokio::net::TcpListener,
    how: Listen,
    connections: Fast<S, P>,
) {
    let (idle, reported) = (how.idle, how.reported);
    let shutdown = connections.service.endpoint().shutdown().clone();
    rpcwire_tokio::accept_loop(
        listener,
        how.max_connections,
        &shutdown,
        move |stream, peer, permit| {
            let connections = connections.clone();
            let local = stream.local_addr().ok();
            #[cfg(feature = "tls")]
            if let Some((tls, timeout)) = &how.tls {
                rpcwire_tokio::tls::spawn_handshake(
                    tls,
                    stream,
                    peer,
                    *timeout,
                    move |stream, cert| {
                        let protocol = Protocol::from_alpn(stream.get_ref().1.alpn_protocol());
                        let info = ConnectionInfo {
                            peer,
                            end: LocalEnd::told(local, protocol == Protocol::Http2),
                            certificate: cert.map(Arc::new),
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
                    },
                );
                return;
            }
            tokio::spawn(async move {
                let protocol = match is_h2(&stream, idle).await {
                    Some(true) => Protocol::Http2,
                    Some(false) => Protocol::Http1,
                    None => return,
                };
                // A task of its own: it holds only that protocol's state, not the sniffing's.
                let info = ConnectionInfo {
                    end: LocalEnd::told(local, protocol == Protocol::Http2),
                    ..ConnectionInfo::of_peer(peer)
                };
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
fn accepted<S, P, I>(
    connections: Fast<S, P>,
    io: I,
    protocol: Protocol,
    info: ConnectionInfo,
    permit: Slot,
    reported: bool,
) -> impl Future<Output = ()> + Send
where
    S: HandlesWhole,
    P: Posts,
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
    held: Option<(Option<ConnectionScope>, Slot)>,
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
    listen(listener, how, Fast::profile(service)).await;
}

/// [`serve_profile`] over TLS (feature `tls`): each connection's handshake within
/// `handshake_timeout`, HTTP/2 or HTTP/1.1 as ALPN chose (HTTP/1.1 on the fast path unless
/// the connection has a client certificate, which reaches the service with each request
/// through hyper), the certificate reloaded as `tls` says.
#[cfg(feature = "tls")]
pub async fn serve_profile_tls<S: HandlesWhole>(
    listener: tokio::net::TcpListener,
    service: S,
    tls: rpcwire_tokio::tls::ServerTls,
    handshake_timeout: Duration,
) {
    let endpoint = service.endpoint();
    let how = Listen {
        tls: Some((tls, handshake_timeout)),
        ..Listen::tcp(endpoint.max_connections(), endpoint.idle_connection())
    };
    listen(listener, how, Fast::profile(service)).await;
}
