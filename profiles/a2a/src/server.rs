//! The A2A server: the Agent Card at [`AGENT_CARD_PATH`], and the JSON-RPC binding's methods
//! at one POST path, built from `rpcwire_http::profile`'s blocks (the POST checks, the event
//! stream answer, resumable streams parked for `Last-Event-ID`, the serve loop).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use rpcwire::wire::{parse, Id, Message as WireMessage, ParseLimits, Parsed};
use rpcwire_http::profile::{
    after_body, event_stream, json, parse_event_id, read_post_body, refuse, serve_profile, Body,
    Endpoint, HandlesIncoming, HandlesWhole, ParkedStreams, StreamRelay,
};
use rpcwire_http::{HostPolicy, ResponseFuture};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::{broadcast, mpsc};

use crate::agent::{push_history, Agent, Running, TaskContext, TaskLimits};
use crate::error::{A2aError, ErrorKind};
use crate::store::{MemoryTaskStore, StoreLimits, TaskStore};
use crate::types::{
    AgentCard, GetTaskRequest, ListTasksRequest, Role, SendMessageRequest, StreamResponse, Task,
    TaskIdRequest, TaskState, AGENT_CARD_PATH,
};

/// The header naming the protocol version a request speaks.
pub const VERSION_HEADER: &str = "a2a-version";

/// Builds an [`A2aService`]: an agent, its card, and limits.
pub struct A2aServer {
    card: AgentCard,
    extended: Option<AgentCard>,
    agent: Arc<dyn Agent>,
    store: Option<Arc<dyn TaskStore>>,
    store_limits: StoreLimits,
    task_limits: TaskLimits,
    endpoint: Endpoint,
    path: String,
    max_parked: usize,
    resume_window: Duration,
    send_wait: Duration,
    max_page: usize,
    compat_v03: bool,
}

impl std::fmt::Debug for A2aServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aServer")
            .field("card", &self.card.name)
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl A2aServer {
    /// A server for `agent`, publishing `card`. Defaults: the JSON-RPC endpoint at `/`, an
    /// in-memory store ([`StoreLimits::default`]), [`TaskLimits::default`], 4 MiB bodies,
    /// 64 events (1 MiB) kept per stream for resumption, 1 024 streams parked for
    /// resumption for 60 s, `SendMessage` waiting at most 60 s for a turn to end.
    pub fn new(card: AgentCard, agent: impl Agent) -> Self {
        A2aServer {
            card,
            extended: None,
            agent: Arc::new(agent),
            store: None,
            store_limits: StoreLimits::default(),
            task_limits: TaskLimits::default(),
            endpoint: Endpoint::new(Duration::from_secs(60), 64),
            path: "/".to_owned(),
            max_parked: 1024,
            resume_window: Duration::from_secs(60),
            send_wait: Duration::from_secs(60),
            max_page: 100,
            compat_v03: false,
        }
    }

    /// Serves the A2A 0.3 method names too (`message/send`, `message/stream`, `tasks/get`,
    /// `tasks/cancel`, `tasks/resubscribe`, ...), reading and writing the 0.3 shapes; off by
    /// default.
    pub fn compat_v03(mut self, on: bool) -> Self {
        self.compat_v03 = on;
        self
    }

    /// The path of the JSON-RPC endpoint (the card's interface URL should name it).
    pub fn path(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The card `GetExtendedAgentCard` answers with (without one it answers -32007).
    pub fn extended_card(mut self, card: AgentCard) -> Self {
        self.extended = Some(card);
        self
    }

    /// Keeps tasks in `store` instead of memory.
    pub fn store(mut self, store: Arc<dyn TaskStore>) -> Self {
        self.store = Some(store);
        self
    }

    /// The limits of the in-memory store.
    pub fn store_limits(mut self, limits: StoreLimits) -> Self {
        self.store_limits = limits;
        self
    }

    /// What one task holds.
    pub fn task_limits(mut self, limits: TaskLimits) -> Self {
        self.task_limits = limits;
        self
    }

    /// Accepted `Host` / `Origin` values (loopback names by default).
    pub fn hosts(mut self, hosts: HostPolicy) -> Self {
        self.endpoint.set_hosts(hosts);
        self
    }

    /// The largest request body (413 beyond; at least 1 KiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.endpoint.set_max_body(bytes);
        self
    }

    /// How long a request body may take to arrive.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.endpoint.set_timeout(timeout);
        self
    }

    /// The events (and bytes) kept per stream for a client resuming with `Last-Event-ID`.
    pub fn stream_buffer(mut self, events: usize, bytes: usize) -> Self {
        self.endpoint.set_stream_buffer(events, bytes);
        self
    }

    /// The most streams kept for resumption after their client went away, and for how long
    /// after they end.
    pub fn parked_streams(mut self, max: usize, window: Duration) -> Self {
        self.max_parked = max.max(1);
        self.resume_window = window;
        self
    }

    /// How long `SendMessage` waits for a turn to end before answering with the task as it
    /// is (the work goes on).
    pub fn send_wait(mut self, wait: Duration) -> Self {
        self.send_wait = wait;
        self
    }

    /// The most connections served at once.
    pub fn max_connections(mut self, limit: usize) -> Self {
        self.endpoint.set_max_connections(limit);
        self
    }

    /// The service.
    pub fn build(self) -> A2aService {
        let store = self
            .store
            .unwrap_or_else(|| Arc::new(MemoryTaskStore::new(self.store_limits)));
        let card = Bytes::from(serde_json::to_vec(&self.card).unwrap_or_default());
        A2aService {
            inner: Arc::new(Inner {
                card,
                extended: self.extended,
                agent: self.agent,
                store,
                task_limits: self.task_limits,
                endpoint: self.endpoint,
                path: self.path,
                parked: ParkedStreams::new(self.max_parked),
                resume_window: self.resume_window,
                send_wait: self.send_wait,
                max_page: self.max_page,
                compat_v03: self.compat_v03,
                running: Mutex::default(),
                next_stream: AtomicU64::new(1),
            }),
        }
    }
}

