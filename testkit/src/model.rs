//! The reference model: what the JSON-RPC 2.0 specification requires a server to answer to
//! a byte stream, worked out with serde_json, independently of rpcwire's own parser.

use std::fmt;

use rpcwire::wire::Framing;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;

use crate::oracle::{Expected, OracleRun};

/// The limits the server under test applies (they decide some answers): mirror its
/// `Builder` settings here when they differ from the defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The framing of both directions.
    pub framing: Framing,
    /// Longer frames are answered with one Invalid Request (id null).
    pub max_frame: usize,
    /// Deeper JSON is refused (id null).
    pub max_depth: usize,
    /// Longer batches are refused whole with one Invalid Request (id null).
    pub max_batch_len: usize,
    /// False: every batch is refused whole with one Invalid Request (MCP since 2025-06-18).
    pub batches: bool,
}

impl Default for Limits {
    /// rpcwire-tokio's defaults: line framing, 4 MiB frames, depth 64, batches of 64.
    fn default() -> Self {
        Limits {
            framing: Framing::Line,
            max_frame: rpcwire_tokio::DEFAULT_MAX_FRAME,
            max_depth: rpcwire::wire::scan::DEFAULT_MAX_DEPTH,
            max_batch_len: 64,
            batches: true,
        }
    }
}

/// An answer the server owes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Due {
    /// The id's JSON text, as the request had it (ids are echoed byte-exact).
    pub(crate) id: String,
    /// `Some`: the answer must be this error; `None`: any result or error.
    pub(crate) code: Option<i64>,
    /// What a method model says the answer must be (a request that reached the service).
    pub(crate) expect: Option<Modelled>,
}

/// A request's answer as a method model has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Modelled {
    /// The call, as `method(params)`.
    pub(crate) call: String,
    /// What it must be answered with.
    pub(crate) expected: Expected,
}

impl Due {
    fn invalid(id: &str) -> Self {
        Due {
            id: id.to_owned(),
            code: Some(INVALID_REQUEST),
            expect: None,
        }
    }

    fn call(id: &str) -> Self {
        Due {
            id: id.to_owned(),
            code: None,
            expect: None,
        }
    }
}

impl fmt::Display for Due {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.code, &self.expect) {
            (Some(code), _) => write!(f, "id {} (error {code})", self.id),
            (None, Some(m)) => write!(f, "id {} ({}: {})", self.id, m.call, m.expected),
            (None, None) => write!(f, "id {}", self.id),
        }
    }
}

/// A valid request or notification, as the service receives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Call {
    /// The method name (`None`: written with escapes, which no registered name matches as
    /// rpcwire compares names as they are on the wire).
    pub(crate) method: Option<String>,
    /// The params' JSON text (`None`: absent).
    pub(crate) params: Option<String>,
    /// Where its answer is owed: `None` for a notification.
    pub(crate) due: Option<Slot>,
}

/// Where a due stands in [`Owed`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// `singles[i]`.
    Single(usize),
    /// `batches[i][j]`.
    Batch(usize, usize),
}

pub(crate) const PARSE_ERROR: i64 = -32700;
pub(crate) const INVALID_REQUEST: i64 = -32600;

/// Everything a byte stream is owed.
#[derive(Debug, Default)]
pub(crate) struct Owed {
    /// Answers sent on their own (objects).
    pub(crate) singles: Vec<Due>,
    /// Batches owed an array answer: the answers each array must hold.
    pub(crate) batches: Vec<Vec<Due>>,
    /// The calls the service receives, in the order sent.
    pub(crate) calls: Vec<Call>,
    /// The length of every batch sent (refused ones included).
    pub(crate) batch_sizes: Vec<usize>,
}

impl Owed {
    /// How many frames the server must write.
    pub(crate) fn frames(&self) -> usize {
        self.singles.len() + self.batches.len()
    }

