//! In-memory byte pipes between whole messages and a stream driver (`rpcwire-tokio`'s): for
//! transports whose unit is a message (an HTTP body, a WebSocket message, a broker message)
//! that run a long-lived connection over them.
//!
//! The driver runs over any `AsyncRead + AsyncWrite`; here its input is one or more messages
//! and its output is cut back into messages. Both directions use `Content-Length`
//! framing, so a body may hold any JSON text (pretty-printed, with newlines) and every message
//! the driver writes comes out whole. The framing rules are the core's (`RxBuffer`).
//!
//! A long-lived connection runs over these with `Builder::run` (or `run_inline`), its framing
//! set to `Framing::ContentLength`: input from [`ChannelReader`] (bodies handed over with
//! [`send_body`]), output through [`FrameWriter`]. `rpcwire-http`'s GET event stream, its
//! WebSocket connections and its clients (and a profile's) use them; a message answered on
//! its own (a POST body) goes to the [`Responder`](crate::Responder), with no pipes. Nothing
//! here knows a transport: they moved here from `rpcwire-http`.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use bytes::{Buf, Bytes};
use rpcwire::wire::framing::{content_length_header, MAX_HEADER_LEN};
use rpcwire::wire::{FrameEvent, Framing, RxBuffer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::mpsc;
use tokio_util::sync::PollSender;

/// The `Content-Length` header that frames `body` for the driver.
fn frame_header(len: usize) -> Bytes {
    let mut header = [0u8; MAX_HEADER_LEN];
    Bytes::copy_from_slice(content_length_header(len, &mut header))
}

/// Moves as much of `from` as `buf` has room for; true when anything moved.
fn read_from(from: &mut Bytes, buf: &mut ReadBuf<'_>) -> bool {
    let n = from.len().min(buf.remaining());
    buf.put_slice(&from[..n]);
    from.advance(n);
    n > 0
}

/// Reads framed bodies from a channel, for a long-lived driver (a server's stream hub, a
/// client's session); end of stream when every sender is gone.
#[derive(Debug)]
pub struct ChannelReader {
    rx: mpsc::Receiver<Bytes>,
    /// The `Content-Length` header of the body being read, until it is read.
    header: Bytes,
    current: Bytes,
}

impl ChannelReader {
    /// Reads the bodies [`send_body`] puts on `rx`'s channel.
    pub fn new(rx: mpsc::Receiver<Bytes>) -> Self {
        ChannelReader {
            rx,
            header: Bytes::new(),
            current: Bytes::new(),
        }
    }
}

/// Sends one body into a [`ChannelReader`]; false when the reader is gone. One channel item
/// per body (the reader writes its header): senders on several threads at once cannot
/// interleave one body's header with another's body.
pub async fn send_body(tx: &mpsc::Sender<Bytes>, body: Bytes) -> bool {
    tx.send(body).await.is_ok()
}

impl AsyncRead for ChannelReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while !this.header.has_remaining() && !this.current.has_remaining() {
            match ready!(this.rx.poll_recv(cx)) {
                Some(body) => {
                    this.header = frame_header(body.len());
                    this.current = body;
                }
                None => return Poll::Ready(Ok(())),
            }
        }
        if this.header.has_remaining() {
            read_from(&mut this.header, buf);
        } else {
            read_from(&mut this.current, buf);
        }
        Poll::Ready(Ok(()))
    }
}
/// Hands a connection over whole messages ([`message_pipes`]) what it receives, one message
/// (one JSON text) at a time.
#[derive(Debug, Clone)]
pub struct Incoming(mpsc::Sender<Bytes>);

impl Incoming {
    /// Hands over one received message (one JSON text, any whitespace); waits while the
    /// connection's input is full. False once the connection has ended.
    pub async fn send(&self, message: impl Into<Bytes>) -> bool {
        send_body(&self.0, message.into()).await
    }
}

