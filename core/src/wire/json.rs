//! Zero-copy views of validated JSON: [`RawJson`] for any value, [`JsonStr`] for string contents
//! that stay escaped until asked.

use core::fmt;

use serde::{Deserialize, Serialize, Serializer};

use super::scan::{self, UnescapeError};
use super::ser::RAW_JSON_TOKEN;

/// Error from decoding a JSON span into a typed value with serde-json-core.
pub type DecodeError = serde_json_core::de::Error;

/// A validated JSON value, borrowed byte-exact from the input (`params`, `result`, `error.data`).
///
/// Decode it with serde: [`RawJson::decode`] uses serde-json-core (no heap), and with the `alloc`
/// feature `RawJson::deserialize` uses serde_json. Serializing a `RawJson` with rpcwire's
/// encoder embeds its text verbatim, so `echo` can answer with its own params without a copy
/// through an intermediate value.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RawJson<'a> {
    /// Validated JSON, hence UTF-8 (kept as bytes so that wrapping costs no second pass).
    text: &'a [u8],
}

/// Views bytes the scanner validated as UTF-8 (validated JSON always is).
pub(crate) fn validated_str(bytes: &[u8]) -> &str {
    core::str::from_utf8(bytes).unwrap_or("")
}

impl<'a> RawJson<'a> {
    /// Validates `text` as one JSON value (surrounding whitespace is trimmed) with the given
    /// nesting limit.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// let v = RawJson::parse(" [1, 2] ", 8).unwrap();
    /// assert_eq!(v.as_str(), "[1, 2]");
    /// assert!(RawJson::parse("[1,", 8).is_err());
    /// ```
    pub fn parse(text: &'a str, max_depth: usize) -> Result<Self, scan::ScanError> {
        let bytes = text.as_bytes();
        let (start, end) = scan::scan_value(bytes, 0, max_depth)?;
        let rest = scan::skip_ws(bytes, end);
        if rest != bytes.len() {
            return Err(scan::ScanError {
                kind: scan::ScanErrorKind::TrailingCharacters,
                offset: rest,
            });
        }
        Ok(RawJson {
            text: bytes.get(start..end).unwrap_or(&[]),
        })
    }

    /// Wraps bytes the scanner has already validated as one JSON value.
    pub(crate) fn from_validated(bytes: &'a [u8]) -> Option<Self> {
        Some(RawJson { text: bytes })
    }

