//! The task runtime behind the methods: which tasks have a turn running, starting a turn for
//! a client's message (a new task, or the next turn of one waiting for input), running it in a
//! task of its own (so that it outlives the request and the client's connection), ending it
//! however it ends (returned, cancelled, panicked), and cancelling.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::Waker;
use std::time::{Duration, SystemTime};

use rpcwire_service::Identity;
use tokio::sync::broadcast;

use crate::agent::{
    event_channel, push_history, Agent, Running, TaskContext, TaskLimits, TurnResult,
};
use crate::error::{A2aError, ErrorKind};
use crate::push::config::TaskPushNotificationConfig as Config;
use crate::push::ConfigError;
use crate::push::{Push, TaskPushNotificationConfig};
use crate::request::TurnRequest;
use crate::store::{
    leasable, EventLog, Lease, LeaseConfig, LoggedEvent, PushConfigStore, StoreError, TaskStore,
};
use crate::types::{
    ListTasksRequest, ListTasksResponse, Message, Role, StreamResponse, Task, TaskState,
    TaskStatus, TaskStatusUpdateEvent,
};

use super::publish::Publisher;
use super::writes::{Write, Writes};

/// The status message of a task failed because the process running it stopped renewing its
/// lease.
pub(crate) const LAPSED: &str =
    "the agent's process stopped while working on this task (its lease lapsed)";

/// The tasks of one server: the agent, the store, and the turns running.
pub(crate) struct Tasks {
    agent: Arc<dyn Agent>,
    store: Arc<dyn TaskStore>,
    /// The turns' writes to the store, in order, not waited for.
    pub(crate) writes: Arc<Writes>,
    /// The turns' events to the event log and then to their subscribers, in order.
    pub(crate) publisher: Arc<Publisher>,
    /// The most events read from the log at once for a resumed stream.
    max_replay: usize,
    /// This server's id as a lease holder, and its leases' timing.
    holder: String,
    leases: LeaseConfig,
    /// Whether the task renewing this server's leases runs.
    keeping: AtomicBool,
    limits: TaskLimits,
    /// How long a request waits for a turn (`SendMessage`'s answer, a cancellation).
    pub(crate) send_wait: Duration,
    table: Mutex<Table>,
    /// Push notifications, when the server sends them.
    pub(crate) push: Option<Arc<Push>>,
    /// Where push configs are written through to, when beyond memory.
    push_store: Option<Arc<dyn PushConfigStore>>,
    /// Held from a change of push configs to its write to `push_store`, so that the store's
    /// writes are in the order of the changes.
    push_writes: tokio::sync::Mutex<()>,
}

/// The tasks that have a turn running, and the event channels of tasks waiting for input
/// that someone subscribed to (the next turn publishes on it, so that a subscription lasts
/// until the task reaches a terminal state).
#[derive(Default)]
struct Table {
    running: HashMap<String, Arc<Running>>,
    waiting: HashMap<String, broadcast::Sender<Arc<LoggedEvent>>>,
}

/// Where the tasks' stream events are logged (and how many are read from the log at once),
/// and where push configs are written through to.
pub(crate) struct TaskEvents {
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) push: Option<Arc<dyn PushConfigStore>>,
    pub(crate) max_replay: usize,
}

/// The events a subscription to a task gets: the task as it is, and its events from then on.
pub(crate) type Subscription = (Task, broadcast::Receiver<Arc<LoggedEvent>>);

/// A turn just started: the turn, and its events from the first on.
pub(crate) type Started = (Arc<Running>, broadcast::Receiver<Arc<LoggedEvent>>);

