//! rpcwire's own MCP client (`rpcwire_mcp::tokio::McpClient`) against the example server
//! over a child process's stdio: every tool, progress, the failing tool, cancellation.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_mcp::tokio::{McpClient, McpError};
use rpcwire_mcp::LogLevel;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_tokio_client_runs_a_full_session() {
    let session = async {
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_mcp-server"));
        cmd.stderr(std::process::Stdio::null());
        let (client, _child) = McpClient::spawn(&mut cmd).await.unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&logs);
        client.on_log(move |level, data| seen.lock().unwrap().push((level, data.to_string())));
        client.ping().await.unwrap();
        let mut names: Vec<String> = client
            .list_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name)
            .collect();
        names.sort();
        assert_eq!(names, ["add", "count", "echo", "fail", "long_task"]);
        assert_eq!(
            client
                .call_tool("add", json!({"a": 20, "b": 22}))
                .await
                .unwrap()
                .joined_text(),
            "42"
        );
        assert_eq!(
            client
                .call_tool("echo", json!({"text": "x\ny"}))
                .await
                .unwrap()
                .joined_text(),
            "x\ny"
        );
        let overflow = client
            .call_tool("add", json!({"a": i64::MAX, "b": 1}))
            .await
            .unwrap();
        assert!(overflow.is_error);
        let progress = Arc::new(Mutex::new(Vec::new()));
        let record = Arc::clone(&progress);
        let r = client
            .call_tool_with_progress("count", json!({"to": 3, "delay_ms": 1}), move |p| {
                record.lock().unwrap().push(p.progress)
            })
            .await
            .unwrap();
        assert_eq!(r.joined_text(), "counted to 3");
        assert_eq!(*progress.lock().unwrap(), [1.0, 2.0, 3.0]);
        let failed = client.call_tool("fail", json!({})).await.unwrap();
        assert!(failed.is_error);
        assert_eq!(failed.joined_text(), "this tool always fails");

        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let running = client
            .start_tool(
                "long_task",
                json!({"seconds": 30}),
                Some(Box::new(move |p| {
                    let _ = tx.send(p.progress);
                })),
            )
            .unwrap();
        for _ in 0..2 {
            rx.recv().await.unwrap();
        }
        running.cancel();
        assert!(matches!(running.result().await, Err(McpError::Cancelled)));
        // The server stops the task and says so.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while !logs
            .lock()
            .unwrap()
            .iter()
            .any(|(l, d)| *l == LogLevel::Warning && d.contains("long_task cancelled"))
        {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no cancellation log: {:?}",
                logs.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        client.ping().await.unwrap();
        client.close().await.unwrap();
    };
    tokio::time::timeout(Duration::from_secs(30), session)
        .await
        .expect("session within 30 s");
}
