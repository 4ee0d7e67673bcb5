//! The "Examples" section of the JSON-RPC 2.0 specification, as data: what is sent, and what a
//! conforming server answers (`None`: nothing at all). Multi-line texts are kept as the
//! specification prints them; send them with content-length framing as they are, or join their
//! lines for newline framing ([`one_line`]).

/// One example exchange.
#[derive(Debug, Clone, Copy)]
pub struct SpecExample {
    /// The specification's heading.
    pub name: &'static str,
    /// Bytes sent to the server.
    pub request: &'static str,
    /// The server's answer, or `None` for no bytes at all.
    pub response: Option<&'static str>,
}

/// Joins a multi-line text into one line (newlines become spaces), for newline framing.
pub fn one_line(text: &str) -> impl Iterator<Item = u8> + '_ {
    text.bytes().map(|b| if b == b'\n' { b' ' } else { b })
}

/// Every example of the specification, in order.
pub const SPEC_EXAMPLES: &[SpecExample] = &[
    SpecExample {
        name: "rpc call with positional parameters (1)",
        request: r#"{"jsonrpc": "2.0", "method": "subtract", "params": [42, 23], "id": 1}"#,
        response: Some(r#"{"jsonrpc": "2.0", "result": 19, "id": 1}"#),
    },
    SpecExample {
        name: "rpc call with positional parameters (2)",
        request: r#"{"jsonrpc": "2.0", "method": "subtract", "params": [23, 42], "id": 2}"#,
        response: Some(r#"{"jsonrpc": "2.0", "result": -19, "id": 2}"#),
    },
    SpecExample {
        name: "rpc call with named parameters (1)",
        request: r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"subtrahend": 23, "minuend": 42}, "id": 3}"#,
        response: Some(r#"{"jsonrpc": "2.0", "result": 19, "id": 3}"#),
    },
    SpecExample {
        name: "rpc call with named parameters (2)",
        request: r#"{"jsonrpc": "2.0", "method": "subtract", "params": {"minuend": 42, "subtrahend": 23}, "id": 4}"#,
        response: Some(r#"{"jsonrpc": "2.0", "result": 19, "id": 4}"#),
    },
    SpecExample {
        name: "a Notification (1)",
        request: r#"{"jsonrpc": "2.0", "method": "update", "params": [1,2,3,4,5]}"#,
        response: None,
    },
    SpecExample {
        name: "a Notification (2)",
        request: r#"{"jsonrpc": "2.0", "method": "foobar"}"#,
        response: None,
    },
    SpecExample {
        name: "rpc call of non-existent method",
        request: r#"{"jsonrpc": "2.0", "method": "foobar", "id": "1"}"#,
        response: Some(
            r#"{"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "1"}"#,
        ),
    },
    SpecExample {
        name: "rpc call with invalid JSON",
        request: r#"{"jsonrpc": "2.0", "method": "foobar, "params": "bar", "baz]"#,
        response: Some(
            r#"{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}"#,
        ),
    },
    SpecExample {
        name: "rpc call with invalid Request object",
        request: r#"{"jsonrpc": "2.0", "method": 1, "params": "bar"}"#,
        response: Some(
            r#"{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}"#,
        ),
    },
    SpecExample {
        name: "rpc call Batch, invalid JSON",
        request: r#"[
  {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
  {"jsonrpc": "2.0", "method"
]"#,
        response: Some(
            r#"{"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null}"#,
        ),
    },
    SpecExample {
        name: "rpc call with an empty Array",
        request: r#"[]"#,
        response: Some(
            r#"{"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}"#,
        ),
    },
    SpecExample {
        name: "rpc call with an invalid Batch (but not empty)",
        request: r#"[1]"#,
        response: Some(
            r#"[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]"#,
        ),
    },
    SpecExample {
        name: "rpc call with invalid Batch",
        request: r#"[1,2,3]"#,
        response: Some(
            r#"[
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
  {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}
]"#,
        ),
    },
    SpecExample {
        name: "rpc call Batch",
        request: r#"[
        {"jsonrpc": "2.0", "method": "sum", "params": [1,2,4], "id": "1"},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]},
        {"jsonrpc": "2.0", "method": "subtract", "params": [42,23], "id": "2"},
        {"foo": "boo"},
        {"jsonrpc": "2.0", "method": "foo.get", "params": {"name": "myself"}, "id": "5"},
        {"jsonrpc": "2.0", "method": "get_data", "id": "9"} 
    ]"#,
        response: Some(
            r#"[
        {"jsonrpc": "2.0", "result": 7, "id": "1"},
        {"jsonrpc": "2.0", "result": 19, "id": "2"},
        {"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null},
        {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "5"},
        {"jsonrpc": "2.0", "result": ["hello", 5], "id": "9"}
    ]"#,
        ),
    },
    SpecExample {
        name: "rpc call Batch (all notifications)",
        request: r#"[
        {"jsonrpc": "2.0", "method": "notify_sum", "params": [1,2,4]},
        {"jsonrpc": "2.0", "method": "notify_hello", "params": [7]}
    ]"#,
        response: None,
    },
];
