//! The tools, resources, prompts and completion the MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server mode) expects, by their fixed names.

use std::collections::HashMap;
use std::time::Duration;

use rpcwire_mcp::tokio::{
    Answer, Change, Content, InputRequired, McpServer, PromptArgument, PromptMessage,
    ResourceContents, ResourceInfo, TaskSupport, ToolContext, ToolError, ToolReply, ToolResult,
    UriTemplate,
};
use rpcwire_mcp::LogLevel;
use rpcwire_tokio::RpcError;
use serde_json::{json, Map, Value};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples (44 bytes).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn image() -> Content {
    Content::Image {
        data: PNG.into(),
        mime_type: "image/png".into(),
    }
}

fn no_args() -> Value {
    json!({"type": "object", "properties": {}})
}

/// Adds the conformance fixture tools to `server`.
pub fn tools(server: McpServer) -> McpServer {
    server
        .tool_with_schema(
            "test_simple_text",
            "Returns a simple text.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>("This is a simple text response for testing.")
            },
        )
        .tool_with_schema(
            "test_image_content",
            "Returns an image.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ToolResult::with_content([image()]))
            },
        )
        .tool_with_schema(
            "test_audio_content",
            "Returns audio.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ToolResult::with_content([Content::Audio {
                    data: WAV.into(),
                    mime_type: "audio/wav".into(),
                }]))
            },
        )
        .tool_with_schema(
            "test_embedded_resource",
            "Returns an embedded resource.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ToolResult::with_content([Content::Resource {
                    resource: ResourceContents::text(
                        "test://embedded-resource",
                        "text/plain",
                        "This is an embedded resource content.",
                    ),
                }]))
            },
        )
        .tool_with_schema(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ToolResult::with_content([
                    Content::text("Multiple content types test:"),
                    image(),
                    Content::Resource {
                        resource: ResourceContents::text(
                            "test://mixed-content-resource",
                            "application/json",
                            json!({"test": "data", "value": 123}).to_string(),
                        ),
                    },
                ]))
            },
        )
        .tool_with_schema(
            "test_tool_with_logging",
            "Sends three log messages while it runs.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                for m in [
                    "Tool execution started",
                    "Tool processing data",
                    "Tool execution completed",
                ] {
                    ctx.log(LogLevel::Info, m).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok::<_, ToolError>("Tool with logging executed successfully")
            },
        )
        .tool_with_schema(
            "test_error_handling",
            "Always fails (isError).",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Err::<String, _>(ToolError::new(
                    "This tool intentionally returns an error for testing",
                ))
            },
        )
        .tool_with_schema(
            "test_tool_with_progress",
            "Reports progress 0, 50, 100.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                for p in [0.0, 50.0, 100.0] {
                    ctx.progress(p, Some(100.0), None).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                Ok::<_, ToolError>("Progress test completed")
            },
        )
        .tool_with_schema(
            "test_sampling",
            "Asks the client's model (sampling/createMessage).",
            json!({"type": "object", "properties": {"prompt": {"type": "string"}}, "required": ["prompt"]}),
            |ctx: ToolContext, args: Value| async move {
                let prompt = args["prompt"].as_str().unwrap_or("").to_owned();
                let params = json!({
                    "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
                    "maxTokens": 100,
                });
                let answer: Value = ctx
                    .peer()
                    .call("sampling/createMessage", params)
                    .await
                    .map_err(|e| ToolError::new(format!("sampling failed: {e}")))?;
                let said = answer["content"]["text"].as_str().unwrap_or("");
                Ok::<_, ToolError>(format!("LLM response: {said}"))
            },
        )
        .tool_with_schema(
            "test_elicitation",
            "Asks the user (elicitation/create).",
            json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
            |ctx: ToolContext, args: Value| async move {
                let schema = json!({"type": "object", "properties": {
                    "username": {"type": "string", "description": "User's response"},
                    "email": {"type": "string", "description": "User's email address"}},
                    "required": ["username", "email"]});
                elicit(&ctx, args["message"].as_str().unwrap_or("Please answer"), schema).await
            },
        )
        .tool_with_schema(
            "test_elicitation_sep1034_defaults",
            "Asks the user with a schema whose fields have defaults.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let schema = json!({"type": "object", "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
                    "verified": {"type": "boolean", "default": true}}});
                elicit(&ctx, "Please review and update the form fields with defaults", schema).await
            },
        )
        .tool_with_schema(
            "test_elicitation_sep1330_enums",
            "Asks the user with every kind of enum schema.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let titled = |v: &[(&str, &str)]| -> Vec<Value> {
                    v.iter().map(|(c, t)| json!({"const": c, "title": t})).collect()
                };
                let schema = json!({"type": "object", "properties": {
                    "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
                    "titledSingle": {"type": "string", "oneOf": titled(&[("value1", "First Option"), ("value2", "Second Option"), ("value3", "Third Option")])},
                    "legacyEnum": {"type": "string", "enum": ["opt1", "opt2", "opt3"], "enumNames": ["Option One", "Option Two", "Option Three"]},
                    "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
                    "titledMulti": {"type": "array", "items": {"anyOf": titled(&[("value1", "First Choice"), ("value2", "Second Choice"), ("value3", "Third Choice")])}}}});
                elicit(&ctx, "Please select options from the enum fields", schema).await
            },
        )
        .tool_with_schema(
            "json_schema_2020_12_tool",
            "A tool whose input schema uses JSON Schema 2020-12 keywords.",
            json!({
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "$defs": {"address": {"$anchor": "addressDef", "type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {
                    "name": {"type": "string"},
                    "address": {"$ref": "#/$defs/address"},
                    "contactMethod": {"type": "string", "enum": ["phone", "email"]},
                    "phone": {"type": "string"},
                    "email": {"type": "string"},
                },
                "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
                "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
                "then": {"required": ["phone"]},
                "else": {"required": ["email"]},
                "additionalProperties": false,
            }),
            |_: ToolContext, args: Value| async move {
                Ok::<_, ToolError>(format!("JSON Schema 2020-12 tool called with: {args}"))
            },
        )
        .tool_with_schema(
            "test_reconnection",
            "Closes its event stream, then answers (SSE polling: the client resumes with GET).",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                // The transport closes this request's stream; the answer reaches the client
                // when it reconnects with Last-Event-ID.
                let _ = ctx.peer().notify(rpcwire_mcp::http::CLOSE_STREAM, json!({})).await;
                tokio::time::sleep(Duration::from_millis(100)).await;
                Ok::<_, ToolError>("Reconnection test completed")
            },
        )
        .tool_with_schema(
            "test_header_param",
            "Echoes its region, which Streamable HTTP clients mirror into Mcp-Param-Region \
             (x-mcp-header; the server checks the two agree before the tool runs).",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region",
                           "description": "Where to run"}},
                "required": ["region"]}),
            |_: ToolContext, args: Value| async move {
                Ok::<_, ToolError>(format!("region {}", args["region"].as_str().unwrap_or("")))
            },
        )
        .tool_with_schema(
            "test_logging_tool",
            "Logs at info level (2026-07-28: only when the request's _meta asks for logs).",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                ctx.log(LogLevel::Info, "test_logging_tool ran").await;
                Ok::<_, ToolError>("logged")
            },
        )
        .tool_with_schema(
            "test_trigger_tool_change",
            "Announces a tool list change to subscriptions/listen streams.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let reached = ctx.changed(Change::Tools);
                Ok::<_, ToolError>(format!("tool list change sent to {reached} subscriptions"))
            },
        )
        .tool_with_schema(
            "test_missing_capability",
            "Needs the client's sampling (answered -32021 when the client did not declare it).",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                if let Some(answer) = ctx.input_response("sample") {
                    return Ok::<ToolReply, ToolError>(
                        ToolResult::text(format!(
                            "sampled: {}",
                            answer["content"]["text"].as_str().unwrap_or("")
                        ))
                        .into(),
                    );
                }
                Ok(InputRequired::new().sample("sample", sampling("Say hello", 20)).into())
            },
        )
        .tool_with_schema(
            "test_streaming_elicitation",
            "Asks the user through an InputRequiredResult, never a request on the stream.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match ctx.input_response("answer") {
                    Some(a) => ToolResult::text(format!("answered: {}", a["content"])).into(),
                    None => InputRequired::new()
                        .elicit("answer", "Anything to say?", string_form("text"))
                        .into(),
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_elicitation",
            "Asks the user's name (InputRequiredResult), then greets.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match elicited(&ctx, "user_name", "name") {
                    Some(name) => ToolResult::text(format!("Hello, {name}!")).into(),
                    None => InputRequired::new()
                        .elicit("user_name", "What is your name?", string_form("name"))
                        .into(),
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_sampling",
            "Asks the client's model (InputRequiredResult), then answers with its text.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match ctx.input_response("capital_question") {
                    Some(a) => ToolResult::text(format!(
                        "LLM response: {}",
                        a["content"]["text"].as_str().unwrap_or("")
                    ))
                    .into(),
                    None => InputRequired::new()
                        .sample(
                            "capital_question",
                            sampling("What is the capital of France?", 100),
                        )
                        .into(),
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_list_roots",
            "Asks the client's roots (InputRequiredResult), then lists them.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match ctx.input_response("client_roots") {
                    Some(a) => ToolResult::text(format!("Roots: {}", roots_of(a))).into(),
                    None => InputRequired::new().list_roots("client_roots").into(),
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_request_state",
            "Round-trips a sealed requestState.",
            no_args(),
            |ctx: ToolContext, _: Value| async move { Ok::<ToolReply, ToolError>(confirm_with_state(&ctx)) },
        )
        .tool_with_schema(
            "test_input_required_result_tampered_state",
            "Round-trips a sealed requestState (a changed one is refused before this runs).",
            no_args(),
            |ctx: ToolContext, _: Value| async move { Ok::<ToolReply, ToolError>(confirm_with_state(&ctx)) },
        )
        .tool_with_schema(
            "test_input_required_result_multiple_inputs",
            "Asks for an elicitation, a sampling and the roots at once.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let keys = ["user_name", "greeting", "client_roots"];
                let done = keys.iter().all(|k| ctx.input_response(k).is_some());
                Ok::<ToolReply, ToolError>(if done && ctx.request_state() == Some(&json!({"asked": 3})) {
                    ToolResult::text(format!(
                        "All inputs received: name={}, roots={}",
                        elicited(&ctx, "user_name", "name").unwrap_or_default(),
                        ctx.input_response("client_roots").map(roots_of).unwrap_or_default()
                    ))
                    .into()
                } else {
                    InputRequired::new()
                        .elicit("user_name", "What is your name?", string_form("name"))
                        .sample("greeting", sampling("Generate a greeting", 50))
                        .list_roots("client_roots")
                        .state(json!({"asked": 3}))
                        .into()
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_multi_round",
            "Asks twice, carrying what it learned in requestState.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let round = ctx.request_state().and_then(|s| s["round"].as_u64());
                Ok::<ToolReply, ToolError>(match (round, elicited(&ctx, "step1", "name"), elicited(&ctx, "step2", "color")) {
                    (Some(2), _, Some(color)) => {
                        let name = ctx.request_state().and_then(|s| s["name"].as_str()).unwrap_or("");
                        ToolResult::text(format!("Done: {name} likes {color}")).into()
                    }
                    (Some(1), Some(name), _) => InputRequired::new()
                        .elicit("step2", "Step 2: What is your favorite color?", string_form("color"))
                        .state(json!({"round": 2, "name": name}))
                        .into(),
                    _ => InputRequired::new()
                        .elicit("step1", "Step 1: What is your name?", string_form("name"))
                        .state(json!({"round": 1}))
                        .into(),
                })
            },
        )
        .tool_with_schema(
            "test_input_required_result_capabilities",
            "Asks only for what the client declared it can answer.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                if ctx.input_response("user_name").is_some() || ctx.input_response("greeting").is_some() {
                    return Ok::<ToolReply, ToolError>(ToolResult::text("inputs received").into());
                }
                let mut ask = InputRequired::new();
                if ctx.client_supports("elicitation") {
                    ask = ask.elicit("user_name", "What is your name?", string_form("name"));
                }
                if ctx.client_supports("sampling") {
                    ask = ask.sample("greeting", sampling("Generate a greeting", 50));
                }
                Ok(ask.into())
            },
        )
        .tool_with_schema(
            "greet",
            "Greets (a tool that never runs as a task).",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            |_: ToolContext, args: Value| async move {
                Ok::<_, ToolError>(format!("Hello, {}!", args["name"].as_str().unwrap_or("world")))
            },
        )
        .tool_with_schema(
            "slow_compute",
            "Sleeps `seconds` (at most 60), then answers; a task when the client has the tasks extension.",
            json!({"type": "object", "properties": {
                "seconds": {"type": "number"}, "label": {"type": "string"}}}),
            |_: ToolContext, args: Value| async move {
                let seconds = args["seconds"].as_f64().unwrap_or(1.0).clamp(0.0, 60.0);
                tokio::time::sleep(Duration::from_secs_f64(seconds)).await;
                Ok::<_, ToolError>(format!(
                    "computed {} after {seconds} s",
                    args["label"].as_str().unwrap_or("")
                ))
            },
        )
        .task_support("slow_compute", TaskSupport::Optional)
        .tool_with_schema(
            "failing_job",
            "Fails (a tool error) after about a second; only as a task.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                Err::<String, _>(ToolError::new("failing_job failed, as it always does"))
            },
        )
        .task_support("failing_job", TaskSupport::Required)
        .tool_with_schema(
            "protocol_error_job",
            "Panics (a protocol error: its task fails).",
            no_args(),
            |_: ToolContext, _: Value| async move {
                tokio::time::sleep(Duration::from_millis(100)).await;
                #[allow(clippy::panic)] // The fixture's purpose: a handler that panics.
                {
                    panic!("protocol_error_job panics on purpose");
                }
                #[allow(unreachable_code)]
                Ok::<String, ToolError>(String::new())
            },
        )
        .task_support("protocol_error_job", TaskSupport::Optional)
        .tool_with_schema(
            "confirm_delete",
            "Asks for a confirmation (an input request of its task), then answers.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match ctx.input_response("confirm") {
                    Some(a) => ToolResult::text(format!("delete {}", a["action"])).into(),
                    None => InputRequired::new()
                        .elicit("confirm", "Delete it?", json!({"type": "object",
                            "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}))
                        .into(),
                })
            },
        )
        .task_support("confirm_delete", TaskSupport::Optional)
        .tool_with_schema(
            "multi_input",
            "Asks two questions at once (two input requests of its task).",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                let (a, b) = (elicited(&ctx, "first", "name"), elicited(&ctx, "second", "name"));
                Ok::<ToolReply, ToolError>(match (a, b) {
                    (Some(a), Some(b)) => ToolResult::text(format!("{a} and {b}")).into(),
                    _ => InputRequired::new()
                        .elicit("first", "First name?", string_form("name"))
                        .elicit("second", "Second name?", string_form("name"))
                        .into(),
                })
            },
        )
        .task_support("multi_input", TaskSupport::Optional)
        .tool_with_schema(
            "test_tool_with_task",
            "Asks the user's name (synchronously), then answers as a task.",
            no_args(),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match elicited(&ctx, "user_name", "name") {
                    Some(name) => ToolResult::text(format!("Hello, {name}!")).into(),
                    None => InputRequired::new()
                        .elicit("user_name", "What is your name?", string_form("name"))
                        .into(),
                })
            },
        )
        .task_support("test_tool_with_task", TaskSupport::AfterInput)
}

