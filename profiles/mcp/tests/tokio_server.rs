//! The tokio `McpServer` and `McpClient` over in-memory pipes: the handshake and what is
//! refused before it, negotiation, tools (typed arguments, failures as `isError`, unknown
//! tools), progress only with a token and only increasing, cancellation, logging levels,
//! batches refused, ping.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_mcp::tokio::{McpClient, McpError, McpServer, ToolContext, ToolError, ToolResult};
use rpcwire_mcp::LogLevel;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

mod tokio_common;
use tokio_common::{raw, INIT};

#[derive(Deserialize)]
struct Add {
    a: i64,
    b: i64,
}

#[derive(Deserialize)]
struct Steps {
    values: Vec<f64>,
}

fn server(events: mpsc::UnboundedSender<String>) -> McpServer {
    let object = json!({"type": "object"});
    let cancelled = events.clone();
    McpServer::new("test-server", "9.9")
        .instructions("be nice")
        .tool_with_schema("add", "adds", object.clone(), |_ctx: ToolContext, a: Add| async move {
            Ok::<_, ToolError>((a.a + a.b).to_string())
        })
        .tool_with_schema("fail", "fails", object.clone(), |_ctx: ToolContext, _: Value| async move {
            Err::<String, _>(ToolError::new("it broke"))
        })
        .tool_with_schema("steps", "reports the given progress values", object.clone(), |ctx: ToolContext, s: Steps| async move {
            let mut sent = Vec::new();
            for v in s.values {
                sent.push(ctx.progress(v, Some(10.0), None).await);
            }
            Ok::<_, ToolError>(ToolResult::text(format!("{sent:?}")))
        })
        .tool_with_schema("logs", "logs at each level", object.clone(), |ctx: ToolContext, _: Value| async move {
            let mut sent = Vec::new();
            for level in LogLevel::ALL {
                sent.push(ctx.log(level, level.as_str()).await);
            }
            Ok::<_, ToolError>(format!("{sent:?}"))
        })
        .tool_with_schema("wait", "waits until cancelled", object, move |ctx: ToolContext, _: Value| {
            let events = cancelled.clone();
            async move {
                let mut step = 0.0;
                loop {
                    tokio::select! {
                        () = tokio::time::sleep(Duration::from_millis(10)) => {}
                        () = ctx.cancelled() => {
                            let _ = events.send(format!("cancelled {}", ctx.request_id().unwrap_or("")));
                            return Err(ToolError::new("cancelled"));
                        }
                    }
                    step += 1.0;
                    ctx.progress(step, None, None).await;
                }
                #[allow(unreachable_code)]
                Ok::<String, ToolError>(String::new())
            }
        })
}

/// A server and an initialized client over an in-memory pipe.
async fn pair() -> (McpClient, mpsc::UnboundedReceiver<String>) {
    let (tx, rx) = mpsc::unbounded_channel();
    let (a, b) = tokio::io::duplex(64 << 10);
    let _served = server(tx).builder().run_io(a);
    let client = McpClient::connect(|builder| builder.run_io(b))
        .await
        .unwrap();
    (client, rx)
}

#[tokio::test]
async fn handshake_refuses_requests_before_initialize_and_negotiates() {
    let (tx, _rx) = mpsc::unbounded_channel();
    let out = raw(
        server(tx.clone()),
        &[
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
            INIT,
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/list"}"#,
            INIT,
        ],
        5,
    )
    .await;
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[0]["error"]["code"], -32600);
    assert_eq!(out[0]["error"]["message"], "server not initialized");
    assert_eq!(out[1]["result"], json!({}));
    assert_eq!(out[2]["result"]["protocolVersion"], "2025-03-26");
    assert_eq!(
        out[2]["result"]["serverInfo"],
        json!({"name": "test-server", "version": "9.9"})
    );
    assert_eq!(out[2]["result"]["instructions"], "be nice");
    assert_eq!(out[2]["result"]["capabilities"]["logging"], json!({}));
    assert_eq!(out[3]["result"]["tools"].as_array().unwrap().len(), 5);
    assert_eq!(out[4]["error"]["message"], "already initialized");

    let unknown = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#;
    let out = raw(server(tx.clone()), &[unknown], 1).await;
    assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");

    // Without the strict handshake (one session over several connections), tools/list
    // before initialize is answered.
    let out = raw(
        server(tx).strict_handshake(false),
        &[r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#],
        1,
    )
    .await;
    assert!(out[0]["result"]["tools"].is_array(), "{out:?}");
}

