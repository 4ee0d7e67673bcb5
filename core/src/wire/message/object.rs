//! Reading one message object: the canonical reader, for the shape nearly every peer writes,
//! and the general walk over its members, which reads any object and reports every error.

use super::views::{
    Element, ErrorObject, Invalid, InvalidReason, Message, Notification, Request, Response,
};
use crate::code::ErrorCode;
use crate::wire::id::Id;
use crate::wire::json::{JsonStr, RawJson};
use crate::wire::scan::{self, ScanError, ScanErrorKind};

/// The members of a message the specification defines, in the order of [`Members`] slots.
const MESSAGE_MEMBERS: [&str; 6] = ["jsonrpc", "method", "params", "id", "result", "error"];
const JSONRPC: usize = 0;
const METHOD: usize = 1;
const PARAMS: usize = 2;
const ID: usize = 3;
const RESULT: usize = 4;
const ERROR: usize = 5;

/// `:"2.0"`: the version member's colon and value as written without spaces.
const VERSION_VALUE: &[u8] = b":\"2.0\"";

/// The members of an error object, in slot order.
const ERROR_MEMBERS: [&str; 3] = ["code", "message", "data"];

/// Value spans of the listed members of one object, by position in the list.
type Members<'a, const N: usize> = [Option<&'a [u8]>; N];

/// Walks the object at `start` (which holds `{`). With `validate`, every value is validated
/// (the only pass over the bytes); without it the text must already be known valid.
/// Returns the element and the offset just past `}`.
pub(super) fn parse_object(
    text: &[u8],
    start: usize,
    max_depth: usize,
    validate: bool,
) -> Result<(Element<'_>, usize), ScanError> {
    if scan::WORD_AT_A_TIME && max_depth >= 2 {
        if let Some(found) = canonical(text, start, max_depth) {
            return Ok(found);
        }
    }
    walk_message(text, start, max_depth, validate)
}

/// [`parse_object`] by the general walk, for any object.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn walk_message(
    text: &[u8],
    start: usize,
    max_depth: usize,
    validate: bool,
) -> Result<(Element<'_>, usize), ScanError> {
    let mut members: Members<'_, 6> = [None; 6];
    let (end, duplicate) = walk_object(
        text,
        start,
        max_depth,
        validate,
        true,
        message_member,
        &mut members,
    )?;
    Ok((classify(&members, duplicate), end))
}

/// [`walk_message`] as a call, for [`parse_single`](super::parse::parse_single) on hosts
/// (which reads canonical objects itself). Kept beside the walk it calls, in one compilation
/// unit with the walk's helpers: defined in the parser's module instead, it read a frame that
/// is not JSON in 14 more instructions (callgrind, workload W6).
#[inline(never)]
pub(super) fn walk_message_outlined(
    text: &[u8],
    start: usize,
    max_depth: usize,
) -> Result<(Element<'_>, usize), ScanError> {
    walk_message(text, start, max_depth, true)
}

/// The request or notification at `start` (which holds `{`) when it is written as nearly
/// every peer writes one: compact, its members in the specification's order,
/// `{"jsonrpc":"2.0","method":M[,"params":P][,"id":I]}`, with a string `M`, an array or
/// object `P` and an id `I` that is a string, a number or `null`; else `None`, and the caller
/// walks the object its general way, which makes the same element of every object this
/// accepts (and reports every error: this one gives up at the first byte it does not expect).
///
/// The member names and the punctuation around them are compared as whole literals, a few
/// word compares each; the values are validated by the same scanners as in the general walk.
/// No key can appear twice in this shape, so there is nothing to record or check per member.
/// Hosts only ([`scan::WORD_AT_A_TIME`]): firmware keeps the one walk (flash).
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub(super) fn canonical(
    text: &[u8],
    start: usize,
    max_depth: usize,
) -> Option<(Element<'_>, usize)> {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"method\":";
    const PARAMS: &[u8] = b",\"params\":";
    const ID: &[u8] = b",\"id\":";
    let lit = |pos: usize, lit: &[u8]| text.get(pos..pos + lit.len()) == Some(lit);
    if !lit(start, HEAD) {
        return None;
    }
    let method_at = start + HEAD.len();
    let method_end = string_end(text, method_at)?;
    let mut pos = method_end;
    let mut params = None;
    if lit(pos, PARAMS) {
        let at = pos + PARAMS.len();
        let end = match text.get(at)? {
            b'[' => int_list_end(text, at, false),
            b'{' => int_list_end(text, at, true),
            _ => return None,
        };
        let end = match end {
            Some(end) => end,
            None => match scan::flat_container(text, at) {
                Some(end) => end,
                None => {
                    scan::scan_value(text, at, max_depth.saturating_sub(1))
                        .ok()?
                        .1
                }
            },
        };
        params = RawJson::from_validated(text.get(at..end)?);
        pos = end;
    }
    let mut id = None;
    if lit(pos, ID) {
        let at = pos + ID.len();
        let end = id_end(text, at)?;
        id = Some(as_id(text.get(at..end)?)?);
        pos = end;
    }
    if text.get(pos) != Some(&b'}') {
        return None;
    }
    let method = as_string(text.get(method_at..method_end)?)?;
    let message = match id {
        Some(id) => Message::Request(Request { id, method, params }),
        None => Message::Notification(Notification { method, params }),
    };
    Some((Ok(message), pos + 1))
}

