//! What a harness sends: a [`Case`] is a list of [`Frame`]s and a chunking of their bytes.

use std::fmt;

use rpcwire::wire::Framing;
use serde_json::{json, Map, Value};

/// A request id as sent.
#[derive(Debug, Clone, PartialEq)]
pub enum Id {
    /// A number id.
    Num(i64),
    /// A string id.
    Str(String),
    /// `null` (legal, answered with `null`).
    Null,
}

impl Id {
    fn to_json(&self) -> Value {
        match self {
            Id::Num(n) => Value::from(*n),
            Id::Str(s) => Value::from(s.as_str()),
            Id::Null => Value::Null,
        }
    }
}

/// One JSON-RPC message, or an arbitrary JSON text standing where a message should (an
/// invalid batch element, say).
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request: answered exactly once.
    Request {
        /// The method name.
        method: String,
        /// The params (`None`: no `params` member).
        params: Option<Value>,
        /// The id.
        id: Id,
    },
    /// A notification: never answered.
    Notification {
        /// The method name.
        method: String,
        /// The params (`None`: no `params` member).
        params: Option<Value>,
    },
    /// Any JSON text, sent verbatim (it must be one JSON value for a batch to stay an array).
    Json(String),
}

impl Message {
    /// A request with params. Params must be an array or an object: anything else (a
    /// `json!(null)`, say) makes an Invalid Request the core answers itself, and the harness
    /// refuses the case ([`Violation::Vacuous`](crate::Violation::Vacuous)); for no params use
    /// [`request_without_params`](Message::request_without_params).
    pub fn request(method: &str, params: Value, id: i64) -> Self {
        Message::Request {
            method: method.to_owned(),
            params: Some(params),
            id: Id::Num(id),
        }
    }

    /// A request without a `params` member.
    pub fn request_without_params(method: &str, id: i64) -> Self {
        Message::Request {
            method: method.to_owned(),
            params: None,
            id: Id::Num(id),
        }
    }

    /// A notification with params (an array or an object, as for
    /// [`request`](Message::request)).
    pub fn notification(method: &str, params: Value) -> Self {
        Message::Notification {
            method: method.to_owned(),
            params: Some(params),
        }
    }

    /// True for a request or notification whose params are neither an array nor an object:
    /// it never reaches a handler (see [`Violation::Vacuous`](crate::Violation::Vacuous)).
    pub fn is_vacuous(&self) -> bool {
        match self {
            Message::Request { params, .. } | Message::Notification { params, .. } => params
                .as_ref()
                .is_some_and(|p| !p.is_array() && !p.is_object()),
            Message::Json(_) => false,
        }
    }

    /// The message's JSON text.
    pub fn text(&self) -> String {
        let mut out = Vec::new();
        self.write(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }

    fn write(&self, out: &mut Vec<u8>) {
        let object = |method: &str, params: &Option<Value>, id: Option<&Id>| {
            let mut obj = Map::new();
            obj.insert("jsonrpc".into(), json!("2.0"));
            obj.insert("method".into(), json!(method));
            if let Some(p) = params {
                obj.insert("params".into(), p.clone());
            }
            if let Some(id) = id {
                obj.insert("id".into(), id.to_json());
            }
            Value::Object(obj).to_string()
        };
        let text = match self {
            Message::Request { method, params, id } => object(method, params, Some(id)),
            Message::Notification { method, params } => object(method, params, None),
            Message::Json(text) => text.clone(),
        };
        out.extend_from_slice(text.as_bytes());
    }
}

/// One frame of the byte stream.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    /// A single message.
    Single(Message),
    /// A batch: a JSON array of messages (possibly empty, possibly with invalid elements).
    Batch(Vec<Message>),
    /// Any bytes (hostile input: broken JSON, invalid UTF-8, a truncated message). With line
    /// framing, a newline inside splits it into several frames, as it would on the wire.
    Raw(Vec<u8>),
}

impl Frame {
    /// The frame's payload (without framing).
    pub fn payload(&self) -> Vec<u8> {
        let mut out = Vec::new();
        match self {
            Frame::Single(m) => m.write(&mut out),
            Frame::Batch(items) => {
                out.push(b'[');
                for (i, m) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    m.write(&mut out);
                }
                out.push(b']');
            }
            Frame::Raw(bytes) => out.extend_from_slice(bytes),
        }
        out
    }
}

/// A test case: frames sent in order as one byte stream, written in chunks.
#[derive(Clone, PartialEq, Default)]
pub struct Case {
    /// The frames, in order.
    pub frames: Vec<Frame>,
    /// The lengths of the writes the stream is cut into, used in turn and cycled (a zero
    /// counts as one byte); empty: one write.
    pub chunks: Vec<usize>,
}

