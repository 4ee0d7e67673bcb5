//! The method router: async handlers by method name, with typed params.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll, Waker};

use rpcwire::storage::Heap;
use rpcwire::wire::RawJson;
use rpcwire::{Connection, ErrorCode, RequestHandle, RespondError};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::access::{role_list, Access, Policy};
use crate::caller::{Caller, Identity};
use crate::{Client, RpcError};

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// The connection every tokio driver runs: heap storage that grows on demand and shrinks back.
pub(crate) type Conn = Connection<Heap>;

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
    fn shows_details(&self) -> bool {
        self.details
            .is_some_and(|show| show(self.caller.identity()))
    }

    /// `result` as its caller may see it (see [`Router::show_error_details`]).
    fn scrubbed<R>(&self, result: Result<R, RpcError>) -> Result<R, RpcError> {
        result.map_err(|e| scrub(e, Some(self.method), self.shows_details()))
    }

    fn context(&self) -> Context {
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

/// A router's shared state (see [`Router::with_state`]).
pub(crate) type SharedState = Arc<dyn std::any::Any + Send + Sync>;

/// Method names are short and chosen by the application: a multiply-rotate hash over 8-byte
/// words (as rustc's FxHasher) looks them up several times faster than the default SipHash,
/// whose flooding resistance buys nothing for a table the peer cannot add to.
#[derive(Default, Clone, Copy)]
pub(crate) struct NameHasher(u64);

impl std::hash::Hasher for NameHasher {
    fn write(&mut self, bytes: &[u8]) {
        const K: u64 = 0x517c_c1b7_2722_0a95;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(c);
            self.0 = (self.0.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(K);
        }
        for &b in chunks.remainder() {
            self.0 = (self.0.rotate_left(5) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Handlers by name: in registration order, with an index from the name's bytes (method names
/// are looked up as they are on the wire, with no UTF-8 view), so that a driver can also
/// remember the position of the last one it used.
#[derive(Clone)]
struct Names<V> {
    entries: Vec<(String, V)>,
    index: HashMap<Box<[u8]>, usize, std::hash::BuildHasherDefault<NameHasher>>,
}

impl<V> Default for Names<V> {
    fn default() -> Self {
        Names {
            entries: Vec::new(),
            index: HashMap::default(),
        }
    }
}

impl<V> Names<V> {
    fn insert(&mut self, name: &str, value: V) {
        match self.index.get(name.as_bytes()) {
            Some(&at) => {
                if let Some(entry) = self.entries.get_mut(at) {
                    entry.1 = value;
                }
            }
            None => {
                self.index
                    .insert(name.as_bytes().into(), self.entries.len());
                self.entries.push((name.to_owned(), value));
            }
        }
    }

    fn find(&self, name: &[u8]) -> Option<usize> {
        self.index.get(name).copied()
    }

    fn at(&self, position: usize) -> Option<&(String, V)> {
        self.entries.get(position)
    }

    fn names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.entries.iter().map(|(n, _)| n.as_str()).collect();
        names.sort_unstable();
        names
    }
}

/// A registered handler, and whether it reads a [`Context`] (a handler that does may call or
/// notify the peer, so it needs a connection; one that does not can also run in a
/// [`Responder`](crate::Responder)).
#[derive(Clone)]
pub(crate) struct Entry<F> {
    pub(crate) run: F,
    pub(crate) context: bool,
    /// The method's metric handles, found on its first measured call and kept here, so that
    /// a call finds them with no lookup by name (empty without the feature `metrics`).
    pub(crate) meter: crate::telemetry::MethodMeter,
}

impl<F> Entry<F> {
    fn new(run: F, context: bool) -> Self {
        Entry {
            run,
            context,
            meter: crate::telemetry::MethodMeter::default(),
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
fn poll_once<T>(fut: &mut BoxFuture<T>) -> Poll<T> {
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
            crate::body_log::note_answer(|| match result {
                Ok(v) => serde_json::to_string(v).ok(),
                Err(e) => crate::body_log::error_json(e),
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
    /// use rpcwire_tokio::{Router, RpcError};
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
    /// the connection's profile for it ([`Builder::cancel_notification`](crate::Builder::cancel_notification):
    /// `$/cancelRequest` for LSP, `notifications/cancelled` for MCP; an rpcwire client sends it
    /// when a call times out or its future is dropped), or the connection failed (its handler
    /// tasks are then stopped). A handler that stops then returns whatever it likes: it is
    /// the answer, unless the profile leaves cancelled requests unanswered
    /// ([`Builder::answer_cancelled`](crate::Builder::answer_cancelled), MCP's rule).
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError, ErrorCode};
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

    /// The router's shared state ([`Router::with_state`]), if it is a `T`.
    pub fn state<T: Send + Sync + 'static>(&self) -> Option<&T> {
        self.state.as_deref()?.downcast_ref()
    }
}

/// Async handlers by method name.
///
/// Params are decoded with serde from the request's `params` (absent params decode from
/// `null`, so `()` and `Option<T>` accept them): a decoding failure answers Invalid params
/// (-32602) with the decoder's message as `data`. A method not registered answers Method not
/// found (-32601). A handler's [`RpcError`] is sent as is, and a handler that panics answers
/// Internal error (-32603) while the connection goes on.
///
/// ```
/// use rpcwire_tokio::{ErrorCode, Router, RpcError};
/// use serde::Deserialize;
///
/// #[derive(Deserialize)]
/// struct Greet { name: String }
///
/// let router = Router::new()
///     .method("add", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a + b) })
///     .method("greet", |p: Greet| async move { Ok::<_, RpcError>(format!("hello, {}", p.name)) })
///     .method("fail", |_: ()| async move {
///         Err::<(), _>(RpcError::new(ErrorCode(-32000), "always fails"))
///     })
///     .method_with_context("whoami", |ctx, _: ()| async move {
///         // ctx.peer() calls the peer back on the same connection.
///         Ok::<_, RpcError>(ctx.id().unwrap_or("").to_owned())
///     })
///     .notification("log", |line: Vec<String>| async move { println!("{line:?}") });
/// assert!(router.has_method("add"));
/// ```
#[derive(Clone, Default)]
pub struct Router {
    methods: Names<Entry<MethodFn>>,
    notifications: Names<Entry<NotifyFn>>,
    state: Option<SharedState>,
    /// Descriptions for the `rpc.discover` document ([`Router::describe`]).
    pub(crate) descriptions: Vec<(String, String)>,
    /// The handler of notifications no other handler takes ([`Router::fallback_notification`]).
    fallback: Option<Entry<NotifyFn>>,
    /// The handler of requests no other handler takes ([`Router::fallback_method`]).
    fallback_method: Option<Entry<MethodFn>>,
    /// Who may call what ([`Router::require`], [`Router::policy`]).
    pub(crate) access: Access,
    /// Who may see internal errors' details ([`Router::show_error_details`]).
    details: Option<DetailPolicy>,
    /// What the `rpc.discover` document says of each method beyond its name.
    pub(crate) docs: crate::discover::Docs,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("methods", &self.methods.names())
            .field("notifications", &self.notifications.names())
            .finish()
    }
}

fn decode<P: DeserializeOwned>(params: Option<RawJson<'_>>) -> Result<P, RpcError> {
    // From the bytes: serde_json checks the UTF-8 of what it reads itself.
    serde_json::from_slice(params.map_or(&b"null"[..], |p| p.as_bytes()))
        .map_err(RpcError::invalid_params)
}

impl Router {
    /// An empty router (every request answers Method not found).
    pub fn new() -> Self {
        Router::default()
    }

    /// Shares `state` with every handler of this router, on every connection (a database pool,
    /// counters, configuration): handlers registered with a context read it with
    /// [`Context::state`]. One state per router; a second call replaces the first.
    ///
    /// ```
    /// use std::sync::atomic::{AtomicU64, Ordering};
    /// use rpcwire_tokio::{ErrorCode, Router, RpcError};
    ///
    /// struct Counter(AtomicU64);
    /// let router = Router::new()
    ///     .with_state(Counter(AtomicU64::new(0)))
    ///     .method_with_context("next", |ctx, _: ()| async move {
    ///         let counter = ctx
    ///             .state::<Counter>()
    ///             .ok_or_else(|| RpcError::standard(ErrorCode::INTERNAL_ERROR))?;
    ///         Ok::<_, RpcError>(counter.0.fetch_add(1, Ordering::Relaxed))
    ///     });
    /// assert!(router.has_method("next"));
    /// ```
    pub fn with_state<T: Send + Sync + 'static>(mut self, state: T) -> Self {
        self.state = Some(Arc::new(state));
        self
    }

    pub(crate) fn state(&self) -> Option<&SharedState> {
        self.state.as_ref()
    }

    /// Only callers holding at least one of `roles` (or OAuth scopes) may call `method`
    /// (an empty list: every caller, overriding [`require_by_default`](Router::require_by_default)).
    /// Another caller's request is answered [`FORBIDDEN`](crate::FORBIDDEN) (-32040,
    /// `"Forbidden"`) and its notification dropped, without the handler running; inside a
    /// batch only the members it may not make are refused. `rpc.discover` lists only the
    /// methods the caller may call, and a method nobody registered stays Method not found.
    /// The local process ([`Identity::local`]: stdio, a child's pipes) holds every role.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
    /// let router = Router::new()
    ///     .sync_method("status", |_: ()| Ok::<_, RpcError>("ok"))
    ///     .sync_method("reset", |_: ()| Ok::<_, RpcError>("done"))
    ///     .require("reset", ["admin"]);
    /// # assert!(router.has_method("reset"));
    /// ```
    pub fn require<I, S>(mut self, method: &str, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.access.require(method, role_list(roles));
        self
    }

    /// Roles every method without a rule of its own ([`require`](Router::require)) needs,
    /// the fallback handlers' included (`rpc.discover` stays open to every caller, and shows
    /// each only what it may call).
    pub fn require_by_default<I, S>(mut self, roles: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.access.require_by_default(role_list(roles));
        self
    }

    /// A function that decides, from the caller's identity and the method name, whether a
    /// call may go ahead: both it and the role rules must allow it. It runs for every
    /// inbound request and notification, so keep it quick.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
    /// // Methods under "admin." only for subjects of the ops team.
    /// let router = Router::new()
    ///     .sync_method("admin.reset", |_: ()| Ok::<_, RpcError>(()))
    ///     .policy(|identity, method| !method.starts_with("admin.") || identity.subject().starts_with("ops-"));
    /// # assert!(router.has_method("admin.reset"));
    /// ```
    pub fn policy(
        mut self,
        policy: impl Fn(&Identity, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        let policy: Policy = Arc::new(policy);
        self.access.set_policy(policy);
        self
    }

    /// Who may see the details of internal errors. By default nobody: a handler that
    /// panics or returns Internal error (-32603) answers `{"code":-32603,"message":"Internal
    /// error"}`, and its message and `data` go to the server's log (warn level) only. Callers
    /// for whom `show` is true get the handler's message and `data` as they are (operators,
    /// tests). Other error codes are the handler's own words and always pass unchanged.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
    /// let router = Router::new()
    ///     .sync_method("load", |_: ()| Err::<(), _>(RpcError::internal("db at 10.0.0.5 refused")))
    ///     .show_error_details(|identity| identity.has_role("operator"));
    /// # assert!(router.has_method("load"));
    /// ```
    pub fn show_error_details(
        mut self,
        show: impl Fn(&Identity) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.details = Some(Arc::new(show));
        self
    }

    pub(crate) fn details(&self) -> Option<&DetailPolicy> {
        self.details.as_ref()
    }

    /// Whether `identity` may call `method` under this router's rules.
    #[inline]
    pub fn permits(&self, identity: &Identity, method: &str) -> bool {
        self.access.permits(identity, method)
    }

    /// Registers a request handler taking typed params.
    pub fn method<P, R, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.register(name, false, move |_: &Origin<'_>, p: P| handler(p))
    }

    /// Registers a request handler that also receives the [`Context`] (to call the peer back,
    /// or read the request id).
    pub fn method_with_context<P, R, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.register(name, true, move |origin: &Origin<'_>, p: P| {
            handler(origin.context(), p)
        })
    }

    /// Registers a handler that computes its answer without waiting: it runs in the
    /// connection's driver, with no future, no task and no copy of the params, and its result
    /// is serialized straight into the transmit queue. For quick work only: a slow one holds
    /// up its connection.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
    /// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
    /// assert!(router.has_method("add"));
    /// ```
    pub fn sync_method<P, R, F>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + 'static,
        R: Serialize + 'static,
        F: Fn(P) -> Result<R, RpcError> + Send + Sync + 'static,
    {
        let mut router =
            self.raw_method(name, move |params| decode::<P>(params).and_then(&handler));
        router.docs.typed::<P>(name);
        router
    }

    /// Like [`sync_method`](Router::sync_method), with the params as rpcwire's validated,
    /// borrowed JSON view ([`RawJson`]: walk it, or decode parts of it, without copying;
    /// `None` when the request has no params).
    ///
    /// ```
    /// use rpcwire_tokio::{ErrorCode, Router, RpcError};
    /// let router = Router::new().raw_method("count", |params| {
    ///     let params = params.ok_or_else(|| RpcError::standard(ErrorCode::INVALID_PARAMS))?;
    ///     Ok::<_, RpcError>(params.elements().count())
    /// });
    /// assert!(router.has_method("count"));
    /// ```
    pub fn raw_method<R, F>(mut self, name: &str, handler: F) -> Self
    where
        R: Serialize + 'static,
        F: Fn(Option<RawJson<'_>>) -> Result<R, RpcError> + Send + Sync + 'static,
    {
        let f: MethodFn = Arc::new(move |origin, params, conn, handle| {
            let result = origin.scrubbed(handler(params));
            answer(conn, handle, result.as_ref())
        });
        self.methods.insert(name, Entry::new(f, false));
        self
    }

    /// Registers a handler already erased (one that reads no [`Context`]).
    pub(crate) fn insert_method_fn(mut self, name: &str, run: MethodFn) -> Self {
        self.methods.insert(name, Entry::new(run, false));
        self
    }

    fn register<P, R, F, Fut>(mut self, name: &str, context: bool, start: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(&Origin<'_>, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.docs.typed::<P>(name);
        self.methods.insert(name, Entry::new(erase(start), context));
        self
    }

    /// Registers the handler of every request whose method has no handler of its own (a
    /// proxy that forwards whatever it is asked, say): it gets the [`Context`] (the method is
    /// [`Context::method`]) and the params as raw JSON (`None` when absent). Without one, such
    /// a request is answered Method not found.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
    /// let router = Router::new().fallback_method(|ctx, params| async move {
    ///     // Forward to another peer, log, or answer by name.
    ///     Ok::<_, RpcError>(format!("{} {}", ctx.method(), params.map_or("null".into(), |p| p.get().to_owned())))
    /// });
    /// ```
    pub fn fallback_method<R, F, Fut>(mut self, handler: F) -> Self
    where
        R: Serialize + 'static,
        F: Fn(Context, Option<Box<serde_json::value::RawValue>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        // `Option<Box<RawValue>>` decodes absent params (null) as `None`, any other as raw.
        self.fallback_method = Some(Entry::new(
            erase(move |origin: &Origin<'_>, params| handler(origin.context(), params)),
            true,
        ));
        self
    }

    /// Registers a notification handler (notifications are never answered; params that do not
    /// decode are logged at warn level, with the method and the decoder's message, and
    /// dropped).
    pub fn notification<P, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.register_notification(name, false, move |_: &Origin<'_>, p: P| handler(p))
    }

    /// Registers a notification handler that also receives the [`Context`].
    pub fn notification_with_context<P, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.register_notification(name, true, move |origin: &Origin<'_>, p: P| {
            handler(origin.context(), p)
        })
    }

    fn register_notification<P, F, Fut>(mut self, name: &str, context: bool, start: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(&Origin<'_>, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let f: NotifyFn = Arc::new(move |origin, params| {
            let p = match decode::<P>(params) {
                Ok(p) => p,
                Err(e) => {
                    let detail = e.data.as_ref().map_or("", |d| d.get());
                    tracing::warn!(
                        method = origin.method,
                        error = detail,
                        "notification params do not decode: dropped"
                    );
                    return None;
                }
            };
            let mut fut: BoxFuture<()> = Box::pin(start(origin, p));
            match poll_once(&mut fut) {
                Poll::Ready(()) => None,
                Poll::Pending => Some(fut),
            }
        });
        self.notifications.insert(name, Entry::new(f, context));
        self
    }

    /// Registers the handler of every notification that has no handler of its own (a monitor
    /// that prints whatever the peer sends, say): it gets the [`Context`] (the method is
    /// [`Context::method`]) and the params as raw JSON (`None` when absent).
    ///
    /// ```
    /// use rpcwire_tokio::Router;
    /// let router = Router::new().fallback_notification(|ctx, params| async move {
    ///     println!("{} {}", ctx.method(), params.map_or("null".into(), |p| p.get().to_owned()));
    /// });
    /// ```
    pub fn fallback_notification<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Context, Option<Box<serde_json::value::RawValue>>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let f: NotifyFn = Arc::new(move |origin, params| {
            let params = params
                .and_then(|p| serde_json::value::RawValue::from_string(p.as_str().to_owned()).ok());
            let mut fut: BoxFuture<()> = Box::pin(handler(origin.context(), params));
            match poll_once(&mut fut) {
                Poll::Ready(()) => None,
                Poll::Pending => Some(fut),
            }
        });
        self.fallback = Some(Entry::new(f, true));
        self
    }

    /// True when a request handler is registered under `name`.
    pub fn has_method(&self, name: &str) -> bool {
        self.methods.find(name.as_bytes()).is_some()
    }

    /// The registered notification names, sorted.
    pub fn notification_names(&self) -> Vec<&str> {
        self.notifications.names()
    }

    /// The registered request method names, sorted.
    pub fn method_names(&self) -> Vec<&str> {
        self.methods.names()
    }

    /// The handler a request with this method name (as on the wire, still escaped) runs: the
    /// one registered under it, else the fallback. `last` is a position to try first, by a
    /// byte comparison before the index: pipelined traffic calls one method again and again.
    pub(crate) fn request_handler(&self, name: &[u8], last: Option<usize>) -> Option<Found<'_>> {
        self.find_method(name, last).map(|(found, _)| found)
    }

    /// [`request_handler`](Self::request_handler), and whether that handler reads a
    /// [`Context`].
    pub(crate) fn find_method(
        &self,
        name: &[u8],
        last: Option<usize>,
    ) -> Option<(Found<'_>, bool)> {
        let named = last
            .filter(|&at| {
                self.methods
                    .at(at)
                    .is_some_and(|(n, _)| same_bytes(n.as_bytes(), name))
            })
            .or_else(|| self.methods.find(name))
            .and_then(|at| self.methods.at(at).map(|(n, e)| (at, n, e)));
        match named {
            Some((at, name, e)) => Some((
                Found::Named {
                    at,
                    name,
                    run: &e.run,
                    meter: &e.meter,
                },
                e.context,
            )),
            None => self
                .fallback_method
                .as_ref()
                .map(|e| (Found::Fallback(&e.run), e.context)),
        }
    }

    /// The entry a notification with this method name (as on the wire) runs: the one
    /// registered under it, else the fallback.
    fn notification_entry(&self, name: &[u8]) -> Option<&Entry<NotifyFn>> {
        match self.notifications.find(name) {
            Some(at) => self.notifications.at(at).map(|(_, e)| e),
            None => self.fallback.as_ref(),
        }
    }

    /// Whether any handler reads a [`Context`].
    pub(crate) fn reads_context_anywhere(&self) -> bool {
        self.methods.entries.iter().any(|(_, e)| e.context)
            || self.notifications.entries.iter().any(|(_, e)| e.context)
            || self.fallback_method.as_ref().is_some_and(|e| e.context)
            || self.fallback.as_ref().is_some_and(|e| e.context)
    }

    /// Whether the handler a message with this method (as on the wire) would run reads a
    /// [`Context`]; false when no handler would run (Method not found, or a notification
    /// ignored).
    pub(crate) fn reads_context(&self, name: &[u8], request: bool) -> bool {
        if request {
            self.find_method(name, None)
                .is_some_and(|(_, context)| context)
        } else {
            self.notification_entry(name).is_some_and(|e| e.context)
        }
    }

    pub(crate) fn get_notification(&self, name: &str) -> Option<&NotifyFn> {
        self.notification_entry(name.as_bytes()).map(|e| &e.run)
    }
}

/// The handler a request runs ([`Router::request_handler`]).
pub(crate) enum Found<'a> {
    /// Registered under the request's method name, at this position.
    Named {
        at: usize,
        name: &'a str,
        run: &'a MethodFn,
        /// Its metric handles.
        meter: &'a crate::telemetry::MethodMeter,
    },
    /// The fallback: it runs under the name on the wire.
    Fallback(&'a MethodFn),
}

impl<'a> Found<'a> {
    /// The handler.
    pub(crate) fn run(&self) -> &'a MethodFn {
        match self {
            Found::Named { run, .. } | Found::Fallback(run) => run,
        }
    }
}

/// A typed request handler after type erasure: decodes the params, polls the handler once in
/// the driver (answering at once when it is ready) and leaves the rest to a task.
fn erase<P, R, F, Fut>(start: F) -> MethodFn
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
        let (fut, first) = crate::sampling::in_trace(&origin.unsampled, || {
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

/// `a == b`, eight bytes at a time with no call: a method name is compared with the one
/// called last on every request, and most names are short.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let (mut x, mut y) = (a.chunks_exact(8), b.chunks_exact(8));
    let word = |w: &[u8]| u64::from_ne_bytes(w.try_into().unwrap_or([0; 8]));
    x.by_ref().zip(y.by_ref()).all(|(p, q)| word(p) == word(q))
        && x.remainder().iter().zip(y.remainder()).all(|(p, q)| p == q)
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

#[cfg(test)]
mod tests {
    use super::same_bytes;

    /// Equal to slice equality for every length up to three words, with one byte changed at
    /// every place, and for different lengths.
    #[test]
    fn same_bytes_is_slice_equality() {
        let base: Vec<u8> = (0..24u8).map(|b| b.wrapping_mul(37)).collect();
        for len in 0..=base.len() {
            let a = &base[..len];
            assert!(same_bytes(a, a));
            for at in 0..len {
                let mut b = a.to_vec();
                b[at] ^= 0x20;
                assert_eq!(same_bytes(a, &b), a == &b[..], "len {len}, byte {at}");
                assert!(!same_bytes(a, &b));
            }
            if len > 0 {
                assert!(!same_bytes(a, &base[..len - 1]));
            }
        }
    }
}
