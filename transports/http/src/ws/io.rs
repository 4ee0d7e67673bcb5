//! A WebSocket connection seen as a byte stream: the adapter that lets the tokio driver of
//! `rpcwire-tokio` run unchanged over WebSocket.
//!
//! Each inbound text message is handed to the driver as one `Content-Length`-framed block
//! (so a message may hold any JSON text, newlines included, and the core's framing decides
//! where it ends); each block the driver writes goes out as one text message. Control frames,
//! limits, keep-alive and the closing handshake are handled here, where the WebSocket
//! protocol lives.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use futures_util::{Sink, Stream};
use rpcwire::wire::framing::{content_length_header, parse_content_length, MAX_HEADER_LEN};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};
use tokio_tungstenite::tungstenite::error::{CapacityError, Error as WsError};
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::protocol::frame::{CloseFrame, Utf8Bytes};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::config::WsConfig;

/// The reason sent with close code 1003 when a binary message arrives.
pub(crate) const BINARY_REFUSED: &str =
    "binary messages are not accepted: send each JSON-RPC message or batch as a text message";

/// The longest header block the driver writes (`Content-Length: <u64>\r\n\r\n`, with room).
const MAX_TX_HEADER: usize = 128;

/// How long the closing handshake may take before the socket is dropped.
const CLOSE_LINGER: Duration = Duration::from_secs(2);

/// Keep-alive state: a ping after `interval` of silence, the peer dead if nothing at all
/// arrives within `timeout` of it.
struct Keepalive {
    interval: Duration,
    timeout: Duration,
    timer: Pin<Box<Sleep>>,
    /// When the last frame of any kind arrived.
    last_rx: Instant,
    /// When our unanswered ping went out.
    ping_sent: Option<Instant>,
}

/// Where the closing of the write side has got to.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Shutdown {
    Open,
    /// Close frame queued, being flushed.
    Closing,
    /// Close frame flushed; the TCP write side is being shut down.
    Finishing,
    /// Reading what the peer still sends until it closes, within [`CLOSE_LINGER`].
    Draining,
    Done,
}

/// A WebSocket stream as an `AsyncRead + AsyncWrite` byte stream of `Content-Length` frames.
pub(crate) struct WsIo<S> {
    ws: WebSocketStream<S>,
    // Read side: the block being handed to the driver.
    rx_head: [u8; MAX_HEADER_LEN],
    rx_head_len: usize,
    rx_head_pos: usize,
    rx_body: Utf8Bytes,
    rx_pos: usize,
    /// No more input (end of stream, close received or sent).
    read_done: bool,
    // Write side: the block the driver is writing.
    tx: Vec<u8>,
    /// The payload length once the header block is read.
    tx_need: Option<usize>,
    /// A complete message the sink had no room for yet.
    tx_ready: Option<String>,
    /// A close frame was sent or received: further output is dropped.
    closed: bool,
    keepalive: Option<Keepalive>,
    send_timeout: Duration,
    /// Armed while output waits for the peer to read.
    stall: Option<Pin<Box<Sleep>>>,
    stall_armed: bool,
    shutdown: Shutdown,
    linger: Option<Pin<Box<Sleep>>>,
}

fn invalid(msg: &'static str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg)
}

fn ws_io_error(e: WsError) -> io::Error {
    match e {
        WsError::Io(e) => e,
        other => io::Error::other(other),
    }
}

