//! The tasks extension (`io.modelcontextprotocol/tasks`, 2026-07-28) on the tokio `McpServer`
//! over an in-memory pipe: gating on the declared extension, `CreateTaskResult`, `tasks/get`
//! right after creation and with the inlined result, input requests answered with
//! `tasks/update` (one at a time), `tasks/cancel` (idempotent), a panicking tool failing its
//! task, unknown ids.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use rpcwire_mcp::tokio::{
    InputRequired, McpServer, TaskSupport, ToolContext, ToolError, ToolReply, ToolResult,
    TASKS_EXTENSION,
};
use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

struct Pipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    w: WriteHalf<DuplexStream>,
    next_id: u64,
    _served: rpcwire_tokio::Session,
}

impl Pipe {
    fn open(server: McpServer) -> Pipe {
        let (a, b) = tokio::io::duplex(64 << 10);
        let served = server.builder().run_io(a);
        let (r, w) = tokio::io::split(b);
        Pipe {
            lines: BufReader::new(r).lines(),
            w,
            next_id: 0,
            _served: served,
        }
    }

    /// A 2026-07-28 request (`tasks`: the extension declared); its answer.
    async fn call(&mut self, method: &str, mut params: Value, tasks: bool) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let mut caps = json!({"elicitation": {}});
        if tasks {
            caps["extensions"] = json!({TASKS_EXTENSION: {}});
        }
        params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": caps});
        let line = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.w
            .write_all(format!("{line}\n").as_bytes())
            .await
            .unwrap();
        loop {
            let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
                .await
                .expect("an answer within 5 s")
                .unwrap()
                .unwrap();
            let m: Value = serde_json::from_str(&line).unwrap();
            if m["id"] == json!(id) {
                return m;
            }
        }
    }

    async fn get(&mut self, task: &str) -> Value {
        self.call("tasks/get", json!({"taskId": task}), true).await["result"].clone()
    }

    /// Polls `tasks/get` until the task's status is `status` (within 5 s).
    async fn until(&mut self, task: &str, status: &str) -> Value {
        for _ in 0..250 {
            let t = self.get(task).await;
            if t["status"] == status {
                return t;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("task {task} never reached {status}");
    }
}

fn server() -> McpServer {
    McpServer::new("tasks", "1.0")
        .tool_with_schema(
            "sync",
            "Sync only.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move { Ok::<_, ToolError>("sync done") },
        )
        .tool_with_schema(
            "slow",
            "Sleeps.",
            json!({"type": "object"}),
            |_: ToolContext, a: Value| async move {
                tokio::time::sleep(Duration::from_millis(a["ms"].as_u64().unwrap_or(50))).await;
                Ok::<_, ToolError>("slow done")
            },
        )
        .task_support("slow", TaskSupport::Optional)
        .tool_with_schema(
            "only_task",
            "Required.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move { Ok::<_, ToolError>("ran") },
        )
        .task_support("only_task", TaskSupport::Required)
        .tool_with_schema(
            "ask",
            "Asks twice at once.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                let (a, b) = (ctx.input_response("a"), ctx.input_response("b"));
                Ok::<ToolReply, ToolError>(match (a, b) {
                    (Some(a), Some(b)) => {
                        ToolResult::text(format!("{} {}", a["content"]["v"], b["content"]["v"]))
                            .into()
                    }
                    _ => InputRequired::new()
                        .elicit("a", "A?", json!({"type": "object"}))
                        .elicit("b", "B?", json!({"type": "object"}))
                        .into(),
                })
            },
        )
        .task_support("ask", TaskSupport::Optional)
        .tool_with_schema(
            "boom",
            "Panics.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move {
                if true {
                    panic!("boom");
                }
                Ok::<_, ToolError>("never")
            },
        )
        .task_support("boom", TaskSupport::Optional)
        .tool_with_schema(
            "named",
            "Asks a name, then works as a task.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                Ok::<ToolReply, ToolError>(match ctx.input_response("n") {
                    Some(a) => ToolResult::text(format!("hi {}", a["content"]["v"])).into(),
                    None => InputRequired::new()
                        .elicit("n", "Name?", json!({"type": "object"}))
                        .into(),
                })
            },
        )
        .task_support("named", TaskSupport::AfterInput)
}

