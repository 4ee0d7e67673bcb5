//! The 2026-07-28 revision over Streamable HTTP on a server in session mode, which serves it
//! beside the session revisions, request by request: a POST with no session id naming the
//! revision is answered statelessly (results completed, the removed methods 404), while
//! `initialize` still opens a session; `x-mcp-header` parameters checked against their
//! `Mcp-Param-*` headers (400, `HeaderMismatch`); a missing client capability is 400.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::rt::TokioExecutor;
use rpcwire_mcp::http::{McpHttpServer, Mode};
use rpcwire_mcp::tokio::{InputRequired, McpServer, ToolContext, ToolError};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

async fn start() -> String {
    let server = McpServer::new("http-2026", "1.0")
        .tool_with_schema(
            "region",
            "Echoes its region.",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "n": {"type": "integer", "x-mcp-header": "N"}}}),
            |_: ToolContext, v: Value| async move {
                Ok::<_, ToolError>(format!("{} {}", v["region"], v["n"]))
            },
        )
        .tool_with_schema(
            "sample",
            "Needs sampling.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move {
                Ok::<_, ToolError>(
                    InputRequired::new().sample("s", json!({"messages": [], "maxTokens": 1})),
                )
            },
        );
    let service = McpHttpServer::new(server).build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    tokio::spawn(rpcwire_mcp::http::serve(listener, service));
    url
}

