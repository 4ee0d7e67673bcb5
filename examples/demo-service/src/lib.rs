#![no_std]
//! The demo service: the methods of the JSON-RPC 2.0 specification's examples, answered on a
//! core [`Connection`] with no heap, so the same code serves in tests, on a host and in
//! firmware.
//!
//! | method | params | result |
//! |---|---|---|
//! | `subtract` | `[minuend, subtrahend]` or `{"minuend", "subtrahend"}` | the difference (an integer for integers) |
//! | `sum` | array of numbers | the sum (an integer when all are integers) |
//! | `get_data` | none | `["hello", 5]` |
//! | `echo` | anything | the params, byte-exact (`null` when absent) |
//! | `update`, `notify_hello`, `notify_sum` | anything | `null` when called as requests |
//!
//! Any other method is answered with Method not found; wrong params with Invalid params.
//!
//! ```
//! use rpcwire::{Connection, Input, Instant, wire::RxBuffer};
//! let mut conn: Connection = Connection::default();
//! let mut rx: RxBuffer<[u8; 1024]> = conn.rx_buffer();
//! let mut input = &b"{\"jsonrpc\":\"2.0\",\"method\":\"sum\",\"params\":[1,2,4],\"id\":1}\n"[..];
//! while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
//!     rpcwire_demo::handle(&mut conn, item);
//! }
//! assert_eq!(conn.poll_transmit(), b"{\"jsonrpc\":\"2.0\",\"result\":7,\"id\":1}\n");
//! ```

pub mod spec;

use rpcwire::storage::Storage;
use rpcwire::wire::RawJson;
use rpcwire::{Connection, ErrorCode, Inbound, InboundRequest, RespondError};

/// A JSON number kept in its kind: integers stay integers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(untagged)]
pub enum Number {
    /// An integer.
    Int(i64),
    /// A number with a fraction or exponent, or an integer beyond `i64`.
    Float(f64),
}

impl Number {
    /// A JSON number's text keeps its kind: integer syntax that fits `i64` stays an integer.
    /// (JSON's number grammar is a subset of what `str::parse` accepts for both types.)
    fn parse(raw: RawJson<'_>) -> Option<Number> {
        let bytes = raw.as_bytes();
        if !matches!(bytes.first(), Some(b'-' | b'0'..=b'9')) {
            return None;
        }
        if let Some(i) = parse_i64(bytes) {
            return Some(Number::Int(i));
        }
        raw.as_str()
            .parse::<f64>()
            .ok()
            .filter(|f| f.is_finite())
            .map(Number::Float)
    }

    fn as_f64(self) -> f64 {
        match self {
            Number::Int(i) => i as f64,
            Number::Float(f) => f,
        }
    }

    fn sub(self, other: Number) -> Number {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => match a.checked_sub(b) {
                Some(d) => Number::Int(d),
                None => Number::Float(a as f64 - b as f64),
            },
            (a, b) => Number::Float(a.as_f64() - b.as_f64()),
        }
    }

    fn add(self, other: Number) -> Number {
        match (self, other) {
            (Number::Int(a), Number::Int(b)) => match a.checked_add(b) {
                Some(s) => Number::Int(s),
                None => Number::Float(a as f64 + b as f64),
            },
            (a, b) => Number::Float(a.as_f64() + b.as_f64()),
        }
    }
}

/// `subtract`'s params: `[minuend, subtrahend]` or `{"minuend": .., "subtrahend": ..}`.
pub fn subtract_params(params: RawJson<'_>) -> Option<(Number, Number)> {
    if params.is_array() {
        let mut it = params.elements();
        let a = Number::parse(it.next()?)?;
        let b = Number::parse(it.next()?)?;
        return it.next().is_none().then_some((a, b));
    }
    let (mut minuend, mut subtrahend) = (None, None);
    for (key, value) in params.members() {
        if key.eq_str("minuend") {
            minuend = Number::parse(value);
        } else if key.eq_str("subtrahend") {
            subtrahend = Number::parse(value);
        }
    }
    Some((minuend?, subtrahend?))
}

/// An integer written as JSON writes one (optional `-`, digits), if it fits `i64`: read from
/// the bytes, as most params are small integers and need no UTF-8 view.
fn parse_i64(bytes: &[u8]) -> Option<i64> {
    let (negative, digits) = match bytes.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &b in digits {
        let d = i64::from(b.checked_sub(b'0').filter(|d| *d < 10)?);
        v = v.checked_mul(10)?.checked_sub(d)?;
    }
    if negative {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// `sum`'s params: an array of numbers.
pub fn sum_params(params: RawJson<'_>) -> Option<Number> {
    if !params.is_array() {
        return None;
    }
    params
        .elements()
        .try_fold(Number::Int(0), |acc, e| Some(acc.add(Number::parse(e)?)))
}

/// Handles one inbound item: answers requests, ignores notifications and everything else.
/// Returns the result of answering, for drivers that retry on `WouldBlock`.
pub fn handle<S: Storage>(conn: &mut Connection<S>, item: Inbound<'_>) -> Result<(), RespondError> {
    match item {
        Inbound::Request(req) => answer(conn, &req),
        _ => Ok(()),
    }
}

/// Answers one request.
pub fn answer<S: Storage>(
    conn: &mut Connection<S>,
    req: &InboundRequest<'_>,
) -> Result<(), RespondError> {
    let h = req.handle;
    let method = req.method.as_str().unwrap_or("");
    match method {
        "subtract" => match req.params.and_then(subtract_params) {
            Some((a, b)) => conn.respond(h, &a.sub(b)),
            None => conn.reject(h, ErrorCode::INVALID_PARAMS),
        },
        "sum" => match req.params.and_then(sum_params) {
            Some(total) => conn.respond(h, &total),
            None => conn.reject(h, ErrorCode::INVALID_PARAMS),
        },
        "get_data" => conn.respond(h, &("hello", 5)),
        "echo" => match req.params {
            Some(p) => conn.respond(h, &p),
            None => conn.respond(h, &()),
        },
        "update" | "notify_hello" | "notify_sum" => conn.respond(h, &()),
        _ => conn.reject(h, ErrorCode::METHOD_NOT_FOUND),
    }
}
