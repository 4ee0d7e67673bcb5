//! JSON-RPC 2.0 message views: parse one framed JSON text into a request, notification,
//! response, batch, or the precise reason it is invalid. One validating pass; every view borrows
//! the input.

use super::id::Id;
use super::json::{JsonStr, RawJson};
use super::scan::{self, ScanError, ScanErrorKind};
use crate::ErrorCode;

/// A request: expects exactly one response echoing `id`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request<'a> {
    /// The id to echo (string, number or null).
    pub id: Id<'a>,
    /// The method name, still escaped.
    pub method: JsonStr<'a>,
    /// `params`: an array or object when present.
    pub params: Option<RawJson<'a>>,
}

/// A notification: a request without an `id` member; never answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Notification<'a> {
    /// The method name, still escaped.
    pub method: JsonStr<'a>,
    /// `params`: an array or object when present.
    pub params: Option<RawJson<'a>>,
}

/// The `error` member of an error response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorObject<'a> {
    /// The error code (an integer on the wire).
    pub code: ErrorCode,
    /// The message, still escaped.
    pub message: JsonStr<'a>,
    /// Optional extra information.
    pub data: Option<RawJson<'a>>,
}

/// A response: `result` on success, `error` on failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Response<'a> {
    /// The id of the request it answers (`null` when the peer could not read it).
    pub id: Id<'a>,
    /// The outcome.
    pub outcome: Result<RawJson<'a>, ErrorObject<'a>>,
}

/// One well-formed JSON-RPC 2.0 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// A request (has an id).
    Request(Request<'a>),
    /// A notification (no id member).
    Notification(Notification<'a>),
    /// A success or error response.
    Response(Response<'a>),
}

/// Why an object is not a valid JSON-RPC 2.0 message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum InvalidReason {
    /// The JSON value is not an object (a number, string, nested array ...).
    NotAnObject,
    /// The same member appears twice.
    DuplicateMember,
    /// `"jsonrpc"` is missing.
    MissingVersion,
    /// `"jsonrpc"` is not the string `"2.0"`.
    WrongVersion,
    /// `"method"` is not a string.
    MethodNotString,
    /// `"params"` is neither an array nor an object.
    ParamsNotStructured,
    /// `"id"` is not a string, number or null.
    IdWrongType,
    /// A request also carries `"result"` or `"error"`.
    RequestWithResult,
    /// Neither `"method"` nor `"result"`/`"error"`.
    NotRequestOrResponse,
    /// A response has both `"result"` and `"error"`.
    ResultAndError,
    /// A response has no `"id"` member.
    MissingId,
    /// `"error"` is not an object with an integer `code` and a string `message`.
    MalformedError,
}

impl core::fmt::Display for InvalidReason {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            InvalidReason::NotAnObject => "not a JSON object",
            InvalidReason::DuplicateMember => "a member appears twice",
            InvalidReason::MissingVersion => "missing \"jsonrpc\"",
            InvalidReason::WrongVersion => "\"jsonrpc\" is not \"2.0\"",
            InvalidReason::MethodNotString => "\"method\" is not a string",
            InvalidReason::ParamsNotStructured => "\"params\" is not an array or object",
            InvalidReason::IdWrongType => "\"id\" is not a string, number or null",
            InvalidReason::RequestWithResult => "a request carries \"result\" or \"error\"",
            InvalidReason::NotRequestOrResponse => "neither a request nor a response",
            InvalidReason::ResultAndError => "a response has both \"result\" and \"error\"",
            InvalidReason::MissingId => "a response has no \"id\"",
            InvalidReason::MalformedError => "malformed \"error\" object",
        })
    }
}

/// A value that is valid JSON but not a valid message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invalid<'a> {
    /// The id when one could be read (it is echoed in the Invalid Request reply); `None` means
    /// the reply carries `"id": null`.
    pub id: Option<Id<'a>>,
    /// What is wrong.
    pub reason: InvalidReason,
    /// True when the object looks like a response (has `result` or `error` but no `method`).
    /// The specification answers invalid requests, never responses: a peer's malformed response
    /// is reported, not replied to, so two peers can never loop on each other's errors.
    pub is_response: bool,
}