    /// The JSON text.
    pub fn as_str(&self) -> &'a str {
        validated_str(self.text)
    }

    /// The JSON text as bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    /// True for a JSON array.
    pub fn is_array(&self) -> bool {
        self.text.first() == Some(&b'[')
    }

    /// True for a JSON object.
    pub fn is_object(&self) -> bool {
        self.text.first() == Some(&b'{')
    }

    /// True for `null`.
    pub fn is_null(&self) -> bool {
        self.text == b"null"
    }

    /// The contents of a JSON string value, still escaped; `None` if this is not a string.
    pub fn as_json_str(&self) -> Option<JsonStr<'a>> {
        let inner = self.text.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
        Some(JsonStr { escaped: inner })
    }

    /// The elements of an array (empty for any other value), each a validated span.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// let v = RawJson::parse("[1, [2, 3], \"x\"]", 8).unwrap();
    /// let items: Vec<&str> = v.elements().map(|e| e.as_str()).collect();
    /// assert_eq!(items, ["1", "[2, 3]", "\"x\""]);
    /// ```
    pub fn elements(&self) -> Elements<'a> {
        let bytes = self.as_bytes();
        Elements {
            text: if self.is_array() { bytes } else { &[] },
            pos: 1,
        }
    }

    /// The members of an object (empty for any other value): each key (still escaped) and
    /// value span, in order.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// let v = RawJson::parse(r#"{"minuend": 42, "subtrahend": 23.5}"#, 8).unwrap();
    /// let m: Vec<(&str, &str)> = v.members().map(|(k, v)| (k.escaped(), v.as_str())).collect();
    /// assert_eq!(m, [("minuend", "42"), ("subtrahend", "23.5")]);
    /// ```
    pub fn members(&self) -> Members<'a> {
        let bytes = self.as_bytes();
        Members {
            text: if self.is_object() { bytes } else { &[] },
            pos: 1,
        }
    }

    /// The elements of an array of exactly `N` integers (JSON integer syntax: an optional `-`
    /// and digits, no fraction or exponent) that each fit `i64`, read in one walk over the
    /// text with no per-element spans; `None` for anything else (another length, a float, a
    /// non-number, an integer beyond `i64`), which the caller then reads its general way.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// let v = RawJson::parse("[42, -23]", 8).unwrap();
    /// assert_eq!(v.int_array::<2>(), Some([42, -23]));
    /// assert_eq!(v.int_array::<3>(), None);
    /// assert_eq!(RawJson::parse("[4.2, 23]", 8).unwrap().int_array::<2>(), None);
    /// ```
    pub fn int_array<const N: usize>(&self) -> Option<[i64; N]> {
        let t = self.text;
        let mut out = [0i64; N];
        let mut pos = 1;
        if t.first() != Some(&b'[') {
            return None;
        }
        for (i, slot) in out.iter_mut().enumerate() {
            if i > 0 {
                pos = scan::skip_ws(t, pos);
                if t.get(pos) != Some(&b',') {
                    return None;
                }
                pos += 1;
            }
            let (v, end) = int_at(t, scan::skip_ws(t, pos))?;
            *slot = v;
            pos = end;
        }
        pos = scan::skip_ws(t, pos);
        (t.get(pos) == Some(&b']')).then_some(out)
    }

    /// The integer members `names` of an object that has exactly these members, each once,
    /// each an integer that fits `i64` (keys compared as written: a key with escapes does not
    /// match), in the order of `names`; `None` for anything else, which the caller then reads
    /// its general way. One walk over the text.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// let v = RawJson::parse(r#"{"subtrahend": 23, "minuend": 42}"#, 8).unwrap();
    /// assert_eq!(v.int_members([&b"minuend"[..], b"subtrahend"]), Some([42, 23]));
    /// assert_eq!(v.int_members([&b"minuend"[..]]), None);
    /// ```
    #[inline]
    pub fn int_members<const N: usize>(&self, names: [&[u8]; N]) -> Option<[i64; N]> {
        let t = self.text;
        let mut out = [0i64; N];
        let mut seen = [false; N];
        let mut pos = 1;
        if t.first() != Some(&b'{') {
            return None;
        }
        for i in 0..N {
            if i > 0 {
                pos = scan::skip_ws(t, pos);
                if t.get(pos) != Some(&b',') {
                    return None;
                }
                pos += 1;
            }
            let open = scan::skip_ws(t, pos);
            if t.get(open) != Some(&b'"') {
                return None;
            }
            // The key is a name exactly when the name's bytes follow the opening quote and
            // the closing quote follows them: a name with a backslash or a quote never matches
            // (a key written with escapes is left to the general reader). With the names
            // constants at the caller, each check is a word compare or two.
            let key = open + 1;
            let k = names.iter().position(|n| {
                !n.contains(&b'\\')
                    && !n.contains(&b'"')
                    && t.get(key + n.len()) == Some(&b'"')
                    && t.get(key..key + n.len()).is_some_and(|s| same_bytes(s, n))
            })?;
            let len = names.get(k)?.len();
            let seen_k = seen.get_mut(k)?;
            if *seen_k {
                return None;
            }
            *seen_k = true;
            let colon = scan::skip_ws(t, open + len + 2);
            if t.get(colon) != Some(&b':') {
                return None;
            }
            let (v, end) = int_at(t, scan::skip_ws(t, colon + 1))?;
            *out.get_mut(k)? = v;
            pos = end;
        }
        pos = scan::skip_ws(t, pos);
        (t.get(pos) == Some(&b'}')).then_some(out)
    }

    /// Decodes into `T` with serde-json-core: no heap. Borrowed `&str` fields work when the
    /// string has no escapes; otherwise use [`RawJson::decode_with`].
    ///
    /// What differs from serde_json ([`RawJson::deserialize`], and what rpcwire-tokio's
    /// handlers use), exactly:
    /// - a struct decodes from an object only; serde_json also takes positional params (`[42,
    ///   23]` into `struct { minuend, subtrahend }`). Decode positional params into a tuple.
    /// - no self-describing decoding (`deserialize_any`): untagged enums, `serde_json::Value`
    ///   and `#[serde(flatten)]` do not decode;
    /// - a borrowed `&str` whose JSON text has escapes is an error here (use
    ///   [`RawJson::decode_with`] and a scratch buffer), where serde_json needs a `String` or
    ///   `Cow<str>` for it.
    ///
    /// ```
    /// use rpcwire::wire::RawJson;
    /// #[derive(serde::Deserialize)]
    /// struct Sub { minuend: i64, subtrahend: i64 }
    /// let p = RawJson::parse(r#"{"subtrahend": 23, "minuend": 42}"#, 8).unwrap();
    /// let s: Sub = p.decode().unwrap();
    /// assert_eq!(s.minuend - s.subtrahend, 19);
    /// let (a, b): (i64, i64) = RawJson::parse("[42, 23]", 8).unwrap().decode().unwrap();
    /// assert_eq!(a - b, 19);
    /// // A struct from positional params: serde_json only.
    /// assert!(RawJson::parse("[42, 23]", 8).unwrap().decode::<Sub>().is_err());
    /// ```
    pub fn decode<T: Deserialize<'a>>(&self) -> Result<T, DecodeError> {
        serde_json_core::from_slice(self.as_bytes()).map(|(v, _)| v)
    }

    /// Like [`RawJson::decode`], unescaping borrowed strings into `scratch`.
    pub fn decode_with<'s, T: Deserialize<'s>>(
        &'s self,
        scratch: &'s mut [u8],
    ) -> Result<T, DecodeError> {
        serde_json_core::from_slice_escaped(self.as_bytes(), scratch).map(|(v, _)| v)
    }

    /// Decodes into `T` with serde_json (feature `alloc`); any `T: DeserializeOwned` works,
    /// and so do borrowing types.
    #[cfg(feature = "alloc")]
    pub fn deserialize<T: Deserialize<'a>>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(self.text)
    }
}

