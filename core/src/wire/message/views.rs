//! The message views: a request, a notification, a response, or why an object is none of
//! them, each borrowing the frame it was read from; and the limits a parse goes by.

use crate::code::ErrorCode;
use crate::wire::id::Id;
use crate::wire::json::{JsonStr, RawJson};
use crate::wire::scan;

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
