//! I/O objects of embedded-io 0.6 (feature `embedded-io-06`): a HAL that has not moved to
//! embedded-io 0.7 yet still runs the drivers, through the [`Io06`] wrapper.
//!
//! ```
//! # struct OldUart;
//! # impl embedded_io_06::ErrorType for OldUart { type Error = core::convert::Infallible; }
//! # impl embedded_io_06::Write for OldUart {
//! #     fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> { Ok(buf.len()) }
//! #     fn flush(&mut self) -> Result<(), Self::Error> { Ok(()) }
//! # }
//! use rpcwire::{Config, Instant};
//! use rpcwire_embedded_io::io06::Io06;
//! use rpcwire_embedded_io::Driver;
//!
//! // `OldUart` implements embedded_io 0.6's Read and Write.
//! let mut driver: Driver<_, _> = Driver::new(Io06(OldUart), || Instant::ZERO, Config::default());
//! driver.send_notification("booted", Some(&[1])).unwrap();
//! ```

use core::fmt;

use embedded_io::ErrorKind;
use embedded_io_06 as v06;

/// An embedded-io 0.6 I/O object seen through the embedded-io 0.7 traits (blocking, and with
/// feature `async` the async ones) that the drivers take.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Io06<T>(pub T);

/// An embedded-io 0.6 error as an embedded-io 0.7 one (0.7 asks for `core::error::Error`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Io06Error<E>(pub E);

impl<E: fmt::Debug> fmt::Display for Io06Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.0)
    }
}

impl<E: fmt::Debug> core::error::Error for Io06Error<E> {}

impl<E: v06::Error> embedded_io::Error for Io06Error<E> {
    fn kind(&self) -> ErrorKind {
        match self.0.kind() {
            v06::ErrorKind::NotFound => ErrorKind::NotFound,
            v06::ErrorKind::PermissionDenied => ErrorKind::PermissionDenied,
            v06::ErrorKind::ConnectionRefused => ErrorKind::ConnectionRefused,
            v06::ErrorKind::ConnectionReset => ErrorKind::ConnectionReset,
            v06::ErrorKind::ConnectionAborted => ErrorKind::ConnectionAborted,
            v06::ErrorKind::NotConnected => ErrorKind::NotConnected,
            v06::ErrorKind::AddrInUse => ErrorKind::AddrInUse,
            v06::ErrorKind::AddrNotAvailable => ErrorKind::AddrNotAvailable,
            v06::ErrorKind::BrokenPipe => ErrorKind::BrokenPipe,
            v06::ErrorKind::AlreadyExists => ErrorKind::AlreadyExists,
            v06::ErrorKind::InvalidInput => ErrorKind::InvalidInput,
            v06::ErrorKind::InvalidData => ErrorKind::InvalidData,
            v06::ErrorKind::TimedOut => ErrorKind::TimedOut,
            v06::ErrorKind::Interrupted => ErrorKind::Interrupted,
            v06::ErrorKind::Unsupported => ErrorKind::Unsupported,
            v06::ErrorKind::OutOfMemory => ErrorKind::OutOfMemory,
            v06::ErrorKind::WriteZero => ErrorKind::WriteZero,
            _ => ErrorKind::Other,
        }
    }
}

impl<T: v06::ErrorType> embedded_io::ErrorType for Io06<T> {
    type Error = Io06Error<T::Error>;
}

impl<T: v06::Read> embedded_io::Read for Io06<T> {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.0.read(buf).map_err(Io06Error)
    }
}

impl<T: v06::ReadReady> embedded_io::ReadReady for Io06<T> {
    fn read_ready(&mut self) -> Result<bool, Self::Error> {
        self.0.read_ready().map_err(Io06Error)
    }
}

impl<T: v06::Write> embedded_io::Write for Io06<T> {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.write(buf).map_err(Io06Error)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        self.0.flush().map_err(Io06Error)
    }
}

#[cfg(feature = "async")]
impl<T: embedded_io_async_06::Read> embedded_io_async::Read for Io06<T> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        self.0.read(buf).await.map_err(Io06Error)
    }
}

#[cfg(feature = "async")]
impl<T: embedded_io_async_06::Write> embedded_io_async::Write for Io06<T> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.0.write(buf).await.map_err(Io06Error)
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        self.0.flush().await.map_err(Io06Error)
    }
}