/// `a == b`, for the short names of params members: on hosts two word compares (overlapping)
/// for 4 to 16 bytes instead of a call to the general compare.
#[inline(always)]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if scan::WORD_AT_A_TIME {
        let n = a.len();
        let word = scan::load8;
        let half = |s: &[u8], at: usize| match s.get(at..at + 4).map(<[u8; 4]>::try_from) {
            Some(Ok(w)) => Some(u32::from_le_bytes(w)),
            _ => None,
        };
        if (8..=16).contains(&n) {
            return word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8);
        }
        if (4..8).contains(&n) {
            return half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4);
        }
    }
    a == b
}

/// The integer that starts at `pos` of validated JSON text and its end, if it is written as
/// an integer (an optional `-`, digits, then no `.`, `e` or `E`) and fits `i64`. Accumulated
/// negative so that `i64::MIN` fits.
#[inline]
fn int_at(t: &[u8], pos: usize) -> Option<(i64, usize)> {
    let negative = t.get(pos) == Some(&b'-');
    let first = pos + usize::from(negative);
    let mut end = first;
    // No check per digit: up to 18 digits fit (10^18 < 2^63); longer numbers are read again
    // with checks below.
    let mut v: u64 = 0;
    while let Some(d) = t.get(end).map(|b| b.wrapping_sub(b'0')).filter(|d| *d < 10) {
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        end += 1;
    }
    if end == first || matches!(t.get(end), Some(b'.' | b'e' | b'E')) {
        return None;
    }
    if end - first > 18 {
        return long_int_at(t, first, end, negative);
    }
    let v = v as i64;
    Some((if negative { -v } else { v }, end))
}

