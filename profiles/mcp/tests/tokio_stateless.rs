//! The tokio `McpServer` at the 2026-07-28 revision over an in-memory pipe (stdio framing):
//! no handshake, `server/discover`, results completed with `resultType` and caching hints,
//! `InputRequiredResult` rounds with a sealed `requestState` that is refused (Invalid params,
//! before the tool runs) when tampered with, expired, replayed or sent for another tool; the
//! missing-capability error; logs only on request; `subscriptions/listen`. And the same
//! input-asking tool on a session revision, where the server asks the client itself.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use rpcwire_mcp::tokio::{
    Binding, Change, InputRequired, McpServer, RequestStateSeal, ToolContext, ToolError, ToolReply,
    ToolResult,
};
use rpcwire_mcp::LogLevel;
use serde_json::{json, Value};
use tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// One client on a pipe to a server: write a line, read the next.
struct Pipe {
    lines: Lines<BufReader<ReadHalf<DuplexStream>>>,
    w: WriteHalf<DuplexStream>,
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
            _served: served,
        }
    }

    async fn send(&mut self, message: Value) {
        self.w
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }

    async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(5), self.lines.next_line())
            .await
            .expect("a message within 5 s")
            .unwrap()
            .unwrap();
        serde_json::from_str(&line).unwrap()
    }

    /// Sends a 2026-07-28 request and returns its answer (skipping notifications).
    async fn call(&mut self, id: u32, method: &str, mut params: Value, caps: Value) -> Value {
        params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("2026-07-28");
        params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = caps;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let m = self.next().await;
            if m["id"] == json!(id) {
                return m;
            }
        }
    }
}

fn caps() -> Value {
    json!({"elicitation": {}, "sampling": {}})
}

/// The server of these tests; `runs` counts the runs of `book`.
fn server(seal: &RequestStateSeal, runs: &Arc<AtomicUsize>) -> McpServer {
    let runs = Arc::clone(runs);
    McpServer::new("stateless", "1.0")
        .request_state_seal(seal.clone())
        .tool_with_schema(
            "book",
            "Asks for a date, then books.",
            json!({"type": "object"}),
            move |ctx: ToolContext, _: Value| {
                runs.fetch_add(1, Ordering::SeqCst);
                async move {
                    let date = ctx
                        .input_response("when")
                        .and_then(|a| a["content"]["date"].as_str());
                    let step = ctx.request_state().and_then(|s| s["step"].as_u64());
                    Ok::<ToolReply, ToolError>(match (date, step) {
                        (Some(date), Some(1)) => ToolResult::text(format!("booked {date}")).into(),
                        _ => InputRequired::new()
                            .elicit(
                                "when",
                                "Which date?",
                                json!({"type": "object",
                                "properties": {"date": {"type": "string"}}, "required": ["date"]}),
                            )
                            .state(json!({"step": 1}))
                            .into(),
                    })
                }
            },
        )
        .tool_with_schema(
            "other",
            "Any tool.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move { Ok::<_, ToolError>("other ran") },
        )
        .tool_with_schema(
            "whoami",
            "The caller's subject.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ctx.caller().identity().subject().to_owned())
            },
        )
        .tool_with_schema(
            "sample",
            "Needs sampling.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(
                    InputRequired::new().sample("s", json!({"messages": [], "maxTokens": 5})),
                )
            },
        )
        .tool_with_schema(
            "chatty",
            "Logs once.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                ctx.log(LogLevel::Info, "hello").await;
                Ok::<_, ToolError>("done")
            },
        )
        .tool_with_schema(
            "touch",
            "Announces a tool list change.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(ctx.changed(Change::Tools).to_string())
            },
        )
}

fn book(responses: Option<Value>, state: Option<&Value>) -> Value {
    let mut p = json!({"name": "book", "arguments": {}});
    if let Some(r) = responses {
        p["inputResponses"] = r;
    }
    if let Some(s) = state {
        p["requestState"] = s.clone();
    }
    p
}

fn accepted(date: &str) -> Value {
    json!({"when": {"action": "accept", "content": {"date": date}}})
}

