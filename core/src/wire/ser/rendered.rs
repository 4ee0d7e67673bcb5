//! JSON text rendered beforehand, written verbatim into a frame.

use serde::{Serialize, Serializer};

use super::serializer::RAW_JSON_TOKEN;

/// JSON text rendered beforehand (by [`to_slice`](super::to_slice), say), written verbatim
/// into a frame through [`RAW_JSON_TOKEN`]: one type for every value, so that a connection's
/// `respond` or `send_notification` is compiled once for all of them (a firmware's method
/// table renders every result into a buffer, then answers with this). The bytes must be
/// valid JSON; they are not checked.
///
/// ```
/// use rpcwire::wire::ser::{to_slice, Rendered};
///
/// let mut text = [0u8; 16];
/// let len = to_slice(&[1.5f32, 2.0], &mut text).unwrap();
/// let mut frame = [0u8; 32];
/// let n = to_slice(&("sum", Rendered(&text[..len])), &mut frame).unwrap();
/// assert_eq!(&frame[..n], br#"["sum",[1.5,2.0]]"#);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rendered<'a>(pub &'a [u8]);

impl Serialize for Rendered<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// Bytes, so that the serializer takes them without a UTF-8 check.
        struct Bytes<'a>(&'a [u8]);
        impl Serialize for Bytes<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_bytes(self.0)
            }
        }
        s.serialize_newtype_struct(RAW_JSON_TOKEN, &Bytes(self.0))
    }
}
