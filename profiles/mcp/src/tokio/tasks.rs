//! The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28): a tool registered with
//! task support runs in the background when the request's client capabilities declare the
//! extension. `tools/call` answers at once with a `CreateTaskResult` (`resultType: "task"`,
//! the task's id, status and times); the client polls `tasks/get` (the result or error is
//! inlined once the task ends), answers the task's input requests with `tasks/update`, and
//! stops it with `tasks/cancel`.
//!
//! Tasks belong to the caller that created them (another caller's `tasks/get` finds no such
//! task), are bounded in number ([`TaskSettings::max_tasks`]; a full table refuses new tasks
//! rather than forgetting live ones), and a finished task is kept for its time to live, then
//! forgotten.

use std::prelude::rust_2021::*;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{json, Map, Value};
use tokio::sync::Notify;

use crate::methods;

/// The extension's name, under `capabilities.extensions` (the server's and the client's).
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// Whether a tool runs as a task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskSupport {
    /// As a task when the client declares the extension, else synchronously.
    Optional,
    /// Only as a task: a client without the extension gets
    /// `MissingRequiredClientCapabilityError` (-32021) naming it.
    Required,
    /// Gathers its input first, then runs as a task: a round that brings no input responses
    /// runs synchronously (and may answer an `InputRequiredResult`); the round that brings
    /// them is answered with a `CreateTaskResult`, the tool running with them in the
    /// background. Without the extension, as [`Required`](TaskSupport::Required).
    AfterInput,
}

/// The bounds of the task table.
#[derive(Debug, Clone, Copy)]
pub struct TaskSettings {
    /// Tasks kept at once, running or finished (default 1 024).
    pub max_tasks: usize,
    /// How long a task is kept after it was created, and at least until it ends (default
    /// 300 s); sent as `ttlMs`.
    pub ttl: Duration,
    /// The polling interval suggested to clients (default 500 ms); sent as `pollIntervalMs`.
    pub poll_interval: Duration,
}

impl Default for TaskSettings {
    fn default() -> Self {
        TaskSettings {
            max_tasks: 1024,
            ttl: Duration::from_secs(300),
            poll_interval: Duration::from_millis(500),
        }
    }
}

/// A task's status on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    Working,
    InputRequired,
    Completed,
    Failed,
    Cancelled,
}

impl Status {
    fn as_str(self) -> &'static str {
        match self {
            Status::Working => "working",
            Status::InputRequired => "input_required",
            Status::Completed => "completed",
            Status::Failed => "failed",
            Status::Cancelled => "cancelled",
        }
    }

    fn is_terminal(self) -> bool {
        matches!(self, Status::Completed | Status::Failed | Status::Cancelled)
    }
}

/// What changes as a task runs.
struct State {
    status: Status,
    updated: SystemTime,
    /// The tool's result (completed) or the protocol error (failed).
    outcome: Option<Value>,
    /// Input requests not answered yet.
    pending: Map<String, Value>,
    /// Answers received for the current round.
    responses: Map<String, Value>,
}

/// One task.
pub(crate) struct Task {
    id: String,
    owner: String,
    created: SystemTime,
    /// When it may be forgotten once it has ended.
    expires: Instant,
    state: Mutex<State>,
    /// Woken when the last pending input request is answered.
    answered: Notify,
    abort: Mutex<Option<tokio::task::AbortHandle>>,
}

impl Task {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Ends the task with `status` and its outcome, unless it has ended already.
    pub(crate) fn finish(&self, status: Status, outcome: Option<Value>) {
        let mut s = self.lock();
        if !s.status.is_terminal() {
            s.status = status;
            s.outcome = outcome;
            s.pending.clear();
            s.updated = SystemTime::now();
        }
    }

    /// Parks the task on input requests; the answers, once every one is in.
    pub(crate) async fn wait_for_input(&self, requests: Map<String, Value>) -> Map<String, Value> {
        {
            let mut s = self.lock();
            s.status = Status::InputRequired;
            s.pending = requests;
            s.responses.clear();
            s.updated = SystemTime::now();
        }
        loop {
            let notified = self.answered.notified();
            {
                let mut s = self.lock();
                if s.pending.is_empty() {
                    s.status = Status::Working;
                    s.updated = SystemTime::now();
                    return std::mem::take(&mut s.responses);
                }
            }
            notified.await;
        }
    }

