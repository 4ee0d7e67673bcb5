//! The receive side: [`RxBuffer`], a buffer over caller-chosen storage that accumulates bytes
//! and decodes frames of either framing, borrowed from itself.

use super::content_length::MAX_HEADER_BLOCK;
#[cfg(feature = "content-length")]
use super::content_length::{
    find_header_end, find_header_name, parse_content_length, HEADER_NAME, HEADER_PREFIX,
};
use super::kind::{Framing, DEFAULT_MAX_FRAME};
use crate::bytes::find_byte;
use crate::slots::{next_size, Slots, KEEP, SHRINK_ABOVE};

/// Shortcuts that save instructions per frame but cost flash: on where the scanner works a
/// word at a time (64-bit hosts), off in firmware.
const HOST_FAST_PATHS: bool = crate::wire::scan::WORD_AT_A_TIME;

/// What the receive buffer found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameEvent<'a> {
    /// A complete frame (without its delimiter or headers).
    Frame(&'a [u8]),
    /// A frame longer than the maximum: its bytes are being skipped up to the next delimiter
    /// (line) or for its declared length (content-length). `len` is the declared length, or for
    /// a line the bytes seen so far.
    Oversize {
        /// Declared or observed length.
        len: usize,
    },
    /// A header block without a valid `Content-Length` (or longer than
    /// [`MAX_HEADER_BLOCK`]); it was skipped. Only with content-length framing.
    BadHeader,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Looking for the end of a line or of a header block.
    Seek,
    /// Skipping the rest of an oversize line: bytes skipped so far (the final `\r`, if any,
    /// is taken off when the newline comes), and whether the last one was `\r`.
    DiscardLine { len: usize, cr: bool },
    /// Skipping garbage up to the next `Content-Length` header name.
    #[cfg(feature = "content-length")]
    DiscardHeader,
    /// Reading a body of this many bytes (its header is consumed).
    #[cfg(feature = "content-length")]
    Body(usize),
    /// Skipping this many bytes of an oversize body.
    #[cfg(feature = "content-length")]
    SkipBody(usize),
    /// A whole frame of this many bytes, too long to take, was given to
    /// [`RxBuffer::push_frame`]: report it.
    #[cfg(feature = "content-length")]
    OversizeWhole(usize),
}

/// A receive buffer with a framing decoder, over storage the caller chooses: an array
/// (`RxBuffer<[u8; 1024]>`: fixed, no heap, const-constructible) or, with the `alloc` feature,
/// a vector (`RxBuffer<Vec<u8>>`: starts empty, grows while a frame needs it, up to the maximum
/// frame, and gives the memory back once a large frame has gone).
///
/// Feed it with [`push`](RxBuffer::push) (copies from a slice) or read straight into
/// [`spare`](RxBuffer::spare) and [`commit`](RxBuffer::commit); take frames with
/// [`next_frame`](RxBuffer::next_frame). A returned frame stays in the buffer (and available
/// through [`held`](RxBuffer::held)) until the next call to `next_frame`.
#[derive(Clone)]
pub struct RxBuffer<B = [u8; 4096]> {
    buf: B,
    framing: Framing,
    max_frame: usize,
    /// The most bytes the buffer may hold (growing storage).
    limit: usize,
    /// Start of unconsumed data (the held frame, if any, begins at or after it).
    start: usize,
    /// End of buffered data.
    end: usize,
    /// Offset (from `start`) up to which the delimiter search has looked.
    scanned: usize,
    /// The frame returned by the last `next_frame`, and where consumption resumes after it.
    held: Option<(usize, usize, usize)>,
    ready: Option<Ready>,
    state: State,
}

/// What the next frame is (see `RxBuffer::next_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NextKind {
    Line,
    #[cfg_attr(not(feature = "content-length"), allow(dead_code))]
    Header,
    #[cfg_attr(not(feature = "content-length"), allow(dead_code))]
    Wait,
}

/// A decoded event, without borrowing the buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ready {
    Frame,
    Oversize {
        len: usize,
    },
    #[cfg(feature = "content-length")]
    BadHeader,
}

impl<B: Slots<u8>> core::fmt::Debug for RxBuffer<B> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RxBuffer")
            .field("capacity", &self.capacity())
            .field("framing", &self.framing)
            .field("max_frame", &self.max_frame)
            .field("buffered", &self.buffered())
            .finish()
    }
}

