//! The no_std `Server` and MCP 2026-07-28, checked on the wire: requests whose `_meta` names
//! the revision need no `initialize`; `server/discover`, `tools/list` and tool results carry
//! `resultType` (and the caching hints where the revision asks for them); an incomplete
//! `_meta`, an unknown revision and the removed methods are refused; the session revisions
//! keep working beside it, on the same connection.

#![allow(clippy::unwrap_used)] // test helpers panic on failure

use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Input, Instant, RequestHandle};
use rpcwire_mcp::{Reply, Server, ServerInfo, Step, Text, Tool, Writer};
use serde_json::{json, Value};

static INFO: ServerInfo<'static> = ServerInfo {
    name: "dev\"ice",
    version: "1.0",
    instructions: Some("Use add."),
    logging: false,
};
static TOOLS: &[Tool<'static>] = &[Tool {
    name: "add",
    description: "Adds a and b.",
    input_schema: r#"{"type":"object"}"#,
}];

const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

/// The `server/discover` result of [`INFO`], as the specification shapes it.
const DISCOVER: &str = r#"{"supportedVersions":["2024-11-05","2025-03-26","2025-06-18","2025-11-25","2026-07-28"],"capabilities":{"tools":{"listChanged":false}},"instructions":"Use add.","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"dev\"ice","version":"1.0"}},"resultType":"complete","ttlMs":0,"cacheScope":"private"}"#;

type Conn = Connection<Inline<2048, 1024, 2, 4>>;

/// A connection and a server rendering into `OUT` bytes; tool calls and other requests are
/// kept for the test to answer.
struct Harness<const OUT: usize> {
    conn: Conn,
    rx: RxBuffer<[u8; 1024]>,
    server: Server<'static, 4, OUT>,
    calls: Vec<RequestHandle>,
    others: Vec<RequestHandle>,
}

impl<const OUT: usize> Harness<OUT> {
    fn new() -> Self {
        let conn = Conn::new(Config {
            batches: false,
            ..Config::default()
        });
        let rx = conn.rx_buffer();
        Harness {
            conn,
            rx,
            server: Server::new(&INFO, TOOLS),
            calls: Vec::new(),
            others: Vec::new(),
        }
    }

    /// Feeds one line; returns what was written back, as text.
    fn feed_text(&mut self, line: &str) -> String {
        let text = format!("{line}\n");
        let mut input = text.as_bytes();
        while let Input::Item(item) =
            self.conn
                .handle_input(Instant::ZERO, &mut self.rx, &mut input)
        {
            match self.server.handle(&mut self.conn, item) {
                Ok(Step::Call(call)) => self.calls.push(call.handle),
                Ok(Step::Request(req)) => self.others.push(req.handle),
                _ => {}
            }
        }
        let mut out = Vec::new();
        self.conn
            .transmit_with(|b| {
                out.extend_from_slice(b);
                Ok::<_, ()>(b.len())
            })
            .unwrap();
        String::from_utf8(out).unwrap()
    }

    fn feed(&mut self, line: &str) -> Value {
        let text = self.feed_text(line);
        serde_json::from_str(text.trim_end()).unwrap_or_else(|e| panic!("{e}: {text}"))
    }

    /// Answers the last tool call with `text`, returns the response.
    fn answer_call(&mut self, text: &[u8]) -> Value {
        let handle = self.calls.pop().unwrap();
        self.server
            .respond_tool(&mut self.conn, handle, Text::Json(text), false)
            .unwrap();
        self.feed("")
    }
}

fn error(id: u32, code: i32, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

#[test]
fn discover_and_tools_need_no_initialize_and_carry_result_type() {
    let mut h = Harness::<1024>::new();
    let text = h.feed_text(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#
    ));
    assert_eq!(
        text,
        format!("{{\"jsonrpc\":\"2.0\",\"result\":{DISCOVER},\"id\":1}}\n")
    );
    assert_eq!(h.server.version(), None, "no session was started");

    let list = h.feed(&format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{{{META}}}}}"#
    ));
    assert_eq!(
        list["result"],
        json!({"tools": [{"name": "add", "description": "Adds a and b.", "inputSchema": {"type": "object"}}],
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private"})
    );

    assert_eq!(
        h.feed_text(&format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{{"name":"add","arguments":{{}},{META}}}}}"#
        )),
        ""
    );
    let handle = *h.calls.last().unwrap();
    assert!(h.server.is_stateless(handle));
    let done = h.answer_call(b"\"3\"");
    assert_eq!(
        done,
        json!({"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "3"}],
            "isError": false, "resultType": "complete"}})
    );
    assert!(!h.server.is_stateless(handle), "forgotten once answered");
}

