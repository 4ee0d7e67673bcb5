//! This process's stdin and stdout as async streams.
//!
//! tokio's `stdin()` and `stdout()` hand every read and write to a blocking thread (a file
//! descriptor may be a terminal or a regular file, which epoll cannot watch): two thread
//! hand-offs per read and per write, which cost more than the JSON-RPC work when a peer
//! pipelines small messages. When stdin or stdout is a pipe, as it is under MCP hosts, language
//! clients and shells, it is read and written in place, on the runtime's own event loop, through
//! tokio's pipe support (which sets the descriptor non-blocking). Anything else (a terminal, a
//! file, a socket) keeps tokio's blocking-thread streams.

use tokio::io::{AsyncRead, AsyncWrite};

/// A boxed stream half.
pub(crate) type Reader = Box<dyn AsyncRead + Unpin + Send>;
/// A boxed stream half.
pub(crate) type Writer = Box<dyn AsyncWrite + Unpin + Send>;

/// stdin and stdout, each on the event loop when it is a pipe.
pub(crate) fn streams() -> (Reader, Writer) {
    let reader: Reader = match pipe_reader() {
        Some(r) => Box::new(r),
        None => Box::new(tokio::io::stdin()),
    };
    let writer: Writer = match pipe_writer() {
        Some(w) => Box::new(w),
        None => Box::new(tokio::io::stdout()),
    };
    (reader, writer)
}

#[cfg(unix)]
fn pipe_reader() -> Option<tokio::net::unix::pipe::Receiver> {
    use std::os::fd::AsFd;
    let fd = std::io::stdin().as_fd().try_clone_to_owned().ok()?;
    // `from_file` refuses anything that is not a FIFO.
    tokio::net::unix::pipe::Receiver::from_file(std::fs::File::from(fd)).ok()
}

#[cfg(unix)]
fn pipe_writer() -> Option<tokio::net::unix::pipe::Sender> {
    use std::os::fd::AsFd;
    let fd = std::io::stdout().as_fd().try_clone_to_owned().ok()?;
    tokio::net::unix::pipe::Sender::from_file(std::fs::File::from(fd)).ok()
}

#[cfg(not(unix))]
fn pipe_reader() -> Option<tokio::io::Stdin> {
    None
}

#[cfg(not(unix))]
fn pipe_writer() -> Option<tokio::io::Stdout> {
    None
}
