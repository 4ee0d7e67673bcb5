//! The tools, resources, prompts and completion the MCP conformance suite
//! (`@modelcontextprotocol/conformance`, server mode) expects, by their fixed names.

use std::time::Duration;

use rpcwire_mcp::tokio::{McpServer, ToolContext, ToolError, ToolResult};
use rpcwire_mcp::LogLevel;
use rpcwire_tokio::{ErrorCode, Router, RpcError};
use serde_json::{json, Value};

/// A 1x1 red PNG.
const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV header with no samples (44 bytes).
const WAV: &str = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA=";

fn text(t: &str) -> Value {
    json!({"type": "text", "text": t})
}

fn image() -> Value {
    json!({"type": "image", "data": PNG, "mimeType": "image/png"})
}

fn content(items: Vec<Value>) -> ToolResult {
    ToolResult {
        content: items,
        ..ToolResult::default()
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
            |_: ToolContext, _: Value| async move { Ok::<_, ToolError>(content(vec![image()])) },
        )
        .tool_with_schema(
            "test_audio_content",
            "Returns audio.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(content(vec![
                    json!({"type": "audio", "data": WAV, "mimeType": "audio/wav"}),
                ]))
            },
        )
        .tool_with_schema(
            "test_embedded_resource",
            "Returns an embedded resource.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(content(vec![json!({"type": "resource", "resource": {
                    "uri": "test://embedded-resource", "mimeType": "text/plain",
                    "text": "This is an embedded resource content."}})]))
            },
        )
        .tool_with_schema(
            "test_multiple_content_types",
            "Returns text, an image and a resource.",
            no_args(),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(content(vec![
                    text("Multiple content types test:"),
                    image(),
                    json!({"type": "resource", "resource": {
                        "uri": "test://mixed-content-resource", "mimeType": "application/json",
                        "text": "{\"test\":\"data\",\"value\":123}"}}),
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
                "$defs": {"address": {"type": "object", "properties": {
                    "street": {"type": "string"}, "city": {"type": "string"}}}},
                "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
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
        .capability("resources", json!({"subscribe": true, "listChanged": false}))
        .capability("prompts", json!({"listChanged": false}))
        .capability("completions", json!({}))
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

fn not_found(uri: &str) -> RpcError {
    RpcError::new(ErrorCode(-32002), format!("Resource not found: {uri}"))
}

fn read_resource(uri: &str) -> Result<Value, RpcError> {
    let contents = match uri {
        "test://static-text" => json!({"uri": uri, "mimeType": "text/plain",
            "text": "This is the content of the static text resource."}),
        "test://static-binary" => json!({"uri": uri, "mimeType": "image/png", "blob": PNG}),
        "test://watched-resource" => json!({"uri": uri, "mimeType": "text/plain",
            "text": "Watched resource content."}),
        "test://example-resource" => json!({"uri": uri, "mimeType": "text/plain",
            "text": "Example resource content."}),
        _ => {
            let id = uri
                .strip_prefix("test://template/")
                .and_then(|rest| rest.strip_suffix("/data"))
                .filter(|id| !id.is_empty() && !id.contains('/'))
                .ok_or_else(|| not_found(uri))?;
            json!({"uri": uri, "mimeType": "application/json",
                "text": json!({"id": id, "templateTest": true, "data": format!("Data for ID: {id}")}).to_string()})
        }
    };
    Ok(json!({"contents": [contents]}))
}

fn get_prompt(name: &str, args: &Value) -> Result<Value, RpcError> {
    let arg = |n: &str| args[n].as_str().map(str::to_owned);
    let missing = |n: &str| RpcError::invalid_params(format!("missing argument {n}"));
    let messages = match name {
        "test_simple_prompt" => {
            json!([{"role": "user", "content": text("This is a simple prompt for testing.")}])
        }
        "test_prompt_with_arguments" => {
            let a = arg("arg1").ok_or_else(|| missing("arg1"))?;
            let b = arg("arg2").ok_or_else(|| missing("arg2"))?;
            json!([{"role": "user", "content": text(&format!("Prompt with arguments: arg1='{a}', arg2='{b}'"))}])
        }
        "test_prompt_with_embedded_resource" => {
            let uri = arg("resourceUri").ok_or_else(|| missing("resourceUri"))?;
            json!([
                {"role": "user", "content": {"type": "resource", "resource": {
                    "uri": uri, "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
                {"role": "user", "content": text("Please process the embedded resource above.")},
            ])
        }
        "test_prompt_with_image" => json!([
            {"role": "user", "content": image()},
            {"role": "user", "content": text("Please analyze the image above.")},
        ]),
        _ => return Err(RpcError::invalid_params(format!("unknown prompt {name}"))),
    };
    Ok(json!({"messages": messages}))
}

/// Adds the fixture resources, prompts and completion to the server's router.
pub fn methods(router: Router) -> Router {
    router
        .sync_method("resources/list", |_: Value| {
            Ok::<_, RpcError>(json!({"resources": [
                {"uri": "test://static-text", "name": "Static text", "mimeType": "text/plain",
                 "description": "A static text resource"},
                {"uri": "test://static-binary", "name": "Static binary", "mimeType": "image/png",
                 "description": "A static binary resource"},
                {"uri": "test://watched-resource", "name": "Watched", "mimeType": "text/plain",
                 "description": "A resource to subscribe to"},
            ]}))
        })
        .sync_method("resources/templates/list", |_: Value| {
            Ok::<_, RpcError>(json!({"resourceTemplates": [
                {"uriTemplate": "test://template/{id}/data", "name": "Template data",
                 "mimeType": "application/json", "description": "Data by id"},
            ]}))
        })
        .sync_method("resources/read", |p: Value| {
            read_resource(p["uri"].as_str().unwrap_or(""))
        })
        .sync_method("resources/subscribe", |_: Value| Ok::<_, RpcError>(json!({})))
        .sync_method("resources/unsubscribe", |_: Value| Ok::<_, RpcError>(json!({})))
        .sync_method("prompts/list", |_: Value| {
            Ok::<_, RpcError>(json!({"prompts": [
                {"name": "test_simple_prompt", "description": "A simple prompt"},
                {"name": "test_prompt_with_arguments", "description": "A prompt with arguments",
                 "arguments": [{"name": "arg1", "description": "First", "required": true},
                               {"name": "arg2", "description": "Second", "required": true}]},
                {"name": "test_prompt_with_embedded_resource", "description": "A prompt with a resource",
                 "arguments": [{"name": "resourceUri", "description": "The resource", "required": true}]},
                {"name": "test_prompt_with_image", "description": "A prompt with an image"},
            ]}))
        })
        .sync_method("prompts/get", |p: Value| {
            get_prompt(p["name"].as_str().unwrap_or(""), &p["arguments"])
        })
        .sync_method("completion/complete", |p: Value| {
            let typed = p["argument"]["value"].as_str().unwrap_or("").to_owned();
            let values: Vec<&str> = ["paris", "park", "party", "test", "testing"]
                .into_iter()
                .filter(|v| v.starts_with(&typed))
                .collect();
            Ok::<_, RpcError>(json!({"completion": {"values": values, "total": values.len(), "hasMore": false}}))
        })
}