    /// `tasks/update`: the answers to pending requests (others are ignored).
    fn update(&self, responses: &Map<String, Value>) {
        let mut s = self.lock();
        let mut any = false;
        for (key, answer) in responses {
            if s.pending.remove(key).is_some() {
                s.responses.insert(key.clone(), answer.clone());
                any = true;
            }
        }
        if any {
            s.updated = SystemTime::now();
            if s.pending.is_empty() {
                self.answered.notify_one();
            }
        }
    }

    /// The task as `CreateTaskResult` (`detailed`: as `tasks/get`'s `DetailedTask`).
    fn describe(&self, settings: &TaskSettings, detailed: bool) -> Value {
        let s = self.lock();
        let mut v = json!({
            "resultType": if detailed { "complete" } else { "task" },
            "taskId": self.id,
            "status": s.status.as_str(),
            "createdAt": rfc3339(self.created),
            "lastUpdatedAt": rfc3339(s.updated),
            "ttlMs": millis(settings.ttl),
            "pollIntervalMs": millis(settings.poll_interval),
        });
        if detailed {
            match (s.status, &s.outcome) {
                (Status::Completed, Some(result)) => v["result"] = result.clone(),
                (Status::Failed, Some(error)) => v["error"] = error.clone(),
                (Status::InputRequired, _) => v["inputRequests"] = Value::Object(s.pending.clone()),
                _ => {}
            }
        }
        v
    }
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A time as RFC 3339 in UTC with milliseconds (`2026-07-28T12:00:00.000Z`). Hand-written: the
/// one date format the extension needs does not warrant a date library.
fn rfc3339(t: SystemTime) -> String {
    let since = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (days, rest) = (secs / 86_400, secs % 86_400);
    // Days since 1970-01-01 to a civil date (Howard Hinnant's `civil_from_days`).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rest / 3_600,
        rest % 3_600 / 60,
        rest % 60,
        since.subsec_millis()
    )
}

/// Why a task request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TaskError {
    /// No such task (for this caller).
    Unknown,
    /// The table is full of tasks that are still running or still within their time to live.
    Full,
}

/// Every task of a server.
pub(crate) struct Tasks {
    settings: TaskSettings,
    table: Mutex<HashMap<String, Arc<Task>>>,
}

impl Tasks {
    pub(crate) fn new(settings: TaskSettings) -> Self {
        Tasks {
            settings,
            table: Mutex::new(HashMap::new()),
        }
    }

    /// A new working task owned by `owner`, in the table before its id is returned (a
    /// `tasks/get` right after creation finds it).
    pub(crate) fn create(&self, owner: &str) -> Result<Arc<Task>, TaskError> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.len() >= self.settings.max_tasks {
            let now = Instant::now();
            table.retain(|_, t| !(t.lock().status.is_terminal() && t.expires <= now));
            if table.len() >= self.settings.max_tasks {
                return Err(TaskError::Full);
            }
        }
        let now = SystemTime::now();
        let task = Arc::new(Task {
            id: crate::tokio::request_state::random_id(),
            owner: owner.to_owned(),
            created: now,
            expires: Instant::now() + self.settings.ttl,
            state: Mutex::new(State {
                status: Status::Working,
                updated: now,
                outcome: None,
                pending: Map::new(),
                responses: Map::new(),
            }),
            answered: Notify::new(),
            abort: Mutex::new(None),
        });
        table.insert(task.id.clone(), Arc::clone(&task));
        Ok(task)
    }

    /// Remembers how to stop the task's runner.
    pub(crate) fn set_abort(&self, task: &Task, handle: tokio::task::AbortHandle) {
        *task.abort.lock().unwrap_or_else(PoisonError::into_inner) = Some(handle);
    }

    fn find(&self, owner: &str, id: &str) -> Result<Arc<Task>, TaskError> {
        let table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let task = table.get(id).filter(|t| t.owner == owner);
        let now = Instant::now();
        match task {
            Some(t) if !(t.lock().status.is_terminal() && t.expires <= now) => Ok(Arc::clone(t)),
            _ => Err(TaskError::Unknown),
        }
    }

    /// How long a task is kept.
    pub(crate) fn ttl(&self) -> Duration {
        self.settings.ttl
    }

    pub(crate) fn created(&self, task: &Task) -> Value {
        task.describe(&self.settings, false)
    }

    /// `tasks/get`.
    pub(crate) fn get(&self, owner: &str, id: &str) -> Result<Value, TaskError> {
        Ok(self.find(owner, id)?.describe(&self.settings, true))
    }

    /// `tasks/update`.
    pub(crate) fn update(
        &self,
        owner: &str,
        id: &str,
        responses: &Map<String, Value>,
    ) -> Result<(), TaskError> {
        self.find(owner, id)?.update(responses);
        Ok(())
    }

    /// `tasks/cancel`: stops the runner; the task ends `cancelled` unless it had ended.
    pub(crate) fn cancel(&self, owner: &str, id: &str) -> Result<(), TaskError> {
        let task = self.find(owner, id)?;
        if let Some(h) = task
            .abort
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            h.abort();
        }
        task.finish(Status::Cancelled, None);
        Ok(())
    }
}

