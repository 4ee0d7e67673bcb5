//! How a client answers the agent: [`ClientHandlers`] (permission, files, terminals,
//! elicitation, extensions), and the router that hands each request to its handler and each
//! `session/update` to the prompt turn it belongs to.

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex, PoisonError};

use agent_client_protocol_schema::v1::{
    ClientCapabilities, CompleteElicitationNotification, CreateElicitationRequest,
    CreateElicitationResponse, CreateTerminalRequest, CreateTerminalResponse, ElicitationAction,
    ElicitationCapabilities, ElicitationFormCapabilities, ElicitationUrlCapabilities,
    FileSystemCapabilities, KillTerminalRequest, KillTerminalResponse, PermissionOptionKind,
    ReadTextFileRequest, ReadTextFileResponse, ReleaseTerminalRequest, ReleaseTerminalResponse,
    RequestPermissionOutcome, RequestPermissionRequest, RequestPermissionResponse,
    SelectedPermissionOutcome, SessionId, SessionNotification, SessionUpdate,
    TerminalOutputRequest, TerminalOutputResponse, WaitForTerminalExitRequest,
    WaitForTerminalExitResponse, WriteTextFileRequest, WriteTextFileResponse, CLIENT_METHOD_NAMES,
};
use rpcwire_tokio::{Context, ErrorCode, Router, RpcError};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::terminals::Terminals;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;
/// A request handler after type erasure.
type Handler<Q, A> = Arc<dyn Fn(Q) -> BoxFuture<Result<A, RpcError>> + Send + Sync>;
type PermissionFn =
    Arc<dyn Fn(RequestPermissionRequest) -> BoxFuture<RequestPermissionResponse> + Send + Sync>;
type NoteFn<N> = Arc<dyn Fn(N) + Send + Sync>;
type ExtMethodFn = Arc<dyn Fn(String, Value) -> BoxFuture<Result<Value, RpcError>> + Send + Sync>;

fn erase<Q, A, F, Fut>(handler: F) -> Handler<Q, A>
where
    F: Fn(Q) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<A, RpcError>> + Send + 'static,
{
    Arc::new(move |q| Box::pin(handler(q)))
}

/// The five terminal requests' handlers, from one [`Terminals`].
#[derive(Clone)]
struct TerminalFns {
    create: Handler<CreateTerminalRequest, CreateTerminalResponse>,
    output: Handler<TerminalOutputRequest, TerminalOutputResponse>,
    wait: Handler<WaitForTerminalExitRequest, WaitForTerminalExitResponse>,
    kill: Handler<KillTerminalRequest, KillTerminalResponse>,
    release: Handler<ReleaseTerminalRequest, ReleaseTerminalResponse>,
}

/// How the client answers the agent's requests. The client advertises `fs.readTextFile`,
/// `fs.writeTextFile`, `terminal` and `elicitation` exactly when the matching handler is set.
///
/// Without a permission handler, a permission request is answered with the first "reject"
/// option the agent offers (or `cancelled` when it offers none): nothing is allowed unasked.
#[derive(Clone, Default)]
pub struct ClientHandlers {
    permission: Option<PermissionFn>,
    read: Option<Handler<ReadTextFileRequest, ReadTextFileResponse>>,
    write: Option<Handler<WriteTextFileRequest, WriteTextFileResponse>>,
    updates: Option<NoteFn<SessionNotification>>,
    terminals: Option<TerminalFns>,
    elicitation: Option<Handler<CreateElicitationRequest, CreateElicitationResponse>>,
    elicitation_complete: Option<NoteFn<CompleteElicitationNotification>>,
    ext_method: Option<ExtMethodFn>,
    ext_notification: Option<NoteFn<(String, Value)>>,
}

impl fmt::Debug for ClientHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientHandlers")
            .field("permission", &self.permission.is_some())
            .field("read_text_file", &self.read.is_some())
            .field("write_text_file", &self.write.is_some())
            .field("updates", &self.updates.is_some())
            .field("terminals", &self.terminals.is_some())
            .field("elicitation", &self.elicitation.is_some())
            .field("ext_method", &self.ext_method.is_some())
            .finish_non_exhaustive()
    }
}

impl ClientHandlers {
    /// No handlers (no file system, terminal or elicitation offered; permissions rejected).
    pub fn new() -> Self {
        ClientHandlers::default()
    }