#[test]
fn incomplete_meta_unknown_revisions_and_removed_methods_are_refused() {
    let mut h = Harness::<1024>::new();
    for (id, params) in [
        (1, r#","params":{}"#),
        (2, ""),
        (3, r#","params":{"_meta":{}}"#),
        (4, r#","params":{"_meta":[]}"#),
    ] {
        assert_eq!(
            h.feed(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"server/discover"{params}}}"#
            )),
            error(id, -32602, "Invalid params"),
            "{params}"
        );
    }
    for (id, meta) in [
        (
            5,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}"#,
        ),
        (
            6,
            r#"{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":[]}"#,
        ),
        (7, r#"{"io.modelcontextprotocol/clientCapabilities":{}}"#),
        (
            8,
            r#"{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}}"#,
        ),
    ] {
        assert_eq!(
            h.feed(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"add","_meta":{meta}}}}}"#
            )),
            error(id, -32602, "Invalid params"),
            "{meta}"
        );
    }
    assert_eq!(
        h.feed(r#"{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{}}}}"#),
        error(9, -32022, "Server error")
    );
    for (id, method) in [(10, "initialize"), (11, "ping"), (12, "logging/setLevel")] {
        assert_eq!(
            h.feed(&format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{{{META}}}}}"#
            )),
            error(id, -32601, "Method not found"),
            "{method}"
        );
    }
    // No revision in `_meta`, no `initialize`: the session revisions' refusal.
    assert_eq!(
        h.feed(r#"{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{"_meta":{"progressToken":1}}}"#),
        error(13, -32600, "Invalid Request")
    );
    assert!(h.calls.is_empty() && h.others.is_empty());
}

#[test]
fn other_methods_are_handed_over_marked_and_sessions_work_beside_it() {
    let mut h = Harness::<1024>::new();
    assert_eq!(
        h.feed_text(&format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{{{META}}}}}"#
        )),
        ""
    );
    let other = h.others.pop().unwrap();
    assert!(h.server.is_stateless(other));
    h.server.finish(other);
    assert!(!h.server.is_stateless(other));
    h.conn
        .reject(other, rpcwire::ErrorCode::METHOD_NOT_FOUND)
        .unwrap();
    assert_eq!(h.feed(""), error(1, -32601, "Method not found"));

    // A session on the same connection: its results stay as its revision has them.
    let init = h.feed(r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}"#);
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18");
    assert!(init["result"].get("resultType").is_none(), "{init}");
    h.feed_text(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    h.feed_text(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add"}}"#);
    assert!(!h.server.is_stateless(*h.calls.last().unwrap()));
    assert_eq!(
        h.answer_call(b"\"s\"")["result"],
        json!({"content": [{"type": "text", "text": "s"}], "isError": false})
    );
    // A `_meta` naming a session revision belongs to the session.
    let ping = h.feed(r#"{"jsonrpc":"2.0","id":4,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-06-18"}}}"#);
    assert_eq!(ping["result"], json!({}));
    // And a 2026-07-28 request still gets its revision's result.
    h.feed_text(&format!(
        r#"{{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{{"name":"add",{META}}}}}"#
    ));
    assert_eq!(h.answer_call(b"\"t\"")["result"]["resultType"], "complete");
}

/// The `server/discover` answer is rendered into the server's `OUT` buffer: it fits at its
/// exact length, and one byte less is an Internal error.
#[test]
fn discover_fits_out_at_its_exact_length_and_not_one_byte_less() {
    const LEN: usize = 301;
    assert_eq!(DISCOVER.len(), LEN);
    let request =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{{{META}}}}}"#);
    let mut fits = Harness::<LEN>::new();
    assert_eq!(fits.feed(&request)["result"]["resultType"], "complete");
    let mut short = Harness::<{ LEN - 1 }>::new();
    assert_eq!(short.feed(&request), error(1, -32603, "Internal error"));
}

#[test]
fn discover_is_the_same_text_through_the_writer_and_the_serializer() {
    let reply = Reply::Discover(&INFO);
    let mut buf = [0u8; 1024];
    let mut w = Writer::new(&mut buf);
    reply.write(&mut w);
    assert_eq!(w.finish().unwrap(), DISCOVER.as_bytes());
    let mut buf = [0u8; 1024];
    let mut w = Writer::new(&mut buf);
    reply.write_completed(&mut w);
    assert_eq!(w.finish().unwrap(), DISCOVER.as_bytes(), "complete already");
    let mut buf = [0u8; 1024];
    let n = rpcwire::wire::ser::to_slice(&reply, &mut buf).unwrap();
    assert_eq!(std::str::from_utf8(&buf[..n]).unwrap(), DISCOVER);
    let mut buf = [0u8; 64];
    let mut w = Writer::new(&mut buf);
    Reply::Empty.write_completed(&mut w);
    assert_eq!(w.finish().unwrap(), br#"{"resultType":"complete"}"#);
}
