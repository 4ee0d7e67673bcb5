//! A host driver's read buffer (feature `alloc`): the bytes read from the peer and not yet
//! given to the connection.
//!
//! The core parses a whole line where it lies ([`Connection::handle_input_borrowed`]) when
//! nothing is buffered in its receive buffer, with no copy into that buffer and no pass of its
//! frame decoder. For that a driver reads into a [`ReadBuffer`] and hands the core the bytes up
//! to the last line end read so far ([`input`](ReadBuffer::input)`(true)`): a line cut by the
//! end of a read stays here until the read that completes it, instead of being copied into the
//! receive buffer, which would then take every following line the copying way too. Storage
//! grows to the reads asked for and is given back with [`shrink`](ReadBuffer::shrink).
//!
//! ```
//! use rpcwire::read_buffer::ReadBuffer;
//!
//! let mut read = ReadBuffer::new();
//! // A read (from a socket, a pipe) into the spare room, then committed.
//! let bytes = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n{\"jsonrpc\"";
//! read.spare(64)[..bytes.len()].copy_from_slice(bytes);
//! read.commit(bytes.len());
//! // Whole lines go to the core; the cut line waits for the next read.
//! assert_eq!(read.input(true), b"{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n");
//! assert_eq!(read.partial(), 10);
//! read.consume(read.input(true).len()); // what the core took
//! assert_eq!(read.pending(), 10);
//! ```
//!
//! [`Connection::handle_input_borrowed`]: crate::Connection::handle_input_borrowed

// Indexing here never panics: `start <= lines <= end <= buf.len()` holds after every method
// (reads are committed and bytes consumed with their counts clamped to it), and `spare` makes
// the room it returns before slicing it.
#![allow(clippy::indexing_slicing)]

use alloc::vec;
use alloc::vec::Vec;

/// Bytes read and not yet given to the core: `buf[start..end]`, of which `buf[start..lines]`
/// ends with a line end (or is empty). See the [module documentation](self).
#[derive(Debug, Default)]
pub struct ReadBuffer {
    /// Zero-filled storage (its length is the capacity: reads go into `buf[end..]`).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Just after the last `\n` read (at least `start`).
    lines: usize,
}

impl ReadBuffer {
    /// An empty buffer; storage comes with the first read.
    #[inline]
    pub const fn new() -> Self {
        ReadBuffer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            lines: 0,
        }
    }

    /// An empty buffer with `capacity` bytes of storage.
    #[inline]
    pub fn with_capacity(capacity: usize) -> Self {
        ReadBuffer {
            buf: vec![0; capacity],
            ..Self::new()
        }
    }

    /// Bytes of storage held.
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes read and not yet given to the core.
    #[inline]
    pub fn pending(&self) -> usize {
        self.end - self.start
    }

    /// Room for a read of up to `max` bytes at the end (moving what is pending to the front,
    /// or growing, when the room left is smaller).
    #[inline]
    pub fn spare(&mut self, max: usize) -> &mut [u8] {
        if self.start == self.end {
            (self.start, self.end, self.lines) = (0, 0, 0);
        }
        if self.buf.len() - self.end < max {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.lines -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < max {
                self.buf.resize(self.end + max, 0);
            }
        }
        let end = self.end;
        &mut self.buf[end..end + max]
    }

    /// Marks `n` bytes of [`spare`](Self::spare) as read.
    #[inline]
    pub fn commit(&mut self, n: usize) {
        let from = self.end;
        self.end = (self.end + n).min(self.buf.len());
        // Searched from the end: the last line end of a read of whole lines is near it.
        if let Some(at) = self.buf[from..self.end].iter().rposition(|&b| b == b'\n') {
            self.lines = from + at + 1;
        }
    }

    /// The bytes to give the core: those up to the last line end (`whole_lines`), or all.
    #[inline]
    pub fn input(&self, whole_lines: bool) -> &[u8] {
        let end = if whole_lines { self.lines } else { self.end };
        &self.buf[self.start..end.max(self.start)]
    }

    /// The pending bytes after the last line end (a line not read whole yet).
    #[inline]
    pub fn partial(&self) -> usize {
        self.end - self.lines.max(self.start)
    }

    /// The core took the first `n` bytes of what is pending.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        self.lines = self.lines.max(self.start);
    }

    /// Gives back all but `keep` bytes of storage while nothing is pending.
    #[inline]
    pub fn shrink(&mut self, keep: usize) {
        if self.start == self.end && self.buf.len() > keep {
            (self.start, self.end, self.lines) = (0, 0, 0);
            self.buf.truncate(keep);
            self.buf.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::ReadBuffer;

    fn read(b: &mut ReadBuffer, bytes: &[u8]) {
        b.spare(bytes.len())[..bytes.len()].copy_from_slice(bytes);
        b.commit(bytes.len());
    }

    #[test]
    fn whole_lines_stop_at_the_last_line_end() {
        let mut b = ReadBuffer::new();
        read(&mut b, b"{\"a\":1}\n{\"b\"");
        assert_eq!(b.input(true), b"{\"a\":1}\n");
        assert_eq!(b.input(false), b"{\"a\":1}\n{\"b\"");
        assert_eq!(b.partial(), 4);
        b.consume(8);
        assert_eq!(b.input(true), b"");
        // The rest of the line, and no line end after it.
        read(&mut b, b":2}\n{");
        assert_eq!(b.input(true), b"{\"b\":2}\n");
        b.consume(8);
        assert_eq!(b.pending(), 1);
        // Consumed past the last line end (the core took a partial line): nothing whole.
        b.consume(1);
        assert_eq!(b.input(true), b"");
        assert_eq!(b.pending(), 0);
    }

    #[test]
    fn pending_bytes_move_to_the_front_and_storage_is_given_back() {
        let mut b = ReadBuffer::new();
        read(&mut b, b"0123456789\nabc");
        b.consume(11);
        // Not enough room at the end: "abc" moves to the front.
        let want = b.capacity() - 1;
        assert_eq!(b.spare(want).len(), want);
        assert!(b.capacity() >= 3 + want);
        read(&mut b, b"d\n");
        assert_eq!(b.input(true), b"abcd\n");
        b.consume(5);
        b.spare(1 << 12);
        assert!(b.capacity() >= 1 << 12);
        b.shrink(512);
        assert_eq!(b.capacity(), 512);
    }
}