    /// Runs a method model over the calls, in order, and notes what each answer must be.
    pub(crate) fn expect(&mut self, run: &mut dyn OracleRun) {
        for call in &self.calls {
            let Some(method) = &call.method else { continue };
            let params = call.params.as_deref();
            let expected = run.apply(method, params, call.due.is_some());
            let due = match call.due {
                Some(Slot::Single(i)) => self.singles.get_mut(i),
                Some(Slot::Batch(i, j)) => self.batches.get_mut(i).and_then(|b| b.get_mut(j)),
                None => None,
            };
            if let (Some(due), Some(expected)) = (due, expected) {
                due.expect = Some(Modelled {
                    call: format!("{method}({})", params.unwrap_or("")),
                    expected,
                });
            }
        }
    }
}

/// The frames' payloads of an input stream, cut as the framing cuts them. With
/// content-length framing the stream is the harness's own (well-formed headers).
pub(crate) fn split_frames(bytes: &[u8], framing: Framing) -> Vec<&[u8]> {
    let mut frames = Vec::new();
    match framing {
        Framing::ContentLength => {
            let mut rest = bytes;
            while let Some(end) = find(rest, b"\r\n\r\n") {
                let len = std::str::from_utf8(&rest[..end])
                    .ok()
                    .and_then(|h| h.trim().strip_prefix("Content-Length: "))
                    .and_then(|n| n.trim().parse::<usize>().ok());
                let body = &rest[end + 4..];
                match len {
                    Some(len) if len <= body.len() => {
                        frames.push(&body[..len]);
                        rest = &body[len..];
                    }
                    _ => break,
                }
            }
        }
        _ => {
            for line in bytes.split(|&b| b == b'\n') {
                let line = line.strip_suffix(b"\r").unwrap_or(line);
                // Blank: JSON whitespace only (a form feed is not JSON whitespace: a frame).
                if !line.iter().all(|b| matches!(b, b' ' | b'\t' | b'\r')) {
                    frames.push(line);
                }
            }
            // The last piece has no newline: a frame the server never sees complete (a
            // truncated stream); it is owed nothing.
            if !bytes.ends_with(b"\n") && !frames.is_empty() {
                let last = bytes.rsplit(|&b| b == b'\n').next().unwrap_or(&[]);
                if frames.last().is_some_and(|f| f.as_ptr() == last.as_ptr()) {
                    frames.pop();
                }
            }
        }
    }
    frames
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What the stream is owed under `limits`.
pub(crate) fn owed(bytes: &[u8], limits: &Limits) -> Owed {
    let mut owed = Owed::default();
    for frame in split_frames(bytes, limits.framing) {
        frame_owes(frame, limits, &mut owed);
    }
    owed
}

fn frame_owes(frame: &[u8], limits: &Limits, owed: &mut Owed) {
    let malformed = Due {
        id: "null".into(),
        code: Some(PARSE_ERROR),
        expect: None,
    };
    if frame.len() > limits.max_frame {
        owed.singles.push(Due::invalid("null"));
        return;
    }
    let Ok(text) = std::str::from_utf8(frame) else {
        owed.singles.push(malformed);
        return;
    };
    let Ok(raw) = serde_json::from_str::<&RawValue>(text) else {
        owed.singles.push(malformed);
        return;
    };
    if depth(raw.get()) > limits.max_depth {
        owed.singles.push(malformed);
        return;
    }
    let value = raw.get().trim_start();
    if value.starts_with('[') {
        let elements: Vec<&RawValue> = serde_json::from_str(value).unwrap_or_default();
        owed.batch_sizes.push(elements.len());
        if elements.is_empty() || !limits.batches || elements.len() > limits.max_batch_len {
            owed.singles.push(Due::invalid("null"));
            return;
        }
        let at = owed.batches.len();
        let mut dues = Vec::new();
        for element in elements {
            let (due, call) = element_owes(element, Place::Batch);
            if let Some(mut call) = call {
                call.due = due.as_ref().map(|_| Slot::Batch(at, dues.len()));
                owed.calls.push(call);
            }
            dues.extend(due);
        }
        if !dues.is_empty() {
            owed.batches.push(dues);
        }
    } else {
        let (due, call) = element_owes(raw, Place::Single);
        if let Some(mut call) = call {
            call.due = due.as_ref().map(|_| Slot::Single(owed.singles.len()));
            owed.calls.push(call);
        }
        owed.singles.extend(due);
    }
}

/// A member key as written: `None` when it holds escapes (then it matches no member name,
/// as rpcwire compares keys as they are on the wire).
struct Key<'a>(Option<&'a str>);

