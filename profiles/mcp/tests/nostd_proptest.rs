//! Whatever a peer sends, the no_std `Server` neither panics nor loses track: random MCP-shaped
//! messages (known and unknown methods, params of every JSON kind, ids and progress tokens of
//! every kind and length, cancellations of any id) over a small inline connection.
#![allow(missing_docs, clippy::unwrap_used)]

use proptest::prelude::*;
use rpcwire::storage::Inline;
use rpcwire::wire::RxBuffer;
use rpcwire::{Config, Connection, Input, Instant};
use rpcwire_mcp::{LogLevel, Server, ServerInfo, Step, Text, Tool};

static INFO: ServerInfo<'static> = ServerInfo {
    name: "p",
    version: "1",
    instructions: None,
    logging: true,
};
static TOOLS: &[Tool<'static>] = &[Tool {
    name: "t",
    description: "d",
    input_schema: r#"{"type":"object"}"#,
}];

fn json_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("null".to_owned()),
        Just("true".to_owned()),
        any::<i64>().prop_map(|n| n.to_string()),
        Just("1.5e3".to_owned()),
        "[a-z\"\\\\/]{0,80}".prop_map(|s| serde_json::to_string(&s).unwrap()),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            prop::collection::vec(
                (
                    prop_oneof![
                        Just("name"),
                        Just("arguments"),
                        Just("_meta"),
                        Just("progressToken"),
                        Just("requestId"),
                        Just("level"),
                        Just("protocolVersion"),
                        Just("x"),
                    ],
                    inner
                ),
                0..4
            )
            .prop_map(|v| {
                let members: Vec<String> =
                    v.into_iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
                format!("{{{}}}", members.join(","))
            }),
        ]
    })
}

fn message() -> impl Strategy<Value = String> {
    let method = prop_oneof![
        Just("initialize"),
        Just("notifications/initialized"),
        Just("ping"),
        Just("tools/list"),
        Just("tools/call"),
        Just("logging/setLevel"),
        Just("notifications/cancelled"),
        Just("other"),
    ];
    let id = prop_oneof![
        Just(None),
        (0u32..4).prop_map(|n| Some(n.to_string())),
        "[a-z]{0,70}".prop_map(|s| Some(format!("\"{s}\""))),
    ];
    let params = prop_oneof![
        Just(None),
        json_value().prop_map(Some),
        // tools/call of the known tool with a progress token of any kind.
        (json_value(), json_value()).prop_map(|(args, token)| Some(format!(
            r#"{{"name":"t","arguments":{args},"_meta":{{"progressToken":{token}}}}}"#
        ))),
        json_value().prop_map(|id| Some(format!(r#"{{"requestId":{id}}}"#))),
    ];
    (method, id, params).prop_map(|(m, id, p)| {
        let mut s = format!(r#"{{"jsonrpc":"2.0","method":"{m}""#);
        if let Some(id) = id {
            s += &format!(r#","id":{id}"#);
        }
        if let Some(p) = p {
            s += &format!(r#","params":{p}"#);
        }
        s + "}"
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn any_session_is_survived(messages in prop::collection::vec(message(), 1..24), garbage in "[ -~]{0,40}") {
        let mut conn: Connection<Inline<2048, 1024, 2, 2>> = Connection::new(Config { batches: false, ..Config::DEFAULT });
        let mut rx: RxBuffer<[u8; 1024]> = conn.rx_buffer();
        let mut server: Server<'static, 2, 512> = Server::new(&INFO, TOOLS);
        let mut text = messages.join("\n");
        text.push('\n');
        text.push_str(&garbage);
        text.push('\n');
        let mut input = text.as_bytes();
        let mut open = Vec::new();
        loop {
            let mut calls = Vec::new();
            while let Input::Item(item) = conn.handle_input(Instant::ZERO, &mut rx, &mut input) {
                match server.handle(&mut conn, item) {
                    Ok(Step::Call(call)) => calls.push(call.handle),
                    Ok(Step::Request(req)) => {
                        let _ = conn.reject(req.handle, rpcwire::ErrorCode::METHOD_NOT_FOUND);
                        server.finish(req.handle);
                    }
                    Ok(Step::Cancelled(h)) => prop_assert!(server.is_cancelled(h)),
                    _ => {}
                }
            }
            for h in calls {
                let _ = server.progress(&mut conn, h, 1, None, Some("x"));
                let _ = server.log(&mut conn, LogLevel::Info, None, Text::Str("l"));
                open.push(h);
            }
            // Answer half of the open calls each round; the rest stay in flight.
            while open.len() > 1 {
                let h = open.remove(0);
                let _ = server.respond_tool(&mut conn, h, Text::Str("done"), false);
            }
            let mut out = Vec::new();
            conn.transmit_with(|b| { out.extend_from_slice(b); Ok::<_, ()>(b.len()) }).unwrap();
            for line in out.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                prop_assert!(serde_json::from_slice::<serde_json::Value>(line).is_ok(), "{}", String::from_utf8_lossy(line));
            }
            if input.is_empty() && !conn.is_input_blocked() {
                break;
            }
        }
    }
}
