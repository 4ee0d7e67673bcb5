//! Servers: accept loops over TCP, TLS and Unix sockets. Each accepted connection's caller is
//! established by the service ([`Service::admit`](crate::Service::admit)) from what the
//! transport knows (the peer's address, the TLS client certificate), then the connection runs
//! in a driver task of its own under the server's connection limit.
//!
//! The loop itself ([`accept_loop`]: the connection limit, a failed accept retried) and the
//! TLS handshake in a task of its own ([`tls::spawn_handshake`](crate::tls::spawn_handshake))
//! are building blocks: `rpcwire-http`'s servers accept with them too.
//!
//! Every loop stops accepting when the service's [`Shutdown`] is triggered, and each
//! connection it started is counted in the drain until it ends.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rpcwire_service::{Credentials, Shutdown, Tracked};
use tokio::io::{AsyncRead, AsyncWrite};

use tokio::net::TcpListener;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::{transport, Builder, Caller, Identity};

/// A stream split into halves for its driver: the owned halves of a socket (no lock between
/// them), or `tokio::io::split`'s for any other stream.
trait IntoHalves: Send + 'static {
    type Read: AsyncRead + Unpin + Send + 'static;
    type Write: AsyncWrite + Unpin + Send + 'static;
    fn into_halves(self) -> (Self::Read, Self::Write);
    /// The local address the connection arrived at, where it has one (its calls' spans'
    /// `server.address`).
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        None
    }
}

impl IntoHalves for tokio::net::TcpStream {
    type Read = tokio::net::tcp::OwnedReadHalf;
    type Write = tokio::net::tcp::OwnedWriteHalf;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        tokio::net::TcpStream::local_addr(self).ok()
    }
}

#[cfg(unix)]
impl IntoHalves for tokio::net::UnixStream {
    type Read = tokio::net::unix::OwnedReadHalf;
    type Write = tokio::net::unix::OwnedWriteHalf;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        self.into_split()
    }
}

#[cfg(feature = "tls")]
impl IntoHalves for crate::tls::TlsStream<tokio::net::TcpStream> {
    type Read = tokio::io::ReadHalf<Self>;
    type Write = tokio::io::WriteHalf<Self>;
    fn into_halves(self) -> (Self::Read, Self::Write) {
        tokio::io::split(self)
    }
    fn local_addr(&self) -> Option<std::net::SocketAddr> {
        self.get_ref().0.local_addr().ok()
    }
}

/// A listener [`accept_loop`] takes connections from: TCP (Nagle off on each connection) and
/// Unix domain sockets.
pub trait Listener {
    /// A connection accepted.
    type Stream: AsyncRead + AsyncWrite + Unpin + Send + 'static;
    /// The next connection and its peer's address, where it has one.
    fn accept(
        &self,
    ) -> impl Future<Output = std::io::Result<(Self::Stream, Option<std::net::SocketAddr>)>> + Send;
}

impl Listener for TcpListener {
    type Stream = tokio::net::TcpStream;

    async fn accept(&self) -> std::io::Result<(Self::Stream, Option<std::net::SocketAddr>)> {
        let (stream, peer) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok((stream, Some(peer)))
    }
}

#[cfg(unix)]
impl Listener for tokio::net::UnixListener {
    type Stream = tokio::net::UnixStream;

    async fn accept(&self) -> std::io::Result<(Self::Stream, Option<std::net::SocketAddr>)> {
        let (stream, _) = tokio::net::UnixListener::accept(self).await?;
        Ok((stream, None))
    }
}