/// The longest frame `n` bytes can hold with `framing`.
const fn frame_capacity(framing: Framing, n: usize) -> usize {
    match framing {
        Framing::Line => n.saturating_sub(2),
        #[cfg(feature = "content-length")]
        Framing::ContentLength => n,
    }
}

/// The bytes a growing buffer needs for frames of up to `max_frame` bytes: the frame and its
/// line end, or a whole header block.
const fn growing_limit(max_frame: usize) -> usize {
    let line = max_frame.saturating_add(2);
    if line > MAX_HEADER_BLOCK {
        line
    } else {
        MAX_HEADER_BLOCK
    }
}

impl<const N: usize> RxBuffer<[u8; N]> {
    /// A fixed buffer whose maximum frame is as large as it allows: `N - 2` for lines (room
    /// for `\r\n`), `N` for content-length bodies. A `const fn`, for firmware statics.
    pub const fn const_new(framing: Framing) -> Self {
        Self::const_with_max_frame(framing, frame_capacity(framing, N))
    }

    /// A fixed buffer with a smaller maximum frame length (clamped to what `N` can hold).
    pub const fn const_with_max_frame(framing: Framing, max_frame: usize) -> Self {
        let cap = frame_capacity(framing, N);
        let max_frame = if max_frame < cap { max_frame } else { cap };
        RxBuffer::from_parts([0; N], framing, max_frame, N)
    }
}

impl<B> RxBuffer<B> {
    /// An empty decoder over `buf` (limits already settled by the constructors).
    const fn from_parts(buf: B, framing: Framing, max_frame: usize, limit: usize) -> Self {
        RxBuffer {
            buf,
            framing,
            max_frame,
            limit,
            start: 0,
            end: 0,
            scanned: 0,
            held: None,
            ready: None,
            state: State::Seek,
        }
    }
}

impl<B: Slots<u8>> RxBuffer<B> {
    /// A buffer with the largest maximum frame its storage allows: for an array, `N - 2`
    /// (lines) or `N` (content-length); for a growing vector,
    /// [`Config::DEFAULT`](crate::Config::DEFAULT)'s `max_frame` (1 MiB).
    pub fn new(framing: Framing) -> Self {
        Self::with_max_frame(framing, usize::MAX)
    }

    /// A buffer with this maximum frame length: clamped to what an array holds; for a
    /// growing vector, it may be any size, memory being used only while such a frame is held
    /// (`usize::MAX` stands for the default, 1 MiB).
    pub fn with_max_frame(framing: Framing, max_frame: usize) -> Self {
        Self::with_storage(B::empty(0), framing, max_frame)
    }

    /// A buffer over `storage`, as [`with_max_frame`](Self::with_max_frame).
    pub fn with_storage(storage: B, framing: Framing, max_frame: usize) -> Self {
        let (max_frame, limit) = if B::GROWS {
            let m = if max_frame == usize::MAX {
                DEFAULT_MAX_FRAME
            } else {
                max_frame
            };
            (m, growing_limit(m))
        } else {
            let n = storage.slots().len();
            (max_frame.min(frame_capacity(framing, n)), n)
        };
        RxBuffer::from_parts(storage, framing, max_frame, limit)
    }

    /// The framing this buffer decodes.
    pub fn framing(&self) -> Framing {
        self.framing
    }

    /// The maximum frame length in bytes.
    pub fn max_frame(&self) -> usize {
        self.max_frame
    }

    /// Bytes of storage held now (for an array, always its length).
    pub fn capacity(&self) -> usize {
        self.buf.slots().len()
    }

    /// Bytes buffered and not yet consumed (the held frame included).
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// Discards everything buffered and resets the decoder (for a reconnect).
    pub fn clear(&mut self) {
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        self.held = None;
        self.ready = None;
        self.state = State::Seek;
        self.release();
    }

    /// Growing storage: gives back everything but `keep` bytes while nothing is buffered (a
    /// driver calls it before a connection goes idle). Returns true when memory was released.
    pub fn shrink(&mut self, keep: usize) -> bool {
        if !B::GROWS || self.start != self.end || self.held.is_some() {
            return false;
        }
        if self.capacity() <= keep {
            return false;
        }
        self.start = 0;
        self.end = 0;
        self.buf.shrink_to(keep);
        true
    }

