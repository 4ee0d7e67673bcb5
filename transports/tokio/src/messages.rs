//! A connection over whole messages instead of a byte stream, for message transports (a
//! broker's publish and subscribe): [`Builder::run_messages`].

use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use crate::{Builder, Framing, Session};

/// Bytes in flight between the driver and the message pumps.
const PIPE: usize = 64 << 10;

/// The message side of a connection started with [`Builder::run_messages`].
#[derive(Debug)]
pub struct Messages {
    /// Every frame the connection sends (a request, a notification, an answer, a batch), one
    /// JSON text each, in order. Ends when the connection ends.
    pub outgoing: mpsc::Receiver<Vec<u8>>,
    /// Hands the connection a received message (one JSON text). Dropping every sender ends the
    /// connection's input, as a peer closing its side does.
    pub incoming: mpsc::Sender<Vec<u8>>,
}

impl Builder {
    /// Starts a connection whose frames are whole messages: what it sends comes out of
    /// [`Messages::outgoing`], what it receives goes into [`Messages::incoming`], each channel
    /// holding up to `capacity` messages (a full one makes the other side wait). The
    /// connection's rules, limits and dispatcher are the same as over a stream (its framing
    /// is set here); a received message over the largest frame is dropped with the core's
    /// report, as an oversize line would be. Must be called inside a tokio runtime.
    ///
    /// ```
    /// use rpcwire_tokio::{Builder, Router, RpcError};
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    /// let (_session, mut messages) = Builder::new().router(router).run_messages(8);
    /// let request = "{\"jsonrpc\":\"2.0\",\n\"method\":\"add\",\"params\":[1,2],\"id\":7}";
    /// messages.incoming.send(request.as_bytes().to_vec()).await.unwrap();
    /// let answer = messages.outgoing.recv().await.unwrap();
    /// assert_eq!(answer, br#"{"jsonrpc":"2.0","result":3,"id":7}"#);
    /// # }
    /// ```
    pub fn run_messages(self, capacity: usize) -> (Session, Messages) {
        // The driver runs over an in-memory pipe with line framing: it writes one compact JSON
        // text per line, and a received message becomes one line.
        let (near, far) = tokio::io::duplex(PIPE);
        let (far_r, far_w) = tokio::io::split(far);
        let session = self.framing(Framing::Line).run(far_r, far_w);
        let (near_r, mut near_w) = tokio::io::split(near);
        let (out_tx, outgoing) = mpsc::channel(capacity.max(1));
        let (incoming, mut in_rx) = mpsc::channel::<Vec<u8>>(capacity.max(1));
        tokio::spawn(async move {
            // The driver's own frames: never longer than its largest frame.
            let mut lines = BufReader::new(near_r).split(b'\n');
            while let Ok(Some(frame)) = lines.next_segment().await {
                if out_tx.send(frame).await.is_err() {
                    break;
                }
            }
        });
        tokio::spawn(async move {
            while let Some(mut message) = in_rx.recv().await {
                // A raw line break in valid JSON is whitespace (it cannot stand inside a
                // string), so a space in its place keeps a pretty-printed message one line and
                // its meaning the same; invalid JSON stays invalid.
                for b in message.iter_mut().filter(|b| matches!(b, b'\n' | b'\r')) {
                    *b = b' ';
                }
                message.push(b'\n');
                if near_w.write_all(&message).await.is_err() {
                    return;
                }
            }
            // Every sender is gone: the driver reads the end of its input.
            let _ = near_w.shutdown().await;
        });
        (session, Messages { outgoing, incoming })
    }
}
