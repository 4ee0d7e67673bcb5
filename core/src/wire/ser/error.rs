//! Why a value could not be serialized, and why it did not fit.

use core::fmt;

use serde::ser;

/// Why a value could not be serialized as JSON (no strings, Copy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum SerializeError {
    /// A map key that is not a string, integer, char or bool (JSON object keys are strings).
    ///
    /// Like `serde_json`, finite floats, unit variants and newtype structs or `Some` around an
    /// accepted key are accepted too (all written as quoted strings).
    KeyMustBeAString,
    /// A non-finite float (NaN or infinity) has no JSON representation.
    ///
    /// `serde_json` writes such a value as `null`; this serializer refuses it instead.
    NonFiniteFloat,
    /// The value's own `Serialize` impl reported an error (its message is dropped: no allocation).
    Custom,
}

impl fmt::Display for SerializeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::KeyMustBeAString => "JSON object key must be a string",
            Self::NonFiniteFloat => "NaN and infinite floats cannot be written as JSON",
            Self::Custom => "the value's Serialize implementation reported an error",
        })
    }
}

// `serde::ser::StdError` is `core::error::Error` (= `std::error::Error`), whatever serde's
// features, so this one impl also serves `std` users.
impl ser::StdError for SerializeError {}

impl ser::Error for SerializeError {
    #[inline]
    fn custom<T: fmt::Display>(_msg: T) -> Self {
        Self::Custom
    }
}

/// Why [`to_slice`](super::to_slice) failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ToSliceError {
    /// The encoding did not fit; it needs exactly `required` bytes.
    BufferTooSmall {
        /// The exact encoded length.
        required: usize,
    },
    /// The value cannot be serialized as JSON at all.
    Serialize(SerializeError),
}

impl From<SerializeError> for ToSliceError {
    #[inline]
    fn from(e: SerializeError) -> Self {
        Self::Serialize(e)
    }
}

impl fmt::Display for ToSliceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BufferTooSmall { required } => {
                write!(f, "buffer too small: {required} bytes required")
            }
            Self::Serialize(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl core::error::Error for ToSliceError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        match self {
            Self::BufferTooSmall { .. } => None,
            Self::Serialize(e) => Some(e),
        }
    }
}
