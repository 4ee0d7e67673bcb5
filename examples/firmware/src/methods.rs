//! The demo methods of `rpcwire serve`, integers only, every result rendered as JSON text.
//!
//! `rpcwire_demo::answer` also accepts floats, which links float parsing (`f64::from_str`
//! and its 10 KiB table), ryu's 10 KiB of tables and soft-float arithmetic: about 30 KiB,
//! twice the flash budget. Here numbers are `i64`; any other number, and any overflow, is
//! Invalid params. Every example of the JSON-RPC 2.0 specification uses integers and gets
//! the same answer as from the demo service.
//!
//! Every result goes out as one type, [`Raw`](crate::text::Raw) JSON text, from one call site, so the
//! connection's `respond` is instantiated and inlined once (each instance costs a few hundred
//! bytes of flash).

use rpcwire::wire::RawJson;
use rpcwire::{ErrorCode, InboundRequest, RespondError};

use crate::params::{subtract, sum};
use crate::text::{Raw, Text};
use crate::Ctx;

/// The methods, in the order of [`answer`]'s match.
const METHODS: [&str; 8] = [
    "subtract",
    "sum",
    "get_data",
    "echo",
    "rpc.stats",
    "update",
    "notify_hello",
    "notify_sum",
];

/// Answers one request: the demo service's methods, and `rpc.stats` (feature `rpc-stats`).
pub fn answer(ctx: &mut Ctx<'_>, req: &InboundRequest<'_>) -> Result<(), RespondError> {
    let mut text = Text::new();
    let method = METHODS.iter().position(|m| req.method.eq_str(m));
    let number = |of: fn(RawJson<'_>) -> Option<i64>| req.params.and_then(of);
    let result: Result<&[u8], ErrorCode> = match method {
        Some(0) => number(subtract)
            .map(|n| text.int(n).bytes())
            .ok_or(ErrorCode::INVALID_PARAMS),
        Some(1) => number(sum)
            .map(|n| text.int(n).bytes())
            .ok_or(ErrorCode::INVALID_PARAMS),
        Some(2) => Ok(br#"["hello",5]"#),
        Some(3) => Ok(req.params.map_or(&b"null"[..], |p| p.as_bytes())),
        #[cfg(feature = "rpc-stats")]
        Some(4) => Ok(crate::stats::render(&ctx.conn().stats(), &mut text)),
        // An image built without `rpc.stats` (the Cortex-M0 one, for flash) lacks it.
        #[cfg(not(feature = "rpc-stats"))]
        Some(4) => Err(ErrorCode::METHOD_NOT_FOUND),
        // update, notify_hello, notify_sum
        Some(_) => Ok(b"null"),
        None => Err(ErrorCode::METHOD_NOT_FOUND),
    };
    match result {
        Ok(json) => ctx.respond(req.handle, &Raw(json)),
        Err(code) => ctx.reject(req.handle, code),
    }
}
