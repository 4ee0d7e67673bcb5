//! Servers: accept loops over TCP, TLS and Unix sockets. Each accepted connection's caller is
//! established by the service ([`Service::admit`](crate::Service::admit)) from what the
//! transport knows (the peer's address, the TLS client certificate), then the connection runs
//! in a driver task of its own under the server's connection limit.
//!
//! The loop itself ([`accept_loop`]: the service layer's, with the connection limit, the drain
//! and a failed accept retried, over a [`Listener`]) and the
//! TLS handshake in a task of its own ([`tls::spawn_handshake`](crate::tls::spawn_handshake))
//! are building blocks: `rpcwire-http`'s servers accept with them too.
//!
//! Every loop stops accepting when the service's [`Shutdown`] is triggered, and each
//! connection it started is counted in the drain until it ends.

use std::future::Future;
use std::sync::Arc;

pub use rpcwire_service::Slot;
use rpcwire_service::{Credentials, Shutdown};
use tokio::io::{AsyncRead, AsyncWrite};

use tokio::net::TcpListener;

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

/// Accepts connections on `listener` and hands each to `start` with a [`Slot`] it holds while
/// it lives: the service layer's [`accept_loop`](rpcwire_service::accept_loop) (the connection
/// limit, the drain, failed accepts retried) over the listener's `accept`.
pub async fn accept_loop<L: Listener>(
    listener: L,
    max_connections: usize,
    shutdown: &Shutdown,
    start: impl Fn(L::Stream, Option<std::net::SocketAddr>, Slot),
) {
    let listener = &listener;
    rpcwire_service::accept_loop(|| listener.accept(), max_connections, shutdown, start).await
}