    /// After a large frame: back to [`KEEP`] bytes once nothing is buffered.
    fn release(&mut self) {
        if B::GROWS
            && self.start == self.end
            && self.held.is_none()
            && self.capacity() > SHRINK_ABOVE
        {
            self.shrink(KEEP);
        }
    }

    fn compact(&mut self) {
        if self.start == 0 {
            return;
        }
        let shift = self.start;
        let end = self.end;
        self.buf.slots_mut().copy_within(shift..end, 0);
        self.end -= shift;
        self.start = 0;
        if let Some((s, e, r)) = self.held.as_mut() {
            *s -= shift;
            *e -= shift;
            *r -= shift;
        }
    }

    /// The most bytes this buffer may ever hold.
    fn max_len(&self) -> usize {
        if B::GROWS {
            self.limit
        } else {
            self.capacity()
        }
    }

    /// Makes at least `n` bytes free at the end if the storage allows (compacting, then, for
    /// growing storage, growing up to what the maximum frame needs). Returns the free bytes.
    /// A driver that reads straight into [`spare`](RxBuffer::spare) calls it to choose its
    /// read size.
    pub fn reserve(&mut self, n: usize) -> usize {
        if self.capacity() - self.end < n {
            self.compact();
        }
        let room = self.capacity() - self.end;
        if B::GROWS && room < n && self.capacity() < self.limit {
            let size = next_size(self.capacity(), self.end + n, self.limit);
            self.buf.grow_to(size, 0);
        }
        self.capacity() - self.end
    }

    /// Free space to read into directly; follow with [`commit`](RxBuffer::commit). Growing
    /// storage grows (doubling) when the buffer is full of an incomplete frame.
    pub fn spare(&mut self) -> &mut [u8] {
        if self.end == self.capacity() {
            self.reserve(1);
        }
        let end = self.end;
        self.buf.slots_mut().get_mut(end..).unwrap_or(&mut [])
    }

    /// Marks `n` bytes of [`spare`](RxBuffer::spare) as filled (clamped to the spare length).
    pub fn commit(&mut self, n: usize) {
        self.end = (self.end + n).min(self.capacity());
    }

    /// Copies as much of `input` as fits and advances it; returns the number of bytes taken.
    /// Growing storage grows when the buffer is full of an incomplete frame.
    pub fn push(&mut self, input: &mut &[u8]) -> usize {
        if self.capacity() - self.end < input.len() {
            self.compact();
            if self.capacity() == self.end {
                self.reserve(input.len());
            }
        }
        let n = input.len().min(self.capacity() - self.end);
        let (taken, rest) = input.split_at(n);
        let end = self.end;
        if let Some(room) = self.buf.slots_mut().get_mut(end..end + n) {
            room.copy_from_slice(taken);
            self.end += n;
            *input = rest;
            return n;
        }
        0
    }

    /// Takes one whole frame that its transport has delimited (an HTTP body, a WebSocket
    /// message), copied in as it is: no header or line end is looked for, and the next event
    /// is that frame, or [`FrameEvent::Oversize`] when it is longer than the maximum frame
    /// (then nothing is copied). Returns false, taking nothing, unless the buffer is empty
    /// (nothing buffered, nothing held, no frame under way).
    ///
    /// ```
    /// use rpcwire::wire::{FrameEvent, Framing, RxBuffer};
    /// let mut rx = RxBuffer::<[u8; 64]>::const_with_max_frame(Framing::ContentLength, 16);
    /// assert!(rx.push_frame(b"{\"a\":\n1}"));
    /// assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"{\"a\":\n1}")));
    /// assert_eq!(rx.next_frame(), None);
    /// assert!(rx.push_frame(&[b' '; 17]));
    /// assert_eq!(rx.next_frame(), Some(FrameEvent::Oversize { len: 17 }));
    /// ```
    #[cfg(feature = "content-length")]
    pub fn push_frame(&mut self, frame: &[u8]) -> bool {
        if self.start != self.end
            || self.held.is_some()
            || self.ready.is_some()
            || !matches!(self.state, State::Seek)
        {
            return false;
        }
        self.start = 0;
        self.end = 0;
        self.scanned = 0;
        if frame.len() > self.max_frame {
            self.state = State::OversizeWhole(frame.len());
            return true;
        }
        self.reserve(frame.len());
        let Some(room) = self.buf.slots_mut().get_mut(..frame.len()) else {
            // Storage that cannot hold a frame of the maximum length (never: the constructors
            // bound the maximum by the storage): reported as too long.
            self.state = State::OversizeWhole(frame.len());
            return true;
        };
        room.copy_from_slice(frame);
        self.end = frame.len();
        self.state = State::Body(frame.len());
        true
    }