/// The pipes of a connection whose frames are whole messages (a broker's publish and
/// subscribe), each channel holding up to `capacity` messages (at least 1): the driver's
/// reader and writer (`Content-Length` framing, any JSON text goes in whole; `max_frame`: the
/// driver's own limit), what hands the reader the received messages, and what receives every
/// frame the writer sends, one JSON text each, in order.
pub fn message_pipes(
    capacity: usize,
    max_frame: usize,
) -> (ChannelReader, FrameWriter, Incoming, mpsc::Receiver<Bytes>) {
    let (in_tx, in_rx) = mpsc::channel(capacity.max(1));
    let (out_tx, outgoing) = mpsc::channel(capacity.max(1));
    let writer = FrameWriter::new(out_tx, max_frame);
    (ChannelReader::new(in_rx), writer, Incoming(in_tx), outgoing)
}

/// Cuts what the driver writes back into messages and sends each one on a bounded channel: a
/// reader that does not keep up (a slow HTTP client) makes the driver wait, never the memory
/// grow. End of the writer (shutdown or drop) closes the channel.
pub struct FrameWriter {
    rx: RxBuffer<Vec<u8>>,
    ready: VecDeque<Bytes>,
    tx: PollSender<Bytes>,
}

impl std::fmt::Debug for FrameWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FrameWriter")
            .field("ready", &self.ready.len())
            .finish_non_exhaustive()
    }
}

impl FrameWriter {
    /// Sends each message the driver writes on `tx`; `max_frame`: the driver's own limit (it
    /// never writes a larger message).
    pub fn new(tx: mpsc::Sender<Bytes>, max_frame: usize) -> Self {
        FrameWriter {
            rx: RxBuffer::with_storage(Vec::new(), Framing::ContentLength, max_frame),
            ready: VecDeque::new(),
            tx: PollSender::new(tx),
        }
    }

    /// Sends the messages cut so far; `Pending` while the channel is full.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while let Some(front) = self.ready.pop_front() {
            match self.tx.poll_reserve(cx) {
                Poll::Ready(Ok(())) => {
                    if self.tx.send_item(front).is_err() {
                        return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into()));
                    }
                }
                Poll::Ready(Err(_)) => return Poll::Ready(Err(io::ErrorKind::BrokenPipe.into())),
                Poll::Pending => {
                    self.ready.push_front(front);
                    return Poll::Pending;
                }
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for FrameWriter {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        let mut input = buf;
        while !input.is_empty() {
            let before = input.len();
            this.rx.push(&mut input);
            while let Some(event) = this.rx.next_frame() {
                if let FrameEvent::Frame(frame) = event {
                    this.ready.push_back(Bytes::copy_from_slice(frame));
                }
            }
            if input.len() == before {
                // The buffer is full without a frame: impossible for the driver's own output
                // (its frames fit its limit); refuse rather than spin.
                return Poll::Ready(Err(io::ErrorKind::InvalidData.into()));
            }
        }
        // Try to pass them on now; what does not fit waits for the next write or flush.
        if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.poll_drain(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.poll_drain(cx))?;
        self.tx.close();
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    /// Bodies sent from many tasks on several threads at once come out of the reader whole:
    /// every body exactly once, each behind its own header (two chunks per body let one
    /// body's header land before another's body).
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_senders_never_interleave_bodies() {
        const SENDERS: usize = 8;
        const EACH: usize = 200;
        let (tx, rx) = mpsc::channel(4);
        for s in 0..SENDERS {
            let tx = tx.clone();
            tokio::spawn(async move {
                for i in 0..EACH {
                    let body = format!(r#"{{"sender":{s},"i":{i},"pad":"{}"}}"#, "x".repeat(i));
                    assert!(send_body(&tx, Bytes::from(body)).await);
                }
            });
        }
        drop(tx);
        let mut stream = Vec::new();
        ChannelReader::new(rx)
            .read_to_end(&mut stream)
            .await
            .expect("reads");
        let mut frames = RxBuffer::with_storage(Vec::new(), Framing::ContentLength, 1 << 20);
        let mut input = stream.as_slice();
        let mut seen = std::collections::HashSet::new();
        while !input.is_empty() {
            frames.push(&mut input);
            while let Some(event) = frames.next_frame() {
                let FrameEvent::Frame(frame) = event else {
                    panic!("not a frame: {event:?}");
                };
                let v: serde_json::Value = serde_json::from_slice(frame).expect("a whole body");
                assert!(seen.insert((v["sender"].as_u64(), v["i"].as_u64())), "{v}");
            }
        }
        assert_eq!(seen.len(), SENDERS * EACH);
    }
}
