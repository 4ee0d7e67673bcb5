//! What a handler knows about the message it handles: its [`Context`] (made only for a
//! handler that asks), the request's [`Cancellation`], and how internal errors are kept from
//! callers without the right to their details.

use std::sync::Arc;

use crate::caller::Caller;
use crate::identity::Identity;
use crate::{Client, ErrorCode, RpcError};

/// What the driver knows about an inbound message while a handler starts: borrowed, so that
/// a handler that needs no [`Context`] costs no copy.
pub(crate) struct Origin<'a> {
    pub(crate) peer: &'a Client,
    /// The request's cancellation signal, made when a handler asks for a [`Context`].
    pub(crate) cancel: std::cell::OnceCell<Cancellation>,
    /// The router's shared state, if it has one.
    pub(crate) state: Option<&'a SharedState>,
    /// The id's JSON text (`None` for a notification), read only if a handler asks for it.
    pub(crate) id: Option<OriginId<'a>>,
    pub(crate) method: &'a str,
    /// Who sent the message.
    pub(crate) caller: &'a Arc<Caller>,
    /// Who may see the details of internal errors ([`Router::show_error_details`]).
    pub(crate) details: Option<&'a DetailPolicy>,
    /// The trace id of the call if it is not sampled (0 otherwise; see `sampling`): held
    /// while an async handler's future is first polled, in place (`erase`), where it may
    /// start an outgoing call; a root's id drawn then is kept here for the polls after it.
    pub(crate) unsampled: std::cell::Cell<u128>,
}

/// A request id as the driver has it: still in the receive buffer, or copied into a queued
/// job.
#[derive(Clone, Copy)]
pub(crate) enum OriginId<'a> {
    Wire(rpcwire::wire::Id<'a>),
    Text(&'a str),
}

impl<'a> OriginId<'a> {
    /// The id's JSON text.
    pub(crate) fn text(self) -> &'a str {
        match self {
            OriginId::Wire(id) => id.raw(),
            OriginId::Text(text) => text,
        }
    }
}

impl Origin<'_> {
    /// Whether this message's caller may see the details of internal errors.
    pub(crate) fn shows_details(&self) -> bool {
        self.details
            .is_some_and(|show| show(self.caller.identity()))
    }

    /// `result` as its caller may see it (see [`Router::show_error_details`]).
    pub(crate) fn scrubbed<R>(&self, result: Result<R, RpcError>) -> Result<R, RpcError> {
        result.map_err(|e| scrub(e, Some(self.method), self.shows_details()))
    }

    pub(crate) fn context(&self) -> Context {
        Context {
            peer: self.peer.clone(),
            id: self.id.map(|id| id.text().to_owned()),
            method: self.method.to_owned(),
            state: self.state.cloned(),
            cancel: self.cancel.get_or_init(Cancellation::default).clone(),
            caller: Arc::clone(self.caller),
        }
    }
}

/// A request's cancellation signal (see [`Context::cancelled`]).
#[derive(Debug, Clone, Default)]
pub struct Cancellation(Arc<CancelState>);

#[derive(Debug, Default)]
struct CancelState {
    fired: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Cancellation {
    /// True once the request is cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.fired.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Completes when the request is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so that a `fire` in between is not lost.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }

    pub(crate) fn fire(&self) {
        self.0
            .fired
            .store(true, std::sync::atomic::Ordering::Release);
        self.0.notify.notify_waiters();
    }
}

/// Decides from a caller's identity whether it may see the details of internal errors
/// ([`Router::show_error_details`]).
pub type DetailPolicy = Arc<dyn Fn(&Identity) -> bool + Send + Sync>;

/// An internal error as a caller without the right to its details sees it: the standard
/// message and no data, the detail logged at warn level instead. Other errors are the
/// handler's own words to its caller and pass unchanged.
pub(crate) fn scrub(error: RpcError, method: Option<&str>, show: bool) -> RpcError {
    if show || error.code != ErrorCode::INTERNAL_ERROR.0 {
        return error;
    }
    if error.data.is_some() || error.message != ErrorCode::INTERNAL_ERROR.message() {
        tracing::warn!(
            method = method.unwrap_or_default(),
            message = %error.message,
            data = error.data.as_ref().map_or("", |d| d.get()),
            "internal error (details kept from the caller)"
        );
    }
    RpcError::standard(ErrorCode::INTERNAL_ERROR)
}

/// A router's shared state (see [`Router::with_state`](crate::Router::with_state)).
pub(crate) type SharedState = Arc<dyn std::any::Any + Send + Sync>;
/// What a handler knows about the message it handles, and a handle to call the peer back on
/// the same connection.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) peer: Client,
    pub(crate) id: Option<String>,
    pub(crate) method: String,
    pub(crate) state: Option<SharedState>,
    pub(crate) cancel: Cancellation,
    pub(crate) caller: Arc<Caller>,
}

impl Context {
    /// Who sent this message: the [`Identity`] its transport established (anonymous on a
    /// transport without an authenticator; the local process on stdio and a child's pipes).
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
    /// let router = Router::new().method_with_context("whoami", |ctx, _: ()| async move {
    ///     Ok::<_, RpcError>(ctx.identity().subject().to_owned())
    /// });
    /// # assert!(router.has_method("whoami"));
    /// ```
    pub fn identity(&self) -> &Identity {
        self.caller.identity()
    }

    /// What the transport knows about the caller: its identity, the transport, the peer's
    /// address, its TLS client certificate, and transport metadata such as HTTP headers.
    pub fn caller(&self) -> &Caller {
        &self.caller
    }

    /// A client for the peer that sent this message (calls go out on the same connection).
    pub fn peer(&self) -> &Client {
        &self.peer
    }

    /// The request's id as JSON text (`None` for a notification).
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
    }

    /// The method name.
    pub fn method(&self) -> &str {
        &self.method
    }

    /// Completes when this request is cancelled: the peer sent the cancel notification of
    /// the connection's profile for it ([`Service::cancel_notification`](crate::Service::cancel_notification):
    /// `$/cancelRequest` for LSP, `notifications/cancelled` for MCP; an rpcwire client sends it
    /// when a call times out or its future is dropped), or the connection failed (its handler
    /// tasks are then stopped). A handler that stops then returns whatever it likes: it is
    /// the answer, unless the profile leaves cancelled requests unanswered
    /// ([`Service::answer_cancelled`](crate::Service::answer_cancelled), MCP's rule).
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError, ErrorCode};
    /// let router = Router::new().method_with_context("work", |ctx, (ms,): (u64,)| async move {
    ///     tokio::select! {
    ///         () = tokio::time::sleep(std::time::Duration::from_millis(ms)) => Ok(ms),
    ///         () = ctx.cancelled() => Err(RpcError::new(ErrorCode(-32800), "cancelled")),
    ///     }
    /// });
    /// # assert!(router.has_method("work"));
    /// ```
    pub async fn cancelled(&self) {
        self.cancel.cancelled().await
    }

    /// True once this request is cancelled (see [`cancelled`](Context::cancelled)).
    pub fn is_cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// The router's shared state ([`Router::with_state`](crate::Router::with_state)), if it is a `T`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.as_deref()?.downcast_ref()
    }
}
