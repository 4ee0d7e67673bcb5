//! What the walk that validates a batch learns of each element, kept so that delivering the
//! element later needs no second walk over its text.
//!
//! A batch must be valid JSON as a whole before any element is delivered (a syntax error
//! anywhere is one Parse error for the whole frame), so without a record its elements are
//! walked twice: once to validate, once more when each is delivered. On hosts the validating
//! walk of an object element is the message parser itself, and what it makes of the element
//! (request, notification, response or why it is invalid, with the spans of its id, method
//! and params) is kept here in offsets; delivery rebuilds the views from them.

use super::views::{
    Element, ErrorObject, Invalid, InvalidReason, Message, Notification, Request, Response,
};
use crate::code::ErrorCode;
use crate::wire::id::Id;
use crate::wire::json::{JsonStr, RawJson};

/// The elements a record holds on hosts: batches are short as a rule, and the elements past
/// these are walked again when delivered, as without a record. None on other targets (the
/// validating walk there is the plain scanner, for flash).
pub const MEMO_SLOTS: usize = if crate::wire::scan::WORD_AT_A_TIME {
    16
} else {
    0
};

/// What a slot holds ([`MemoSlot::kind`]).
const NOTHING: u8 = 0;
const REQUEST: u8 = 1;
const NOTIFICATION: u8 = 2;
const RESULT: u8 = 3;
const ERROR: u8 = 4;
const INVALID: u8 = 5;

/// Flag bits of [`MemoSlot`].
const LAST: u8 = 1;
const IS_RESPONSE: u8 = 2;

/// Every [`InvalidReason`], by its discriminant.
#[cfg_attr(not(target_pointer_width = "64"), allow(dead_code))]
const REASONS: [InvalidReason; 12] = [
    InvalidReason::NotAnObject,
    InvalidReason::DuplicateMember,
    InvalidReason::MissingVersion,
    InvalidReason::WrongVersion,
    InvalidReason::MethodNotString,
    InvalidReason::ParamsNotStructured,
    InvalidReason::IdWrongType,
    InvalidReason::RequestWithResult,
    InvalidReason::NotRequestOrResponse,
    InvalidReason::ResultAndError,
    InvalidReason::MissingId,
    InvalidReason::MalformedError,
];

/// One batch element as the validating walk of its batch made it out: where it is delivered
/// from, what follows it, and the element itself in offsets (storage for the record a
/// [`Storage`] keeps of a batch; opaque).
///
/// [`Storage`]: crate::storage::Storage
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoSlot {
    /// The iteration position the element is delivered from (just past `[` or `,`, relative
    /// to the batch text).
    at: u32,
    /// The position of the next element (just past the `,` that follows), if any.
    next: u32,
    /// Length of the element's text.
    len: u32,
    /// The error code of an error response.
    code: i32,
    kind: u8,
    flags: u8,
    /// The reason of an invalid element (its index in [`REASONS`]).
    reason: u8,
    /// Start and end, relative to the batch text, of: the id; the method (or the error's
    /// message), without quotes; the params (or the result, or the error's data). An end of 0
    /// means there is none.
    spans: [[u32; 2]; 3],
}

impl MemoSlot {
    /// A slot that records nothing.
    pub const EMPTY: MemoSlot = MemoSlot {
        at: 0,
        next: 0,
        len: 0,
        code: 0,
        kind: NOTHING,
        flags: 0,
        reason: 0,
        spans: [[0; 2]; 3],
    };