/// `pos` holds `[` (or `{`, with `object`): the end of the array when it holds only integers
/// written plainly (`0`, or a digit `1`-`9` and more digits, either after an optional `-`), one
/// or more, with nothing between them but single commas (the object: the same, each integer
/// after a short plain key and a colon, `"k":42`, the key as [`scan::short_string`] takes it);
/// else `None` (the caller scans it the general way, which accepts every container this
/// accepts, with the same end). Positional params such as `[42,23]` and named ones such as
/// `{"subtrahend":23,"minuend":42}`: a few instructions a byte, where the flat scan validates
/// each number in full.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn int_list_end(text: &[u8], pos: usize, object: bool) -> Option<usize> {
    let close = if object { b'}' } else { b']' };
    let mut i = pos + 1;
    loop {
        if object {
            if text.get(i) != Some(&b'"') {
                return None;
            }
            i = scan::short_string(text, i)?;
            if text.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
        }
        if text.get(i) == Some(&b'-') {
            i += 1;
        }
        match text.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                i += 1;
                while let Some(b'0'..=b'9') = text.get(i) {
                    i += 1;
                }
            }
            _ => return None,
        }
        match text.get(i)? {
            b',' => i += 1,
            &c if c == close => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The end of the string at `pos`, if one is there and valid.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn string_end(text: &[u8], pos: usize) -> Option<usize> {
    if text.get(pos) != Some(&b'"') {
        return None;
    }
    match scan::short_string(text, pos) {
        Some(end) => Some(end),
        None => scan::scan_string(text, pos).ok(),
    }
}

/// The end of the id value at `pos` (a string, a number or `null`), if one is there and
/// valid; as [`scan_member_value`] reads these.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn id_end(text: &[u8], pos: usize) -> Option<usize> {
    match text.get(pos)? {
        b'"' => string_end(text, pos),
        b'1'..=b'9' => {
            let mut end = pos + 1;
            while let Some(b'0'..=b'9') = text.get(end) {
                end += 1;
            }
            match text.get(end) {
                Some(b'.' | b'e' | b'E') => scan::scan_number(text, pos).ok(),
                _ => Some(end),
            }
        }
        b'-' | b'0' => scan::scan_number(text, pos).ok(),
        b'n' if text.get(pos..pos + 4) == Some(b"null") => Some(pos + 4),
        _ => None,
    }
}

