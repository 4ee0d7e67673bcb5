//! An agent as a handler: [`Agent::execute`] runs one turn of a task with a [`TaskContext`]
//! through which it reports status, artifacts, and the turn's end (completed, failed,
//! input required), or answers with a direct message; the turn's result can be an A2A error
//! ([`TurnResult`]). The runtime keeps the task's snapshot in the store and sends each event
//! to the task's subscribers.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire_service::Identity;
use tokio::sync::{broadcast, watch};

use serde_json::{Map, Value};

use crate::error::A2aError;
use crate::push::Push;
use crate::request::TurnRequest;
use crate::server::publish::Publisher;
use crate::server::writes::{Write, Writes};
use crate::store::LoggedEvent;
use crate::types::{
    now_rfc3339, Artifact, Message, Part, Role, SendMessageConfiguration, StreamResponse, Task,
    TaskArtifactUpdateEvent, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// How a turn ended: `Ok` (its events say the rest), or an A2A error. An error before the
/// turn published anything answers the request with it (no task is kept for a new one: as
/// -32005 or -32008 would be answered); after, it fails the task with its message.
pub type TurnResult = Result<(), A2aError>;

/// The future of one turn.
pub type TurnFuture = Pin<Box<dyn Future<Output = TurnResult> + Send>>;

/// What a turn's future may end with: nothing (`()`), or a [`TurnResult`].
pub trait IntoTurnResult {
    /// The turn's result.
    fn into_turn_result(self) -> TurnResult;
}

impl IntoTurnResult for () {
    fn into_turn_result(self) -> TurnResult {
        Ok(())
    }
}

impl IntoTurnResult for TurnResult {
    fn into_turn_result(self) -> TurnResult {
        self
    }
}

/// What an agent does with a message: one turn of a task. The turn ends when the future
/// does; if it ends `Ok` without a final or interrupted state, the task fails. Cancelling
/// the task drops the future: the work stops at its next `.await`.
///
/// Any `Fn(TaskContext) -> impl Future` whose output is `()` or a [`TurnResult`] is one:
///
/// ```
/// use rpcwire_a2a::{A2aError, ErrorKind, TaskContext, TurnResult};
///
/// async fn agent(ctx: TaskContext) -> TurnResult {
///     if ctx.text().is_empty() {
///         return Err(A2aError::with_message(ErrorKind::InvalidParams, "say something"));
///     }
///     ctx.complete(Some("done"));
///     Ok(())
/// }
/// # let _ = rpcwire_a2a::A2aServer::new(rpcwire_a2a::AgentCard::default(), agent).build();
/// ```
pub trait Agent: Send + Sync + 'static {
    /// Runs a turn.
    fn execute(&self, ctx: TaskContext) -> TurnFuture;
}

impl<F, Fut> Agent for F
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future + Send + 'static,
    Fut::Output: IntoTurnResult,
{
    fn execute(&self, ctx: TaskContext) -> TurnFuture {
        Box::pin(IntoTurn { turn: self(ctx) })
    }
}

pin_project_lite::pin_project! {
    /// A turn's future with its output made a [`TurnResult`]. Not an `async` block awaiting
    /// the turn: such a block keeps the turn it captured beside the copy it awaits, twice the
    /// turn's size for as long as the turn runs (1 200 more bytes for `a2a-agent`'s count).
    struct IntoTurn<F> {
        #[pin]
        turn: F,
    }
}

impl<F> Future for IntoTurn<F>
where
    F: Future,
    F::Output: IntoTurnResult,
{
    type Output = TurnResult;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<TurnResult> {
        self.project()
            .turn
            .poll(cx)
            .map(IntoTurnResult::into_turn_result)
    }
}

/// Which piece of an artifact an artifact event carries ([`TaskContext::artifact`]): the
/// event's `append` and `lastChunk`, named.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Chunk {
    /// A new artifact (or one replacing the artifact of the same id), more may follow
    /// (`append` false, `lastChunk` false).
    #[default]
    New,
    /// A new artifact that is whole: no chunk follows (`append` false, `lastChunk` true).
    Whole,
    /// Parts added to the artifact of the same id (`append` true, `lastChunk` false).
    Append,
    /// The artifact's last parts, added (`append` true, `lastChunk` true).
    Last,
}

