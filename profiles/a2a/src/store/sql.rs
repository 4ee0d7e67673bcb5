//! What the SQL stores (SQLite's and PostgreSQL's) share beyond their SQL: a task row's JSON
//! columns read back into the task, a state's name as stored, and a `ListTasks` page put
//! together from the rows of its query (one row past the page: there are more).

use super::memory::Cursor;
use crate::types::{Artifact, ListTasksResponse, Message, Task, TaskState};

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
