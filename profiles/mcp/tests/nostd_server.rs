//! The no_std `Server` over an inline-storage `Connection`: the handshake, negotiation,
//! tools, progress, cancellation, logging and batch refusal, checked on the wire.

#![allow(clippy::unwrap_used)] // test helpers panic on failure

use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Input, Instant};
use rpcwire_mcp::{LogLevel, Phase, ProtocolVersion, Server, ServerInfo, Step, Text, Tool};

static INFO: ServerInfo<'static> = ServerInfo {
    name: "dev\"ice",
    version: "1.0",
    instructions: Some("Use add."),
    logging: true,
};
static TOOLS: &[Tool<'static>] = &[
    Tool {
        name: "add",
        description: "Adds a and b.",
        input_schema: r#"{"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"integer"}},"required":["a","b"]}"#,
    },
    Tool {
        name: "slow",
        description: "Takes a while.",
        input_schema: r#"{"type":"object"}"#,
    },
];

type Conn = Connection<Inline<2048, 1024, 2, 4>>;

struct Harness {
    conn: Conn,
    rx: RxBuffer<[u8; 1024]>,
    server: Server<'static, 4>,
    calls: Vec<rpcwire_mcp::ToolCall<'static>>,
    cancelled: Vec<rpcwire::RequestHandle>,
}

impl Harness {
    fn new(config: Config) -> Self {
        let conn = Conn::new(config);
        let rx = conn.rx_buffer();
        Harness {
            conn,
            rx,
            server: Server::new(&INFO, TOOLS),
            calls: Vec::new(),
            cancelled: Vec::new(),
        }
    }

    /// Feeds one line; returns what was written back (lines).
    fn feed(&mut self, line: &str) -> Vec<serde_json::Value> {
        let text = format!("{line}\n");
        let mut input = text.as_bytes();
        while let Input::Item(item) =
            self.conn
                .handle_input(Instant::ZERO, &mut self.rx, &mut input)
        {
            match self.server.handle(&mut self.conn, item).unwrap() {
                Step::Call(call) => self.calls.push(rpcwire_mcp::ToolCall {
                    arguments: None,
                    ..call
                }),
                Step::Cancelled(h) => self.cancelled.push(h),
                Step::Request(req) => {
                    self.conn
                        .reject(req.handle, rpcwire::ErrorCode::METHOD_NOT_FOUND)
                        .unwrap();
                    self.server.finish(req.handle);
                }
                _ => {}
            }
        }
        self.drain()
    }

