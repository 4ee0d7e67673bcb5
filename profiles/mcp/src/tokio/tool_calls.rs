//! `tools/call`: the request's `_meta` and `requestState` checked, the tool looked up and run
//! (as a task where the tasks extension asks for one), input rounds on every revision.

use std::prelude::rust_2021::*;

use std::sync::Arc;

use rpcwire_tokio::{Context, ErrorCode, RpcError};
use serde::Deserialize;
use serde_json::{json, Value};

use super::context::{Shared, ToolContext, ToolEntry};
#[cfg(feature = "http")]
use super::header_params;
use super::input::{ask_peer, input_required, open_state, RequestInfo, MAX_SESSION_ROUNDS};
use super::request_state::Binding;
use super::revision::completed;
use super::task_calls::start_task;
use super::tasks::{self, TaskSupport};
use super::tool_result::ToolReply;
use crate::methods;

#[derive(Deserialize)]
struct Meta {
    #[serde(rename = "progressToken")]
    progress_token: Option<Value>,
}

#[derive(Deserialize)]
struct CallParams {
    name: String,
    #[serde(default)]
    arguments: Option<Value>,
    #[serde(rename = "_meta", default)]
    meta: Option<Meta>,
}

/// `tools/call`: the request's `_meta` and `requestState` checked before the tool runs (a
/// state that fails its seal is Invalid params, and the tool never sees the call), then the
/// tool, round after round on a session revision while it asks for input the server can get
/// from the client itself.
pub(crate) async fn call_tool(s: Arc<Shared>, ctx: Context, p: Value) -> Result<Value, RpcError> {
    let span = tracing::Span::current();
    let CallParams {
        name,
        arguments,
        meta,
    } = serde_json::from_value(p.clone()).map_err(RpcError::invalid_params)?;
    span.record("gen_ai.tool.name", name.as_str());
    let mut info = RequestInfo::of(&p)?;
    let Some(ToolEntry {
        run,
        header_params,
        task: task_support,
    }) = s.tools.get(&name).cloned()
    else {
        return Err(RpcError::new(
            ErrorCode::INVALID_PARAMS,
            format!("Unknown tool: {name}"),
        ));
    };
    let arguments = match arguments {
        None | Some(Value::Null) => json!({}),
        Some(a) => a,
    };
    // Over Streamable HTTP at 2026-07-28: the parameters mirrored into headers must agree
    // with the arguments, before anything else reads them.
    #[cfg(feature = "http")]
    if info.stateless && !header_params.is_empty() {
        if let Some(headers) = ctx.caller().meta::<http::HeaderMap>() {
            let lookup = |name: &str| crate::http::param_header(headers, name);
            header_params::check(&header_params, &arguments, &lookup)
                .map_err(|why| RpcError::new(crate::http::HEADER_MISMATCH, why))?;
        }
    }
    #[cfg(not(feature = "http"))]
    let _ = &header_params;
    let subject = ctx.identity().subject().to_owned();
    let binding = Binding {
        method: methods::TOOLS_CALL,
        target: &name,
        caller: &subject,
    };
    open_state(s.seal.as_ref(), &p, &binding, &mut info)?;
    let token = meta
        .and_then(|m| m.progress_token)
        .filter(|t| t.is_string() || t.is_i64() || t.is_u64());
    let stateless = info.stateless;
    if let (true, Some(support)) = (stateless, task_support) {
        let declared = tasks::declared(info.capabilities.as_ref());
        // `AfterInput`: a round that brings no input runs here (it may ask, as an
        // `InputRequiredResult`); the round that brings it becomes the task.
        let gathering = support == TaskSupport::AfterInput && info.responses.is_empty();
        if declared && !gathering {
            let owner = ctx.identity().subject().to_owned();
            return start_task(&s, ctx, run, arguments, info, &owner);
        }
        if !declared && support != TaskSupport::Optional {
            return Err(tasks::extension_required());
        }
    }
    let mut info = Arc::new(info);
    let last = Arc::default();
    for _ in 0..MAX_SESSION_ROUNDS {
        let tool_ctx = ToolContext {
            ctx: ctx.clone(),
            token: token.clone(),
            last: Arc::clone(&last),
            shared: Arc::clone(&s),
            info: Arc::clone(&info),
            detached: false,
        };
        let mut ask = match run(tool_ctx, arguments.clone()).await? {
            ToolReply::Complete(result) => {
                if result.is_error {
                    span.record("error.type", "tool_error");
                }
                let result = serde_json::to_value(result).map_err(RpcError::internal)?;
                return Ok(completed(methods::TOOLS_CALL, &p, result));
            }
            ToolReply::InputRequired(ask) => ask,
        };
        if stateless {
            return input_required(s.seal.as_ref(), &info, &binding, &mut ask);
        }
        // A session revision: the server asks the client itself, then runs the tool again.
        info = Arc::new(ask_peer(&ctx, &mut ask).await?);
    }
    Err(RpcError::internal(format!(
        "tool {name} asked for input more than {MAX_SESSION_ROUNDS} times"
    )))
}