impl Chunk {
    /// `append`.
    pub fn append(self) -> bool {
        matches!(self, Chunk::Append | Chunk::Last)
    }

    /// `lastChunk`.
    pub fn last_chunk(self) -> bool {
        matches!(self, Chunk::Whole | Chunk::Last)
    }
}

/// The limits on what one task holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskLimits {
    /// The most history messages kept per task (the oldest are dropped).
    pub max_history: usize,
    /// The most artifacts per task (more are dropped, with a warning).
    pub max_artifacts: usize,
    /// The most parts an artifact grows to by appended chunks.
    pub max_artifact_parts: usize,
    /// The events buffered per task for slow subscribers.
    pub event_buffer: usize,
    /// The most events of a task waiting for their append to the event log (a log that does
    /// not answer at once: a database's). Past it, progress events (a working status, an
    /// artifact) are refused: the agent's call returns false and the task is left as it
    /// was; the task event that starts a turn and the status that ends it are always
    /// queued. A memory log never makes events wait.
    pub max_pending_events: usize,
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_history: 100,
            max_artifacts: 64,
            max_artifact_parts: 1024,
            event_buffer: 16,
            max_pending_events: 256,
        }
    }
}

/// What a turn published.
#[derive(Debug, Default)]
pub(crate) struct TurnState {
    /// The task event has been sent (the first event of a task's turn).
    pub(crate) announced: bool,
    /// The turn ended with an error before publishing anything: the request answers it.
    pub(crate) error: Option<A2aError>,
    /// The turn answered with a direct message instead of a task.
    pub(crate) reply: Option<Message>,
    /// The turn reached a final or interrupted state.
    pub(crate) ended: bool,
    /// The turn's future was dropped unfinished (it panicked): the request waiting for it
    /// answers Internal error.
    pub(crate) unfinished: bool,
}

/// Where a running turn is.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Phase {
    /// A client asked to cancel the task.
    pub(crate) cancel: bool,
    /// The turn is over.
    pub(crate) done: bool,
}

/// One running turn, shared by the runner, its context and the server's requests.
pub(crate) struct Running {
    pub(crate) task: Mutex<Task>,
    pub(crate) turn: Mutex<TurnState>,
    pub(crate) events: broadcast::Sender<Arc<LoggedEvent>>,
    /// Whether a stream follows the task (a streamed message, a subscription): its events
    /// then always go to the event log, for the stream to resume from. A memory log skips
    /// the events of a task no stream ever followed ([`Publisher::publish`]).
    pub(crate) streamed: AtomicBool,
    /// Whether a cancel was asked for, and whether the turn is over (the runner has
    /// finished): one channel for both, as each costs a few hundred bytes per running task.
    pub(crate) phase: watch::Sender<Phase>,
    /// The task's snapshots go to the store through it.
    writes: Arc<Writes>,
    /// The task's events go to the event log, then to `events`, through it.
    publisher: Arc<Publisher>,
    limits: TaskLimits,
    /// Where the task's events are pushed to webhooks, when the server pushes.
    push: Option<Arc<Push>>,
}

impl Running {
    /// A turn of `task`, publishing on `events` (the channel its subscribers waiting for the
    /// turn already hold) or on a new channel.
    pub(crate) fn new(
        task: Task,
        (writes, publisher): (Arc<Writes>, Arc<Publisher>),
        limits: TaskLimits,
        events: Option<broadcast::Sender<Arc<LoggedEvent>>>,
        push: Option<Arc<Push>>,
        streamed: bool,
    ) -> Arc<Self> {
        Arc::new(Running {
            task: Mutex::new(task),
            turn: Mutex::default(),
            events: events.unwrap_or_else(|| event_channel(limits)),
            streamed: AtomicBool::new(streamed),
            phase: watch::channel(Phase::default()).0,
            writes,
            publisher,
            limits,
            push,
        })
    }

