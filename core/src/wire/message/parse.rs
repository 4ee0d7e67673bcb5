//! Parsing one frame: a single object, a batch (validated whole before any element is taken,
//! and on hosts recorded as it is validated, see [`memo`](super::memo)), or `[]`.

use super::batch::{Batch, BatchSizes};
use super::memo::{MemoSlot, MEMO_SLOTS};
use super::object::{canonical, parse_object, walk_message_outlined};
use super::views::{Element, Invalid, InvalidReason, ParseLimits};
use crate::slots::Slots;
use crate::wire::scan::{self, ScanError, ScanErrorKind};

/// A parsed frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parsed<'a> {
    /// A single object.
    Single(Element<'a>),
    /// A non-empty array of elements.
    Batch(Batch<'a>),
    /// `[]`: answered with a single Invalid Request (not an array).
    EmptyBatch,
}

/// Parses one framed JSON text (surrounding whitespace allowed).
///
/// `Err` is a parse error (invalid JSON, answered with -32700 and id null). Everything else,
/// including invalid messages, is `Ok`.
///
/// ```
/// use rpcwire::wire::{parse, Message, ParseLimits, Parsed};
/// let frame = br#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#;
/// let Parsed::Single(Ok(Message::Request(req))) = parse(frame, ParseLimits::default()).unwrap()
/// else { panic!() };
/// assert!(req.method.eq_str("subtract"));
/// let (a, b): (i64, i64) = req.params.unwrap().decode().unwrap();
/// assert_eq!((a - b, req.id.raw()), (19, "1"));
///
/// let batch = br#"[{"jsonrpc":"2.0","method":"notify_hello","params":[7]}, 1]"#;
/// let Parsed::Batch(b) = parse(batch, ParseLimits::default()).unwrap() else { panic!() };
/// assert_eq!(b.len(), 2);
/// assert!(b.iter().nth(1).unwrap().is_err());
/// ```
pub fn parse(frame: &[u8], limits: ParseLimits) -> Result<Parsed<'_>, ScanError> {
    let mut none: [MemoSlot; 0] = [];
    parse_recording(frame, limits, &mut none).map(|(parsed, _)| parsed)
}

/// [`parse`], and a batch's first elements recorded in `memo` as its validating walk sees them
/// (hosts only; see [`memo`](super::memo)): with how many were recorded and where the batch
/// text starts in `frame` (positions in the record are relative to it).
pub(crate) fn parse_recording<'a, M: Slots<MemoSlot>>(
    frame: &'a [u8],
    limits: ParseLimits,
    memo: &mut M,
) -> Result<(Parsed<'a>, Recorded), ScanError> {
    let mut recorded = Recorded::NONE;
    let start = scan::skip_ws(frame, 0);
    let parsed = match frame.get(start) {
        Some(b'{') => {
            let (element, end) = parse_object(frame, start, limits.max_depth, true)?;
            expect_end(frame, end)?;
            Parsed::Single(element)
        }
        Some(b'[') => {
            // Hosts measure the batch as they validate it; firmware keeps the one scanner
            // (flash) and measures it when it is opened.
            let (end, sizes) = if scan::WORD_AT_A_TIME {
                // Growing storage gets its slots at the first batch: a connection that
                // never sees one never holds them. Offsets in the record are `u32`.
                if M::GROWS && memo.slots().is_empty() {
                    memo.grow_to(MEMO_SLOTS, MemoSlot::EMPTY);
                }
                let memo = match memo.slots_mut() {
                    slots if frame.len() - start <= u32::MAX as usize => slots,
                    _ => &mut [],
                };
                let (end, sizes, slots) = scan_batch(frame, start, limits.max_depth, memo)?;
                recorded = Recorded::new(slots, start);
                (end, sizes)
            } else {
                (scan::scan_value(frame, start, limits.max_depth)?.1, None)
            };
            expect_end(frame, end)?;
            let batch = Batch {
                text: frame.get(start..end).unwrap_or(&[]),
                sizes,
            };
            if batch.is_empty() {
                Parsed::EmptyBatch
            } else {
                Parsed::Batch(batch)
            }
        }
        _ => {
            let (_, end) = scan::scan_value(frame, start, limits.max_depth)?;
            expect_end(frame, end)?;
            Parsed::Single(Err(Invalid {
                id: None,
                reason: InvalidReason::NotAnObject,
                is_response: false,
            }))
        }
    };
    Ok((parsed, recorded))
}

