//! A tiny JSON writer into a caller's buffer: what the no_std [`Server`](crate::Server) renders
//! its answers with, so that a firmware sends them as one verbatim [`Raw`](crate::Raw) value
//! (one `respond` instantiation for every answer) and links no integer formatting beyond
//! 32-bit division and no serde compound machinery.

/// Writes JSON text into a byte buffer; past its end it only counts, so
/// [`finish`](Writer::finish) tells whether everything fitted.
///
/// ```
/// use rpcwire_mcp::Writer;
/// let mut buf = [0u8; 32];
/// let mut w = Writer::new(&mut buf);
/// w.raw(b"{\"n\":").u32(4_000_000_000).raw(b",\"s\":").string("a\"b\n").raw(b"}");
/// assert_eq!(w.finish(), Ok(&br#"{"n":4000000000,"s":"a\"b\n"}"#[..]));
/// let mut small = [0u8; 4];
/// let mut w = Writer::new(&mut small);
/// w.string("hello");
/// assert_eq!(w.finish(), Err(7)); // bytes it needed
/// ```
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> Writer<'b> {
    /// An empty writer over `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        Writer { buf, len: 0 }
    }

    /// Appends bytes as they are (JSON the caller vouches for).
    pub fn raw(&mut self, bytes: &[u8]) -> &mut Self {
        if let Some(dst) = self.buf.get_mut(self.len..self.len + bytes.len()) {
            dst.copy_from_slice(bytes);
        }
        self.len += bytes.len();
        self
    }

    fn byte(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
        }
        self.len += 1;
    }

    // Indexing: a nibble (< 16) into a 16-entry table.
    #[allow(clippy::indexing_slicing)]
    /// Appends a JSON string: quotes, and escapes for `"`, `\` and control characters.
    pub fn string(&mut self, text: &str) -> &mut Self {
        self.byte(b'"');
        for &b in text.as_bytes() {
            match b {
                b'"' | b'\\' => {
                    self.byte(b'\\');
                    self.byte(b);
                }
                b'\n' => {
                    self.raw(b"\\n");
                }
                b'\r' => {
                    self.raw(b"\\r");
                }
                b'\t' => {
                    self.raw(b"\\t");
                }
                0..=0x1f => {
                    const HEX: &[u8; 16] = b"0123456789abcdef";
                    self.raw(b"\\u00");
                    self.byte(HEX[usize::from(b >> 4)]);
                    self.byte(HEX[usize::from(b & 15)]);
                }
                _ => self.byte(b),
            }
        }
        self.byte(b'"');
        self
    }

    // Indexing: a u32 has at most 10 decimal digits, so `i` stays in 0..10.
    #[allow(clippy::indexing_slicing)]
    /// Appends an unsigned integer (32-bit divisions only: no 64-bit division routine).
    pub fn u32(&mut self, mut n: u32) -> &mut Self {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.raw(&digits[i..])
    }

    /// Bytes written (or needed, past the buffer's end).
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing was written.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The text written, or the length it needed when the buffer was too small.
    pub fn finish(self) -> Result<&'b [u8], usize> {
        let Writer { buf, len } = self;
        let buf: &'b [u8] = buf;
        buf.get(..len).ok_or(len)
    }
}
