//! A connection over whole messages instead of a byte stream, for message transports (a
//! broker's publish and subscribe): [`Builder::run_messages`].

use bytes::Bytes;
use rpcwire_service::pipe::message_pipes;
pub use rpcwire_service::pipe::Incoming;
use tokio::sync::mpsc;

use crate::{Builder, Framing, Session};

/// The message side of a connection started with [`Builder::run_messages`].
#[derive(Debug)]
pub struct Messages {
    /// Every frame the connection sends (a request, a notification, an answer, a batch), one
    /// JSON text each, in order. Ends when the connection ends.
    pub outgoing: mpsc::Receiver<Bytes>,
    /// Hands the connection a received message (one JSON text). Dropping every clone ends the
    /// connection's input, as a peer closing its side does.
    pub incoming: Incoming,
}

impl Builder {
    /// Starts a connection whose frames are whole messages: what it sends comes out of
    /// [`Messages::outgoing`], what it receives goes into [`Messages::incoming`], each channel
    /// holding up to `capacity` messages (a full one makes the other side wait). The
    /// connection's rules, limits and dispatcher are the same as over a stream (its framing
    /// is set here); a received message over the largest frame is dropped with the core's
    /// report, as an oversize frame is on a stream. Must be called inside a tokio runtime.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    /// let (_session, mut messages) = Builder::new().router(router).run_messages(8);
    /// let request = "{\"jsonrpc\":\"2.0\",\n\"method\":\"add\",\"params\":[1,2],\"id\":7}";
    /// assert!(messages.incoming.send(request.as_bytes()).await);
    /// let answer = messages.outgoing.recv().await.unwrap();
    /// assert_eq!(answer, &br#"{"jsonrpc":"2.0","result":3,"id":7}"#[..]);
    /// # }
    /// ```
    pub fn run_messages(self, capacity: usize) -> (Session, Messages) {
        // The service layer's pipes between whole messages and a stream driver (as over HTTP
        // and WebSocket), `Content-Length` framing: any JSON text goes in whole.
        let (reader, writer, incoming, outgoing) = message_pipes(capacity, self.config().max_frame);
        let session = self.framing(Framing::ContentLength).run(reader, writer);
        (session, Messages { outgoing, incoming })
    }
}
