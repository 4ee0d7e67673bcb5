//! Checking the answers to W1 calls: every one is `result: 19`, and every id comes back once.

use serde::Deserialize;
use serde_json::Value;

use crate::Error;

/// The exact bytes both servers write today before the id. Answers of that shape are checked by
/// comparing bytes, so that the client's reading thread costs little next to the server it
/// measures; anything else is parsed with serde_json and checked by value (member order and
/// whitespace are free).
const COMPACT_PREFIX: &[u8] = b"{\"jsonrpc\":\"2.0\",\"result\":19,\"id\":";

/// Tracks the answers to requests with ids `1..=expected`.
#[derive(Debug)]
pub struct Checker {
    /// One bit per id: set once its answer arrived.
    seen: Vec<u64>,
    expected: u64,
    received: u64,
}

/// An answer as parsed by the slow path.
#[derive(Deserialize)]
struct Response {
    jsonrpc: Option<String>,
    result: Option<Value>,
    error: Option<Value>,
    id: Option<Value>,
}

impl Checker {
    /// A checker for ids `1..=expected`.
    pub fn new(expected: u64) -> Checker {
        let words = usize::try_from(expected / 64 + 1).unwrap_or(usize::MAX);
        Checker {
            seen: vec![0; words],
            expected,
            received: 0,
        }
    }

    /// Answers checked so far.
    pub fn received(&self) -> u64 {
        self.received
    }

    /// Whether every id has been answered.
    pub fn complete(&self) -> bool {
        self.received == self.expected
    }

    /// Checks one line (with or without its newline). Blank lines are skipped.
    pub fn check(&mut self, line: &[u8]) -> Result<(), Error> {
        let line = line.trim_ascii();
        if line.is_empty() {
            return Ok(());
        }
        let id = answer_id(line)?;
        if id == 0 || id > self.expected {
            return Err(Error::bad(format!("id {id} was never sent"), line));
        }
        let (word, bit) = ((id / 64) as usize, 1u64 << (id % 64));
        if self.seen[word] & bit != 0 {
            return Err(Error::bad(format!("id {id} answered twice"), line));
        }
        self.seen[word] |= bit;
        self.received += 1;
        Ok(())
    }
}

/// The id of an answer with result 19 (`line` without surrounding whitespace), or why it is
/// not one.
pub(crate) fn answer_id(line: &[u8]) -> Result<u64, Error> {
    let line = line.trim_ascii();
    match compact_id(line) {
        Some(id) => Ok(id),
        None => parsed_id(line),
    }
}

/// The id of an answer of exactly the compact shape with result 19, or `None`.
fn compact_id(line: &[u8]) -> Option<u64> {
    let digits = line.strip_prefix(COMPACT_PREFIX)?.strip_suffix(b"}")?;
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    digits.iter().try_fold(0u64, |acc, &b| {
        b.is_ascii_digit().then(|| acc * 10 + u64::from(b - b'0'))
    })
}

/// The id of any other well-formed answer with result 19, or why it is not one.
fn parsed_id(line: &[u8]) -> Result<u64, Error> {
    let response: Response = serde_json::from_slice(line)
        .map_err(|e| Error::bad(format!("not an answer: {e}"), line))?;
    if response.jsonrpc.as_deref() != Some("2.0") {
        return Err(Error::bad("jsonrpc is not \"2.0\"", line));
    }
    if response.error.is_some() {
        return Err(Error::bad("an error instead of a result", line));
    }
    if response.result.as_ref().and_then(Value::as_i64) != Some(19) {
        return Err(Error::bad("result is not 19", line));
    }
    response
        .id
        .as_ref()
        .and_then(Value::as_u64)
        .ok_or_else(|| Error::bad("id is not a request id", line))
}
