//! A wire tap: wraps a reader or writer and prints every complete line that passes through,
//! with a prefix (`-->` for what we send, `<--` for what we receive).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// Longest line shown whole; longer ones are cut with a note.
const SHOW: usize = 4096;

/// Prints the lines of a byte stream as they pass.
#[derive(Debug)]
pub struct Tap<T> {
    inner: T,
    prefix: &'static str,
    line: Vec<u8>,
    /// Bytes of the current line not kept (beyond [`SHOW`]).
    cut: usize,
}

impl<T> Tap<T> {
    /// Wraps `inner`; lines are printed to stdout after `prefix`.
    pub fn new(inner: T, prefix: &'static str) -> Self {
        Tap {
            inner,
            prefix,
            line: Vec::new(),
            cut: 0,
        }
    }

    fn observe(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                let text = String::from_utf8_lossy(&self.line);
                let text = text.trim_end_matches('\r');
                if self.cut > 0 {
                    crate::outln!("{} {text}... ({} more bytes)", self.prefix, self.cut);
                } else {
                    crate::outln!("{} {text}", self.prefix);
                }
                self.line.clear();
                self.cut = 0;
            } else if self.line.len() < SHOW {
                self.line.push(b);
            } else {
                self.cut += 1;
            }
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tap<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.observe(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tap<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.observe(&buf[..n]);
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
