//! What a scan reports when the JSON is not valid: [`ScanError`], of kind [`ScanErrorKind`],
//! at a byte offset.

use core::fmt;

/// What went wrong while scanning JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ScanErrorKind {
    /// The input ended inside a value.
    UnexpectedEnd,
    /// A byte that cannot appear here.
    UnexpectedByte,
    /// Malformed UTF-8 inside a string (outside strings any non-ASCII byte is `UnexpectedByte`).
    InvalidUtf8,
    /// A bad backslash escape, or bad hex digits in a `\u` escape.
    InvalidEscape,
    /// A raw byte below 0x20 inside a string.
    ControlCharacter,
    /// The number grammar is violated (leading zeros, `1.`, `-`, `.5`, `1e`, ...).
    InvalidNumber,
    /// Nesting deeper than the configured maximum depth.
    TooDeep,
    /// Non-whitespace after the value (only from [`validate`](super::validate)).
    TrailingCharacters,
}

impl ScanErrorKind {
    /// A short human-readable description.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::UnexpectedEnd => "unexpected end of input",
            Self::UnexpectedByte => "unexpected byte",
            Self::InvalidUtf8 => "invalid UTF-8 in string",
            Self::InvalidEscape => "invalid escape in string",
            Self::ControlCharacter => "control character in string",
            Self::InvalidNumber => "invalid number",
            Self::TooDeep => "nesting too deep",
            Self::TrailingCharacters => "trailing characters after JSON value",
        }
    }
}

impl fmt::Display for ScanErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A JSON scanning error: what went wrong and where.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct ScanError {
    /// What went wrong.
    pub kind: ScanErrorKind,
    /// Byte offset in the input where the error was detected (see the module docs).
    pub offset: usize,
}

impl ScanError {
    #[inline]
    pub(super) const fn new(kind: ScanErrorKind, offset: usize) -> Self {
        Self { kind, offset }
    }
}

impl fmt::Display for ScanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at byte offset {}", self.kind, self.offset)
    }
}

impl core::error::Error for ScanError {}

#[allow(clippy::unwrap_used)]
#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::scan::UnescapeError;

    #[test]
    fn display() {
        use core::fmt::Write;
        struct Buf([u8; 128], usize);
        impl Write for Buf {
            fn write_str(&mut self, s: &str) -> fmt::Result {
                let end = self.1 + s.len();
                self.0
                    .get_mut(self.1..end)
                    .ok_or(fmt::Error)?
                    .copy_from_slice(s.as_bytes());
                self.1 = end;
                Ok(())
            }
        }
        let mut b = Buf([0; 128], 0);
        write!(b, "{}", ScanError::new(ScanErrorKind::TooDeep, 7)).unwrap();
        assert_eq!(&b.0[..b.1], b"nesting too deep at byte offset 7");
        let mut b = Buf([0; 128], 0);
        write!(b, "{}", UnescapeError::BufferTooSmall { required: 9 }).unwrap();
        assert_eq!(&b.0[..b.1], b"buffer too small: 9 bytes required");
    }
}