#[tokio::test]
async fn discover_and_completed_results_with_no_handshake() {
    let seal = RequestStateSeal::new(b"k".to_vec());
    let mut pipe = Pipe::open(server(&seal, &Arc::default()));
    let d = pipe.call(1, "server/discover", json!({}), caps()).await;
    let r = &d["result"];
    // The server speaks the session revisions too (a client may `initialize` instead).
    assert_eq!(
        r["supportedVersions"],
        json!([
            "2024-11-05",
            "2025-03-26",
            "2025-06-18",
            "2025-11-25",
            "2026-07-28"
        ]),
        "{d}"
    );
    assert_eq!(
        r["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "stateless"
    );
    assert_eq!(r["capabilities"]["tools"]["listChanged"], true);
    assert_eq!(
        (&r["resultType"], &r["ttlMs"], &r["cacheScope"]),
        (&json!("complete"), &json!(0), &json!("private"))
    );
    let list = pipe.call(2, "tools/list", json!({}), caps()).await;
    assert_eq!(list["result"]["resultType"], "complete", "{list}");
    assert_eq!(list["result"]["cacheScope"], "private");
    let call = pipe
        .call(3, "tools/call", json!({"name": "other"}), caps())
        .await;
    assert_eq!(call["result"]["resultType"], "complete", "{call}");
    assert!(
        call["result"].get("ttlMs").is_none(),
        "tools/call is not cacheable: {call}"
    );
    // A request of the revision with an incomplete _meta: Invalid params.
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "server/discover",
        "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}}),
    )
    .await;
    assert_eq!(pipe.next().await["error"]["code"], -32602);
    // The methods the revision removed: Method not found, on this transport too.
    for (id, method) in [(6, "initialize"), (7, "ping"), (8, "logging/setLevel")] {
        let a = pipe
            .call(id, method, json!({"level": "info"}), caps())
            .await;
        assert_eq!(a["error"]["code"], -32601, "{method}: {a}");
    }
    // A session revision's request before initialize is still refused.
    pipe.send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/list"}))
        .await;
    assert_eq!(pipe.next().await["error"]["code"], -32600);
}

#[tokio::test]
async fn input_rounds_and_every_refused_request_state() {
    let seal = RequestStateSeal::new(b"k".to_vec());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut pipe = Pipe::open(server(&seal, &runs));

    // Round 1: the tool asks; round 2 with the answer and the state: done.
    let r1 = pipe.call(1, "tools/call", book(None, None), caps()).await;
    let r1 = &r1["result"];
    assert_eq!(r1["resultType"], "input_required", "{r1}");
    assert_eq!(r1["inputRequests"]["when"]["method"], "elicitation/create");
    let state = r1["requestState"].clone();
    assert!(
        state.as_str().is_some_and(|s| s.starts_with("v1.")),
        "{state}"
    );
    let r2 = pipe
        .call(
            2,
            "tools/call",
            book(Some(accepted("friday")), Some(&state)),
            caps(),
        )
        .await;
    assert_eq!(r2["result"]["content"][0]["text"], "booked friday", "{r2}");
    assert_eq!(r2["result"]["resultType"], "complete");
    assert_eq!(runs.load(Ordering::SeqCst), 2);

    // Each refusal is Invalid params, and the tool does not run.
    let refused = |answer: &Value, why: &str| {
        assert_eq!(answer["error"]["code"], -32602, "{why}: {answer}");
        assert_eq!(
            answer["error"]["message"], "Invalid params: invalid requestState",
            "{why}"
        );
    };
    // Replayed: the state of round 1 again.
    let a = pipe
        .call(
            3,
            "tools/call",
            book(Some(accepted("monday")), Some(&state)),
            caps(),
        )
        .await;
    refused(&a, "replayed");
    // Tampered: a fresh state with its payload changed, and one with text appended.
    let fresh = pipe.call(4, "tools/call", book(None, None), caps()).await["result"]
        ["requestState"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut parts: Vec<String> = fresh.split('.').map(str::to_owned).collect();
    let changed = parts[1].replacen('e', "f", 1);
    assert_ne!(changed, parts[1]);
    parts[1] = changed;
    let forged = json!(parts.join("."));
    let a = pipe
        .call(
            5,
            "tools/call",
            book(Some(accepted("x")), Some(&forged)),
            caps(),
        )
        .await;
    refused(&a, "tampered payload");
    let a = pipe
        .call(
            6,
            "tools/call",
            book(
                Some(accepted("x")),
                Some(&json!(format!("{fresh}-TAMPERED"))),
            ),
            caps(),
        )
        .await;
    refused(&a, "appended");
    // Sent to another tool.
    let mut other = book(Some(accepted("x")), Some(&json!(fresh)));
    other["name"] = json!("other");
    let a = pipe.call(7, "tools/call", other, caps()).await;
    refused(&a, "another tool");
    // Expired: sealed with the server's key for this tool and caller, 301 s ago (the default
    // time to live is 300 s).
    let who = pipe
        .call(8, "tools/call", json!({"name": "whoami"}), caps())
        .await;
    let subject = who["result"]["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_owned();
    let binding = Binding {
        method: "tools/call",
        target: "book",
        caller: &subject,
    };
    let old = seal.seal_at(
        &binding,
        &json!({"step": 1}),
        SystemTime::now() - Duration::from_secs(301),
    );
    let a = pipe
        .call(
            9,
            "tools/call",
            book(Some(accepted("x")), Some(&json!(old))),
            caps(),
        )
        .await;
    refused(&a, "expired");
    // Not a string at all.
    let a = pipe
        .call(
            10,
            "tools/call",
            book(Some(accepted("x")), Some(&json!(7))),
            caps(),
        )
        .await;
    assert_eq!(a["error"]["code"], -32602, "{a}");
    // Rounds 1 (twice), 2 ran; none of the refused ones did.
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    // The fresh state still opens once, for its own tool and caller.
    let ok = pipe
        .call(
            11,
            "tools/call",
            book(Some(accepted("sunday")), Some(&json!(fresh))),
            caps(),
        )
        .await;
    assert_eq!(ok["result"]["content"][0]["text"], "booked sunday", "{ok}");
}

#[tokio::test]
async fn undeclared_capabilities_and_logs_only_on_request() {
    let seal = RequestStateSeal::new(b"k".to_vec());
    let mut pipe = Pipe::open(server(&seal, &Arc::default()));
    let a = pipe
        .call(
            1,
            "tools/call",
            json!({"name": "sample"}),
            json!({"elicitation": {}}),
        )
        .await;
    assert_eq!(a["error"]["code"], -32021, "{a}");
    assert_eq!(
        a["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let a = pipe
        .call(2, "tools/call", json!({"name": "sample"}), caps())
        .await;
    assert_eq!(
        a["result"]["inputRequests"]["s"]["method"],
        "sampling/createMessage"
    );

    // No logLevel in _meta: the answer is the first message.
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "chatty",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}),
    )
    .await;
    assert_eq!(pipe.next().await["id"], 3);
    // With one: the log message first.
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {"name": "chatty",
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {},
                  "io.modelcontextprotocol/logLevel": "info"}}}),
    )
    .await;
    let first = pipe.next().await;
    assert_eq!(first["method"], "notifications/message", "{first}");
    assert_eq!(pipe.next().await["id"], 4);
}