/// A built A2A server: mount it with [`serve`] or call [`handle`](A2aService::handle).
#[derive(Clone)]
pub struct A2aService {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for A2aService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("A2aService")
            .field("running", &self.running_tasks())
            .field("parked_streams", &self.inner.parked.len())
            .finish()
    }
}

struct Inner {
    card: Bytes,
    extended: Option<AgentCard>,
    agent: Arc<dyn Agent>,
    store: Arc<dyn TaskStore>,
    task_limits: TaskLimits,
    endpoint: Endpoint,
    path: String,
    parked: ParkedStreams<(String, u64)>,
    resume_window: Duration,
    send_wait: Duration,
    max_page: usize,
    compat_v03: bool,
    running: Mutex<HashMap<String, Arc<Running>>>,
    next_stream: AtomicU64,
}

/// Serves `service` on every connection accepted on `listener` until dropped (HTTP/1.1
/// requests within the body limit read whole and answered without a hyper connection under
/// each: an open stream holds no hyper buffers; HTTP/2 and the rest through hyper).
pub async fn serve(listener: tokio::net::TcpListener, service: A2aService) {
    serve_profile(listener, service).await;
}

impl HandlesIncoming for A2aService {
    fn handle_incoming(&self, req: Request<hyper::body::Incoming>) -> ResponseFuture {
        self.handle(req)
    }
}

impl HandlesWhole for A2aService {
    fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    fn handle_whole(&self, req: Request<Body>) -> ResponseFuture {
        self.handle(req)
    }
}

/// Where a request's answer goes: the JSON-RPC id to echo (raw JSON text).
type RawId = String;

impl A2aService {
    /// Answers one HTTP request.
    pub fn handle<B>(&self, req: Request<B>) -> ResponseFuture
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let inner = Arc::clone(&self.inner);
        Box::pin(async move { inner.handle(req).await })
    }

    /// How many tasks have a turn running.
    pub fn running_tasks(&self) -> usize {
        self.inner
            .running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// How many streams are kept for resumption.
    pub fn parked_streams(&self) -> usize {
        self.inner.parked.len()
    }
}

