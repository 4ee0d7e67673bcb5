//! What the SQL stores (SQLite's and PostgreSQL's) share beyond their SQL: a task row's JSON
//! columns read back into the task, a state's name as stored, and a `ListTasks` page put
//! together from the rows of its query (one row past the page: there are more).

use std::time::{SystemTime, UNIX_EPOCH};

use super::memory::Cursor;
use crate::timestamp::parse_micros;
use crate::types::{Artifact, ListTasksResponse, Message, Task, TaskState};

/// Microseconds since the epoch, as the time columns keep them.
pub(super) fn micros(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// The columns of one task row that come from the task itself, as both stores write them
/// ([`decode`] reads the JSON ones back).
pub(super) struct Columns {
    /// The task without its history and artifacts, as JSON.
    pub(super) body: String,
    /// Its history, as JSON.
    pub(super) history: String,
    /// Its artifacts, as JSON.
    pub(super) artifacts: String,
    /// Its state's name ([`state_name`]).
    pub(super) state: String,
    /// Its status's time in microseconds since the epoch (0: none, or unreadable).
    pub(super) status_at: i64,
}

/// `task`'s row columns; its history and artifacts are taken out of it (they have columns
/// of their own), the rest of it is left for the row's other columns.
pub(super) fn encode(task: &mut Task) -> Result<Columns, serde_json::Error> {
    let history = serde_json::to_string(&std::mem::take(&mut task.history))?;
    let artifacts = serde_json::to_string(&std::mem::take(&mut task.artifacts))?;
    Ok(Columns {
        body: serde_json::to_string(&*task)?,
        history,
        artifacts,
        state: state_name(task.status.state)?,
        status_at: task
            .status
            .timestamp
            .as_deref()
            .and_then(parse_micros)
            .unwrap_or(0),
    })
}

/// A state's name as the `state` column keeps it (its JSON name).
pub(super) fn state_name(state: TaskState) -> Result<String, serde_json::Error> {
    Ok(match serde_json::to_value(state)? {
        serde_json::Value::String(s) => s,
        other => other.to_string(),
    })
}

/// The columns of one task row (`task`, `history`, `artifacts` as JSON, `owner`), read back
/// into the task.
pub(super) fn decode(
    task: &str,
    history: &str,
    artifacts: &str,
    owner: Option<String>,
) -> Result<Task, serde_json::Error> {
    let mut t: Task = serde_json::from_str(task)?;
    t.history = serde_json::from_str::<Vec<Message>>(history)?;
    t.artifacts = serde_json::from_str::<Vec<Artifact>>(artifacts)?;
    t.owner = owner;
    Ok(t)
}

/// A page of at most `size` tasks from `rows` (the query asked for one more, to know whether
/// more follow), each read by `read` into the task and its cursor; `total` tasks match.
pub(super) fn page<R, E>(
    rows: impl IntoIterator<Item = Result<R, E>>,
    size: usize,
    total: i64,
    read: impl Fn(R) -> Result<(Task, Cursor), E>,
) -> Result<ListTasksResponse, E> {
    let mut tasks = Vec::with_capacity(size);
    let mut last = None;
    let mut more = false;
    for row in rows {
        let row = row?;
        if tasks.len() == size {
            more = true;
            break;
        }
        let (task, cursor) = read(row)?;
        tasks.push(task);
        last = Some(cursor);
    }
    Ok(ListTasksResponse {
        tasks,
        next_page_token: match last {
            Some(c) if more => c.write(),
            _ => String::new(),
        },
        page_size: i32::try_from(size).unwrap_or(i32::MAX),
        total_size: i32::try_from(total).unwrap_or(i32::MAX),
    })
}
