//! The demo methods of `rpcwire serve` as a typed dispatch table (integers only; `echo`,
//! which answers its params as they came, is answered before the table).

use rpcwire::wire::RawJson;
use rpcwire_embedded_io::methods::{MethodError, MethodList, Methods, NoParams};

/// The methods keep no state.
pub struct Demo;

/// An integer, or `None` (floats, overflow, anything else).
fn int(v: RawJson<'_>) -> Option<i64> {
    v.decode::<i64>().ok()
}

/// `subtract`'s params, `[minuend, subtrahend]` or `{"minuend": .., "subtrahend": ..}`:
/// serde-json-core reads a struct from an object only, so the table hands them over raw.
fn subtract(params: Option<RawJson<'_>>) -> Option<i64> {
    let params = params?;
    let (a, b) = if params.is_array() {
        let mut it = params.elements();
        let pair = (int(it.next()?)?, int(it.next()?)?);
        if it.next().is_some() {
            return None;
        }
        pair
    } else {
        let (mut a, mut b) = (None, None);
        for (key, value) in params.members() {
            if key.eq_str("minuend") {
                a = int(value);
            } else if key.eq_str("subtrahend") {
                b = int(value);
            }
        }
        (a?, b?)
    };
    a.checked_sub(b)
}

/// `sum`'s params: an array of integers, summed as they are read (no buffer).
fn sum(params: Option<RawJson<'_>>) -> Option<i64> {
    let params = params.filter(RawJson::is_array)?;
    params
        .elements()
        .try_fold(0i64, |acc, e| acc.checked_add(int(e)?))
}

/// The table.
pub fn methods() -> Methods<Demo, impl MethodList<Demo>> {
    let bad = MethodError::INVALID_PARAMS;
    Methods::new()
        .raw("subtract", move |_: &mut Demo, p| subtract(p).ok_or(bad))
        .raw("sum", move |_: &mut Demo, p| sum(p).ok_or(bad))
        .method("get_data", |_: &mut Demo, _: NoParams| Ok(("hello", 5)))
        .raw("update", |_: &mut Demo, _| Ok(()))
        .raw("notify_hello", |_: &mut Demo, _| Ok(()))
        .raw("notify_sum", |_: &mut Demo, _| Ok(()))
}
