//! The values a [`Connection`](super::Connection) takes and gives: configuration, request
//! handles, inbound messages, problems, events, outputs and errors (tokens and failures are
//! [`token`](crate::token)'s, counters [`stats`](super::stats)').

use core::fmt;
use core::time::Duration;

use crate::time::Instant;
use crate::token::{Failure, Token};
use crate::wire::{
    ErrorObject, Framing, Id, Invalid, JsonStr, RawJson, Response, ScanError, DEFAULT_MAX_FRAME,
};

/// What to do when a request arrives whose id equals that of a request still in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub enum DuplicateIdPolicy {
    /// Deliver it (flagged [`InboundRequest::duplicate`]) and count it; both get answered.
    #[default]
    Process,
    /// Answer it at once with Invalid Request (`data: "duplicate id"`) and report
    /// [`Problem::DuplicateId`].
    Reject,
}

/// Runtime settings of a [`Connection`](super::Connection), limits included. With
/// [`Inline`](crate::storage::Inline) storage the arrays' sizes cap the limits; with
/// [`Heap`](crate::storage::Heap) storage the limits are what memory may grow to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "arbitrary", derive(arbitrary::Arbitrary))]
pub struct Config {
    /// Framing of outgoing frames (use the same for the [`RxBuffer`](crate::wire::RxBuffer)).
    pub framing: Framing,
    /// Maximum nesting depth of an inbound frame (clamped to
    /// [`MAX_DEPTH_LIMIT`](crate::wire::scan::MAX_DEPTH_LIMIT)).
    pub max_depth: usize,
    /// Maximum elements in an inbound batch; a longer batch gets one Invalid Request reply.
    pub max_batch_len: usize,
    /// Accept inbound batches. When false (MCP 2025-06-18), a batch gets one Invalid Request
    /// reply with `data: "batches are not supported"`.
    pub batches: bool,
    /// Timeout of an outgoing request when the call gives none; `None` waits forever.
    pub request_timeout: Option<Duration>,
    /// Duplicate in-flight inbound ids.
    pub duplicate_ids: DuplicateIdPolicy,
    /// The largest frame sent or received, in bytes (and so the most a growing buffer holds
    /// for one frame). [`Connection::rx_buffer`](super::Connection::rx_buffer) uses it too.
    /// An inbound frame over it is skipped and answered with Invalid Request; with heap
    /// storage an outgoing one (request, notification, answer, batch) is refused with
    /// `TooLarge`, while with inline storage the transmit array bounds outgoing frames.
    /// Automatic error replies (a few hundred bytes at most) are always sent.
    pub max_frame: usize,
    /// The most outgoing requests awaiting responses at once; beyond it `send_request`
    /// returns [`SendError::PendingFull`] (backpressure).
    pub max_pending: usize,
    /// The most inbound requests awaiting our answer at once; beyond it a request is answered
    /// Server busy.
    pub max_inflight: usize,
}

impl Default for Config {
    fn default() -> Self {
        Config::DEFAULT
    }
}

impl Config {
    /// The defaults: newline framing, depth 64, batches of up to 64 elements, 30 s request
    /// timeout, duplicate ids processed, frames of up to 1 MiB, 1 024 pending and 1 024
    /// in-flight requests (fixed storage caps these at its sizes). A `const`, so a firmware
    /// can build its connection in a `static` instead of on the stack.
    pub const DEFAULT: Config = Config {
        framing: Framing::Line,
        max_depth: crate::wire::scan::DEFAULT_MAX_DEPTH,
        max_batch_len: 64,
        batches: true,
        request_timeout: Some(Duration::from_secs(30)),
        duplicate_ids: DuplicateIdPolicy::Process,
        max_frame: DEFAULT_MAX_FRAME,
        max_pending: 1024,
        max_inflight: 1024,
    };

    /// The default configuration with another framing.
    pub const fn with_framing(framing: Framing) -> Self {
        Config {
            framing,
            ..Config::DEFAULT
        }
    }

    /// This configuration with another maximum frame length.
    pub const fn with_max_frame(self, max_frame: usize) -> Self {
        Config { max_frame, ..self }
    }
}

/// Names an inbound request until it is answered. Stale handles are detected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RequestHandle {
    pub(crate) slot: u32,
    pub(crate) generation: u16,
}

impl RequestHandle {
    /// The in-flight slot this request occupies (0-based, below the connection's
    /// `max_inflight`).
    pub fn slot(&self) -> usize {
        self.slot as usize
    }
}

