//! Server-Sent Events (the WHATWG `text/event-stream` format): an encoder into any sink and an
//! incremental decoder, no heap on fixed storage, for HTTP transports that carry JSON-RPC
//! messages as events; and, with a heap (feature `alloc`), [`Replay`], the bounded buffer of
//! the last events that a client resumes from with `Last-Event-ID`.
//!
//! The decoder follows the specification's parsing rules exactly: lines end with CRLF, LF or a
//! lone CR (a CR at the end of one chunk and an LF at the start of the next are one line end);
//! one leading byte order mark is dropped; lines starting with `:` are comments; `data` lines
//! are joined with LF; an `id` containing NUL is ignored; `retry` takes ASCII digits only; a
//! blank line dispatches the event, unless no data arrived (then nothing fires); a partial event
//! at the end of the stream is dropped. Two choices of its own, both limits: an event whose
//! data, type or id would pass the buffer's size is skipped whole and reported
//! ([`SseItem::TooLarge`]), and one whose text is not UTF-8 is reported
//! ([`SseItem::InvalidUtf8`]) rather than repaired.
//!
//! ```
//! use rpcwire::wire::sse::{SseDecoder, SseItem};
//!
//! let mut dec: SseDecoder<[u8; 256]> = SseDecoder::new();
//! let mut input: &[u8] = b"event: message\r\nid: 7\r\ndata: {\"jsonrpc\":\"2.0\",\r\ndata: \"method\":\"tick\"}\r\n\r\n";
//! match dec.next(&mut input) {
//!     Some(SseItem::Event(e)) => {
//!         assert_eq!(e.event, "message");
//!         assert_eq!(e.id, "7");
//!         assert_eq!(e.data, "{\"jsonrpc\":\"2.0\",\n\"method\":\"tick\"}");
//!     }
//!     other => panic!("{other:?}"),
//! }
//! assert_eq!(dec.next(&mut input), None);
//! ```

use crate::slots::Slots;
use crate::wire::ser::Sink;

#[cfg(feature = "alloc")]
mod replay;
#[cfg(feature = "alloc")]
pub use replay::Replay;

/// A dispatched event. Borrowed from the decoder until the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SseEvent<'a> {
    /// The event type (`message` when the stream set none).
    pub event: &'a str,
    /// The data lines, joined with LF.
    pub data: &'a str,
    /// The last event id seen on the stream so far (empty when none): what a client sends
    /// back as `Last-Event-ID` when it reconnects.
    pub id: &'a str,
}

/// What the decoder found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SseItem<'a> {
    /// An event.
    Event(SseEvent<'a>),
    /// A `retry` field: the reconnection time, in milliseconds.
    Retry(u64),
    /// An event whose data, type or id passed the buffer's size: it was skipped.
    TooLarge,
    /// An event whose text was not UTF-8: it was skipped.
    InvalidUtf8,
}

/// Where the decoder is within the current line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    /// At the start of the stream: a byte order mark may come first.
    Start,
    /// Within a line.
    Line,
    /// Just after a CR: an LF here belongs to the same line end.
    AfterCr,
}

/// An incremental `text/event-stream` decoder over storage the caller chooses (an array, or a
/// vector with the `alloc` feature). The storage holds the event being built: its data, type
/// and the current line; the last event id is kept apart, up to [`MAX_ID_LEN`] bytes.
#[derive(Debug, Clone)]
pub struct SseDecoder<B> {
    buf: B,
    /// The event under construction: `buf[..data]` is its data (each line followed by LF),
    /// `buf[data..data + event]` its type.
    data: usize,
    event: usize,
    /// The current line, after the event: `buf[data + event..data + event + line]`.
    line: usize,
    /// Data lines seen in the event (an event with none fires nothing).
    has_data: bool,
    /// The event passed the buffer: skip it to its blank line.
    skipping: bool,
    state: LineState,
    /// Bytes of a byte order mark matched at the stream's start.
    bom: u8,
    /// The last event id buffer (set by `id` fields) ...
    last_id: [u8; MAX_ID_LEN],
    last_id_len: usize,
    /// ... and the last event id string, what it was at the last blank line: what events
    /// carry and what a reconnection sends.
    event_id: [u8; MAX_ID_LEN],
    event_id_len: usize,
    /// The most bytes the buffer may hold (growing storage).
    limit: usize,
    /// A dispatched event waiting to be borrowed: (type start, type len, data len).
    ready: Option<Ready>,
}

#[derive(Debug, Clone, Copy)]
enum Ready {
    Event { data: usize, event: usize },
    Retry(u64),
    TooLarge,
    InvalidUtf8,
}

/// The longest event id kept; a longer one is ignored, like one containing NUL.
pub const MAX_ID_LEN: usize = 128;

const BOM: [u8; 3] = [0xEF, 0xBB, 0xBF];