impl Case {
    /// A case of these frames, written in one piece.
    pub fn new(frames: Vec<Frame>) -> Self {
        Case {
            frames,
            chunks: Vec::new(),
        }
    }

    /// The same frames written in chunks of these lengths (cycled).
    pub fn chunked(mut self, chunks: Vec<usize>) -> Self {
        self.chunks = chunks;
        self
    }

    /// The byte stream, framed.
    pub fn bytes(&self, framing: Framing) -> Vec<u8> {
        let mut out = Vec::new();
        for frame in &self.frames {
            let payload = frame.payload();
            match framing {
                Framing::ContentLength => {
                    out.extend_from_slice(
                        format!("Content-Length: {}\r\n\r\n", payload.len()).as_bytes(),
                    );
                    out.extend_from_slice(&payload);
                }
                _ => {
                    out.extend_from_slice(&payload);
                    out.push(b'\n');
                }
            }
        }
        out
    }

    /// The first request or notification that can test nothing (see
    /// [`Message::is_vacuous`]), as a [`Violation::Vacuous`](crate::Violation::Vacuous).
    pub fn vacuous(&self) -> Result<(), crate::Violation> {
        let vacuous = self.frames.iter().find_map(|frame| match frame {
            Frame::Single(m) => Some(m).filter(|m| m.is_vacuous()),
            Frame::Batch(items) => items.iter().find(|m| m.is_vacuous()),
            Frame::Raw(_) => None,
        });
        match vacuous {
            Some(m) => Err(crate::Violation::Vacuous { message: m.text() }),
            None => Ok(()),
        }
    }

    /// Raw bytes (a fuzzer's input as it is) sent as one frame stream: the first byte picks a
    /// chunk length (0: one write), the rest is the stream, in any framing the harness uses.
    pub fn from_fuzz_bytes(data: &[u8]) -> Self {
        let (chunk, rest) = data.split_first().map_or((0, data), |(c, r)| (*c, r));
        Case {
            frames: vec![Frame::Raw(rest.to_vec())],
            chunks: if chunk == 0 {
                Vec::new()
            } else {
                vec![usize::from(chunk)]
            },
        }
    }

    /// The byte stream cut into the writes the harness makes.
    pub fn writes(&self, framing: Framing) -> Vec<Vec<u8>> {
        let bytes = self.bytes(framing);
        if self.chunks.is_empty() {
            return vec![bytes];
        }
        let mut writes = Vec::new();
        let mut rest = &bytes[..];
        let mut lengths = self.chunks.iter().cycle();
        while !rest.is_empty() {
            let len = lengths
                .next()
                .map_or(rest.len(), |&n| n.max(1))
                .min(rest.len());
            let (head, tail) = rest.split_at(len);
            writes.push(head.to_vec());
            rest = tail;
        }
        writes
    }
}

/// Shows each frame as it goes on the wire, one a line (control characters escaped, invalid
/// UTF-8 replaced): what a failing case prints beside its Rust form.
impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "Case ({} frames, chunks {:?}):",
            self.frames.len(),
            self.chunks
        )?;
        for frame in &self.frames {
            let text = String::from_utf8_lossy(&frame.payload()).into_owned();
            let shown: String = text
                .chars()
                .map(|c| match c {
                    c if c.is_control() => c.escape_default().to_string(),
                    c => c.to_string(),
                })
                .collect();
            writeln!(f, "  {shown}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_cover_the_stream_in_the_given_chunks() {
        let case = Case::new(vec![
            Frame::Single(Message::request("a", json!([1]), 1)),
            Frame::Raw(b"{".to_vec()),
        ])
        .chunked(vec![3, 0]);
        let whole = case.bytes(Framing::Line);
        // Compared as JSON: member order follows serde_json's map, which a feature elsewhere
        // in the build (`preserve_order`) may change.
        let text = String::from_utf8_lossy(&whole);
        let (first, rest) = text.split_once('\n').unwrap_or_default();
        let first: serde_json::Value = serde_json::from_str(first).unwrap_or_default();
        assert_eq!(
            first,
            json!({"jsonrpc": "2.0", "method": "a", "params": [1], "id": 1})
        );
        assert_eq!(rest, "{\n");
        let writes = case.writes(Framing::Line);
        assert_eq!(writes[0].len(), 3);
        assert_eq!(writes[1].len(), 1);
        assert_eq!(writes.concat(), whole);
    }
}
