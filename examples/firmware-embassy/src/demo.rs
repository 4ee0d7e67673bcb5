//! The demo methods of `rpcwire serve` as a typed dispatch table (integers only; `echo`,
//! which answers its params as they came, is answered before the table). `subtract` and
//! `sum` read their params themselves (`raw` methods): serde-json-core reads a struct from an
//! object only, and `subtract` takes an array too; the readers are the Cortex-M3 image's.

use rpcwire_embedded_io::methods::{MethodError, MethodList, Methods, NoParams};

use crate::params::{subtract, sum};

/// The methods keep no state.
pub struct Demo;

/// The table.
pub fn methods() -> Methods<Demo, impl MethodList<Demo>> {
    let bad = MethodError::INVALID_PARAMS;
    Methods::new()
        .raw("subtract", move |_: &mut Demo, p| {
            p.and_then(subtract).ok_or(bad)
        })
        .raw("sum", move |_: &mut Demo, p| p.and_then(sum).ok_or(bad))
        .method("get_data", |_: &mut Demo, _: NoParams| Ok(("hello", 5)))
        .raw("update", |_: &mut Demo, _| Ok(()))
        .raw("notify_hello", |_: &mut Demo, _| Ok(()))
        .raw("notify_sum", |_: &mut Demo, _| Ok(()))
}