/// Finds the members of the object at `start` that `member` knows: `member(key)` is the slot
/// in `slots` that gets the value; other members are skipped. Returns the offset past the
/// closing brace and whether a known member appears twice. Keys are passed as written (still
/// escaped); a key written with escapes (`"m\u0065thod"`) still counts as the member it names.
/// With `message_keys`, `member` is [`message_member`] and its plain names are recognized
/// without a scan ([`scan::message_key`]).
///
/// One function for messages and error objects, not a generic one per caller: it is the
/// largest piece of the parser, and firmware flash counts. On 64-bit hosts it is inlined into
/// both callers, where `member` becomes a direct call.
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn walk_object<'a>(
    text: &'a [u8],
    start: usize,
    max_depth: usize,
    validate: bool,
    message_keys: bool,
    member: fn(&[u8]) -> Option<usize>,
    slots: &mut [Option<&'a [u8]>],
) -> Result<(usize, bool), ScanError> {
    let err = |kind, offset| ScanError { kind, offset };
    if max_depth == 0 {
        return Err(err(ScanErrorKind::TooDeep, start));
    }
    let mut duplicate = false;
    let mut pos = scan::skip_ws(text, start + 1);
    if text.get(pos) == Some(&b'}') {
        return Ok((pos + 1, duplicate));
    }
    loop {
        if text.get(pos) != Some(&b'"') {
            let kind = if pos >= text.len() {
                ScanErrorKind::UnexpectedEnd
            } else {
                ScanErrorKind::UnexpectedByte
            };
            return Err(err(kind, pos));
        }
        // A message's own member names, written plainly, are known from one word.
        let known = if message_keys {
            scan::message_key(text, pos)
        } else {
            None
        };
        let (index, key_end) = match known {
            Some(found) => (Some(found.0), found.1),
            None => {
                let key_end = match scan::short_string(text, pos) {
                    Some(end) => end,
                    None => scan::scan_string(text, pos)?,
                };
                (
                    member(text.get(pos + 1..key_end - 1).unwrap_or(&[])),
                    key_end,
                )
            }
        };
        let (vstart, vend) = if scan::WORD_AT_A_TIME
            && index == Some(JSONRPC)
            && text.get(key_end..key_end + VERSION_VALUE.len()) == Some(VERSION_VALUE)
        {
            // `:"2.0"` right after the name, as nearly every peer writes it.
            (key_end + 1, key_end + VERSION_VALUE.len())
        } else {
            // The colon right after the name, as most peers write it, needs no skip (hosts;
            // firmware keeps the one path, for flash).
            pos = match text.get(key_end) {
                Some(b':') if scan::WORD_AT_A_TIME => key_end + 1,
                _ => {
                    pos = scan::skip_ws(text, key_end);
                    match text.get(pos) {
                        Some(b':') => pos + 1,
                        Some(_) => return Err(err(ScanErrorKind::UnexpectedByte, pos)),
                        None => return Err(err(ScanErrorKind::UnexpectedEnd, pos)),
                    }
                }
            };
            if validate {
                scan_member_value(text, pos, max_depth - 1)?
            } else {
                scan::skip_value_trusted(text, pos)
            }
        };
        if let Some(slot) = index.and_then(|i| slots.get_mut(i)) {
            duplicate |= slot.is_some();
            *slot = text.get(vstart..vend);
        }
        // Likewise the comma or the closing brace right after the value.
        pos = match text.get(vend) {
            Some(b',' | b'}') if scan::WORD_AT_A_TIME => vend,
            _ => scan::skip_ws(text, vend),
        };
        match text.get(pos) {
            Some(b',') => pos = scan::skip_ws(text, pos + 1),
            Some(b'}') => return Ok((pos + 1, duplicate)),
            Some(_) => return Err(err(ScanErrorKind::UnexpectedByte, pos)),
            None => return Err(err(ScanErrorKind::UnexpectedEnd, pos)),
        }
        if !validate && pos >= text.len() {
            return Err(err(ScanErrorKind::UnexpectedEnd, pos));
        }
    }
}

/// The slot of a message member (the position of its name in [`MESSAGE_MEMBERS`]).
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn message_member(key: &[u8]) -> Option<usize> {
    if scan::WORD_AT_A_TIME {
        // Hosts: a `match` compiles to a few word compares per key, several times faster than
        // the table walk, which is smaller (by some 300 bytes of firmware flash).
        let plain = match key {
            b"jsonrpc" => Some(JSONRPC),
            b"method" => Some(METHOD),
            b"params" => Some(PARAMS),
            b"id" => Some(ID),
            b"result" => Some(RESULT),
            b"error" => Some(ERROR),
            _ => None,
        };
        if plain.is_some() {
            return plain;
        }
    }
    member_index(key, &MESSAGE_MEMBERS)
}

/// The slot of an error object member (the position of its name in [`ERROR_MEMBERS`]).
fn error_member(key: &[u8]) -> Option<usize> {
    member_index(key, &ERROR_MEMBERS)
}