impl<const N: usize> SseDecoder<[u8; N]> {
    /// A decoder whose event (data, type and the current line together) may take `N` bytes.
    pub const fn new() -> Self {
        Self::with_buffer([0; N], N)
    }
}

impl<const N: usize> Default for SseDecoder<[u8; N]> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B: Slots<u8>> SseDecoder<B> {
    /// A decoder over `buf`; growing storage grows up to `limit` bytes.
    pub const fn with_buffer(buf: B, limit: usize) -> Self {
        SseDecoder {
            buf,
            data: 0,
            event: 0,
            line: 0,
            has_data: false,
            skipping: false,
            state: LineState::Start,
            bom: 0,
            last_id: [0; MAX_ID_LEN],
            last_id_len: 0,
            event_id: [0; MAX_ID_LEN],
            event_id_len: 0,
            limit,
            ready: None,
        }
    }

    /// The last event id: the one in force at the last blank line (what `Last-Event-ID`
    /// carries on a reconnection).
    pub fn last_event_id(&self) -> &str {
        core::str::from_utf8(self.event_id.get(..self.event_id_len).unwrap_or(&[])).unwrap_or("")
    }

    /// Starts a new stream (a reconnection): the event under construction is dropped; the
    /// last event id is kept, as the specification says (an `id` field after the last blank
    /// line is dropped with its event).
    pub fn reset(&mut self) {
        self.last_id = self.event_id;
        self.last_id_len = self.event_id_len;
        self.data = 0;
        self.event = 0;
        self.line = 0;
        self.has_data = false;
        self.skipping = false;
        self.state = LineState::Start;
        self.bom = 0;
        self.ready = None;
    }

