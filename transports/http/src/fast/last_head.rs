//! The head of a connection's last request, kept to recognise the next one without parsing it.
//!
//! Why: a keep-alive client sends the same head again and again (the same request line, the
//! same fields in the same order and spelling, the same credential), and with JSON-RPC calls
//! of one shape even the same `Content-Length`. Parsing a head costs about 300 instructions
//! per W1 call (httparse's checks of every byte, then the fields the fast path reads); one
//! comparison of the bytes costs a tenth of that.
//!
//! Why the outcome is the parse's: httparse reads a head up to its blank line and carries
//! nothing else, and [`super::parse`] decides from the head's bytes and the connection's
//! fixed settings alone. A buffer that starts with the last head's bytes has the same head,
//! parsed alike. With the `Content-Length` value's digits changed (other digits, as many as
//! fit a `usize`, followed by the same bytes as before), httparse takes the value as it took
//! the old one (digits are value bytes, and the value ends where the old one ended), and the
//! fast path reads it as it would: the body's length is the new digits', checked against the
//! same limit, and the places after the digits move by the difference in their number.

use super::{decimal, Head};

/// The last head, as received, and what [`super::parse`] made of it.
#[derive(Debug)]
pub(super) struct LastHead {
    /// The head's bytes, its blank line included.
    bytes: Vec<u8>,
    /// What the parse made of them.
    head: Head,
    /// False once [`Self::forget`] is called, until the next [`Self::renew`].
    kept: bool,
}

/// At most this many digits are read as a `Content-Length` (`u64::MAX` has 20): more go to
/// the parse, which refuses them as it does.
const MAX_DIGITS: usize = 19;

impl LastHead {
    /// Keeps `head`, the parse of the start of `buf`.
    pub(super) fn new(buf: &[u8], head: Head) -> Self {
        LastHead {
            bytes: buf[..head.len].to_vec(),
            head,
            kept: true,
        }
    }

    /// Stops recognising the last head (its buffer is kept for the next).
    pub(super) fn forget(&mut self) {
        self.kept = false;
    }

    /// Keeps `head` in place of the last one (the buffer is reused).
    pub(super) fn renew(&mut self, buf: &[u8], head: Head) {
        self.bytes.clear();
        self.bytes.extend_from_slice(&buf[..head.len]);
        self.head = head;
        self.kept = true;
    }

    /// The head at the start of `buf` if it is the last one's bytes, but perhaps for the
    /// digits of its `Content-Length` (when `any_length`; otherwise those too must be the
    /// same): the head the parse would make of it, its body no longer than `max_body`.
    /// `None` when it is another head (or not whole yet): the parse decides.
    #[inline]
    pub(super) fn again(&self, buf: &[u8], max_body: usize, any_length: bool) -> Option<Head> {
        if !self.kept {
            return None;
        }
        // Other digits move the places after them: only a head with none (no credential
        // read) is taken with them.
        let any_length =
            any_length && self.head.credential.is_none() && self.head.left_out.is_none();
        if !any_length {
            // The whole head, byte for byte.
            return (buf.get(..self.bytes.len())? == self.bytes).then_some(self.head);
        }
        let (from, to) = (self.head.length.0 as usize, self.head.length.1 as usize);
        let (before, digits, after) = (
            self.bytes.get(..from)?,
            self.bytes.get(from..to)?,
            self.bytes.get(to..)?,
        );
        if buf.get(..from)? != before {
            return None;
        }
        let rest = &buf[from..];
        let n = rest
            .iter()
            .take(MAX_DIGITS + 1)
            .take_while(|b| b.is_ascii_digit())
            .count();
        // The bytes after the digits: the last head's (whose first is not a digit).
        if n == 0 || n > MAX_DIGITS || rest.get(n..n + after.len())? != after {
            return None;
        }
        if rest[..n] == *digits {
            return Some(self.head);
        }
        let body = decimal(&rest[..n])?;
        if body > max_body {
            return None;
        }
        let mut head = self.head;
        head.len = from + n + after.len();
        head.body = body;
        head.length.1 = u16::try_from(from + n).ok()?;
        Some(head)
    }
}
