//! Encoders for JSON-RPC 2.0 messages into any [`Sink`]: requests, notifications, results and
//! errors. Batches are these joined by `,` inside `[` `]`. Params and results are any
//! `serde::Serialize` (a [`RawJson`](super::RawJson) is embedded verbatim).
//!
//! ```
//! use rpcwire::wire::{encode, ser::SliceSink, Id};
//! let mut buf = [0u8; 64];
//! let mut sink = SliceSink::new(&mut buf);
//! encode::result(&mut sink, Id::from_json("1").unwrap().raw().as_bytes(), &19).unwrap();
//! assert_eq!(sink.written(), Some(&br#"{"jsonrpc":"2.0","result":19,"id":1}"#[..]));
//! ```

use serde::Serialize;

use super::ser::{to_sink, SerializeError, Sink};
use crate::code::ErrorCode;

/// The type of "no params": pass [`NO_PARAMS`] where a `params` argument is optional.
pub type NoParams = Option<&'static ()>;

/// No `params` member.
pub const NO_PARAMS: NoParams = None;

/// Writes a request with the id's JSON text `id`.
pub fn request<P: Serialize + ?Sized>(
    sink: &mut impl Sink,
    id: &[u8],
    method: &str,
    params: Option<&P>,
) -> Result<(), SerializeError> {
    sink.put(b"{\"jsonrpc\":\"2.0\",\"method\":");
    to_sink(method, sink)?;
    if let Some(p) = params {
        sink.put(b",\"params\":");
        to_sink(p, sink)?;
    }
    sink.put(b",\"id\":");
    sink.put(id);
    sink.put(b"}");
    Ok(())
}

/// Writes a notification.
pub fn notification<P: Serialize + ?Sized>(
    sink: &mut impl Sink,
    method: &str,
    params: Option<&P>,
) -> Result<(), SerializeError> {
    sink.put(b"{\"jsonrpc\":\"2.0\",\"method\":");
    to_sink(method, sink)?;
    if let Some(p) = params {
        sink.put(b",\"params\":");
        to_sink(p, sink)?;
    }
    sink.put(b"}");
    Ok(())
}

/// Writes a success response.
pub fn result<R: Serialize + ?Sized>(
    sink: &mut impl Sink,
    id: &[u8],
    result: &R,
) -> Result<(), SerializeError> {
    sink.put(b"{\"jsonrpc\":\"2.0\",\"result\":");
    to_sink(result, sink)?;
    sink.put(b",\"id\":");
    sink.put(id);
    sink.put(b"}");
    Ok(())
}

/// Writes an error response. `message` defaults to the code's standard message.
pub fn error<D: Serialize + ?Sized>(
    sink: &mut impl Sink,
    id: &[u8],
    code: ErrorCode,
    message: Option<&str>,
    data: Option<&D>,
) -> Result<(), SerializeError> {
    sink.put(b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":");
    put_i32(sink, code.0);
    sink.put(b",\"message\":");
    match message {
        Some(m) => to_sink(m, sink)?,
        None => {
            // Standard messages need no escaping.
            sink.put(b"\"");
            sink.put(code.message().as_bytes());
            sink.put(b"\"");
        }
    }
    if let Some(d) = data {
        sink.put(b",\"data\":");
        to_sink(d, sink)?;
    }
    sink.put(b"},\"id\":");
    sink.put(id);
    sink.put(b"}");
    Ok(())
}

/// Writes an error response with the standard message and no data (cannot fail).
pub fn standard_error(sink: &mut impl Sink, id: &[u8], code: ErrorCode) {
    auto_error(sink, id, code, None);
}

/// Writes an error response with the standard message and an optional `data` string that is
/// written as it is: it must need no JSON escaping (the connection's own data strings). No
/// serde, so that a firmware answering peer garbage links no serializer for it.
pub(crate) fn auto_error(sink: &mut impl Sink, id: &[u8], code: ErrorCode, data: Option<&str>) {
    match standard_head(code) {
        Some(head) => sink.put(head),
        None => {
            sink.put(b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":");
            put_i32(sink, code.0);
            sink.put(b",\"message\":\"");
            sink.put(code.message().as_bytes());
        }
    }
    if let Some(data) = data {
        sink.put(b"\",\"data\":\"");
        sink.put(data.as_bytes());
    }
    sink.put(b"\"},\"id\":");
    sink.put(id);
    sink.put(b"}");
}