    /// The task's id.
    pub(crate) fn id(&self) -> String {
        self.task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .id
            .clone()
    }

    pub(crate) fn snapshot(&self) -> Task {
        self.task
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn send(&self, event: StreamResponse) {
        if let Some(push) = &self.push {
            let task_id = match &event {
                StreamResponse::Task(t) => Some(&t.id),
                StreamResponse::StatusUpdate(e) => Some(&e.task_id),
                StreamResponse::ArtifactUpdate(e) => Some(&e.task_id),
                // A direct message ends a turn that leaves no task.
                StreamResponse::Message(_) => None,
            };
            if let Some(id) = task_id {
                push.notify(id, &event);
            }
        }
        // Logged first: its id there is its id on every stream that sends it.
        let (task_id, owner) = {
            let task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
            (task.id.clone(), task.owner.clone())
        };
        let streamed = self.streamed.load(Ordering::Relaxed);
        self.publisher
            .publish(&task_id, owner.as_deref(), event, &self.events, streamed);
    }

    /// Whether a progress event may be published now (its task's events waiting for the log
    /// are below the bound); checked before the task is changed.
    fn has_room(&self) -> bool {
        self.publisher.has_room(&self.id())
    }

    /// Sends the task event if this turn has not yet.
    fn announce(&self) {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        if turn.announced || turn.reply.is_some() {
            return;
        }
        turn.announced = true;
        drop(turn);
        let task = self.snapshot();
        self.writes
            .write(&task.id, Write::Put(Box::new(task.clone())));
        self.send(StreamResponse::Task(task));
    }

    /// Whether events may still be published (the turn has not ended).
    fn open(&self) -> bool {
        let turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        !turn.ended && turn.reply.is_none()
    }

    /// Moves the task to `state` and sends the status update; false when the turn already
    /// ended.
    pub(crate) fn set_status(&self, state: TaskState, message: Option<Message>) -> bool {
        if !self.open() {
            return false;
        }
        self.announce();
        if !state.ends_stream() && !self.has_room() {
            return false;
        }
        let status = TaskStatus {
            state,
            message,
            timestamp: Some(now_rfc3339()),
        };
        let event = {
            let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
            task.status = status.clone();
            if let Some(m) = &status.message {
                push_history(&mut task, m.clone(), self.limits.max_history);
            }
            self.writes
                .write(&task.id, Write::Put(Box::new(task.clone())));
            TaskStatusUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                status,
                metadata: None,
            }
        };
        if state.ends_stream() {
            self.turn
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .ended = true;
        }
        self.send(StreamResponse::StatusUpdate(event));
        true
    }

    fn add_artifact(&self, artifact: Artifact, chunk: Chunk) -> bool {
        let (append, last_chunk) = (chunk.append(), chunk.last_chunk());
        if !self.open() {
            return false;
        }
        self.announce();
        if !self.has_room() {
            return false;
        }
        let event = {
            let mut task = self.task.lock().unwrap_or_else(PoisonError::into_inner);
            let count = task.artifacts.len();
            let held = task
                .artifacts
                .iter_mut()
                .find(|a| a.artifact_id == artifact.artifact_id);
            match held {
                Some(a) if append => {
                    let room = self.limits.max_artifact_parts.saturating_sub(a.parts.len());
                    if room < artifact.parts.len() {
                        tracing::warn!("an artifact reached its part limit; chunk dropped");
                        return false;
                    }
                    a.parts.extend(artifact.parts.iter().cloned());
                }
                Some(a) => *a = artifact.clone(),
                None if count >= self.limits.max_artifacts => {
                    tracing::warn!("a task reached its artifact limit; artifact dropped");
                    return false;
                }
                None => task.artifacts.push(artifact.clone()),
            }
            self.writes
                .write(&task.id, Write::Put(Box::new(task.clone())));
            TaskArtifactUpdateEvent {
                task_id: task.id.clone(),
                context_id: task.context_id.clone(),
                artifact,
                append,
                last_chunk,
                metadata: None,
            }
        };
        self.send(StreamResponse::ArtifactUpdate(event));
        true
    }