    /// Answers `session/request_permission` (ask the user). When the turn is cancelled while
    /// it waits, the request is answered `cancelled` without it.
    pub fn on_permission<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(RequestPermissionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = RequestPermissionResponse> + Send + 'static,
    {
        self.permission = Some(Arc::new(move |r| Box::pin(handler(r))));
        self
    }

    /// Answers `fs/read_text_file` (and advertises `fs.readTextFile`).
    pub fn on_read_text_file<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ReadTextFileRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ReadTextFileResponse, RpcError>> + Send + 'static,
    {
        self.read = Some(erase(handler));
        self
    }

    /// Answers `fs/write_text_file` (and advertises `fs.writeTextFile`).
    pub fn on_write_text_file<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(WriteTextFileRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<WriteTextFileResponse, RpcError>> + Send + 'static,
    {
        self.write = Some(erase(handler));
        self
    }

    /// Answers `terminal/create`, `/output`, `/wait_for_exit`, `/kill` and `/release` with
    /// `terminals` (and advertises `terminal`): [`LocalTerminals`](crate::LocalTerminals)
    /// runs the commands here.
    pub fn terminals(mut self, terminals: impl Terminals) -> Self {
        let t = Arc::new(terminals);
        let (a, b, c, d, e) = (t.clone(), t.clone(), t.clone(), t.clone(), t);
        self.terminals = Some(TerminalFns {
            create: erase(move |r| {
                let a = a.clone();
                async move { a.create(r).await }
            }),
            output: erase(move |r| {
                let b = b.clone();
                async move { b.output(r).await }
            }),
            wait: erase(move |r| {
                let c = c.clone();
                async move { c.wait_for_exit(r).await }
            }),
            kill: erase(move |r| {
                let d = d.clone();
                async move { d.kill(r).await }
            }),
            release: erase(move |r| {
                let e = e.clone();
                async move { e.release(r).await }
            }),
        });
        self
    }

    /// Answers `elicitation/create` (ask the user for information, a form or a URL; and
    /// advertises `elicitation` with both). When the agent withdraws the request
    /// (`$/cancel_request`, its turn cancelled), it is answered `cancel` without it.
    pub fn on_elicitation<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateElicitationRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateElicitationResponse, RpcError>> + Send + 'static,
    {
        self.elicitation = Some(erase(handler));
        self
    }

    /// Receives `elicitation/complete` (a URL elicitation finished).
    pub fn on_elicitation_complete(
        mut self,
        handler: impl Fn(CompleteElicitationNotification) + Send + Sync + 'static,
    ) -> Self {
        self.elicitation_complete = Some(Arc::new(handler));
        self
    }

    /// Answers requests whose method starts with `_` (extensions; the method as sent).
    /// Without it they are answered Method not found.
    pub fn on_ext_method<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Value, RpcError>> + Send + 'static,
    {
        self.ext_method = Some(Arc::new(move |m, p| Box::pin(handler(m, p))));
        self
    }

    /// Receives notifications whose method starts with `_`.
    pub fn on_ext_notification(
        mut self,
        handler: impl Fn(String, Value) + Send + Sync + 'static,
    ) -> Self {
        self.ext_notification = Some(Arc::new(move |(m, p)| handler(m, p)));
        self
    }

    /// Receives `session/update` notifications outside a prompt turn read with
    /// [`PromptTurn::next`](crate::PromptTurn::next) (a `session/load` replay, commands
    /// announced after `session/new`). Without it they are logged at debug level.
    pub fn on_update(
        mut self,
        handler: impl Fn(SessionNotification) + Send + Sync + 'static,
    ) -> Self {
        self.updates = Some(Arc::new(handler));
        self
    }

    /// What the client advertises in `initialize`.
    pub(crate) fn capabilities(&self) -> ClientCapabilities {
        let mut fs = FileSystemCapabilities::new();
        fs.read_text_file = self.read.is_some();
        fs.write_text_file = self.write.is_some();
        let mut caps = ClientCapabilities::new()
            .fs(fs)
            .terminal(self.terminals.is_some());
        if self.elicitation.is_some() {
            caps.elicitation = Some(
                ElicitationCapabilities::new()
                    .form(ElicitationFormCapabilities::new())
                    .url(ElicitationUrlCapabilities::new()),
            );
        }
        caps
    }
}

/// The first reject option offered, else `cancelled` (the answer when no handler is set).
fn reject(request: &RequestPermissionRequest) -> RequestPermissionResponse {
    let outcome = request
        .options
        .iter()
        .find(|o| {
            matches!(
                o.kind,
                PermissionOptionKind::RejectOnce | PermissionOptionKind::RejectAlways
            )
        })
        .map_or(RequestPermissionOutcome::Cancelled, |o| {
            RequestPermissionOutcome::Selected(SelectedPermissionOutcome::new(o.option_id.clone()))
        });
    RequestPermissionResponse::new(outcome)
}

/// A running turn's mailbox: where its updates go, and its cancellation.
pub(crate) struct Route {
    /// Which turn (a later turn of the same session replaces the route).
    pub(crate) turn: u64,
    pub(crate) updates: mpsc::Sender<SessionUpdate>,
    pub(crate) cancel: CancellationToken,
}

/// What the client's router hands updates to.
#[derive(Default)]
pub(crate) struct Hub {
    pub(crate) routes: Mutex<HashMap<SessionId, Route>>,
    pub(crate) turns: AtomicU64,
    fallback: Option<NoteFn<SessionNotification>>,
}

/// Registers `name` answered by `handler`, when it is set.
fn route<Q, A>(router: Router, name: &str, handler: &Option<Handler<Q, A>>) -> Router
where
    Q: DeserializeOwned + Send + 'static,
    A: Serialize + Send + 'static,
{
    match handler.clone() {
        Some(h) => router.method(name, move |r: Q| h(r)),
        None => router,
    }
}

impl Hub {
    pub(crate) fn new(handlers: &ClientHandlers) -> Self {
        Hub {
            fallback: handlers.updates.clone(),
            ..Hub::default()
        }
    }

    fn deliver(&self, note: SessionNotification) {
        let routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(route) = routes.get(&note.session_id) {
            if let Err(e) = route.updates.try_send(note.update) {
                tracing::warn!(session = %note.session_id, error = %e, "session/update dropped: the turn's reader is behind");
            }
            return;
        }
        drop(routes);
        match &self.fallback {
            Some(f) => f(note),
            None => tracing::debug!(session = %note.session_id, "session/update outside a turn"),
        }
    }

    pub(crate) fn turn_cancel(&self, session: &SessionId) -> Option<CancellationToken> {
        let routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        routes.get(session).map(|r| r.cancel.clone())
    }

    pub(crate) fn router(self: &Arc<Self>, handlers: &ClientHandlers) -> Router {
        let names = &CLIENT_METHOD_NAMES;
        let hub = Arc::clone(self);
        let mut router = Router::new().notification(names.session_update, move |note| {
            hub.deliver(note);
            std::future::ready(())
        });
        let hub = Arc::clone(self);
        let permission = handlers.permission.clone();
        router = router.method_with_context(
            names.session_request_permission,
            move |ctx: Context, request: RequestPermissionRequest| {
                let turn = hub.turn_cancel(&request.session_id).unwrap_or_default();
                let permission = permission.clone();
                async move {
                    let Some(ask) = permission else {
                        return Ok::<_, RpcError>(reject(&request));
                    };
                    // ACP: once the client cancels the turn (or the agent cancels this
                    // request), the pending question is answered `cancelled`.
                    tokio::select! {
                        answer = ask(request) => Ok(answer),
                        () = turn.cancelled() => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)),
                        () = ctx.cancelled() => Ok(RequestPermissionResponse::new(RequestPermissionOutcome::Cancelled)),
                    }
                }
            },
        );
        router = route(router, names.fs_read_text_file, &handlers.read);
        router = route(router, names.fs_write_text_file, &handlers.write);
        if let Some(t) = &handlers.terminals {
            router = route(router, names.terminal_create, &Some(t.create.clone()));
            router = route(router, names.terminal_output, &Some(t.output.clone()));
            router = route(router, names.terminal_wait_for_exit, &Some(t.wait.clone()));
            router = route(router, names.terminal_kill, &Some(t.kill.clone()));
            router = route(router, names.terminal_release, &Some(t.release.clone()));
        }
        if let Some(elicit) = handlers.elicitation.clone() {
            router = router.method_with_context(
                names.elicitation_create,
                move |ctx: Context, request: CreateElicitationRequest| {
                    let answer = elicit(request);
                    async move {
                        tokio::select! {
                            answer = answer => answer,
                            () = ctx.cancelled() => Ok(CreateElicitationResponse::new(ElicitationAction::Cancel)),
                        }
                    }
                },
            );
        }
        if let Some(done) = handlers.elicitation_complete.clone() {
            router = router.notification(
                names.elicitation_complete,
                move |note: CompleteElicitationNotification| {
                    done(note);
                    std::future::ready(())
                },
            );
        }
        extensions(router, handlers)
    }
}

/// Routes requests and notifications whose method starts with `_` to the extension
/// handlers; other unknown methods are Method not found (notifications: dropped).
fn extensions(router: Router, handlers: &ClientHandlers) -> Router {
    let ext = handlers.ext_method.clone();
    let router = router.fallback_method(move |ctx: Context, params| {
        let method = ctx.method().to_owned();
        let answer = ext
            .as_ref()
            .filter(|_| method.starts_with('_'))
            .map(|f| f(method, value(params)));
        async move {
            match answer {
                Some(answer) => answer.await,
                None => Err(RpcError::standard(ErrorCode::METHOD_NOT_FOUND)),
            }
        }
    });
    let note = handlers.ext_notification.clone();
    router.fallback_notification(move |ctx: Context, params| {
        let method = ctx.method();
        match &note {
            Some(f) if method.starts_with('_') => f((method.to_owned(), value(params))),
            _ => tracing::debug!(%method, "unknown notification dropped"),
        }
        std::future::ready(())
    })
}

/// Extension params as a value (`null` when absent).
pub(crate) fn value(params: Option<Box<serde_json::value::RawValue>>) -> Value {
    params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or(Value::Null)
}
