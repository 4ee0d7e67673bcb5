//! A dispatch table of typed methods, for firmware: no heap, no I/O.
//!
//! [`Methods`] maps method names to functions of the device's state and their params,
//! decoded with serde-json-core into any owned `Deserialize` type; the function's result is
//! serialized into the answer. The table answers what the specification asks of a server for
//! you: `-32601 Method not found` for a request of a method it does not have, `-32602 Invalid
//! params` for params that do not decode, nothing at all for notifications (which run the
//! method all the same). Each method runs once per request: the table renders the result
//! before it answers, so a driver that writes out and retries that answer (a transmit buffer
//! that was full) never runs a side effect twice.
//!
//! Results are rendered as JSON into a [`RESULT_LEN`]-byte buffer on the stack, then handed
//! to the connection as text ([`Rendered`]): the connection's answer path is compiled once for
//! every result type, and a new result type costs only its own serialization (an `f32` result
//! costs about 2.5 KiB of flash with ryu's `small` feature; see rpcwire-embedded-io's README).
//! A result that does not fit is answered with Internal error, `"data":"result too large"`.
//!
//! The table answers through an [`Answer`]: a [`Connection`] itself (the answer is queued, or
//! refused when the transmit buffer is full), or a driver's context that writes out and
//! retries (rpcwire-embedded-io's `Context`). It takes any [`Item`] that may carry a call: the
//! core's [`Inbound`], or a driver's own item type (rpcwire-embedded-io's `Incoming`), and
//! gives back what it does not take.
//!
//! ```
//! use rpcwire::methods::{MethodError, Methods, NoParams};
//! use rpcwire::storage::Inline;
//! use rpcwire::wire::RxBuffer;
//! use rpcwire::{Config, Connection, Inbound, Instant};
//!
//! struct Board { led: bool, celsius: f32 }
//!
//! let mut methods = Methods::new()
//!     .method("led.set", |b: &mut Board, (on,): (bool,)| { b.led = on; Ok(on) })
//!     .method("temp.read", |b: &mut Board, _: NoParams| Ok(b.celsius))
//!     .method("add", |_: &mut Board, (x, y): (i32, i32)| {
//!         x.checked_add(y).ok_or(MethodError::INVALID_PARAMS)
//!     });
//!
//! let mut board = Board { led: false, celsius: 21.5 };
//! let mut conn: Connection<Inline<1024, 512, 2, 2>> = Connection::const_new(Config::DEFAULT);
//! let mut rx: RxBuffer<[u8; 256]> = RxBuffer::const_new(Config::DEFAULT.framing);
//! let mut input: &[u8] = concat!(
//!     r#"{"jsonrpc":"2.0","method":"led.set","params":[true],"id":1}"#, "\n",
//!     r#"{"jsonrpc":"2.0","method":"temp.read","id":2}"#, "\n",
//!     r#"{"jsonrpc":"2.0","method":"add","params":[2,"x"],"id":3}"#, "\n",
//!     r#"{"jsonrpc":"2.0","method":"reboot","id":4}"#, "\n").as_bytes();
//! while let Some(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input).item() {
//!     // What the table does not take: responses, problems, other notifications.
//!     if let Some(Inbound::Response(_)) = methods.dispatch(&mut board, &mut conn, item) { /* ... */ }
//! }
//! let out = core::str::from_utf8(conn.poll_transmit()).unwrap();
//! assert!(out.contains(r#"{"jsonrpc":"2.0","result":true,"id":1}"#), "{out}");
//! assert!(out.contains(r#"{"jsonrpc":"2.0","result":21.5,"id":2}"#), "{out}");
//! assert!(out.contains(r#""code":-32602,"message":"Invalid params"},"id":3}"#), "{out}");
//! assert!(out.contains(r#""code":-32601,"message":"Method not found"},"id":4}"#), "{out}");
//! assert!(board.led);
//! ```
//!
//! Params are decoded by [`FromParams`]: every `DeserializeOwned` type (a tuple for
//! positional params, a struct for named ones, `()` or `Option<T>` for none), and
//! [`NoParams`], which takes no params, `[]` or `{}`. Strings are unescaped into a
//! [`UNESCAPE_LEN`]-byte buffer on the stack, one string at a time; use `heapless::String`
//! for string params. Params serde-json-core cannot express (either positional or named, any
//! JSON at all) go to a [`raw`](Methods::raw) method, which gets the validated JSON text.