/// True when a request's client capabilities declare the tasks extension.
pub(crate) fn declared(capabilities: Option<&Map<String, Value>>) -> bool {
    capabilities
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

/// The error for a client that did not declare the extension.
pub(crate) fn extension_required() -> rpcwire_tokio::RpcError {
    rpcwire_tokio::RpcError::new(
        methods::MISSING_REQUIRED_CLIENT_CAPABILITY,
        format!("Missing required client capability: extension {TASKS_EXTENSION}"),
    )
    .with_data(&json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}))
}

/// The JSON-RPC error a refused task request gets.
pub(crate) fn refusal(e: TaskError) -> rpcwire_tokio::RpcError {
    match e {
        TaskError::Unknown => rpcwire_tokio::RpcError::new(
            rpcwire_tokio::ErrorCode::INVALID_PARAMS,
            "Invalid params: unknown taskId",
        ),
        TaskError::Full => rpcwire_tokio::RpcError::internal("too many tasks"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_785_240_000_123);
        assert_eq!(rfc3339(t), "2026-07-28T12:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }

    #[test]
    fn tasks_belong_to_their_owner_and_the_table_is_bounded() {
        let tasks = Tasks::new(TaskSettings {
            max_tasks: 2,
            ttl: Duration::ZERO,
            ..TaskSettings::default()
        });
        let a = tasks.create("alice").unwrap_or_else(|_| unreachable!());
        assert!(tasks.get("alice", &a.id).is_ok());
        assert_eq!(tasks.get("mallory", &a.id), Err(TaskError::Unknown));
        let b = tasks.create("alice").unwrap_or_else(|_| unreachable!());
        // Both running: no room, none forgotten.
        assert!(matches!(tasks.create("alice"), Err(TaskError::Full)));
        // One ends (its time to live is zero): its place is taken.
        b.finish(Status::Completed, Some(json!({"content": []})));
        assert!(tasks.create("alice").is_ok());
        assert_eq!(tasks.get("alice", &b.id), Err(TaskError::Unknown));
        assert!(tasks.get("alice", &a.id).is_ok());
    }

    #[tokio::test]
    async fn input_rounds_wait_for_every_answer() {
        let tasks = Tasks::new(TaskSettings::default());
        let t = tasks.create("a").unwrap_or_else(|_| unreachable!());
        let waiter = Arc::clone(&t);
        let mut requests = Map::new();
        requests.insert("x".into(), json!({"method": "elicitation/create"}));
        requests.insert("y".into(), json!({"method": "elicitation/create"}));
        let round = tokio::spawn(async move { waiter.wait_for_input(requests).await });
        tokio::task::yield_now().await;
        let mut one = Map::new();
        one.insert("x".into(), json!(1));
        one.insert("zzz".into(), json!(0));
        tasks.update("a", &t.id, &one).unwrap_or_default();
        let got = tasks.get("a", &t.id).unwrap_or_default();
        assert_eq!(got["status"], "input_required");
        assert_eq!(got["inputRequests"].as_object().map(|m| m.len()), Some(1));
        let mut two = Map::new();
        two.insert("y".into(), json!(2));
        tasks.update("a", &t.id, &two).unwrap_or_default();
        let answers = round.await.unwrap_or_default();
        assert_eq!(Value::Object(answers), json!({"x": 1, "y": 2}));
    }
}
