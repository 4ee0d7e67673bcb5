//! The browser console served by `rpcwire serve --ws ADDR --console`, tested in headless
//! Chromium (Debian's chromium and chromedriver) driven by Selenium (installed by
//! `.ci/install/ws-interop.sh`): it loads, lists the methods, calls `subtract` and shows 19,
//! shows the live view's rate, latency percentiles and errors after a burst of calls, with its
//! charts drawn, shows a pushed notification, shows the disconnect message when the server stops and
//! recovers when it returns; and `serve --http ADDR --console`'s page on /console, over the
//! HTTP server's WebSocket, with its live view after a burst of POSTs; and both servers with
//! `--tokens`, the page connecting once given its token (cli/tests/ws/console.py).
//!
//! Skips with a visible `SKIPPED:` line when the tools are missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{bin, bounded};
use tokio::process::Command;

fn interop_dir() -> PathBuf {
    match std::env::var_os("RPCWIRE_INTEROP") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/rpcwire-interop/ws"),
    }
}

#[tokio::test]
async fn console_in_headless_chromium() {
    let python = interop_dir().join("venv/bin/python");
    let tools = [
        python.clone(),
        "/usr/bin/chromium".into(),
        "/usr/bin/chromedriver".into(),
    ];
    if let Some(missing) = tools.iter().find(|p| !p.exists()) {
        rpcwire_tests::skip(&format!(
            "{} not installed (run .ci/install/ws-interop.sh)",
            missing.display()
        ));
        return;
    }
    let out = bounded(
        Command::new(python)
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ws/console.py"))
            .arg(bin())
            .stdin(Stdio::null())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    println!("{stdout}");
    assert!(
        out.status.success(),
        "console test failed:\n{stdout}\n{stderr}"
    );
    for check in [
        "loads",
        "lists",
        "shows 19",
        "live view after a burst",
        "pushed notification",
        "disconnect message",
        "reconnects",
        "over HTTP, the console on /console shows the live view",
        "with --tokens the page is refused until its token is entered",
        "over HTTP with --tokens, a #token= fragment connects the console",
    ] {
        assert!(stdout.contains(check), "no `{check}` line in\n{stdout}");
    }
}