use core::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::code::ErrorCode;
use crate::conn::{Connection, Inbound, InboundRequest, RequestHandle, RespondError};
use crate::storage::Storage;
use crate::wire::ser::{to_slice, Rendered, ToSliceError};
use crate::wire::{JsonStr, Notification, RawJson};

/// The longest string, once unescaped, that typed params may hold (bytes of stack used
/// while decoding); longer ones are invalid params.
pub const UNESCAPE_LEN: usize = 64;

/// The longest result a method may return, as JSON text (bytes of stack used while
/// answering).
pub const RESULT_LEN: usize = 256;

/// Why a method failed: its answer is this JSON-RPC error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MethodError {
    /// The error code (`-32000..=-32099` for the server's own errors).
    pub code: ErrorCode,
    /// The message; `None`: the code's standard message.
    pub message: Option<&'static str>,
}

impl MethodError {
    /// `-32602 Invalid params`: the params decoded but their values are refused (out of
    /// range, an overflow).
    pub const INVALID_PARAMS: MethodError = MethodError::code(ErrorCode::INVALID_PARAMS);
    /// `-32603 Internal error`.
    pub const INTERNAL_ERROR: MethodError = MethodError::code(ErrorCode::INTERNAL_ERROR);

    /// An error with the code's standard message.
    pub const fn code(code: ErrorCode) -> Self {
        MethodError {
            code,
            message: None,
        }
    }

    /// An error with a message of its own, such as `MethodError::new(ErrorCode(-32001),
    /// "sensor busy")`.
    pub const fn new(code: ErrorCode, message: &'static str) -> Self {
        MethodError {
            code,
            message: Some(message),
        }
    }
}

impl From<ErrorCode> for MethodError {
    fn from(code: ErrorCode) -> Self {
        MethodError::code(code)
    }
}

/// Params a typed method takes, decoded from the request's `params` (absent: `None`).
/// `None` from [`from_params`](FromParams::from_params) is answered with Invalid params.
pub trait FromParams: Sized {
    /// The value, or `None` when `params` do not fit.
    fn from_params(params: Option<RawJson<'_>>) -> Option<Self>;
}

/// Every owned serde type: decoded from the params with serde-json-core (absent params are
/// decoded from `null`: `()` and `Option<T>` take them).
impl<T: DeserializeOwned> FromParams for T {
    fn from_params(params: Option<RawJson<'_>>) -> Option<Self> {
        let mut unescaped = [0u8; UNESCAPE_LEN];
        let text: &[u8] = params.as_ref().map_or(b"null", RawJson::as_bytes);
        serde_json_core::from_slice_escaped(text, &mut unescaped)
            .ok()
            .map(|(value, _)| value)
    }
}

/// No params: the member absent, `[]` or `{}` (JSON-RPC clients send any of them).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoParams;

impl FromParams for NoParams {
    fn from_params(params: Option<RawJson<'_>>) -> Option<Self> {
        match params {
            None => Some(NoParams),
            Some(p) if p.is_array() => p.elements().next().is_none().then_some(NoParams),
            Some(p) => p.members().next().is_none().then_some(NoParams),
        }
    }
}

/// How a dispatch table answers a request: a [`Connection`] (the answer is queued, or refused
/// when the transmit buffer is full), or a driver's context that writes out and retries.
pub trait Answer {
    /// Answers with `result`. A result that cannot be serialized (a NaN float) is answered
    /// with Internal error by the table.
    fn result<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError>;

