//! A `Connection` driven by arbitrary operation sequences (structured with `arbitrary`):
//! our commands and the peer's traffic, checked against the reference model shared with the
//! proptest suite `tests/tests/model_connection.rs` (token conservation, routing, limits,
//! handles, valid output; see `tests/tests/model_ops/mod.rs`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcwire::Config;

#[path = "../../tests/tests/model_ops/mod.rs"]
mod model_ops;

#[derive(Debug, arbitrary::Arbitrary)]
struct Input {
    config: Config,
    ops: Vec<model_ops::Op>,
}

fuzz_target!(|input: Input| {
    let mut model = model_ops::Model::new(input.config);
    for (i, op) in input.ops.iter().take(256).enumerate() {
        if let Err(e) = model.apply(op) {
            panic!("op {i} {op:?}: {e}\nconfig {:?}", input.config);
        }
    }
    if let Err(e) = model.finish() {
        panic!("at close: {e}\nconfig {:?}", input.config);
    }
});
