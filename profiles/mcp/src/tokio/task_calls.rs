//! The tasks extension's calls: a task-supporting tool run in the background as a task, and
//! `tasks/get`, `tasks/update`, `tasks/cancel`.

use std::prelude::rust_2021::*;

use std::sync::Arc;

use rpcwire_tokio::{Context, ErrorCode, RpcError};
use serde_json::{json, Value};

use super::context::{Shared, ToolContext, ToolFn};
use super::input::{self, RequestInfo, MAX_SESSION_ROUNDS};
use super::revision;
use super::tasks;
use super::tool_result::ToolReply;
use crate::methods;

/// Creates a task for a call and runs the tool in the background; the `CreateTaskResult`.
/// The tool's input requests park the task (`input_required`, answered with `tasks/update`,
/// at most until the task's time to live); its result completes it; a protocol error or a
/// panic fails it; `tasks/cancel` aborts it.
pub(crate) fn start_task(
    s: &Arc<Shared>,
    ctx: Context,
    run: ToolFn,
    arguments: Value,
    info: RequestInfo,
    owner: &str,
) -> Result<Value, RpcError> {
    let task = s.tasks.create(owner).map_err(tasks::refusal)?;
    let created = s.tasks.created(&task);
    let deadline = tokio::time::Instant::now() + s.tasks.ttl();
    let capabilities = info.capabilities.clone().unwrap_or_default();
    let (shared, runner_task) = (Arc::clone(s), Arc::clone(&task));
    let work = tokio::spawn(async move {
        let task = runner_task;
        let mut info = Arc::new(info);
        let last = Arc::default();
        for _ in 0..MAX_SESSION_ROUNDS {
            let tool_ctx = ToolContext {
                ctx: ctx.clone(),
                token: None,
                last: Arc::clone(&last),
                shared: Arc::clone(&shared),
                info: Arc::clone(&info),
                detached: true,
            };
            let mut ask = match run(tool_ctx, arguments.clone()).await {
                Ok(ToolReply::Complete(result)) => {
                    let mut result = serde_json::to_value(result).unwrap_or_default();
                    if let Some(object) = result.as_object_mut() {
                        revision::complete_result(methods::TOOLS_CALL, object);
                    }
                    task.finish(tasks::Status::Completed, Some(result));
                    return;
                }
                Ok(ToolReply::InputRequired(ask)) => ask,
                Err(e) => {
                    task.finish(tasks::Status::Failed, Some(error_object(&e)));
                    return;
                }
            };
            let missing = ask.keep_declared(&capabilities);
            if ask.requests.is_empty() {
                let e = input::missing_capability_error(&missing);
                task.finish(tasks::Status::Failed, Some(error_object(&e)));
                return;
            }
            let requests = std::mem::take(&mut ask.requests);
            let Ok(responses) =
                tokio::time::timeout_at(deadline, task.wait_for_input(requests)).await
            else {
                let e = RpcError::internal("no input before the task's time to live");
                task.finish(tasks::Status::Failed, Some(error_object(&e)));
                return;
            };
            info = Arc::new(RequestInfo {
                stateless: true,
                capabilities: Some(capabilities.clone()),
                responses,
                state: ask.state.take(),
                ..RequestInfo::default()
            });
        }
        let e = RpcError::internal("the tool asked for input too many times");
        task.finish(tasks::Status::Failed, Some(error_object(&e)));
    });
    s.tasks.set_abort(&task, work.abort_handle());
    // A panicking tool fails its task (a protocol error), as a panicking handler answers
    // Internal error.
    tokio::spawn(async move {
        if let Err(e) = work.await {
            if e.is_panic() {
                let error =
                    json!({"code": ErrorCode::INTERNAL_ERROR.0, "message": "Internal error"});
                task.finish(tasks::Status::Failed, Some(error));
            }
        }
    });
    Ok(created)
}

/// A JSON-RPC error object, as a failed task inlines it.
fn error_object(e: &RpcError) -> Value {
    let mut v = json!({"code": e.error_code().0, "message": e.message});
    if let Some(data) = e
        .data
        .as_deref()
        .and_then(|d| serde_json::from_str::<Value>(d.get()).ok())
    {
        v["data"] = data;
    }
    v
}

/// `tasks/get`, `tasks/update`, `tasks/cancel`: the request must declare the extension and
/// name a task of its caller.
pub(crate) async fn task_method(s: Arc<Shared>, ctx: Context, p: Value) -> Result<Value, RpcError> {
    s.trace(&ctx);
    let info = RequestInfo::of(&p)?;
    if !tasks::declared(info.capabilities.as_ref()) {
        return Err(tasks::extension_required());
    }
    let id = p["taskId"]
        .as_str()
        .ok_or_else(|| RpcError::invalid_params("taskId is required"))?;
    let owner = ctx.identity().subject();
    let done = json!({"resultType": "complete"});
    match ctx.method() {
        methods::TASKS_GET => s.tasks.get(owner, id).map_err(tasks::refusal),
        methods::TASKS_UPDATE => {
            let responses = &info.responses;
            s.tasks
                .update(owner, id, responses)
                .map_err(tasks::refusal)?;
            Ok(done)
        }
        _ => {
            s.tasks.cancel(owner, id).map_err(tasks::refusal)?;
            Ok(done)
        }
    }
}
