//! The send side: a frame encoded into a caller's buffer (its body, then the framing's line end
//! or header), and the first frame of such bytes read back out (for a transport that carries
//! each message itself).

#[cfg(feature = "content-length")]
use super::content_length::{
    content_length_header, find_header_end, parse_content_length, MAX_HEADER_LEN, WRITTEN_PREFIX,
};
use super::kind::Framing;
use crate::bytes::find_byte;
use crate::wire::ser::{SerializeError, SliceSink};

/// Error from encoding a frame into a caller buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum EncodeError {
    /// The buffer is too small; `required` is the exact frame length.
    BufferTooSmall {
        /// Bytes the frame needs.
        required: usize,
    },
    /// A value could not be serialized.
    Serialize(SerializeError),
}

impl core::fmt::Display for EncodeError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            EncodeError::BufferTooSmall { required } => {
                write!(f, "buffer too small: {required} bytes required")
            }
            EncodeError::Serialize(e) => write!(f, "cannot serialize: {e}"),
        }
    }
}

impl core::error::Error for EncodeError {}

impl From<SerializeError> for EncodeError {
    fn from(e: SerializeError) -> Self {
        EncodeError::Serialize(e)
    }
}

/// Bytes to leave in front of a body so that [`finish_frame`] can add the framing's header.
pub const fn frame_reserve(framing: Framing) -> usize {
    match framing {
        Framing::Line => 0,
        #[cfg(feature = "content-length")]
        Framing::ContentLength => MAX_HEADER_LEN,
    }
}

/// Completes a frame whose body (of `body_len` bytes) was written at `buf[frame_reserve(..)..]`:
/// adds the newline, or writes the header and moves the body up behind it. Returns the frame
/// length.
pub fn finish_frame(
    framing: Framing,
    buf: &mut [u8],
    body_len: usize,
) -> Result<usize, EncodeError> {
    match framing {
        Framing::Line => {
            let required = body_len + 1;
            match buf.get_mut(body_len) {
                Some(b) => {
                    *b = b'\n';
                    Ok(required)
                }
                None => Err(EncodeError::BufferTooSmall { required }),
            }
        }
        #[cfg(feature = "content-length")]
        Framing::ContentLength => {
            let reserve = MAX_HEADER_LEN;
            let mut header = [0u8; MAX_HEADER_LEN];
            let header_len = content_length_header(body_len, &mut header).len();
            let required = header_len + body_len;
            if reserve + body_len > buf.len() {
                return Err(EncodeError::BufferTooSmall { required });
            }
            buf.copy_within(reserve..reserve + body_len, header_len);
            if let (Some(dst), Some(src)) = (buf.get_mut(..header_len), header.get(..header_len)) {
                dst.copy_from_slice(src);
            }
            Ok(required)
        }
    }
}