const BATCH: &str =
    r#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]"#;

#[tokio::test]
async fn batches_are_refused_or_taken_as_the_negotiated_revision_says() {
    let (tx, _rx) = mpsc::unbounded_channel();
    // Before initialize: refused.
    let out = raw(server(tx.clone()), &[BATCH], 1).await;
    assert_eq!(out[0]["error"]["code"], -32600);
    assert!(out[0]["id"].is_null());
    for (version, accepted) in [
        ("2024-11-05", true),
        ("2025-03-26", true),
        ("2025-06-18", false),
        ("2025-11-25", false),
        ("2099-01-01", false), // answered with the latest
    ] {
        let init = INIT.replace("2025-03-26", version);
        let out = raw(server(tx.clone()), &[&init], 1).await;
        assert!(out[0]["result"].is_object(), "{out:?}");
        // The batch goes out once the answer to initialize is read, as a client does.
        let (a, b) = tokio::io::duplex(64 << 10);
        let _served = server(tx.clone()).builder().run_io(a);
        let (r, mut w) = tokio::io::split(b);
        let mut lines = BufReader::new(r).lines();
        w.write_all(format!("{init}\n").as_bytes()).await.unwrap();
        lines.next_line().await.unwrap().unwrap();
        w.write_all(format!("{BATCH}\n").as_bytes()).await.unwrap();
        let answer = tokio::time::timeout(Duration::from_secs(5), lines.next_line())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let answer: Value = serde_json::from_str(&answer).unwrap();
        if accepted {
            let replies = answer
                .as_array()
                .unwrap_or_else(|| panic!("{version}: {answer}"));
            assert_eq!(replies.len(), 2, "{version}");
            assert!(
                replies.iter().all(|r| r["result"] == json!({})),
                "{version}: {answer}"
            );
        } else {
            assert_eq!(answer["error"]["code"], -32600, "{version}: {answer}");
            assert!(answer["id"].is_null());
        }
    }
}

#[tokio::test]
async fn tools_results_failures_and_unknown_tools() {
    let (client, _rx) = pair().await;
    assert_eq!(
        client.initialize_result()["serverInfo"]["name"],
        "test-server"
    );
    let tools = client.list_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(|t| t.name.as_str()).collect::<Vec<_>>(),
        ["add", "fail", "steps", "logs", "wait"]
    );
    assert_eq!(tools[0].description.as_deref(), Some("adds"));
    let r = client
        .call_tool("add", json!({"a": 1, "b": 2}))
        .await
        .unwrap();
    assert_eq!(r, ToolResult::text("3"));
    let r = client.call_tool("fail", json!({})).await.unwrap();
    assert!(r.is_error);
    assert_eq!(r.joined_text(), "it broke");
    let r = client.call_tool("add", json!({"a": "one"})).await.unwrap();
    assert!(r.is_error);
    assert!(r.joined_text().starts_with("invalid arguments"), "{r:?}");
    // No arguments at all decode from {} (and fail here: fields are missing).
    let r = client.call_tool("add", ()).await.unwrap();
    assert!(r.is_error);
    let e = client.call_tool("nope", json!({})).await.unwrap_err();
    let rpc = e.rpc().unwrap();
    assert_eq!(rpc.code, -32602);
    assert_eq!(rpc.message, "Unknown tool: nope");
    client.ping().await.unwrap();
    client.close().await.unwrap();
}