impl Builder {
    /// Serves every connection accepted on `listener`, each with its own driver and these
    /// settings. Runs until the future is dropped (connections already accepted go on) or the
    /// service's [`Shutdown`] is triggered (each connection then answers what it runs, refuses
    /// what arrives, and closes once idle). A client that half-closes still gets its answers;
    /// the server goes on accepting.
    ///
    /// ```no_run
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> std::io::Result<()> {
    /// let listener = tokio::net::TcpListener::bind("127.0.0.1:4000").await?;
    /// let router = Router::new().method("ping", |_: ()| async { Ok::<_, RpcError>("pong") });
    /// Builder::new().router(router).serve_tcp(listener).await;
    /// # Ok(()) }
    /// ```
    pub async fn serve_tcp(self, listener: TcpListener) {
        self.accept_loop(listener, |builder, stream, peer, permit| {
            builder.admit_and_serve(transport::TCP, stream, peer, None, permit);
        })
        .await
    }

    /// Serves every connection accepted on a Unix domain socket, as
    /// [`serve_tcp`](Builder::serve_tcp) does over TCP (callers have no network address:
    /// anonymous without an authenticator).
    ///
    /// ```no_run
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main]
    /// # async fn main() -> std::io::Result<()> {
    /// let listener = tokio::net::UnixListener::bind("/tmp/rpcwire.sock")?;
    /// let router = Router::new().method("ping", |_: ()| async { Ok::<_, RpcError>("pong") });
    /// Builder::new().router(router).serve_unix(listener).await;
    /// # Ok(()) }
    /// ```
    #[cfg(unix)]
    pub async fn serve_unix(self, listener: tokio::net::UnixListener) {
        self.accept_loop(listener, |builder, stream, peer, permit| {
            builder.admit_and_serve(transport::UNIX, stream, peer, None, permit);
        })
        .await
    }

    /// Serves JSON-RPC over TLS on every connection accepted on `listener` (feature `tls`),
    /// as [`serve_tcp`](Builder::serve_tcp) does over plain TCP. Each connection's handshake
    /// and authentication must finish within the service's
    /// [`handshake_timeout`](crate::Service::handshake_timeout); with mutual TLS the client's
    /// verified certificate is in its [`Caller`](Caller::certificate), and without an
    /// authenticator its subject is the caller's identity. Certificates reload as
    /// [`ServerTls`](crate::tls::ServerTls) says.
    #[cfg(feature = "tls")]
    pub async fn serve_tls(self, listener: TcpListener, tls: crate::tls::ServerTls) {
        self.accept_loop(listener, move |builder, stream, peer, permit| {
            let timeout = builder.service_ref().handshake_timeout_value();
            crate::tls::spawn_handshake(&tls, stream, peer, timeout, move |stream, certificate| {
                builder.admit_and_serve(transport::TLS, stream, peer, certificate, permit);
            });
        })
        .await
    }

    /// Accepts connections on `listener` under the connection limit, each handed to `serve`
    /// with the permit it holds until it ends; runs until dropped.
    async fn accept_loop<L, F>(self, listener: L, serve: F)
    where
        L: Listener,
        L::Stream: IntoHalves,
        F: Fn(Builder, L::Stream, Option<std::net::SocketAddr>, Slot),
    {
        let (limit, shutdown) = (self.max_connections, self.service_ref().shutdown_ref());
        accept_loop(listener, limit, &shutdown.clone(), |stream, peer, slot| {
            serve(self.clone(), stream, peer, slot)
        })
        .await
    }

    /// Establishes an accepted connection's caller ([`Service::admit`](crate::Service::admit):
    /// at once without an authenticator, else in a task of its own) and runs it.
    fn admit_and_serve<S>(
        self,
        transport: crate::Transport,
        stream: S,
        peer: Option<std::net::SocketAddr>,
        certificate: Option<rpcwire_service::PeerCertificate>,
        permit: Slot,
    ) where
        S: IntoHalves,
    {
        let fallback = self.caller.as_ref().map(|c| c.identity().clone());
        let fallback = move || fallback.unwrap_or_else(Identity::anonymous);
        let credentials = Credentials {
            certificate: certificate.as_ref(),
            ..Credentials::new(transport, peer)
        };
        // Without an authenticator nothing waits: no task beyond the connection's.
        if let Some(caller) = self
            .service_ref()
            .admit_at_once(&credentials, fallback.clone())
        {
            self.serve_accepted(caller, peer, stream, permit);
            return;
        }
        tokio::spawn(async move {
            let credentials = Credentials {
                certificate: certificate.as_ref(),
                ..Credentials::new(transport, peer)
            };
            if let Ok(caller) = self.service_ref().admit(credentials, fallback).await {
                self.serve_accepted(caller, peer, stream, permit);
            }
        });
    }

