//! The method router: async handlers by method name, with typed params.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context as TaskContext, Poll};

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::{Client, RpcError};

/// A boxed, sendable future.
pub(crate) type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// A request handler after type erasure: params as JSON text in, result as JSON text out.
pub(crate) type MethodFn =
    Arc<dyn Fn(Context, Option<String>) -> BoxFuture<Result<String, RpcError>> + Send + Sync>;

/// A notification handler after type erasure.
pub(crate) type NotifyFn = Arc<dyn Fn(Context, Option<String>) -> BoxFuture<()> + Send + Sync>;

/// What a handler knows about the message it handles, and a handle to call the peer back on
/// the same connection.
#[derive(Debug, Clone)]
pub struct Context {
    pub(crate) peer: Client,
    pub(crate) id: Option<String>,
    pub(crate) method: String,
}

impl Context {
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
    methods: HashMap<String, MethodFn>,
    notifications: HashMap<String, NotifyFn>,
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut methods: Vec<_> = self.methods.keys().collect();
        methods.sort();
        let mut notifications: Vec<_> = self.notifications.keys().collect();
        notifications.sort();
        f.debug_struct("Router")
            .field("methods", &methods)
            .field("notifications", &notifications)
            .finish()
    }
}

fn decode<P: DeserializeOwned>(params: Option<&str>) -> Result<P, RpcError> {
    serde_json::from_str(params.unwrap_or("null")).map_err(RpcError::invalid_params)
}

impl Router {
    /// An empty router (every request answers Method not found).
    pub fn new() -> Self {
        Router::default()
    }

    /// Registers a request handler taking typed params.
    pub fn method<P, R, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        self.method_with_context(name, move |_ctx: Context, p: P| handler(p))
    }

    /// Registers a request handler that also receives the [`Context`] (to call the peer back,
    /// or read the request id).
    pub fn method_with_context<P, R, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, RpcError>> + Send + 'static,
    {
        // The handler runs inside the spawned task (under the panic guard), never in the
        // driver: decoding and the handler's synchronous part included.
        let handler = Arc::new(handler);
        let f: MethodFn = Arc::new(move |ctx, params| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                let p = decode::<P>(params.as_deref())?;
                let value = handler(ctx, p).await?;
                serde_json::to_string(&value)
                    .map_err(|e| RpcError::internal(&format!("cannot serialize result: {e}")))
            })
        });
        self.methods.insert(name.to_owned(), f);
        self
    }

    /// Registers a notification handler (notifications are never answered; params that do not
    /// decode are logged and dropped).
    pub fn notification<P, F, Fut>(self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.notification_with_context(name, move |_ctx: Context, p: P| handler(p))
    }

    /// Registers a notification handler that also receives the [`Context`].
    pub fn notification_with_context<P, F, Fut>(mut self, name: &str, handler: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        F: Fn(Context, P) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let f: NotifyFn = Arc::new(move |ctx, params| {
            let handler = Arc::clone(&handler);
            Box::pin(async move {
                match decode::<P>(params.as_deref()) {
                    Ok(p) => handler(ctx, p).await,
                    Err(e) => {
                        tracing::debug!(method = ctx.method, error = %e, "notification params do not decode");
                    }
                }
            })
        });
        self.notifications.insert(name.to_owned(), f);
        self
    }

    /// True when a request handler is registered under `name`.
    pub fn has_method(&self, name: &str) -> bool {
        self.methods.contains_key(name)
    }

    pub(crate) fn get_method(&self, name: &str) -> Option<&MethodFn> {
        self.methods.get(name)
    }

    pub(crate) fn get_notification(&self, name: &str) -> Option<&NotifyFn> {
        self.notifications.get(name)
    }
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