/// A form asking for one string field.
fn string_form(field: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": "string"}}, "required": [field]})
}

/// `sampling/createMessage` params asking one question.
fn sampling(question: &str, max_tokens: u32) -> Value {
    json!({"messages": [{"role": "user", "content": {"type": "text", "text": question}}],
        "maxTokens": max_tokens})
}

/// The `field` of an accepted elicitation answered under `key`.
fn elicited(ctx: &ToolContext, key: &str, field: &str) -> Option<String> {
    let answer = ctx.input_response(key)?;
    (answer["action"] == "accept")
        .then(|| answer["content"][field].as_str().map(str::to_owned))
        .flatten()
}

/// The URIs of a `roots/list` answer.
fn roots_of(answer: &Value) -> String {
    let uris: Vec<&str> = answer["roots"]
        .as_array()
        .map(|r| r.iter().filter_map(|r| r["uri"].as_str()).collect())
        .unwrap_or_default();
    uris.join(", ")
}

/// Asks for a confirmation with a state; done when both come back (the state verified by
/// the server before this runs).
fn confirm_with_state(ctx: &ToolContext) -> ToolReply {
    let state_ok = ctx.request_state() == Some(&json!({"check": "confirm"}));
    match ctx.input_response("confirm") {
        Some(_) if state_ok => ToolResult::text("state-ok: confirmation received").into(),
        _ => InputRequired::new()
            .elicit(
                "confirm",
                "Please confirm",
                json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
            )
            .state(json!({"check": "confirm"}))
            .into(),
    }
}