/// The position in `names` of the member a key (still escaped) names, if any.
fn member_index(key: &[u8], names: &[&str]) -> Option<usize> {
    let text = JsonStr::from_validated(key)?;
    names.iter().position(|name| text.eq_str(name))
}

/// Validates a member value. Strings and numbers (most members) go straight to their scanner;
/// only containers and literals need the general one. Inlined on hosts into each walk of
/// messages (single ones and batch elements), where a call per member showed.
#[cfg_attr(target_pointer_width = "64", inline(always))]
#[cfg_attr(not(target_pointer_width = "64"), inline)]
fn scan_member_value(
    text: &[u8],
    pos: usize,
    max_depth: usize,
) -> Result<(usize, usize), ScanError> {
    let start = match text.get(pos) {
        Some(b'"' | b'0'..=b'9' | b'[' | b'{') if scan::WORD_AT_A_TIME => pos,
        _ => scan::skip_ws(text, pos),
    };
    match text.get(start) {
        Some(b'"') => match scan::short_string(text, start) {
            Some(end) => Ok((start, end)),
            None => Ok((start, scan::scan_string(text, start)?)),
        },
        // A plain positive integer (ids, counts), as hosts read it inline: the digits, and
        // `number`'s own verdict when a fraction or exponent follows. The same result as
        // `scan_number`, without its call and checks.
        Some(b'1'..=b'9') if scan::WORD_AT_A_TIME => {
            let mut end = start + 1;
            while let Some(b'0'..=b'9') = text.get(end) {
                end += 1;
            }
            match text.get(end) {
                Some(b'.' | b'e' | b'E') => Ok((start, scan::scan_number(text, start)?)),
                _ => Ok((start, end)),
            }
        }
        Some(b'-' | b'0'..=b'9') => Ok((start, scan::scan_number(text, start)?)),
        // The guard is a constant where the flat path is left out (32-bit targets): no code.
        Some(b'[' | b'{') if scan::WORD_AT_A_TIME && max_depth > 0 => {
            match scan::flat_container(text, start) {
                Some(end) => Ok((start, end)),
                None => scan::scan_value(text, start, max_depth),
            }
        }
        _ => scan::scan_value(text, start, max_depth),
    }
}

#[cfg_attr(target_pointer_width = "64", inline(always))]
fn as_id(value: &[u8]) -> Option<Id<'_>> {
    Id::from_validated(value)
}

#[cfg_attr(target_pointer_width = "64", inline(always))]
fn as_string(value: &[u8]) -> Option<JsonStr<'_>> {
    let inner = value.strip_prefix(b"\"")?.strip_suffix(b"\"")?;
    JsonStr::from_validated(inner)
}

fn is_version(value: &[u8]) -> bool {
    value == b"\"2.0\"" || as_string(value).is_some_and(|s| s.eq_str("2.0"))
}

// Inlined on hosts: a call per message showed (and the walks that use it are inlined too).
#[cfg_attr(target_pointer_width = "64", inline(always))]
fn classify<'a>(m: &Members<'a, 6>, duplicate: bool) -> Element<'a> {
    let is_response = m[METHOD].is_none() && (m[RESULT].is_some() || m[ERROR].is_some());
    // The id member if there is one; `None` when it is there but not a string, number or null.
    let id = match m[ID] {
        Some(raw) => as_id(raw).map(Some),
        None => Some(None),
    };
    let (id, reason) = match id {
        None => (None, InvalidReason::IdWrongType),
        Some(id) => match message(m, duplicate, id, is_response) {
            Ok(message) => return Ok(message),
            Err(reason) => (id, reason),
        },
    };
    Err(Invalid {
        id,
        reason,
        is_response,
    })
}