/// A request from the peer: answer it with [`respond`](super::Connection::respond),
/// [`respond_error`](super::Connection::respond_error) or
/// [`reject`](super::Connection::reject).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboundRequest<'a> {
    /// Names this request when answering.
    pub handle: RequestHandle,
    /// Its id, as received.
    pub id: Id<'a>,
    /// The method name, still escaped.
    pub method: JsonStr<'a>,
    /// `params`, an array or object when present.
    pub params: Option<RawJson<'a>>,
    /// Another request with the same id is still in flight.
    pub duplicate: bool,
    /// It arrived in a batch (its answer joins the batch reply).
    pub in_batch: bool,
}

/// A response to one of our requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InboundResponse<'a> {
    /// The token given when the request was sent.
    pub token: Token,
    /// `result` or `error`.
    pub outcome: Result<RawJson<'a>, ErrorObject<'a>>,
}

/// Something the peer did wrong. Where the specification requires a reply, rpcwire has queued
/// it already ([`Problem::replied`]); the connection goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem<'a> {
    /// Invalid JSON; answered with Parse error.
    ParseError(ScanError),
    /// Valid JSON but not a valid message; an invalid request is answered with Invalid
    /// Request, an invalid response is only reported.
    Invalid(Invalid<'a>),
    /// `[]`; answered with one Invalid Request.
    EmptyBatch,
    /// A batch over `max_batch_len` elements, or whose worst-case reply cannot fit the batch
    /// reply buffer; answered with one Invalid Request (`data: "batch too large"`).
    BatchTooLarge {
        /// Elements counted (stops counting one past the limit).
        elements: usize,
    },
    /// A batch while batches are refused; answered with one Invalid Request.
    BatchRefused,
    /// A frame over the maximum frame length; skipped and answered with Invalid Request
    /// (`data: "frame too large"`).
    FrameTooLarge {
        /// Declared or observed length.
        len: usize,
    },
    /// A content-length header block without a valid length; skipped up to the next
    /// `Content-Length` header. Not answered: header bytes are framing, not a message, and
    /// two peers that both lost framing must not feed each other error frames.
    BadHeader,
    /// A request id longer than [`MAX_STORED_ID_LEN`](crate::wire::MAX_STORED_ID_LEN);
    /// answered with Invalid Request echoing it.
    IdTooLong(Id<'a>),
    /// A request whose id is in flight, under [`DuplicateIdPolicy::Reject`]; answered with
    /// Invalid Request.
    DuplicateId(Id<'a>),
    /// A request that found the in-flight table full, or that came in a batch while another
    /// batch was being answered (there is one batch reply buffer); answered with Server busy
    /// (-32001).
    Busy(Id<'a>),
    /// A response whose id matches no pending request of ours (late, cancelled, or bogus).
    UnknownResponse(Response<'a>),
    /// An error with id `null`: the peer could not read one of our messages (its Parse error,
    /// Invalid Request, frame too large). When it can only be about one of our requests (the
    /// one waiting, with no notification or batch of ours unconfirmed), it is delivered as
    /// that request's [`Inbound::Response`] instead; otherwise the peer's message does not say
    /// which one failed, and the requests wait for their own deadline.
    PeerError(ErrorObject<'a>),
}

impl Problem<'_> {
    /// True when rpcwire answers this problem on the wire.
    pub fn replied(&self) -> bool {
        match self {
            Problem::Invalid(inv) => inv.needs_reply(),
            Problem::UnknownResponse(_) | Problem::PeerError(_) | Problem::BadHeader => false,
            _ => true,
        }
    }
}

/// What [`handle_input`](super::Connection::handle_input) yields, one at a time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Inbound<'a> {
    /// A request to answer.
    Request(InboundRequest<'a>),
    /// A notification (never answered).
    Notification(crate::wire::Notification<'a>),
    /// The response to one of our requests; its token is done.
    Response(InboundResponse<'a>),
    /// Peer garbage, already answered as the specification requires.
    Problem(Problem<'a>),
}

/// What [`handle_input`](super::Connection::handle_input) gives back: the next inbound item,
/// or why there is none (in the spirit of httparse's `Status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Input<'a> {
    /// An inbound item to handle; call `handle_input` again afterwards.
    Item(Inbound<'a>),
    /// Everything received is handled: feed more bytes when they arrive.
    NeedMore,
    /// A reply to what was received waits for transmit room: write out
    /// [`poll_transmit`](super::Connection::poll_transmit), then call `handle_input` again
    /// (with the bytes still left in `input`, which are kept).
    Blocked,
    /// The connection is closed; input is discarded.
    Closed,
}

impl<'a> Input<'a> {
    /// The item, if this is one.
    pub fn item(self) -> Option<Inbound<'a>> {
        match self {
            Input::Item(item) => Some(item),
            _ => None,
        }
    }
}

/// Events from [`poll_event`](super::Connection::poll_event).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event {
    /// An outgoing request ended without a response; its token is done.
    RequestFailed {
        /// The request's token.
        token: Token,
        /// Why.
        reason: Failure,
    },
}

/// What [`poll_output`](super::Connection::poll_output) asks of the caller next.
#[derive(Debug, PartialEq, Eq)]
pub enum Output<'a> {
    /// An event to handle.
    Event(Event),
    /// Bytes to write (possibly several frames); report how many were written with
    /// [`advance_transmit`](super::Connection::advance_transmit).
    Transmit(&'a [u8]),
    /// Nothing to do before this instant: call
    /// [`handle_timeout`](super::Connection::handle_timeout) then (or when input arrives).
    Timeout(Instant),
    /// Nothing to do until input arrives or a command is given.
    Idle,
}

/// Errors from sending a request or notification (nothing was sent, no token was taken).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SendError {
    /// The pending-request table is full: wait for responses or timeouts.
    PendingFull,
    /// The transmit buffer lacks room now: write out [`poll_transmit`](super::Connection::poll_transmit) and retry.
    WouldBlock {
        /// Frame length needed.
        required: usize,
    },
    /// The frame is larger than the whole transmit buffer.
    TooLarge {
        /// Frame length needed.
        required: usize,
    },
    /// Params could not be serialized.
    Serialize(crate::wire::ser::SerializeError),
    /// The connection is closed.
    Closed,
}

/// Errors from answering an inbound request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum RespondError {
    /// The handle names no open request (already answered, or the connection was closed).
    UnknownHandle,
    /// The transmit buffer lacks room now; the request stays open: write out
    /// [`poll_transmit`](super::Connection::poll_transmit) and retry.
    WouldBlock {
        /// Frame length needed.
        required: usize,
    },
    /// The response can never fit (transmit buffer, or the batch reply buffer for a batch
    /// member). The request has been answered with Internal error instead.
    TooLarge {
        /// Bytes needed.
        required: usize,
    },
    /// The result or error data could not be serialized; the request stays open.
    Serialize(crate::wire::ser::SerializeError),
}

/// Errors of connection commands that may ask to write out and retry
/// ([`RespondError::WouldBlock`], [`SendError::WouldBlock`]): the rule a driver's retry loop
/// follows (write out [`poll_transmit`](super::Connection::poll_transmit), then run the
/// command again), such as rpcwire-embedded-io's `Context::retry`.
pub trait Retry {
    /// True when writing out queued bytes and trying again can succeed.
    fn would_block(&self) -> bool;
}

impl Retry for RespondError {
    fn would_block(&self) -> bool {
        matches!(self, RespondError::WouldBlock { .. })
    }
}

impl Retry for SendError {
    fn would_block(&self) -> bool {
        matches!(self, SendError::WouldBlock { .. })
    }
}

/// A command's outcome: it asks to write out and retry when its error does.
impl<T, R: Retry> Retry for Result<T, R> {
    fn would_block(&self) -> bool {
        matches!(self, Err(e) if e.would_block())
    }
}

/// Error from [`cancel`](super::Connection::cancel).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum CancelError {
    /// No pending request carries this token (it already ended).
    NotPending,
}

macro_rules! display {
    ($ty:ty, $($pat:pat => $fmt:expr),+ $(,)?) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                match self { $($pat => $fmt(f),)+ }
            }
        }
        impl core::error::Error for $ty {}
    };
}

