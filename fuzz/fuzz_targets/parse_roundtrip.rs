//! The message parser with its round trip checked: every valid message (alone or in a batch)
//! is re-encoded with `rpcwire::wire::encode`, parsed again, and must come back equal (same
//! kind, id text, unescaped method and message, params / result / data text, error code);
//! encoding the re-parsed message gives the same bytes again (the encoding is canonical).
//! Parsing never panics at any depth limit. The one-walk integer readers of params
//! (`RawJson::int_array`, `RawJson::int_members`) agree with the element and member walks.
//!
//! Input: the frame itself (so spec examples and JSON files are seeds as they are).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::wire::{encode, parse, JsonStr, Message, ParseLimits, Parsed, RawJson};
use rpcwire_fuzz::VecSink;

/// A message with every string unescaped, for comparison.
#[derive(Debug, PartialEq, Eq)]
enum Plain {
    Request {
        id: String,
        method: String,
        params: Option<String>,
    },
    Notification {
        method: String,
        params: Option<String>,
    },
    Result {
        id: String,
        result: String,
    },
    Error {
        id: String,
        code: i32,
        message: String,
        data: Option<String>,
    },
}

fn unescape(s: JsonStr<'_>) -> Option<String> {
    let mut buf = vec![0u8; s.escaped().len()];
    s.unescape_into(&mut buf).ok().map(str::to_owned)
}

fn raw(v: Option<RawJson<'_>>) -> Option<String> {
    v.map(|v| v.as_str().to_owned())
}

/// `None` when the message cannot be re-encoded as text (a lone surrogate escape in a
/// method name or message has no UTF-8 form).
fn plain(m: &Message<'_>) -> Option<Plain> {
    Some(match m {
        Message::Request(r) => Plain::Request {
            id: r.id.raw().to_owned(),
            method: unescape(r.method)?,
            params: raw(r.params),
        },
        Message::Notification(n) => Plain::Notification {
            method: unescape(n.method)?,
            params: raw(n.params),
        },
        Message::Response(r) => match r.outcome {
            Ok(result) => Plain::Result {
                id: r.id.raw().to_owned(),
                result: result.as_str().to_owned(),
            },
            Err(e) => Plain::Error {
                id: r.id.raw().to_owned(),
                code: e.code.0,
                message: unescape(e.message)?,
                data: raw(e.data),
            },
        },
    })
}

fn encode_one(m: &Message<'_>, p: &Plain, out: &mut VecSink) {
    let r = match (m, p) {
        (Message::Request(r), Plain::Request { method, .. }) => {
            encode::request(out, r.id.raw().as_bytes(), method, r.params.as_ref())
        }
        (Message::Notification(n), Plain::Notification { method, .. }) => {
            encode::notification(out, method, n.params.as_ref())
        }
        (Message::Response(r), Plain::Result { .. }) => {
            let Ok(result) = r.outcome else {
                unreachable!()
            };
            encode::result(out, r.id.raw().as_bytes(), &result)
        }
        (Message::Response(r), Plain::Error { message, .. }) => {
            let Err(e) = r.outcome else { unreachable!() };
            encode::error(
                out,
                r.id.raw().as_bytes(),
                e.code,
                Some(message),
                e.data.as_ref(),
            )
        }
        _ => unreachable!(),
    };
    r.expect("encoding a parsed message cannot fail");
}

/// An element or member in JSON's integer syntax that fits `i64`, read the general way.
fn int_of(v: RawJson<'_>) -> Option<i64> {
    let s = v.as_str();
    if s.contains(['.', 'e', 'E']) || !s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// The one-walk integer readers (`int_array`, `int_members`) give what the element and member
/// walks give, or nothing.
fn check_int_readers(params: RawJson<'_>) {
    let ints: Option<Vec<i64>> = params
        .is_array()
        .then(|| params.elements().map(int_of).collect())
        .flatten();
    let two = ints.as_ref().filter(|v| v.len() == 2).map(|v| [v[0], v[1]]);
    assert_eq!(params.int_array::<2>(), two, "int_array::<2> of {params}");
    let three = ints
        .as_ref()
        .filter(|v| v.len() == 3)
        .map(|v| [v[0], v[1], v[2]]);
    assert_eq!(params.int_array::<3>(), three, "int_array::<3> of {params}");
    let names = [&b"minuend"[..], b"subtrahend"];
    let members: Vec<_> = params.members().collect();
    let named = (members.len() == 2)
        .then(|| {
            let mut out = [None, None];
            for (k, v) in &members {
                let slot = names.iter().position(|n| *n == k.escaped().as_bytes())?;
                if out[slot].is_some() {
                    return None;
                }
                out[slot] = Some(int_of(*v)?);
            }
            Some([out[0]?, out[1]?])
        })
        .flatten();
    assert_eq!(params.int_members(names), named, "int_members of {params}");
}

/// The valid, re-encodable messages of a frame.
fn messages(frame: &[u8]) -> Option<(bool, Vec<Plain>, Vec<u8>)> {
    let parsed = parse(frame, ParseLimits::default()).ok()?;
    let (batch, elements): (bool, Vec<Message<'_>>) = match parsed {
        Parsed::Single(Ok(m)) => (false, vec![m]),
        Parsed::Single(Err(_)) | Parsed::EmptyBatch => return None,
        Parsed::Batch(b) => (true, b.iter().filter_map(Result::ok).collect()),
    };
    let mut plains = Vec::new();
    let mut out = VecSink::default();
    for m in &elements {
        let params = match m {
            Message::Request(r) => r.params,
            Message::Notification(n) => n.params,
            Message::Response(_) => None,
        };
        if let Some(params) = params {
            check_int_readers(params);
        }
        let Some(p) = plain(m) else { continue };
        if batch {
            out.0.push(if plains.is_empty() { b'[' } else { b',' });
        }
        encode_one(m, &p, &mut out);
        plains.push(p);
    }
    if plains.is_empty() {
        return None;
    }
    if batch {
        out.0.push(b']');
    }
    Some((batch, plains, out.0))
}

fuzz_target!(|data: &[u8]| {
    // Any depth limit: no panic, and a deeper limit never rejects what a shallower accepts.
    let shallow = parse(data, ParseLimits { max_depth: 3 }).is_ok();
    let deep = parse(data, ParseLimits { max_depth: 256 }).is_ok();
    assert!(
        !shallow || deep,
        "accepted at depth 3 but rejected at depth 256"
    );

    let Some((batch, first, encoded)) = messages(data) else {
        return;
    };
    let text = String::from_utf8_lossy(&encoded);
    let (batch2, second, encoded2) = messages(&encoded)
        .unwrap_or_else(|| panic!("re-encoded frame does not parse back: {text}"));
    assert_eq!(batch, batch2, "batch-ness changed: {text}");
    assert_eq!(first, second, "round trip changed the messages: {text}");
    assert_eq!(encoded, encoded2, "encoding is not canonical: {text}");
});