/// The frame whose JSON text is the object at `start` (which holds `{`, whitespace before it
/// skipped): its element, as [`parse`] makes it. Inlined on hosts into the connection's
/// handling of a frame that starts with `{`, which then skips the batch machinery and the
/// copies of the element from layer to layer.
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub(crate) fn parse_single(
    frame: &[u8],
    start: usize,
    limits: ParseLimits,
) -> Result<Element<'_>, ScanError> {
    let max_depth = limits.max_depth;
    let (element, end) = if scan::WORD_AT_A_TIME && max_depth >= 2 {
        // The canonical reader inlined here too: the element is made where it is taken.
        match canonical(frame, start, max_depth) {
            Some(found) => found,
            None => walk_message_outlined(frame, start, max_depth)?,
        }
    } else {
        parse_object(frame, start, max_depth, true)?
    };
    expect_end(frame, end)?;
    Ok(element)
}

/// What the canonical reader makes of the object at the start of `input` (which holds `{`)
/// before the end of its frame is known: the element and the offset just past `}`, or `None`
/// (not canonical, or not on this target: hosts only). A line that ends right after that
/// offset is a frame the reader took whole, with no search for its newline; a string or a
/// number never holds a raw newline, so the object never runs past the line's end.
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub(crate) fn read_canonical(input: &[u8], limits: ParseLimits) -> Option<(Element<'_>, usize)> {
    if scan::WORD_AT_A_TIME && limits.max_depth >= 2 {
        canonical(input, 0, limits.max_depth)
    } else {
        None
    }
}

/// [`parse_single`] of the frame at the start of the bytes `read_canonical` was given, with
/// what it read there: the reader's element when it ended within the frame (the text after
/// it must then be whitespace only), else the general walk (which reports every error).
#[cfg_attr(target_pointer_width = "64", inline(always))]
pub(crate) fn parse_single_read<'a>(
    frame: &'a [u8],
    read: Option<(Element<'a>, usize)>,
    limits: ParseLimits,
) -> Result<Element<'a>, ScanError> {
    let (element, end) = match read {
        Some((element, end)) if end <= frame.len() => (element, end),
        _ => walk_message_outlined(frame, 0, limits.max_depth)?,
    };
    expect_end(frame, end)?;
    Ok(element)
}

/// What [`parse_recording`] recorded of a batch (nothing, on targets without a record).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Recorded {
    /// Slots filled, one per element from the first.
    #[cfg(target_pointer_width = "64")]
    pub(crate) slots: usize,
    /// Offset of the batch text (its `[`) in the frame.
    #[cfg(target_pointer_width = "64")]
    pub(crate) base: usize,
}

impl Recorded {
    const NONE: Recorded = Recorded::new(0, 0);

    #[cfg_attr(not(target_pointer_width = "64"), allow(unused_variables))]
    const fn new(slots: usize, base: usize) -> Self {
        Recorded {
            #[cfg(target_pointer_width = "64")]
            slots,
            #[cfg(target_pointer_width = "64")]
            base,
        }
    }
}

/// Validates the array at `start` (which holds `[`) as [`scan::scan_value`] does, with the
/// same verdict and the same error, one element at a time, so that the walk also measures its
/// elements (what a server reserves for their replies) without a second pass, and records the
/// first `memo.len()` of them. Returns the offset past `]`, the measure and the number of
/// slots filled.
fn scan_batch(
    text: &[u8],
    start: usize,
    max_depth: usize,
    memo: &mut [MemoSlot],
) -> Result<(usize, Option<BatchSizes>, usize), ScanError> {
    let err = |kind, offset| Err(ScanError { kind, offset });
    let max_depth = max_depth.min(scan::MAX_DEPTH_LIMIT);
    if max_depth == 0 {
        return err(ScanErrorKind::TooDeep, start);
    }
    let mut sizes = BatchSizes {
        elements: 0,
        id_room: 0,
    };
    // Where the element is delivered from (before its whitespace), relative to `[`.
    let mut at = 1u32;
    let mut pos = scan::skip_ws(text, start + 1);
    match text.get(pos) {
        None => return err(ScanErrorKind::UnexpectedEnd, text.len()),
        Some(b']') => return Ok((pos + 1, None, 0)),
        Some(_) => {}
    }
    loop {
        // An element starts here (whitespace skipped); its scan reports what the whole
        // array's would (a missing element, `[1,]`, is an unexpected byte or end there).
        let index = sizes.elements;
        let (vstart, vend) = match memo.get_mut(index) {
            Some(slot) => record_element(text, start, at, pos, max_depth - 1, slot)?,
            None => scan::scan_value(text, pos, max_depth - 1)?,
        };
        sizes.add(vend - vstart);
        pos = scan::skip_ws(text, vend);
        let recorded = memo.len().min(index + 1);
        match text.get(pos) {
            Some(b',') => {
                at = (pos + 1 - start) as u32;
                if let Some(slot) = memo.get_mut(index) {
                    slot.follow(Some(at));
                }
                pos = scan::skip_ws(text, pos + 1);
            }
            Some(b']') => {
                if let Some(slot) = memo.get_mut(index) {
                    slot.follow(None);
                }
                return Ok((pos + 1, Some(sizes), recorded));
            }
            Some(_) => return err(ScanErrorKind::UnexpectedByte, pos),
            None => return err(ScanErrorKind::UnexpectedEnd, text.len()),
        }
    }
}

