//! The wire layer, usable on its own (like httparse or smoltcp's `wire`): a strict JSON scanner,
//! zero-copy JSON-RPC 2.0 message views, an encoder into caller buffers, and the two framings.
//! Nothing here keeps state between messages except [`RxBuffer`]'s partial frame.

pub mod classify;
pub mod encode;
pub mod framing;
pub mod id;
pub mod json;
pub mod message;
pub mod scan;
pub mod ser;
pub mod sse;

pub use encode::{NoParams, NO_PARAMS};
pub use framing::{
    finish_frame, frame_reserve, write_frame, EncodeError, FrameEvent, Framing, RxBuffer,
    DEFAULT_MAX_FRAME,
};
pub use id::{Id, IdKind, StoredId, MAX_STORED_ID_LEN};
pub use json::{DecodeError, Elements, JsonStr, Members, RawJson};
pub use message::{
    parse, Batch, BatchIter, Element, ErrorObject, Invalid, InvalidReason, MemoSlot, Message,
    Notification, ParseLimits, Parsed, Request, Response,
};
pub(crate) use message::{
    parse_recording, parse_single, parse_single_read, read_canonical, MEMO_SLOTS,
};
pub use scan::{ScanError, ScanErrorKind};
