//! # rpcwire-serial
//!
//! Host serial ports for rpcwire, opened by path and baud rate (`/dev/ttyUSB0`, `/dev/pts/3`,
//! `COM3`): [`open`] gives a blocking [`SerialPort`] that implements `std::io::{Read, Write}`
//! (with a read timeout) and the `embedded_io` traits, so the blocking
//! [`rpcwire_embedded_io::Driver`] runs a JSON-RPC connection over it exactly as on a
//! microcontroller. With the `tokio` feature, `open_async` gives a port that implements
//! tokio's `AsyncRead + AsyncWrite`, for rpcwire-tokio's driver.
//!
//! Built without libudev (`serialport` with default features off): opening by path needs no
//! port enumeration.
//!
//! ## Calling a device
//!
//! ```no_run
//! use std::time::Duration;
//! use rpcwire::{Config, Token};
//! use rpcwire_embedded_io::Incoming;
//!
//! let port = rpcwire_serial::open("/dev/ttyACM0", 115_200)?;
//! let mut driver = rpcwire_serial::driver(port, Config::default());
//! driver.send_request(Token(1), "sum", Some(&[1, 2, 4]), Some(Duration::from_secs(2)))?;
//! let mut answer = None;
//! while answer.is_none() {
//!     driver.poll(|_, item| match item {
//!         Incoming::Response(r) => answer = Some(r.outcome.map(|v| v.to_string()).map_err(|e| e.code)),
//!         Incoming::Event(e) => panic!("no answer: {e:?}"),
//!         _ => {}
//!     })?;
//!     std::thread::sleep(Duration::from_millis(1));
//! }
//! println!("{answer:?}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The crate's examples are a complete server and client: `cargo run -p rpcwire-serial
//! --example serve -- /dev/pts/3 115200` and `--example call -- /dev/pts/4 sum '[1,2,4]'`.

use std::fmt;
use std::io;
use std::time::Duration;

use rpcwire::{Config, Instant};

/// The read timeout of a port from [`open`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

/// Receive buffer bytes of a [`HostDriver`] (the longest inbound frame is 2 bytes less).
pub const HOST_RX: usize = 16 * 1024;
/// Transmit buffer bytes of a [`HostDriver`].
pub const HOST_TX: usize = 16 * 1024;
/// Batch-reply bytes of a [`HostDriver`].
pub const HOST_BATCH: usize = 8 * 1024;
/// Pending-request slots of a [`HostDriver`].
pub const HOST_PENDING: usize = 32;
/// In-flight inbound request slots of a [`HostDriver`].
pub const HOST_INFLIGHT: usize = 32;

/// The blocking rpcwire driver over a serial port, sized for a host.
pub type HostDriver = rpcwire_embedded_io::Driver<
    SerialPort,
    StdClock,
    rpcwire_embedded_io::Inline<HOST_TX, HOST_BATCH, HOST_PENDING, HOST_INFLIGHT>,
    HOST_RX,
>;

/// A port could not be opened or configured.
#[derive(Debug)]
pub struct Error {
    path: String,
    source: serialport::Error,
}

impl Error {
    /// The port's path.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The underlying serialport error.
    pub fn source_error(&self) -> &serialport::Error {
        &self.source
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "serial port {}: {}", self.path, self.source)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

impl From<Error> for io::Error {
    fn from(e: Error) -> io::Error {
        io::Error::from(e.source)
    }
}

/// A serial port opened by [`open`]: 8 data bits, no parity, one stop bit, no flow control.
///
/// `std::io::Read` returns `ErrorKind::TimedOut` when nothing arrives within the timeout;
/// `embedded_io::Read` instead waits until at least one byte arrives (as embedded-io
/// requires), and `embedded_io::ReadReady` says whether bytes are waiting, so
/// [`Driver::poll`](rpcwire_embedded_io::Driver::poll) never blocks.
pub struct SerialPort {
    inner: Box<dyn serialport::SerialPort>,
}

impl fmt::Debug for SerialPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SerialPort")
            .field("name", &self.inner.name())
            .field("baud", &self.inner.baud_rate().ok())
            .finish()
    }
}

/// Opens the serial port at `path` with `baud` bits per second, 8N1, no flow control, and a
/// read timeout of [`DEFAULT_TIMEOUT`].
pub fn open(path: &str, baud: u32) -> Result<SerialPort, Error> {
    serialport::new(path, baud)
        .timeout(DEFAULT_TIMEOUT)
        .data_bits(serialport::DataBits::Eight)
        .parity(serialport::Parity::None)
        .stop_bits(serialport::StopBits::One)
        .flow_control(serialport::FlowControl::None)
        .open()
        .map(|inner| SerialPort { inner })
        .map_err(|source| Error {
            path: path.to_owned(),
            source,
        })
}

