//! The stateless revision's request metadata (2026-07-28 Streamable HTTP, "Request Metadata"
//! and "Server Validation"): the headers that mirror a POST's body, the sentinel encoding of
//! their values, and the errors a server answers when they are missing or disagree with the
//! body.

use std::prelude::rust_2021::*;

use std::borrow::Cow;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use rpcwire::ErrorCode;

/// `HeaderMismatch`: a required header (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`) is
/// missing or malformed, or does not say what the body says. Answered with HTTP 400.
pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
/// `UnsupportedProtocolVersionError` (the profile's code), answered here with HTTP 400.
pub use crate::methods::UNSUPPORTED_PROTOCOL_VERSION;

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// A header value as the client sends it: `value` itself when it is plain visible ASCII (with
/// inner spaces) that cannot be mistaken for an encoded value, else
/// `=?base64?{Base64 of its UTF-8}?=`.
pub(crate) fn encode_value(value: &str) -> Cow<'_, str> {
    let plain = value
        .bytes()
        .all(|b| b == b' ' || b == b'\t' || (0x21..0x7f).contains(&b))
        && value.trim_matches([' ', '\t']) == value
        && !is_sentinel(value);
    if plain {
        Cow::Borrowed(value)
    } else {
        Cow::Owned(format!(
            "{SENTINEL_START}{}{SENTINEL_END}",
            STANDARD.encode(value)
        ))
    }
}

/// A header value as the server compares it with the body: decoded when it is in the sentinel
/// form; `None` when the sentinel holds no valid Base64 of UTF-8 (a malformed header).
pub(crate) fn decode_value(value: &str) -> Option<Cow<'_, str>> {
    if !is_sentinel(value) {
        return Some(Cow::Borrowed(value));
    }
    let inner = &value[SENTINEL_START.len()..value.len() - SENTINEL_END.len()];
    let bytes = STANDARD.decode(inner).ok()?;
    String::from_utf8(bytes).ok().map(Cow::Owned)
}

/// The sentinel form: the markers are case-sensitive and must both be there.
fn is_sentinel(value: &str) -> bool {
    value.len() >= SENTINEL_START.len() + SENTINEL_END.len()
        && value.starts_with(SENTINEL_START)
        && value.ends_with(SENTINEL_END)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_values_pass_and_others_are_encoded() {
        assert_eq!(encode_value("get_weather"), "get_weather");
        assert_eq!(encode_value("file:///a b.txt"), "file:///a b.txt");
        // The specification's own examples.
        assert_eq!(
            encode_value("Hello, 世界"),
            "=?base64?SGVsbG8sIOS4lueVjA==?="
        );
        assert_eq!(encode_value(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(encode_value("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(
            encode_value("=?base64?literal?="),
            "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="
        );
    }

    #[test]
    fn decoding_undoes_encoding_and_refuses_bad_base64() {
        for v in [
            "get_weather",
            "Hello, 世界",
            " padded ",
            "line1\nline2",
            "=?base64?x?=",
        ] {
            assert_eq!(decode_value(&encode_value(v)).as_deref(), Some(v));
        }
        // Not the sentinel form (wrong case, one marker only): taken literally.
        assert_eq!(
            decode_value("=?BASE64?SGk=?=").as_deref(),
            Some("=?BASE64?SGk=?=")
        );
        assert_eq!(
            decode_value("=?base64?SGk=").as_deref(),
            Some("=?base64?SGk=")
        );
        // The sentinel form around something that is not Base64 of UTF-8.
        assert_eq!(decode_value("=?base64?SGk?="), None);
        assert_eq!(decode_value("=?base64?/w==?="), None);
        assert_eq!(decode_value("=?base64??=").as_deref(), Some(""));
    }
}
