//! The JSON-RPC binding's methods as handlers on a [`Router`]: the dispatcher runs each call
//! (the caller's access, its rate limit, the call's span, error hygiene), the handler checks
//! the `A2A-Version`, reads its params in the request's dialect and answers with a typed
//! result or an [`A2aError`] (which the dispatcher sends with its code and `ErrorInfo`).
//! With the 0.3 compatibility mode, the 0.3 names are registered too, reading and writing
//! the 0.3 shapes.

use std::future::Future;
use std::sync::{Arc, PoisonError};

use rpcwire_service::{Context, Router, RpcError};
use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Serialize, Serializer};
use serde_json::json;
use serde_json::value::RawValue;

use crate::compat::{method_v03, params_to_v1, result_to_v03, Dialect};
use crate::error::{A2aError, ErrorKind};
use crate::push::{
    ConfigError, ListPushConfigsRequest, ListPushConfigsResponse, Push, PushConfigRequest,
    TaskPushNotificationConfig,
};
use crate::request::TurnRequest;
use crate::store::StoreError;
use crate::types::{
    AgentCard, GetTaskRequest, ListTasksRequest, ListTasksResponse, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskIdRequest,
};

use super::checks::Admission;
use super::post::Post;
use super::streams::{Handover, Opened};
use super::tasks::{check_history_length, subject, with_history, Tasks};

/// What the methods work with.
pub(crate) struct Methods {
    pub(crate) tasks: Arc<Tasks>,
    /// The card `GetExtendedAgentCard` answers with.
    pub(crate) extended: Option<AgentCard>,
    /// The most tasks a `ListTasks` page holds.
    pub(crate) max_page: usize,
    /// What the card says a request must be.
    pub(crate) admission: Admission,
}

/// `router` with every method of the binding (and their 0.3 names when `compat_v03`).
pub(crate) fn router(router: Router, methods: Methods, compat_v03: bool) -> Router {
    let m = Routes {
        router,
        methods: Arc::new(methods),
        compat_v03,
    };
    let m = m
        .route("SendMessage", "SendMessageRequest", send_message)
        .route("SendStreamingMessage", "SendMessageRequest", send_streaming)
        .route("GetTask", "GetTaskRequest", get_task)
        .route("ListTasks", "ListTasksRequest", list_tasks)
        .route("CancelTask", "CancelTaskRequest", cancel_task)
        .route("SubscribeToTask", "SubscribeToTaskRequest", subscribe)
        .route(
            "GetExtendedAgentCard",
            "GetExtendedAgentCardRequest",
            extended_card,
        );
    m.route(
        "CreateTaskPushNotificationConfig",
        "TaskPushNotificationConfig",
        create_push_config,
    )
    .route(
        "GetTaskPushNotificationConfig",
        "GetTaskPushNotificationConfigRequest",
        get_push_config,
    )
    .route(
        "ListTaskPushNotificationConfigs",
        "ListTaskPushNotificationConfigsRequest",
        list_push_configs,
    )
    .route(
        "DeleteTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfigRequest",
        delete_push_config,
    )
    .router
}

/// A router being given the binding's methods.
struct Routes {
    router: Router,
    methods: Arc<Methods>,
    compat_v03: bool,
}

/// One call of a method: the server's methods, the call's context, and its dialect.
struct Call {
    methods: Arc<Methods>,
    ctx: Context,
    dialect: Dialect,
}

impl Call {
    /// The A2A side of the request's POST.
    fn post(&self) -> Result<&Post, A2aError> {
        self.ctx.caller().meta::<Post>().ok_or_else(|| {
            // Only the server's own HTTP edge calls these handlers, and it always tells.
            A2aError::with_message(
                ErrorKind::UnsupportedOperation,
                "A2A methods are served at the agent's HTTP endpoint only",
            )
        })
    }

    /// The request's id, as JSON text.
    fn id(&self) -> Box<str> {
        Box::from(self.ctx.id().unwrap_or("null"))
    }

    /// Checks `message` against the card, with the extensions the request activates.
    fn admit(&self, message: &crate::types::Message) -> Result<(), A2aError> {
        let extensions = self.post().map(|p| p.extensions.as_slice()).unwrap_or(&[]);
        self.methods.admission.check(message, extensions)
    }

    /// The message of `p`, and what the request said beside it.
    fn turn_request(
        &self,
        p: SendMessageRequest,
    ) -> Result<(crate::types::Message, Arc<TurnRequest>), A2aError> {
        let post = self.post()?;
        let request = TurnRequest::new(
            &post.take_headers(),
            p.metadata,
            p.configuration,
            post.extensions.clone(),
        );
        Ok((p.message, Arc::new(request)))
    }

