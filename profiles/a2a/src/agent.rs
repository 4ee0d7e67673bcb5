//! An agent as a handler: [`Agent::execute`] runs one turn of a task with a [`TaskContext`]
//! through which it reports status, artifacts, and the turn's end (completed, failed,
//! input required), or answers with a direct message. The runtime keeps the task's snapshot
//! in the store and sends each event to the task's subscribers.

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};

use rpcwire_service::Identity;
use tokio::sync::{broadcast, watch};

use crate::store::TaskStore;
use crate::types::{
    now_rfc3339, Artifact, Message, Part, Role, StreamResponse, Task, TaskArtifactUpdateEvent,
    TaskState, TaskStatus, TaskStatusUpdateEvent,
};

/// The future of one turn.
pub type TurnFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// What an agent does with a message: one turn of a task. The turn ends when the future
/// does; if it ends without a final or interrupted state, the task fails. Cancelling the task
/// drops the future: the work stops at its next `.await`.
pub trait Agent: Send + Sync + 'static {
    /// Runs a turn.
    fn execute(&self, ctx: TaskContext) -> TurnFuture;
}

impl<F, Fut> Agent for F
where
    F: Fn(TaskContext) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, ctx: TaskContext) -> TurnFuture {
        Box::pin(self(ctx))
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
}

impl Default for TaskLimits {
    fn default() -> Self {
        TaskLimits {
            max_history: 100,
            max_artifacts: 64,
            max_artifact_parts: 1024,
            event_buffer: 16,
        }
    }
}

/// What a turn published.
#[derive(Debug, Default)]
pub(crate) struct TurnState {
    /// The task event has been sent (the first event of a task's turn).
    announced: bool,
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
    pub(crate) events: broadcast::Sender<Arc<StreamResponse>>,
    /// Whether a cancel was asked for, and whether the turn is over (the runner has
    /// finished): one channel for both, as each costs a few hundred bytes per running task.
    pub(crate) phase: watch::Sender<Phase>,
    store: Arc<dyn TaskStore>,
    limits: TaskLimits,
}

impl Running {
    /// A turn of `task`, publishing on `events` (the channel its subscribers waiting for the
    /// turn already hold) or on a new channel.
    pub(crate) fn new(
        task: Task,
        store: Arc<dyn TaskStore>,
        limits: TaskLimits,
        events: Option<broadcast::Sender<Arc<StreamResponse>>>,
    ) -> Arc<Self> {
        Arc::new(Running {
            task: Mutex::new(task),
            turn: Mutex::default(),
            events: events.unwrap_or_else(|| event_channel(limits)),
            phase: watch::channel(Phase::default()).0,
            store,
            limits,
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
        // No subscriber is fine: the snapshot in the store has it.
        let _ = self.events.send(Arc::new(event));
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
        let _ = self.store.put(task.clone());
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
            let _ = self.store.put(task.clone());
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

    fn add_artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> bool {
        if !self.open() {
            return false;
        }
        self.announce();
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
            let _ = self.store.put(task.clone());
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
pub(crate) fn event_channel(limits: TaskLimits) -> broadcast::Sender<Arc<StreamResponse>> {
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
    pub(crate) message: Message,
    pub(crate) continuation: bool,
    /// Who sent the message, as the server's authenticator established it (only the
    /// identity: a turn keeps it while it runs, and the request's caller is some hundreds of
    /// bytes more per open stream).
    pub(crate) identity: Identity,
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
        let task = self.task();
        Message {
            message_id: (self.ids)(),
            context_id: task.context_id,
            task_id: task.id,
            role: Role::Agent,
            parts: vec![Part::text(text)],
            ..Message::default()
        }
    }

    /// Reports the task working, with an optional word on progress. False once the turn has
    /// ended.
    pub fn working(&self, text: Option<&str>) -> bool {
        let message = text.map(|t| self.agent_message(t));
        self.running.set_status(TaskState::Working, message)
    }

    /// Adds an artifact, or a chunk to one (`append`: added to the artifact of the same id).
    /// False once the turn has ended or past the task's limits.
    pub fn artifact(&self, artifact: Artifact, append: bool, last_chunk: bool) -> bool {
        self.running.add_artifact(artifact, append, last_chunk)
    }

    /// Adds a one-part text artifact.
    pub fn text_artifact(&self, id: &str, text: impl Into<String>) -> bool {
        let artifact = Artifact {
            artifact_id: id.to_owned(),
            name: id.to_owned(),
            parts: vec![Part::text(text)],
            ..Artifact::default()
        };
        self.artifact(artifact, false, false)
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
        let message = Message {
            message_id: (self.ids)(),
            role: Role::Agent,
            parts: vec![Part::text(text)],
            ..Message::default()
        };
        self.running.reply(message)
    }
}