impl Tasks {
    pub(crate) fn new(
        agent: Arc<dyn Agent>,
        store: Arc<dyn TaskStore>,
        limits: TaskLimits,
        send_wait: Duration,
        push: Option<Arc<Push>>,
        leases: LeaseConfig,
        stores: TaskEvents,
    ) -> Self {
        let writes = Writes::new(Arc::clone(&store));
        Tasks {
            agent,
            writes: Arc::clone(&writes),
            publisher: Publisher::new(stores.log, writes, limits.max_pending_events),
            max_replay: stores.max_replay,
            store,
            holder: new_id("server"),
            leases,
            keeping: AtomicBool::new(false),
            limits,
            send_wait,
            table: Mutex::default(),
            push,
            push_store: stores.push,
            push_writes: tokio::sync::Mutex::new(()),
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The task of that id as it is now: its running turn's snapshot, a write the store has
    /// not yet, or the store's.
    pub(crate) async fn get(self: &Arc<Self>, id: &str) -> Result<Option<Task>, A2aError> {
        self.keep_leases();
        if let Some(running) = self.running(id) {
            return Ok(Some(running.snapshot()));
        }
        match self.writes.latest(id) {
            Some(Write::Put(task)) => return Ok(Some(*task)),
            Some(Write::Remove) => return Ok(None),
            None => {}
        }
        self.store.get(id).await.map_err(internal)
    }

    /// The task of that id, when `identity` may see it; else TaskNotFound.
    pub(crate) async fn visible(
        self: &Arc<Self>,
        id: &str,
        identity: &Identity,
    ) -> Result<Task, A2aError> {
        self.get(id)
            .await?
            .filter(|t| t.visible_to(subject(identity)))
            .ok_or_else(|| ErrorKind::TaskNotFound.into())
    }

    /// A page of `ListTasks`.
    pub(crate) async fn list(
        self: &Arc<Self>,
        query: &ListTasksRequest,
        caller: Option<&str>,
        max_page: usize,
    ) -> Result<ListTasksResponse, StoreError> {
        self.keep_leases();
        self.store.list(query, caller, max_page).await
    }

    /// Whether the store holds task `id`.
    pub(crate) async fn held(self: &Arc<Self>, id: &str) -> bool {
        matches!(self.get(id).await, Ok(Some(_)))
    }

    /// Starts the task that renews this server's leases and fails the tasks whose lease
    /// lapsed, once (the first call made in a runtime); it stops when the server is dropped.
    pub(crate) fn keep_leases(self: &Arc<Self>) {
        if self.keeping.load(Ordering::Relaxed) || self.keeping.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            self.keeping.store(false, Ordering::Release);
            return;
        };
        self.cancel_on_request(&runtime);
        let tasks = Arc::downgrade(self);
        let every = self.leases.renew_interval();
        runtime.spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if !Tasks::renew_once(&tasks).await {
                    return;
                }
            }
        });
    }

    /// One round of [`keep_leases`](Self::keep_leases); false once the server is gone.
    async fn renew_once(tasks: &Weak<Tasks>) -> bool {
        let Some(tasks) = tasks.upgrade() else {
            return false;
        };
        let ids: Vec<String> = tasks.table().running.keys().cloned().collect();
        if !ids.is_empty() {
            if let Err(e) = tasks.store.renew(&tasks.lease(), &ids).await {
                tracing::warn!(error = %e, "leases not renewed");
            }
        }
        match tasks
            .store
            .fail_lapsed(SystemTime::now(), &tasks.holder, LAPSED)
            .await
        {
            Ok(failed) => {
                for task in failed {
                    tracing::warn!(task = task.id, "a task's lease lapsed: failed");
                    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
                        task_id: task.id.clone(),
                        context_id: task.context_id.clone(),
                        status: task.status.clone(),
                        metadata: None,
                    });
                    if let Some(push) = &tasks.push {
                        push.notify(&task.id, &event);
                    }
                    // Subscribers here to the task of a process that died: the final state
                    // ends their streams.
                    let event = Arc::new(event);
                    let id = tasks.log(&task, Arc::clone(&event)).await;
                    if let Some(tx) = tasks.table().waiting.remove(&task.id) {
                        let _ = tx.send(Arc::new(LoggedEvent { id, event }));
                    }
                }
            }
            Err(e) => tracing::warn!(error = %e, "lapsed leases not swept"),
        }
        true
    }

    /// Appends `event` of `task` to the event log: its id there, or 0 when it was not logged.
    async fn log(&self, task: &Task, event: Arc<StreamResponse>) -> u64 {
        match self
            .publisher
            .log
            .append(&task.id, task.owner.as_deref(), event)
            .await
        {
            Ok(id) => id,
            Err(e) => {
                tracing::warn!(task = task.id, error = %e, "a task's event was not logged");
                0
            }
        }
    }

    /// The events of task `id`'s log after event `after`, to `identity`.
    pub(crate) async fn read_log(
        &self,
        id: &str,
        identity: &Identity,
        after: u64,
    ) -> Result<Vec<LoggedEvent>, StoreError> {
        // In pages: a log may keep more than a page (the log bounds the whole).
        let mut events: Vec<LoggedEvent> = Vec::new();
        loop {
            let from = events.last().map_or(after, |e| e.id);
            let page = self
                .publisher
                .log
                .read_after(id, subject(identity), from, self.max_replay)
                .await?;
            let whole = page.len() < self.max_replay;
            events.extend(page);
            if whole {
                return Ok(events);
            }
        }
    }

    /// A lease of this server's from now.
    fn lease(&self) -> Lease {
        Lease {
            holder: self.holder.clone(),
            until: SystemTime::now() + self.leases.duration,
        }
    }

    /// How many tasks have a turn running.
    pub(crate) fn running_count(&self) -> usize {
        self.table().running.len()
    }

    /// The running turn of task `id`.
    pub(crate) fn running(&self, id: &str) -> Option<Arc<Running>> {
        self.table().running.get(id).cloned()
    }

    /// Subscribes to task `id`, not in a terminal state: its running turn's events, or, for a
    /// task waiting for input, the events of the turns to come.
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        id: &str,
        identity: &Identity,
    ) -> Result<Subscription, A2aError> {
        let visible = |t: &Task| t.visible_to(subject(identity));
        if let Some(running) = self.running(id) {
            let task = running.snapshot();
            if !visible(&task) {
                return Err(ErrorKind::TaskNotFound.into());
            }
            running.streamed.store(true, Ordering::Relaxed);
            return Ok((task, running.events.subscribe()));
        }
        let task = self.visible(id, identity).await?;
        let mut table = self.table();
        // A turn started while the store was read: its events from now on.
        if let Some(running) = table.running.get(id) {
            running.streamed.store(true, Ordering::Relaxed);
            return Ok((running.snapshot(), running.events.subscribe()));
        }
        // A turn over whose last events wait for the log: those, as they are logged.
        if let Some(events) = self.publisher.subscribe_pending(id) {
            return Ok((task, events));
        }
        if task.status.state.is_terminal() {
            return Err(A2aError::with_message(
                ErrorKind::UnsupportedOperation,
                format!("Task {id} is in a terminal state"),
            ));
        }
        if !table.waiting.contains_key(id) {
            // Channels whose subscribers all went away are dropped as new ones come.
            table.waiting.retain(|_, tx| tx.receiver_count() > 0);
        }
        let tx = table
            .waiting
            .entry(id.to_owned())
            .or_insert_with(|| event_channel(self.limits));
        Ok((task, tx.subscribe()))
    }

    /// Starts a turn for `message` from `identity`: a new task, or the next turn of one waiting
    /// for input. The events receiver is subscribed before the turn runs, so that it misses
    /// none. `streamed`: a stream follows the turn from its start (its events are logged for
    /// it to resume from).
    pub(crate) async fn start_turn(
        self: &Arc<Self>,
        mut message: Message,
        identity: Identity,
        request: Arc<TurnRequest>,
        push: Option<TaskPushNotificationConfig>,
        streamed: bool,
    ) -> Result<Started, A2aError> {
        // Read with room for more parts than came; the message is kept while the task lives.
        message.parts.shrink_to_fit();
        if message.message_id.is_empty() {
            return Err(A2aError::with_message(
                ErrorKind::InvalidParams,
                "message.messageId is required",
            ));
        }
        // The role as sent; a message that names none is the client's.
        if message.role == Role::Unspecified {
            message.role = Role::User;
        }
        let (task, continuation) = if message.task_id.is_empty() {
            (self.new_task(&mut message, &identity), false)
        } else {
            let task = self.next_turn(&mut message, &identity).await?;
            // Its configs, kept before a restart, see the turn's events.
            self.load_push(&task.id).await?;
            (task, true)
        };
        if let Some(config) = push {
            // Before the turn's first event: the config sees them all.
            let config = TaskPushNotificationConfig {
                task_id: task.id.clone(),
                ..config
            };
            self.insert_push(config)
                .await?
                .map_err(|e| A2aError::with_message(ErrorKind::InvalidParams, e.to_string()))?;
        }
        self.keep_leases();
        // The previous turn's writes first (a store that does not answer at once may still
        // be writing them): this one must not be overwritten by them.
        self.writes.settled(&task.id).await;
        // Stored with this server's lease before the turn runs: a task of a process that
        // dies from here on is failed once the lease lapses.
        self.store
            .put(task.clone(), Some(self.lease()))
            .await
            .map_err(|e| {
                A2aError::with_message(ErrorKind::Internal, format!("Task not accepted: {e}"))
            })?;
        let task_id = task.id.clone();
        let running = {
            let mut table = self.table();
            if table.running.contains_key(&task_id) {
                // Two continuations of one task at once: the other came first.
                return Err(A2aError::with_message(
                    ErrorKind::UnsupportedOperation,
                    format!("Task {task_id} is running; send when it asks for input"),
                ));
            }
            // Subscribers waiting for this turn get its events.
            let waiting = table.waiting.remove(&task_id);
            let streamed = streamed || waiting.as_ref().is_some_and(|w| w.receiver_count() > 0);
            let running = Running::new(
                task,
                (Arc::clone(&self.writes), Arc::clone(&self.publisher)),
                self.limits,
                waiting,
                self.push.clone(),
                streamed,
            );
            table.running.insert(task_id.clone(), Arc::clone(&running));
            running
        };
        let events = running.events.subscribe();
        let ctx = TaskContext {
            running: Arc::clone(&running),
            message: Box::new(message),
            continuation,
            identity,
            request,
            ids: Arc::new(|| new_id("msg")),
        };
        let end = TurnEnd {
            tasks: Arc::clone(self),
            run: Arc::clone(&running),
            task_id,
            how: Ended::Unfinished,
            continuation,
        };
        let agent = Arc::clone(&self.agent);
        // The turn's first poll, here in the request's task: a turn that ends without
        // waiting (most turns of simple agents) costs no task, and its request no wait. One
        // that waits goes on in a task of its own, which polls it again at once with a real
        // waker (the no-op one given here loses nothing). A panic of the agent's here is
        // caught as tokio catches one in the turn's task: the guard, dropped, fails the task.
        let first = catch_unwind(AssertUnwindSafe(move || {
            let turn = agent.execute(ctx);
            let mut run: Pin<Box<dyn Future<Output = ()> + Send>> = Box::pin(async move {
                let mut end = end;
                let mut phase = end.run.phase.subscribe();
                end.ended(tokio::select! {
                    result = turn => Ended::Returned(result),
                    _ = phase.wait_for(|p| p.cancel) => Ended::Cancelled,
                });
            });
            let mut cx = std::task::Context::from_waker(Waker::noop());
            run.as_mut().poll(&mut cx).is_pending().then_some(run)
        }));
        if let Ok(Some(run)) = first {
            tokio::spawn(run);
        }
        Ok((running, events))
    }

    /// A new task for `message`, which names none.
    fn new_task(&self, message: &mut Message, identity: &Identity) -> Task {
        let id = new_id("task");
        if message.context_id.is_empty() {
            message.context_id = new_id("ctx");
        }
        message.task_id.clone_from(&id);
        Task {
            id,
            context_id: message.context_id.clone(),
            status: TaskStatus {
                state: TaskState::Submitted,
                message: None,
                // Every task has a status time: `ListTasks` orders and filters by it.
                timestamp: Some(crate::types::now_rfc3339()),
            },
            history: vec![message.clone()],
            owner: subject(identity).map(str::to_owned),
            ..Task::default()
        }
    }

    /// The task `message` names, taking it as its next turn's input.
    async fn next_turn(
        self: &Arc<Self>,
        message: &mut Message,
        identity: &Identity,
    ) -> Result<Task, A2aError> {
        let mut task = self.visible(&message.task_id, identity).await?;
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
        push_history(&mut task, message.clone(), self.limits.max_history);
        Ok(task)
    }

    /// Cancels task `id`: its running turn is dropped, or the task waiting for input is
    /// cancelled here.
    pub(crate) async fn cancel(
        self: &Arc<Self>,
        id: &str,
        identity: &Identity,
    ) -> Result<Task, A2aError> {
        let caller = subject(identity);
        if let Some(running) = self.running(id) {
            if !running.snapshot().visible_to(caller) {
                return Err(ErrorKind::TaskNotFound.into());
            }
            let mut phase = running.phase.subscribe();
            running.phase.send_modify(|p| p.cancel = true);
            // The turn's future is dropped at its next await; a turn that never yields
            // still answers the request, as it is now.
            let _ = tokio::time::timeout(self.send_wait, phase.wait_for(|p| p.done)).await;
            // Answered once the store has it (as `SendMessage` is).
            let _ = tokio::time::timeout(self.send_wait, self.writes.settled(id)).await;
            let task = running.snapshot();
            if task.status.state == TaskState::Canceled {
                return Ok(task);
            }
            return Err(ErrorKind::TaskNotCancelable.into());
        }
        let mut task = self.visible(id, identity).await?;
        if task.status.state.is_terminal() {
            return Err(ErrorKind::TaskNotCancelable.into());
        }
        // A turn running on another replica: asked to stop there, and its end waited for.
        if leasable(task.status.state) {
            match self.store.request_cancel(id).await {
                Ok(true) => return self.canceled_elsewhere(id, identity).await,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(task = id, error = %e, "a cancellation was not asked for");
                    return Err(ErrorKind::Internal.into());
                }
            }
        }
        // Waiting for input, no turn running: cancelled here.
        task.status = TaskStatus {
            state: TaskState::Canceled,
            message: None,
            timestamp: Some(crate::types::now_rfc3339()),
        };
        self.writes.write(id, Write::Put(Box::new(task.clone())));
        let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
            task_id: task.id.clone(),
            context_id: task.context_id.clone(),
            status: task.status.clone(),
            metadata: None,
        });
        if let Some(push) = &self.push {
            push.notify(&task.id, &event);
        }
        let event = Arc::new(event);
        let logged = self.log(&task, Arc::clone(&event)).await;
        if let Some(tx) = self.table().waiting.remove(id) {
            let _ = tx.send(Arc::new(LoggedEvent { id: logged, event }));
        }
        Ok(task)
    }

    /// Waits, at most `send_wait`, for task `id`, whose cancellation was asked of the
    /// replica running it, to end: the task once canceled, `TaskNotCancelable` when it ended
    /// otherwise or not in time (its replica died: the lease's sweep fails it).
    async fn canceled_elsewhere(
        self: &Arc<Self>,
        id: &str,
        identity: &Identity,
    ) -> Result<Task, A2aError> {
        let deadline = tokio::time::Instant::now() + self.send_wait;
        let mut every = Duration::from_millis(5);
        loop {
            let task = self.visible(id, identity).await?;
            match task.status.state {
                TaskState::Canceled => return Ok(task),
                s if s.is_terminal() => break,
                _ => {}
            }
            if tokio::time::Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep_until(deadline.min(tokio::time::Instant::now() + every)).await;
            every = (every * 2).min(Duration::from_millis(100));
        }
        Err(ErrorKind::TaskNotCancelable.into())
    }

    /// Cancels, when its turn runs here, each task another replica (or this one) asked to
    /// cancel through the store ([`TaskStore::request_cancel`]); ends with the server or the
    /// store's channel.
    fn cancel_on_request(self: &Arc<Self>, runtime: &tokio::runtime::Handle) {
        let Some(mut requests) = self.store.cancel_requests() else {
            return;
        };
        let tasks = Arc::downgrade(self);
        runtime.spawn(async move {
            loop {
                let id = match requests.recv().await {
                    Ok(id) => id,
                    Err(broadcast::error::RecvError::Lagged(n)) => {
                        tracing::warn!(lost = n, "cancellation requests lost (too many at once)");
                        continue;
                    }
                    Err(broadcast::error::RecvError::Closed) => return,
                };
                let Some(tasks) = tasks.upgrade() else {
                    return;
                };
                if let Some(running) = tasks.running(&id) {
                    running.phase.send_modify(|p| p.cancel = true);
                }
            }
        });
    }

    /// A turn is over: the task's state settled, the turn forgotten, its waiters woken.
    fn end_turn(&self, run: &Running, task_id: &str, how: Ended, continuation: bool) {
        let (replied, announced) = {
            let turn = run.turn.lock().unwrap_or_else(PoisonError::into_inner);
            (turn.reply.is_some(), turn.announced)
        };
        let failed = |why: &str| {
            let msg = Message::text(Role::Agent, new_id("msg"), why);
            run.set_status(TaskState::Failed, Some(msg));
        };
        match how {
            // A direct message: no task remains.
            _ if replied => self.writes.write(task_id, Write::Remove),
            Ended::Cancelled => {
                run.set_status(TaskState::Canceled, None);
            }
            Ended::Returned(Err(e)) if !announced => {
                // Nothing published: the request answers the error. A new task is
                // forgotten; a task waiting for input stays as it was.
                if !continuation {
                    self.writes.write(task_id, Write::Remove);
                }
                run.turn
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .error = Some(e);
            }
            Ended::Returned(Err(e)) if !run.ended() => failed(&e.message),
            Ended::Returned(Err(e)) => {
                tracing::warn!(
                    task = task_id,
                    error = %e,
                    "an agent's turn returned an error after its final state: ignored"
                );
            }
            Ended::Returned(Ok(())) if !run.ended() => {
                failed("the agent ended its turn without a final state");
            }
            Ended::Returned(Ok(())) => {}
            Ended::Unfinished => {
                // What went wrong is in the log (a panic's message, printed by the panic
                // hook); the client learns only that the turn failed.
                tracing::warn!(
                    task = task_id,
                    "an agent's turn did not finish (a panic, or the server stopping): failed"
                );
                run.turn
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .unfinished = true;
                failed("the agent failed");
            }
        }
        let mut table = self.table();
        table.running.remove(task_id);
        if run.snapshot().status.state.is_interrupted() && run.events.receiver_count() > 0 {
            // Subscribers stay for the next turn.
            table.waiting.insert(task_id.to_owned(), run.events.clone());
        }
        // A channel whose subscribers all went away holds its last events: dropped.
        table.waiting.retain(|_, tx| tx.receiver_count() > 0);
        drop(table);
        run.phase.send_modify(|p| p.done = true);
    }
}