#[tokio::test]
async fn progress_needs_a_token_and_must_increase() {
    let (client, _rx) = pair().await;
    // No token: nothing is sent.
    let r = client
        .call_tool("steps", json!({"values": [1.0, 2.0]}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "[false, false]");
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = Arc::clone(&seen);
    let r = client
        .call_tool_with_progress(
            "steps",
            json!({"values": [1.0, 1.0, 0.5, 2.5, 3.0]}),
            move |p| {
                record.lock().unwrap().push((p.progress, p.total));
            },
        )
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "[true, false, false, true, true]");
    assert_eq!(
        *seen.lock().unwrap(),
        [(1.0, Some(10.0)), (2.5, Some(10.0)), (3.0, Some(10.0))]
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn cancelling_a_call_stops_the_tool_and_the_session_goes_on() {
    let (client, mut events) = pair().await;
    let (tx, mut progressed) = mpsc::unbounded_channel();
    let running = client
        .start_tool(
            "wait",
            json!({}),
            Some(Box::new(move |p| {
                let _ = tx.send(p.progress);
            })),
        )
        .unwrap();
    // Progress arrives while it runs.
    for _ in 0..3 {
        tokio::time::timeout(Duration::from_secs(5), progressed.recv())
            .await
            .unwrap()
            .unwrap();
    }
    running.cancel();
    let event = tokio::time::timeout(Duration::from_secs(5), events.recv())
        .await
        .expect("the tool saw the cancellation")
        .unwrap();
    assert!(event.starts_with("cancelled "), "{event}");
    assert!(matches!(running.result().await, Err(McpError::Cancelled)));
    // The progress callback is gone: the channel closes.
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        while progressed.recv().await.is_some() {}
    })
    .await;
    assert!(rest.is_ok());
    client.ping().await.unwrap();
    assert_eq!(
        client
            .call_tool("add", json!({"a": 2, "b": 2}))
            .await
            .unwrap()
            .joined_text(),
        "4"
    );
    client.close().await.unwrap();
}

#[tokio::test]
async fn logging_honours_set_level() {
    let (client, _rx) = pair().await;
    let logs = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&logs);
    client.on_log(move |level, data| seen.lock().unwrap().push((level, data)));
    let r = client.call_tool("logs", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), format!("{:?}", [true; 8]));
    assert_eq!(logs.lock().unwrap().len(), 8);
    client.set_log_level(LogLevel::Error).await.unwrap();
    logs.lock().unwrap().clear();
    let r = client.call_tool("logs", json!({})).await.unwrap();
    assert_eq!(
        r.joined_text(),
        "[false, false, false, false, true, true, true, true]"
    );
    let got: Vec<LogLevel> = logs.lock().unwrap().iter().map(|(l, _)| *l).collect();
    assert_eq!(
        got,
        [
            LogLevel::Error,
            LogLevel::Critical,
            LogLevel::Alert,
            LogLevel::Emergency
        ]
    );
    assert_eq!(logs.lock().unwrap()[0].1, "error");
    let e = client
        .client()
        .call::<_, Value>("logging/setLevel", json!({"level": "loud"}))
        .await
        .unwrap_err();
    assert_eq!(e.rpc().unwrap().code, -32602);
    client.close().await.unwrap();
}

#[cfg(feature = "schemars")]
#[tokio::test]
async fn schemas_are_generated_from_the_argument_type() {
    #[derive(Deserialize, schemars::JsonSchema)]
    struct Greet {
        /// Who to greet.
        name: String,
        #[serde(default)]
        times: Option<u32>,
    }
    let server = McpServer::new("s", "1").tool("greet", "greets", |_ctx, g: Greet| async move {
        Ok::<_, ToolError>(format!("hello {} x{}", g.name, g.times.unwrap_or(1)))
    });
    let (a, b) = tokio::io::duplex(64 << 10);
    let _served = server.builder().run_io(a);
    let client = McpClient::connect(|builder| builder.run_io(b))
        .await
        .unwrap();
    let tools = client.list_tools().await.unwrap();
    let schema = &tools[0].input_schema;
    assert_eq!(schema["type"], "object");
    assert_eq!(schema["properties"]["name"]["type"], "string");
    assert_eq!(schema["properties"]["name"]["description"], "Who to greet.");
    assert_eq!(schema["required"], json!(["name"]));
    assert!(schema.get("$schema").is_none());
    let r = client
        .call_tool("greet", json!({"name": "ada"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "hello ada x1");
    client.close().await.unwrap();
}