/// Which shapes a request's answers are written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    /// A2A 1.0.
    V1,
    /// A2A 0.3 (the compatibility mode).
    V03,
}

/// A JSON-RPC success response echoing `id`, in `dialect`'s shapes.
fn result_body(id: &str, result: &impl Serialize, dialect: Dialect) -> Bytes {
    let result = match dialect {
        Dialect::V1 => serde_json::to_string(result),
        Dialect::V03 => serde_json::to_value(result)
            .map(crate::compat::result_to_v03)
            .and_then(|v| serde_json::to_string(&v)),
    }
    .unwrap_or_else(|_| "null".to_owned());
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

/// A JSON-RPC error response echoing `id`.
fn error_body(id: &str, error: &A2aError) -> Bytes {
    Bytes::from(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{}}}"#,
        error.to_json()
    ))
}

fn header_str<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers.get(name).and_then(|v| v.to_str().ok())
}

/// Whether the `A2A-Version` a request names (none: 0.3, as the specification says) is 1.x.
fn version_supported(headers: &HeaderMap) -> Result<(), A2aError> {
    let asked = header_str(headers, VERSION_HEADER)
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("0.3");
    let major = asked.split('.').next().and_then(|m| m.parse::<u32>().ok());
    if major == Some(1) {
        Ok(())
    } else {
        Err(A2aError::with_message(
            ErrorKind::VersionNotSupported,
            format!("A2A version '{asked}' is not supported; this server speaks 1.0"),
        ))
    }
}

fn params<T: DeserializeOwned>(raw: Option<&[u8]>) -> Result<T, A2aError> {
    let text = raw.unwrap_or(b"{}");
    serde_json::from_slice(text).map_err(|e| {
        A2aError::with_message(ErrorKind::InvalidParams, format!("Invalid params: {e}"))
    })
}

fn check_history_length(n: Option<i32>) -> Result<(), A2aError> {
    if n.is_some_and(|n| n < 0) {
        return Err(A2aError::with_message(
            ErrorKind::InvalidParams,
            "history length must be non-negative",
        ));
    }
    Ok(())
}

/// `task` with at most the latest `n` history messages.
fn with_history(mut task: Task, n: Option<i32>) -> Task {
    if let Some(n) = n.and_then(|n| usize::try_from(n).ok()) {
        let over = task.history.len().saturating_sub(n);
        task.history.drain(..over);
    }
    task
}

/// What a method answers: a JSON body, or an event stream.
enum Answer {
    Json(Bytes),
    Stream(Response<Body>),
    /// Nothing to answer (a notification or a response): 202.
    Accepted,
}

/// A method's successful answer.
fn ok(id: &str, result: &impl Serialize, dialect: Dialect) -> Result<Answer, A2aError> {
    Ok(Answer::Json(result_body(id, result, dialect)))
}

impl Inner {
    async fn handle<B>(self: Arc<Self>, req: Request<B>) -> Response<Body>
    where
        B: http_body::Body + Send + 'static,
        B::Data: Send,
        B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    {
        let (max_body, timeout) = (self.endpoint.max_body(), self.endpoint.timeout());
        if let Some(why) = self.endpoint.refusal(&req) {
            return after_body(req, max_body, timeout, refuse(StatusCode::FORBIDDEN, why)).await;
        }
        let path = req.uri().path();
        if path == AGENT_CARD_PATH {
            let r = if req.method() == Method::GET {
                json(self.card.clone())
            } else {
                let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "GET the card\n");
                r.headers_mut()
                    .insert(header::ALLOW, HeaderValue::from_static("GET"));
                r
            };
            return after_body(req, max_body, timeout, r).await;
        }
        if path != self.path {
            let r = refuse(StatusCode::NOT_FOUND, "no A2A endpoint here\n");
            return after_body(req, max_body, timeout, r).await;
        }
        if req.method() != Method::POST {
            let mut r = refuse(StatusCode::METHOD_NOT_ALLOWED, "POST JSON-RPC requests\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("POST"));
            return after_body(req, max_body, timeout, r).await;
        }
        let (parts, body) = req.into_parts();
        // Answers are JSON or an event stream: any `Accept` that allows either will do.
        let answerable = rpcwire_http::profile::AcceptedMedia::of(&parts.headers)
            .is_none_or(|m| m.json || m.sse || m.any);
        let (parts, body) = match read_post_body(parts, body, answerable, max_body, timeout).await {
            Ok(read) => read,
            Err(refusal) => return *refusal,
        };
        match self.post(&parts.headers, &body).await {
            Answer::Json(b) => json(b),
            Answer::Stream(r) => r,
            Answer::Accepted => rpcwire_http::profile::status(StatusCode::ACCEPTED),
        }
    }

