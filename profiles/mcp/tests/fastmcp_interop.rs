//! The tokio `McpClient` against a server written with the official Python SDK's FastMCP
//! (`MCPServer` since mcp 2; `tests/interop/python_server.py`) over stdio: initialize, list
//! and call its tools (progress, logs, a failing tool, an unknown one), ping.
//!
//! Skips with a visible `SKIPPED:` line when the SDK is missing (installed by
//! `.ci/install/mcp-interop.sh`), unless `CI=true`.
#![cfg(feature = "tokio")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_mcp::tokio::{ClientOptions, McpClient};
use rpcwire_mcp::{LogLevel, ProtocolVersion};
use serde_json::json;

fn python() -> Option<PathBuf> {
    let base = std::env::var_os("RPCWIRE_INTEROP_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
                .join(".cache/rpcwire-interop")
        });
    let python = base.join("mcp/venv/bin/python");
    std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
        .then_some(python)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokio_client_lists_and_calls_a_python_fastmcp_server() {
    let Some(python) = python() else {
        rpcwire_tests::skip("the Python MCP SDK is not installed (.ci/install/mcp-interop.sh)");
        return;
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/python_server.py");
    let mut cmd = tokio::process::Command::new(python);
    cmd.arg(script).env("PYTHONWARNINGS", "ignore");
    let options = ClientOptions {
        timeout: Some(Duration::from_secs(20)),
        ..ClientOptions::default()
    };
    let session = async {
        let (client, _child) = McpClient::spawn_with(options, &mut cmd).await.unwrap();
        assert_eq!(client.protocol_version(), ProtocolVersion::LATEST);
        assert_eq!(
            client.initialize_result()["serverInfo"]["name"],
            "python-fastmcp-example"
        );
        let logs = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&logs);
        client.on_log(move |level, data| seen.lock().unwrap().push((level, data)));

        client.ping().await.unwrap();

        let tools = client.list_tools().await.unwrap();
        let mut names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
        names.sort_unstable();
        assert_eq!(names, ["add", "count", "fail", "shout"]);
        let add = tools.iter().find(|t| t.name == "add").unwrap();
        assert_eq!(add.input_schema["type"], "object");
        assert_eq!(add.input_schema["properties"]["a"]["type"], "integer");

        let sum = client
            .call_tool("add", json!({"a": 2, "b": 40}))
            .await
            .unwrap();
        assert!(!sum.is_error);
        assert_eq!(sum.joined_text(), "42");
        let loud = client
            .call_tool("shout", json!({"text": "héllo"}))
            .await
            .unwrap();
        assert_eq!(loud.joined_text(), "HÉLLO");

        let progress = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&progress);
        let counted = client
            .call_tool_with_progress("count", json!({"to": 4}), move |p| {
                record
                    .lock()
                    .unwrap()
                    .push((p.progress, p.total, p.message))
            })
            .await
            .unwrap();
        assert_eq!(counted.joined_text(), "python counted to 4");
        let progress = progress.lock().unwrap().clone();
        assert_eq!(
            progress.iter().map(|p| p.0).collect::<Vec<_>>(),
            [1.0, 2.0, 3.0, 4.0],
            "{progress:?}"
        );
        assert!(progress.iter().all(|p| p.1 == Some(4.0)));
        assert_eq!(progress[0].2.as_deref(), Some("step 1"));
        assert!(
            logs.lock()
                .unwrap()
                .iter()
                .any(|(l, d)| *l == LogLevel::Info && d == "python counting to 4"),
            "{:?}",
            logs.lock().unwrap()
        );

        let failed = client
            .call_tool("fail", json!({"reason": "nope"}))
            .await
            .unwrap();
        assert!(failed.is_error);
        // mcp 2 words it "Error executing tool fail" (1.x included the exception's text).
        assert!(failed.joined_text().contains("fail"), "{failed:?}");

        // An unknown tool: FastMCP answers either a protocol error or an isError result.
        match client.call_tool("no_such_tool", json!({})).await {
            Ok(r) => assert!(r.is_error, "{r:?}"),
            Err(e) => assert!(e.rpc().is_some(), "{e}"),
        }
        client.ping().await.unwrap();
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(60), session)
        .await
        .expect("the session finishes within 60 s");
}