/// POSTs `body` with these headers (besides content type and accept): status, session id,
/// JSON answer.
async fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &Value,
) -> (StatusCode, Option<String>, Value) {
    let mut req = Request::builder()
        .method("POST")
        .uri(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(Full::new(Bytes::from(body.to_string()))).unwrap();
    let client = Hyper::builder(TokioExecutor::new()).build_http();
    let r = tokio::time::timeout(WAIT, client.request(req))
        .await
        .unwrap()
        .unwrap();
    let status = r.status();
    let session = r
        .headers()
        .get("mcp-session-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let bytes = r.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        session,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// A 2026-07-28 request: its body (with `_meta`) and its headers.
fn stateless(id: u32, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": caps});
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

const V: (&str, &str) = ("mcp-protocol-version", "2026-07-28");

/// `server/discover` lists every revision the server speaks: a session server (which takes
/// 2026-07-28 requests too) all of them, a stateless one 2026-07-28 only.
#[tokio::test]
async fn discover_lists_the_revisions_of_the_servers_mode() {
    for (mode, expected) in [
        (
            Mode::Sessions,
            json!([
                "2024-11-05",
                "2025-03-26",
                "2025-06-18",
                "2025-11-25",
                "2026-07-28"
            ]),
        ),
        (Mode::Stateless, json!(["2026-07-28"])),
    ] {
        let service = McpHttpServer::new(McpServer::new("modes", "1.0"))
            .mode(mode)
            .build();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        tokio::spawn(rpcwire_mcp::http::serve(listener, service));
        let (status, _, v) = post(
            &url,
            &[V, ("mcp-method", "server/discover")],
            &stateless(1, "server/discover", json!({}), json!({})),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{v}");
        assert_eq!(v["result"]["supportedVersions"], expected, "{mode:?}: {v}");
        assert_eq!(v["result"]["resultType"], "complete", "{v}");
    }
}

#[tokio::test]
async fn a_session_server_serves_the_stateless_revision_per_request() {
    let url = start().await;
    // A 2026-07-28 tools/list: answered with no session, completed.
    let (status, session, v) = post(
        &url,
        &[V, ("mcp-method", "tools/list")],
        &stateless(1, "tools/list", json!({}), json!({})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert!(session.is_none());
    assert_eq!(v["result"]["resultType"], "complete", "{v}");
    assert_eq!(v["result"]["cacheScope"], "private");
    // Its removed methods: 404.
    let (status, _, v) = post(
        &url,
        &[V, ("mcp-method", "initialize")],
        &stateless(2, "initialize", json!({}), json!({})),
    )
    .await;
    assert_eq!(
        (status, &v["error"]["code"]),
        (StatusCode::NOT_FOUND, &json!(-32601)),
        "{v}"
    );
    // A session revision's initialize still opens a session, and its results are as before.
    let init = json!({"jsonrpc": "2.0", "id": 3, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let (status, session, v) = post(&url, &[], &init).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    let session = session.expect("a session id");
    let list = json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list"});
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", "2025-11-25"),
    ];
    let (status, _, v) = post(&url, &headers, &list).await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert!(v["result"].get("resultType").is_none(), "{v}");
    // A session revision's request with no session id: refused as before.
    let (status, _, _) = post(&url, &[("mcp-protocol-version", "2025-11-25")], &list).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn parameters_mirrored_into_headers_must_agree() {
    let url = start().await;
    let call = |args: Value| {
        stateless(
            7,
            "tools/call",
            json!({"name": "region", "arguments": args}),
            json!({}),
        )
    };
    let base = [V, ("mcp-method", "tools/call"), ("mcp-name", "region")];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut h = base.to_vec();
        h.extend_from_slice(extra);
        h
    };
    let args = json!({"region": "eu-west", "n": 3});
    for (headers, ok) in [
        (
            with(&[("mcp-param-region", "eu-west"), ("mcp-param-n", "3")]),
            true,
        ),
        // Its Base64 form ("eu-west"), and an integer compared as a number.
        (
            with(&[
                ("Mcp-Param-Region", "=?base64?ZXUtd2VzdA==?="),
                ("mcp-param-n", "3.0"),
            ]),
            true,
        ),
        (with(&[("mcp-param-n", "3")]), false),
        (
            with(&[("mcp-param-region", "eu-east"), ("mcp-param-n", "3")]),
            false,
        ),
        (
            with(&[("mcp-param-region", "eu-west"), ("mcp-param-n", "4")]),
            false,
        ),
        (
            with(&[
                ("mcp-param-region", "=?base64?ZXUtd2VzdA?="),
                ("mcp-param-n", "3"),
            ]),
            false,
        ),
        (
            with(&[
                ("mcp-param-region", "=?base64?ZX!!d2VzdA==?="),
                ("mcp-param-n", "3"),
            ]),
            false,
        ),
    ] {
        let (status, _, v) = post(&url, &headers, &call(args.clone())).await;
        if ok {
            assert_eq!(status, StatusCode::OK, "{headers:?}: {v}");
            assert_eq!(v["result"]["content"][0]["text"], "\"eu-west\" 3", "{v}");
        } else {
            assert_eq!(status, StatusCode::BAD_REQUEST, "{headers:?}: {v}");
            assert_eq!(
                (&v["error"]["code"], &v["id"]),
                (&json!(-32020), &json!(7)),
                "{v}"
            );
        }
    }
    // No value in the arguments: no header expected.
    let (status, _, v) = post(&url, &base, &call(json!({}))).await;
    assert_eq!(status, StatusCode::OK, "{v}");
}

#[tokio::test]
async fn a_missing_client_capability_is_400() {
    let url = start().await;
    let body = stateless(
        9,
        "tools/call",
        json!({"name": "sample"}),
        json!({"elicitation": {}}),
    );
    let (status, _, v) = post(
        &url,
        &[V, ("mcp-method", "tools/call"), ("mcp-name", "sample")],
        &body,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{v}");
    assert_eq!(
        v["error"]["data"]["requiredCapabilities"],
        json!({"sampling": {}})
    );
    let body = stateless(
        10,
        "tools/call",
        json!({"name": "sample"}),
        json!({"sampling": {}}),
    );
    let (status, _, v) = post(
        &url,
        &[V, ("mcp-method", "tools/call"), ("mcp-name", "sample")],
        &body,
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{v}");
    assert_eq!(v["result"]["resultType"], "input_required");
}