    /// The push notification config sent with a message (`configuration`), its webhook
    /// checked: -32003 when the server sends none, -32602 when the webhook is refused.
    async fn inline_push(
        &self,
        p: &SendMessageRequest,
    ) -> Result<Option<TaskPushNotificationConfig>, A2aError> {
        let Some(config) = p
            .configuration
            .as_ref()
            .and_then(|c| c.task_push_notification_config.clone())
        else {
            return Ok(None);
        };
        let push = self
            .methods
            .tasks
            .push
            .as_deref()
            .ok_or(ErrorKind::PushNotificationNotSupported)?;
        push.check(&config.url)
            .await
            .map_err(|e| A2aError::with_message(ErrorKind::InvalidParams, e.to_string()))?;
        Ok(Some(config))
    }

    /// -32004 when the card offers no streaming.
    fn streaming(&self) -> Result<(), A2aError> {
        if self.methods.admission.streaming {
            return Ok(());
        }
        Err(A2aError::with_message(
            ErrorKind::UnsupportedOperation,
            "This agent does not stream (its card says capabilities.streaming false)",
        ))
    }
}

impl Routes {
    /// Registers `op` as `name` (1.0: the `A2A-Version` must be 1.x) and, in the
    /// compatibility mode, under its 0.3 name (any version: 0.3 clients send none, and the
    /// SDKs' 0.3 transports their own). `rpc.discover` names its params by `request`, their
    /// message in `a2a.proto`.
    fn route<P, R, F, Fut>(mut self, name: &'static str, request: &str, op: F) -> Self
    where
        P: DeserializeOwned + Send + 'static,
        R: Serialize + Send + 'static,
        F: Fn(Call, P) -> Fut + Copy + Send + Sync + 'static,
        Fut: Future<Output = Result<R, A2aError>> + Send + 'static,
    {
        let v03 = method_v03(name).filter(|_| self.compat_v03);
        let names = [(Some(name), Dialect::V1), (v03, Dialect::V03)];
        for (wire, dialect) in names {
            let Some(wire) = wire else { continue };
            let (description, params_doc) = match dialect {
                Dialect::V1 => (format!("A2A 1.0 {name}"), format!("{request} (a2a.proto)")),
                Dialect::V03 => (
                    format!("A2A 0.3 name of {name}, in the 0.3 shapes"),
                    format!("{request} in its A2A 0.3 shape"),
                ),
            };
            let params_doc = json!([{
                "name": "params",
                "description": params_doc,
                "schema": {"type": "object"},
            }]);
            let methods = Arc::clone(&self.methods);
            // Params taken raw: A2A's Invalid params carries its `ErrorInfo`, and 0.3 params
            // are reshaped before they are read.
            self.router = self.router.method_with_context(
                wire,
                move |ctx: Context, params: Option<Box<RawValue>>| {
                    let call = Call {
                        methods: Arc::clone(&methods),
                        ctx,
                        dialect,
                    };
                    async move {
                        if dialect == Dialect::V1 {
                            call.post()?.version_supported()?;
                        }
                        let params = decode(params.as_deref(), dialect)?;
                        let result = op(call, params).await?;
                        Ok::<_, RpcError>(Shaped { result, dialect })
                    }
                },
            );
            self.router = self
                .router
                .params(wire, params_doc)
                .describe(wire, &description);
        }
        self
    }
}

/// A method's params in its dialect's shapes (absent params read as `{}`).
fn decode<P: DeserializeOwned>(params: Option<&RawValue>, dialect: Dialect) -> Result<P, A2aError> {
    let text = params.map_or("{}", RawValue::get);
    let read = match dialect {
        Dialect::V1 => serde_json::from_str(text),
        Dialect::V03 => serde_json::from_str(text)
            .map(params_to_v1)
            .and_then(serde_json::from_value),
    };
    read.map_err(|e| {
        A2aError::with_message(ErrorKind::InvalidParams, format!("Invalid params: {e}"))
    })
}

/// A result, written in its request's dialect.
struct Shaped<R> {
    result: R,
    dialect: Dialect,
}

impl<R: Serialize> Serialize for Shaped<R> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.dialect {
            Dialect::V1 => self.result.serialize(s),
            Dialect::V03 => serde_json::to_value(&self.result)
                .map(result_to_v03)
                .map_err(serde::ser::Error::custom)?
                .serialize(s),
        }
    }
}