    /// Consumes bytes from `input` until an item is complete, and returns it; `None` when
    /// `input` is used up first (feed more later). A partial event at the end of the stream
    /// is never returned.
    pub fn next(&mut self, input: &mut &[u8]) -> Option<SseItem<'_>> {
        self.ready = None;
        while self.ready.is_none() {
            let (&b, rest) = input.split_first()?;
            *input = rest;
            self.byte(b);
        }
        self.item()
    }

    fn item(&self) -> Option<SseItem<'_>> {
        Some(match self.ready? {
            Ready::Event { data, event } => {
                let bytes = self.buf.slots();
                let text = |r: core::ops::Range<usize>| {
                    core::str::from_utf8(bytes.get(r).unwrap_or(&[])).unwrap_or("")
                };
                let event_text = text(data..data + event);
                SseEvent {
                    event: if event == 0 { "message" } else { event_text },
                    // Without its final LF.
                    data: text(0..data.saturating_sub(1)),
                    id: self.last_event_id(),
                }
                .into()
            }
            Ready::Retry(ms) => SseItem::Retry(ms),
            Ready::TooLarge => SseItem::TooLarge,
            Ready::InvalidUtf8 => SseItem::InvalidUtf8,
        })
    }

    fn byte(&mut self, b: u8) {
        match self.state {
            LineState::Start => {
                // One leading byte order mark is dropped.
                if self.bom < 3 && BOM.get(usize::from(self.bom)) == Some(&b) {
                    self.bom += 1;
                    if self.bom == 3 {
                        self.state = LineState::Line;
                    }
                    return;
                }
                // A partial mark was text after all.
                let partial = self.bom;
                self.bom = 3;
                self.state = LineState::Line;
                for &m in BOM.iter().take(usize::from(partial)) {
                    self.byte(m);
                }
                self.byte(b);
            }
            LineState::AfterCr if b == b'\n' => self.state = LineState::Line,
            LineState::AfterCr | LineState::Line => {
                self.state = LineState::Line;
                match b {
                    b'\n' => self.end_line(),
                    b'\r' => {
                        self.end_line();
                        self.state = LineState::AfterCr;
                    }
                    _ => self.push_line(b),
                }
            }
        }
    }

    fn push_line(&mut self, b: u8) {
        if self.skipping {
            return;
        }
        let at = self.data + self.event + self.line;
        if at >= self.buf.slots().len() {
            let cap = self.buf.slots().len();
            if B::GROWS && cap < self.limit {
                let size = crate::slots::next_size(cap, at + 1, self.limit);
                self.buf.grow_to(size, 0);
            }
        }
        match self.buf.slots_mut().get_mut(at) {
            Some(slot) => {
                *slot = b;
                self.line += 1;
            }
            None => self.skipping = true,
        }
    }

    fn end_line(&mut self) {
        if self.line == 0 {
            self.dispatch();
            return;
        }
        if self.skipping {
            self.line = 0;
            return;
        }
        let start = self.data + self.event;
        let len = self.line;
        self.line = 0;
        let Some(line) = self.buf.slots().get(start..start + len) else {
            return;
        };
        if line.first() == Some(&b':') {
            return; // a comment
        }
        let (name_len, value_start) = match line.iter().position(|&c| c == b':') {
            Some(colon) => {
                let skip = usize::from(line.get(colon + 1) == Some(&b' '));
                (colon, colon + 1 + skip)
            }
            None => (len, len),
        };
        let name = line.get(..name_len).unwrap_or(&[]);
        let value = start + value_start..start + len;
        match name {
            b"data" => self.append_data(value),
            b"event" => self.set_event(value),
            b"id" => self.set_id(value),
            b"retry" => {
                let digits = self.buf.slots().get(value).unwrap_or(&[]);
                if !digits.is_empty() && digits.iter().all(u8::is_ascii_digit) {
                    let ms = digits.iter().fold(0u64, |acc, &d| {
                        acc.saturating_mul(10).saturating_add(u64::from(d - b'0'))
                    });
                    self.ready = Some(Ready::Retry(ms));
                }
            }
            _ => {}
        }
    }

    /// Moves a `data` value (in the line area) to the end of the data, followed by LF: the
    /// event type, between them, moves up.
    fn append_data(&mut self, value: core::ops::Range<usize>) {
        let len = value.len();
        let needed = self.data + len + 1 + self.event;
        if needed > self.buf.slots().len() {
            let cap = self.buf.slots().len();
            if B::GROWS && cap < self.limit {
                let size = crate::slots::next_size(cap, needed, self.limit);
                self.buf.grow_to(size, 0);
            }
            if needed > self.buf.slots().len() {
                self.skipping = true;
                return;
            }
        }
        let buf = self.buf.slots_mut();
        // The line (after the type) holds the value; the type sits between data and line.
        // Rotate [data .. value.end) so the value comes first, then the type.
        let (data, event) = (self.data, self.event);
        if let Some(span) = buf.get_mut(data..value.end) {
            span.rotate_right(len);
        }
        // Now the value is at [data..data+len], the type at [data+len..data+len+event] (the
        // line's name bytes, before the value, follow and are dropped). Insert the LF after the
        // value by moving the type up one byte: there is room, the name was at least 4 bytes.
        buf.copy_within(data + len..data + len + event, data + len + 1);
        if let Some(b) = buf.get_mut(data + len) {
            *b = b'\n';
        }
        self.data += len + 1;
        self.has_data = true;
    }

    fn set_event(&mut self, value: core::ops::Range<usize>) {
        let len = value.len();
        let at = self.data;
        self.buf.slots_mut().copy_within(value, at);
        self.event = len;
    }

    fn set_id(&mut self, value: core::ops::Range<usize>) {
        let v = self.buf.slots().get(value).unwrap_or(&[]);
        if v.contains(&0) {
            return; // an id with NUL is ignored
        }
        // Longer than we keep: ignored too (documented at `MAX_ID_LEN`).
        if let Some(dst) = self.last_id.get_mut(..v.len()) {
            dst.copy_from_slice(v);
            self.last_id_len = v.len();
        }
    }

    fn dispatch(&mut self) {
        // The last event id string takes the buffer's value at every blank line, even one
        // that dispatches nothing.
        self.event_id = self.last_id;
        self.event_id_len = self.last_id_len;
        let (data, event, had) = (self.data, self.event, self.has_data);
        let skipped = self.skipping;
        self.data = 0;
        self.event = 0;
        self.has_data = false;
        self.skipping = false;
        if skipped {
            self.ready = Some(Ready::TooLarge);
            return;
        }
        if !had {
            return; // an event without data fires nothing
        }
        let bytes = self.buf.slots().get(..data + event).unwrap_or(&[]);
        let id = self.event_id.get(..self.event_id_len).unwrap_or(&[]);
        if core::str::from_utf8(bytes).is_err() || core::str::from_utf8(id).is_err() {
            self.ready = Some(Ready::InvalidUtf8);
            return;
        }
        self.ready = Some(Ready::Event { data, event });
    }
}

impl<'a> From<SseEvent<'a>> for SseItem<'a> {
    fn from(e: SseEvent<'a>) -> Self {
        SseItem::Event(e)
    }
}

/// Writes one event: an optional `event` type and `id`, and `data` as one `data:` line per
/// line of it (CR, LF and CRLF all split lines), then the blank line that dispatches it. An
/// `event` or `id` containing a line break is written up to it (the format cannot carry it).
pub fn write_event(sink: &mut impl Sink, event: Option<&str>, id: Option<&str>, data: &str) {
    if let Some(event) = event {
        sink.put(b"event: ");
        sink.put(first_line(event).as_bytes());
        sink.put(b"\n");
    }
    if let Some(id) = id {
        sink.put(b"id: ");
        sink.put(first_line(id).as_bytes());
        sink.put(b"\n");
    }
    let mut rest = data;
    loop {
        let (line, after) = match rest.find(['\r', '\n']) {
            Some(end) => rest.split_at(end),
            None => (rest, ""),
        };
        sink.put(b"data: ");
        sink.put(line.as_bytes());
        sink.put(b"\n");
        if after.is_empty() {
            break;
        }
        let skip = if after.starts_with("\r\n") { 2 } else { 1 };
        rest = after.get(skip..).unwrap_or("");
    }
    sink.put(b"\n");
}