impl Tasks {
    /// Adds (or replaces) a push config, written through to the push config store: the
    /// config as kept, or why it was refused (the outer error: the store failed).
    pub(crate) async fn insert_push(
        self: &Arc<Self>,
        config: Config,
    ) -> Result<Result<Config, ConfigError>, A2aError> {
        let push = self
            .push
            .as_deref()
            .ok_or(ErrorKind::PushNotificationNotSupported)?;
        let _order = self.push_writes.lock().await;
        let task_id = config.task_id.clone();
        self.load_push(&task_id).await?;
        let gone = self.gone_push_tasks(push).await;
        let kept = match push.insert(config, || new_id("push"), |t| !gone.contains(t)) {
            Ok(kept) => kept,
            Err(e) => return Ok(Err(e)),
        };
        self.save_push(push, &task_id).await?;
        Ok(Ok(kept))
    }

    /// Removes push config `id` of task `task_id`, written through to the store.
    pub(crate) async fn delete_push(
        self: &Arc<Self>,
        task_id: &str,
        id: &str,
    ) -> Result<(), A2aError> {
        let push = self
            .push
            .as_deref()
            .ok_or(ErrorKind::PushNotificationNotSupported)?;
        let _order = self.push_writes.lock().await;
        self.load_push(task_id).await?;
        push.delete(task_id, id);
        self.save_push(push, task_id).await
    }

