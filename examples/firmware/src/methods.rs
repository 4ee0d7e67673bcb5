//! The demo methods of `rpcwire serve`, integers only, every result rendered as JSON text.
//!
//! `rpcwire_demo::answer` also accepts floats, which links float parsing (`f64::from_str`
//! and its 10 KiB table), ryu's 10 KiB of tables and soft-float arithmetic: about 30 KiB,
//! twice the flash budget. Here numbers are `i64`; any other number, and any overflow, is
//! Invalid params. Every example of the JSON-RPC 2.0 specification uses integers and gets
//! the same answer as from the demo service.
//!
//! Every result goes out as a [`RawJson`], so the connection's `respond` is instantiated
//! once instead of once per result type (each instance costs a few hundred bytes of flash).

use rpcwire::wire::RawJson;
use rpcwire::{ErrorCode, InboundRequest, RespondError};

use crate::Ctx;

/// Room for any result this module renders.
pub const TEXT_LEN: usize = 160;

/// A small text buffer for rendering results.
pub struct Text {
    buf: [u8; TEXT_LEN],
    len: usize,
}

impl Text {
    /// An empty buffer.
    pub fn new() -> Self {
        Text {
            buf: [0; TEXT_LEN],
            len: 0,
        }
    }

    /// Appends bytes (silently truncated at the capacity; callers stay far below it).
    pub fn put(&mut self, bytes: &[u8]) -> &mut Self {
        for &b in bytes {
            if let Some(slot) = self.buf.get_mut(self.len) {
                *slot = b;
                self.len += 1;
            }
        }
        self
    }

    /// Appends an integer in decimal.
    pub fn int(&mut self, n: i64) -> &mut Self {
        if n < 0 {
            self.put(b"-");
        }
        let mut v = n.unsigned_abs();
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (v % 10) as u8;
            v /= 10;
            if v == 0 {
                break;
            }
        }
        self.put(&digits[i..])
    }

    /// The text as a JSON value (`None` if it is not one).
    pub fn json(&self) -> Option<RawJson<'_>> {
        let text = core::str::from_utf8(&self.buf[..self.len]).ok()?;
        RawJson::parse(text, 4).ok()
    }
}

fn int(raw: RawJson<'_>) -> Option<i64> {
    raw.decode::<i64>().ok()
}

/// `subtract`'s params: `[minuend, subtrahend]` or `{"minuend": .., "subtrahend": ..}`.
fn subtract(params: RawJson<'_>) -> Option<i64> {
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
fn sum(params: RawJson<'_>) -> Option<i64> {
    if !params.is_array() {
        return None;
    }
    params
        .elements()
        .try_fold(0i64, |acc, e| acc.checked_add(int(e)?))
}

/// Answers one request of the demo service.
pub fn answer(ctx: &mut Ctx<'_>, req: &InboundRequest<'_>) -> Result<(), RespondError> {
    let mut text = Text::new();
    let result = match req.method.as_str().unwrap_or("") {
        "subtract" => req
            .params
            .and_then(subtract)
            .ok_or(ErrorCode::INVALID_PARAMS),
        "sum" => req.params.and_then(sum).ok_or(ErrorCode::INVALID_PARAMS),
        "get_data" => return respond(ctx, req, text.put(br#"["hello",5]"#)),
        "echo" => {
            return match req.params {
                Some(p) => ctx.respond(req.handle, &p),
                None => respond(ctx, req, text.put(b"null")),
            }
        }
        "update" | "notify_hello" | "notify_sum" => return respond(ctx, req, text.put(b"null")),
        _ => Err(ErrorCode::METHOD_NOT_FOUND),
    };
    match result {
        Ok(n) => respond(ctx, req, text.int(n)),
        Err(code) => ctx.reject(req.handle, code),
    }
}

/// Responds with rendered text.
pub fn respond(
    ctx: &mut Ctx<'_>,
    req: &InboundRequest<'_>,
    text: &Text,
) -> Result<(), RespondError> {
    match text.json() {
        Some(json) => ctx.respond(req.handle, &json),
        None => ctx.reject(req.handle, ErrorCode::INTERNAL_ERROR),
    }
}