impl Invalid<'_> {
    /// True when the specification requires an Invalid Request reply.
    pub fn needs_reply(&self) -> bool {
        !self.is_response
    }
}

/// One element of a frame: a message or an invalid value.
pub type Element<'a> = Result<Message<'a>, Invalid<'a>>;

/// A parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A single object.
    Single(Element<'a>),
    /// A non-empty array of elements.
    Batch(Batch<'a>),
    /// `[]`: answered with a single Invalid Request (not an array).
    EmptyBatch,
}

/// Limits for parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParseLimits {
    /// Maximum nesting depth of the whole frame (a batch counts as one level).
    pub max_depth: usize,
}

impl Default for ParseLimits {
    fn default() -> Self {
        ParseLimits {
            max_depth: scan::DEFAULT_MAX_DEPTH,
        }
    }
}

/// Parses one framed JSON text (surrounding whitespace allowed).
///
/// `Err` is a parse error (invalid JSON, answered with -32700 and id null). Everything else,
/// including invalid messages, is `Ok`.
///
/// ```
/// use rpcwire::wire::{parse, Message, ParseLimits, Parsed};
/// let frame = br#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#;
/// let Parsed::Single(Ok(Message::Request(req))) = parse(frame, ParseLimits::default()).unwrap()
/// else { panic!() };
/// assert!(req.method.eq_str("subtract"));
/// let (a, b): (i64, i64) = req.params.unwrap().decode().unwrap();
/// assert_eq!((a - b, req.id.raw()), (19, "1"));
///
/// let batch = br#"[{"jsonrpc":"2.0","method":"notify_hello","params":[7]}, 1]"#;
/// let Parsed::Batch(b) = parse(batch, ParseLimits::default()).unwrap() else { panic!() };
/// assert_eq!(b.len(), 2);
/// assert!(b.iter().nth(1).unwrap().is_err());
/// ```
pub fn parse(frame: &[u8], limits: ParseLimits) -> Result<Parsed<'_>, ScanError> {
    let start = scan::skip_ws(frame, 0);
    let parsed = match frame.get(start) {
        Some(b'{') => {
            let (element, end) = parse_object(frame, start, limits.max_depth, true)?;
            expect_end(frame, end)?;
            Parsed::Single(element)
        }
        Some(b'[') => {
            let (start, end) = scan::scan_value(frame, start, limits.max_depth)?;
            expect_end(frame, end)?;
            let text = frame.get(start..end).unwrap_or(&[]);
            let batch = Batch { text };
            if batch.iter().next().is_none() {
                Parsed::EmptyBatch
            } else {
                Parsed::Batch(batch)
            }
        }
        _ => {
            let (_, end) = scan::scan_value(frame, start, limits.max_depth)?;
            expect_end(frame, end)?;
            Parsed::Single(Err(Invalid {
                id: None,
                reason: InvalidReason::NotAnObject,
                is_response: false,
            }))
        }
    };
    Ok(parsed)
}

fn expect_end(frame: &[u8], end: usize) -> Result<(), ScanError> {
    let rest = scan::skip_ws(frame, end);
    if rest == frame.len() {
        Ok(())
    } else {
        Err(ScanError {
            kind: ScanErrorKind::TrailingCharacters,
            offset: rest,
        })
    }
}

/// A validated batch: a lazy iterator over its elements (each parsed when reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    /// The whole array's text, validated.
    text: &'a [u8],
}

impl<'a> Batch<'a> {
    /// Wraps the text of a batch that [`parse`] has already validated (surrounding whitespace
    /// is trimmed). Positions from [`BatchIter::position`] are relative to the trimmed text.
    pub(crate) fn from_validated(frame: &'a [u8]) -> Self {
        let start = scan::skip_ws(frame, 0);
        let mut end = frame.len();
        while end > start && matches!(frame.get(end - 1), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            end -= 1;
        }
        Batch {
            text: frame.get(start..end).unwrap_or(&[]),
        }
    }

