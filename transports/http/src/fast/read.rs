//! Reading on the fast path: a request's head (within the idle time, then the head's own
//! time), its body, the socket while a request is answered (to see the client leave, and keep
//! what it pipelines), and the bytes already read handed to hyper with the connection.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use super::limits::{KEEP, MAX_HEAD};

/// Reads more into `buf` (at least one byte, or `Ok(false)` at the end of the stream);
/// `Err(TimedOut)` past `deadline`.
async fn fill<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    deadline: Instant,
) -> io::Result<bool> {
    if buf.capacity() - buf.len() < 512 {
        buf.reserve(KEEP.max(buf.len()));
    }
    let n = match tokio::time::timeout_at(deadline, stream.read_buf(buf)).await {
        Ok(n) => n?,
        Err(_) => return Err(io::ErrorKind::TimedOut.into()),
    };
    Ok(n > 0)
}

pin_project_lite::pin_project! {
    /// `answer`'s reply, or `None` when the client closes its side of the connection (or the
    /// connection fails) first. Bytes read meanwhile are appended to `early`, which stops being
    /// read once it holds [`MAX_HEAD`] bytes; when it is full it grows by `R::BYTES` at a
    /// time.
    ///
    /// The call is polled first, and the socket read only while it waits: a call answered at
    /// once (a handler that does not wait) adds no system call. A future written out rather
    /// than an `async fn`: that would hold the call's future twice (its argument and the pinned
    /// copy), and the call pinned beside a `select!` made the connection's future, which every
    /// idle connection keeps, a third larger; this one takes the awaited call's place.
    pub(crate) struct UnlessClosed<'a, I, F, R> {
        pub(crate) stream: &'a mut I,
        #[pin]
        pub(crate) answer: F,
        pub(crate) early: &'a mut Vec<u8>,
        pub(crate) room: std::marker::PhantomData<R>,
    }
}

/// How much [`UnlessClosed`] reserves in its buffer at a time.
pub(crate) trait Room {
    /// The bytes reserved when the buffer is (nearly) full.
    const BYTES: usize;
}

/// [`KEEP`] at a time: the fast path, where a wait is short and pipelined requests likely.
pub(crate) struct Keep;

impl Room for Keep {
    const BYTES: usize = KEEP;
}

impl<I, F, R> Future for UnlessClosed<'_, I, F, R>
where
    I: AsyncRead + Unpin,
    F: Future,
    R: Room,
{
    type Output = Option<F::Output>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<F::Output>> {
        let this = self.project();
        if let Poll::Ready(reply) = this.answer.poll(cx) {
            return Poll::Ready(Some(reply));
        }
        while this.early.len() < MAX_HEAD {
            // Room for a few requests per read (a `Vec` alone would offer 64 bytes).
            if this.early.capacity() - this.early.len() < R::BYTES.min(512) {
                this.early.reserve(R::BYTES);
            }
            match tokio_util::io::poll_read_buf(Pin::new(&mut **this.stream), cx, *this.early) {
                Poll::Pending => break,
                Poll::Ready(Ok(0) | Err(_)) => return Poll::Ready(None),
                Poll::Ready(Ok(_)) => {}
            }
        }
        Poll::Pending
    }
}

/// Reads more of the next request's head into `buf`: while it is empty, as [`wait_idle`]
/// (the connection idle until `idle_end`); once part of a head is in, by the head's deadline
/// (set in `head_since` when its first bytes came, `timeout` later). `Ok(false)`: close the
/// connection (the peer closed, or was too slow).
pub(crate) async fn read_head<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    timer: Pin<&mut tokio::time::Sleep>,
    idle_end: Instant,
    head_since: &mut Option<Instant>,
    timeout: Duration,
) -> io::Result<bool> {
    let read = if buf.is_empty() {
        wait_idle(stream, buf, timer, idle_end).await
    } else {
        let deadline = *head_since.get_or_insert_with(|| Instant::now() + timeout);
        fill(stream, buf, deadline).await
    };
    match read {
        Ok(more) => Ok(more),
        Err(e) if e.kind() == io::ErrorKind::TimedOut => {
            tracing::debug!(parent: rpcwire_telemetry::span_parent(), "no request, or not its whole head, in time: closed");
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// How reading a request's body ended.
pub(crate) enum BodyRead {
    /// The buffer holds it.
    Whole,
    /// The peer closed first.
    Closed,
    /// It did not come by its deadline.
    TooSlow,
}

/// Reads until `buf` holds `total` bytes (a head and its body), by `deadline`.
pub(crate) async fn read_body<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    total: usize,
    deadline: Instant,
) -> io::Result<BodyRead> {
    while buf.len() < total {
        buf.reserve(total - buf.len());
        match fill(stream, buf, deadline).await {
            Ok(true) => {}
            Ok(false) => return Ok(BodyRead::Closed),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => return Ok(BodyRead::TooSlow),
            Err(e) => return Err(e),
        }
    }
    Ok(BodyRead::Whole)
}

/// Reads the first bytes of the next request into the empty `buf` (`Ok(false)` at the end of
/// the stream); `Err(TimedOut)` once `end` has passed with nothing read. `timer` is the
/// connection's idle timer: it fires at or before `end` (it was set for an earlier idle
/// period), and is moved to `end` only then.
async fn wait_idle<I: AsyncRead + Unpin>(
    stream: &mut I,
    buf: &mut Vec<u8>,
    mut timer: Pin<&mut tokio::time::Sleep>,
    end: Instant,
) -> io::Result<bool> {
    buf.reserve(KEEP);
    loop {
        tokio::select! {
            biased;
            n = stream.read_buf(buf) => return Ok(n? > 0),
            () = &mut timer => {
                if Instant::now() >= end {
                    return Err(io::ErrorKind::TimedOut.into());
                }
                timer.as_mut().reset(end);
            }
        }
    }
}

/// What the socket is read into, a little at a time, while a whole request is answered or a
/// response streams: enough to see the client close, or to keep a pipelined request.
pub(crate) struct Streaming;

impl Room for Streaming {
    const BYTES: usize = 64;
}

/// The connection, with bytes already read from it served first: what hyper reads when the
/// fast path hands a connection over.
pub(crate) struct Rewind<I> {
    read: Bytes,
    io: I,
}

impl<I> Rewind<I> {
    pub(crate) fn new(read: Vec<u8>, io: I) -> Self {
        Rewind {
            read: Bytes::from(read),
            io,
        }
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Rewind<I> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read.has_remaining() {
            let n = this.read.len().min(buf.remaining());
            buf.put_slice(&this.read[..n]);
            this.read.advance(n);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Rewind<I> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}
