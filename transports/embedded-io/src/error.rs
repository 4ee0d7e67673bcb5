//! Transport errors.

use core::fmt;

use rpcwire::SendError;

/// Why a driver operation failed.
///
/// Peer garbage is never an error (it is answered on the wire and reported as
/// [`Incoming::Problem`](crate::Incoming::Problem)); errors are transport failures and
/// refused commands. After an error the connection keeps its state: a driver may be polled
/// again once the transport recovers (for example after a UART overrun).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Error<E> {
    /// The I/O object failed.
    Io(E),
    /// The writer accepted no bytes of a non-empty buffer.
    WriteZero,
    /// The reader reported the end of the stream (`read` returned 0).
    Eof,
    /// The connection refused a request or notification (pending table full, frame too
    /// large, params not serializable, connection closed).
    Send(SendError),
}

impl<E> From<SendError> for Error<E> {
    fn from(e: SendError) -> Self {
        Error::Send(e)
    }
}

impl<E: fmt::Debug> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "I/O error: {e:?}"),
            Error::WriteZero => f.write_str("the writer accepted no bytes"),
            Error::Eof => f.write_str("end of stream"),
            Error::Send(e) => write!(f, "send refused: {e}"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for Error<E> {}

impl<E: embedded_io::Error> embedded_io::Error for Error<E> {
    fn kind(&self) -> embedded_io::ErrorKind {
        match self {
            Error::Io(e) => e.kind(),
            Error::WriteZero => embedded_io::ErrorKind::WriteZero,
            Error::Eof => embedded_io::ErrorKind::BrokenPipe,
            Error::Send(_) => embedded_io::ErrorKind::Other,
        }
    }
}