    /// Answers with an error.
    fn error(&mut self, handle: RequestHandle, error: MethodError) -> Result<(), RespondError>;
}

/// The connection answers at once: a standard error as [`reject`](Connection::reject) does
/// (it never waits for transmit room), anything else into the transmit buffer, or
/// `WouldBlock` when that is full (a driver writes out before it dispatches a request, so that
/// the answer finds room).
impl<S: Storage> Answer for Connection<S> {
    fn result<R: Serialize + ?Sized>(
        &mut self,
        handle: RequestHandle,
        result: &R,
    ) -> Result<(), RespondError> {
        self.respond(handle, result)
    }

    fn error(&mut self, handle: RequestHandle, error: MethodError) -> Result<(), RespondError> {
        match error.message {
            None => self.reject(handle, error.code),
            Some(message) => self.respond_error(handle, error.code, Some(message), None::<&()>),
        }
    }
}

/// A call a dispatch table takes: a request or a notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call<'a> {
    /// A request (answered by the table).
    Request(InboundRequest<'a>),
    /// A notification (never answered).
    Notification(Notification<'a>),
}

/// An item handed to [`Methods::dispatch`]: the core's [`Inbound`], or a driver's own item
/// type (rpcwire-embedded-io's `Incoming`, which also carries events and ticks).
pub trait Item<'a>: Sized {
    /// The call this item is, or the item itself when it is none.
    fn into_call(self) -> Result<Call<'a>, Self>;

    /// The item that carries `call` (a notification the table does not have goes back as one).
    fn from_call(call: Call<'a>) -> Self;
}

impl<'a> Item<'a> for Inbound<'a> {
    fn into_call(self) -> Result<Call<'a>, Self> {
        match self {
            Inbound::Request(req) => Ok(Call::Request(req)),
            Inbound::Notification(n) => Ok(Call::Notification(n)),
            other => Err(other),
        }
    }

    fn from_call(call: Call<'a>) -> Self {
        match call {
            Call::Request(req) => Inbound::Request(req),
            Call::Notification(n) => Inbound::Notification(n),
        }
    }
}

/// One method of a table: its name and how it runs (built by [`Methods::method`] and
/// [`Methods::raw`]).
pub trait Entry<T> {
    /// The method's name.
    fn name(&self) -> &'static str;

    /// Runs the method with `params` and answers through `answer`, or, for a notification
    /// (`answer` is `None`), runs it when its params fit and answers nothing.
    fn run<A: Answer>(
        &mut self,
        state: &mut T,
        params: Option<RawJson<'_>>,
        answer: Option<(&mut A, RequestHandle)>,
    );
}

/// The methods of a table, as [`Methods`] nests them: `()` or `(Entry, rest)`.
pub trait MethodList<T> {
    /// Runs the method called `method`; false when the list has none of that name.
    fn call<A: Answer>(
        &mut self,
        state: &mut T,
        method: &JsonStr<'_>,
        params: Option<RawJson<'_>>,
        answer: Option<(&mut A, RequestHandle)>,
    ) -> bool;
}

impl<T> MethodList<T> for () {
    fn call<A: Answer>(
        &mut self,
        _: &mut T,
        _: &JsonStr<'_>,
        _: Option<RawJson<'_>>,
        _: Option<(&mut A, RequestHandle)>,
    ) -> bool {
        false
    }
}

impl<T, E: Entry<T>, L: MethodList<T>> MethodList<T> for (E, L) {
    fn call<A: Answer>(
        &mut self,
        state: &mut T,
        method: &JsonStr<'_>,
        params: Option<RawJson<'_>>,
        answer: Option<(&mut A, RequestHandle)>,
    ) -> bool {
        if method.eq_str(self.0.name()) {
            self.0.run(state, params, answer);
            true
        } else {
            self.1.call(state, method, params, answer)
        }
    }
}