/// `SendMessage`: runs the turn and answers with the task once it stops (or at once with
/// `returnImmediately`), with the agent's direct message, or with the error the turn ended
/// with before publishing anything.
async fn send_message(call: Call, p: SendMessageRequest) -> Result<SendMessageResponse, A2aError> {
    let history = p.configuration.as_ref().and_then(|c| c.history_length);
    check_history_length(history)?;
    call.admit(&p.message)?;
    let immediately = p
        .configuration
        .as_ref()
        .is_some_and(|c| c.return_immediately);
    let tasks = &call.methods.tasks;
    let push = call.inline_push(&p).await?;
    let (message, request) = call.turn_request(p)?;
    let (running, mut events) = tasks
        .start_turn(message, call.ctx.identity().clone(), request, push, false)
        .await?;
    let wait = async {
        let mut phase = running.phase.subscribe();
        if immediately {
            // The first event is enough: the task exists.
            tokio::select! {
                _ = events.recv() => {}
                _ = phase.wait_for(|p| p.done) => {}
            }
        } else {
            let _ = phase.wait_for(|p| p.done).await;
        }
    };
    let _ = tokio::time::timeout(tasks.send_wait, wait).await;
    // The answer goes out once the store has the task as answered: a `GetTask` on any
    // replica then reads it at least as new (a memory store has it already).
    let task_id = running.id();
    let _ = tokio::time::timeout(tasks.send_wait, tasks.writes.settled(&task_id)).await;
    let turn = running.turn.lock().unwrap_or_else(PoisonError::into_inner);
    if turn.unfinished {
        // Its panic is in the log; the caller gets the generic internal error.
        return Err(ErrorKind::Internal.into());
    }
    if let Some(e) = &turn.error {
        return Err(e.clone());
    }
    Ok(match turn.reply.clone() {
        Some(m) => SendMessageResponse::Message(m),
        None => SendMessageResponse::Task(with_history(running.snapshot(), history)),
    })
}

/// `SendStreamingMessage`: starts the turn and, once it has published its first event (or
/// ended), hands its events over to be streamed; a turn that ended with an error before
/// publishing anything is answered with the error instead.
async fn send_streaming(call: Call, p: SendMessageRequest) -> Result<(), A2aError> {
    call.streaming()?;
    call.admit(&p.message)?;
    let identity = call.ctx.identity().clone();
    let push = call.inline_push(&p).await?;
    let (message, request) = call.turn_request(p)?;
    let (running, events) = call
        .methods
        .tasks
        .start_turn(message, identity, request, push, true)
        .await?;
    // A receiver of its own to wait on, subscribed before the turn is looked at: `events`
    // keeps every event for the stream.
    let mut probe = running.events.subscribe();
    let mut phase = running.phase.subscribe();
    let started = {
        let turn = running.turn.lock().unwrap_or_else(PoisonError::into_inner);
        turn.announced || turn.reply.is_some() || turn.error.is_some()
    };
    if !started {
        tokio::select! {
            _ = probe.recv() => {}
            _ = phase.wait_for(|p| p.done) => {}
        }
    }
    drop(probe);
    if let Some(e) = running
        .turn
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .error
        .clone()
    {
        return Err(e);
    }
    call.post()?.hand_over(Handover::Open(Box::new(Opened {
        id: call.id(),
        first: None,
        replay: Vec::new(),
        events: Some(events),
        follow: None,
        dialect: call.dialect,
        until_terminal: false,
    })));
    Ok(())
}

