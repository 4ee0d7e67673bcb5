//! MCP Streamable HTTP scale-out behind nginx (Debian package, installed by
//! `.ci/install/http-interop.sh`): four `mcp-server --http` processes.
//!
//! - Session MCP: servers `a` and `b` put their name in the session ids they create
//!   (`--server-name`); nginx routes on that prefix with a `map` (no session id yet, as for
//!   `initialize`: round-robin over both). Sessions land on both servers and every later
//!   request of a session reaches the server that holds it (a misrouted one would get 404).
//! - Stateless MCP (`--stateless`): round-robin; the calls spread over both servers.
//!
//! The configuration is the one `examples/mcp-server/README.md` shows.
//! Skips with a visible `SKIPPED:` line when nginx is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::HttpServer;
use rpcwire_mcp::http::{McpHttpClient, Mode};
use rpcwire_tests::nginx::{self, Nginx};

/// The `http { }` block: session MCP routed on the session id's prefix, stateless MCP
/// round-robin, the upstream that answered in `X-Upstream`.
fn config(port: u16, a: &str, b: &str, s1: &str, s2: &str) -> String {
    format!(
        r#"    # Session MCP: each server names itself in the session ids it creates
    # (mcp-server --server-name a → "a-<hex>"); route on that prefix.
    map $http_mcp_session_id $mcp_upstream {{
        ~^a-    mcp_a;
        ~^b-    mcp_b;
        default mcp_any;   # initialize: no session yet
    }}
    upstream mcp_a   {{ server {a}; keepalive 8; }}
    upstream mcp_b   {{ server {b}; keepalive 8; }}
    upstream mcp_any {{ server {a}; server {b}; keepalive 8; }}
    # Stateless MCP: any server takes any request.
    upstream mcp_stateless {{ server {s1}; server {s2}; keepalive 8; }}

    server {{
        listen 127.0.0.1:{port};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;          # event streams pass through as they come
        proxy_read_timeout 1h;
        add_header X-Upstream $upstream_addr always;

        location = /mcp {{ proxy_pass http://$mcp_upstream; }}
        location = /stateless/mcp {{ proxy_pass http://mcp_stateless/mcp; }}
    }}
"#
    )
}

fn start_nginx(nginx: &Path, servers: [&str; 4]) -> (Nginx, String) {
    let [a, b, s1, s2] = servers;
    let proxy = nginx::start(nginx, "mcp-nginx", |port| config(port, a, b, s1, s2));
    let front = proxy.front.clone();
    (proxy, front)
}

/// One stateless `tools/call` POST written by hand: (status, X-Upstream, body).
fn stateless_call(front: &str, i: i64) -> (u16, String, String) {
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"add","arguments":{{"a":{i},"b":1}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#
    );
    let headers = [
        ("Accept", "application/json, text/event-stream"),
        ("Mcp-Method", "tools/call"),
        ("Mcp-Name", "add"),
        ("MCP-Protocol-Version", "2026-07-28"),
    ];
    nginx::post(front, "/stateless/mcp", &headers, &body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_and_stateless_mcp_behind_nginx() {
    let Some(nginx) = nginx::find() else {
        rpcwire_tests::skip("no nginx: run .ci/install/http-interop.sh");
        return;
    };
    let a = HttpServer::start(&["--server-name", "a"]);
    let b = HttpServer::start(&["--server-name", "b"]);
    let s1 = HttpServer::start(&["--stateless"]);
    let s2 = HttpServer::start(&["--stateless"]);
    // The upstreams answer before nginx sees traffic (one probed too early is marked down).
    for s in [&a, &b, &s1, &s2] {
        std::net::TcpStream::connect(&s.addr).unwrap();
    }
    let (_nginx, front) = start_nginx(&nginx, [&a.addr, &b.addr, &s1.addr, &s2.addr]);
    let url = format!("http://{front}/mcp");

    tokio::time::timeout(Duration::from_secs(60), async {
        // Session MCP: 8 sessions, each with calls (progress over SSE through nginx) and
        // its end (DELETE), every request after initialize routed by the session id.
        let mut per_server: BTreeMap<String, usize> = BTreeMap::new();
        for _ in 0..8 {
            let client = McpHttpClient::connect(&url).await.unwrap();
            let id = client.session_id().unwrap();
            *per_server.entry(id[..1].to_owned()).or_default() += 1;
            for _ in 0..3 {
                assert_eq!(client.mcp().list_tools().await.unwrap().len(), 39);
                let steps = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
                let s = std::sync::Arc::clone(&steps);
                let r = client
                    .mcp()
                    .call_tool_with_progress(
                        "count",
                        serde_json::json!({"to": 3, "delay_ms": 1}),
                        move |_| {
                            s.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        },
                    )
                    .await
                    .unwrap();
                assert_eq!(r.joined_text(), "counted to 3", "session {id}");
                assert_eq!(steps.load(std::sync::atomic::Ordering::SeqCst), 3);
            }
            client.close().await.unwrap();
        }
        println!("sessions per server: {per_server:?}");
        assert_eq!(
            per_server.keys().cloned().collect::<Vec<_>>(),
            ["a", "b"],
            "{per_server:?}"
        );

        // Stateless MCP: calls spread over both servers.
        let mut served: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..10 {
            let (status, upstream, body) = stateless_call(&front, i);
            assert_eq!(status, 200, "{body}");
            let v: serde_json::Value = serde_json::from_str(&body).unwrap();
            assert_eq!(v["result"]["content"][0]["text"], (i + 1).to_string());
            *served.entry(upstream).or_default() += 1;
        }
        println!("stateless calls per upstream: {served:?}");
        assert_eq!(served.len(), 2, "{served:?}");
        assert!(
            served.contains_key(&s1.addr) && served.contains_key(&s2.addr),
            "{served:?}"
        );

        // The Rust client in stateless mode through nginx.
        let client = McpHttpClient::builder(&format!("http://{front}/stateless/mcp"))
            .mode(Mode::Stateless)
            .connect()
            .await
            .unwrap();
        let r = client
            .mcp()
            .call_tool("add", serde_json::json!({"a": 1, "b": 2}))
            .await
            .unwrap();
        assert_eq!(r.joined_text(), "3");
        client.close().await.unwrap();
    })
    .await
    .expect("within 60 s");
}
