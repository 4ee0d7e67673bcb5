//! Printing to stdout that ends quietly when stdout is closed.
//!
//! `println!` panics when stdout is a pipe whose reader has gone (`rpcwire demo | head -2`).
//! The command's output is then unwanted, so it stops quietly instead, with the exit code
//! a shell reports for a process ended by SIGPIPE.

use std::io::Write;

/// The exit code when stdout was closed by its reader: 128 + SIGPIPE (13), as a shell shows
/// for a program that SIGPIPE ended.
pub const EXIT_STDOUT_CLOSED: i32 = 141;

/// Writes formatted text to stdout. A closed stdout ends the process quietly with
/// [`EXIT_STDOUT_CLOSED`]; another write error ends it with a message and exit code 3.
pub fn write_stdout(args: std::fmt::Arguments<'_>) {
    let mut stdout = std::io::stdout().lock();
    if let Err(e) = stdout.write_fmt(args).and_then(|()| stdout.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(EXIT_STDOUT_CLOSED);
        }
        eprintln!("rpcwire: cannot write to stdout: {e}");
        std::process::exit(3);
    }
}

/// True when `e` says stdout's reader has gone (a broken pipe): the command then ends quietly
/// with [`EXIT_STDOUT_CLOSED`], whichever command it is and however it wrote (a line printed,
/// or a frame written by a server on `--stdio`, or by `bridge`).
pub fn is_stdout_closed(e: &std::io::Error) -> bool {
    e.kind() == std::io::ErrorKind::BrokenPipe
}

/// The exit code for a closed stdout ([`EXIT_STDOUT_CLOSED`]).
pub fn stdout_closed() -> std::process::ExitCode {
    std::process::ExitCode::from(EXIT_STDOUT_CLOSED as u8)
}

/// `print!` that ends quietly when stdout is closed (see [`write_stdout`]).
#[macro_export]
macro_rules! out {
    ($($arg:tt)*) => { $crate::out::write_stdout(format_args!($($arg)*)) };
}

/// `println!` that ends quietly when stdout is closed (see [`write_stdout`]).
#[macro_export]
macro_rules! outln {
    () => { $crate::out::write_stdout(format_args!("\n")) };
    ($($arg:tt)*) => { $crate::out::write_stdout(format_args!("{}\n", format_args!($($arg)*))) };
}

/// A writer that remembers whether a write found its reader gone (a broken pipe): the driver
/// takes a peer that leaves while it writes its last answers as an orderly end (right for a
/// socket), but stdout's reader going away is this command's [`EXIT_STDOUT_CLOSED`], stdin
/// ended or not.
pub struct Watched<W> {
    inner: W,
    closed: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl<W> Watched<W> {
    /// Watches `inner`; `closed` turns true at its first broken pipe.
    pub fn new(inner: W, closed: std::sync::Arc<std::sync::atomic::AtomicBool>) -> Self {
        Watched { inner, closed }
    }

    fn note<T>(
        &self,
        res: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        if let std::task::Poll::Ready(Err(e)) = &res {
            if is_stdout_closed(e) {
                self.closed
                    .store(true, std::sync::atomic::Ordering::Relaxed);
            }
        }
        res
    }
}

impl<W: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Watched<W> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let res = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.note(res)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let res = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.note(res)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let res = std::pin::Pin::new(&mut self.inner).poll_shutdown(cx);
        self.note(res)
    }
}

/// Serves `builder` on stdin and stdout until stdin ends and every answer is written: exit
/// code 0, or [`EXIT_STDOUT_CLOSED`] when stdout's reader went away (before or after stdin
/// ended), or `failed` with the error on stderr.
pub async fn serve_stdio(builder: rpcwire_tokio::Builder, failed: u8) -> std::process::ExitCode {
    let (reader, writer) = rpcwire_tokio::stdio_streams();
    let closed = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = Watched::new(writer, std::sync::Arc::clone(&closed));
    let session = builder
        .caller_if_unset(|| rpcwire_tokio::Caller::local(rpcwire_tokio::transport::STDIO))
        .run(reader, writer);
    let ended = session.join().await;
    if closed.load(std::sync::atomic::Ordering::Relaxed) {
        return stdout_closed();
    }
    match ended {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(rpcwire_tokio::DriverError::Io(e)) if is_stdout_closed(&e) => stdout_closed(),
        Err(e) => {
            eprintln!("rpcwire: {e}");
            std::process::ExitCode::from(failed)
        }
    }
}