/// The first frame of `data`, which starts where a frame that [`finish_frame`] completed
/// starts: its body and the frame's whole length, or `None` when `data` does not hold a whole
/// frame. For a transport that carries each message itself (an HTTP body) and takes a
/// connection's output apart again; the header [`content_length_header`] writes is read
/// without a general header parse.
///
/// (The examples use `Content-Length` framing: with the feature `content-length` off they
/// are not run.)
///
#[cfg_attr(feature = "content-length", doc = "```")]
#[cfg_attr(not(feature = "content-length"), doc = "```ignore")]
/// use rpcwire::wire::framing::split_frame;
/// use rpcwire::wire::Framing;
/// let out = b"Content-Length: 2\r\n\r\n{}Content-Length: 4\r\n\r\n[1]\n";
/// assert_eq!(split_frame(Framing::ContentLength, out), Some((&b"{}"[..], 23)));
/// assert_eq!(split_frame(Framing::ContentLength, &out[23..]), Some((&b"[1]\n"[..], 25)));
/// assert_eq!(split_frame(Framing::ContentLength, &out[23..40]), None);
/// // Another writer's header block is read too.
/// for other in [&b"content-type: x\r\ncontent-length: 1\r\n\r\n7"[..], b"Content-Length: 1\r\nX: y\r\n\r\n7"] {
///     assert_eq!(split_frame(Framing::ContentLength, other), Some((&b"7"[..], other.len())));
/// }
/// assert_eq!(split_frame(Framing::Line, b"{}\n[]\n"), Some((&b"{}"[..], 3)));
/// ```
pub fn split_frame(framing: Framing, data: &[u8]) -> Option<(&[u8], usize)> {
    match framing {
        Framing::Line => {
            let nl = find_byte(b'\n', data, 0)?;
            Some((data.get(..nl)?, nl + 1))
        }
        #[cfg(feature = "content-length")]
        Framing::ContentLength => {
            // The header this crate writes, read directly: the prefix, digits, the blank line.
            let written = data.strip_prefix(WRITTEN_PREFIX).and_then(|rest| {
                let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
                if digits == 0 || rest.get(digits..digits + 4)? != b"\r\n\r\n" {
                    return None;
                }
                let len = usize::try_from(crate::bytes::parse_u64(rest.get(..digits)?)?).ok()?;
                Some((len, WRITTEN_PREFIX.len() + digits + 4))
            });
            let (len, header) = match written {
                Some(found) => found,
                // Any other header block.
                None => {
                    let term = find_header_end(data, 0)?;
                    (parse_content_length(data.get(..term)?)?, term + 4)
                }
            };
            let total = header.checked_add(len)?;
            Some((data.get(header..total)?, total))
        }
    }
}

/// Encodes one frame into `buf`: `body` writes the JSON text, and the framing's delimiter or
/// header is added. Returns the frame length, or the exact buffer size required (for
/// content-length this includes [`MAX_HEADER_LEN` bytes](super::MAX_HEADER_LEN) of header room).
///
/// (The examples use `Content-Length` framing: with the feature `content-length` off they
/// are not run.)
///
#[cfg_attr(feature = "content-length", doc = "```")]
#[cfg_attr(not(feature = "content-length"), doc = "```ignore")]
/// use rpcwire::wire::{write_frame, Framing, ser::Sink};
/// let mut buf = [0u8; 64];
/// let n = write_frame(Framing::ContentLength, &mut buf, |s| { s.put(b"{}"); Ok(()) }).unwrap();
/// assert_eq!(&buf[..n], b"Content-Length: 2\r\n\r\n{}");
/// ```
pub fn write_frame(
    framing: Framing,
    buf: &mut [u8],
    body: impl FnOnce(&mut SliceSink<'_>) -> Result<(), SerializeError>,
) -> Result<usize, EncodeError> {
    let reserve = frame_reserve(framing);
    let body_len = {
        let mut sink = SliceSink::new(buf.get_mut(reserve..).unwrap_or(&mut []));
        body(&mut sink)?;
        sink.len()
    };
    let delimiter = match framing {
        Framing::Line => 1,
        #[cfg(feature = "content-length")]
        Framing::ContentLength => 0,
    };
    if reserve + body_len + delimiter > buf.len() {
        // The body is encoded in place behind the header room, so that room counts too.
        return Err(EncodeError::BufferTooSmall {
            required: reserve + body_len + delimiter,
        });
    }
    finish_frame(framing, buf, body_len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ser::Sink;

    #[test]
    fn encode_line_and_too_small() {
        let mut buf = [0u8; 4];
        let r = write_frame(Framing::Line, &mut buf, |s| {
            s.put(b"[1,2]");
            Ok(())
        });
        assert_eq!(r, Err(EncodeError::BufferTooSmall { required: 6 }));
        let mut buf = [0u8; 6];
        assert_eq!(
            write_frame(Framing::Line, &mut buf, |s| {
                s.put(b"[1,2]");
                Ok(())
            }),
            Ok(6)
        );
        assert_eq!(&buf, b"[1,2]\n");
    }
}
