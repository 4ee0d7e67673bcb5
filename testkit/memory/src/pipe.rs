//! Blocking in-process pipes (feature `std`): byte streams implementing [`std::io::Read`] and
//! [`std::io::Write`] between two threads, for wiring a blocking driver to a peer without a
//! socket.
//!
//! A pipe holds at most `capacity` bytes: a writer blocks while it is full (backpressure), a
//! reader blocks while it is empty. Dropping the writer ends the stream (reads return 0 once
//! drained); dropping the reader makes writes fail with [`ErrorKind::BrokenPipe`].
//!
//! ```
//! use std::io::{BufRead, BufReader, Write};
//! use rpcwire_memory::pipe;
//!
//! let (mut client, server) = pipe::duplex(64);
//! let echo = std::thread::spawn(move || {
//!     let (reader, mut writer) = server.split();
//!     for line in BufReader::new(reader).lines() {
//!         writeln!(writer, "{}", line.unwrap().to_uppercase()).unwrap();
//!     }
//! });
//! client.write_all(b"hello\n").unwrap();
//! let (reader, writer) = client.split();
//! drop(writer); // end of stream: the echo thread finishes
//! let mut lines = BufReader::new(reader).lines();
//! assert_eq!(lines.next().unwrap().unwrap(), "HELLO");
//! echo.join().unwrap();
//! ```

use std::collections::VecDeque;
use std::io::{self, ErrorKind, Read, Write};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

#[derive(Debug)]
struct State {
    buf: VecDeque<u8>,
    capacity: usize,
    max_read: usize,
    writer_alive: bool,
    reader_alive: bool,
}

#[derive(Debug)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking peer thread cannot leave the queue inconsistent: every critical
        // section is a single push or drain.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, State>) -> MutexGuard<'a, State> {
        self.changed
            .wait(guard)
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// The reading end of a [`pipe`].
#[derive(Debug)]
pub struct PipeReader {
    shared: Arc<Shared>,
}

/// The writing end of a [`pipe`].
#[derive(Debug)]
pub struct PipeWriter {
    shared: Arc<Shared>,
}

/// A one-way pipe holding at most `capacity` bytes (at least 1).
pub fn pipe(capacity: usize) -> (PipeWriter, PipeReader) {
    pipe_with(capacity, 0)
}

/// Like [`pipe`], but one read returns at most `max_read` bytes (0: no limit), so that a
/// reader sees frames split across reads.
pub fn pipe_with(capacity: usize, max_read: usize) -> (PipeWriter, PipeReader) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            buf: VecDeque::with_capacity(capacity.max(1)),
            capacity: capacity.max(1),
            max_read,
            writer_alive: true,
            reader_alive: true,
        }),
        changed: Condvar::new(),
    });
    (
        PipeWriter {
            shared: Arc::clone(&shared),
        },
        PipeReader { shared },
    )
}

impl PipeReader {
    /// Bytes that can be read now without blocking.
    pub fn available(&self) -> usize {
        self.shared.lock().buf.len()
    }

    /// Reads what is available without blocking: `Err(WouldBlock)` when the pipe is empty
    /// and its writer alive, `Ok(0)` at end of stream.
    pub fn try_read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let mut state = self.shared.lock();
        if state.buf.is_empty() && state.writer_alive && !out.is_empty() {
            return Err(ErrorKind::WouldBlock.into());
        }
        Ok(self.take_into(&mut state, out))
    }

    fn take_into(&self, state: &mut State, out: &mut [u8]) -> usize {
        let mut n = out.len().min(state.buf.len());
        if state.max_read > 0 {
            n = n.min(state.max_read);
        }
        for (slot, b) in out.iter_mut().zip(state.buf.drain(..n)) {
            *slot = b;
        }
        if n > 0 {
            self.shared.changed.notify_all();
        }
        n
    }
}