/// What [`auto_error`] writes before the data or the id for the codes the core answers peer
/// garbage with, in one piece: no digit loop and one copy instead of four, on every parse error
/// and refused message. Hosts only: firmware keeps the general writer, which takes less flash.
#[cfg(target_pointer_width = "64")]
fn standard_head(code: ErrorCode) -> Option<&'static [u8]> {
    macro_rules! head {
        ($code:literal, $message:literal) => {
            concat!(
                "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":",
                $code,
                ",\"message\":\"",
                $message
            )
            .as_bytes()
        };
    }
    Some(match code.0 {
        -32700 => head!("-32700", "Parse error"),
        -32600 => head!("-32600", "Invalid Request"),
        -32601 => head!("-32601", "Method not found"),
        -32602 => head!("-32602", "Invalid params"),
        -32603 => head!("-32603", "Internal error"),
        -32001 => head!("-32001", "Server busy"),
        _ => return None,
    })
}

/// The whole line-framed frame [`auto_error`] writes for `code` with id `null` and no data
/// (newline included), for the codes the core answers peer garbage with: the reply to a parse
/// error is copied in one piece. Hosts only, as [`standard_head`].
#[cfg(target_pointer_width = "64")]
pub(crate) fn null_id_error_line(code: ErrorCode) -> Option<&'static [u8]> {
    macro_rules! line {
        ($code:literal, $message:literal) => {
            concat!(
                "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":",
                $code,
                ",\"message\":\"",
                $message,
                "\"},\"id\":null}\n"
            )
            .as_bytes()
        };
    }
    Some(match code.0 {
        -32700 => line!("-32700", "Parse error"),
        -32600 => line!("-32600", "Invalid Request"),
        _ => return None,
    })
}

/// Firmware: always the general writer.
#[cfg(not(target_pointer_width = "64"))]
fn standard_head(_: ErrorCode) -> Option<&'static [u8]> {
    None
}

/// The exact length [`standard_error`] writes for an id of `id_len` bytes.
pub fn standard_error_len(id_len: usize, code: ErrorCode) -> usize {
    let mut c = super::ser::CountingSink::default();
    standard_error(&mut c, &[], code);
    c.len + id_len
}

fn put_i32(sink: &mut impl Sink, v: i32) {
    // 32-bit divisions: one instruction each on a Cortex-M3, where the 64-bit digit writer
    // is a long division.
    let mut digits = [0u8; 11];
    let mut n = v.unsigned_abs();
    let mut len = 0;
    for slot in digits.iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
        len += 1;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        sink.put(b"-");
    }
    sink.put(digits.get(digits.len() - len..).unwrap_or(&[]));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::ser::SliceSink;

    #[test]
    fn standard_heads_are_what_the_general_writer_writes() {
        for code in [
            -32700, -32600, -32601, -32602, -32603, -32001, -32000, -32099, 0, 7,
        ] {
            let code = ErrorCode(code);
            let mut general = [0u8; 128];
            let mut sink = SliceSink::new(&mut general);
            sink.put(b"{\"jsonrpc\":\"2.0\",\"error\":{\"code\":");
            put_i32(&mut sink, code.0);
            sink.put(b",\"message\":\"");
            sink.put(code.message().as_bytes());
            let general = sink.written().unwrap();
            let standard = matches!(code.0, -32700 | -32603..=-32600 | -32001);
            match standard_head(code) {
                Some(head) => assert_eq!(head, general, "{code:?}"),
                None => assert!(!standard || !cfg!(target_pointer_width = "64"), "{code:?}"),
            }
        }
    }

    #[test]
    #[cfg(target_pointer_width = "64")]
    fn null_id_lines_are_what_the_general_writer_writes() {
        for code in [-32700, -32600, -32601, -32001, 0] {
            let code = ErrorCode(code);
            let mut general = [0u8; 128];
            let mut sink = SliceSink::new(&mut general);
            auto_error(&mut sink, b"null", code, None);
            sink.put(b"\n");
            let general = sink.written().unwrap();
            match null_id_error_line(code) {
                Some(line) => assert_eq!(line, general, "{code:?}"),
                None => assert!(!matches!(code.0, -32700 | -32600), "{code:?}"),
            }
        }
    }
}
