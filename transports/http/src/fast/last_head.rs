//! The head of a connection's last request, kept to recognise the next one without parsing it.
//!
//! Why: a keep-alive client sends the same head again and again (the same request line, the
//! same fields in the same order and spelling, the same credential), and with JSON-RPC calls
//! of one shape even the same `Content-Length`. Parsing a head costs about 300 instructions
//! per W1 call (httparse's checks of every byte, then the fields the fast path reads); one
//! comparison of the bytes costs a tenth of that.
//!
//! Why the outcome is the parse's: httparse reads a head up to its blank line and carries
//! nothing else, and [`parse`](super::head::parse) decides from the head's bytes and the connection's
//! fixed settings alone. A buffer that starts with the last head's bytes has the same head,
//! parsed alike. With the `Content-Length` value's digits changed (other digits, as many as
//! fit a `usize`, followed by the same bytes as before), httparse takes the value as it took
//! the old one (digits are value bytes, and the value ends where the old one ended), and the
//! fast path reads it as it would: the body's length is the new digits', checked against the
//! same limit, and the places after the digits move by the difference in their number.

use super::head::{decimal, Head};

/// The last head, as received, and what [`parse`](super::head::parse) made of it.
#[derive(Debug)]
pub(super) struct LastHead {
    /// The head's bytes, its blank line included.
    bytes: Vec<u8>,
    /// What the parse made of them.
    head: Head,
    /// False once [`Self::forget`] is called, until the next head is kept.
    kept: bool,
    /// Heads parsed since the last one taken again (at most `u8::MAX`).
    misses: u8,
}

/// At most this many digits are read as a `Content-Length` (`u64::MAX` has 20): more go to
/// the parse, which refuses them as it does.
const MAX_DIGITS: usize = 19;

/// After this many heads in a row that were not the last one (a client that sends a request
/// id or a trace context per call, say), a connection keeps a head only once in `u8::MAX -
/// MISSES` (to find out whether its client has settled): the copy and the comparison are
/// then rarely paid for nothing.
const MISSES: u8 = 2;

impl LastHead {
    /// Keeps `head`, the parse of the start of `buf`.
    pub(super) fn new(buf: &[u8], head: Head) -> Self {
        LastHead {
            bytes: buf[..head.len].to_vec(),
            head,
            kept: true,
            misses: 0,
        }
    }

    /// Stops recognising the last head (its buffer is kept for the next).
    pub(super) fn forget(&mut self) {
        self.kept = false;
    }

    /// Keeps `head`, parsed at the start of `buf` after the last head was not taken again, in
    /// place of the last one (the buffer is reused): unless the last [`MISSES`] heads were not
    /// taken again either (see there).
    pub(super) fn renew(&mut self, buf: &[u8], head: Head) {
        self.misses = self.misses.saturating_add(1);
        match self.misses {
            ..=MISSES => {}
            u8::MAX => self.misses = MISSES,
            _ => return,
        }
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
    pub(super) fn again(&mut self, buf: &[u8], max_body: usize, any_length: bool) -> Option<Head> {
        let head = self.recognise(buf, max_body, any_length)?;
        self.misses = 0;
        Some(head)
    }

    /// [`Self::again`]'s answer.
    #[inline(always)] // runs for every request: no call
    fn recognise(&self, buf: &[u8], max_body: usize, any_length: bool) -> Option<Head> {
        if !self.kept {
            return None;
        }
        // Other digits move the places after them: only a head with none (no credential or
        // trace context read) is taken with them.
        let any_length = any_length
            && self.head.credential.is_none()
            && self.head.left_out.is_none()
            && self.head.traceparent.is_none()
            && self.head.tracestate.is_none();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A connection whose heads keep changing keeps one only now and then; one taken again
    /// makes it keep every head once more.
    #[test]
    fn heads_that_keep_changing_are_kept_now_and_then() {
        let head = |body: usize| Head {
            len: 4,
            body,
            close: false,
            credential: None,
            left_out: None,
            length: (0, 1),
            traceparent: None,
            tracestate: None,
        };
        let mut last = LastHead::new(b"1\r\n\r\n", head(1));
        let mut kept = 0;
        for _ in 0..1_000 {
            last.forget();
            last.renew(b"2\r\n\r\n", head(2));
            kept += usize::from(last.kept);
        }
        // The first MISSES, then one in 253.
        assert_eq!(
            kept,
            usize::from(MISSES) + (1_000 - usize::from(MISSES)) / 253
        );
        // Kept just now (the 1 000th is not): taken again, then every head is kept again.
        last.forget();
        last.renew(b"2\r\n\r\n", head(2));
        assert!(!last.kept);
        for _ in 0..300 {
            last.forget();
            last.renew(b"3\r\n\r\n", head(3));
            if last.kept {
                break;
            }
        }
        assert!(last.kept);
        assert_eq!(last.again(b"3\r\n\r\n", 10, true), Some(head(3)));
        for _ in 0..MISSES {
            last.forget();
            last.renew(b"4\r\n\r\n", head(4));
            assert!(last.kept);
        }
    }
}
