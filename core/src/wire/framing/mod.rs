//! Framing: newline-delimited JSON and `Content-Length` headers (LSP style).
//!
//! `Content-Length` framing is the `content-length` feature (on by default): a firmware that
//! speaks newline-delimited JSON only turns it off and saves about 1 KiB of flash.
//!
//! [`RxBuffer`] is the receive side: a caller-owned, fixed-size buffer that accumulates bytes
//! and yields complete frames borrowed from itself. Every frame is limited to a configured
//! maximum; a peer-supplied `Content-Length` is never trusted beyond it (the body is skipped
//! by counting, never stored). [`write_frame`] is the send side.
//!
//! ```
//! use rpcwire::wire::{FrameEvent, Framing, RxBuffer};
//!
//! let mut rx = RxBuffer::<[u8; 64]>::new(Framing::Line);
//! let mut input: &[u8] = b"{\"a\":1}\r\n\n{\"b\"";
//! rx.push(&mut input);
//! assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"{\"a\":1}")));
//! assert_eq!(rx.next_frame(), None); // blank line skipped, second frame incomplete
//! rx.push(&mut &b":2}\n"[..]);
//! assert_eq!(rx.next_frame(), Some(FrameEvent::Frame(b"{\"b\":2}")));
//! ```
//!
//! `kind` names the framings, `content_length` reads and writes that framing's header, `rx`
//! is the receive buffer and `send` the send side (each imports only those before it).

mod content_length;
mod kind;
mod rx;
mod send;

#[cfg(feature = "content-length")]
pub use self::content_length::{content_length_header, parse_content_length};
pub use self::content_length::{MAX_HEADER_BLOCK, MAX_HEADER_LEN};
pub use self::kind::{Framing, DEFAULT_MAX_FRAME};
pub use self::rx::{FrameEvent, RxBuffer};
pub use self::send::{finish_frame, frame_reserve, split_frame, write_frame, EncodeError};