    fn reply(&self, mut message: Message) -> bool {
        let mut turn = self.turn.lock().unwrap_or_else(PoisonError::into_inner);
        if turn.announced || turn.reply.is_some() || turn.ended {
            return false;
        }
        let task = self.snapshot();
        message.context_id = task.context_id;
        message.role = Role::Agent;
        turn.reply = Some(message.clone());
        drop(turn);
        self.send(StreamResponse::Message(message));
        true
    }

    pub(crate) fn ended(&self) -> bool {
        !self.open()
    }
}

/// The channel a task's events are published on, as many buffered as `limits` say.
pub(crate) fn event_channel(limits: TaskLimits) -> broadcast::Sender<Arc<LoggedEvent>> {
    broadcast::channel(limits.event_buffer.max(2)).0
}

pub(crate) fn push_history(task: &mut Task, message: Message, max: usize) {
    task.history.push(message);
    let over = task.history.len().saturating_sub(max.max(1));
    if over > 0 {
        task.history.drain(..over);
    }
}

/// What a turn of an [`Agent`] works with.
#[derive(Clone)]
pub struct TaskContext {
    pub(crate) running: Arc<Running>,
    /// Boxed: an agent's turn may keep its context in several places of its future (each
    /// `async fn` holds its arguments twice), 176 bytes each with the message inline.
    pub(crate) message: Box<Message>,
    pub(crate) continuation: bool,
    /// Who sent the message, as the server's authenticator established it (only the
    /// identity: a turn keeps it while it runs, and the request's caller is some hundreds of
    /// bytes more per open stream).
    pub(crate) identity: Identity,
    /// What the request said beside the message.
    pub(crate) request: Arc<TurnRequest>,
    pub(crate) ids: Arc<dyn Fn() -> String + Send + Sync>,
}