    /// The batch's JSON text.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    /// Iterates over the elements.
    pub fn iter(&self) -> BatchIter<'a> {
        BatchIter {
            text: self.text,
            pos: 1,
            done: false,
            last_len: 0,
        }
    }

    /// Number of elements (a fast skip over the validated text).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True for `[]`, which [`parse`] reports as [`Parsed::EmptyBatch`] instead.
    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// Iterator over a batch's elements.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    text: &'a [u8],
    pos: usize,
    done: bool,
    /// Length of the text of the element returned last.
    last_len: usize,
}

impl<'a> BatchIter<'a> {
    /// Offset of the next element in the batch text (for resuming iteration).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Resumes iteration of `batch` at a `position()` returned earlier.
    pub fn resume(batch: Batch<'a>, position: usize) -> Self {
        BatchIter {
            text: batch.text,
            pos: position,
            done: position >= batch.text.len(),
            last_len: 0,
        }
    }

    /// Length in bytes of the text of the element returned last.
    pub fn last_len(&self) -> usize {
        self.last_len
    }

    /// Skips the next element without parsing it; returns its text length.
    pub(crate) fn skim_next(&mut self) -> Option<usize> {
        if self.done {
            return None;
        }
        let start = scan::skip_ws(self.text, self.pos);
        if matches!(self.text.get(start), None | Some(b']')) {
            self.done = true;
            return None;
        }
        let (_, end) = scan::skip_value_trusted(self.text, start);
        self.advance_past(start, end);
        Some(end.saturating_sub(start))
    }

    fn advance_past(&mut self, start: usize, end: usize) {
        let after = scan::skip_ws(self.text, end);
        match self.text.get(after) {
            Some(b',') if end > start => self.pos = after + 1,
            _ => {
                self.done = true;
                self.pos = self.text.len();
            }
        }
        self.last_len = end.saturating_sub(start);
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Element<'a>;

    fn next(&mut self) -> Option<Element<'a>> {
        if self.done {
            return None;
        }
        let start = scan::skip_ws(self.text, self.pos);
        match self.text.get(start) {
            None | Some(b']') => {
                self.done = true;
                self.pos = self.text.len();
                return None;
            }
            _ => {}
        }
        let (element, end) = if self.text.get(start) == Some(&b'{') {
            // Already validated: walk the object without validating again.
            match parse_object(self.text, start, scan::MAX_DEPTH_LIMIT, false) {
                Ok(parsed) => parsed,
                Err(_) => {
                    self.done = true;
                    return None;
                }
            }
        } else {
            let (_, end) = scan::skip_value_trusted(self.text, start);
            (
                Err(Invalid {
                    id: None,
                    reason: InvalidReason::NotAnObject,
                    is_response: false,
                }),
                end,
            )
        };
        // Never loops without progress: an element that ends where it starts ends iteration.
        self.advance_past(start, end);
        Some(element)
    }
}

/// Spans of the members the specification defines, found in one walk over an object.
#[derive(Default)]
struct Members<'a> {
    jsonrpc: Option<&'a [u8]>,
    method: Option<&'a [u8]>,
    params: Option<&'a [u8]>,
    id: Option<&'a [u8]>,
    result: Option<&'a [u8]>,
    error: Option<&'a [u8]>,
    duplicate: bool,
}