/// Answers a method's outcome: its result, rendered first (see the [module
/// documentation](self)), or its error. A result that cannot be JSON (a NaN float) or is
/// longer than [`RESULT_LEN`] is answered with Internal error, so that every request gets its
/// answer.
fn answer<A: Answer, R: Serialize>(
    answer: Option<(&mut A, RequestHandle)>,
    outcome: Result<R, MethodError>,
) {
    let Some((ctx, handle)) = answer else {
        return; // a notification: never answered
    };
    let mut text = [0u8; RESULT_LEN];
    let answered = match outcome.map(|result| to_slice(&result, &mut text)) {
        // `to_slice` says how many bytes of `text` it wrote: `len` is in range.
        #[allow(clippy::indexing_slicing)]
        Ok(Ok(len)) => ctx.result(handle, &Rendered(&text[..len])),
        Ok(Err(ToSliceError::BufferTooSmall { .. })) => ctx.error(handle, TOO_LARGE),
        Ok(Err(_)) => ctx.error(handle, MethodError::INTERNAL_ERROR),
        Err(error) => ctx.error(handle, error),
    };
    if let Err(RespondError::Serialize(_)) = answered {
        let _ = ctx.error(handle, MethodError::INTERNAL_ERROR);
    }
}

/// A result longer than [`RESULT_LEN`].
const TOO_LARGE: MethodError = MethodError::new(ErrorCode::INTERNAL_ERROR, "result too large");

/// A method with typed params (see [`Methods::method`]).
pub struct Typed<F, P, R> {
    name: &'static str,
    f: F,
    _types: PhantomData<fn(P) -> R>,
}

impl<T, F, P, R> Entry<T> for Typed<F, P, R>
where
    F: FnMut(&mut T, P) -> Result<R, MethodError>,
    P: FromParams,
    R: Serialize,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn run<A: Answer>(
        &mut self,
        state: &mut T,
        params: Option<RawJson<'_>>,
        to: Option<(&mut A, RequestHandle)>,
    ) {
        let outcome = match P::from_params(params) {
            Some(params) => (self.f)(state, params),
            None => Err(MethodError::code(ErrorCode::INVALID_PARAMS)),
        };
        answer(to, outcome);
    }
}

/// A method that reads its params as JSON text (see [`Methods::raw`]).
pub struct Raw<F, R> {
    name: &'static str,
    f: F,
    _result: PhantomData<fn() -> R>,
}

impl<T, F, R> Entry<T> for Raw<F, R>
where
    F: FnMut(&mut T, Option<RawJson<'_>>) -> Result<R, MethodError>,
    R: Serialize,
{
    fn name(&self) -> &'static str {
        self.name
    }

    fn run<A: Answer>(
        &mut self,
        state: &mut T,
        params: Option<RawJson<'_>>,
        to: Option<(&mut A, RequestHandle)>,
    ) {
        let outcome = (self.f)(state, params);
        answer(to, outcome);
    }
}

/// A dispatch table over a state `T` (the device: its LEDs, sensors, counters). Build it with
/// [`new`](Methods::new) and [`method`](Methods::method), keep it next to the driver (on the
/// stack of `main` or of a task), and hand it each item with [`dispatch`](Methods::dispatch).
/// See the [module documentation](self).
pub struct Methods<T, L = ()> {
    list: L,
    _state: PhantomData<fn(&mut T)>,
}

impl<T> Methods<T> {
    /// An empty table.
    pub const fn new() -> Self {
        Methods {
            list: (),
            _state: PhantomData,
        }
    }
}

