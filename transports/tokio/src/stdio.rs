//! This process's stdin and stdout as async streams.
//!
//! tokio's `stdin()` and `stdout()` hand every read and write to a blocking thread (a file
//! descriptor may be a terminal or a regular file, which epoll cannot watch): two thread
//! hand-offs per read and per write, which cost more than the JSON-RPC work when a peer
//! pipelines small messages. So on unix each kind of descriptor is served on the runtime's own
//! threads wherever it can be:
//!
//! - a **pipe** (MCP hosts, language clients, shells) through tokio's pipe support, which sets
//!   it non-blocking and waits for readiness on the event loop;
//! - a **socket** (inetd-style launchers, `socat`, a test harness's socket pair) the same way,
//!   as a non-blocking stream registered with the event loop;
//! - a **regular file** (`rpcwire serve < requests.ndjson`, `> answers.ndjson`) read and
//!   written in place: epoll refuses regular files, and a read of one never waits for a peer,
//!   only for the page cache or the disk, as a pipe that is always ready would. No thread
//!   hand-off per chunk.
//!
//! Anything else (a terminal, a character device, a platform without unix descriptors) keeps
//! tokio's blocking-thread streams: a terminal must not be set non-blocking under the shell
//! that shares it.

use tokio::io::{AsyncRead, AsyncWrite};

/// A boxed stream half.
pub(crate) type Reader = Box<dyn AsyncRead + Unpin + Send>;
/// A boxed stream half.
pub(crate) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout, each on the runtime's threads where its kind allows.
pub(crate) fn streams() -> (Reader, Writer) {
    let reader = native::reader().unwrap_or_else(|| Box::new(tokio::io::stdin()));
    let writer = native::writer().unwrap_or_else(|| Box::new(tokio::io::stdout()));
    (reader, writer)
}

#[cfg(unix)]
mod native {
    use super::{Reader, Writer};
    use std::fs::File;
    use std::io::{self, Read, Write};
    use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
    use std::os::unix::fs::FileTypeExt;
    use std::pin::Pin;
    use std::task::{Context, Poll};
    use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

    /// What a descriptor is, as far as serving it goes.
    enum Kind {
        Pipe,
        Socket,
        File,
        Other,
    }

    /// A private duplicate of `fd` (the process's own stdin or stdout stays open) and its kind.
    fn open(fd: BorrowedFd<'_>) -> Option<(OwnedFd, Kind)> {
        let owned = fd.try_clone_to_owned().ok()?;
        let file_type = File::from(owned.try_clone().ok()?)
            .metadata()
            .ok()?
            .file_type();
        let kind = if file_type.is_fifo() {
            Kind::Pipe
        } else if file_type.is_socket() {
            Kind::Socket
        } else if file_type.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Some((owned, kind))
    }

    /// A socket of any family as a non-blocking stream on the event loop. tokio's Unix stream
    /// type serves: its reads and writes are `recv` and `send` with no flags, which every
    /// stream socket answers alike (TCP included), and its shutdown half-closes the socket.
    fn socket(fd: OwnedFd) -> Option<tokio::net::UnixStream> {
        let stream = std::os::unix::net::UnixStream::from(fd);
        stream.set_nonblocking(true).ok()?;
        tokio::net::UnixStream::from_std(stream).ok()
    }

    /// stdin on the runtime's threads, or `None` for tokio's blocking-thread stdin.
    pub(super) fn reader() -> Option<Reader> {
        let (fd, kind) = open(io::stdin().as_fd())?;
        match kind {
            // `from_file` refuses anything that is not a FIFO.
            Kind::Pipe => tokio::net::unix::pipe::Receiver::from_file(File::from(fd))
                .ok()
                .map(|r| Box::new(r) as Reader),
            Kind::Socket => socket(fd).map(|s| Box::new(s) as Reader),
            Kind::File => Some(Box::new(InPlace(File::from(fd)))),
            Kind::Other => None,
        }
    }

    /// stdout on the runtime's threads, or `None` for tokio's blocking-thread stdout.
    pub(super) fn writer() -> Option<Writer> {
        let (fd, kind) = open(io::stdout().as_fd())?;
        match kind {
            Kind::Pipe => tokio::net::unix::pipe::Sender::from_file(File::from(fd))
                .ok()
                .map(|w| Box::new(w) as Writer),
            Kind::Socket => socket(fd).map(|s| Box::new(s) as Writer),
            Kind::File => Some(Box::new(InPlace(File::from(fd)))),
            Kind::Other => None,
        }
    }

    /// A regular file read and written in place, on the polling thread: every poll is ready
    /// (a regular file has no readiness to wait for), and the call returns once the kernel has
    /// copied the bytes.
    struct InPlace(File);

    impl AsyncRead for InPlace {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let n = loop {
                match self.0.read(buf.initialize_unfilled()) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other?,
                }
            };
            buf.advance(n);
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for InPlace {
        fn poll_write(
            mut self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
            buf: &[u8],
        ) -> Poll<io::Result<usize>> {
            Poll::Ready(loop {
                match self.0.write(buf) {
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    other => break other,
                }
            })
        }

        fn poll_flush(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(self.0.flush())
        }

        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }
}

#[cfg(not(unix))]
mod native {
    use super::{Reader, Writer};

    /// No unix descriptors: tokio's blocking-thread stdin.
    pub(super) fn reader() -> Option<Reader> {
        None
    }

    /// No unix descriptors: tokio's blocking-thread stdout.
    pub(super) fn writer() -> Option<Writer> {
        None
    }
}