impl Read for PipeReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if out.is_empty() {
            return Ok(0);
        }
        let mut state = self.shared.lock();
        while state.buf.is_empty() && state.writer_alive {
            state = self.shared.wait(state);
        }
        Ok(self.take_into(&mut state, out))
    }
}

impl Drop for PipeReader {
    fn drop(&mut self) {
        self.shared.lock().reader_alive = false;
        self.shared.changed.notify_all();
    }
}

impl Write for PipeWriter {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if bytes.is_empty() {
            return Ok(0);
        }
        let mut state = self.shared.lock();
        loop {
            if !state.reader_alive {
                return Err(ErrorKind::BrokenPipe.into());
            }
            let free = state.capacity - state.buf.len();
            if free > 0 {
                let n = free.min(bytes.len());
                state.buf.extend(&bytes[..n]);
                self.shared.changed.notify_all();
                return Ok(n);
            }
            state = self.shared.wait(state);
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drop for PipeWriter {
    fn drop(&mut self) {
        self.shared.lock().writer_alive = false;
        self.shared.changed.notify_all();
    }
}

/// One end of a [`duplex`] pair: reads what the other end writes and vice versa.
#[derive(Debug)]
pub struct PipeStream {
    reader: PipeReader,
    writer: PipeWriter,
}

/// Two connected ends, each direction holding at most `capacity` bytes.
pub fn duplex(capacity: usize) -> (PipeStream, PipeStream) {
    duplex_with(capacity, 0)
}

/// Like [`duplex`], with reads of at most `max_read` bytes (0: no limit).
pub fn duplex_with(capacity: usize, max_read: usize) -> (PipeStream, PipeStream) {
    let (w1, r1) = pipe_with(capacity, max_read);
    let (w2, r2) = pipe_with(capacity, max_read);
    (
        PipeStream {
            reader: r2,
            writer: w1,
        },
        PipeStream {
            reader: r1,
            writer: w2,
        },
    )
}

impl PipeStream {
    /// Separates the two directions, for example to read and write from two threads.
    pub fn split(self) -> (PipeReader, PipeWriter) {
        (self.reader, self.writer)
    }

    /// The reading half.
    pub fn reader(&mut self) -> &mut PipeReader {
        &mut self.reader
    }

    /// The writing half.
    pub fn writer(&mut self) -> &mut PipeWriter {
        &mut self.writer
    }
}

impl Read for PipeStream {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        self.reader.read(out)
    }
}

impl Write for PipeStream {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.writer.write(bytes)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::vec;
    use std::vec::Vec;

    #[test]
    fn backpressure_and_end_of_stream() {
        let (mut w, mut r) = pipe_with(4, 3);
        assert_eq!(w.write(b"abcdef").unwrap(), 4);
        let mut out = [0u8; 8];
        assert_eq!(r.read(&mut out).unwrap(), 3);
        assert_eq!(&out[..3], b"abc");
        assert_eq!(r.available(), 1);
        drop(w);
        assert_eq!(r.read(&mut out).unwrap(), 1);
        assert_eq!(r.read(&mut out).unwrap(), 0);
    }

    #[test]
    fn broken_pipe_and_would_block() {
        let (mut w, mut r) = pipe(4);
        let mut out = [0u8; 4];
        assert_eq!(
            r.try_read(&mut out).unwrap_err().kind(),
            ErrorKind::WouldBlock
        );
        drop(r);
        assert_eq!(w.write(b"x").unwrap_err().kind(), ErrorKind::BrokenPipe);
    }

    #[test]
    fn blocked_writer_resumes_across_threads() {
        let (mut w, mut r) = pipe(2);
        let t = std::thread::spawn(move || {
            w.write_all(&[7u8; 1000]).unwrap();
        });
        let mut total = Vec::new();
        r.read_to_end(&mut total).unwrap();
        t.join().unwrap();
        assert_eq!(total, vec![7u8; 1000]);
    }
}