impl<T> Default for Methods<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, L: MethodList<T>> Methods<T, L> {
    /// Adds a method whose params are a [`FromParams`] type `P` (any owned serde type, or
    /// [`NoParams`]) and whose result is any `Serialize` type. Params that do not decode are
    /// answered with Invalid params without calling `f`.
    pub fn method<P, R, F>(self, name: &'static str, f: F) -> Methods<T, (Typed<F, P, R>, L)>
    where
        F: FnMut(&mut T, P) -> Result<R, MethodError>,
        P: FromParams,
        R: Serialize,
    {
        let entry = Typed {
            name,
            f,
            _types: PhantomData,
        };
        Methods {
            list: (entry, self.list),
            _state: PhantomData,
        }
    }

    /// Adds a method that reads its params itself, as validated JSON text (`None`: no params),
    /// for params serde-json-core cannot decode: either positional or named, or any JSON.
    pub fn raw<R, F>(self, name: &'static str, f: F) -> Methods<T, (Raw<F, R>, L)>
    where
        F: FnMut(&mut T, Option<RawJson<'_>>) -> Result<R, MethodError>,
        R: Serialize,
    {
        let entry = Raw {
            name,
            f,
            _result: PhantomData,
        };
        Methods {
            list: (entry, self.list),
            _state: PhantomData,
        }
    }

    /// Runs the method an item calls: a request is answered (its result, its error, Invalid
    /// params, or Method not found), a notification of a method in the table runs it and is
    /// never answered. Returns the items the table does not take: responses, problems (and a
    /// driver's events and ticks), and notifications of methods it does not have.
    pub fn dispatch<'i, A: Answer, I: Item<'i>>(
        &mut self,
        state: &mut T,
        answer: &mut A,
        item: I,
    ) -> Option<I> {
        match item.into_call() {
            Ok(Call::Request(req)) => {
                let to = Some((&mut *answer, req.handle));
                if !self.list.call(state, &req.method, req.params, to) {
                    let _ = answer.error(req.handle, ErrorCode::METHOD_NOT_FOUND.into());
                }
                None
            }
            Ok(Call::Notification(n)) => {
                let to: Option<(&mut A, RequestHandle)> = None;
                match self.list.call(state, &n.method, n.params, to) {
                    true => None,
                    false => Some(I::from_call(Call::Notification(n))),
                }
            }
            Err(other) => Some(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::string::String;

    use super::*;
    use crate::storage::Inline;
    use crate::wire::RxBuffer;
    use crate::{Config, Instant};

    struct Board {
        led: bool,
        pressed: u32,
    }

    type Conn = Connection<Inline<1024, 512, 2, 2>>;

    fn table() -> Methods<Board, impl MethodList<Board>> {
        Methods::new()
            .method("led.set", |b: &mut Board, (on,): (bool,)| {
                b.led = on;
                Ok(on)
            })
            .method("press", |b: &mut Board, _: NoParams| {
                b.pressed += 1;
                Ok(b.pressed)
            })
            .method("add", |_: &mut Board, (x, y): (i32, i32)| {
                x.checked_add(y).ok_or(MethodError::INVALID_PARAMS)
            })
            .method("busy", |_: &mut Board, _: NoParams| {
                Err::<(), _>(MethodError::new(ErrorCode(-32001), "sensor busy"))
            })
            .method("nan", |_: &mut Board, _: NoParams| Ok(f32::NAN))
            .method("big", |_: &mut Board, _: NoParams| Ok([u64::MAX; 32]))
            .raw("len", |_: &mut Board, params: Option<RawJson<'_>>| {
                Ok(params.map_or(0, |p| p.as_bytes().len()))
            })
    }

    /// Runs the table over a connection alone: every line of `input` dispatched, what the
    /// table gives back counted; returns the connection's output.
    fn run(board: &mut Board, input: &str) -> (String, usize) {
        let mut conn = Conn::const_new(Config::DEFAULT);
        let mut rx: RxBuffer<[u8; 512]> = RxBuffer::const_new(Config::DEFAULT.framing);
        let mut methods = table();
        let mut input = input.as_bytes();
        let mut returned = 0;
        while let Some(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input).item() {
            if methods.dispatch(board, &mut conn, item).is_some() {
                returned += 1;
            }
        }
        let out = String::from_utf8(conn.poll_transmit().to_vec()).unwrap();
        (out, returned)
    }

    fn board() -> Board {
        Board {
            led: false,
            pressed: 0,
        }
    }

    #[test]
    fn requests_are_answered_with_results_and_errors() {
        let mut b = board();
        let (out, returned) = run(
            &mut b,
            concat!(
                r#"{"jsonrpc":"2.0","method":"led.set","params":[true],"id":1}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"add","params":[2,3],"id":2}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"add","params":[2147483647,1],"id":3}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"add","params":[2,"x"],"id":4}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"reboot","id":5}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"busy","id":6}"#,
                "\n",
            ),
        );
        assert_eq!(returned, 0);
        assert!(b.led);
        let lines: std::vec::Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"jsonrpc":"2.0","result":true,"id":1}"#,
                r#"{"jsonrpc":"2.0","result":5,"id":2}"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":3}"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"Invalid params"},"id":4}"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":5}"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32001,"message":"sensor busy"},"id":6}"#,
            ]
        );
    }

    #[test]
    fn notifications_run_unanswered_and_unknown_ones_come_back() {
        let mut b = board();
        let (out, returned) = run(
            &mut b,
            concat!(
                r#"{"jsonrpc":"2.0","method":"press"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"press","params":[]}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"press","params":[1]}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"other"}"#,
                "\n",
                r#"{"jsonrpc":"2.0","result":1,"id":9}"#,
                "\n",
            ),
        );
        // `params: [1]` does not fit `NoParams`: not run, not answered.
        assert_eq!(b.pressed, 2);
        assert_eq!(out, "");
        // The unknown notification and the response (to nothing of ours: a problem).
        assert_eq!(returned, 2);
    }

    #[test]
    fn results_that_cannot_be_sent_are_internal_errors() {
        let mut b = board();
        let (out, _) = run(
            &mut b,
            concat!(
                r#"{"jsonrpc":"2.0","method":"nan","id":1}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"big","id":2}"#,
                "\n",
            ),
        );
        let lines: std::vec::Vec<&str> = out.lines().collect();
        assert_eq!(
            lines,
            [
                r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"Internal error"},"id":1}"#,
                r#"{"jsonrpc":"2.0","error":{"code":-32603,"message":"result too large"},"id":2}"#,
            ]
        );
    }

