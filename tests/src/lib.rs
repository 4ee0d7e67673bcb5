//! Helpers shared by rpcwire's integration suites (in `tests/`).

use rpcwire::wire::RxBuffer;
use rpcwire::{Connection, Instant, Output};

/// Feeds `bytes` into a server-role connection running the demo service and returns every
/// byte it transmits in answer.
pub fn serve_bytes<const N: usize>(
    conn: &mut Connection,
    rx: &mut RxBuffer<N>,
    bytes: &[u8],
) -> Vec<u8> {
    let mut input = bytes;
    let mut out = Vec::new();
    loop {
        while let Some(item) = conn.handle_input(Instant::ZERO, rx, &mut input) {
            rpcwire_demo::handle(conn, item).expect("demo answers fit");
        }
        drain(conn, &mut out);
        if input.is_empty() && !conn.is_input_blocked() {
            return out;
        }
    }
}

/// Moves everything the connection wants to transmit into `out`.
pub fn drain(conn: &mut Connection, out: &mut Vec<u8>) {
    while let Output::Transmit(bytes) = conn.poll_output() {
        out.extend_from_slice(bytes);
        let n = bytes.len();
        conn.advance_transmit(n);
    }
}

/// Parses a JSON value, sorting the elements of a top-level array so that batch replies
/// compare as sets.
pub fn normalize(text: &str) -> serde_json::Value {
    let mut v: serde_json::Value = serde_json::from_str(text).expect("valid JSON");
    if let serde_json::Value::Array(items) = &mut v {
        items.sort_by_key(|i| i.to_string());
    }
    v
}

/// Splits content-length frames into their bodies.
pub fn content_length_bodies(mut bytes: &[u8]) -> Vec<String> {
    let mut bodies = Vec::new();
    while !bytes.is_empty() {
        let text = std::str::from_utf8(bytes).expect("utf-8");
        let header_end = text.find("\r\n\r\n").expect("header terminator");
        let len: usize = text[..header_end]
            .strip_prefix("Content-Length: ")
            .expect("content-length header")
            .parse()
            .expect("length");
        let body = &bytes[header_end + 4..header_end + 4 + len];
        bodies.push(String::from_utf8(body.to_vec()).expect("utf-8"));
        bytes = &bytes[header_end + 4 + len..];
    }
    bodies
}