impl<'de> serde::Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Key<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a key")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Key<'de>, E> {
                Ok(Key(Some(v)))
            }
            fn visit_str<E: de::Error>(self, _: &str) -> Result<Key<'de>, E> {
                Ok(Key(None))
            }
        }
        d.deserialize_str(V)
    }
}

/// An object's members in order (duplicates kept).
struct Members<'a>(Vec<(Key<'a>, &'a RawValue)>);

impl<'de> serde::Deserialize<'de> for Members<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Members<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Members<'de>, A::Error> {
                let mut members = Vec::new();
                while let Some(entry) = map.next_entry::<Key<'de>, &'de RawValue>()? {
                    members.push(entry);
                }
                Ok(Members(members))
            }
        }
        d.deserialize_map(V)
    }
}

/// A valid id's text: a string, a number or null.
fn valid_id(raw: &RawValue) -> Option<&str> {
    let text = raw.get();
    match text.as_bytes().first() {
        Some(b'"' | b'-' | b'0'..=b'9') => Some(text),
        _ if text == "null" => Some(text),
        _ => None,
    }
}

/// The longest id text (quotes and escapes included) the server tracks: a request with a
/// longer id is answered Invalid Request at once, because replies echo ids byte-exact from
/// fixed storage.
const MAX_ID_LEN: usize = rpcwire::wire::MAX_STORED_ID_LEN;

/// Where a message stands: alone in its frame, or a member of a batch.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    Single,
    Batch,
}

/// The id an error reply echoes: inside a batch the reply has room for an id of at most
/// [`MAX_ID_LEN`] bytes (its room is reserved before the member is read), so a longer one is
/// answered with `null`; a single message's error echoes any id.
fn echoed(id: &str, place: Place) -> &str {
    if place == Place::Batch && id.len() > MAX_ID_LEN {
        "null"
    } else {
        id
    }
}

/// What one message (a single one, or a batch element) is owed, and the call it makes when
/// the service receives it (its `due` slot left for the caller to fill in).
fn element_owes(raw: &RawValue, place: Place) -> (Option<Due>, Option<Call>) {
    let Ok(Members(members)) = serde_json::from_str::<Members<'_>>(raw.get()) else {
        // Not an object: an Invalid Request whose id nobody can tell.
        return (Some(Due::invalid("null")), None);
    };
    // The last occurrence of each member counts; a repeated member makes the message invalid.
    let mut duplicate = false;
    let mut get = |name: &str| {
        let mut found = members.iter().filter(|(k, _)| k.0 == Some(name));
        let first = found.next().map(|(_, v)| *v);
        let last = found.next_back().map(|(_, v)| *v);
        duplicate |= last.is_some();
        last.or(first)
    };
    let (version, method, params, id) = (get("jsonrpc"), get("method"), get("params"), get("id"));
    let (result, error) = (get("result"), get("error"));
    let is_response = method.is_none() && (result.is_some() || error.is_some());
    let id_text = match id {
        None => None,
        Some(raw) => match valid_id(raw) {
            Some(text) => Some(text),
            None if is_response => return (None, None),
            None => return (Some(Due::invalid("null")), None),
        },
    };
    let is_version =
        version.is_some_and(|v| serde_json::from_str::<String>(v.get()).is_ok_and(|s| s == "2.0"));
    let valid_request = !duplicate
        && is_version
        && result.is_none()
        && error.is_none()
        && method.is_some_and(|m| m.get().starts_with('"'))
        && params.is_none_or(|p| matches!(p.get().as_bytes().first(), Some(b'[' | b'{')));
    if is_response {
        // A response (valid or not) is never answered.
        return (None, None);
    }
    let call = || Call {
        // Names with escapes match no registered name (rpcwire compares them as written).
        method: method
            .map(RawValue::get)
            .filter(|m| !m.contains('\\'))
            .and_then(|m| serde_json::from_str(m).ok()),
        params: params.map(|p| p.get().to_owned()),
        due: None,
    };
    match (valid_request, id_text) {
        (true, Some(id)) if id.len() > MAX_ID_LEN => (Some(Due::invalid(echoed(id, place))), None),
        (true, Some(id)) => (Some(Due::call(id)), Some(call())),
        (true, None) => (None, Some(call())),
        (false, id) => (
            Some(Due::invalid(echoed(id.unwrap_or("null"), place))),
            None,
        ),
    }
}