/// The message the members make, or why they make none (`id` is the id member, if valid).
fn message<'a>(
    m: &Members<'a, 6>,
    duplicate: bool,
    id: Option<Id<'a>>,
    is_response: bool,
) -> Result<Message<'a>, InvalidReason> {
    if duplicate {
        return Err(InvalidReason::DuplicateMember);
    }
    match m[JSONRPC] {
        None => return Err(InvalidReason::MissingVersion),
        Some(v) if !is_version(v) => return Err(InvalidReason::WrongVersion),
        Some(_) => {}
    }
    if let Some(method) = m[METHOD] {
        if m[RESULT].is_some() || m[ERROR].is_some() {
            return Err(InvalidReason::RequestWithResult);
        }
        let method = as_string(method).ok_or(InvalidReason::MethodNotString)?;
        let params = match m[PARAMS] {
            None => None,
            Some(p) if matches!(p.first(), Some(b'[' | b'{')) => RawJson::from_validated(p),
            Some(_) => return Err(InvalidReason::ParamsNotStructured),
        };
        return Ok(match id {
            Some(id) => Message::Request(Request { id, method, params }),
            None => Message::Notification(Notification { method, params }),
        });
    }
    if !is_response {
        return Err(InvalidReason::NotRequestOrResponse);
    }
    let id = id.ok_or(InvalidReason::MissingId)?;
    let outcome = match (m[RESULT], m[ERROR]) {
        (Some(result), None) => {
            Ok(RawJson::from_validated(result).ok_or(InvalidReason::MalformedError)?)
        }
        (None, Some(error)) => Err(parse_error_object(error).ok_or(InvalidReason::MalformedError)?),
        _ => return Err(InvalidReason::ResultAndError),
    };
    Ok(Message::Response(Response { id, outcome }))
}

fn parse_error_object(value: &[u8]) -> Option<ErrorObject<'_>> {
    if value.first() != Some(&b'{') {
        return None;
    }
    let mut members: Members<'_, 3> = [None; 3];
    let limit = scan::MAX_DEPTH_LIMIT;
    let (_, duplicate) =
        walk_object(value, 0, limit, false, false, error_member, &mut members).ok()?;
    let [code, message, data] = members;
    if duplicate {
        return None;
    }
    let code = parse_i32(code?)?;
    let message = as_string(message?)?;
    let data = match data {
        Some(d) => Some(RawJson::from_validated(d)?),
        None => None,
    };
    Some(ErrorObject {
        code: ErrorCode(code),
        message,
        data,
    })
}