impl<S> WsIo<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    pub(crate) fn new(ws: WebSocketStream<S>, config: &WsConfig) -> Self {
        let now = Instant::now();
        let keepalive = config.ping_interval.map(|interval| Keepalive {
            interval,
            timeout: config.pong_timeout,
            timer: Box::pin(tokio::time::sleep_until(now + interval)),
            last_rx: now,
            ping_sent: None,
        });
        WsIo {
            ws,
            rx_head: [0; MAX_HEADER_LEN],
            rx_head_len: 0,
            rx_head_pos: 0,
            rx_body: Utf8Bytes::default(),
            rx_pos: 0,
            read_done: false,
            tx: Vec::new(),
            tx_need: None,
            tx_ready: None,
            closed: false,
            keepalive,
            send_timeout: config.send_timeout,
            stall: None,
            stall_armed: false,
            shutdown: Shutdown::Open,
            linger: None,
        }
    }

    /// Queues a close frame (once) and tries to flush it; what is left is flushed on
    /// shutdown. Input ends here.
    fn close_with(&mut self, cx: &mut Context<'_>, code: CloseCode, reason: &'static str) {
        self.read_done = true;
        if self.closed {
            return;
        }
        self.closed = true;
        tracing::debug!(code = u16::from(code), reason, "closing WebSocket");
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from_static(reason),
        };
        let ws = Pin::new(&mut self.ws);
        if ws.start_send(Message::Close(Some(frame))).is_ok() {
            let _ = Pin::new(&mut self.ws).poll_flush(cx);
        }
    }

    /// Sends a ping when the peer has been quiet for the interval; fails when it stayed quiet
    /// for the timeout after one.
    fn poll_keepalive(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        if self.closed {
            return Ok(());
        }
        let Some(ka) = self.keepalive.as_mut() else {
            return Ok(());
        };
        loop {
            if ka.timer.as_mut().poll(cx).is_pending() {
                return Ok(());
            }
            let now = Instant::now();
            match ka.ping_sent {
                Some(sent) if ka.last_rx < sent => {
                    tracing::debug!("WebSocket peer did not answer a ping: closing");
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "WebSocket peer did not answer a ping in time",
                    ));
                }
                _ => {
                    ka.ping_sent = None;
                    let due = ka.last_rx + ka.interval;
                    if due > now {
                        ka.timer.as_mut().reset(due);
                        continue;
                    }
                    // Only when the sink has room: a peer that does not read is handled by
                    // the send timeout.
                    if let Poll::Ready(Ok(())) = Pin::new(&mut self.ws).poll_ready(cx) {
                        if Pin::new(&mut self.ws)
                            .start_send(Message::Ping(Default::default()))
                            .is_ok()
                        {
                            let _ = Pin::new(&mut self.ws).poll_flush(cx);
                        }
                    }
                    ka.ping_sent = Some(now);
                    ka.timer.as_mut().reset(now + ka.timeout);
                }
            }
        }
    }

    /// Called when output waits for the peer: fails once it has waited the send timeout.
    fn poll_stall(&mut self, cx: &mut Context<'_>) -> io::Result<()> {
        let deadline = Instant::now() + self.send_timeout;
        let timer = self
            .stall
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        if !self.stall_armed {
            timer.as_mut().reset(deadline);
            self.stall_armed = true;
        }
        if timer.as_mut().poll(cx).is_ready() {
            tracing::debug!("WebSocket peer stopped reading: closing");
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "WebSocket peer did not read its messages within the send timeout",
            ));
        }
        Ok(())
    }

    /// Hands a complete message to the sink if it has room (`Pending` keeps it).
    fn poll_send_ready(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.tx_ready.is_none() {
            return Poll::Ready(Ok(()));
        }
        if self.closed {
            self.tx_ready = None;
            return Poll::Ready(Ok(()));
        }
        match Pin::new(&mut self.ws).poll_ready(cx) {
            Poll::Pending => {
                self.poll_stall(cx)?;
                return Poll::Pending;
            }
            Poll::Ready(Err(e)) => return Poll::Ready(self.sink_error(e)),
            Poll::Ready(Ok(())) => self.stall_armed = false,
        }
        if let Some(text) = self.tx_ready.take() {
            if let Err(e) = Pin::new(&mut self.ws).start_send(Message::text(text)) {
                return Poll::Ready(self.sink_error(e));
            }
        }
        Poll::Ready(Ok(()))
    }

    /// A sink error: after a close (ours or the peer's) output is dropped quietly; an I/O
    /// error ends the connection.
    fn sink_error(&mut self, e: WsError) -> io::Result<()> {
        match e {
            WsError::Io(e) => Err(e),
            WsError::ConnectionClosed | WsError::AlreadyClosed | WsError::Protocol(_) => {
                self.closed = true;
                self.tx_ready = None;
                Ok(())
            }
            other => Err(io::Error::other(other)),
        }
    }

    /// Takes the next inbound message, or ends the input.
    fn on_message(
        &mut self,
        cx: &mut Context<'_>,
        item: Option<Result<Message, WsError>>,
    ) -> io::Result<()> {
        if let Some(ka) = self.keepalive.as_mut() {
            ka.last_rx = Instant::now();
        }
        match item {
            Some(Ok(Message::Text(text))) => {
                self.rx_head_len = content_length_header(text.len(), &mut self.rx_head).len();
                self.rx_head_pos = 0;
                self.rx_body = text;
                self.rx_pos = 0;
            }
            Some(Ok(Message::Binary(_))) => {
                self.close_with(cx, CloseCode::Unsupported, BINARY_REFUSED)
            }
            Some(Ok(Message::Close(_))) | None => self.read_done = true,
            Some(Ok(Message::Ping(_) | Message::Pong(_) | Message::Frame(_))) => {}
            Some(Err(WsError::Capacity(CapacityError::MessageTooLong { .. }))) => {
                self.close_with(cx, CloseCode::Size, "message too large")
            }
            Some(Err(WsError::Capacity(_))) => {
                self.close_with(cx, CloseCode::Size, "frame too large")
            }
            Some(Err(WsError::Utf8(_))) => {
                self.close_with(cx, CloseCode::Invalid, "text message is not valid UTF-8")
            }
            Some(Err(WsError::Protocol(e))) => {
                tracing::debug!(error = %e, "WebSocket protocol error");
                self.close_with(cx, CloseCode::Protocol, "WebSocket protocol error")
            }
            Some(Err(WsError::ConnectionClosed | WsError::AlreadyClosed)) => self.read_done = true,
            Some(Err(e)) => return Err(ws_io_error(e)),
        }
        Ok(())
    }
}