    /// Reads task `task_id`'s push configs from the store when memory has none of it.
    pub(crate) async fn load_push(&self, task_id: &str) -> Result<(), A2aError> {
        let (Some(push), Some(store)) = (&self.push, &self.push_store) else {
            return Ok(());
        };
        if push.configs_of(task_id).is_some() {
            return Ok(());
        }
        let configs = store.load_configs(task_id).await.map_err(internal)?;
        push.restore(task_id, configs);
        Ok(())
    }

    async fn save_push(&self, push: &Push, task_id: &str) -> Result<(), A2aError> {
        let Some(store) = &self.push_store else {
            return Ok(());
        };
        let configs = push.configs_of(task_id).unwrap_or_default();
        store.save_configs(task_id, configs).await.map_err(internal)
    }

    /// The tasks with push configs that the store no longer holds, looked up only when the
    /// config table is full (then its configs may make room).
    pub(crate) async fn gone_push_tasks(self: &Arc<Self>, push: &Push) -> HashSet<String> {
        let mut gone = HashSet::new();
        for id in push.tasks_when_full() {
            if !self.held(&id).await {
                gone.insert(id);
            }
        }
        gone
    }
}

/// A store's failure, as the generic internal error (what failed is in the log).
fn internal(e: StoreError) -> A2aError {
    tracing::warn!(error = %e, "the task store failed");
    ErrorKind::Internal.into()
}

