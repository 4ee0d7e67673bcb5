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
    current: Bytes,
}

impl ChannelReader {
    /// Reads the bodies [`send_body`] puts on `rx`'s channel.
    pub fn new(rx: mpsc::Receiver<Bytes>) -> Self {
        ChannelReader {
            rx,
            current: Bytes::new(),
        }
    }
}

/// Sends one body into a [`ChannelReader`] (header and body as two chunks, kept in order by
/// the single channel); false when the reader is gone.
pub async fn send_body(tx: &mpsc::Sender<Bytes>, body: Bytes) -> bool {
    match tx.reserve_many(2).await {
        Ok(mut permits) => {
            if let Some(p) = permits.next() {
                p.send(frame_header(body.len()));
            }
            if let Some(p) = permits.next() {
                p.send(body);
            }
            true
        }
        Err(_) => false,
    }
}

impl AsyncRead for ChannelReader {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        while !this.current.has_remaining() {
            match ready!(this.rx.poll_recv(cx)) {
                Some(chunk) => this.current = chunk,
                None => return Poll::Ready(Ok(())),
            }
        }
        read_from(&mut this.current, buf);
        Poll::Ready(Ok(()))
    }
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
