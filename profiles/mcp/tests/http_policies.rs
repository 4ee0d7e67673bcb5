//! The service's policies hold through the MCP Streamable HTTP endpoint, in both revisions
//! (sessions, 2025-11-25; stateless, 2026-07-28), as on every other transport: each POST is
//! answered by the service's one dispatcher, which applies them.
//!
//! - an authenticated caller's identity reaches the tool, through its context;
//! - a method restricted to a role answers Forbidden (-32040) to a caller without it, and
//!   runs for one with it;
//! - a rate limit with a burst of N lets exactly N of N + k calls through (the others are
//!   answered -32041, HTTP 429), each call counted once;
//! - a panicking tool answers the generic internal error, nothing of the panic in it;
//! - while a subscriber listens, each call has exactly one `rpc.server.call` span, with no
//!   span above it (no `rpc.connection` span between it and the request's `traceparent`,
//!   which the dispatcher takes from the caller as the span's remote parent: the tool sees
//!   it in its caller); the only `rpc.connection` spans are those of the sessions' GET
//!   streams, one per session, none per POST.
//!
//! Its own test binary: it installs a global subscriber (`tracing` caches callsite interest
//! per process).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;

use rpcwire_mcp::http::{McpHttpServer, Mode, STATELESS_VERSION};
use rpcwire_mcp::tokio::{mcp_builder, Json, McpServer, ToolContext, ToolError};
use rpcwire_tests::raw_http::{self, exchange, listen};
use rpcwire_tests::spans::Spans;
use rpcwire_tokio::{
    AuthError, AuthFuture, Authenticator, Credentials, Identity, RateLimiter, RpcError,
};
use serde_json::{json, Value};
use tracing_subscriber::layer::SubscriberExt;

/// The W3C trace context every request carries in its `traceparent` header.
const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// The rate limit's burst (it refills too slowly to matter during the test).
const BURST: usize = 8;
/// Calls beyond the burst.
const EXTRA: usize = 3;

/// Bearer tokens `NAME~ROLE~ROLE`: the subject is NAME, the roles ROLE...
struct Names;

impl Authenticator for Names {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        Box::pin(async move {
            let token = credentials.bearer()?.ok_or(AuthError::Missing)?;
            let mut parts = token.split('~');
            let name = parts.next().ok_or(AuthError::Invalid("empty"))?;
            Ok(Identity::new(name).with_roles(parts))
        })
    }
}

async fn served(mode: Mode) -> SocketAddr {
    let tools = McpServer::new("policies", "1.0")
        .strict_handshake(false)
        .tool_with_schema(
            "whoami",
            "The caller, as the tool's context has it.",
            json!({"type": "object"}),
            |ctx: ToolContext, _: Value| async move {
                let caller = ctx.caller();
                Ok::<_, ToolError>(Json(json!({
                    "subject": caller.identity().subject(),
                    "admin": caller.identity().has_role("admin"),
                    "traceparent": caller.trace_context().map(|t| t.traceparent()),
                })))
            },
        )
        .tool_with_schema(
            "boom",
            "Panics.",
            json!({"type": "object"}),
            |_: ToolContext, _: Value| async move {
                if std::hint::black_box(true) {
                    panic!("a secret detail of the panic");
                }
                Ok::<_, ToolError>("never")
            },
        );
    let router = tools
        .router()
        .sync_method("admin/reset", |_: Option<Value>| {
            Ok::<_, RpcError>(json!({"reset": true}))
        })
        .require("admin/reset", ["admin"]);
    let service = McpHttpServer::from_builder(mcp_builder().router(router))
        .mode(mode)
        .authenticator(Names)
        .rate_limit(RateLimiter::new(0.001, BURST as u32))
        .build();
    let (listener, addr) = listen().await;
    tokio::spawn(rpcwire_mcp::http::serve(listener, service));
    addr
}

/// One client of a server: its token and, in session mode, its session.
struct Client {
    addr: SocketAddr,
    mode: Mode,
    token: &'static str,
    session: Option<String>,
}