    /// Marks the end of input. With line framing, a last line without its newline becomes a
    /// frame (or an oversize report); with content-length framing an incomplete frame is
    /// truncated and stays unanswered. Call [`next_frame`](RxBuffer::next_frame) (or feed the
    /// connection) afterwards.
    pub fn finish(&mut self) {
        let discarding = matches!(self.state, State::DiscardLine { .. });
        if self.framing != Framing::Line || (self.start == self.end && !discarding) {
            return;
        }
        // A line in progress is at most `max_frame + 1 <= N - 1` bytes, so the newline fits.
        self.push(&mut &b"\n"[..]);
    }

    /// The whole line at the front of `input`, when it can be taken where it is instead of
    /// through this buffer ([`Connection::handle_input_borrowed`](crate::Connection::handle_input_borrowed)):
    /// the line without its line end, and the bytes after its newline. `None` sends the bytes
    /// through the buffer as usual: with content-length framing, while anything is buffered,
    /// held or under way, and for a line that is not an object (a batch is delivered from the
    /// buffer element by element; a blank line or a header block is decoded there), has no
    /// newline yet, or is longer than the maximum frame. What it takes, the buffer would have
    /// decoded to the same frame.
    pub(crate) fn split_line<'i>(&self, input: &'i [u8]) -> Option<(&'i [u8], &'i [u8])> {
        if !self.takes_in_place(input) {
            return None;
        }
        let nl = find_byte(b'\n', input, 0)?;
        let (line, rest) = (input.get(..nl)?, input.get(nl + 1..)?);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        (line.len() <= self.line_max()).then_some((line, rest))
    }

    /// [`split_line`](Self::split_line) where the caller knows that the buffer
    /// [`takes_in_place`](Self::takes_in_place) `input` and that the line's first `end` bytes
    /// hold no newline (they are a JSON text read without whitespace): the line is those
    /// bytes when its end (`\n` or `\r\n`) follows them at once, found without a search.
    /// `None` when it does not (the caller then splits the line the usual way).
    #[inline]
    pub(crate) fn split_line_at<'i>(
        &self,
        input: &'i [u8],
        end: usize,
    ) -> Option<(&'i [u8], &'i [u8])> {
        debug_assert!(self.takes_in_place(input));
        let skip = match input.get(end..)? {
            [b'\n', ..] => 1,
            [b'\r', b'\n', ..] => 2,
            _ => return None,
        };
        (end <= self.line_max()).then(|| Some((input.get(..end)?, input.get(end + skip..)?)))?
    }

    /// True when a line at the front of `input` may be taken where it is (see
    /// [`split_line`](Self::split_line)): line framing, nothing buffered, held or under way,
    /// and an object.
    #[inline]
    pub(crate) fn takes_in_place(&self, input: &[u8]) -> bool {
        self.framing == Framing::Line
            && input.first() == Some(&b'{')
            && self.start == self.end
            && self.held.is_none()
            && matches!(self.state, State::Seek)
    }

    /// The longest line taken, without its line end.
    fn line_max(&self) -> usize {
        self.max_frame.min(self.max_len().saturating_sub(2))
    }

    /// True when nothing is buffered, no frame is held and no frame is under way: an
    /// [`advance`](Self::advance) now finds nothing.
    #[inline]
    pub(crate) fn is_drained(&self) -> bool {
        self.held.is_none() && self.start == self.end && matches!(self.state, State::Seek)
    }

    /// True when no more bytes fit (and the storage cannot grow).
    pub fn is_full(&self) -> bool {
        self.start == 0 && self.end == self.max_len()
    }

    /// The frame returned by the last [`next_frame`](RxBuffer::next_frame), if any.
    pub fn held(&self) -> Option<&[u8]> {
        let (s, e, _) = self.held?;
        self.buf.slots().get(s..e)
    }

    /// Releases the held frame and decodes the next one. `None` means more bytes are needed.
    pub fn next_frame(&mut self) -> Option<FrameEvent<'_>> {
        if self.advance() {
            self.event()
        } else {
            None
        }
    }

    /// Like [`next_frame`](RxBuffer::next_frame) without borrowing: true when an event is
    /// ready, to be read with [`event`](RxBuffer::event). (Lets a caller loop over `advance`
    /// and return a borrowed frame after the loop.)
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub fn advance(&mut self) -> bool {
        if HOST_FAST_PATHS
            && self.held.is_none()
            && self.start == self.end
            && matches!(self.state, State::Seek)
        {
            // Nothing buffered and no frame to release (between reads): as `decode` answers,
            // without the call.
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
            self.ready = None;
            return false;
        }
        self.ready = self.decode();
        self.ready.is_some()
    }

    /// The event found by the last [`advance`](RxBuffer::advance), if any.
    pub fn event(&self) -> Option<FrameEvent<'_>> {
        Some(match self.ready? {
            Ready::Frame => FrameEvent::Frame(self.held()?),
            Ready::Oversize { len } => FrameEvent::Oversize { len },
            #[cfg(feature = "content-length")]
            Ready::BadHeader => FrameEvent::BadHeader,
        })
    }

    /// A header block went wrong (no valid length, or no end within [`MAX_HEADER_BLOCK`]):
    /// skip forward to the next `Content-Length` header name. The search goes on across reads
    /// (a truncated body swallows the start of the next frame and leaves its header behind),
    /// so the bytes decode the same however they are split, with one report per bad block.
    #[cfg(feature = "content-length")]
    fn bad_header(&mut self) -> Ready {
        // Step past this block's own first byte so that a bad header is not found again.
        self.start = (self.start + 1).min(self.end);
        self.scanned = 0;
        self.state = State::DiscardHeader;
        Ready::BadHeader
    }

    /// What the next frame is: a line, or a `Content-Length` header block (or it cannot be
    /// told yet).
    ///
    /// Each framing also reads the other's messages, so that two sides configured with
    /// different framings still understand each other (each writes its own): with
    /// content-length framing, bytes that start with `{` or `[` (which no header block does)
    /// are a line of JSON; with line framing, a complete, valid header block that starts with
    /// `Content-Length:` (any case; no JSON text does) is one, and its body the frame. The
    /// decision depends on the bytes only, never on how they were split: a line framing that
    /// sees the start of such a block waits for its end (up to [`MAX_HEADER_BLOCK`] bytes),
    /// and a block that turns out invalid is read as lines after all.
    #[cfg_attr(not(feature = "content-length"), allow(unused_variables))]
    fn next_kind(&self, data: &[u8]) -> NextKind {
        match self.framing {
            #[cfg(feature = "content-length")]
            Framing::Line => {
                // Compared on the bytes there are: fewer than the prefix that match it so far
                // cannot be told yet (wait), whatever the split.
                let n = data.len().min(HEADER_PREFIX.len());
                let head = data.get(..n).unwrap_or(&[]);
                if !head.eq_ignore_ascii_case(HEADER_PREFIX.get(..n).unwrap_or(&[])) {
                    return NextKind::Line;
                }
                if n < HEADER_PREFIX.len() {
                    // A buffer too small to hold the prefix reads lines.
                    return if data.len() >= self.max_len() {
                        NextKind::Line
                    } else {
                        NextKind::Wait
                    };
                }
                // A header block may take this much of the buffer (less when it is smaller):
                // past it, with no end in sight, the bytes are lines.
                let most = MAX_HEADER_BLOCK.min(self.max_len());
                let window = data.get(..most.min(data.len())).unwrap_or(data);
                match find_header_end(window, 0) {
                    Some(term) => match parse_content_length(data.get(..term).unwrap_or(&[])) {
                        Some(_) => NextKind::Header,
                        None => NextKind::Line,
                    },
                    None if data.len() < most => NextKind::Wait,
                    None => NextKind::Line,
                }
            }
            #[cfg(not(feature = "content-length"))]
            Framing::Line => NextKind::Line,
            #[cfg(feature = "content-length")]
            Framing::ContentLength => match data.first() {
                Some(b'{' | b'[') => NextKind::Line,
                _ => NextKind::Header,
            },
        }
    }

    fn decode(&mut self) -> Option<Ready> {
        if let Some((_, _, resume)) = self.held.take() {
            self.start = resume;
            self.scanned = 0;
            self.release();
        }
        if HOST_FAST_PATHS && self.start == self.end && matches!(self.state, State::Seek) {
            // Nothing buffered (the usual state between reads): no frame, and the next read
            // goes to the front, so it never needs compacting. (Hosts only: the general path
            // below answers the same, in less flash.)
            self.start = 0;
            self.end = 0;
            self.scanned = 0;
            return None;
        }
        loop {
            let data = self.buf.slots().get(self.start..self.end).unwrap_or(&[]);
            match self.state {
                State::Seek => {
                    let kind = self.next_kind(data);
                    if kind == NextKind::Wait {
                        return None;
                    }
                    #[cfg(feature = "content-length")]
                    if kind == NextKind::Header && self.framing == Framing::Line && self.scanned > 0
                    {
                        // A line search looked at these bytes before enough came to tell: the
                        // header block's terminator search starts over.
                        self.scanned = 0;
                        continue;
                    }
                    if kind == NextKind::Line {
                        // A line and its line end must fit the buffer: with content-length
                        // framing a fixed buffer's maximum frame is its whole size.
                        let line_max = self.max_frame.min(self.max_len().saturating_sub(2));
                        let Some(nl) = find_byte(b'\n', data, self.scanned) else {
                            self.scanned = data.len();
                            if data.len() > line_max + 1 {
                                // No newline within the limit (+1 for a possible '\r'): skip
                                // the line, and report it (with its full length) when it ends,
                                // so the report does not depend on how the bytes arrived.
                                self.state = State::DiscardLine {
                                    len: data.len(),
                                    cr: data.last() == Some(&b'\r'),
                                };
                                self.start = self.end;
                                self.scanned = 0;
                            }
                            return None;
                        };
                        let mut line = data.get(..nl).unwrap_or(&[]);
                        if let Some(stripped) = line.strip_suffix(b"\r") {
                            line = stripped;
                        }
                        let line_end = line.len();
                        let (s, e, resume) =
                            (self.start, self.start + line_end, self.start + nl + 1);
                        self.scanned = 0;
                        if line_end > line_max {
                            self.start = resume;
                            return Some(Ready::Oversize { len: line_end });
                        }
                        if line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                            self.start = resume;
                            continue;
                        }
                        self.held = Some((s, e, resume));
                        return Some(Ready::Frame);
                    } else {
                        #[cfg(feature = "content-length")]
                        {
                            let Some(term) = find_header_end(data, self.scanned) else {
                                self.scanned = data.len().saturating_sub(3);
                                if data.len() >= MAX_HEADER_BLOCK.min(self.max_len()) {
                                    return Some(self.bad_header());
                                }
                                return None;
                            };
                            let header_len = term + 4;
                            self.scanned = 0;
                            let declared = if header_len > MAX_HEADER_BLOCK {
                                None
                            } else {
                                parse_content_length(data.get(..term).unwrap_or(&[]))
                            };
                            match declared {
                                None => return Some(self.bad_header()),
                                Some(len) if len > self.max_frame => {
                                    self.start += header_len;
                                    self.state = State::SkipBody(len);
                                    return Some(Ready::Oversize { len });
                                }
                                Some(len) => {
                                    self.start += header_len;
                                    self.state = State::Body(len);
                                }
                            }
                        }
                    }
                }
                #[cfg(feature = "content-length")]
                State::Body(len) => {
                    if data.len() < len {
                        if self.capacity() - self.start < len {
                            self.compact();
                        }
                        return None;
                    }
                    self.state = State::Seek;
                    let (s, e) = (self.start, self.start + len);
                    self.held = Some((s, e, e));
                    return Some(Ready::Frame);
                }
                #[cfg(feature = "content-length")]
                State::SkipBody(left) => {
                    let n = left.min(data.len());
                    self.start += n;
                    if n < left {
                        self.state = State::SkipBody(left - n);
                        return None;
                    }
                    self.state = State::Seek;
                }
                #[cfg(feature = "content-length")]
                State::OversizeWhole(len) => {
                    self.state = State::Seek;
                    return Some(Ready::Oversize { len });
                }
                State::DiscardLine { len, cr } => match find_byte(b'\n', data, 0) {
                    Some(nl) => {
                        let cr = if nl == 0 {
                            cr
                        } else {
                            data.get(nl - 1) == Some(&b'\r')
                        };
                        self.start += nl + 1;
                        self.state = State::Seek;
                        return Some(Ready::Oversize {
                            len: len + nl - usize::from(cr),
                        });
                    }
                    None => {
                        self.state = State::DiscardLine {
                            len: len + data.len(),
                            cr: data.last().map_or(cr, |&b| b == b'\r'),
                        };
                        self.start = self.end;
                        return None;
                    }
                },
                #[cfg(feature = "content-length")]
                State::DiscardHeader => match find_header_name(data) {
                    Some(k) => {
                        self.start += k;
                        self.state = State::Seek;
                    }
                    None => {
                        // Keep a tail that may be the start of a header name split by a read.
                        let keep = HEADER_NAME.len() - 1;
                        self.start = self.end.saturating_sub(keep).max(self.start);
                        return None;
                    }
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_ends_a_last_line() {
        let mut rx = RxBuffer::<[u8; 16]>::new(Framing::Line);
        rx.push(&mut &b"[1]\n[2]"[..]);
        assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"[1]")));
        assert_eq!(rx.next_frame(), None);
        rx.finish();
        assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"[2]")));
        rx.finish();
        assert_eq!(rx.next_frame(), None);
    }

    fn frames<const N: usize>(
        rx: &mut RxBuffer<[u8; N]>,
        out: &mut [([u8; 32], usize, u8)],
    ) -> usize {
        let mut k = 0;
        while let Some(ev) = rx.next_frame() {
            let (kind, bytes): (u8, &[u8]) = match ev {
                FrameEvent::Frame(f) => (0, f),
                FrameEvent::Oversize { .. } => (1, b""),
                FrameEvent::BadHeader => (2, b""),
            };
            let mut b = [0u8; 32];
            b[..bytes.len()].copy_from_slice(bytes);
            out[k] = (b, bytes.len(), kind);
            k += 1;
        }
        k
    }

    #[test]
    fn line_oversize_is_skipped_to_next_newline() {
        let mut rx = RxBuffer::<[u8; 32]>::with_max_frame(Framing::Line, 8);
        let mut out = [([0u8; 32], 0, 0); 8];
        rx.push(&mut &b"12345678\n123456789\n"[..]);
        let n = frames(&mut rx, &mut out);
        assert_eq!(n, 2);
        assert_eq!(&out[0].0[..out[0].1], b"12345678");
        assert_eq!(out[1].2, 1);
        // A long line spanning pushes: skipped, and reported once with its full length when
        // it ends.
        rx.push(&mut &b"aaaaaaaaaaaaaa"[..]);
        assert_eq!(rx.next_frame(), None);
        rx.push(&mut &b"bbbbbbbbbbbb"[..]);
        assert_eq!(rx.next_frame(), None);
        rx.push(&mut &b"b\r"[..]);
        assert_eq!(rx.next_frame(), None);
        rx.push(&mut &b"\nok\n"[..]);
        assert_eq!(rx.next_frame(), Some(FrameEvent::Oversize { len: 27 }));
        assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"ok")));
    }

    #[test]
    #[cfg(feature = "content-length")]
    fn content_length_limits_and_resync() {
        let mut rx = RxBuffer::<[u8; 64]>::with_max_frame(Framing::ContentLength, 4);
        rx.push(&mut &b"Content-Length: 4\r\n\r\nabcd"[..]);
        assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"abcd")));
        rx.push(&mut &b"content-length: 5\r\n\r\n12345"[..]);
        assert_eq!(rx.next_frame(), Some(FrameEvent::Oversize { len: 5 }));
        assert_eq!(rx.next_frame(), None);
        rx.push(&mut &b"X: y\r\n\r\nContent-Length: 2\r\nContent-Type: a\r\n\r\nok"[..]);
        assert_eq!(rx.next_frame(), Some(FrameEvent::BadHeader));
        assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"ok")));
        // A huge declared length is skipped by counting, never buffered.
        rx.push(&mut &b"Content-Length: 99999999999\r\n\r\n"[..]);
        assert_eq!(
            rx.next_frame(),
            Some(FrameEvent::Oversize { len: 99999999999 })
        );
    }

    /// Frames of a stream split at one point, as (kind, bytes).
    #[cfg(feature = "content-length")]
    fn frames_split(
        framing: Framing,
        stream: &[u8],
        at: usize,
    ) -> std::vec::Vec<std::string::String> {
        let mut rx = RxBuffer::<[u8; 256]>::new(framing);
        let mut out = std::vec::Vec::new();
        for mut piece in [&stream[..at], &stream[at..]] {
            while !piece.is_empty() {
                rx.push(&mut piece);
                while let Some(ev) = rx.next_frame() {
                    out.push(match ev {
                        FrameEvent::Frame(f) => {
                            std::string::String::from_utf8_lossy(f).into_owned()
                        }
                        other => std::format!("{other:?}"),
                    });
                }
            }
        }
        out
    }

    /// Pushes `input` as the buffer takes it and collects every event; a push that takes
    /// nothing must be followed by an event (the buffer never waits for room it lacks).
    #[cfg(feature = "content-length")]
    fn events_never_stuck<const N: usize>(
        rx: &mut RxBuffer<[u8; N]>,
        mut input: &[u8],
    ) -> std::vec::Vec<std::string::String> {
        let mut seen = std::vec::Vec::new();
        while !input.is_empty() {
            let pushed = rx.push(&mut input);
            let mut any = false;
            while let Some(ev) = rx.next_frame() {
                any = true;
                seen.push(std::format!("{ev:?}"));
            }
            assert!(pushed > 0 || any, "stuck with {} bytes left", input.len());
        }
        seen
    }

    #[test]
    #[cfg(feature = "content-length")]
    fn each_framing_reads_the_others_messages_at_any_split() {
        let stream =
            b"{\"a\":1}\nContent-Length: 7\r\n\r\n{\"b\":2}content-length:2\r\nX: y\r\n\r\n[]\r\n";
        for framing in [Framing::Line, Framing::ContentLength] {
            let whole = frames_split(framing, stream, 0);
            assert_eq!(whole, ["{\"a\":1}", "{\"b\":2}", "[]"], "{framing:?}");
            for at in 1..stream.len() {
                assert_eq!(
                    frames_split(framing, stream, at),
                    whole,
                    "{framing:?} split at {at}"
                );
            }
        }
        // A header-like start that a small buffer cannot hold to its end is read as lines (found
        // by fuzzing: the buffer must never wait for more than it can take).
        let mut rx = RxBuffer::<[u8; 32]>::new(Framing::Line);
        let seen = events_never_stuck(
            &mut rx,
            b"Content-Length: 5\r\nX: 0123456789012345678901234567890\n{}\n",
        );
        assert_eq!(
            seen.last().map(std::string::String::as_str),
            Some("Frame([123, 125])")
        );
        // Under content-length framing, a JSON line that fills a fixed buffer is too large (found
        // by fuzzing: it waited for a line end there was no room for).
        let mut rx = RxBuffer::<[u8; 16]>::new(Framing::ContentLength);
        let seen = events_never_stuck(&mut rx, b"{\"aaaaaaaaaaaaaaaaaaaa\":1}\n{}\n");
        assert_eq!(seen, ["Oversize { len: 26 }", "Frame([123, 125])"]);
        // With a tiny maximum frame, a split inside `Content-Length:` decodes like the whole
        // (found by fuzzing: a few bytes of the prefix were taken for a line).
        let stream = b"Content-Length: 2\r\n\r\n{}xyz\n";
        let whole = frames_split(Framing::Line, stream, 0);
        for at in 1..stream.len() {
            let mut rx = RxBuffer::<[u8; 64]>::with_max_frame(Framing::Line, 1);
            let mut split = std::vec::Vec::new();
            for mut piece in [&stream[..at], &stream[at..]] {
                rx.push(&mut piece);
                while let Some(ev) = rx.next_frame() {
                    split.push(std::format!("{ev:?}"));
                }
            }
            let mut one = RxBuffer::<[u8; 64]>::with_max_frame(Framing::Line, 1);
            one.push(&mut &stream[..]);
            let mut all = std::vec::Vec::new();
            while let Some(ev) = one.next_frame() {
                all.push(std::format!("{ev:?}"));
            }
            assert_eq!(split, all, "split at {at}");
        }
        assert_eq!(whole, ["{}", "xyz"]);
        // With line framing a header block that is not valid is read as lines after all.
        let bad = b"Content-Length: x\r\n\r\n{}\n";
        let lines = frames_split(Framing::Line, bad, 0);
        assert_eq!(lines, ["Content-Length: x", "{}"]);
        for at in 1..bad.len() {
            assert_eq!(frames_split(Framing::Line, bad, at), lines, "split at {at}");
        }
    }
}
