//! Compact JSON serialization into a byte [`Sink`] that never runs out of space.
//!
//! [`to_sink`] drives any `serde::Serialize` value into a [`Sink`]. A sink's
//! [`put`](Sink::put) cannot fail: a bounded sink such as [`SliceSink`] keeps *counting* once its
//! buffer is full, so a single pass tells the caller either "here are your `n` bytes" or "you need
//! exactly `n` bytes". [`to_slice`] wraps that into a `Result`, [`encoded_len`] only counts.
//!
//! The output is byte-for-byte what `serde_json::to_vec` produces for the same value (compact
//! form, same string escaping, same number formatting, same enum representation), with one
//! deliberate difference: a NaN or infinite float is an error
//! ([`SerializeError::NonFiniteFloat`]) instead of being silently written as `null`.
//!
//! Values that already hold validated JSON text can be embedded verbatim through
//! [`RAW_JSON_TOKEN`]; [`Rendered`] is such a value for text rendered beforehand.
//!
//! ```
//! use rpcwire::wire::ser::{encoded_len, to_slice, ToSliceError};
//!
//! let value = ("sum", [1, 2, 3]);
//! let mut buf = [0u8; 32];
//! assert_eq!(to_slice(&value, &mut buf), Ok(15));
//! assert_eq!(&buf[..15], br#"["sum",[1,2,3]]"#);
//!
//! // Too small: nothing is lost but the write, and the exact size is reported.
//! let mut small = [0u8; 4];
//! assert_eq!(
//!     to_slice(&value, &mut small),
//!     Err(ToSliceError::BufferTooSmall { required: 15 })
//! );
//! assert_eq!(encoded_len(&value), Ok(15));
//! ```
//!
//! `sink` and `error` are the leaves; `strings` and `numbers` write scalars, `key` writes
//! object keys with them, and `serializer` writes whole values with all of these; `rendered`
//! marks text rendered beforehand for it.

// Indexing here never touches peer input: it serializes the application's own values. Every
// index is in range by construction: tables have 256 entries and are indexed by a `u8`, digit
// buffers are sized for the widest integer of their type, and string runs are offsets found by
// iterating the same slice.
#![allow(clippy::indexing_slicing)]

mod error;
mod key;
mod numbers;
mod rendered;
mod serializer;
mod sink;
mod strings;

pub use self::error::{SerializeError, ToSliceError};
pub use self::rendered::Rendered;
pub use self::serializer::{encoded_len, to_sink, to_slice, RAW_JSON_TOKEN};
#[cfg(feature = "alloc")]
pub use self::sink::VecSink;
pub use self::sink::{CountingSink, Sink, SliceSink};