impl<S> AsyncRead for WsIo<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.poll_keepalive(cx)?;
        let start = buf.filled().len();
        loop {
            if this.rx_head_pos < this.rx_head_len {
                let part = &this.rx_head[this.rx_head_pos..this.rx_head_len];
                let n = part.len().min(buf.remaining());
                buf.put_slice(&part[..n]);
                this.rx_head_pos += n;
            }
            if this.rx_head_pos == this.rx_head_len && this.rx_pos < this.rx_body.len() {
                let part = &this.rx_body.as_bytes()[this.rx_pos..];
                let n = part.len().min(buf.remaining());
                buf.put_slice(&part[..n]);
                this.rx_pos += n;
            }
            let in_block = this.rx_head_pos < this.rx_head_len || this.rx_pos < this.rx_body.len();
            if buf.remaining() == 0 || (in_block && buf.filled().len() > start) {
                return Poll::Ready(Ok(()));
            }
            if !in_block && !this.rx_body.is_empty() {
                // The whole message went to the driver: free it now.
                this.rx_body = Utf8Bytes::default();
                this.rx_pos = 0;
            }
            if this.read_done {
                return Poll::Ready(Ok(()));
            }
            match Pin::new(&mut this.ws).poll_next(cx) {
                Poll::Pending if buf.filled().len() > start => return Poll::Ready(Ok(())),
                Poll::Pending => return Poll::Pending,
                Poll::Ready(item) => this.on_message(cx, item)?,
            }
        }
    }
}