impl Client {
    async fn new(addr: SocketAddr, mode: Mode, token: &'static str) -> Self {
        let mut client = Client {
            addr,
            mode,
            token,
            session: None,
        };
        if mode == Mode::Sessions {
            let init = json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {},
                "clientInfo": {"name": "t", "version": "1"}}});
            let (head, body) = client.post_raw("initialize", None, &init).await;
            assert_eq!(raw_http::status(&head), 200, "{body}");
            client.session = Some(raw_http::header(&head, "mcp-session-id").to_owned());
        }
        client
    }

    /// POSTs one request: (HTTP status, the JSON-RPC answer).
    async fn call(&self, id: &str, method: &str, mut params: Value) -> (u16, Value) {
        let name = params["name"].as_str().map(str::to_owned);
        if self.mode == Mode::Stateless {
            // The revision's `_meta`, on every request.
            params["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!(STATELESS_VERSION);
            params["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
        }
        let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (head, body) = self.post_raw(method, name.as_deref(), &body).await;
        (
            raw_http::status(&head),
            serde_json::from_str(&body).unwrap(),
        )
    }

    async fn tool(&self, id: &str, name: &str) -> (u16, Value) {
        self.call(id, "tools/call", json!({"name": name, "arguments": {}}))
            .await
    }

    async fn post_raw(&self, method: &str, name: Option<&str>, body: &Value) -> (String, String) {
        let mut headers = vec![
            ("authorization".to_owned(), format!("Bearer {}", self.token)),
            ("traceparent".to_owned(), TP.to_owned()),
        ];
        match self.mode {
            Mode::Sessions => {
                if let Some(id) = &self.session {
                    headers.push(("mcp-session-id".into(), id.clone()));
                    headers.push(("mcp-protocol-version".into(), "2025-11-25".into()));
                }
            }
            Mode::Stateless => {
                headers.push(("mcp-protocol-version".into(), STATELESS_VERSION.into()));
                headers.push(("mcp-method".into(), method.into()));
                if let Some(name) = name {
                    headers.push(("mcp-name".into(), name.into()));
                }
            }
        }
        let request = raw_http::json_post("/mcp", &headers, &body.to_string());
        exchange(self.addr, &[request]).await.pop().unwrap()
    }
}

/// The error code of an answer, if it is an error.
fn code(answer: &Value) -> Option<i64> {
    answer["error"]["code"].as_i64()
}

/// Runs every policy through a server in `mode`; its request ids start with `tag`. Returns
/// the server's address and the ids of the calls made.
async fn policies_hold(mode: Mode, tag: &str) -> (SocketAddr, Vec<String>) {
    let addr = served(mode).await;
    let mut ids = Vec::new();
    let mut id = |what: &str| {
        let id = format!("{tag}-{what}-{}", ids.len());
        ids.push(id.clone());
        id
    };
    let alice = Client::new(addr, mode, "alice").await;
    let root = Client::new(addr, mode, "root~admin").await;

    // The identity reaches the tool, and so does the request's trace context.
    let (status, answer) = alice.tool(&id("whoami"), "whoami").await;
    assert_eq!(status, 200, "{answer}");
    let seen = &answer["result"]["structuredContent"];
    assert_eq!(seen["subject"], "alice", "{answer}");
    assert_eq!(seen["admin"], false, "{answer}");
    assert_eq!(seen["traceparent"], TP, "{answer}");
    let (_, answer) = root.tool(&id("whoami"), "whoami").await;
    assert_eq!(answer["result"]["structuredContent"]["admin"], true);

    // A role-restricted method: Forbidden without the role, run with it.
    let (status, answer) = alice.call(&id("reset"), "admin/reset", json!({})).await;
    assert_eq!((status, code(&answer)), (200, Some(-32040)), "{answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    let (_, answer) = root.call(&id("reset"), "admin/reset", json!({})).await;
    assert_eq!(answer["result"]["reset"], true, "{answer}");

    // A panicking tool: the generic internal error, nothing of the panic.
    let (status, answer) = alice.tool(&id("boom"), "boom").await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(code(&answer), Some(-32603), "{answer}");
    assert_eq!(answer["error"]["message"], "Internal error", "{answer}");
    assert!(!answer.to_string().contains("secret"), "{answer}");

    // The rate limit: exactly BURST of BURST + EXTRA calls go through, each counted once (a
    // session's `initialize` is one of them).
    let flood = Client::new(addr, mode, "flood").await;
    let initialized = usize::from(mode == Mode::Sessions);
    let (mut through, mut refused) = (initialized, 0);
    for _ in initialized..BURST + EXTRA {
        let (status, answer) = flood.tool(&id("flood"), "whoami").await;
        match (status, code(&answer)) {
            (200, None) => through += 1,
            (429, Some(-32041)) => refused += 1,
            other => panic!("neither answered nor refused by the rate limit: {other:?} {answer}"),
        }
    }
    assert_eq!((through, refused), (BURST, EXTRA));
    // Counted per caller: another caller still has its burst.
    let (status, _) = alice.tool(&id("whoami"), "whoami").await;
    assert_eq!(status, 200);
    (addr, ids)
}

#[tokio::test]
async fn policies_hold_through_the_mcp_endpoint() {
    let spans = Spans::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(spans.clone()))
        .unwrap();
    let (sessions, mut ids) = policies_hold(Mode::Sessions, "s").await;
    let (stateless, more) = policies_hold(Mode::Stateless, "l").await;
    ids.extend(more);

    let calls = spans.named("rpc.server.call");
    for id in &ids {
        let mine: Vec<_> = calls
            .iter()
            .filter(|s| s.fields.get("jsonrpc.request.id") == Some(id))
            .collect();
        assert_eq!(mine.len(), 1, "one span for call {id}: {mine:#?}");
        assert_eq!(
            mine[0].parent, None,
            "nothing between {id} and its traceparent"
        );
        assert_eq!(mine[0].fields["network.peer.address"], "127.0.0.1");
        // The server's end of the connection, as on the HTTP server's spans.
        let server = if id.starts_with("s-") {
            sessions
        } else {
            stateless
        };
        assert_eq!(
            mine[0].fields.get("server.address").map(String::as_str),
            Some("127.0.0.1"),
            "{id}: {:?}",
            mine[0]
        );
        assert_eq!(
            mine[0].fields.get("server.port"),
            Some(&server.port().to_string()),
            "{id}"
        );
    }
    // The only connections with spans of their own are the sessions' GET streams (one per
    // session: alice's, root's and flood's), none per POST.
    let connections = spans.named("rpc.connection");
    assert_eq!(connections.len(), 3, "{connections:#?}");
}
