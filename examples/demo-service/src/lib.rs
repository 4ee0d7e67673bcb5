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
#[cfg_attr(target_pointer_width = "64", inline)]
pub fn subtract_params(params: RawJson<'_>) -> Option<(Number, Number)> {
    // Two integers, the usual call, are read in one walk; anything else (floats, integers
    // beyond `i64`, other members) the general way below, which gives the same for these.
    let ints = if params.is_array() {
        params.int_array::<2>()
    } else {
        params.int_members([&b"minuend"[..], b"subtrahend"])
    };
    if let Some([a, b]) = ints {
        return Some((Number::Int(a), Number::Int(b)));
    }
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

/// The methods every demo server answers, in the order of the table above. The CLI's
/// server adds `sleep` and `fail`, which need a runtime.
pub const METHODS: &[&str] = &[
    "subtract",
    "sum",
    "get_data",
    "echo",
    "update",
    "notify_hello",
    "notify_sum",
];

/// The answer of a demo method: a number, `["hello", 5]`, the params back (`null` when
/// absent), or `null`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer<'a> {
    /// `subtract` and `sum`.
    Number(Number),
    /// `get_data`.
    Data,
    /// `echo`: the params, byte-exact.
    Echo(Option<RawJson<'a>>),
    /// `update`, `notify_hello`, `notify_sum` called as requests.
    Null,
}

impl Answer<'_> {
    /// The answer without a borrow of the request; `None` for `echo` with params (copy them
    /// to keep them).
    pub fn into_static(self) -> Option<Answer<'static>> {
        match self {
            Answer::Number(n) => Some(Answer::Number(n)),
            Answer::Data => Some(Answer::Data),
            Answer::Echo(None) => Some(Answer::Echo(None)),
            Answer::Echo(Some(_)) => None,
            Answer::Null => Some(Answer::Null),
        }
    }
}

impl serde::Serialize for Answer<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Answer::Number(n) => n.serialize(s),
            Answer::Data => ("hello", 5).serialize(s),
            Answer::Echo(p) => p.serialize(s),
            Answer::Null => s.serialize_unit(),
        }
    }
}

/// Why a demo method refused a request: the error code, and what was expected (a data
/// string for servers that send one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Refusal {
    /// Method not found or Invalid params.
    pub code: ErrorCode,
    /// What the method expected (empty for Method not found).
    pub expected: &'static str,
}

/// Runs the demo method `method` (the name as on the wire) on `params`. The one place the
/// demo methods are defined: the core-level [`answer`], the CLI's tokio server and the tests
/// all call it.
#[cfg_attr(target_pointer_width = "64", inline)]
pub fn call<'a>(method: &[u8], params: Option<RawJson<'a>>) -> Result<Answer<'a>, Refusal> {
    let invalid = |expected| Refusal {
        code: ErrorCode::INVALID_PARAMS,
        expected,
    };
    match method {
        b"subtract" => params
            .and_then(subtract_params)
            .map(|(a, b)| Answer::Number(a.sub(b)))
            .ok_or(invalid(
                "expected [minuend, subtrahend] or {\"minuend\": .., \"subtrahend\": ..} with numbers",
            )),
        b"sum" => params
            .and_then(sum_params)
            .map(Answer::Number)
            .ok_or(invalid("expected an array of numbers")),
        b"get_data" => Ok(Answer::Data),
        b"echo" => Ok(Answer::Echo(params)),
        b"update" | b"notify_hello" | b"notify_sum" => Ok(Answer::Null),
        _ => Err(Refusal {
            code: ErrorCode::METHOD_NOT_FOUND,
            expected: "",
        }),
    }
}

/// Handles one inbound item: answers requests, ignores notifications and everything else.
/// Returns the result of answering, for drivers that retry on `WouldBlock`.
pub fn handle<S: Storage>(conn: &mut Connection<S>, item: Inbound<'_>) -> Result<(), RespondError> {
    match item {
        Inbound::Request(req) => answer(conn, &req),
        _ => Ok(()),
    }
}

/// Answers one request (a refusal with the code's standard message, which never blocks).
pub fn answer<S: Storage>(
    conn: &mut Connection<S>,
    req: &InboundRequest<'_>,
) -> Result<(), RespondError> {
    // The name as written: one with escapes matches no demo method, whose names have none
    // (no backslash, so no escaped text equals one), and is not found, as it should be.
    match call(req.method.escaped_bytes(), req.params) {
        Ok(answer) => conn.respond(req.handle, &answer),
        Err(refusal) => conn.reject(req.handle, refusal.code),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn params(text: &str) -> Option<RawJson<'_>> {
        Some(RawJson::parse(text, 16).unwrap())
    }

    #[test]
    fn every_listed_method_answers_and_others_are_not_found() {
        for name in METHODS {
            let p = if *name == "sum" { "[1]" } else { "[2, 1]" };
            assert!(call(name.as_bytes(), params(p)).is_ok(), "{name}");
        }
        let refused = call(b"nope", None).unwrap_err();
        assert_eq!(refused.code, ErrorCode::METHOD_NOT_FOUND);
        let refused = call(b"subtract", params("[1]")).unwrap_err();
        assert_eq!(refused.code, ErrorCode::INVALID_PARAMS);
        assert!(!refused.expected.is_empty());
    }

    #[test]
    fn integers_stay_integers_to_the_edges_of_i64() {
        assert_eq!(parse_i64(b"0"), Some(0));
        assert_eq!(parse_i64(b"-0"), Some(0));
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"1.5"), None);
        assert_eq!(parse_i64(b"-"), None);
        assert_eq!(
            call(b"subtract", params("[9223372036854775808, 1]")).unwrap(),
            Answer::Number(Number::Float(9223372036854775808.0 - 1.0))
        );
        assert_eq!(
            call(b"sum", params("[1, 2, 4]")).unwrap(),
            Answer::Number(Number::Int(7))
        );
    }
}
