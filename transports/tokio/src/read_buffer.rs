//! The driver's read buffer: the bytes read from the peer and not yet given to the core.
//!
//! The core parses a whole line where it lies ([`Connection::handle_input_borrowed`]) when
//! nothing is buffered in its receive buffer, with no copy into that buffer and no pass of its
//! frame decoder. For that the driver reads into a buffer of its own and hands the core the
//! bytes up to the last line end read so far: a line cut by the end of a read stays here until
//! the read that completes it, instead of being copied into the receive buffer, which would
//! then take every following line the copying way too.
//!
//! [`Connection::handle_input_borrowed`]: rpcwire::Connection::handle_input_borrowed

/// Bytes read and not yet given to the core: `buf[start..end]`, of which `buf[start..lines]`
/// ends with a line end (or is empty).
pub(crate) struct ReadBuffer {
    /// Zero-filled storage (its length is the capacity: reads go into `buf[end..]`).
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Just after the last `\n` read (at least `start`).
    lines: usize,
}

impl ReadBuffer {
    /// An empty buffer; storage comes with the first read.
    pub(crate) const fn new() -> Self {
        ReadBuffer {
            buf: Vec::new(),
            start: 0,
            end: 0,
            lines: 0,
        }
    }

    /// An empty buffer with `capacity` bytes of storage.
    pub(crate) fn with_capacity(capacity: usize) -> Self {
        ReadBuffer {
            buf: vec![0; capacity],
            ..Self::new()
        }
    }

    /// Bytes of storage held.
    pub(crate) fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// Bytes read and not yet given to the core.
    pub(crate) fn pending(&self) -> usize {
        self.end - self.start
    }

    /// Room for a read of up to `max` bytes at the end (moving what is pending to the front,
    /// or growing, when the room left is smaller).
    pub(crate) fn spare(&mut self, max: usize) -> &mut [u8] {
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
    pub(crate) fn commit(&mut self, n: usize) {
        let from = self.end;
        self.end = (self.end + n).min(self.buf.len());
        // Searched from the end: the last line end of a read of whole lines is near it.
        if let Some(at) = self.buf[from..self.end].iter().rposition(|&b| b == b'\n') {
            self.lines = from + at + 1;
        }
    }

    /// The bytes to give the core: those up to the last line end (`whole_lines`), or all.
    pub(crate) fn input(&self, whole_lines: bool) -> &[u8] {
        let end = if whole_lines { self.lines } else { self.end };
        &self.buf[self.start..end.max(self.start)]
    }

    /// The pending bytes after the last line end (a line not read whole yet).
    pub(crate) fn partial(&self) -> usize {
        self.end - self.lines.max(self.start)
    }

    /// The core took the first `n` bytes of what is pending.
    pub(crate) fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
        self.lines = self.lines.max(self.start);
    }

    /// Gives back all but `keep` bytes of storage while nothing is pending.
    pub(crate) fn shrink(&mut self, keep: usize) {
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