    /// Records `element`, whose text is `len` bytes long and which is delivered from `at`.
    /// Its views are sub-slices of `text`, where the batch text starts at offset `base`.
    #[inline]
    pub(crate) fn record(
        &mut self,
        text: &[u8],
        base: usize,
        at: u32,
        len: usize,
        element: &Element<'_>,
    ) {
        let (mut code, mut reason, mut flags) = (0, 0, 0);
        let (kind, parts) = match element {
            Ok(Message::Request(r)) => (
                REQUEST,
                [
                    Some(r.id.raw_bytes()),
                    Some(r.method.escaped_bytes()),
                    r.params.map(|p| p.as_bytes()),
                ],
            ),
            Ok(Message::Notification(n)) => (
                NOTIFICATION,
                [
                    None,
                    Some(n.method.escaped_bytes()),
                    n.params.map(|p| p.as_bytes()),
                ],
            ),
            Ok(Message::Response(r)) => match &r.outcome {
                Ok(result) => (
                    RESULT,
                    [Some(r.id.raw_bytes()), None, Some(result.as_bytes())],
                ),
                Err(e) => {
                    code = e.code.0;
                    (
                        ERROR,
                        [
                            Some(r.id.raw_bytes()),
                            Some(e.message.escaped_bytes()),
                            e.data.map(|d| d.as_bytes()),
                        ],
                    )
                }
            },
            Err(inv) => {
                reason = inv.reason as u8;
                if inv.is_response {
                    flags = IS_RESPONSE;
                }
                (INVALID, [inv.id.map(|id| id.raw_bytes()), None, None])
            }
        };
        // Every view is a sub-slice of `text` (the parser makes none of anything else); one
        // that were not would leave the element unrecorded, to be walked again.
        let origin = (text.as_ptr() as usize).wrapping_add(base);
        let room = text.len().saturating_sub(base);
        self.kind = NOTHING;
        for (span, part) in self.spans.iter_mut().zip(parts) {
            *span = match part {
                Some(part) => {
                    let s = (part.as_ptr() as usize).wrapping_sub(origin);
                    let e = s.wrapping_add(part.len());
                    if s > e || e > room {
                        return;
                    }
                    [s as u32, e as u32]
                }
                None => [0, 0],
            };
        }
        self.at = at;
        self.next = 0;
        self.len = len as u32;
        self.code = code;
        self.kind = kind;
        self.flags = flags;
        self.reason = reason;
    }

    /// Records an element that is not an object, `len` bytes long, delivered from `at`.
    pub(crate) fn not_object(at: u32, len: usize) -> Self {
        MemoSlot {
            at,
            len: len as u32,
            kind: INVALID,
            reason: InvalidReason::NotAnObject as u8,
            ..MemoSlot::EMPTY
        }
    }

    /// Notes what follows the element: the next one at `next`, or nothing (`None`).
    pub(crate) fn follow(&mut self, next: Option<u32>) {
        match next {
            Some(next) => self.next = next,
            None => self.flags |= LAST,
        }
    }

    /// The element, when this slot recorded the one delivered from `at` in the batch `text`:
    /// with the length of its text and the position of the next element (`None` after the
    /// last). `None` when it recorded another element or nothing (the caller walks the text).
    #[inline]
    #[cfg_attr(not(target_pointer_width = "64"), allow(dead_code))]
    pub(crate) fn element<'a>(
        &self,
        text: &'a [u8],
        at: usize,
    ) -> Option<(Element<'a>, usize, Option<usize>)> {
        if self.kind == NOTHING || self.at as usize != at {
            return None;
        }
        let part = |i: usize| -> Option<Option<&'a [u8]>> {
            match self.spans.get(i)? {
                [_, 0] => Some(None),
                [s, e] => Some(Some(text.get(*s as usize..*e as usize)?)),
            }
        };
        let (id, name, value) = (part(0)?, part(1)?, part(2)?);
        let id = match id {
            Some(raw) => Some(Id::from_validated(raw)?),
            None => None,
        };
        let name = match name {
            Some(raw) => Some(JsonStr::from_validated(raw)?),
            None => None,
        };
        let value = match value {
            Some(raw) => Some(RawJson::from_validated(raw)?),
            None => None,
        };
        let element = match self.kind {
            REQUEST => Ok(Message::Request(Request {
                id: id?,
                method: name?,
                params: value,
            })),
            NOTIFICATION => Ok(Message::Notification(Notification {
                method: name?,
                params: value,
            })),
            RESULT => Ok(Message::Response(Response {
                id: id?,
                outcome: Ok(value?),
            })),
            ERROR => Ok(Message::Response(Response {
                id: id?,
                outcome: Err(ErrorObject {
                    code: ErrorCode(self.code),
                    message: name?,
                    data: value,
                }),
            })),
            _ => Err(Invalid {
                id,
                reason: *REASONS.get(usize::from(self.reason))?,
                is_response: self.flags & IS_RESPONSE != 0,
            }),
        };
        let next = (self.flags & LAST == 0).then_some(self.next as usize);
        Some((element, self.len as usize, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_listed_by_discriminant() {
        for (i, reason) in REASONS.iter().enumerate() {
            assert_eq!(*reason as usize, i);
        }
    }
}