/// [`int_at`] for more than 18 digits (`first..end`), with every step checked.
#[cold]
fn long_int_at(t: &[u8], first: usize, end: usize, negative: bool) -> Option<(i64, usize)> {
    let mut v: i64 = 0;
    for &b in t.get(first..end)? {
        v = v.checked_mul(10)?.checked_sub(i64::from(b - b'0'))?;
    }
    let v = if negative { v } else { v.checked_neg()? };
    Some((v, end))
}

impl fmt::Debug for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "RawJson({})", self.as_str())
    }
}

impl fmt::Display for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for RawJson<'_> {
    /// rpcwire's encoder writes the text verbatim; other serializers see a newtype around a
    /// string.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct(RAW_JSON_TOKEN, self.as_str())
    }
}

/// Iterator over the elements of a [`RawJson`] array.
#[derive(Debug, Clone)]
pub struct Elements<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = RawJson<'a>;

    // Hosts inline it into the params decoder that walks it (firmware keeps one copy).
    #[cfg_attr(target_pointer_width = "64", inline)]
    fn next(&mut self) -> Option<RawJson<'a>> {
        let start = scan::skip_ws(self.text, self.pos);
        if matches!(self.text.get(start), None | Some(b']')) {
            self.pos = self.text.len();
            return None;
        }
        // The array was validated when this RawJson was made.
        let (s, e) = scan::skip_value_trusted(self.text, start);
        if e <= start {
            self.pos = self.text.len();
            return None;
        }
        let after = scan::skip_ws(self.text, e);
        self.pos = if self.text.get(after) == Some(&b',') {
            after + 1
        } else {
            self.text.len()
        };
        RawJson::from_validated(self.text.get(s..e)?)
    }
}

/// Iterator over the members of a [`RawJson`] object.
#[derive(Debug, Clone)]
pub struct Members<'a> {
    text: &'a [u8],
    pos: usize,
}

impl<'a> Iterator for Members<'a> {
    type Item = (JsonStr<'a>, RawJson<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.step();
        if item.is_none() {
            self.pos = self.text.len();
        }
        item
    }
}

impl<'a> Members<'a> {
    fn step(&mut self) -> Option<(JsonStr<'a>, RawJson<'a>)> {
        // The object was validated when this RawJson was made.
        let key_start = scan::skip_ws(self.text, self.pos);
        if self.text.get(key_start) != Some(&b'"') {
            return None;
        }
        let key_end = match scan::short_string(self.text, key_start) {
            Some(end) => end,
            None => scan::scan_string(self.text, key_start).ok()?,
        };
        let key = JsonStr::from_validated(self.text.get(key_start + 1..key_end - 1)?)?;
        let colon = scan::skip_ws(self.text, key_end);
        if self.text.get(colon) != Some(&b':') {
            return None;
        }
        let (s, e) = scan::skip_value_trusted(self.text, colon + 1);
        if e <= s {
            return None;
        }
        let after = scan::skip_ws(self.text, e);
        self.pos = if self.text.get(after) == Some(&b',') {
            after + 1
        } else {
            self.text.len()
        };
        Some((key, RawJson::from_validated(self.text.get(s..e)?)?))
    }
}

/// The contents of a JSON string (between the quotes), still escaped.
///
/// ```
/// use rpcwire::wire::RawJson;
/// let v = RawJson::parse(r#""caf\u00e9 \"ok\"""#, 4).unwrap();
/// let s = v.as_json_str().unwrap();
/// assert!(s.has_escapes());
/// assert!(s.eq_str("café \"ok\""));
/// let mut buf = [0u8; 32];
/// assert_eq!(s.unescape_into(&mut buf).unwrap(), "café \"ok\"");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct JsonStr<'a> {
    /// Validated string contents, hence UTF-8.
    escaped: &'a [u8],
}