/// How a turn ended.
#[derive(Debug)]
enum Ended {
    /// Its future completed, with this result.
    Returned(TurnResult),
    /// A client cancelled the task: its future was dropped.
    Cancelled,
    /// Its future was dropped before either: the agent panicked, or the runtime shut down.
    Unfinished,
}

/// Ends a turn when dropped, however it ends: after its future completes or is cancelled, and
/// when the agent panics (the future is dropped unfinished). A guard in the turn's own future
/// sees a panic without a second task per running turn.
struct TurnEnd {
    tasks: Arc<Tasks>,
    run: Arc<Running>,
    task_id: String,
    how: Ended,
    /// The turn continues a task that waited for input.
    continuation: bool,
}

impl TurnEnd {
    /// Records how the turn ended (without this, it did not finish).
    fn ended(&mut self, how: Ended) {
        self.how = how;
    }
}

impl Drop for TurnEnd {
    fn drop(&mut self) {
        let how = std::mem::replace(&mut self.how, Ended::Unfinished);
        self.tasks
            .end_turn(&self.run, &self.task_id, how, self.continuation);
    }
}

/// `task` with at most the latest `n` history messages.
pub(crate) fn with_history(mut task: Task, n: Option<i32>) -> Task {
    if let Some(n) = n.and_then(|n| usize::try_from(n).ok()) {
        let over = task.history.len().saturating_sub(n);
        task.history.drain(..over);
    }
    task
}

/// A history length a request may ask for: none, or not negative.
pub(crate) fn check_history_length(n: Option<i32>) -> Result<(), A2aError> {
    if n.is_some_and(|n| n < 0) {
        return Err(A2aError::with_message(
            ErrorKind::InvalidParams,
            "history length must be non-negative",
        ));
    }
    Ok(())
}

/// The subject of an authenticated caller, who owns the tasks it starts; `None` for an
/// anonymous one.
pub(crate) fn subject(identity: &Identity) -> Option<&str> {
    identity.is_authenticated().then(|| identity.subject())
}

/// A fresh id no client can guess.
pub(crate) fn new_id(prefix: &str) -> String {
    rpcwire_http::profile::random_id(prefix).unwrap_or_else(|| {
        static FALLBACK: AtomicU64 = AtomicU64::new(1);
        format!("{prefix}-{}", FALLBACK.fetch_add(1, Ordering::Relaxed))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn history_trimmed_to_latest() {
        let mut t = Task::default();
        for i in 0..5 {
            t.history
                .push(Message::text(Role::User, i.to_string(), "x"));
        }
        let t = with_history(t, Some(2));
        assert_eq!(t.history.len(), 2);
        assert_eq!(t.history[0].message_id, "3");
    }
}