/// Walks the object at `start` (which holds `{`). With `validate`, every value is validated
/// (the only pass over the bytes); without it the text must already be known valid.
/// Returns the element and the offset just past `}`.
fn parse_object(
    text: &[u8],
    start: usize,
    max_depth: usize,
    validate: bool,
) -> Result<(Element<'_>, usize), ScanError> {
    let mut m = Members::default();
    let end = walk_object(text, start, max_depth, validate, |key, value| {
        let slot = match key {
            b"jsonrpc" => &mut m.jsonrpc,
            b"method" => &mut m.method,
            b"params" => &mut m.params,
            b"id" => &mut m.id,
            b"result" => &mut m.result,
            b"error" => &mut m.error,
            _ => match canonical_key(key) {
                b"jsonrpc" => &mut m.jsonrpc,
                b"method" => &mut m.method,
                b"params" => &mut m.params,
                b"id" => &mut m.id,
                b"result" => &mut m.result,
                b"error" => &mut m.error,
                _ => return,
            },
        };
        if slot.is_some() {
            m.duplicate = true;
        }
        *slot = Some(value);
    })?;
    Ok((classify(&m), end))
}

/// Calls `member(key, value)` for each member of the object at `start` and returns the offset
/// past its closing brace. Keys are compared in escaped form; a key written with escapes
/// (`"m\u0065thod"`) is decoded first so it still counts as the member it names.
fn walk_object<'a>(
    text: &'a [u8],
    start: usize,
    max_depth: usize,
    validate: bool,
    mut member: impl FnMut(&[u8], &'a [u8]),
) -> Result<usize, ScanError> {
    let err = |kind, offset| ScanError { kind, offset };
    if max_depth == 0 {
        return Err(err(ScanErrorKind::TooDeep, start));
    }
    let mut pos = scan::skip_ws(text, start + 1);
    if text.get(pos) == Some(&b'}') {
        return Ok(pos + 1);
    }
    loop {
        if text.get(pos) != Some(&b'"') {
            let kind = if pos >= text.len() {
                ScanErrorKind::UnexpectedEnd
            } else {
                ScanErrorKind::UnexpectedByte
            };
            return Err(err(kind, pos));
        }
        let key_end = scan::scan_string(text, pos)?;
        let key = text.get(pos + 1..key_end - 1).unwrap_or(&[]);
        pos = scan::skip_ws(text, key_end);
        match text.get(pos) {
            Some(b':') => pos += 1,
            Some(_) => return Err(err(ScanErrorKind::UnexpectedByte, pos)),
            None => return Err(err(ScanErrorKind::UnexpectedEnd, pos)),
        }
        let (vstart, vend) = if validate {
            scan_member_value(text, pos, max_depth - 1)?
        } else {
            scan::skip_value_trusted(text, pos)
        };
        let value = text.get(vstart..vend).unwrap_or(&[]);
        member(key, value);
        pos = scan::skip_ws(text, vend);
        match text.get(pos) {
            Some(b',') => pos = scan::skip_ws(text, pos + 1),
            Some(b'}') => return Ok(pos + 1),
            Some(_) => return Err(err(ScanErrorKind::UnexpectedByte, pos)),
            None => return Err(err(ScanErrorKind::UnexpectedEnd, pos)),
        }
        if !validate && pos >= text.len() {
            return Err(err(ScanErrorKind::UnexpectedEnd, pos));
        }
    }
}

/// The member a name written with escapes (`"m\u0065thod"`) stands for: one of ours, or
/// `b""`. Called only for names that are not ours as written.
fn canonical_key(key: &[u8]) -> &'static [u8] {
    const OURS: [&str; 9] = [
        "jsonrpc", "method", "params", "id", "result", "error", "code", "message", "data",
    ];
    if !key.contains(&b'\\') {
        return b"";
    }
    let Some(name) = JsonStr::from_validated(key) else {
        return b"";
    };
    OURS.iter()
        .find(|ours| name.eq_str(ours))
        .map_or(&b""[..], |ours| ours.as_bytes())
}

/// Validates a member value. Strings and numbers (most members) go straight to their scanner;
/// only containers and literals need the general one.
#[inline]
fn scan_member_value(
    text: &[u8],
    pos: usize,
    max_depth: usize,
) -> Result<(usize, usize), ScanError> {
    let start = scan::skip_ws(text, pos);
    match text.get(start) {
        Some(b'"') => Ok((start, scan::scan_string(text, start)?)),
        Some(b'-' | b'0'..=b'9') => Ok((start, scan::scan_number(text, start)?)),
        _ => scan::scan_value(text, start, max_depth),
    }
}

