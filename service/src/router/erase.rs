//! Handlers after type erasure: what the dispatcher runs. A typed handler decodes its params
//! from the received bytes, is polled once in place (answering straight into the connection
//! when it finishes at once), and leaves the rest to a task.

use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};

use rpcwire::wire::RawJson;
use rpcwire::{ErrorCode, RequestHandle, RespondError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::router::context::{scrub, Origin};
use crate::{Conn, RpcError};

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A registered handler.
#[derive(Clone)]
pub(crate) struct Entry<F> {
    pub(crate) run: F,
    /// The method's metric handles, found on its first measured call and kept here, so that
    /// a call finds them with no lookup by name (empty without the feature `metrics`).
    pub(crate) meter: rpcwire_telemetry::MethodMeter,
}

impl<F> Entry<F> {
    pub(crate) fn new(run: F) -> Self {
        Entry {
            run,
            meter: rpcwire_telemetry::MethodMeter::default(),
        }
    }
}

/// How a request handler ended its first run.
pub(crate) enum Outcome {
    /// Answered straight into the connection's transmit queue: with this error code, if
    /// an error.
    Done(Option<i32>),
    /// Answered, but the transmit queue had no room: the answer as JSON text, written later.
    Ready(Result<String, RpcError>),
    /// Still running: the driver spawns it (under the concurrency limit).
    Pending(BoxFuture<Result<String, RpcError>>),
}

/// A request handler after type erasure: it decodes the params from the received bytes,
/// runs, and when it finishes at once serializes its result straight into the connection.
pub(crate) type MethodFn = Arc<
    dyn Fn(&Origin<'_>, Option<RawJson<'_>>, &mut Conn, RequestHandle) -> Outcome + Send + Sync,
>;

/// A notification handler after type erasure: `Some` when it did not finish at once.
pub(crate) type NotifyFn =
    Arc<dyn Fn(&Origin<'_>, Option<RawJson<'_>>) -> Option<BoxFuture<()>> + Send + Sync>;

/// Polls a future once, in the driver: a handler that never waits costs no task. A future
/// that is not ready is spawned afterwards; its task polls it again at once with a real
/// waker, so the no-op waker given here loses nothing.
pub(crate) fn poll_once<T>(fut: &mut BoxFuture<T>) -> Poll<T> {
    let mut cx = TaskContext::from_waker(Waker::noop());
    fut.as_mut().poll(&mut cx)
}

/// Writes a handler's outcome into the connection (see [`Outcome`]).
pub(crate) fn answer<R: Serialize + ?Sized>(
    conn: &mut Conn,
    handle: RequestHandle,
    result: Result<&R, &RpcError>,
) -> Outcome {
    let written = match result {
        Ok(v) => conn.respond(handle, v),
        Err(e) => conn.respond_error(handle, e.error_code(), Some(&e.message), e.data.as_deref()),
    };
    match written {
        Ok(()) | Err(RespondError::UnknownHandle) => {
            rpcwire_telemetry::body_log::note_answer(|| match result {
                Ok(v) => serde_json::to_string(v).ok(),
                Err(e) => rpcwire_telemetry::body_log::error_json(e),
            });
            Outcome::Done(result.err().map(|e| e.code))
        }
        Err(RespondError::WouldBlock { .. }) => Outcome::Ready(match result {
            Ok(v) => to_json(v),
            Err(e) => Err(e.clone()),
        }),
        Err(RespondError::TooLarge { required }) => {
            tracing::warn!(required, "answer too large: sent Internal error instead");
            Outcome::Done(Some(ErrorCode::INTERNAL_ERROR.0))
        }
        Err(RespondError::Serialize(e)) => {
            tracing::warn!(error = %e, "answer not serializable: sending Internal error");
            let _ = conn.reject(handle, ErrorCode::INTERNAL_ERROR);
            Outcome::Done(Some(ErrorCode::INTERNAL_ERROR.0))
        }
    }
}

fn to_json<R: Serialize + ?Sized>(value: &R) -> Result<String, RpcError> {
    serde_json::to_string(value)
        .map_err(|e| RpcError::internal(format!("cannot serialize result: {e}")))
}
pub(crate) fn decode<P: DeserializeOwned>(params: Option<RawJson<'_>>) -> Result<P, RpcError> {
    // From the bytes: serde_json checks the UTF-8 of what it reads itself.
    serde_json::from_slice(params.map_or(&b"null"[..], |p| p.as_bytes()))
        .map_err(RpcError::invalid_params)
}
/// A typed request handler after type erasure: decodes the params, polls the handler once in
/// the driver (answering at once when it is ready) and leaves the rest to a task.
pub(crate) fn erase<P, R, F, Fut>(start: F) -> MethodFn
where
    P: DeserializeOwned + Send + 'static,
    R: Serialize + 'static,
    F: Fn(&Origin<'_>, P) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
{
    Arc::new(move |origin, params, conn, handle| {
        let p = match decode::<P>(params) {
            Ok(p) => p,
            Err(e) => return answer::<()>(conn, handle, Err(&e)),
        };
        // The first poll, in place: in the call's unsampled trace, if it has one (a sync
        // handler, run in place too, cannot start an outgoing call: none is held for it).
        let (fut, first) = rpcwire_telemetry::sampling::in_trace(&origin.unsampled, || {
            let mut fut: BoxFuture<Result<R, RpcError>> = Box::pin(start(origin, p));
            let first = poll_once(&mut fut);
            (fut, first)
        });
        match first {
            Poll::Ready(result) => answer(conn, handle, origin.scrubbed(result).as_ref()),
            Poll::Pending => {
                let show = origin.shows_details();
                Outcome::Pending(Box::pin(async move {
                    let json = match fut.await {
                        Ok(value) => to_json(&value),
                        Err(e) => Err(e),
                    };
                    // Runs in the request's span, which names the method.
                    json.map_err(|e| scrub(e, None, show))
                }))
            }
        }
    })
}

/// The handler a request refused by the access rules runs in place of its own: it answers
/// [`FORBIDDEN`](crate::FORBIDDEN) with a generic message (who was refused, and for what,
/// goes to the log at debug level).
pub(crate) fn forbidden() -> &'static MethodFn {
    static DENY: std::sync::OnceLock<MethodFn> = std::sync::OnceLock::new();
    DENY.get_or_init(|| {
        refusal(
            crate::FORBIDDEN,
            crate::access::FORBIDDEN_MESSAGE,
            "refused by the access rules",
        )
    })
}

/// The handler a request over its caller's rate limit runs in place of its own: it answers
/// [`RATE_LIMITED`](crate::RATE_LIMITED).
pub(crate) fn rate_limited() -> &'static MethodFn {
    static LIMITED: std::sync::OnceLock<MethodFn> = std::sync::OnceLock::new();
    LIMITED.get_or_init(|| {
        refusal(
            crate::RATE_LIMITED,
            crate::ratelimit::RATE_LIMITED_MESSAGE,
            "over the caller's rate limit",
        )
    })
}