    fn drain(&mut self) -> Vec<serde_json::Value> {
        let mut out = Vec::new();
        self.conn
            .transmit_with(|b| {
                out.extend_from_slice(b);
                Ok::<_, ()>(b.len())
            })
            .unwrap();
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn init(&mut self, version: &str) -> serde_json::Value {
        let out = self.feed(&format!(
            r#"{{"jsonrpc":"2.0","id":0,"method":"initialize","params":{{"protocolVersion":"{version}","capabilities":{{}},"clientInfo":{{"name":"t","version":"1"}}}}}}"#
        ));
        self.feed(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        out.into_iter().next().unwrap()
    }
}

fn error_code(v: &serde_json::Value) -> i64 {
    v["error"]["code"].as_i64().unwrap()
}

#[test]
fn only_ping_and_initialize_before_initialize() {
    let mut h = Harness::new(Config::default());
    let out = h.feed(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert_eq!(error_code(&out[0]), -32600);
    assert_eq!(out[0]["error"]["message"], "Invalid Request");
    let out = h.feed(r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#);
    assert_eq!(out[0]["result"], serde_json::json!({}));
    // No log before initialize.
    assert!(!h
        .server
        .log(&mut h.conn, LogLevel::Error, None, Text::Str("x"))
        .unwrap());
    let init = h.init("2025-06-18");
    assert_eq!(h.server.phase(), Phase::Ready(ProtocolVersion::V2025_06_18));
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(init["result"]["serverInfo"]["name"], "dev\"ice");
    assert_eq!(init["result"]["instructions"], "Use add.");
    assert_eq!(
        init["result"]["capabilities"],
        serde_json::json!({"tools":{"listChanged":false},"logging":{}})
    );
    let out = h.feed(r#"{"jsonrpc":"2.0","id":3,"method":"initialize","params":{}}"#);
    assert_eq!(error_code(&out[0]), -32600);
    assert_eq!(h.server.version(), Some(ProtocolVersion::V2025_06_18));
    let out = h.feed(r#"{"jsonrpc":"2.0","id":4,"method":"resources/list"}"#);
    assert_eq!(error_code(&out[0]), -32601);
}

#[test]
fn negotiation_answers_the_clients_version_or_the_latest() {
    for v in ProtocolVersion::ALL {
        let mut h = Harness::new(Config::default());
        assert_eq!(h.init(v.as_str())["result"]["protocolVersion"], v.as_str());
        assert_eq!(h.server.version(), Some(v));
    }
    let mut h = Harness::new(Config::default());
    assert_eq!(
        h.init("2099-01-01")["result"]["protocolVersion"],
        "2025-11-25"
    );
    // No params at all: the latest too.
    let mut h = Harness::new(Config::default());
    let out = h.feed(r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#);
    assert_eq!(out[0]["result"]["protocolVersion"], "2025-11-25");
    // Before notifications/initialized, requests are already taken.
    assert_eq!(
        h.server.phase(),
        Phase::Initializing(ProtocolVersion::LATEST)
    );
    let out = h.feed(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    assert!(out[0]["result"]["tools"].is_array());
}

#[test]
fn tools_list_sends_schemas_verbatim_and_unknown_tools_are_invalid_params() {
    let mut h = Harness::new(Config::default());
    h.init("2025-11-25");
    let out = h.feed(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#);
    let tools = out[0]["result"]["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 2);
    assert_eq!(tools[0]["name"], "add");
    assert_eq!(
        tools[0]["inputSchema"]["required"],
        serde_json::json!(["a", "b"])
    );
    let out = h.feed(r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"nope"}}"#);
    assert_eq!(error_code(&out[0]), -32602);
    assert_eq!(out[0]["error"]["message"], "Invalid params");
    let out = h.feed(
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":[1]}}"#,
    );
    assert_eq!(error_code(&out[0]), -32602);
    let out = h.feed(r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{}}"#);
    assert_eq!(error_code(&out[0]), -32602);
    assert!(h.calls.is_empty());
    let out = h.feed(r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"add","arguments":{"a":1,"b":2}}}"#);
    assert!(out.is_empty());
    let call = h.calls.pop().unwrap();
    assert_eq!(call.tool, 0);
    assert!(!call.wants_progress);
    // No token: no progress.
    assert!(!h
        .server
        .progress(&mut h.conn, call.handle, 1, None, None)
        .unwrap());
    h.server
        .respond_tool(&mut h.conn, call.handle, Text::Str("bad \"input\""), true)
        .unwrap();
    let out = h.drain();
    assert_eq!(
        out[0]["result"],
        serde_json::json!({"content":[{"type":"text","text":"bad \"input\""}],"isError":true})
    );
}

#[test]
fn progress_increases_and_cancellation_stops_it() {
    let mut h = Harness::new(Config::default());
    h.init("2025-11-25");
    h.feed(r#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"slow","_meta":{"progressToken":"tok"}}}"#);
    let call = h.calls.pop().unwrap();
    assert!(call.wants_progress);
    assert!(h
        .server
        .progress(&mut h.conn, call.handle, 1, Some(3), Some("one"))
        .unwrap());
    assert!(!h
        .server
        .progress(&mut h.conn, call.handle, 1, Some(3), None)
        .unwrap());
    assert!(h
        .server
        .progress(&mut h.conn, call.handle, 2, None, None)
        .unwrap());
    let out = h.drain();
    assert_eq!(out.len(), 2);
    assert_eq!(out[0]["method"], "notifications/progress");
    assert_eq!(
        out[0]["params"],
        serde_json::json!({"progressToken":"tok","progress":1,"total":3,"message":"one"})
    );
    assert_eq!(out[1]["params"]["progress"], 2);
    // A cancellation naming another id is ignored; this one's is delivered once.
    h.feed(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"b"}}"#);
    assert!(h.cancelled.is_empty());
    h.feed(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a","reason":"user"}}"#);
    assert_eq!(h.cancelled, [call.handle]);
    assert!(h.server.is_cancelled(call.handle));
    assert!(!h
        .server
        .progress(&mut h.conn, call.handle, 3, None, None)
        .unwrap());
    h.feed(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a"}}"#);
    assert_eq!(h.cancelled.len(), 1);
    // The cancelled call is let go of with no answer.
    h.server.release(&mut h.conn, call.handle).unwrap();
    assert!(!h.server.is_cancelled(call.handle));
    assert!(h.drain().is_empty());
    assert_eq!(h.conn.inflight_len(), 0);
    assert!(h
        .server
        .respond_tool(&mut h.conn, call.handle, Text::Str("late"), false)
        .is_err());
    // Numeric ids and tokens too.
    h.feed(r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"slow","_meta":{"progressToken":12}}}"#);
    let call = h.calls.pop().unwrap();
    h.drain();
    assert!(h
        .server
        .progress(&mut h.conn, call.handle, 5, None, None)
        .unwrap());
    assert_eq!(h.drain()[0]["params"]["progressToken"], 12);
    h.feed(r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}"#);
    assert_eq!(h.cancelled.len(), 2);
}

#[test]
fn a_progress_token_too_long_to_keep_gives_no_progress() {
    let mut h = Harness::new(Config::default());
    h.init("2025-11-25");
    let long = "x".repeat(rpcwire_mcp::MAX_KEY_LEN);
    h.feed(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"slow","_meta":{{"progressToken":"{long}"}}}}}}"#
    ));
    let call = h.calls.pop().unwrap();
    assert!(!call.wants_progress);
    assert!(!h
        .server
        .progress(&mut h.conn, call.handle, 1, None, None)
        .unwrap());
}

#[test]
fn log_level_filters_messages() {
    let mut h = Harness::new(Config::default());
    h.init("2025-11-25");
    assert!(h
        .server
        .log(&mut h.conn, LogLevel::Debug, Some("t"), Text::Str("d"))
        .unwrap());
    let out = h.drain();
    assert_eq!(out[0]["method"], "notifications/message");
    assert_eq!(
        out[0]["params"],
        serde_json::json!({"level":"debug","logger":"t","data":"d"})
    );
    let out = h.feed(
        r#"{"jsonrpc":"2.0","id":1,"method":"logging/setLevel","params":{"level":"warning"}}"#,
    );
    assert_eq!(out[0]["result"], serde_json::json!({}));
    assert_eq!(h.server.log_level(), LogLevel::Warning);
    assert!(!h
        .server
        .log(&mut h.conn, LogLevel::Info, None, Text::Str("i"))
        .unwrap());
    assert!(h
        .server
        .log(&mut h.conn, LogLevel::Error, None, Text::Json(b"{\"n\":1}"))
        .unwrap());
    assert_eq!(h.drain()[0]["params"]["data"], serde_json::json!({"n":1}));
    let out =
        h.feed(r#"{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"loud"}}"#);
    assert_eq!(error_code(&out[0]), -32602);
    assert_eq!(h.server.log_level(), LogLevel::Warning);
}

#[test]
fn batches_follow_the_negotiated_revision() {
    assert!(ProtocolVersion::LATEST.refuses_batches());
    let config = Config {
        batches: false,
        ..Config::default()
    };
    let mut h = Harness::new(config);
    h.init("2025-11-25");
    let batch =
        r#"[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]"#;
    let out = h.feed(batch);
    assert_eq!(out.len(), 1);
    assert_eq!(error_code(&out[0]), -32600);
    assert!(out[0]["id"].is_null());
    // A 2025-03-26 session takes them, once initialized.
    let mut h = Harness::new(config);
    let out = h.feed(batch);
    assert_eq!(error_code(&out[0]), -32600, "refused before initialize");
    h.init("2025-03-26");
    let out = h.feed(batch);
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].as_array().map(Vec::len), Some(2), "{out:?}");
}

/// A UART in memory: fixed input in small reads, everything written kept.
struct Uart {
    input: Vec<u8>,
    at: usize,
    out: Vec<u8>,
}

impl embedded_io::ErrorType for Uart {
    type Error = core::convert::Infallible;
}

impl embedded_io::Read for Uart {
    fn read(&mut self, buf: &mut [u8]) -> Result<usize, Self::Error> {
        let n = buf.len().min(7).min(self.input.len() - self.at);
        buf[..n].copy_from_slice(&self.input[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

impl embedded_io::Write for Uart {
    fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        // A slow line: a few bytes per write.
        let n = buf.len().min(5);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> Result<(), Self::Error> {
        Ok(())
    }
}

#[test]
fn a_firmware_style_loop_over_the_embedded_io_driver() {
    use rpcwire_embedded_io::{Driver, Incoming};
    let input = [
        r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#,
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"a":2,"b":5},"_meta":{"progressToken":"t"}}}"#,
        r#"{"jsonrpc":"2.0","id":4,"method":"nope"}"#,
    ]
    .join("\n")
        + "\n";
    let uart = Uart {
        input: input.into_bytes(),
        at: 0,
        out: Vec::new(),
    };
    // A transmit buffer smaller than the tools/list answer's pieces forces WouldBlock
    // retries through ctx.retry.
    let config = Config {
        batches: false,
        ..Config::default()
    };
    let mut driver: Driver<_, _, rpcwire_embedded_io::Inline<512, 256, 2, 2>, 512> =
        Driver::new(uart, || Instant::ZERO, config);
    let mut server: Server<'static, 2> = Server::new(&INFO, TOOLS);
    while driver.io().at < driver.io().input.len() {
        driver
            .read_once(|ctx, item| match item {
                Incoming::Request(req) => match ctx.retry(|conn| server.request(conn, req)) {
                    Ok(Step::Call(call)) => {
                        let sent =
                            ctx.retry(|conn| server.progress(conn, call.handle, 1, Some(1), None));
                        assert_eq!(sent, Ok(true));
                        ctx.retry(|conn| {
                            server.respond_tool(conn, call.handle, Text::Json(b"\"7\""), false)
                        })
                        .unwrap();
                    }
                    Ok(Step::Request(req)) => {
                        ctx.reject(req.handle, rpcwire::ErrorCode::METHOD_NOT_FOUND)
                            .unwrap();
                        server.finish(req.handle);
                    }
                    other => {
                        other.unwrap();
                    }
                },
                Incoming::Notification(n) => {
                    server.notification(n);
                }
                _ => {}
            })
            .unwrap();
    }
    assert_eq!(server.phase(), Phase::Ready(ProtocolVersion::V2025_06_18));
    let out = String::from_utf8(driver.io().out.clone()).unwrap();
    let lines: Vec<serde_json::Value> = out
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert_eq!(lines[0]["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(lines[1]["result"]["tools"][0]["name"], "add");
    assert_eq!(
        lines[2]["params"],
        serde_json::json!({"progressToken":"t","progress":1,"total":1})
    );
    assert_eq!(lines[3]["result"]["content"][0]["text"], "7");
    assert_eq!(lines[4]["error"]["code"], -32601);
}

#[test]
fn the_writer_and_the_serializer_give_the_same_text() {
    use rpcwire_mcp::{Notice, Reply, Writer};
    fn both(write: impl Fn(&mut Writer<'_>), value: &impl serde::Serialize) {
        let mut a = [0u8; 2048];
        let mut w = Writer::new(&mut a);
        write(&mut w);
        let written = w.finish().unwrap().to_vec();
        let mut b = [0u8; 2048];
        let n = rpcwire::wire::ser::to_slice(value, &mut b).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&written),
            String::from_utf8_lossy(&b[..n])
        );
        serde_json::from_slice::<serde_json::Value>(&written).unwrap();
    }
    let info_plain = ServerInfo {
        logging: false,
        instructions: None,
        ..INFO
    };
    let replies = [
        Reply::Empty,
        Reply::Initialize {
            version: ProtocolVersion::V2024_11_05,
            info: &INFO,
        },
        Reply::Initialize {
            version: ProtocolVersion::LATEST,
            info: &info_plain,
        },
        Reply::Tools(TOOLS),
        Reply::Tools(&[]),
        Reply::ToolResult {
            text: Text::Str("a\"b\\c\n\u{1}é"),
            is_error: true,
        },
        Reply::ToolResult {
            text: Text::Json(b"[1,2]"),
            is_error: false,
        },
    ];
    for r in &replies {
        both(|w| r.write(w), r);
    }
    let notices = [
        Notice::Progress {
            token: b"\"t\"",
            progress: u32::MAX,
            total: Some(0),
            message: Some("m\t"),
        },
        Notice::Progress {
            token: b"7",
            progress: 0,
            total: None,
            message: None,
        },
        Notice::Log {
            level: LogLevel::Emergency,
            logger: Some("l"),
            data: Text::Str("x"),
        },
        Notice::Log {
            level: LogLevel::Debug,
            logger: None,
            data: Text::Json(b"{}"),
        },
        Notice::Cancelled {
            request_id: b"\"r\"",
            reason: Some("why"),
        },
        Notice::Cancelled {
            request_id: b"3",
            reason: None,
        },
    ];
    for n in &notices {
        both(|w| n.write(w), n);
    }
}

#[test]
fn an_answer_larger_than_the_buffer_is_an_internal_error() {
    // A server whose rendering buffer cannot hold its tools/list answer.
    let mut conn = Conn::new(Config::default());
    let mut rx: RxBuffer<[u8; 1024]> = conn.rx_buffer();
    let mut server: Server<'static, 4, 64> = Server::new(&INFO, TOOLS);
    let text = concat!(
        r#"{"jsonrpc":"2.0","id":0,"method":"initialize"}"#,
        "\n",
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
        "\n"
    );
    let mut input = text.as_bytes();
    let mut results = Vec::new();
    while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
        results.push(server.handle(&mut conn, item).map(|_| ()));
    }
    assert!(
        matches!(results[0], Err(rpcwire::RespondError::TooLarge { .. })),
        "{results:?}"
    );
    // initialize did not fit either: the handshake did not move.
    assert_eq!(server.phase(), Phase::AwaitingInitialize);
    let mut out = Vec::new();
    conn.transmit_with(|b| {
        out.extend_from_slice(b);
        Ok::<_, ()>(b.len())
    })
    .unwrap();
    let out = String::from_utf8(out).unwrap();
    assert!(out.contains(r#""code":-32603"#), "{out}");
}
