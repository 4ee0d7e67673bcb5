//! JSON text that rpcwire's own serializer rendered, handed to the connection to be written
//! verbatim (the outbox's notification params, the dispatch table's results).

use rpcwire::wire::ser::RAW_JSON_TOKEN;
use serde::{Serialize, Serializer};

/// Rendered JSON text, written verbatim into a frame: one type for every value, so that the
/// connection's `respond`/`send_notification` is compiled once for all of them.
pub(crate) struct Rendered<'a>(pub(crate) &'a [u8]);

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
