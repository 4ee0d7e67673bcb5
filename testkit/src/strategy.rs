//! proptest strategies for JSON-RPC traffic (feature `proptest`).
//!
//! [`case`] is the one most tests want: a few frames of valid requests, notifications and
//! batches over your methods, mixed with hostile frames, written in random chunks. The
//! pieces it is made of are here too, to build your own mix.

use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::case::{Case, Frame, Id, Message};

/// A method the strategies call, and the params to call it with.
#[derive(Debug, Clone)]
pub struct Method {
    name: String,
    params: BoxedStrategy<Option<Value>>,
}

/// A method called with params from `params` (arrays or objects; use [`any_params`] for
/// anything, valid or not).
///
/// ```
/// use proptest::prelude::*;
/// use rpcwire_testkit::strategy::method;
/// let add = method("add", (any::<i64>(), any::<i64>()).prop_map(|(a, b)| serde_json::json!([a, b])));
/// # let _ = add;
/// ```
pub fn method(name: &str, params: impl Strategy<Value = Value> + 'static) -> Method {
    Method {
        name: name.to_owned(),
        params: params.prop_map(Some).boxed(),
    }
}

/// A method called with no params, or with [`any_params`].
pub fn method_any(name: &str) -> Method {
    Method {
        name: name.to_owned(),
        params: prop_oneof![Just(None), any_params().prop_map(Some)].boxed(),
    }
}

/// Short strings with the characters that need care: quotes, backslashes, control
/// characters, non-ASCII (cheaper to generate than a regex strategy).
fn text() -> impl Strategy<Value = String> {
    const CHARS: &[char] = &[
        'a',
        'b',
        'z',
        '0',
        ' ',
        '"',
        '\\',
        '\n',
        '\u{1}',
        'é',
        '\u{1F600}',
    ];
    vec(prop::sample::select(CHARS), 0..12).prop_map(String::from_iter)
}

/// Object keys.
fn key() -> impl Strategy<Value = String> {
    prop::sample::select(&["a", "b", "name", "ms", "x y", "é"][..]).prop_map(str::to_owned)
}

/// A JSON value of any kind, up to two levels deep (built without `prop_recursive`, which
/// costs several times more per value).
pub fn json_value() -> impl Strategy<Value = Value> {
    prop_oneof![
        3 => leaf(),
        1 => vec(leaf(), 0..4).prop_map(Value::Array),
        1 => vec((key(), leaf()), 0..4).prop_map(|m| Value::Object(m.into_iter().collect())),
        1 => vec(vec(leaf(), 0..3).prop_map(Value::Array), 0..3).prop_map(Value::Array),
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e9f64..1e9).prop_map(Value::from),
        text().prop_map(Value::from),
    ]
}

/// Params of any structured kind: an array or an object of [`json_value`]s.
pub fn any_params() -> impl Strategy<Value = Value> {
    prop_oneof![
        vec(json_value(), 0..4).prop_map(Value::Array),
        vec((key(), json_value()), 0..4)
            .prop_map(|members| Value::Object(members.into_iter().collect())),
    ]
}

/// Request ids from a small pool (so that a case often holds duplicate ids), strings and
/// `null` included.
pub fn id() -> impl Strategy<Value = Id> {
    prop_oneof![
        4 => (0i64..8).prop_map(Id::Num),
        2 => prop::sample::select(&["a", "b", "", "a\"b"][..]).prop_map(|s| Id::Str(s.to_owned())),
        1 => any::<i64>().prop_map(Id::Num),
        1 => Just(Id::Null),
    ]
}

fn pick(methods: &[Method]) -> BoxedStrategy<(String, Option<Value>)> {
    if methods.is_empty() {
        return (text(), prop_oneof![Just(None), any_params().prop_map(Some)]).boxed();
    }
    let arms: Vec<BoxedStrategy<(String, Option<Value>)>> = methods
        .iter()
        .map(|m| {
            let name = m.name.clone();
            m.params
                .clone()
                .prop_map(move |p| (name.clone(), p))
                .boxed()
        })
        .collect();
    // Now and then a method nobody registered.
    let unknown = (text().prop_map(|n| format!("no_such_{n}")), Just(None)).boxed();
    prop_oneof![9 => proptest::strategy::Union::new(arms), 1 => unknown].boxed()
}

/// A request to one of `methods` (or, rarely, an unknown method).
pub fn request(methods: &[Method]) -> impl Strategy<Value = Message> {
    (pick(methods), id()).prop_map(|((method, params), id)| Message::Request { method, params, id })
}

/// A notification to one of `methods` (or, rarely, an unknown method).
pub fn notification(methods: &[Method]) -> impl Strategy<Value = Message> {
    pick(methods).prop_map(|(method, params)| Message::Notification { method, params })
}

/// A valid message: a request or a notification.
pub fn message(methods: &[Method]) -> impl Strategy<Value = Message> {
    prop_oneof![3 => request(methods), 1 => notification(methods)]
}

