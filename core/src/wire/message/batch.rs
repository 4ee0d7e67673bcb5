//! A validated batch and its elements, each parsed when iteration reaches it.

use super::object::parse_object;
use super::views::{Element, Invalid, InvalidReason};
use crate::wire::id::MAX_STORED_ID_LEN;
use crate::wire::scan;

/// The length of `null`, the id an automatic reply echoes when it has none.
const NULL_LEN: usize = 4;

/// A validated batch: a lazy iterator over its elements (each parsed when reached).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Batch<'a> {
    /// The whole array's text, validated.
    pub(super) text: &'a [u8],
    /// Measured by [`parse`](crate::wire::parse)'s walk (`None` when the batch was made otherwise).
    pub(super) sizes: Option<BatchSizes>,
}

/// What [`parse`](crate::wire::parse) measures of a batch as it validates it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BatchSizes {
    /// Number of elements.
    pub(crate) elements: usize,
    /// The most room the ids echoed in automatic replies to all elements may take: each
    /// element's text length (an echoed id is part of it) clamped to `null`'s length at least
    /// and [`MAX_STORED_ID_LEN`] at most (longer ids are echoed as `null`).
    pub(crate) id_room: usize,
}

impl BatchSizes {
    /// Counts one more element whose text is `len` bytes long.
    pub(super) fn add(&mut self, len: usize) {
        self.elements += 1;
        self.id_room += len.clamp(NULL_LEN, MAX_STORED_ID_LEN);
    }
}

impl<'a> Batch<'a> {
    /// Wraps the text of a batch that [`parse`](crate::wire::parse) has already validated
    /// (surrounding whitespace is trimmed). Positions from [`BatchIter::position`] are relative to
    /// the trimmed text.
    pub(crate) fn from_validated(frame: &'a [u8]) -> Self {
        let start = scan::skip_ws(frame, 0);
        let mut end = frame.len();
        while end > start && matches!(frame.get(end - 1), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            end -= 1;
        }
        Batch {
            text: frame.get(start..end).unwrap_or(&[]),
            sizes: None,
        }
    }

    /// The number of elements and the room their echoed ids may take: as
    /// [`parse`](crate::wire::parse) measured them, else by a skim over the text.
    pub(crate) fn sizes(&self) -> BatchSizes {
        // Only hosts measure in `parse` (the check is left out of firmware).
        if let (true, Some(sizes)) = (scan::WORD_AT_A_TIME, self.sizes) {
            return sizes;
        }
        let mut sizes = BatchSizes {
            elements: 0,
            id_room: 0,
        };
        let mut skim = self.iter();
        while let Some(len) = skim.skim_next() {
            sizes.add(len);
        }
        sizes
    }

    /// The batch's JSON text.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    /// Iterates over the elements.
    pub fn iter(&self) -> BatchIter<'a> {
        BatchIter {
            text: self.text,
            pos: 1,
            done: false,
            last_len: 0,
        }
    }

    /// Number of elements (a fast skip over the validated text).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True for `[]`, which [`parse`](crate::wire::parse) reports as
    /// [`Parsed::EmptyBatch`](crate::wire::Parsed::EmptyBatch) instead.
    pub fn is_empty(&self) -> bool {
        self.text.get(scan::skip_ws(self.text, 1)) == Some(&b']')
    }
}

/// Iterator over a batch's elements.
#[derive(Debug, Clone)]
pub struct BatchIter<'a> {
    text: &'a [u8],
    pos: usize,
    done: bool,
    /// Length of the text of the element returned last.
    last_len: usize,
}

impl<'a> BatchIter<'a> {
    /// Offset of the next element in the batch text (for resuming iteration).
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Resumes iteration of `batch` at a `position()` returned earlier.
    pub fn resume(batch: Batch<'a>, position: usize) -> Self {
        BatchIter {
            text: batch.text,
            pos: position,
            done: position >= batch.text.len(),
            last_len: 0,
        }
    }

    /// True when no element follows the one returned last.
    pub(crate) fn is_done(&self) -> bool {
        self.done
    }

    /// Length in bytes of the text of the element returned last.
    pub fn last_len(&self) -> usize {
        self.last_len
    }

    /// Skips the next element without parsing it; returns its text length.
    pub(crate) fn skim_next(&mut self) -> Option<usize> {
        if self.done {
            return None;
        }
        let start = scan::skip_ws(self.text, self.pos);
        if matches!(self.text.get(start), None | Some(b']')) {
            self.done = true;
            return None;
        }
        let (_, end) = scan::skip_value_trusted(self.text, start);
        self.advance_past(start, end);
        Some(end.saturating_sub(start))
    }

    fn advance_past(&mut self, start: usize, end: usize) {
        let after = scan::skip_ws(self.text, end);
        match self.text.get(after) {
            Some(b',') if end > start => self.pos = after + 1,
            _ => {
                self.done = true;
                self.pos = self.text.len();
            }
        }
        self.last_len = end.saturating_sub(start);
    }
}

impl<'a> Iterator for BatchIter<'a> {
    type Item = Element<'a>;

    fn next(&mut self) -> Option<Element<'a>> {
        if self.done {
            return None;
        }
        let start = scan::skip_ws(self.text, self.pos);
        match self.text.get(start) {
            None | Some(b']') => {
                self.done = true;
                self.pos = self.text.len();
                return None;
            }
            _ => {}
        }
        let (element, end) = if self.text.get(start) == Some(&b'{') {
            // Already validated: walk the object without validating again.
            match parse_object(self.text, start, scan::MAX_DEPTH_LIMIT, false) {
                Ok(parsed) => parsed,
                Err(_) => {
                    self.done = true;
                    return None;
                }
            }
        } else {
            let (_, end) = scan::skip_value_trusted(self.text, start);
            (
                Err(Invalid {
                    id: None,
                    reason: InvalidReason::NotAnObject,
                    is_response: false,
                }),
                end,
            )
        };
        // Never loops without progress: an element that ends where it starts ends iteration.
        self.advance_past(start, end);
        Some(element)
    }
}
