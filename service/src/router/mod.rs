//! The method router: handlers by method name, with typed params, access rules, shared
//! state and the `rpc.discover` document.

mod context;
mod discover;
mod docs;
mod erase;
mod names;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::task::Poll;

use rpcwire::wire::RawJson;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::access::{role_list, Access, Policy};
use crate::identity::Identity;
use crate::RpcError;

pub use context::{Cancellation, Context, DetailPolicy};
pub(crate) use context::{Origin, OriginId, SharedState};
pub(crate) use erase::{
    answer, decode, erase, forbidden, guarded, poll_once, rate_limited, shutting_down, BoxFuture,
    CatchUnwind, Entry, MethodFn, NotifyFn, Outcome,
};
use names::{same_bytes, Names};

/// Async handlers by method name.
///
/// Params are decoded with serde from the request's `params` (absent params decode from
/// `null`, so `()` and `Option<T>` accept them): a decoding failure answers Invalid params
/// (-32602) with the decoder's message as `data`. A method not registered answers Method not
/// found (-32601). A handler's [`RpcError`] is sent as is, and a handler that panics answers
/// Internal error (-32603) while the connection goes on.
///
/// ```
/// use rpcwire_service::{ErrorCode, Router, RpcError};
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
    pub(crate) docs: docs::Docs,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Router")
            .field("methods", &self.methods.names())
            .field("notifications", &self.notifications.names())
            .finish()
    }
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
    /// use rpcwire_service::{ErrorCode, Router, RpcError};
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
    /// use rpcwire_service::{Router, RpcError};
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
    /// use rpcwire_service::{Router, RpcError};
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
    /// use rpcwire_service::{Router, RpcError};
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
        self.register(name, move |_: &Origin<'_>, p: P| handler(p))
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
        self.register(name, move |origin: &Origin<'_>, p: P| {
            handler(origin.context(), p)
        })
    }

    /// Registers a handler that computes its answer without waiting: it runs in the
    /// connection's driver, with no future, no task and no copy of the params, and its result
    /// is serialized straight into the transmit queue. For quick work only: a slow one holds
    /// up its connection.
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
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
    /// use rpcwire_service::{ErrorCode, Router, RpcError};
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
        self.methods.insert(name, Entry::new(f));
        self
    }

    /// Registers a handler already erased (one that reads no [`Context`]).
    pub(crate) fn insert_method_fn(mut self, name: &str, run: MethodFn) -> Self {
        self.methods.insert(name, Entry::new(run));
        self
    }

    fn register<P, R, F, Fut>(mut self, name: &str, start: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(&Origin<'_>, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.docs.typed::<P>(name);
        self.methods.insert(name, Entry::new(erase(start)));
        self
    }

    /// Registers the handler of every request whose method has no handler of its own (a
    /// proxy that forwards whatever it is asked, say): it gets the [`Context`] (the method is
    /// [`Context::method`]) and the params as raw JSON (`None` when absent). Without one, such
    /// a request is answered Method not found.
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
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
        self.fallback_method = Some(Entry::new(erase(move |origin: &Origin<'_>, params| {
            handler(origin.context(), params)
        })));
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
        self.register_notification(name, move |_: &Origin<'_>, p: P| handler(p))
    }

    /// Registers a notification handler that also receives the [`Context`].
    pub fn notification_with_context<P, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.register_notification(name, move |origin: &Origin<'_>, p: P| {
            handler(origin.context(), p)
        })
    }

    fn register_notification<P, F, Fut>(mut self, name: &str, start: F) -> Self
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
        self.notifications.insert(name, Entry::new(f));
        self
    }

    /// Registers the handler of every notification that has no handler of its own (a monitor
    /// that prints whatever the peer sends, say): it gets the [`Context`] (the method is
    /// [`Context::method`]) and the params as raw JSON (`None` when absent).
    ///
    /// ```
    /// use rpcwire_service::Router;
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
        self.fallback = Some(Entry::new(f));
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
        let named = last
            .filter(|&at| {
                self.methods
                    .at(at)
                    .is_some_and(|(n, _)| same_bytes(n.as_bytes(), name))
            })
            .or_else(|| self.methods.find(name))
            .and_then(|at| self.methods.at(at).map(|(n, e)| (at, n, e)));
        match named {
            Some((at, name, e)) => Some(Found::Named {
                at,
                name,
                run: &e.run,
                meter: &e.meter,
            }),
            None => self
                .fallback_method
                .as_ref()
                .map(|e| Found::Fallback(&e.run)),
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
        meter: &'a rpcwire_telemetry::MethodMeter,
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
