//! What a message body holds, in the terms an HTTP adapter answers in (a request needs a
//! `200` with its answer, a body of only notifications or responses a `202` with none). The
//! JSON-RPC rules are the parser's ([`parse`]); this only sums its verdict up.
//!
//! ```
//! use rpcwire::wire::classify::{classify, BodyKind};
//!
//! assert_eq!(classify(br#"{"jsonrpc":"2.0","method":"log"}"#, 64), BodyKind::Notifications);
//! assert_eq!(classify(br#"[{"jsonrpc":"2.0","method":"a","id":1}]"#, 64), BodyKind::Calls);
//! assert!(classify(b"[]", 64) == BodyKind::Calls); // answered with Invalid Request
//! ```

use super::scan::{skip_ws, ScanError};
use super::{parse, Invalid, Message, ParseLimits, Parsed};

/// The kind of a JSON text, as far as the HTTP answer depends on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    /// Something needs an answer: a request, a batch with one, or anything invalid (answered
    /// with the specification's error objects).
    Calls,
    /// Only notifications (answered `202 Accepted`, no body).
    Notifications,
    /// Only responses (to requests this side sent on a stream; `202 Accepted`, no body).
    Responses,
    /// Notifications and responses, no request.
    NotificationsAndResponses,
}

impl BodyKind {
    /// True when the body gets no JSON-RPC answer at all.
    pub fn is_silent(self) -> bool {
        self != BodyKind::Calls
    }
}

/// True when `body`'s JSON text is an array: its first byte past JSON whitespace is `[`. One
/// byte looked at, for an adapter that treats batches apart before anything parses the body
/// (a batch is then a batch, or not JSON at all).
///
/// ```
/// use rpcwire::wire::classify::is_batch_text;
/// assert!(is_batch_text(b" \r\n[1]"));
/// assert!(!is_batch_text(br#"{"jsonrpc":"2.0","method":"a"}"#));
/// assert!(!is_batch_text(b""));
/// ```
pub fn is_batch_text(body: &[u8]) -> bool {
    body.get(skip_ws(body, 0)) == Some(&b'[')
}

/// Classifies one body. Parse errors, invalid messages and `[]` are [`BodyKind::Calls`]:
/// the specification answers them. An invalid *response* is never answered (the core reports
/// it), so it counts as a response.
pub fn classify(body: &[u8], max_depth: usize) -> BodyKind {
    classify_batch(body, max_depth).0
}

/// [`classify`], and the number of elements when the body is a batch.
pub fn classify_batch(body: &[u8], max_depth: usize) -> (BodyKind, Option<usize>) {
    classify_parsed(parse(body, ParseLimits { max_depth }))
}

/// [`classify_batch`] of a body already parsed ([`parse`]'s result, a parse error included),
/// for an adapter that looks at the parsed body again and parses it once.
pub fn classify_parsed(parsed: Result<Parsed<'_>, ScanError>) -> (BodyKind, Option<usize>) {
    let Ok(parsed) = parsed else {
        return (BodyKind::Calls, None);
    };
    let len = match parsed {
        Parsed::Batch(batch) => Some(batch.len()),
        _ => None,
    };
    (summarize(parsed), len)
}

fn summarize(parsed: Parsed<'_>) -> BodyKind {
    let mut notes = false;
    let mut responses = false;
    let mut see = |element: &Result<Message<'_>, Invalid<'_>>| match element {
        Ok(Message::Notification(_)) => {
            notes = true;
            true
        }
        Ok(Message::Response(_)) => {
            responses = true;
            true
        }
        Err(invalid) if !invalid.needs_reply() => {
            responses = true;
            true
        }
        _ => false,
    };
    match parsed {
        Parsed::EmptyBatch => return BodyKind::Calls,
        Parsed::Single(element) => {
            if !see(&element) {
                return BodyKind::Calls;
            }
        }
        Parsed::Batch(batch) => {
            for element in batch.iter() {
                if !see(&element) {
                    return BodyKind::Calls;
                }
            }
        }
    }
    match (notes, responses) {
        (true, false) => BodyKind::Notifications,
        (false, true) => BodyKind::Responses,
        _ => BodyKind::NotificationsAndResponses,
    }
}

/// True when a message is a response (or a batch of them), such as a frame this side's
/// connection wrote: the encoder writes `"method"` right after `"jsonrpc"` in requests and
/// notifications, and never in responses, so its frames are told by their first bytes;
/// anything else is asked of the parser.
pub fn is_response(frame: &[u8]) -> bool {
    const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"";
    if let Some(rest) = frame.strip_prefix(HEAD) {
        if rest.starts_with(b"method\"") {
            return false;
        }
        if rest.starts_with(b"result\"") || rest.starts_with(b"error\"") {
            return true;
        }
    }
    match parse(frame, ParseLimits::default()) {
        Ok(Parsed::Single(Ok(Message::Response(_)))) => true,
        Ok(Parsed::Single(Err(invalid))) => !invalid.needs_reply(),
        Ok(Parsed::Batch(batch)) => batch.iter().all(|e| matches!(e, Ok(Message::Response(_)))),
        _ => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let d = 64;
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"a","id":1}"#, d),
            BodyKind::Calls
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","method":"a"}"#, d),
            BodyKind::Notifications
        );
        assert_eq!(
            classify(br#"{"jsonrpc":"2.0","result":1,"id":1}"#, d),
            BodyKind::Responses
        );
        assert_eq!(
            classify(br#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","error":{"code":1,"message":"x"},"id":1}]"#, d),
            BodyKind::NotificationsAndResponses
        );
        assert_eq!(
            classify(br#"[{"jsonrpc":"2.0","method":"a"},1]"#, d),
            BodyKind::Calls
        );
        assert_eq!(classify(b"[]", d), BodyKind::Calls);
        assert_eq!(classify(b"{", d), BodyKind::Calls);
        assert_eq!(
            classify(b"\n {\"jsonrpc\":\"2.0\",\n\"method\":\"a\"}\n", d),
            BodyKind::Notifications
        );
    }

    #[test]
    fn responses_of_the_encoder() {
        assert!(is_response(br#"{"jsonrpc":"2.0","result":19,"id":1}"#));
        assert!(is_response(
            br#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":1}"#
        ));
        assert!(is_response(br#"[{"jsonrpc":"2.0","result":19,"id":1}]"#));
        assert!(!is_response(
            br#"{"jsonrpc":"2.0","method":"progress","params":[1]}"#
        ));
        assert!(is_response(br#"{"id":1,"jsonrpc":"2.0","result":19}"#));
        assert!(!is_response(br#"{"id":1,"jsonrpc":"2.0","method":"x"}"#));
    }
}
