//! Already-encoded JSON handed to the core's encoder verbatim.

use rpcwire::wire::ser::RAW_JSON_TOKEN;
use serde::{Serialize, Serializer};

/// JSON text produced by `serde_json` (so known valid), embedded as is by rpcwire's encoder.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Raw<'a>(pub(crate) &'a str);

impl Serialize for Raw<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(RAW_JSON_TOKEN, self.0)
    }
}

/// Serializes `params` for the wire: `None` for `null` (no params member), the text for an
/// array or object, an error for anything else (the specification allows only those).
pub(crate) fn encode_params<P: Serialize + ?Sized>(
    params: &P,
) -> Result<Option<String>, crate::CallError> {
    let text = serde_json::to_string(params).map_err(crate::CallError::Params)?;
    match text.as_bytes().first() {
        Some(b'[' | b'{') => Ok(Some(text)),
        _ if text == "null" => Ok(None),
        _ => Err(crate::CallError::ParamsNotStructured),
    }
}
