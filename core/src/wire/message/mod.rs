//! JSON-RPC 2.0 message views: parse one framed JSON text into a request, notification,
//! response, batch, or the precise reason it is invalid. One validating pass; every view borrows
//! the input.
//!
//! `views` holds the messages, `memo` keeps what validating a batch learned of its elements
//! (in offsets, rebuilt into views on delivery), `object` reads one object into its message,
//! `batch` iterates a validated batch, and `parse` takes a whole frame apart with them (each
//! module imports only those before it in this list).

mod batch;
mod memo;
mod object;
mod parse;
mod views;

pub use self::batch::{Batch, BatchIter};
pub use self::memo::MemoSlot;
pub(crate) use self::memo::MEMO_SLOTS;
pub use self::parse::{parse, Parsed};
pub(crate) use self::parse::{parse_recording, parse_single, parse_single_read, read_canonical};
pub use self::views::{
    Element, ErrorObject, Invalid, InvalidReason, Message, Notification, ParseLimits, Request,
    Response,
};
