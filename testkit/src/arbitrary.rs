//! `arbitrary` generators for JSON-RPC traffic (feature `arbitrary`): what a cargo-fuzz
//! target's structured input becomes.

use arbitrary::{Arbitrary, Result, Unstructured};
use serde_json::{Map, Value};

use crate::case::{Case, Frame, Id, Message};

/// Method names used when the caller names none.
const DEFAULT_METHODS: &[&str] = &["echo", "sum", "subtract", "ping", "rpc.discover"];

/// The most frames, batch elements and chunk lengths in one generated case (bounded work per
/// fuzz input).
const MAX_ITEMS: usize = 16;

fn json(u: &mut Unstructured<'_>, depth: u8) -> Result<Value> {
    let kind = if depth == 0 {
        u.int_in_range(0..=4)?
    } else {
        u.int_in_range(0..=6)?
    };
    Ok(match kind {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 => Value::from(i64::arbitrary(u)?),
        3 => serde_json::Number::from_f64(u.arbitrary()?).map_or(Value::Null, Value::Number),
        4 => Value::String(u.arbitrary()?),
        5 => Value::Array(items(u, |u| json(u, depth - 1))?),
        _ => Value::Object(
            items(u, |u| Ok((String::arbitrary(u)?, json(u, depth - 1)?)))?
                .into_iter()
                .collect::<Map<_, _>>(),
        ),
    })
}

fn items<T>(
    u: &mut Unstructured<'_>,
    mut one: impl FnMut(&mut Unstructured<'_>) -> Result<T>,
) -> Result<Vec<T>> {
    let n = u.int_in_range(0..=MAX_ITEMS / 4)?;
    (0..n).map(|_| one(u)).collect()
}

fn params(u: &mut Unstructured<'_>) -> Result<Option<Value>> {
    Ok(match u.int_in_range(0..=2)? {
        0 => None,
        1 => Some(Value::Array(items(u, |u| json(u, 2))?)),
        _ => Some(json(u, 3)?).filter(|v| v.is_object() || v.is_array()),
    })
}

impl<'a> Arbitrary<'a> for Id {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(match u.int_in_range(0..=3)? {
            0 | 1 => Id::Num(u.int_in_range(0..=7)?),
            2 => Id::Str(u.arbitrary()?),
            _ => Id::Null,
        })
    }
}

impl Message {
    /// A message calling one of `methods` (or any name, now and then).
    pub fn arbitrary_for(u: &mut Unstructured<'_>, methods: &[&str]) -> Result<Self> {
        let method = if methods.is_empty() || u.ratio(1, 8)? {
            String::arbitrary(u)?
        } else {
            (*u.choose(methods)?).to_owned()
        };
        Ok(match u.int_in_range(0..=7)? {
            0..=4 => Message::Request {
                method,
                params: params(u)?,
                id: u.arbitrary()?,
            },
            5 | 6 => Message::Notification {
                method,
                params: params(u)?,
            },
            _ => Message::Json(json(u, 2)?.to_string()),
        })
    }
}

impl Frame {
    /// A frame of messages calling `methods`: a single message, a batch, or raw bytes (with
    /// line framing, their newlines cut them into several frames).
    pub fn arbitrary_for(u: &mut Unstructured<'_>, methods: &[&str]) -> Result<Self> {
        Ok(match u.int_in_range(0..=5)? {
            0..=2 => Frame::Single(Message::arbitrary_for(u, methods)?),
            3 | 4 => Frame::Batch(items(u, |u| Message::arbitrary_for(u, methods))?),
            _ => Frame::Raw(u.arbitrary()?),
        })
    }
}

impl Case {
    /// A case of frames calling `methods`, in arbitrary chunks.
    pub fn arbitrary_for(u: &mut Unstructured<'_>, methods: &[&str]) -> Result<Self> {
        let n = u.int_in_range(1..=MAX_ITEMS)?;
        let frames = (0..n)
            .map(|_| Frame::arbitrary_for(u, methods))
            .collect::<Result<Vec<_>>>()?;
        let chunks = items(u, |u| u.int_in_range(1..=64usize))?;
        Ok(Case { frames, chunks })
    }
}

impl<'a> Arbitrary<'a> for Message {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Message::arbitrary_for(u, DEFAULT_METHODS)
    }
}

impl<'a> Arbitrary<'a> for Frame {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Frame::arbitrary_for(u, DEFAULT_METHODS)
    }
}

impl<'a> Arbitrary<'a> for Case {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Case::arbitrary_for(u, DEFAULT_METHODS)
    }
}