#[tokio::test]
async fn listen_acknowledges_then_sends_only_what_it_follows() {
    let seal = RequestStateSeal::new(b"k".to_vec());
    let mut pipe = Pipe::open(server(&seal, &Arc::default()));
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {}});
    pipe.send(json!({"jsonrpc": "2.0", "id": "tools", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"toolsListChanged": true, "promptsListChanged": true}}}))
        .await;
    let ack = pipe.next().await;
    assert_eq!(
        ack["method"], "notifications/subscriptions/acknowledged",
        "{ack}"
    );
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    // This server has no prompts capability: only the tools filter is acknowledged.
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    pipe.send(
        json!({"jsonrpc": "2.0", "id": "p", "method": "subscriptions/listen",
        "params": {"_meta": meta, "notifications": {"resourcesListChanged": true}}}),
    )
    .await;
    assert_eq!(
        pipe.next().await["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "p"
    );

    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "touch",
        "_meta": meta}}),
    )
    .await;
    let (mut answer, mut changed) = (None, None);
    for _ in 0..2 {
        let m = pipe.next().await;
        if m["id"] == 1 {
            answer = Some(m);
        } else {
            changed = Some(m);
        }
    }
    // Two subscriptions open; the change reached both, and only the first follows it.
    let answer = answer.unwrap();
    assert_eq!(answer["result"]["content"][0]["text"], "2", "{answer}");
    let changed = changed.unwrap();
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    assert_eq!(
        changed["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"],
        "tools"
    );
    // Nothing for the second: the next message is the answer to the next call.
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "whoami",
        "_meta": meta}}),
    )
    .await;
    assert_eq!(pipe.next().await["id"], 2);
    // A malformed filter is Invalid params.
    let bad = pipe
        .call(
            3,
            "subscriptions/listen",
            json!({"notifications": 5}),
            json!({}),
        )
        .await;
    assert_eq!(bad["error"]["code"], -32602, "{bad}");
}

#[tokio::test]
async fn on_a_session_revision_the_server_asks_the_client_itself() {
    let seal = RequestStateSeal::new(b"k".to_vec());
    let runs = Arc::new(AtomicUsize::new(0));
    let mut pipe = Pipe::open(server(&seal, &runs));
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "t", "version": "0"}}}),
    )
    .await;
    assert!(pipe.next().await["result"].is_object());
    pipe.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    pipe.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "book"}}),
    )
    .await;
    let ask = pipe.next().await;
    assert_eq!(ask["method"], "elicitation/create", "{ask}");
    pipe.send(
        json!({"jsonrpc": "2.0", "id": ask["id"], "result": {"action": "accept",
        "content": {"date": "tuesday"}}}),
    )
    .await;
    let done = pipe.next().await;
    assert_eq!(
        done["result"]["content"][0]["text"], "booked tuesday",
        "{done}"
    );
    // No 2026-07-28 members on a session revision's result.
    assert!(done["result"].get("resultType").is_none(), "{done}");
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}