    async fn post(self: &Arc<Self>, headers: &HeaderMap, body: &[u8]) -> Answer {
        let null = "null";
        let request = match parse(body, ParseLimits::default()) {
            Err(_) => return Answer::Json(error_body(null, &ErrorKind::ParseError.into())),
            Ok(Parsed::Batch(_) | Parsed::EmptyBatch) => {
                let e = A2aError::with_message(
                    ErrorKind::InvalidRequest,
                    "Batch requests are not supported",
                );
                return Answer::Json(error_body(null, &e));
            }
            Ok(Parsed::Single(Err(invalid))) => {
                let id = invalid.id.map_or(null, |i: Id<'_>| i.raw());
                let e = A2aError::with_message(
                    ErrorKind::InvalidRequest,
                    format!("Invalid Request: {}", invalid.reason),
                );
                return Answer::Json(error_body(id, &e));
            }
            // Notifications and responses are never answered (A2A defines none).
            Ok(Parsed::Single(Ok(WireMessage::Notification(_) | WireMessage::Response(_)))) => {
                return Answer::Accepted;
            }
            Ok(Parsed::Single(Ok(WireMessage::Request(r)))) => r,
        };
        let id: RawId = request.id.raw().to_owned();
        let method = request.method.to_str();
        let raw = request.params.map(|p| p.as_bytes());
        let v03 = if self.compat_v03 {
            crate::compat::method_v1(&method)
        } else {
            None
        };
        let answer = match v03 {
            Some(v1) => {
                // The 0.3 shapes read into the 1.0 ones; answers written back in 0.3's.
                let converted = raw
                    .map(|r| serde_json::from_slice(r).map(crate::compat::params_to_v1))
                    .transpose()
                    .map(|v| v.map(|v| v.to_string()));
                match converted {
                    Ok(p) => {
                        self.call(
                            headers,
                            v1,
                            p.as_deref().map(str::as_bytes),
                            &id,
                            Dialect::V03,
                        )
                        .await
                    }
                    Err(e) => Err(A2aError::with_message(
                        ErrorKind::InvalidParams,
                        format!("Invalid params: {e}"),
                    )),
                }
            }
            None => self.call(headers, &method, raw, &id, Dialect::V1).await,
        };
        match answer {
            Ok(answer) => answer,
            Err(e) => Answer::Json(error_body(&id, &e)),
        }
    }

    async fn call(
        self: &Arc<Self>,
        headers: &HeaderMap,
        method: &str,
        raw: Option<&[u8]>,
        id: &str,
        dialect: Dialect,
    ) -> Result<Answer, A2aError> {
        const PUSH: [&str; 4] = [
            "CreateTaskPushNotificationConfig",
            "GetTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigs",
            "DeleteTaskPushNotificationConfig",
        ];
        const KNOWN: [&str; 7] = [
            "SendMessage",
            "SendStreamingMessage",
            "GetTask",
            "ListTasks",
            "CancelTask",
            "SubscribeToTask",
            "GetExtendedAgentCard",
        ];
        if !KNOWN.contains(&method) && !PUSH.contains(&method) {
            return Err(ErrorKind::MethodNotFound.into());
        }
        if dialect == Dialect::V1 {
            // The 0.3 names are served whatever the header says (0.3 clients send none,
            // and the SDKs' 0.3 transports send their own version).
            version_supported(headers)?;
        }
        match method {
            "SendMessage" => {
                let p: SendMessageRequest = params(raw)?;
                let history = p.configuration.as_ref().and_then(|c| c.history_length);
                check_history_length(history)?;
                let immediately = p
                    .configuration
                    .as_ref()
                    .is_some_and(|c| c.return_immediately);
                let (running, mut events) = self.start_turn(p)?;
                let wait = async {
                    let mut phase = running.phase.subscribe();
                    if immediately {
                        // The first event is enough: the task exists.
                        let _ = events.recv().await;
                    } else {
                        let _ = phase.wait_for(|p| p.done).await;
                    }
                };
                let _ = tokio::time::timeout(self.send_wait, wait).await;
                let reply = running
                    .turn
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .reply
                    .clone();
                match reply {
                    Some(m) => ok(id, &serde_json::json!({ "message": m }), dialect),
                    None => ok(
                        id,
                        &serde_json::json!({ "task": with_history(running.snapshot(), history) }),
                        dialect,
                    ),
                }
            }
            "SendStreamingMessage" => {
                let p: SendMessageRequest = params(raw)?;
                let (running, events) = self.start_turn(p)?;
                let task_id = running.snapshot().id;
                Ok(Answer::Stream(
                    self.stream(id, task_id, None, events, dialect),
                ))
            }
            "GetTask" => {
                let p: GetTaskRequest = params(raw)?;
                check_history_length(p.history_length)?;
                let task = self.store.get(&p.id).ok_or(ErrorKind::TaskNotFound)?;
                ok(id, &with_history(task, p.history_length), dialect)
            }
            "ListTasks" => {
                let p: ListTasksRequest = params(raw)?;
                check_history_length(p.history_length)?;
                let mut page = self.store.list(&p, self.max_page);
                for t in &mut page.tasks {
                    *t = with_history(std::mem::take(t), p.history_length);
                    if !p.include_artifacts {
                        t.artifacts.clear();
                    }
                }
                ok(id, &page, dialect)
            }
            "CancelTask" => {
                let p: TaskIdRequest = params(raw)?;
                ok(id, &self.cancel(&p.id).await?, dialect)
            }
            "SubscribeToTask" => {
                let p: TaskIdRequest = params(raw)?;
                self.subscribe(headers, id, p.id, dialect)
            }
            "GetExtendedAgentCard" => match &self.extended {
                Some(card) => ok(id, card, dialect),
                None => Err(ErrorKind::ExtendedAgentCardNotConfigured.into()),
            },
            _ => Err(ErrorKind::PushNotificationNotSupported.into()),
        }
    }

    fn running(&self, id: &str) -> Option<Arc<Running>> {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(id)
            .cloned()
    }

    /// Starts a turn for `p.message`: a new task, or the next turn of one waiting for input.
    /// The events receiver is subscribed before the turn runs, so that it misses none.
    fn start_turn(
        self: &Arc<Self>,
        p: SendMessageRequest,
    ) -> Result<(Arc<Running>, broadcast::Receiver<Arc<StreamResponse>>), A2aError> {
        let mut message = p.message;
        // Read with room for more parts than came; the message is kept while the task lives.
        message.parts.shrink_to_fit();
        if message.message_id.is_empty() {
            return Err(A2aError::with_message(
                ErrorKind::InvalidParams,
                "message.messageId is required",
            ));
        }
        message.role = Role::User;
        let limits = self.task_limits;
        let (task, continuation) = if message.task_id.is_empty() {
            let id = new_id("task");
            if message.context_id.is_empty() {
                message.context_id = new_id("ctx");
            }
            message.task_id.clone_from(&id);
            let task = Task {
                id,
                context_id: message.context_id.clone(),
                status: crate::types::TaskStatus {
                    state: TaskState::Submitted,
                    ..Default::default()
                },
                history: vec![message.clone()],
                ..Task::default()
            };
            (task, false)
        } else {
            let mut task = self
                .store
                .get(&message.task_id)
                .ok_or(ErrorKind::TaskNotFound)?;
            if !message.context_id.is_empty() && message.context_id != task.context_id {
                return Err(A2aError::with_message(
                    ErrorKind::InvalidParams,
                    format!(
                        "Context {} does not match context {} of task {}",
                        message.context_id, task.context_id, task.id
                    ),
                ));
            }
            if task.status.state.is_terminal() {
                return Err(A2aError::with_message(
                    ErrorKind::UnsupportedOperation,
                    format!("Task {} is in a terminal state", task.id),
                ));
            }
            if self.running(&task.id).is_some() {
                return Err(A2aError::with_message(
                    ErrorKind::UnsupportedOperation,
                    format!("Task {} is running; send when it asks for input", task.id),
                ));
            }
            message.context_id.clone_from(&task.context_id);
            push_history(&mut task, message.clone(), limits.max_history);
            (task, true)
        };
        self.store.put(task.clone()).map_err(|e| {
            A2aError::with_message(ErrorKind::Internal, format!("Task not accepted: {e}"))
        })?;
        let task_id = task.id.clone();
        let running = Running::new(task, Arc::clone(&self.store), limits);
        let events = running.events.subscribe();
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(task_id.clone(), Arc::clone(&running));
        let ctx = TaskContext {
            running: Arc::clone(&running),
            message,
            continuation,
            ids: Arc::new(|| new_id("msg")),
        };
        let inner = Arc::clone(self);
        let turn = self.agent.execute(ctx);
        let run = Arc::clone(&running);
        tokio::spawn(async move {
            let mut phase = run.phase.subscribe();
            let cancelled = tokio::select! {
                () = turn => false,
                _ = phase.wait_for(|p| p.cancel) => true,
            };
            let replied = run
                .turn
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .reply
                .is_some();
            if replied {
                // A direct message: no task remains.
                inner.store.remove(&task_id);
            } else if cancelled {
                run.set_status(TaskState::Canceled, None);
            } else if !run.ended() {
                let msg = crate::types::Message::text(
                    Role::Agent,
                    new_id("msg"),
                    "the agent ended its turn without a final state",
                );
                run.set_status(TaskState::Failed, Some(msg));
            }
            inner
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&task_id);
            run.phase.send_modify(|p| p.done = true);
        });
        Ok((running, events))
    }

