//! Async in-process streams (feature `tokio`): a connected pair implementing tokio's
//! [`AsyncRead`] and [`AsyncWrite`], for wiring two async components (a client and a server
//! driver, say) in one process. A thin wrapper over [`tokio::io::duplex`] that can also split
//! reads and writes into seeded random chunks, so frame reassembly is exercised
//! deterministically.
//!
//! ```
//! use tokio::io::{AsyncReadExt, AsyncWriteExt};
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! // Reads of 1..=2 bytes, writes of 1..=2 bytes, decided by seed 9.
//! let (mut a, mut b) = rpcwire_memory::channel::duplex_chunked(64, 9, 2);
//! a.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n").await.unwrap();
//! drop(a); // end of stream
//! let mut text = String::new();
//! b.read_to_string(&mut text).await.unwrap();
//! assert_eq!(text, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}\n");
//! # });
//! ```

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::vec::Vec;

use tokio::io::{AsyncRead, AsyncWrite, DuplexStream, ReadBuf};

use crate::SplitMix64;

/// Seeded chunk sizes.
#[derive(Debug)]
struct Chunker {
    rng: SplitMix64,
    max: usize,
    scratch: Vec<u8>,
}

impl Chunker {
    fn next(&mut self) -> usize {
        self.rng.range_inclusive(1, self.max as u64) as usize
    }
}

/// One end of a [`duplex`] pair.
#[derive(Debug)]
pub struct MemoryStream {
    inner: DuplexStream,
    chunks: Option<Chunker>,
}

/// Two connected ends; each direction buffers at most `capacity` bytes (writers wait while
/// it is full). Dropping an end ends the other's stream.
pub fn duplex(capacity: usize) -> (MemoryStream, MemoryStream) {
    let (a, b) = tokio::io::duplex(capacity.max(1));
    (
        MemoryStream {
            inner: a,
            chunks: None,
        },
        MemoryStream {
            inner: b,
            chunks: None,
        },
    )
}

/// Like [`duplex`], but every read and write moves a random `1..=max_chunk` bytes (at most),
/// decided by `seed`, so that frames arrive split (`max_chunk` 0 means 1).
pub fn duplex_chunked(
    capacity: usize,
    seed: u64,
    max_chunk: usize,
) -> (MemoryStream, MemoryStream) {
    let mut rng = SplitMix64::new(seed);
    let max = max_chunk.max(1);
    let (mut a, mut b) = duplex(capacity);
    for end in [&mut a, &mut b] {
        end.chunks = Some(Chunker {
            rng: rng.fork(),
            max,
            scratch: Vec::new(),
        });
    }
    (a, b)
}

impl MemoryStream {
    /// The underlying tokio duplex stream.
    pub fn into_inner(self) -> DuplexStream {
        self.inner
    }
}

impl AsyncRead for MemoryStream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let Some(chunks) = this.chunks.as_mut() else {
            return Pin::new(&mut this.inner).poll_read(cx, buf);
        };
        let n = chunks.next().min(buf.remaining());
        if n == 0 {
            return Poll::Ready(Ok(()));
        }
        chunks.scratch.resize(n, 0);
        let mut limited = ReadBuf::new(&mut chunks.scratch[..n]);
        match Pin::new(&mut this.inner).poll_read(cx, &mut limited) {
            Poll::Ready(Ok(())) => {
                buf.put_slice(limited.filled());
                Poll::Ready(Ok(()))
            }
            other => other,
        }
    }
}

impl AsyncWrite for MemoryStream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bytes: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let n = match this.chunks.as_mut() {
            Some(chunks) => chunks.next().min(bytes.len()),
            None => bytes.len(),
        };
        Pin::new(&mut this.inner).poll_write(cx, &bytes[..n])
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn chunked_reads_are_small_and_complete() {
        let (mut a, mut b) = duplex_chunked(16, 3, 4);
        let writer = tokio::spawn(async move {
            a.write_all(&[5u8; 300]).await.unwrap();
            a.shutdown().await.unwrap();
        });
        let mut total = 0;
        let mut buf = [0u8; 64];
        loop {
            let n = b.read(&mut buf).await.unwrap();
            if n == 0 {
                break;
            }
            assert!(n <= 4);
            assert!(buf[..n].iter().all(|&x| x == 5));
            total += n;
        }
        writer.await.unwrap();
        assert_eq!(total, 300);
    }
}