    #[test]
    fn raw_methods_get_the_params_text() {
        let mut b = board();
        let (out, _) = run(
            &mut b,
            concat!(
                r#"{"jsonrpc":"2.0","method":"len","params":{"a":[1,2]},"id":1}"#,
                "\n",
                r#"{"jsonrpc":"2.0","method":"len","id":2}"#,
                "\n",
            ),
        );
        assert!(out.contains(r#""result":11,"id":1}"#), "{out}");
        assert!(out.contains(r#""result":0,"id":2}"#), "{out}");
    }

    #[test]
    fn no_params_take_absent_empty_array_and_empty_object() {
        let parse = |text: &'static str| {
            let limits = crate::wire::ParseLimits::default();
            match crate::wire::parse(text.as_bytes(), limits).unwrap() {
                crate::wire::Parsed::Single(Ok(crate::wire::Message::Request(r))) => r.params,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(NoParams::from_params(None), Some(NoParams));
        for (text, fits) in [
            (r#"{"jsonrpc":"2.0","method":"m","params":[],"id":1}"#, true),
            (r#"{"jsonrpc":"2.0","method":"m","params":{},"id":1}"#, true),
            (
                r#"{"jsonrpc":"2.0","method":"m","params":[0],"id":1}"#,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","method":"m","params":{"a":0},"id":1}"#,
                false,
            ),
        ] {
            assert_eq!(NoParams::from_params(parse(text)).is_some(), fits, "{text}");
        }
        // Owned serde types: absent params decode from `null`.
        assert_eq!(<Option<(i32,)>>::from_params(None), Some(None));
        assert_eq!(<()>::from_params(None), Some(()));
    }
}
