//! The typed MCP surface of the tokio `McpServer` over an in-memory pipe: resources and a
//! resource template (matched, its variables bound, resource-not-found otherwise), prompts
//! (required arguments checked, an input round at 2026-07-28 with its sealed state), completion
//! (capped), the capabilities they declare, and their 2026-07-28 results completed on stdio.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::time::Duration;

use rpcwire_mcp::tokio::{
    Answer, Content, InputRequired, McpServer, PromptArgument, PromptMessage, ResourceContents,
    ResourceInfo, ToolContext, UriTemplate,
};
use rpcwire_tokio::RpcError;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

fn server() -> McpServer {
    McpServer::new("surface", "1.0")
        .resource(
            ResourceInfo::new("mem://a", "A").mime_type("text/plain"),
            |_: ToolContext, uri: String| async move {
                Ok::<_, RpcError>(Answer::Complete(vec![ResourceContents::text(
                    &uri,
                    "text/plain",
                    "a",
                )]))
            },
        )
        .resource_template(
            UriTemplate::parse("mem://items/{id}").unwrap(),
            ResourceInfo::new("", "Items"),
            |_: ToolContext, uri: String, vars: HashMap<String, String>| async move {
                Ok::<_, RpcError>(Answer::Complete(vec![ResourceContents::text(
                    &uri,
                    "text/plain",
                    format!("item {}", vars["id"]),
                )]))
            },
        )
        .prompt(
            "greet",
            "Greets.",
            vec![PromptArgument::required("who", "Whom")],
            |_: ToolContext, args: Map<String, Value>| async move {
                Ok::<_, RpcError>(Answer::Complete(vec![PromptMessage::user(Content::text(
                    format!("hello {}", args["who"].as_str().unwrap_or("")),
                ))]))
            },
        )
        .prompt(
            "ask",
            "Asks first.",
            vec![],
            |ctx: ToolContext, _: Map<String, Value>| async move {
                Ok::<_, RpcError>(match ctx.input_response("q") {
                    Some(a) if ctx.request_state() == Some(&json!("asked")) => {
                        Answer::Complete(vec![PromptMessage::user(Content::text(
                            a["content"]["v"].to_string(),
                        ))])
                    }
                    _ => Answer::InputRequired(
                        InputRequired::new()
                            .elicit("q", "?", json!({"type": "object"}))
                            .state(json!("asked")),
                    ),
                })
            },
        )
        .completion(|_: ToolContext, _: Value| async move {
            Ok::<_, RpcError>((0..150).map(|i| i.to_string()).collect())
        })
}

/// Lines to a server, with no handshake (2026-07-28) or after one; the answers by id.
async fn exchange(lines: &[Value]) -> Vec<Value> {
    let (a, b) = tokio::io::duplex(64 << 10);
    let _served = server().builder().run_io(a);
    let (r, mut w) = tokio::io::split(b);
    let mut reader = BufReader::new(r).lines();
    let mut out = Vec::new();
    for line in lines {
        w.write_all(format!("{line}\n").as_bytes()).await.unwrap();
        if line.get("id").is_some() {
            let answer = tokio::time::timeout(Duration::from_secs(5), reader.next_line())
                .await
                .unwrap()
                .unwrap()
                .unwrap();
            out.push(serde_json::from_str(&answer).unwrap());
        }
    }
    out
}

fn req(id: u32, method: &str, mut params: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}}});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