impl<'a> JsonStr<'a> {
    /// Wraps string contents the scanner has validated.
    pub(crate) fn from_validated(escaped: &'a [u8]) -> Option<Self> {
        Some(JsonStr { escaped })
    }

    /// The escaped text, exactly as on the wire (without quotes).
    pub fn escaped(&self) -> &'a str {
        validated_str(self.escaped)
    }

    /// The escaped text as bytes, exactly as on the wire (no UTF-8 check: the scanner did it).
    pub fn escaped_bytes(&self) -> &'a [u8] {
        self.escaped
    }

    /// True when the text contains a backslash escape.
    #[cfg_attr(target_pointer_width = "64", inline)]
    pub fn has_escapes(&self) -> bool {
        crate::bytes::contains_byte(b'\\', self.escaped)
    }

    /// The text itself when it has no escapes (the common case for method names).
    pub fn as_str(&self) -> Option<&'a str> {
        (!self.has_escapes()).then(|| self.escaped())
    }

    /// Unescapes into `buf` and returns the text.
    pub fn unescape_into<'b>(&self, buf: &'b mut [u8]) -> Result<&'b str, UnescapeError> {
        let n = scan::unescape_into(self.escaped, buf)?;
        let out = buf.get(..n).ok_or(UnescapeError::InvalidEscape)?;
        core::str::from_utf8(out).map_err(|_| UnescapeError::InvalidEscape)
    }

    /// The unescaped characters, one at a time; a lone surrogate escape yields U+FFFD.
    pub fn chars(&self) -> Chars<'a> {
        Chars {
            rest: self.escaped().chars(),
        }
    }

    /// Compares the unescaped text with `s` without allocating: escapes are decoded as they
    /// come, byte by byte. A string holding a lone surrogate escape (`"\uD800"`) equals no
    /// `&str`, since it has no UTF-8 form.
    ///
    /// ```
    /// # use rpcwire::wire::{parse, Message, ParseLimits, Parsed};
    /// let frame = br#"{"jsonrpc":"2.0","method":"caf\u00e9\/menu"}"#;
    /// let Ok(Parsed::Single(Ok(Message::Notification(n)))) = parse(frame, ParseLimits::default())
    /// else { panic!() };
    /// assert!(n.method.eq_str("café/menu"));
    /// assert!(!n.method.eq_str("café/men"));
    /// ```
    pub fn eq_str(&self, s: &str) -> bool {
        self.escaped == s.as_bytes()
            || (self.has_escapes() && scan::unescaped_eq(self.escaped, s.as_bytes()))
    }

    /// The unescaped text, borrowed when it has no escapes (the common case), else decoded
    /// into a `String` (feature `alloc`; lone surrogates as U+FFFD).
    #[cfg(feature = "alloc")]
    pub fn to_str(&self) -> alloc::borrow::Cow<'a, str> {
        match self.as_str() {
            Some(s) => alloc::borrow::Cow::Borrowed(s),
            None => alloc::borrow::Cow::Owned(self.to_string_lossy()),
        }
    }

    /// The unescaped text as an owned `String` (feature `alloc`).
    #[cfg(feature = "alloc")]
    pub fn to_string_lossy(&self) -> alloc::string::String {
        self.chars().collect()
    }
}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "\"{}\"", self.escaped())
    }
}

impl fmt::Display for JsonStr<'_> {
    /// Writes the unescaped text (lone surrogates as U+FFFD).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        for c in self.chars() {
            f.write_char(c)?;
        }
        Ok(())
    }
}

/// Iterator over the unescaped characters of a [`JsonStr`].
#[derive(Debug, Clone)]
pub struct Chars<'a> {
    rest: core::str::Chars<'a>,
}

