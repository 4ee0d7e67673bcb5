//! Request ids: a string, any JSON number, or null, echoed back byte-exact.

use core::fmt;

use super::json::JsonStr;
use crate::bytes::parse_u64;

/// The kind of a request id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum IdKind {
    /// `null`.
    Null,
    /// Any JSON number: negative, fractional and arbitrarily large ones included.
    Number,
    /// A JSON string.
    String,
}

/// A request id, borrowed byte-exact from the input so that replies echo it unchanged.
///
/// ```
/// use rpcwire::wire::{Id, IdKind};
/// let id = Id::from_json("9007199254740993").unwrap();
/// assert_eq!(id.kind(), IdKind::Number);
/// assert_eq!(id.as_u64(), Some(9007199254740993));
/// assert_eq!(id.raw(), "9007199254740993");
/// assert!(Id::from_json("[1]").is_none());
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Id<'a> {
    /// Validated JSON text of a string, number or null.
    raw: &'a [u8],
}

impl<'a> Id<'a> {
    /// The `null` id.
    pub const NULL: Id<'static> = Id { raw: b"null" };

    /// Wraps the text of a validated JSON value if it is a legal id (string, number or null).
    /// The text must be one valid JSON value (as the parser guarantees); this only checks its
    /// kind.
    pub fn from_json(raw: &'a str) -> Option<Self> {
        Self::from_validated(raw.as_bytes())
    }

    #[cfg_attr(target_pointer_width = "64", inline)]
    pub(crate) fn from_validated(raw: &'a [u8]) -> Option<Self> {
        match raw.first()? {
            b'"' | b'-' | b'0'..=b'9' => Some(Id { raw }),
            b'n' if raw == b"null" => Some(Id { raw }),
            _ => None,
        }
    }

    /// The id's JSON text, exactly as received (strings include their quotes).
    pub fn raw(&self) -> &'a str {
        super::json::validated_str(self.raw)
    }

    /// The id's JSON text as bytes.
    pub fn raw_bytes(&self) -> &'a [u8] {
        self.raw
    }

    /// The kind of id.
    pub fn kind(&self) -> IdKind {
        match self.raw.first() {
            Some(b'"') => IdKind::String,
            Some(b'n') => IdKind::Null,
            _ => IdKind::Number,
        }
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.kind() == IdKind::Null
    }

    /// The id as an unsigned integer when it is written as one (no sign, fraction or exponent).
    pub fn as_u64(&self) -> Option<u64> {
        parse_u64(self.raw)
    }

    /// The id as a signed integer when it is written as one.
    pub fn as_i64(&self) -> Option<i64> {
        match self.raw.strip_prefix(b"-") {
            Some(rest) => 0i64.checked_sub_unsigned(parse_u64(rest)?),
            None => i64::try_from(parse_u64(self.raw)?).ok(),
        }
    }

    /// The string contents (still escaped) when the id is a string.
    pub fn as_json_str(&self) -> Option<JsonStr<'a>> {
        let inner = self.raw.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        JsonStr::from_validated(inner)
    }

    /// A key equal for two ids exactly when they are the same JSON value, for matching a
    /// cancellation's id to a request: a string by its text with escapes undone (`"w\u0031"`
    /// and `"w1"` are one id), a number or `null` as written (`1` and `1.0` stay apart, as the
    /// specification asks that ids carry no fractions). Borrowed unless the id has escapes
    /// (feature `alloc`).
    ///
    /// ```
    /// use rpcwire::wire::Id;
    /// let plain = Id::from_json(r#""w1""#).unwrap();
    /// let escaped = Id::from_json(r#""w\u0031""#).unwrap();
    /// assert_eq!(plain.match_key(), escaped.match_key());
    /// assert_ne!(Id::from_json("1").unwrap().match_key(), plain.match_key());
    /// ```
    #[cfg(feature = "alloc")]
    pub fn match_key(&self) -> alloc::borrow::Cow<'a, str> {
        match self.as_json_str().filter(JsonStr::has_escapes) {
            // Quotes around the unescaped text: no string without escapes, and no number, has
            // this same text (it would hold a bare `"` or start with one).
            Some(s) => alloc::borrow::Cow::Owned(alloc::format!("\"{}\"", s.to_string_lossy())),
            None => alloc::borrow::Cow::Borrowed(self.raw()),
        }
    }
}

impl fmt::Debug for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Id({})", self.raw())
    }
}

impl fmt::Display for Id<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.raw())
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Id<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "{=str}", self.raw())
    }
}

/// An id stored inline (no heap) so that a reply can echo it after the input is gone.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct StoredId {
    len: u8,
    bytes: [u8; MAX_STORED_ID_LEN],
}

/// The longest id (in bytes of JSON text, quotes included) that a [`StoredId`] holds. A request
/// whose id is longer is answered at once with Invalid Request (echoing the id) instead of being
/// tracked.
pub const MAX_STORED_ID_LEN: usize = 64;

impl StoredId {
    /// A stored `null`.
    pub const NULL: StoredId = {
        let mut bytes = [0u8; MAX_STORED_ID_LEN];
        bytes[0] = b'n';
        bytes[1] = b'u';
        bytes[2] = b'l';
        bytes[3] = b'l';
        StoredId { len: 4, bytes }
    };

    /// No id at all (zero bytes): a placeholder for unused storage.
    pub(crate) const EMPTY: StoredId = StoredId {
        len: 0,
        bytes: [0; MAX_STORED_ID_LEN],
    };

    /// Copies `id`; `None` when it is longer than [`MAX_STORED_ID_LEN`].
    pub fn new(id: Id<'_>) -> Option<Self> {
        let raw = id.raw_bytes();
        let mut bytes = [0u8; MAX_STORED_ID_LEN];
        bytes.get_mut(..raw.len())?.copy_from_slice(raw);
        Some(StoredId {
            len: u8::try_from(raw.len()).ok()?,
            bytes,
        })
    }

    /// Stores `raw` (an id's JSON text) in place, without the temporary a new `StoredId`
    /// and its copy into a table slot cost; false (nothing changed) when it is longer than
    /// [`MAX_STORED_ID_LEN`].
    pub(crate) fn set(&mut self, raw: &[u8]) -> bool {
        let (Some(dst), Ok(len)) = (self.bytes.get_mut(..raw.len()), u8::try_from(raw.len()))
        else {
            return false;
        };
        crate::bytes::copy_bytes(dst, raw);
        self.len = len;
        true
    }

    /// The id's JSON text.
    pub fn raw(&self) -> &[u8] {
        self.bytes.get(..usize::from(self.len)).unwrap_or(&[])
    }

    /// True when this stores the same id text as `id`.
    pub fn matches(&self, id: Id<'_>) -> bool {
        self.raw() == id.raw_bytes()
    }
}

impl fmt::Debug for StoredId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "StoredId({})",
            core::str::from_utf8(self.raw()).unwrap_or("?")
        )
    }
}