    async fn cancel(&self, id: &str) -> Result<Task, A2aError> {
        if let Some(running) = self.running(id) {
            let mut phase = running.phase.subscribe();
            running.phase.send_modify(|p| p.cancel = true);
            // The turn's future is dropped at its next await; a turn that never yields
            // still answers the request, as it is now.
            let _ = tokio::time::timeout(self.send_wait, phase.wait_for(|p| p.done)).await;
            let task = running.snapshot();
            if task.status.state == TaskState::Canceled {
                return Ok(task);
            }
            return Err(ErrorKind::TaskNotCancelable.into());
        }
        let mut task = self.store.get(id).ok_or(ErrorKind::TaskNotFound)?;
        if task.status.state.is_terminal() {
            return Err(ErrorKind::TaskNotCancelable.into());
        }
        // Waiting for input, no turn running: cancelled here.
        task.status = crate::types::TaskStatus {
            state: TaskState::Canceled,
            message: None,
            timestamp: Some(crate::types::now_rfc3339()),
        };
        let _ = self.store.put(task.clone());
        Ok(task)
    }

    fn subscribe(
        self: &Arc<Self>,
        headers: &HeaderMap,
        id: &str,
        task_id: String,
        dialect: Dialect,
    ) -> Result<Answer, A2aError> {
        // A client coming back to a stream it lost: the events after the last it had.
        if let Some((n, seq)) = header_str(headers, "last-event-id").and_then(parse_event_id) {
            let key = (task_id.clone(), n);
            if let Some(stream) = self.parked.get(&key) {
                let (tx, rx) = mpsc::channel(16);
                let inner = Arc::clone(self);
                tokio::spawn(async move {
                    if stream.resume(seq, tx).await {
                        inner.parked.forget(&key);
                    }
                });
                return Ok(Answer::Stream(event_stream(rx)));
            }
        }
        let task = self.store.get(&task_id).ok_or(ErrorKind::TaskNotFound)?;
        if task.status.state.is_terminal() {
            return Err(A2aError::with_message(
                ErrorKind::UnsupportedOperation,
                format!("Task {task_id} is in a terminal state"),
            ));
        }
        let Some(running) = self.running(&task_id) else {
            // Waiting for input: the task as it is is the whole stream.
            return Ok(Answer::Stream(self.stream(
                id,
                task_id,
                Some(StreamResponse::Task(task)),
                broadcast::channel(1).1,
                dialect,
            )));
        };
        let events = running.events.subscribe();
        let first = StreamResponse::Task(running.snapshot());
        Ok(Answer::Stream(self.stream(
            id,
            task_id,
            Some(first),
            events,
            dialect,
        )))
    }