/// `SubscribeToTask`: the task as it is, then its events until it reaches a terminal state
/// (through the turns of a task waiting for input); with `Last-Event-ID`, the events of the
/// task's log after it instead of the task, then the live ones (the task as it is first when
/// the log no longer has them all).
async fn subscribe(call: Call, p: TaskIdRequest) -> Result<(), A2aError> {
    call.streaming()?;
    let post = call.post()?;
    let tasks = &call.methods.tasks;
    let identity = call.ctx.identity();
    let opened = |first, replay, events| {
        Handover::Open(Box::new(Opened {
            id: call.id(),
            first,
            replay,
            events,
            follow: None,
            dialect: call.dialect,
            until_terminal: true,
        }))
    };
    if let Some(watch) = tasks.publisher.log.watch(&p.id) {
        let opened = follow(tasks, &p.id, identity, post.last_event, watch).await?;
        post.hand_over(Handover::Open(Box::new(Opened {
            id: call.id(),
            dialect: call.dialect,
            ..opened
        })));
        return Ok(());
    }
    if let Some(after) = post.last_event {
        // Live events first, then the log: an event logged in between is in both, and
        // the stream skips the live copy of what it replayed.
        let live = match tasks.subscribe(&p.id, identity).await {
            Ok((_, events)) => Some(events),
            // Over: the log is all there is.
            Err(e) if e.kind == ErrorKind::UnsupportedOperation => None,
            Err(e) => return Err(e),
        };
        match tasks.read_log(&p.id, identity, after).await {
            Ok(replay) => {
                post.hand_over(opened(None, replay, live));
                return Ok(());
            }
            // Events were missed: the task as it is, then the live ones.
            Err(StoreError::Trimmed) => {
                let task = tasks.visible(&p.id, identity).await?;
                post.hand_over(opened(Some(StreamResponse::Task(task)), Vec::new(), live));
                return Ok(());
            }
            // No log this caller may read (none kept, or another's): a new subscription.
            Err(StoreError::NotFound) => {}
            Err(e) => {
                tracing::warn!(task = p.id, error = %e, "a task's event log was not read");
                return Err(ErrorKind::Internal.into());
            }
        }
    }
    let (task, events) = tasks.subscribe(&p.id, identity).await?;
    post.hand_over(opened(
        Some(StreamResponse::Task(task)),
        Vec::new(),
        Some(events),
    ));
    Ok(())
}

/// A subscription to task `id` that follows its log (a log other replicas append to, whose
/// `watch` tells of their events): after `last_event`, the log's events after it, else the
/// task as it is; then the log's new events as it tells of them, wherever the turns run.
/// The watch is taken before the log is read, so that nothing appended after the read goes
/// untold. (The returned stream's id and dialect are set by the caller.)
async fn follow(
    tasks: &Arc<Tasks>,
    id: &str,
    identity: &rpcwire_service::Identity,
    last_event: Option<u64>,
    watch: crate::store::LogWatch,
) -> Result<Opened, A2aError> {
    let failed = |e: StoreError| {
        tracing::warn!(task = id, error = %e, "a task's event log was not read");
        A2aError::from(ErrorKind::Internal)
    };
    let mut first = None;
    let mut replay = Vec::new();
    let mut after = 0;
    let resumed = match last_event {
        Some(last) => match tasks.read_log(id, identity, last).await {
            // Nothing after the client's last event, which ended the task: nothing to follow
            // (as for a task over on a server whose log has no watch).
            Ok(events) if events.is_empty() && ended_at(tasks, id, identity, last).await => {
                return Ok(Opened {
                    id: Box::from(""),
                    first: None,
                    replay: Vec::new(),
                    events: None,
                    follow: None,
                    dialect: Dialect::V1,
                    until_terminal: true,
                });
            }
            Ok(events) => {
                after = events.last().map_or(last, |e| e.id);
                replay = events;
                true
            }
            // Missed or never kept: the task as it is, then what follows.
            Err(StoreError::Trimmed | StoreError::NotFound) => false,
            Err(e) => return Err(failed(e)),
        },
        None => false,
    };
    if !resumed {
        after = match tasks
            .publisher
            .log
            .last_id(id, super::tasks::subject(identity))
            .await
        {
            Ok(last) => last,
            Err(StoreError::NotFound) => 0,
            Err(e) => return Err(failed(e)),
        };
        let task = tasks.visible(id, identity).await?;
        if task.status.state.is_terminal() {
            return Err(A2aError::with_message(
                ErrorKind::UnsupportedOperation,
                format!("Task {id} is in a terminal state"),
            ));
        }
        first = Some(StreamResponse::Task(task));
    }
    Ok(Opened {
        id: Box::from(""),
        first,
        replay,
        events: None,
        follow: Some(super::streams::Follow {
            tasks: Arc::clone(tasks),
            task_id: id.to_owned(),
            identity: identity.clone(),
            watch,
            after,
        }),
        dialect: Dialect::V1,
        until_terminal: true,
    })
}

/// Whether event `at` of task `id`'s log is one that ends its task (a terminal state).
async fn ended_at(
    tasks: &Arc<Tasks>,
    id: &str,
    identity: &rpcwire_service::Identity,
    at: u64,
) -> bool {
    let Some(before) = at.checked_sub(1) else {
        return false;
    };
    tasks
        .read_log(id, identity, before)
        .await
        .ok()
        .and_then(|events| events.into_iter().next())
        .is_some_and(|e| e.id == at && e.event.state().is_some_and(|s| s.is_terminal()))
}

/// `GetTask`, with at most `historyLength` history messages.
async fn get_task(call: Call, p: GetTaskRequest) -> Result<Task, A2aError> {
    check_history_length(p.history_length)?;
    let task = call
        .methods
        .tasks
        .visible(&p.id, call.ctx.identity())
        .await?;
    Ok(with_history(task, p.history_length))
}