/// The handler a request that arrives while the service drains runs in place of its own: it
/// answers [`SHUTTING_DOWN`](crate::SHUTTING_DOWN).
pub(crate) fn shutting_down() -> &'static MethodFn {
    static DRAINING: std::sync::OnceLock<MethodFn> = std::sync::OnceLock::new();
    DRAINING.get_or_init(|| {
        refusal(
            crate::SHUTTING_DOWN,
            crate::SHUTTING_DOWN_MESSAGE,
            "the server is shutting down",
        )
    })
}

/// A handler that answers `code` and `message`, and logs `why` at debug level.
fn refusal(code: ErrorCode, message: &'static str, why: &'static str) -> MethodFn {
    Arc::new(move |origin, _params, conn, handle| {
        tracing::debug!(
            method = origin.method,
            subject = origin.caller.identity().subject(),
            "call {why}"
        );
        answer::<()>(conn, handle, Err(&RpcError::new(code, message)))
    })
}

/// Runs a handler's first step in the driver, turning a panic into `Err(())`.
#[inline(always)] // once per call, around every handler: its glue then goes with its caller's
pub(crate) fn guarded<T>(f: impl FnOnce() -> T) -> Result<T, ()> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|_| ())
}

/// Runs a future, turning a panic during any poll into `Err(())`.
pub(crate) struct CatchUnwind<T>(pub(crate) BoxFuture<T>);

impl<T> Future for CatchUnwind<T> {
    type Output = Result<T, ()>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let fut = &mut self.0;
        match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => Poll::Ready(Err(())),
        }
    }
}