/// A batch of 1 to 6 valid messages (all-notification batches included).
pub fn batch(methods: &[Method]) -> impl Strategy<Value = Frame> {
    vec(message(methods), 1..6).prop_map(Frame::Batch)
}

/// Invalid and hostile messages: a wrong or missing version, ids of the wrong type, a
/// method that is not a string, scalar params, non-object values, empty batches and batches
/// of invalid elements, deep nesting, huge numbers, invalid UTF-8, truncated frames, and
/// plain noise.
pub fn hostile(methods: &[Method]) -> impl Strategy<Value = Frame> {
    let valid = message(methods).prop_map(|m| Frame::Single(m).payload());
    prop_oneof![
        // Version wrong or missing, with an id or without.
        (
            prop_oneof![Just("\"1.0\""), Just("2.0"), Just("null"), Just("\"2.00\"")],
            0i64..4
        )
            .prop_map(|(v, id)| raw(format!("{{\"jsonrpc\":{v},\"method\":\"a\",\"id\":{id}}}"))),
        Just(raw("{\"method\":\"a\",\"id\":1}".into())),
        // Ids of the wrong type.
        prop_oneof![Just("{}"), Just("[1]"), Just("true"), Just("false")].prop_map(|id| raw(
            format!("{{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":{id}}}")
        )),
        // Method not a string, params a scalar, a request carrying a result.
        Just(raw(
            "{\"jsonrpc\":\"2.0\",\"method\":1,\"params\":\"bar\"}".into()
        )),
        Just(raw(
            "{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":3,\"id\":2}".into()
        )),
        Just(raw(
            "{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"result\":1,\"id\":3}".into()
        )),
        // Not objects; an empty batch; a batch of invalid elements.
        prop_oneof![
            Just("1"),
            Just("\"x\""),
            Just("null"),
            Just("[]"),
            Just("[1,2,3]"),
            Just("[[]]")
        ]
        .prop_map(|t| raw(t.into())),
        // Duplicate members.
        Just(raw(
            "{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1,\"id\":2}".into()
        )),
        // Deep nesting (beyond the default limit of 64) in params.
        (1usize..100).prop_map(|d| raw(format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{}{},\"id\":5}}",
            "[".repeat(d),
            "]".repeat(d)
        ))),
        // Huge numbers, as params and as ids.
        prop_oneof![
            Just("1e400"),
            Just("-1e400"),
            Just("123456789012345678901234567890"),
            Just("0.0000000000000000000000001")
        ]
        .prop_map(|n| raw(format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":[{n}],\"id\":{n}}}"
        ))),
        // Invalid UTF-8 inside a string.
        (0i64..4).prop_map(|id| {
            let mut bytes = b"{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\xfe\",\"id\":".to_vec();
            bytes.extend_from_slice(format!("{id}}}").as_bytes());
            Frame::Raw(bytes)
        }),
        // A valid message cut short.
        (valid, any::<prop::sample::Index>()).prop_map(|(bytes, at)| {
            let cut = at.index(bytes.len().max(1));
            Frame::Raw(bytes[..cut].to_vec())
        }),
        // Noise.
        vec(any::<u8>(), 1..40).prop_map(|mut b| {
            b.retain(|&c| c != b'\n');
            Frame::Raw(b)
        }),
    ]
}

fn raw(text: String) -> Frame {
    Frame::Raw(text.into_bytes())
}

/// Chunk lengths for [`Case::chunks`]: from one byte at a time to whole frames.
pub fn chunks() -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        Just(Vec::new()),
        vec(1usize..64, 1..8),
        vec(1usize..4, 1..4)
    ]
}

/// A case: 1 to 8 frames (valid messages, batches and hostile frames) over `methods`, written
/// in random chunks. Shrinks towards fewer, simpler frames written whole.
pub fn case(methods: Vec<Method>) -> impl Strategy<Value = Case> {
    let frame = prop_oneof![
        5 => message(&methods).prop_map(Frame::Single),
        2 => batch(&methods),
        2 => hostile(&methods),
    ];
    (vec(frame, 1..8), chunks()).prop_map(|(frames, chunks)| Case { frames, chunks })
}

/// Only valid traffic (requests, notifications and batches), in random chunks: for a service
/// whose own checks you want to exercise rather than rpcwire's.
pub fn valid_case(methods: Vec<Method>) -> impl Strategy<Value = Case> {
    let frame = prop_oneof![3 => message(&methods).prop_map(Frame::Single), 1 => batch(&methods)];
    (vec(frame, 1..8), chunks()).prop_map(|(frames, chunks)| Case { frames, chunks })
}

/// Requests that decode as `params` for a method taking `[a, b]` integers: a helper for the
/// common two-number method.
pub fn int_pair() -> impl Strategy<Value = Value> {
    (any::<i64>(), any::<i64>()).prop_map(|(a, b)| json!([a, b]))
}