impl Chars<'_> {
    fn hex4(&mut self) -> Option<u32> {
        let mut v = 0u32;
        for _ in 0..4 {
            v = v * 16 + self.rest.next()?.to_digit(16)?;
        }
        Some(v)
    }
}

impl Iterator for Chars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let c = self.rest.next()?;
        if c != '\\' {
            return Some(c);
        }
        let decoded = match self.rest.next()? {
            '"' => '"',
            '\\' => '\\',
            '/' => '/',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'u' => {
                let hi = self.hex4()?;
                if (0xD800..0xDC00).contains(&hi) {
                    // A high surrogate pairs only with an immediately following low one.
                    let mut look = self.rest.clone();
                    let pair = if look.next() == Some('\\') && look.next() == Some('u') {
                        let mut probe = Chars { rest: look };
                        probe
                            .hex4()
                            .filter(|lo| (0xDC00..0xE000).contains(lo))
                            .map(|lo| (lo, probe.rest))
                    } else {
                        None
                    };
                    match pair {
                        Some((lo, rest)) => {
                            self.rest = rest;
                            char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))
                                .unwrap_or('\u{FFFD}')
                        }
                        None => '\u{FFFD}',
                    }
                } else {
                    char::from_u32(hi).unwrap_or('\u{FFFD}')
                }
            }
            _ => '\u{FFFD}',
        };
        Some(decoded)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(escaped: &str) -> JsonStr<'_> {
        JsonStr {
            escaped: escaped.as_bytes(),
        }
    }

    #[test]
    fn eq_str_decodes_every_escape() {
        let equal = [
            (r#"caf\u00e9"#, "café"),
            (r#"caf\u00E9"#, "café"),
            (r#"\"\\\/\b\f\n\r\t"#, "\"\\/\u{8}\u{c}\n\r\t"),
            (r#"\ud834\udd1e clef"#, "𝄞 clef"),
            (r#"\u0000"#, "\0"),
            ("plain ✓", "plain ✓"),
            (r#"✓\u2713"#, "✓✓"),
            ("", ""),
        ];
        for (escaped, plain) in equal {
            assert!(text(escaped).eq_str(plain), "{escaped} == {plain}");
            // The same decoding as `chars`.
            assert!(text(escaped).chars().eq(plain.chars()), "{escaped}");
        }
        let different = [
            (r#"caf\u00e9"#, "cafe"),
            (r#"caf\u00e9"#, "café!"),
            (r#"caf\u00e9!"#, "café"),
            (r#"\n"#, "n"),
            (r#"a\u0062"#, "a"),
            // A lone surrogate has no UTF-8 form: it equals nothing, U+FFFD included.
            (r#"\ud800"#, "\u{fffd}"),
            (r#"\udd1e\ud834"#, "\u{fffd}\u{fffd}"),
        ];
        for (escaped, plain) in different {
            assert!(!text(escaped).eq_str(plain), "{escaped} != {plain}");
        }
    }

    /// The general reading that `int_array` and `int_members` shortcut: element or member
    /// spans, each an integer in JSON's integer syntax that `str::parse` takes as `i64`.
    fn int_of(v: RawJson<'_>) -> Option<i64> {
        let s = v.as_str();
        if s.contains(['.', 'e', 'E']) || !s.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    }

    #[test]
    fn int_array_agrees_with_the_elements() {
        let cases = [
            "[42,23]",
            "[ 42 , 23 ]",
            "[\n42\t,\r-23 ]",
            "[-0,0]",
            "[9223372036854775807,-9223372036854775808]",
            "[999999999999999999,-999999999999999999]",
            "[1000000000000000000,-1000000000000000000]",
            "[9999999999999999999,1]",
            "[-9999999999999999999,1]",
            "[18446744073709551616,1]",
            "[9223372036854775808,1]",
            "[-9223372036854775809,1]",
            "[99999999999999999999,1]",
            "[4.2,23]",
            "[42,2e3]",
            "[42,23E1]",
            "[42,-2.5e-3]",
            "[42]",
            "[42,23,1]",
            "[]",
            "[\"4\",2]",
            "[[4],2]",
            "[null,2]",
            "[true,false]",
            "{\"a\":1}",
            "42",
            "\"x\"",
        ];
        for case in cases {
            let v = RawJson::parse(case, 8).unwrap();
            let general: Option<std::vec::Vec<i64>> = v.elements().map(int_of).collect();
            let general2 = general
                .clone()
                .filter(|g| g.len() == 2 && v.is_array())
                .map(|g| [g[0], g[1]]);
            assert_eq!(v.int_array::<2>(), general2, "{case}");
            let general1 = general
                .filter(|g| g.len() == 1 && v.is_array())
                .map(|g| [g[0]]);
            assert_eq!(v.int_array::<1>(), general1, "{case}");
        }
    }

    #[test]
    fn int_members_takes_exactly_the_named_integers() {
        let names = [&b"minuend"[..], b"subtrahend"];
        let cases: [(&str, Option<[i64; 2]>); 14] = [
            (r#"{"minuend":42,"subtrahend":23}"#, Some([42, 23])),
            (r#"{"subtrahend":23,"minuend":42}"#, Some([42, 23])),
            (
                "{ \"subtrahend\" : -23 ,\n\"minuend\": 9223372036854775807 }",
                Some([i64::MAX, -23]),
            ),
            (r#"{"minuend":42}"#, None),
            (r#"{"minuend":42,"minuend":23}"#, None),
            (r#"{"minuend":42,"subtrahend":23,"x":1}"#, None),
            (r#"{"minuend":42,"other":23}"#, None),
            (r#"{"minuend":4.2,"subtrahend":23}"#, None),
            (r#"{"minuend":42,"subtrahend":"23"}"#, None),
            (r#"{"minuend":42,"subtrahend":9223372036854775808}"#, None),
            (r#"{"min\u0075end":42,"subtrahend":23}"#, None),
            (r#"{"minuend ":42,"subtrahend":23}"#, None),
            (r#"{}"#, None),
            (r#"[42,23]"#, None),
        ];
        for (case, want) in cases {
            let v = RawJson::parse(case, 8).unwrap();
            assert_eq!(v.int_members(names), want, "{case}");
            if let Some([m, s]) = want {
                // What the members walk gives for the same text.
                for (k, value) in v.members() {
                    let expect = if k.eq_str("minuend") { m } else { s };
                    assert_eq!(int_of(value), Some(expect), "{case}");
                }
            }
        }
    }

    #[test]
    fn int_members_never_takes_a_name_with_a_backslash_or_a_quote() {
        // Keys are compared as written; a key can hold neither byte unescaped, so such a name
        // matches nothing (the key `a\\` is not the name `a\\` written raw, nor `a\`).
        let v = RawJson::parse(r#"{"a\\":1,"b":2}"#, 8).unwrap();
        assert_eq!(v.int_members([&b"a\\\\"[..], b"b"]), None);
        assert_eq!(v.int_members([&b"a\\"[..], b"b"]), None);
        let v = RawJson::parse(r#"{"a\"":1,"b":2}"#, 8).unwrap();
        assert_eq!(v.int_members([&b"a\\\""[..], b"b"]), None);
        assert_eq!(v.int_members([&b"a\""[..], b"b"]), None);
        // Names of every length up to past two words, and one a prefix of another.
        for len in 0..20 {
            let name = "k".repeat(len);
            let text = std::format!(r#"{{"{name}":5,"{name}k":6}}"#);
            let v = RawJson::parse(&text, 8).unwrap();
            let longer = std::format!("{name}k");
            assert_eq!(
                v.int_members([name.as_bytes(), longer.as_bytes()]),
                Some([5, 6]),
                "{text}"
            );
            assert_eq!(
                v.int_members([longer.as_bytes(), name.as_bytes()]),
                Some([6, 5])
            );
        }
    }
}