fn as_id(value: &[u8]) -> Option<Id<'_>> {
    Id::from_validated(value)
}

fn as_string(value: &[u8]) -> Option<JsonStr<'_>> {
    let inner = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    JsonStr::from_validated(inner)
}

fn is_version(value: &[u8]) -> bool {
    value == b"\"2.0\"" || as_string(value).is_some_and(|s| s.eq_str("2.0"))
}

fn classify<'a>(m: &Members<'a>) -> Element<'a> {
    let is_response = m.method.is_none() && (m.result.is_some() || m.error.is_some());
    let id = match m.id {
        Some(raw) => match as_id(raw) {
            Some(id) => Some(id),
            None => {
                return Err(Invalid {
                    id: None,
                    reason: InvalidReason::IdWrongType,
                    is_response,
                })
            }
        },
        None => None,
    };
    let invalid = |reason| {
        Err(Invalid {
            id,
            reason,
            is_response,
        })
    };
    if m.duplicate {
        return invalid(InvalidReason::DuplicateMember);
    }
    match m.jsonrpc {
        None => return invalid(InvalidReason::MissingVersion),
        Some(v) if !is_version(v) => return invalid(InvalidReason::WrongVersion),
        Some(_) => {}
    }
    if let Some(method) = m.method {
        if m.result.is_some() || m.error.is_some() {
            return invalid(InvalidReason::RequestWithResult);
        }
        let Some(method) = as_string(method) else {
            return invalid(InvalidReason::MethodNotString);
        };
        let params = match m.params {
            None => None,
            Some(p) if matches!(p.first(), Some(b'[' | b'{')) => RawJson::from_validated(p),
            Some(_) => return invalid(InvalidReason::ParamsNotStructured),
        };
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }
    if !is_response {
        return invalid(InvalidReason::NotRequestOrResponse);
    }
    let Some(id) = id else {
        return invalid(InvalidReason::MissingId);
    };
    let outcome = match (m.result, m.error) {
        (Some(result), None) => match RawJson::from_validated(result) {
            Some(r) => Ok(r),
            None => return invalid(InvalidReason::MalformedError),
        },
        (None, Some(error)) => match parse_error_object(error) {
            Some(e) => Err(e),
            None => return invalid(InvalidReason::MalformedError),
        },
        _ => return invalid(InvalidReason::ResultAndError),
    };
    Ok(Message::Response(Response { id, outcome }))
}

fn parse_error_object(value: &[u8]) -> Option<ErrorObject<'_>> {
    if value.first() != Some(&b'{') {
        return None;
    }
    let (mut code, mut message, mut data, mut dup) = (None, None, None, false);
    walk_object(value, 0, scan::MAX_DEPTH_LIMIT, false, |key, v| {
        let key = match key {
            b"code" | b"message" | b"data" => key,
            _ => canonical_key(key),
        };
        let slot = match key {
            b"code" => &mut code,
            b"message" => &mut message,
            b"data" => &mut data,
            _ => return,
        };
        dup |= slot.is_some();
        *slot = Some(v);
    })
    .ok()?;
    if dup {
        return None;
    }
    let code = parse_i32(code?)?;
    let message = as_string(message?)?;
    let data = match data {
        Some(d) => Some(RawJson::from_validated(d)?),
        None => None,
    };
    Some(ErrorObject {
        code: ErrorCode(code),
        message,
        data,
    })
}

/// Parses a JSON integer that fits an `i32` (no fraction or exponent).
fn parse_i32(raw: &[u8]) -> Option<i32> {
    let (neg, digits) = match raw.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, raw),
    };
    let v = i64::try_from(super::id::parse_u64(digits)?).ok()?;
    i32::try_from(if neg { -v } else { v }).ok()
}