#[tokio::test]
async fn resources_templates_prompts_and_completion() {
    let out = exchange(&[
        req(1, "server/discover", json!({})),
        req(2, "resources/list", json!({})),
        req(3, "resources/templates/list", json!({})),
        req(4, "resources/read", json!({"uri": "mem://items/7"})),
        req(5, "resources/read", json!({"uri": "mem://items/7/x"})),
        req(
            6,
            "prompts/get",
            json!({"name": "greet", "arguments": {"who": "ann"}}),
        ),
        req(7, "prompts/get", json!({"name": "greet"})),
        req(
            8,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "greet"},
            "argument": {"name": "who", "value": ""}}),
        ),
        req(9, "resources/read", json!({"uri": "mem://a"})),
    ])
    .await;
    let caps = &out[0]["result"]["capabilities"];
    assert_eq!(caps["resources"]["subscribe"], true, "{caps}");
    assert!(
        caps["prompts"].is_object() && caps["completions"].is_object(),
        "{caps}"
    );
    assert_eq!(out[1]["result"]["resources"][0]["uri"], "mem://a");
    assert_eq!(out[1]["result"]["cacheScope"], "private", "{}", out[1]);
    assert_eq!(
        out[2]["result"]["resourceTemplates"][0]["uriTemplate"],
        "mem://items/{id}"
    );
    assert!(out[2]["result"]["resourceTemplates"][0]
        .get("uri")
        .is_none());
    let read = &out[3]["result"];
    assert_eq!(read["contents"][0]["text"], "item 7", "{read}");
    assert_eq!(
        (&read["resultType"], &read["ttlMs"]),
        (&json!("complete"), &json!(0))
    );
    // Not matched: resource not found, Invalid params with the URI.
    assert_eq!(out[4]["error"]["code"], -32602, "{}", out[4]);
    assert_eq!(out[4]["error"]["data"]["uri"], "mem://items/7/x");
    assert_eq!(
        out[5]["result"]["messages"][0]["content"]["text"],
        "hello ann"
    );
    assert_eq!(out[5]["result"]["resultType"], "complete");
    assert_eq!(
        out[6]["error"]["code"], -32602,
        "a required argument: {}",
        out[6]
    );
    let completion = &out[7]["result"]["completion"];
    assert_eq!(completion["values"].as_array().map(Vec::len), Some(100));
    assert_eq!(
        (&completion["total"], &completion["hasMore"]),
        (&json!(150), &json!(true))
    );
    assert_eq!(out[8]["result"]["contents"][0]["text"], "a");
}

#[tokio::test]
async fn a_prompt_asks_for_input_with_a_sealed_state() {
    let first = exchange(&[req(1, "prompts/get", json!({"name": "ask"}))]).await;
    let r = &first[0]["result"];
    assert_eq!(r["resultType"], "input_required", "{r}");
    assert_eq!(r["inputRequests"]["q"]["method"], "elicitation/create");
    let state = r["requestState"].clone();
    // The state is sealed per server (a random key each): a second server refuses it, before
    // the prompt runs.
    let answer = json!({"q": {"action": "accept", "content": {"v": 5}}});
    let other = exchange(&[req(
        1,
        "prompts/get",
        json!({"name": "ask", "inputResponses": answer, "requestState": state}),
    )])
    .await;
    assert_eq!(other[0]["error"]["code"], -32602, "{}", other[0]);
    // On one server: the round, then the retry with the answer and the state.
    let (a, b) = tokio::io::duplex(64 << 10);
    let _served = server().builder().run_io(a);
    let (r, mut w) = tokio::io::split(b);
    let mut lines = BufReader::new(r).lines();
    w.write_all(format!("{}\n", req(1, "prompts/get", json!({"name": "ask"}))).as_bytes())
        .await
        .unwrap();
    let first: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    let retry = req(
        2,
        "prompts/get",
        json!({"name": "ask", "inputResponses": answer, "requestState": first["result"]["requestState"]}),
    );
    w.write_all(format!("{retry}\n").as_bytes()).await.unwrap();
    let done: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(
        done["result"]["messages"][0]["content"]["text"], "5",
        "{done}"
    );
    // The same state again: replayed.
    w.write_all(format!("{}\n", retry.to_string().replace("\"id\":2", "\"id\":3")).as_bytes())
        .await
        .unwrap();
    let again: Value = serde_json::from_str(&lines.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(again["error"]["code"], -32602, "{again}");
}