impl<S> AsyncWrite for WsIo<S>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        ready!(this.poll_send_ready(cx))?;
        if this.closed {
            return Poll::Ready(Ok(buf.len()));
        }
        let mut used = 0;
        while used < buf.len() {
            let rest = &buf[used..];
            match this.tx_need {
                None => {
                    // Header block: up to the blank line.
                    let before = this.tx.len();
                    let take = rest
                        .len()
                        .min(MAX_TX_HEADER + 4 - before.min(MAX_TX_HEADER));
                    this.tx.extend_from_slice(&rest[..take]);
                    match this.tx.windows(4).position(|w| w == b"\r\n\r\n") {
                        Some(at) => {
                            let end = at + 4;
                            used += end - before;
                            let need = parse_content_length(&this.tx[..at])
                                .ok_or_else(|| invalid("output block without Content-Length"))?;
                            this.tx.clear();
                            this.tx.reserve_exact(need);
                            this.tx_need = Some(need);
                        }
                        None if this.tx.len() > MAX_TX_HEADER => {
                            return Poll::Ready(Err(invalid("output header block too long")))
                        }
                        None => used += take,
                    }
                }
                Some(need) => {
                    let n = (need - this.tx.len()).min(rest.len());
                    this.tx.extend_from_slice(&rest[..n]);
                    used += n;
                }
            }
            if this.tx_need == Some(this.tx.len()) {
                this.tx_need = None;
                let payload = std::mem::take(&mut this.tx);
                let text = String::from_utf8(payload)
                    .map_err(|_| invalid("output message is not UTF-8"))?;
                this.tx_ready = Some(text);
                match this.poll_send_ready(cx) {
                    Poll::Ready(r) => r?,
                    // Keep it: the bytes were taken, and the next write waits for room.
                    Poll::Pending => return Poll::Ready(Ok(used)),
                }
            }
        }
        Poll::Ready(Ok(used))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_send_ready(cx))?;
        if this.closed && this.shutdown == Shutdown::Open {
            // A close frame may wait in the sink: push it out, errors after close ignored.
            return match Pin::new(&mut this.ws).poll_flush(cx) {
                Poll::Pending => {
                    this.poll_stall(cx)?;
                    Poll::Pending
                }
                Poll::Ready(_) => Poll::Ready(Ok(())),
            };
        }
        match Pin::new(&mut this.ws).poll_flush(cx) {
            Poll::Pending => {
                this.poll_stall(cx)?;
                Poll::Pending
            }
            Poll::Ready(r) => {
                this.stall_armed = false;
                Poll::Ready(r.or_else(|e| this.sink_error(e)))
            }
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            match this.shutdown {
                Shutdown::Open => {
                    ready!(this.poll_send_ready(cx))?;
                    this.shutdown = Shutdown::Closing;
                }
                Shutdown::Closing => {
                    // Sends our close frame (or the reply to the peer's) and flushes it.
                    match Pin::new(&mut this.ws).poll_close(cx) {
                        Poll::Pending => {
                            this.poll_stall(cx)?;
                            return Poll::Pending;
                        }
                        Poll::Ready(_) => {
                            this.closed = true;
                            this.shutdown = Shutdown::Finishing;
                            this.linger = Some(Box::pin(tokio::time::sleep(CLOSE_LINGER)));
                        }
                    }
                }
                Shutdown::Finishing => {
                    let raw = Pin::new(this.ws.get_mut());
                    match raw.poll_shutdown(cx) {
                        Poll::Pending => {
                            if let Some(linger) = this.linger.as_mut() {
                                if linger.as_mut().poll(cx).is_ready() {
                                    this.shutdown = Shutdown::Done;
                                    continue;
                                }
                            }
                            return Poll::Pending;
                        }
                        Poll::Ready(_) => this.shutdown = Shutdown::Draining,
                    }
                }
                Shutdown::Draining => {
                    // Read (and drop) what the peer still sends until it closes, so that
                    // closing with unread input does not reset the connection and lose the
                    // close frame on its way.
                    let mut scratch = [0u8; 512];
                    let mut rb = ReadBuf::new(&mut scratch);
                    match Pin::new(this.ws.get_mut()).poll_read(cx, &mut rb) {
                        Poll::Ready(Ok(())) if !rb.filled().is_empty() => continue,
                        Poll::Ready(_) => this.shutdown = Shutdown::Done,
                        Poll::Pending => {
                            let expired = this
                                .linger
                                .as_mut()
                                .is_none_or(|l| l.as_mut().poll(cx).is_ready());
                            if expired {
                                this.shutdown = Shutdown::Done;
                            } else {
                                return Poll::Pending;
                            }
                        }
                    }
                }
                Shutdown::Done => {
                    this.linger = None;
                    return Poll::Ready(Ok(()));
                }
            }
        }
    }
}
