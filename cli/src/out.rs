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