    /// Runs one connection a server accepted and admitted, in tasks of its own: its driver,
    /// and a small one that waits for it and then gives back its slot.
    fn serve_accepted<S>(
        mut self,
        caller: Caller,
        peer: Option<std::net::SocketAddr>,
        stream: S,
        permit: Slot,
    ) where
        S: IntoHalves,
    {
        let caller = match stream.local_addr() {
            Some(local) => caller.with_local(local),
            None => caller,
        };
        self.caller = Some(Arc::new(caller));
        let on_connect = self.on_connect.take();
        let shutdown = self.service_ref().shutdown_ref().clone();
        let (reader, writer) = stream.into_halves();
        let session = self.run(reader, writer);
        if let (Some(hook), Some(peer)) = (on_connect, peer) {
            (hook.0)(session.client().clone(), peer);
        }
        tokio::spawn(async move {
            match session.join_or_drain(&shutdown).await {
                Ok(()) => tracing::debug!(?peer, "connection ended"),
                Err(e) => tracing::debug!(?peer, error = %e, "connection failed"),
            }
            drop(permit);
        });
    }
}

/// How long a draining accept loop waits for the next connection of its listen backlog.
const BACKLOG_WAIT: Duration = Duration::from_millis(10);

/// What an accepted connection holds while it lives: its place under the connection limit,
/// and its count among the connections a drain waits for.
#[derive(Debug)]
pub struct Slot {
    _permit: OwnedSemaphorePermit,
    _tracked: Tracked,
}

/// Accepts connections on `listener` and hands each to `start` with a [`Slot`] it holds while
/// it lives: at most `max_connections` (at least 1) are open at once, and at the limit new
/// clients wait in the listen backlog (logged once per wait). A failed accept (out of file
/// descriptors, say) is logged and retried after 50 ms. Runs until dropped or until
/// `shutdown` is triggered: the connections already waiting in the listen backlog are then
/// handed on too (as slots allow), and the listener is closed. Connections handed on go on,
/// each counted in `shutdown`'s drain until its slot is dropped.
pub async fn accept_loop<L: Listener>(
    listener: L,
    max_connections: usize,
    shutdown: &Shutdown,
    start: impl Fn(L::Stream, Option<std::net::SocketAddr>, Slot),
) {
    let max_connections = max_connections.max(1);
    let slots = Arc::new(Semaphore::new(max_connections));
    let draining = shutdown.draining();
    tokio::pin!(draining);
    let slot = |permit| Slot {
        _permit: permit,
        _tracked: shutdown.track(),
    };
    loop {
        let next = async {
            let permit = match Arc::clone(&slots).try_acquire_owned() {
                Ok(permit) => permit,
                Err(_) => {
                    tracing::warn!(
                        limit = max_connections,
                        "connection limit reached: new connections wait until one ends"
                    );
                    // The semaphore is never closed.
                    Arc::clone(&slots).acquire_owned().await.ok()?
                }
            };
            match listener.accept().await {
                Ok((stream, peer)) => Some(Some((stream, peer, permit))),
                Err(e) => {
                    // Out of descriptors and the like: wait and go on.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    Some(None)
                }
            }
        };
        let accepted = tokio::select! {
            biased;
            () = &mut draining => {
                // Connections the kernel has completed are served (their requests refused),
                // not reset with the listener: those that come within a few milliseconds.
                while let Ok(permit) = Arc::clone(&slots).try_acquire_owned() {
                    let backlog = tokio::time::timeout(BACKLOG_WAIT, listener.accept()).await;
                    let Ok(Ok((stream, peer))) = backlog else { return };
                    start(stream, peer, slot(permit));
                }
                return;
            }
            accepted = next => accepted,
        };
        match accepted {
            Some(Some((stream, peer, permit))) => start(stream, peer, slot(permit)),
            Some(None) => {}
            None => return,
        }
    }
}
