//! The params of the demo methods that take numbers, read from the JSON text without a
//! deserializer (integers only, 32-bit divisions): shared by the images' method tables.

use rpcwire::wire::RawJson;

use crate::text::int;

/// `subtract`'s params: `[minuend, subtrahend]` or `{"minuend": .., "subtrahend": ..}`.
pub fn subtract(params: RawJson<'_>) -> Option<i64> {
    let (a, b) = if params.is_array() {
        let mut it = params.elements();
        let pair = (int(it.next()?)?, int(it.next()?)?);
        if it.next().is_some() {
            return None;
        }
        pair
    } else {
        let (mut minuend, mut subtrahend) = (None, None);
        for (key, value) in params.members() {
            if key.eq_str("minuend") {
                minuend = int(value);
            } else if key.eq_str("subtrahend") {
                subtrahend = int(value);
            }
        }
        (minuend?, subtrahend?)
    };
    a.checked_sub(b)
}

/// `sum`'s params: an array of integers.
pub fn sum(params: RawJson<'_>) -> Option<i64> {
    if !params.is_array() {
        return None;
    }
    params
        .elements()
        .try_fold(0i64, |acc, e| acc.checked_add(int(e)?))
}