/// The text up to its first line break.
fn first_line(s: &str) -> &str {
    s.split(['\r', '\n']).next().unwrap_or("")
}

/// Writes a comment line (`: text`), the keep-alive of an idle stream.
pub fn write_comment(sink: &mut impl Sink, text: &str) {
    sink.put(b": ");
    sink.put(first_line(text).as_bytes());
    sink.put(b"\n");
}

/// Writes a `retry` field: the reconnection time a client should use, in milliseconds.
pub fn write_retry(sink: &mut impl Sink, ms: u64) {
    sink.put(b"retry: ");
    crate::bytes::put_u64(sink, ms);
    sink.put(b"\n");
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::indexing_slicing)]
mod tests {
    use super::*;
    use crate::wire::ser::SliceSink;
    use std::string::String;
    use std::vec::Vec;

    /// Feeds `stream` in pieces of `chunk` bytes and collects what comes out.
    fn decode(stream: &[u8], chunk: usize) -> Vec<String> {
        let mut dec: SseDecoder<[u8; 256]> = SseDecoder::new();
        let mut out = Vec::new();
        for piece in stream.chunks(chunk.max(1)) {
            let mut input = piece;
            while let Some(item) = dec.next(&mut input) {
                out.push(match item {
                    SseItem::Event(e) => std::format!("{}|{}|{}", e.event, e.id, e.data),
                    other => std::format!("{other:?}"),
                });
            }
        }
        out
    }

    #[test]
    fn every_line_end_and_split_point_gives_the_same_events() {
        let base = "\u{FEFF}: hi\nevent: e1\ndata: a\ndata:b\nid: 1\n\ndata\n\nretry: 1500\nretry: x\nid: 2\0\ndata: c\n\nevent: lone\n\ndata: tail";
        for eol in ["\n", "\r\n", "\r"] {
            let text = base.replace('\n', eol);
            let expected = ["e1|1|a\nb", "message|1|", "Retry(1500)", "message|1|c"];
            for chunk in 1..text.len() + 1 {
                assert_eq!(
                    decode(text.as_bytes(), chunk),
                    expected,
                    "eol {eol:?} chunk {chunk}"
                );
            }
        }
    }

    #[test]
    fn one_empty_data_line_is_an_event_with_empty_data_and_ids_take_effect_at_blank_lines() {
        // "data:" appends "" and a LF: the buffer is not empty, so the event fires (WHATWG).
        assert_eq!(decode(b"data:\n\n", 1), ["message||"]);
        // An id takes effect at the blank line, with or without data.
        let mut dec: SseDecoder<[u8; 64]> = SseDecoder::new();
        let mut input: &[u8] = b"id: 1\n\nid: 2\ndata: x";
        assert_eq!(dec.next(&mut input), None);
        assert_eq!(dec.last_event_id(), "1");
        dec.reset(); // the connection dropped before the blank line
        let mut input: &[u8] = b"data: y\n\n";
        match dec.next(&mut input) {
            Some(SseItem::Event(e)) => assert_eq!((e.id, e.data), ("1", "y")),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn only_one_leading_bom_is_dropped() {
        assert_eq!(decode("\u{FEFF}data: x\n\n".as_bytes(), 1), ["message||x"]);
        let two = "\u{FEFF}\u{FEFF}data: x\n\n";
        // The second mark starts a line whose name is "\u{FEFF}data": an unknown field.
        assert_eq!(decode(two.as_bytes(), 2), Vec::<String>::new());
    }

    #[test]
    fn an_event_over_the_buffer_is_skipped_and_the_next_one_decodes() {
        let big = std::format!("data: {}\n\ndata: ok\n\n", "x".repeat(300));
        assert_eq!(decode(big.as_bytes(), 7), ["TooLarge", "message||ok"]);
    }

    #[test]
    fn encoded_events_decode_back() {
        let mut buf = [0u8; 256];
        let mut sink = SliceSink::new(&mut buf);
        write_comment(&mut sink, "keep-alive");
        write_retry(&mut sink, 3000);
        write_event(
            &mut sink,
            Some("message"),
            Some("42"),
            "{\"a\":1}\r\nsecond\rthird",
        );
        let n = sink.len();
        assert_eq!(
            decode(&buf[..n], 3),
            ["Retry(3000)", "message|42|{\"a\":1}\nsecond\nthird"]
        );
    }
}