display!(SendError,
    SendError::PendingFull => |f: &mut fmt::Formatter<'_>| f.write_str("pending-request table is full"),
    SendError::WouldBlock { required } => |f: &mut fmt::Formatter<'_>| write!(f, "transmit buffer full ({required} bytes needed)"),
    SendError::TooLarge { required } => |f: &mut fmt::Formatter<'_>| write!(f, "frame of {required} bytes exceeds the transmit buffer"),
    SendError::Serialize(e) => |f: &mut fmt::Formatter<'_>| write!(f, "cannot serialize params: {e}"),
    SendError::Closed => |f: &mut fmt::Formatter<'_>| f.write_str("connection closed"),
);

display!(RespondError,
    RespondError::UnknownHandle => |f: &mut fmt::Formatter<'_>| f.write_str("no open request with this handle"),
    RespondError::WouldBlock { required } => |f: &mut fmt::Formatter<'_>| write!(f, "transmit buffer full ({required} bytes needed)"),
    RespondError::TooLarge { required } => |f: &mut fmt::Formatter<'_>| write!(f, "response of {required} bytes can never fit; answered with Internal error"),
    RespondError::Serialize(e) => |f: &mut fmt::Formatter<'_>| write!(f, "cannot serialize response: {e}"),
);

display!(CancelError,
    CancelError::NotPending => |f: &mut fmt::Formatter<'_>| f.write_str("no pending request with this token"),
);
