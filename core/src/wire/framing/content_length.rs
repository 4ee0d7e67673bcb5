//! The `Content-Length` header (LSP style): its limits, reading a header block and writing one.
//! Only the limits exist without the `content-length` feature (they size buffers either way).

#[cfg(feature = "content-length")]
use crate::bytes::find_byte;
#[cfg(feature = "content-length")]
use crate::wire::ser::{Sink, SliceSink};

/// The longest `Content-Length` header block accepted, terminator included.
pub const MAX_HEADER_BLOCK: usize = 1024;

/// The room a `Content-Length` header may take in front of a body when encoding.
pub const MAX_HEADER_LEN: usize = "Content-Length: 18446744073709551615\r\n\r\n".len();

/// Offset of `\r\n\r\n` in `data`, searching from `from`.
#[cfg(feature = "content-length")]
pub(super) fn find_header_end(data: &[u8], from: usize) -> Option<usize> {
    // A `\r` search then a check: header blocks are short, and this needs no substring
    // searcher in firmware.
    let mut at = from;
    loop {
        let cr = find_byte(b'\r', data, at)?;
        if data.get(cr..cr + 4) == Some(b"\r\n\r\n") {
            return Some(cr);
        }
        at = cr + 1;
    }
}

/// How a header block read with line framing starts (see `RxBuffer::seeks_line`).
#[cfg(feature = "content-length")]
pub(super) const HEADER_PREFIX: &[u8] = b"content-length:";

/// How [`content_length_header`] starts its header (and [`split_frame`](super::split_frame) reads it back).
#[cfg(feature = "content-length")]
pub(super) const WRITTEN_PREFIX: &[u8] = b"Content-Length: ";

/// The header that resynchronises content-length framing.
#[cfg(feature = "content-length")]
pub(super) const HEADER_NAME: &[u8] = b"content-length";

/// Offset of the first `Content-Length` header name in `data` (any ASCII case).
#[cfg(feature = "content-length")]
pub(super) fn find_header_name(data: &[u8]) -> Option<usize> {
    data.windows(HEADER_NAME.len())
        .position(|w| w.eq_ignore_ascii_case(HEADER_NAME))
}

/// Parses the `Content-Length` of a header block (without its final blank line). Header names
/// are case-insensitive; other headers are ignored; a missing, repeated or non-numeric length
/// is an error.
///
/// ```
/// use rpcwire::wire::framing::parse_content_length;
/// assert_eq!(parse_content_length(b"Content-Type: x\r\ncontent-length: 12"), Some(12));
/// assert_eq!(parse_content_length(b"Content-Type: x"), None);
/// ```
#[cfg(feature = "content-length")]
pub fn parse_content_length(block: &[u8]) -> Option<usize> {
    let mut found = None;
    for line in block.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let colon = line.iter().position(|&b| b == b':')?;
        let (name, value) = line.split_at(colon);
        let value = value.get(1..).unwrap_or(&[]);
        if name.eq_ignore_ascii_case(b"content-length") {
            if found.is_some() {
                return None;
            }
            let value = value.trim_ascii();
            found = Some(usize::try_from(crate::bytes::parse_u64(value)?).ok()?);
        }
    }
    found
}

/// The `Content-Length: N\r\n\r\n` header of a body of `len` bytes, written into `out` (room
/// for any `usize`): what frames a body when the bytes around it are the caller's (a body
/// handed over whole, a message cut out of another transport).
///
/// ```
/// use rpcwire::wire::framing::{content_length_header, MAX_HEADER_LEN};
/// let mut out = [0u8; MAX_HEADER_LEN];
/// assert_eq!(content_length_header(42, &mut out), b"Content-Length: 42\r\n\r\n");
/// ```
#[cfg(feature = "content-length")]
pub fn content_length_header(len: usize, out: &mut [u8; MAX_HEADER_LEN]) -> &[u8] {
    let written = {
        let mut sink = SliceSink::new(out);
        sink.put(WRITTEN_PREFIX);
        put_usize(&mut sink, len);
        sink.put(b"\r\n\r\n");
        sink.len()
    };
    out.get(..written).unwrap_or(&[])
}

/// Writes `n` in decimal.
#[cfg(feature = "content-length")]
fn put_usize(sink: &mut impl Sink, n: usize) {
    crate::bytes::put_u64(sink, n as u64);
}

#[cfg(feature = "content-length")]
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn content_length_header_renders_and_parses_back() {
        let mut out = [0u8; MAX_HEADER_LEN];
        for n in [0usize, 7, 10, 1234, usize::MAX] {
            let header = content_length_header(n, &mut out).to_vec();
            let text = std::str::from_utf8(&header).unwrap();
            assert_eq!(text, std::format!("Content-Length: {n}\r\n\r\n"));
            assert_eq!(parse_content_length(&header[..header.len() - 4]), Some(n));
        }
        assert_eq!(
            parse_content_length(b"Content-Type: x\r\ncontent-length: 12"),
            Some(12)
        );
        assert_eq!(parse_content_length(b"Content-Type: x"), None);
    }
}