/// The nesting depth of a JSON text (arrays and objects; strings skipped).
pub(crate) fn depth(text: &str) -> usize {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for b in text.bytes() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    fn owed_of(text: &str) -> Owed {
        owed(text.as_bytes(), &Limits::default())
    }

    #[test]
    fn the_specification_examples() {
        let o =
            owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[42,23],\"id\":1}\n");
        assert_eq!(o.singles, [Due::call("1")]);
        assert_eq!(
            owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"update\",\"params\":[1]}\n").frames(),
            0
        );
        let o = owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"foobar,\"params\":\"bar\",\"baz]\n");
        assert_eq!(o.singles[0].code, Some(PARSE_ERROR));
        let o = owed_of("{\"jsonrpc\":\"2.0\",\"method\":1,\"params\":\"bar\"}\n");
        assert_eq!(o.singles, [Due::invalid("null")]);
        assert_eq!(owed_of("[]\n").singles, [Due::invalid("null")]);
        let o = owed_of("[1,2,3]\n");
        assert_eq!(o.batches, [vec![Due::invalid("null"); 3]]);
        let o = owed_of(
            "[{\"jsonrpc\":\"2.0\",\"method\":\"a\"},{\"jsonrpc\":\"2.0\",\"method\":\"b\"}]\n",
        );
        assert_eq!(o.frames(), 0);
    }

    #[test]
    fn invalid_requests_echo_a_valid_id() {
        let o = owed_of("{\"jsonrpc\":\"1.0\",\"method\":\"a\",\"id\":\"x\"}\n");
        assert_eq!(o.singles, [Due::invalid("\"x\"")]);
        let o = owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":{}}\n");
        assert_eq!(o.singles, [Due::invalid("null")]);
        let o = owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1,\"id\":2}\n");
        assert_eq!(o.singles, [Due::invalid("2")]);
    }

    #[test]
    fn an_id_longer_than_the_core_stores_is_an_invalid_request() {
        let long = format!("\"{}\"", "x".repeat(MAX_ID_LEN - 1)); // MAX_ID_LEN + 1 bytes
        let fits = format!("\"{}\"", "x".repeat(MAX_ID_LEN - 2)); // exactly MAX_ID_LEN
        let call = |id: &str| format!("{{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":{id}}}");
        let bad = |id: &str| format!("{{\"jsonrpc\":\"1.0\",\"method\":\"a\",\"id\":{id}}}");
        // Alone: Invalid Request echoing the id, valid or not.
        assert_eq!(
            owed_of(&format!("{}\n", call(&long))).singles,
            [Due::invalid(&long)]
        );
        assert_eq!(
            owed_of(&format!("{}\n", bad(&long))).singles,
            [Due::invalid(&long)]
        );
        // In a batch: Invalid Request with id null; an id of exactly the limit is a call.
        let o = owed_of(&format!(
            "[{},{},{}]\n",
            call(&long),
            bad(&long),
            call(&fits)
        ));
        let answered = Due::call(&fits);
        assert_eq!(
            o.batches,
            [vec![Due::invalid("null"), Due::invalid("null"), answered]]
        );
    }

    #[test]
    fn blank_lines_are_json_whitespace_only() {
        // Found by the fuzz template: a form feed alone on a line is a frame (a parse error).
        assert_eq!(owed_of("<\n\u{c}\n\n \t\r\n").singles.len(), 2);
    }

    #[test]
    fn a_truncated_last_line_is_owed_nothing() {
        assert_eq!(
            owed_of("{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}").frames(),
            0
        );
        assert_eq!(depth("[[{\"a\":\"[[[\"}]]"), 3);
    }
}