/// A host-sized blocking driver over `port` ([`HostDriver`]), with a [`StdClock`] started now.
/// It is large (about 42 KiB), so it is boxed.
pub fn driver(port: SerialPort, config: Config) -> Box<HostDriver> {
    Box::new(HostDriver::new(port, StdClock::new(), config))
}

impl SerialPort {
    /// The read timeout of `std::io::Read`.
    pub fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        self.inner.set_timeout(timeout).map_err(io::Error::from)
    }

    /// The read timeout.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout()
    }

    /// Changes the baud rate.
    pub fn set_baud_rate(&mut self, baud: u32) -> io::Result<()> {
        self.inner.set_baud_rate(baud).map_err(io::Error::from)
    }

    /// The port's name, when known.
    pub fn name(&self) -> Option<String> {
        self.inner.name()
    }

    /// Bytes received and not yet read.
    pub fn bytes_to_read(&self) -> io::Result<u32> {
        self.inner.bytes_to_read().map_err(io::Error::from)
    }

    /// A second handle to the same port (for a reader thread and a writer thread).
    pub fn try_clone(&self) -> io::Result<SerialPort> {
        self.inner
            .try_clone()
            .map(|inner| SerialPort { inner })
            .map_err(io::Error::from)
    }

    /// The serialport handle, for settings this type does not wrap.
    pub fn inner_mut(&mut self) -> &mut dyn serialport::SerialPort {
        &mut *self.inner
    }
}

impl io::Read for SerialPort {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

impl io::Write for SerialPort {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl embedded_io::ErrorType for SerialPort {
    type Error = io::Error;
}

impl embedded_io::Read for SerialPort {
    /// Waits (in steps of the read timeout) until at least one byte arrives.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match io::Read::read(self, buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                            | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue
                }
                other => return other,
            }
        }
    }
}

impl embedded_io::ReadReady for SerialPort {
    fn read_ready(&mut self) -> io::Result<bool> {
        Ok(self.bytes_to_read()? > 0)
    }
}

impl embedded_io::Write for SerialPort {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        loop {
            match io::Write::write(self, buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock
                    ) =>
                {
                    continue
                }
                other => return other,
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        io::Write::flush(self)
    }
}

/// The host's monotonic clock for a driver: [`rpcwire::Instant`]s counted from when it was
/// made.
///
/// ```
/// use rpcwire_embedded_io::Clock;
/// let mut clock = rpcwire_serial::StdClock::new();
/// let a = clock.now();
/// assert!(clock.now() >= a);
/// ```
#[derive(Debug, Clone, Copy)]
pub struct StdClock {
    origin: std::time::Instant,
}

impl StdClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        StdClock {
            origin: std::time::Instant::now(),
        }
    }

    /// The `std` instant that an [`rpcwire::Instant`] of this clock stands for.
    pub fn to_std(&self, at: Instant) -> std::time::Instant {
        at.to_std(self.origin)
    }
}

impl Default for StdClock {
    fn default() -> Self {
        Self::new()
    }
}

impl rpcwire_embedded_io::Clock for StdClock {
    fn now(&mut self) -> Instant {
        Instant::from_std(self.origin, std::time::Instant::now())
    }
}

/// A serial port for tokio (feature `tokio`): `AsyncRead + AsyncWrite + Unpin`, the I/O
/// object rpcwire-tokio's driver takes.
#[cfg(feature = "tokio")]
pub type AsyncSerialPort = tokio_serial::SerialStream;

/// Opens a serial port for tokio (feature `tokio`), 8N1, no flow control. Call it inside a
/// tokio runtime (the port registers with its reactor).
#[cfg(feature = "tokio")]
pub fn open_async(path: &str, baud: u32) -> Result<AsyncSerialPort, Error> {
    let builder = serialport::new(path, baud)
        .data_bits(serialport::DataBits::Eight)
        .parity(serialport::Parity::None)
        .stop_bits(serialport::StopBits::One)
        .flow_control(serialport::FlowControl::None);
    tokio_serial::SerialStream::open(&builder).map_err(|source| Error {
        path: path.to_owned(),
        source,
    })
}

/// Discards the bytes a port from [`open_async`] has received and not yet read (feature
/// `tokio`): a tool that opens a port to make one call uses it first, so that a late answer
/// meant for an earlier user of the line (whose request ids may be the same) is not taken for
/// the answer to its own request.
#[cfg(feature = "tokio")]
pub fn discard_input(port: &AsyncSerialPort) -> io::Result<()> {
    use serialport::SerialPort as _;
    port.clear(serialport::ClearBuffer::Input)
        .map_err(io::Error::from)
}