    /// An event stream answering request `id` with `first` and then the task's events, until
    /// one ends the stream. When the client goes away the stream is parked for resumption and
    /// the task goes on.
    fn stream(
        self: &Arc<Self>,
        id: &str,
        task_id: String,
        first: Option<StreamResponse>,
        mut events: broadcast::Receiver<Arc<StreamResponse>>,
        dialect: Dialect,
    ) -> Response<Body> {
        let (tx, rx) = mpsc::channel(16);
        let inner = Arc::clone(self);
        let id = id.to_owned();
        // Encoded now: the stream's task keeps what it captures for as long as it runs.
        let first = first.map(|f| (f.ends_stream(), result_body(&id, &f, dialect)));
        tokio::spawn(async move {
            let n = inner.next_stream.fetch_add(1, Ordering::Relaxed);
            let key = (task_id, n);
            let limits = inner.endpoint.streams();
            let mut relay = StreamRelay::start(n, key.clone(), &inner.parked, tx, limits).await;
            let mut ended = false;
            if let Some((ends, first)) = first {
                ended = ends;
                if !relay.send(&first).await {
                    ended = true;
                }
            }
            while !ended {
                match relay.unless_gone(events.recv()).await {
                    None => {
                        if !relay.park() {
                            break;
                        }
                    }
                    Some(Ok(event)) => {
                        ended = event.ends_stream();
                        if !relay.send(&result_body(&id, &*event, dialect)).await {
                            break;
                        }
                    }
                    Some(Err(broadcast::error::RecvError::Lagged(_))) => {
                        let e = A2aError::with_message(
                            ErrorKind::Internal,
                            "the stream fell behind the task's events; read the task with GetTask",
                        );
                        let _ = relay.send(&error_body(&id, &e)).await;
                        break;
                    }
                    Some(Err(broadcast::error::RecvError::Closed)) => break,
                }
            }
            drop(relay);
            if inner.parked.get(&key).is_some() {
                // Kept for a returning client for a while, then forgotten.
                tokio::time::sleep(inner.resume_window).await;
                inner.parked.forget(&key);
            }
        });
        event_stream(rx)
    }
}