/// Parses a JSON integer that fits an `i32` (no fraction or exponent).
fn parse_i32(raw: &[u8]) -> Option<i32> {
    let (neg, digits) = match raw.strip_prefix(b"-") {
        Some(d) => (true, d),
        None => (false, raw),
    };
    let v = i64::try_from(crate::bytes::parse_u64(digits)?).ok()?;
    i32::try_from(if neg { -v } else { v }).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::message::parse::{parse, Parsed};
    use crate::wire::message::views::ParseLimits;

    /// The objects the canonical reader is about: requests and notifications as peers write
    /// them, and shapes a byte away from one.
    const CANONICAL: &[&str] = &[
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"subtract","params":{"subtrahend":23,"minuend":42},"id":3}"#,
        r#"{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}"#,
        r#"{"jsonrpc":"2.0","method":"get_data","id":"9"}"#,
        r#"{"jsonrpc":"2.0","method":"notify_hello","params":[7]}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":null}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":-0.5e3}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":12.5}"#,
        r#"{"jsonrpc":"2.0","method":"a long method name past sixteen bytes","id":"an id of more than sixteen bytes"}"#,
        r#"{"jsonrpc":"2.0","method":"\u00e9\n","params":[["nested",{"a":[1]}]],"id":"\"q\""}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[ 1 , 2 ],"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[0,-0,-12,9007199254740993,-1],"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[1.5,2e3,-0.0],"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[1,"a",2],"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{},"id":[]}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":"no","id":1}"#,
        r#"{"jsonrpc":"2.0","method":1,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1,"id":2}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[],"params":{},"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"x","result":1,"id":1}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":01}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":nul}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":true}"#,
        r#"{"jsonrpc":"2.0","method":"x"}"#,
        r#"{"jsonrpc":"2.0","method":"x","id":1 }"#,
        r#"{"jsonrpc":"2.0","method":"x","params":[1,2],"id":1,"extra":0}"#,
        r#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{"a":0,"b":-0,"c":-12,"a":9007199254740993},"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{"k":1.5,"n":"s","l":[1]},"id":7}"#,
        r#"{"jsonrpc":"2.0","method":"x","params":{"a key past fifteen bytes":1,"é":2},"id":7}"#,
    ];

    /// Every byte of `text` replaced by each of these, and every truncation: the mutants.
    const MUTATIONS: &[u8] = b" \n\"\\{}[],:0159-.eEnx\x00\x7f\xc3\xff";

    /// The canonical reader makes what the general walk makes, and the parser's verdict
    /// (element, end or error) is the general walk's, on canonical objects, their mutants
    /// and truncations, and at every depth limit.
    #[test]
    fn canonical_objects_read_as_the_general_walk_reads_them() {
        let mut taken = 0;
        let mut check = |text: &[u8]| {
            for depth in [0, 1, 2, 3, 64] {
                let general = walk_message(text, 0, depth, true);
                assert_eq!(
                    parse_object(text, 0, depth, true),
                    general,
                    "{:?} at depth {depth}",
                    std::string::String::from_utf8_lossy(text)
                );
                // As `parse_object` asks it: with room for the object and its params.
                if let Some(found) = (depth >= 2).then(|| canonical(text, 0, depth)).flatten() {
                    taken += 1;
                    assert_eq!(
                        Ok(found),
                        general,
                        "{:?}",
                        std::string::String::from_utf8_lossy(text)
                    );
                }
            }
        };
        for text in CANONICAL {
            let text = text.as_bytes();
            check(text);
            let mut mutant = text.to_vec();
            for i in 0..text.len() {
                check(&text[..i]);
                for &m in MUTATIONS {
                    mutant[i] = m;
                    check(&mutant);
                }
                mutant[i] = text[i];
            }
        }
        // The shapes it is for are read by it on hosts (it is left out elsewhere).
        assert_eq!(taken > 0, scan::WORD_AT_A_TIME);
        if scan::WORD_AT_A_TIME {
            for text in &CANONICAL[..10] {
                assert!(canonical(text.as_bytes(), 0, 64).is_some(), "{text}");
            }
        }
    }

    fn single(text: &str) -> Element<'_> {
        match parse(text.as_bytes(), ParseLimits::default()) {
            Ok(Parsed::Single(element)) => element,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn member_numbers_read_inline_get_the_scanners_verdict() {
        // Hosts read a plain positive integer member without `scan_number`: every number
        // shape around that path must come out as the scanner says (id text, or the error).
        for n in [
            "1",
            "7",
            "10",
            "123456789012345678901234567890",
            "1.5",
            "1e3",
            "1E+2",
            "12e-3",
            "0",
            "-1",
            "1.",
            "1e",
            "1e+",
            "1.e3",
            "01",
            "1x",
            "1 ",
            "1\t",
        ] {
            let text = std::format!("{{\"jsonrpc\":\"2.0\",\"method\":\"m\",\"id\":{n}}}");
            let at = text.len() - 1 - n.len();
            let scanned = scan::scan_number(text.as_bytes(), at).and_then(|end| {
                let rest = scan::skip_ws(text.as_bytes(), end);
                if text.as_bytes().get(rest) == Some(&b'}') {
                    Ok(end)
                } else {
                    Err(ScanError {
                        kind: ScanErrorKind::UnexpectedByte,
                        offset: rest,
                    })
                }
            });
            match (parse(text.as_bytes(), ParseLimits::default()), scanned) {
                (Ok(Parsed::Single(Ok(Message::Request(req)))), Ok(end)) => {
                    assert_eq!(req.id.raw_bytes(), &text.as_bytes()[at..end], "{n}");
                }
                (Err(e), Err(want)) => assert_eq!(e, want, "{n}"),
                (got, want) => panic!("{n}: {got:?} against {want:?}"),
            }
        }
    }

    #[test]
    fn member_names_written_with_escapes_count_as_the_member() {
        let Ok(Message::Request(req)) =
            single(r#"{"j\u0073onrpc":"2.0","m\u0065thod":"a","\u0070arams":[1],"\u0069d":7}"#)
        else {
            panic!("not a request")
        };
        assert!(req.method.eq_str("a"));
        assert_eq!(
            (req.id.raw(), req.params.map(|p| p.as_str())),
            ("7", Some("[1]"))
        );

        let Ok(Message::Response(resp)) = single(
            r#"{"jsonrpc":"2.0","\u0065rror":{"c\u006fde":-1,"m\u0065ssage":"x","d\u0061ta":2},"id":1}"#,
        ) else {
            panic!("not a response")
        };
        let error = resp.outcome.unwrap_err();
        assert_eq!(error.code, ErrorCode(-1));
        assert!(error.message.eq_str("x"));
        assert_eq!(error.data.map(|d| d.as_str()), Some("2"));
    }

    /// Member names: ours, others, near misses, and ours written with escapes.
    const KEYS: &[&[u8]] = &[
        b"jsonrpc",
        b"method",
        b"params",
        b"id",
        b"result",
        b"error",
        b"code",
        b"message",
        b"data",
        b"",
        b"j",
        b"jsonrpX",
        b"Method",
        b"ids",
        b"i",
        br"\u0069d",
        br"m\u0065thod",
        br"\u0063ode",
        br"metho\u0064x",
        br"\ud800",
        b"jsonrpcx",
        b"jsonrp",
        b"methods",
        b"idx",
        b"errors",
        b"resul",
        b"param",
        b"Id",
    ];

    /// The table walk (what 32-bit targets use for every key) and the `match` (hosts) agree.
    #[test]
    fn member_lookups_agree() {
        for key in KEYS {
            let table = member_index(key, &MESSAGE_MEMBERS);
            assert_eq!(message_member(key), table, "{key:?}");
            let text = JsonStr::from_validated(key).unwrap();
            let expected = MESSAGE_MEMBERS.iter().position(|name| text.eq_str(name));
            assert_eq!(table, expected, "{key:?}");
            let expected = ERROR_MEMBERS.iter().position(|name| text.eq_str(name));
            assert_eq!(error_member(key), expected, "{key:?}");
        }
    }

    /// The one-word recognition of plain member names finds exactly the names the lookup
    /// finds, with the key's end, and leaves every other key to it (whatever follows).
    #[test]
    fn plain_member_names_are_known_from_one_word() {
        for key in KEYS {
            for tail in [&b":1}"[..], b"", b":", b"  :  \"2.0\"", b"\":"] {
                let mut text = [0u8; 64];
                let len = key.len() + 2 + tail.len();
                text[0] = b'"';
                text[1..=key.len()].copy_from_slice(key);
                text[key.len() + 1] = b'"';
                text[key.len() + 2..len].copy_from_slice(tail);
                let text = &text[..len];
                match scan::message_key(text, 0) {
                    Some((index, end)) => {
                        assert_eq!(end, key.len() + 2, "{key:?}");
                        assert_eq!(Some(index), message_member(key), "{key:?}");
                        assert!(!key.contains(&b'\\'));
                    }
                    // Only a key too near the end of the text for a word is left out.
                    None if len >= 8 && !key.contains(&b'\\') => {
                        assert_eq!(message_member(key), None, "{key:?} {tail:?}");
                    }
                    None => {}
                }
            }
        }
        // The version written without spaces, and with them, and as another string.
        for text in [
            r#"{"jsonrpc":"2.0","method":"a"}"#,
            r#"{"jsonrpc" : "2.0" ,"method":"a"}"#,
            r#"{"jsonrpc":"2\u002e0","method":"a"}"#,
        ] {
            assert!(
                matches!(single(text), Ok(Message::Notification(_))),
                "{text}"
            );
        }
        for text in [
            r#"{"jsonrpc":"2.00","method":"a"}"#,
            r#"{"jsonrpc":"2.0"x,"method":"a"}"#,
        ] {
            assert!(
                !matches!(single_or_error(text), Ok(Parsed::Single(Ok(_)))),
                "{text}"
            );
        }
    }

    fn single_or_error(text: &str) -> Result<Parsed<'_>, ScanError> {
        parse(text.as_bytes(), ParseLimits::default())
    }

    #[test]
    fn a_member_twice_is_invalid_whatever_its_spelling() {
        let twice = single(r#"{"jsonrpc":"2.0","method":"a","m\u0065thod":"b","id":1}"#);
        assert_eq!(twice.unwrap_err().reason, InvalidReason::DuplicateMember);
        let twice = single(r#"{"jsonrpc":"2.0","error":{"code":1,"code":2,"message":""},"id":1}"#);
        assert_eq!(twice.unwrap_err().reason, InvalidReason::MalformedError);
        // Names that are not ours may repeat, and an escape that spells another name is not ours.
        let fine = single(r#"{"jsonrpc":"2.0","method":"a","x":1,"x":2,"metho\u0064x":3}"#);
        assert!(matches!(fine, Ok(Message::Notification(_))));
    }
}
