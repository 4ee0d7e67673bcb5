//! The one error type of the load generator.

use std::fmt;
use std::io;

/// Why a measurement failed. Every variant names what was being done, so the runner can print
/// it as is.
#[derive(Debug)]
pub enum Error {
    /// A system call failed.
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: io::Error,
    },
    /// The server owed answers but sent nothing for [`crate::STALL`].
    Stalled {
        /// Which run stalled, and how far it got.
        what: String,
    },
    /// The server closed its side before every answer arrived.
    Closed {
        /// Which run, and how far it got.
        what: String,
    },
    /// An answer was not `result: 19` for a known, not yet answered id.
    BadResponse {
        /// What is wrong with it.
        reason: String,
        /// The line as received (cut to a readable length).
        line: String,
    },
    /// The server process misbehaved: it did not start, did not print its address, exited.
    Server(String),
}

impl Error {
    /// An [`Error::Io`] for `what`; a read timeout becomes [`Error::Stalled`], since the only
    /// timeouts set are the stall timeouts.
    pub fn io(what: impl Into<String>, source: io::Error) -> Error {
        let what = what.into();
        match source.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Error::Stalled { what },
            _ => Error::Io { what, source },
        }
    }

    /// An [`Error::BadResponse`] quoting at most 200 bytes of the line.
    pub fn bad(reason: impl Into<String>, line: &[u8]) -> Error {
        let cut = &line[..line.len().min(200)];
        Error::BadResponse {
            reason: reason.into(),
            line: String::from_utf8_lossy(cut).into_owned(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io { what, source } => write!(f, "{what}: {source}"),
            Error::Stalled { what } => write!(
                f,
                "{what}: the server sent nothing for {} s while answers were owed",
                crate::STALL.as_secs()
            ),
            Error::Closed { what } => write!(f, "{what}: the server closed before answering all"),
            Error::BadResponse { reason, line } => write!(f, "bad response ({reason}): {line}"),
            Error::Server(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}