/// Validates the batch element at `pos` (delivered from `at`) and records it in `slot`. An
/// object is validated by the message parser itself, which makes out the message on the way;
/// any error is the scanner's own (the parser and the scanner agree on every verdict, and a
/// batch reports the scanner's error), and the element is then left unrecorded.
fn record_element(
    text: &[u8],
    base: usize,
    at: u32,
    pos: usize,
    max_depth: usize,
    slot: &mut MemoSlot,
) -> Result<(usize, usize), ScanError> {
    if text.get(pos) != Some(&b'{') {
        let (vstart, vend) = scan::scan_value(text, pos, max_depth)?;
        *slot = MemoSlot::not_object(at, vend - vstart);
        return Ok((vstart, vend));
    }
    match parse_object(text, pos, max_depth, true) {
        Ok((element, end)) => {
            slot.record(text, base, at, end - pos, &element);
            Ok((pos, end))
        }
        Err(_) => {
            *slot = MemoSlot::EMPTY;
            scan::scan_value(text, pos, max_depth)
        }
    }
}

fn expect_end(frame: &[u8], end: usize) -> Result<(), ScanError> {
    let rest = scan::skip_ws(frame, end);
    if rest == frame.len() {
        Ok(())
    } else {
        Err(ScanError {
            kind: ScanErrorKind::TrailingCharacters,
            offset: rest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The batch walk gives the whole scan's verdict and error, and measures what a skim
    /// measures.
    #[test]
    fn batches_walk_as_the_scanner_scans() {
        let texts: &[&[u8]] = &[
            b"[1]",
            b"[1,2]",
            b" [ 1 , {\"a\":[2]} ]",
            b"[]",
            b"[ ]",
            b"[",
            b"[1",
            b"[1,",
            b"[1,]",
            b"[,1]",
            b"[1 2]",
            b"[1}",
            b"[{]",
            b"[[[]]]",
            b"[[[[]]]]",
            b"[\"\\u00e9\", \"\xc3\xa9\", 3]",
            b"[\"\xff\"]",
            b"[1,\"\xff\", x]",
            b"[\"a\" , null, true, false, -0.5e3]",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\"}, 7, [\"a\"]]",
            b"[1] x",
            b"[tru]",
            b"[01]",
            b"[{}]",
            b"[{\"a\":1 x}]",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1,\"id\":2}]",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":[[[1]]],\"id\":1}]",
            b" [ {\"id\":\"\xc3\xa9\",\"result\":{\"a\":[1,{}]},\"jsonrpc\":\"2.0\"} ,{\"m\":\"\xff\"}]",
            b"[{\"jsonrpc\":\"2.0\",\"method\":\"a\"} , 1,\n{\"jsonrpc\":\"2.0\",\"error\":{\"code\":1,\"message\":\"m\"},\"id\":null}\t]",
        ];
        for text in texts {
            let start = scan::skip_ws(text, 0);
            for depth in [0, 1, 2, 3, 64, 10_000] {
                // Without a record, with one shorter than the batch, and with a long one.
                for slots in [0, 1, MEMO_SLOTS] {
                    let mut memo = [MemoSlot::EMPTY; MEMO_SLOTS];
                    let memo = &mut memo[..slots.min(MEMO_SLOTS)];
                    let walked = scan_batch(text, start, depth, memo);
                    let scanned = scan::scan_value(text, start, depth);
                    match (walked, scanned) {
                        (Ok((end, sizes, recorded)), Ok((_, scan_end))) => {
                            assert_eq!(end, scan_end, "{text:?} {depth}");
                            let batch = Batch {
                                text: &text[start..end],
                                sizes: None,
                            };
                            let skimmed = batch.sizes();
                            match sizes {
                                Some(sizes) => assert_eq!(sizes, skimmed, "{text:?}"),
                                None => assert_eq!(skimmed.elements, 0, "{text:?}"),
                            }
                            assert_eq!(recorded, memo.len().min(skimmed.elements));
                            // Each recorded element is what iteration finds there.
                            let mut iter = batch.iter();
                            for slot in &memo[..recorded] {
                                let at = iter.position();
                                let element = iter.next().unwrap();
                                let next = (!iter.is_done()).then_some(iter.position());
                                let got = slot.element(batch.text, at);
                                assert_eq!(got, Some((element, iter.last_len(), next)), "{text:?}");
                                assert_eq!(slot.element(batch.text, at + 1), None);
                            }
                        }
                        (Err(w), Err(s)) => assert_eq!(w, s, "{text:?} {depth}"),
                        (w, s) => panic!("{text:?} {depth}: walk {w:?}, scan {s:?}"),
                    }
                }
            }
        }
    }
}