#[tokio::test]
async fn tasks_need_the_extension() {
    let mut pipe = Pipe::open(server());
    let d = pipe.call("server/discover", json!({}), false).await;
    assert_eq!(
        d["result"]["capabilities"]["extensions"][TASKS_EXTENSION],
        json!({}),
        "{d}"
    );
    // Without it: task methods refused, a required-task tool refused, an optional one sync.
    let e = pipe.call("tasks/get", json!({"taskId": "x"}), false).await;
    assert_eq!(e["error"]["code"], -32021, "{e}");
    assert_eq!(
        e["error"]["data"]["requiredCapabilities"],
        json!({"extensions": {TASKS_EXTENSION: {}}})
    );
    let e = pipe
        .call("tools/call", json!({"name": "only_task"}), false)
        .await;
    assert_eq!(e["error"]["code"], -32021, "{e}");
    let r = pipe
        .call("tools/call", json!({"name": "slow"}), false)
        .await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert_eq!(r["result"]["content"][0]["text"], "slow done");
    // With it, a sync-only tool stays sync (a legacy `task` param changes nothing).
    let r = pipe
        .call(
            "tools/call",
            json!({"name": "sync", "task": {"ttl": 1000}}),
            true,
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    assert!(r["result"].get("taskId").is_none());
    // Unknown ids: Invalid params; removed methods: Method not found.
    let e = pipe
        .call("tasks/get", json!({"taskId": "nope"}), true)
        .await;
    assert_eq!(e["error"]["code"], -32602, "{e}");
    let e = pipe
        .call("tasks/result", json!({"taskId": "nope"}), true)
        .await;
    assert_eq!(e["error"]["code"], -32601, "{e}");
}

#[tokio::test]
async fn a_task_runs_to_its_inlined_result() {
    let mut pipe = Pipe::open(server());
    let c = pipe
        .call(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 200}}),
            true,
        )
        .await;
    let c = &c["result"];
    assert_eq!(c["resultType"], "task", "{c}");
    for key in ["result", "error", "inputRequests", "requestState", "task"] {
        assert!(c.get(key).is_none(), "{key} in {c}");
    }
    assert!(c["ttlMs"].is_u64() && c["pollIntervalMs"].is_u64(), "{c}");
    let created = c["createdAt"].as_str().unwrap();
    assert!(
        created.len() == 24 && created.ends_with('Z') && &created[10..11] == "T",
        "{created}"
    );
    let id = c["taskId"].as_str().unwrap().to_owned();
    // Found at once, working.
    let t = pipe.get(&id).await;
    assert_eq!(
        (t["taskId"].as_str(), t["status"].as_str()),
        (Some(id.as_str()), Some("working"))
    );
    assert!(t.get("result").is_none());
    let t = pipe.until(&id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "slow done", "{t}");
    assert!(t.get("error").is_none());
    // Cancelling an ended task: the same ack, the status stays.
    let a = pipe.call("tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(a["result"], json!({"resultType": "complete"}), "{a}");
    assert_eq!(pipe.get(&id).await["status"], "completed");
}

#[tokio::test]
async fn input_requests_are_answered_one_at_a_time() {
    let mut pipe = Pipe::open(server());
    let c = pipe.call("tools/call", json!({"name": "ask"}), true).await;
    let id = c["result"]["taskId"].as_str().unwrap().to_owned();
    let t = pipe.until(&id, "input_required").await;
    assert_eq!(t["inputRequests"].as_object().unwrap().len(), 2, "{t}");
    let answer = |v: &str| json!({"action": "accept", "content": {"v": v}});
    let a = pipe
        .call(
            "tasks/update",
            json!({"taskId": id, "inputResponses": {"a": answer("x"), "extra": 1}}),
            true,
        )
        .await;
    assert_eq!(a["result"], json!({"resultType": "complete"}), "{a}");
    let t = pipe.get(&id).await;
    assert_eq!(t["status"], "input_required");
    assert_eq!(
        t["inputRequests"]
            .as_object()
            .unwrap()
            .keys()
            .collect::<Vec<_>>(),
        ["b"]
    );
    pipe.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": {"b": answer("y")}}),
        true,
    )
    .await;
    let t = pipe.until(&id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "\"x\" \"y\"", "{t}");
}

#[tokio::test]
async fn cancel_stops_a_task_and_a_panic_fails_one() {
    let mut pipe = Pipe::open(server());
    let c = pipe
        .call(
            "tools/call",
            json!({"name": "slow", "arguments": {"ms": 5000}}),
            true,
        )
        .await;
    let id = c["result"]["taskId"].as_str().unwrap().to_owned();
    let a = pipe.call("tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(a["result"], json!({"resultType": "complete"}));
    let t = pipe.get(&id).await;
    assert_eq!(t["status"], "cancelled", "{t}");
    assert!(t.get("result").is_none() && t.get("error").is_none());

    let c = pipe.call("tools/call", json!({"name": "boom"}), true).await;
    let id = c["result"]["taskId"].as_str().unwrap().to_owned();
    let t = pipe.until(&id, "failed").await;
    assert_eq!(t["error"]["code"], -32603, "{t}");
    assert!(t.get("result").is_none());
}

#[tokio::test]
async fn after_input_gathers_synchronously_then_becomes_a_task() {
    let mut pipe = Pipe::open(server());
    let r1 = pipe
        .call("tools/call", json!({"name": "named"}), true)
        .await;
    let r1 = &r1["result"];
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert!(r1.get("taskId").is_none());
    let retry = json!({"name": "named", "requestState": r1["requestState"],
        "inputResponses": {"n": {"action": "accept", "content": {"v": "ann"}}}});
    let r2 = pipe.call("tools/call", retry, true).await;
    let r2 = &r2["result"];
    assert_eq!(r2["resultType"], "task", "{r2}");
    assert!(r2.get("requestState").is_none() && r2.get("inputRequests").is_none());
    let id = r2["taskId"].as_str().unwrap().to_owned();
    let t = pipe.until(&id, "completed").await;
    assert_eq!(t["result"]["content"][0]["text"], "hi \"ann\"", "{t}");
    // Without the extension: refused, as a required task.
    let e = pipe
        .call("tools/call", json!({"name": "named"}), false)
        .await;
    assert_eq!(e["error"]["code"], -32021, "{e}");
}