impl std::fmt::Debug for TaskContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TaskContext")
            .field("message", &self.message)
            .field("continuation", &self.continuation)
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl TaskContext {
    /// The client's message of this turn.
    pub fn message(&self) -> &Message {
        &self.message
    }

    /// Who sent this turn's message: the [`Identity`] the server's authenticator established
    /// ([`A2aServer::authenticator`](crate::A2aServer::authenticator); anonymous without
    /// one).
    pub fn identity(&self) -> &Identity {
        &self.identity
    }

    /// What the request said beside its message: headers, metadata, configuration,
    /// extensions.
    pub fn request(&self) -> &TurnRequest {
        &self.request
    }

    /// The first value of the request's header `name` (any case; credentials withheld, see
    /// [`TurnRequest::headers`]).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.request.header(name)
    }

    /// The request's `metadata`.
    pub fn metadata(&self) -> Option<&Map<String, Value>> {
        self.request.metadata()
    }

    /// The request's `configuration` (`acceptedOutputModes`, `historyLength`, ...).
    pub fn configuration(&self) -> Option<&SendMessageConfiguration> {
        self.request.configuration()
    }

    /// The output media types the client accepts (empty: any).
    pub fn accepted_output_modes(&self) -> &[String] {
        self.configuration()
            .map_or(&[], |c| c.accepted_output_modes.as_slice())
    }

    /// The extensions this turn's request activates: its `A2A-Extensions` header and the
    /// message's `extensions`.
    pub fn extensions(&self) -> impl Iterator<Item = &str> {
        let message = self
            .message
            .extensions
            .iter()
            .filter(|e| !self.request.extensions().contains(e));
        self.request
            .extensions()
            .iter()
            .chain(message)
            .map(String::as_str)
    }

    /// Whether the request activates extension `uri`.
    pub fn extension_requested(&self, uri: &str) -> bool {
        self.extensions().any(|e| e == uri)
    }

    /// The text of the message's text parts.
    pub fn text(&self) -> String {
        self.message.joined_text()
    }

    /// The task as it is now (history included).
    pub fn task(&self) -> Task {
        self.running.snapshot()
    }

    /// The task's id.
    pub fn task_id(&self) -> String {
        self.running.id()
    }

    /// True when this turn answers an earlier `input-required`.
    pub fn is_continuation(&self) -> bool {
        self.continuation
    }

    /// True once the client asked to cancel the task (the turn's future is then dropped at
    /// its next `.await`).
    pub fn is_cancelled(&self) -> bool {
        self.running.phase.borrow().cancel
    }

    /// A message from the agent about this task, with a fresh id.
    pub fn agent_message(&self, text: impl Into<String>) -> Message {
        self.agent_message_with(vec![Part::text(text)])
    }

    /// A message from the agent about this task with any `parts` (text, files, data), with
    /// a fresh id.
    pub fn agent_message_with(&self, parts: Vec<Part>) -> Message {
        let task = self.task();
        Message {
            message_id: (self.ids)(),
            context_id: task.context_id,
            task_id: task.id,
            role: Role::Agent,
            parts,
            ..Message::default()
        }
    }

    /// Moves the task to `state`, with an optional message (any parts: see
    /// [`agent_message_with`](Self::agent_message_with)). False once the turn has ended.
    pub fn set_state(&self, state: TaskState, message: Option<Message>) -> bool {
        self.running.set_status(state, message)
    }

    /// Reports the task working, with an optional word on progress. False once the turn has
    /// ended.
    pub fn working(&self, text: Option<&str>) -> bool {
        let message = text.map(|t| self.agent_message(t));
        self.running.set_status(TaskState::Working, message)
    }

    /// Adds an artifact, or a chunk of one ([`Chunk`]: new, whole, appended, last). False
    /// once the turn has ended or past the task's limits.
    pub fn artifact(&self, artifact: Artifact, chunk: Chunk) -> bool {
        self.running.add_artifact(artifact, chunk)
    }

    /// Adds an artifact of id and name `id` holding `parts` (text, files, data), whole.
    pub fn parts_artifact(&self, id: &str, parts: Vec<Part>) -> bool {
        let artifact = Artifact {
            artifact_id: id.to_owned(),
            name: id.to_owned(),
            parts,
            ..Artifact::default()
        };
        self.artifact(artifact, Chunk::New)
    }

    /// Adds a one-part text artifact.
    pub fn text_artifact(&self, id: &str, text: impl Into<String>) -> bool {
        self.parts_artifact(id, vec![Part::text(text)])
    }

    /// Completes the task (final).
    pub fn complete(&self, text: Option<&str>) -> bool {
        let message = text.map(|t| self.agent_message(t));
        self.running.set_status(TaskState::Completed, message)
    }

    /// Fails the task (final).
    pub fn fail(&self, text: &str) -> bool {
        let message = Some(self.agent_message(text));
        self.running.set_status(TaskState::Failed, message)
    }

    /// Rejects the task (final).
    pub fn reject(&self, text: &str) -> bool {
        let message = Some(self.agent_message(text));
        self.running.set_status(TaskState::Rejected, message)
    }

    /// Asks the client for more input: the turn ends, and the client's next message naming
    /// the task starts the next one.
    pub fn input_required(&self, question: &str) -> bool {
        let message = Some(self.agent_message(question));
        self.running.set_status(TaskState::InputRequired, message)
    }

    /// Answers with a direct message instead of a task: only as the turn's first and only
    /// event. False otherwise.
    pub fn reply(&self, text: &str) -> bool {
        self.reply_with(vec![Part::text(text)])
    }

    /// Answers with a direct message of any `parts` (text, files, data), as
    /// [`reply`](Self::reply) does.
    pub fn reply_with(&self, parts: Vec<Part>) -> bool {
        let message = Message {
            message_id: (self.ids)(),
            role: Role::Agent,
            parts,
            ..Message::default()
        };
        self.running.reply(message)
    }
}