async fn elicit(ctx: &ToolContext, message: &str, schema: Value) -> Result<String, ToolError> {
    let answer: Value = ctx
        .peer()
        .call(
            "elicitation/create",
            json!({"message": message, "requestedSchema": schema}),
        )
        .await
        .map_err(|e| ToolError::new(format!("elicitation failed: {e}")))?;
    Ok(format!(
        "User response: action={}, content={}",
        answer["action"].as_str().unwrap_or("?"),
        answer["content"]
    ))
}

fn no_input<T>(t: T) -> Result<Answer<T>, RpcError> {
    Ok(Answer::Complete(t))
}

/// Adds the fixture resources, the resource template, the prompts and completion, on the
/// server's typed surface.
pub fn surface(server: McpServer) -> McpServer {
    let text_resource = |uri: &'static str, name: &str, text: &'static str| {
        (
            ResourceInfo::new(uri, name).mime_type("text/plain"),
            move |_: ToolContext, _: String| async move {
                no_input(vec![ResourceContents::text(uri, "text/plain", text)])
            },
        )
    };
    let (info, read) = text_resource(
        "test://static-text",
        "Static text",
        "This is the content of the static text resource.",
    );
    let server = server.resource(info.description("A static text resource"), read);
    let (info, read) = text_resource(
        "test://watched-resource",
        "Watched",
        "Watched resource content.",
    );
    let server = server.resource(info.description("A resource to subscribe to"), read);
    let template = UriTemplate::parse("test://template/{id}/data")
        .unwrap_or_else(|e| unreachable!("a level-1 template: {e}"));
    server
        .resource(
            ResourceInfo::new("test://static-binary", "Static binary")
                .mime_type("image/png")
                .description("A static binary resource"),
            |_: ToolContext, uri: String| async move {
                no_input(vec![ResourceContents::blob(&uri, "image/png", PNG)])
            },
        )
        .resource_template(
            template,
            ResourceInfo::new("", "Template data")
                .mime_type("application/json")
                .description("Data by id"),
            |_: ToolContext, uri: String, vars: HashMap<String, String>| async move {
                let id = vars.get("id").cloned().unwrap_or_default();
                let data =
                    json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")});
                no_input(vec![ResourceContents::text(
                    &uri,
                    "application/json",
                    data.to_string(),
                )])
            },
        )
        .prompt(
            "test_simple_prompt",
            "A simple prompt",
            vec![],
            |_: ToolContext, _: Map<String, Value>| async move {
                no_input(vec![PromptMessage::user(Content::text(
                    "This is a simple prompt for testing.",
                ))])
            },
        )
        .prompt(
            "test_prompt_with_arguments",
            "A prompt with arguments",
            vec![
                PromptArgument::required("arg1", "First"),
                PromptArgument::required("arg2", "Second"),
            ],
            |_: ToolContext, args: Map<String, Value>| async move {
                let (a, b) = (
                    args["arg1"].as_str().unwrap_or(""),
                    args["arg2"].as_str().unwrap_or(""),
                );
                no_input(vec![PromptMessage::user(Content::text(format!(
                    "Prompt with arguments: arg1='{a}', arg2='{b}'"
                )))])
            },
        )
        .prompt(
            "test_prompt_with_embedded_resource",
            "A prompt with a resource",
            vec![PromptArgument::required("resourceUri", "The resource")],
            |_: ToolContext, args: Map<String, Value>| async move {
                let uri = args["resourceUri"].as_str().unwrap_or("");
                no_input(vec![
                    PromptMessage::user(Content::Resource {
                        resource: ResourceContents::text(
                            uri,
                            "text/plain",
                            "Embedded resource content for testing.",
                        ),
                    }),
                    PromptMessage::user(Content::text(
                        "Please process the embedded resource above.",
                    )),
                ])
            },
        )
        .prompt(
            "test_prompt_with_image",
            "A prompt with an image",
            vec![],
            |_: ToolContext, _: Map<String, Value>| async move {
                no_input(vec![
                    PromptMessage::user(image()),
                    PromptMessage::user(Content::text("Please analyze the image above.")),
                ])
            },
        )
        .prompt(
            "test_input_required_result_prompt",
            "A prompt that asks the user for context first (2026-07-28)",
            vec![],
            |ctx: ToolContext, _: Map<String, Value>| async move {
                Ok(match elicited(&ctx, "user_context", "context") {
                    Some(context) => Answer::Complete(vec![PromptMessage::user(Content::text(
                        format!("Use this context: {context}"),
                    ))]),
                    None => Answer::InputRequired(InputRequired::new().elicit(
                        "user_context",
                        "What context should the prompt use?",
                        string_form("context"),
                    )),
                })
            },
        )
        .completion(|_: ToolContext, p: Value| async move {
            let typed = p["argument"]["value"].as_str().unwrap_or("").to_owned();
            Ok(["paris", "park", "party", "test", "testing"]
                .into_iter()
                .filter(|v| v.starts_with(&typed))
                .map(str::to_owned)
                .collect())
        })
}