/// A fresh id no client can guess.
fn new_id(prefix: &str) -> String {
    rpcwire_http::profile::random_id(prefix).unwrap_or_else(|| {
        static FALLBACK: AtomicU64 = AtomicU64::new(1);
        format!("{prefix}-{}", FALLBACK.fetch_add(1, Ordering::Relaxed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let mut h = HeaderMap::new();
        assert!(version_supported(&h).is_err(), "no header means 0.3");
        h.insert(VERSION_HEADER, HeaderValue::from_static("1.0"));
        assert!(version_supported(&h).is_ok());
        h.insert(VERSION_HEADER, HeaderValue::from_static("1.2.3"));
        assert!(version_supported(&h).is_ok());
        h.insert(VERSION_HEADER, HeaderValue::from_static("2.0"));
        assert_eq!(
            version_supported(&h).map_err(|e| e.kind),
            Err(ErrorKind::VersionNotSupported)
        );
    }

    #[test]
    fn history_trimmed_to_latest() {
        let mut t = Task::default();
        for i in 0..5 {
            t.history
                .push(crate::types::Message::text(Role::User, i.to_string(), "x"));
        }
        let t = with_history(t, Some(2));
        assert_eq!(t.history.len(), 2);
        assert_eq!(t.history[0].message_id, "3");
    }
}