/// `ListTasks`: a page, newest first.
async fn list_tasks(call: Call, p: ListTasksRequest) -> Result<ListTasksResponse, A2aError> {
    check_history_length(p.history_length)?;
    let mut page = call
        .methods
        .tasks
        .list(&p, subject(call.ctx.identity()), call.methods.max_page)
        .await
        .map_err(|e| match e {
            StoreError::BadPageToken | StoreError::BadTimestamp => {
                A2aError::with_message(ErrorKind::InvalidParams, e.to_string())
            }
            StoreError::Full
            | StoreError::NotFound
            | StoreError::Trimmed
            | StoreError::NotOwner
            | StoreError::Backend(_) => {
                tracing::warn!(error = %e, "the task store failed");
                ErrorKind::Internal.into()
            }
        })?;
    for t in &mut page.tasks {
        *t = with_history(std::mem::take(t), p.history_length);
        if !p.include_artifacts {
            t.artifacts.clear();
        }
    }
    Ok(page)
}

/// `CancelTask`: the task, canceled.
async fn cancel_task(call: Call, p: TaskIdRequest) -> Result<Task, A2aError> {
    call.methods.tasks.cancel(&p.id, call.ctx.identity()).await
}

/// `GetExtendedAgentCard`: the card configured, to an authenticated caller (else -32004), or
/// -32007 without one.
async fn extended_card(call: Call, _: IgnoredAny) -> Result<AgentCard, A2aError> {
    let card = call
        .methods
        .extended
        .clone()
        .ok_or(ErrorKind::ExtendedAgentCardNotConfigured)?;
    if !call.ctx.identity().is_authenticated() {
        // The specification: the client MUST authenticate this request.
        return Err(A2aError::with_message(
            ErrorKind::UnsupportedOperation,
            "The extended Agent Card is served to authenticated callers only",
        ));
    }
    Ok(card)
}

/// The server's push notifications, for the task `task_id`, which the caller may see;
/// -32003 when the server sends none.
async fn push_of<'a>(call: &'a Call, task_id: &str) -> Result<&'a Push, A2aError> {
    let push = call
        .methods
        .tasks
        .push
        .as_deref()
        .ok_or(ErrorKind::PushNotificationNotSupported)?;
    call.methods
        .tasks
        .visible(task_id, call.ctx.identity())
        .await?;
    call.methods.tasks.load_push(task_id).await?;
    Ok(push)
}

/// `CreateTaskPushNotificationConfig`: the config as kept (its id given when it had none);
/// a webhook the policy refuses, or one config too many, is -32602.
async fn create_push_config(
    call: Call,
    p: TaskPushNotificationConfig,
) -> Result<TaskPushNotificationConfig, A2aError> {
    let push = push_of(&call, &p.task_id).await?;
    let invalid = |e: ConfigError| A2aError::with_message(ErrorKind::InvalidParams, e.to_string());
    push.check(&p.url).await.map_err(invalid)?;
    call.methods.tasks.insert_push(p).await?.map_err(invalid)
}

/// `GetTaskPushNotificationConfig`: the config, or -32001 when there is no such config.
async fn get_push_config(
    call: Call,
    p: PushConfigRequest,
) -> Result<TaskPushNotificationConfig, A2aError> {
    push_of(&call, &p.task_id)
        .await?
        .get(&p.task_id, &p.id)
        .ok_or_else(|| {
            A2aError::with_message(
                ErrorKind::TaskNotFound,
                format!(
                    "Task {} has no push notification config {}",
                    p.task_id, p.id
                ),
            )
        })
}

/// `ListTaskPushNotificationConfigs`: the task's configs, on one page.
async fn list_push_configs(
    call: Call,
    p: ListPushConfigsRequest,
) -> Result<ListPushConfigsResponse, A2aError> {
    Ok(ListPushConfigsResponse {
        configs: push_of(&call, &p.task_id).await?.list(&p.task_id),
        next_page_token: String::new(),
    })
}

/// `DeleteTaskPushNotificationConfig`: gone (or was not there): `{}`.
async fn delete_push_config(call: Call, p: PushConfigRequest) -> Result<Empty, A2aError> {
    push_of(&call, &p.task_id).await?;
    call.methods.tasks.delete_push(&p.task_id, &p.id).await?;
    Ok(Empty {})
}

/// `google.protobuf.Empty`.
#[derive(Serialize)]
struct Empty {}
