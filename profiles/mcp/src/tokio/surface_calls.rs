//! The typed surface's methods (`resources/*`, `prompts/*`, `completion/complete`) on the
//! server's router, with the input rounds they share with tools.

use std::prelude::rust_2021::*;

use std::future::Future;
use std::sync::Arc;

use rpcwire_tokio::{Context, Router, RpcError};
use serde_json::{json, Value};

use super::context::{Shared, ToolContext};
use super::input::{ask_peer, input_required, open_state, RequestInfo, MAX_SESSION_ROUNDS};
use super::request_state::Binding;
use super::revision::{completed, removed_in_stateless};
use super::surface::{self, Answer};
use crate::methods;

/// A prompt's or resource's handler, round after round as for tools: `Ok` its result,
/// `Err` the 2026-07-28 `InputRequiredResult` to answer instead.
pub(crate) async fn with_rounds<T, F, Fut>(
    s: &Arc<Shared>,
    ctx: &Context,
    p: &Value,
    method: &'static str,
    target: &str,
    run: F,
) -> Result<Result<T, Value>, RpcError>
where
    F: Fn(ToolContext) -> Fut,
    Fut: Future<Output = Result<Answer<T>, RpcError>>,
{
    let mut info = RequestInfo::of(p)?;
    let subject = ctx.identity().subject().to_owned();
    let binding = Binding {
        method,
        target,
        caller: &subject,
    };
    open_state(s.seal.as_ref(), p, &binding, &mut info)?;
    let stateless = info.stateless;
    let mut info = Arc::new(info);
    for _ in 0..MAX_SESSION_ROUNDS {
        let handler_ctx = ToolContext {
            ctx: ctx.clone(),
            token: None,
            last: Arc::default(),
            shared: Arc::clone(s),
            info: Arc::clone(&info),
            detached: false,
        };
        match run(handler_ctx).await? {
            Answer::Complete(t) => return Ok(Ok(t)),
            Answer::InputRequired(mut ask) if stateless => {
                return input_required(s.seal.as_ref(), &info, &binding, &mut ask).map(Err)
            }
            Answer::InputRequired(mut ask) => info = Arc::new(ask_peer(ctx, &mut ask).await?),
        }
    }
    Err(RpcError::internal(format!(
        "{method} {target} asked for input more than {MAX_SESSION_ROUNDS} times"
    )))
}

/// Registers the typed surface's methods (those it has).
pub(crate) fn surface_methods(router: Router, s: &Arc<Shared>) -> Router {
    let mut router = router;
    if s.surface.has_resources() {
        let sh = Arc::clone(s);
        router = router.method_with_context("resources/list", move |ctx, p: Value| {
            let s = Arc::clone(&sh);
            async move {
                s.admit(&ctx, &p)?;
                Ok::<_, RpcError>(completed("resources/list", &p, s.surface.resources_list()))
            }
        });
        let sh = Arc::clone(s);
        router = router.method_with_context("resources/templates/list", move |ctx, p: Value| {
            let s = Arc::clone(&sh);
            async move {
                s.admit(&ctx, &p)?;
                let list = s.surface.templates_list();
                Ok::<_, RpcError>(completed("resources/templates/list", &p, list))
            }
        });
        let sh = Arc::clone(s);
        router = router.method_with_context("resources/read", move |ctx, p: Value| {
            let s = Arc::clone(&sh);
            async move {
                s.admit(&ctx, &p)?;
                let uri = p["uri"].as_str().unwrap_or_default().to_owned();
                let Some((read, vars)) = s.surface.reader(&uri) else {
                    return Err(RpcError::new(
                        methods::RESOURCE_NOT_FOUND,
                        format!("Resource not found: {uri}"),
                    )
                    .with_data(&json!({ "uri": uri })));
                };
                let run = |c: ToolContext| read(c, uri.clone(), vars.clone());
                Ok(
                    match with_rounds(&s, &ctx, &p, "resources/read", &uri, run).await? {
                        Ok(contents) => {
                            completed("resources/read", &p, surface::read_result(contents))
                        }
                        Err(ask) => ask,
                    },
                )
            }
        });
        // Session revisions: subscriptions are taken (updates reach 2026-07-28 clients
        // through `subscriptions/listen`).
        for method in ["resources/subscribe", "resources/unsubscribe"] {
            let sh = Arc::clone(s);
            router = router.method_with_context(method, move |ctx, p: Value| {
                let s = Arc::clone(&sh);
                async move {
                    removed_in_stateless(&p)?;
                    s.admit(&ctx, &p)?;
                    Ok::<_, RpcError>(json!({}))
                }
            });
        }
    }
    if !s.surface.prompts.is_empty() {
        let sh = Arc::clone(s);
        router = router.method_with_context("prompts/list", move |ctx, p: Value| {
            let s = Arc::clone(&sh);
            async move {
                s.admit(&ctx, &p)?;
                Ok::<_, RpcError>(completed("prompts/list", &p, s.surface.prompts_list()))
            }
        });
        let sh = Arc::clone(s);
        router = router.method_with_context("prompts/get", move |ctx, p: Value| {
            let s = Arc::clone(&sh);
            async move {
                s.admit(&ctx, &p)?;
                let name = p["name"].as_str().unwrap_or_default().to_owned();
                let args = p["arguments"].as_object().cloned().unwrap_or_default();
                let get = s.surface.prompt(&name, &args)?;
                let run = |c: ToolContext| get(c, args.clone());
                Ok(
                    match with_rounds(&s, &ctx, &p, "prompts/get", &name, run).await? {
                        Ok(messages) => {
                            completed("prompts/get", &p, surface::prompt_result(messages))
                        }
                        Err(ask) => ask,
                    },
                )
            }
        });
    }
    if let Some(complete) = s.surface.completion.clone() {
        let sh = Arc::clone(s);
        router = router.method_with_context("completion/complete", move |ctx, p: Value| {
            let (s, complete) = (Arc::clone(&sh), Arc::clone(&complete));
            async move {
                s.admit(&ctx, &p)?;
                let info = Arc::new(RequestInfo::of(&p)?);
                let handler_ctx = ToolContext {
                    ctx: ctx.clone(),
                    token: None,
                    last: Arc::default(),
                    shared: Arc::clone(&s),
                    info,
                    detached: false,
                };
                let values = complete(handler_ctx, p.clone()).await?;
                Ok::<_, RpcError>(completed(
                    "completion/complete",
                    &p,
                    surface::completion_result(values),
                ))
            }
        });
    }
    router
}
