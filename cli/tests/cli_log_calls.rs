//! `rpcwire serve --http ... --tokens FILE --log-calls`: one line per call on stderr (method,
//! id, latency, status, connection, peer), and neither the `Authorization` header nor the
//! token's value anywhere in the log.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bounded, http, spawn_serve};

const TOKEN: &str = "s3cret-token-value-7f1d";

async fn post(url: &str, body: &str) -> String {
    http(
        "POST",
        url,
        &format!("Authorization: Bearer {TOKEN}\r\n"),
        body,
    )
    .await
    .1
}

#[tokio::test]
async fn one_line_per_call_and_no_credential() {
    bounded(async {
        let dir = std::env::temp_dir().join(format!("rpcwire-log-calls-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tokens = dir.join("tokens");
        std::fs::write(&tokens, format!("{TOKEN} @alice user\n")).unwrap();
        let tokens = tokens.to_str().unwrap();
        let (mut child, mut lines) =
            spawn_serve(&["--http", "127.0.0.1:0", "--log-calls", "--tokens", tokens]);
        let first = lines.next_line().await.unwrap().unwrap();
        let url = first.rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://"), "{first}");

        let ok = post(
            &url,
            r#"{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":41}"#,
        )
        .await;
        assert!(ok.contains(r#""result":2"#), "{ok}");
        let bad = post(
            &url,
            r#"{"jsonrpc":"2.0","method":"subtract","params":["x"],"id":"q-2"}"#,
        )
        .await;
        assert!(bad.contains("-32602"), "{bad}");
        let unknown = post(&url, r#"{"jsonrpc":"2.0","method":"nope","id":3}"#).await;
        assert!(unknown.contains("-32601"), "{unknown}");

        let mut log = Vec::new();
        while log.len() < 3 {
            let line = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
                .await
                .expect("a call line")
                .unwrap()
                .unwrap();
            assert!(!line.contains(TOKEN), "the token was logged: {line}");
            assert!(
                !line.to_ascii_lowercase().contains("authorization"),
                "{line}"
            );
            if line.contains("rpcwire::calls") {
                log.push(line);
            }
        }
        let has = |i: usize, parts: &[&str]| {
            for part in parts {
                assert!(log[i].contains(part), "{part} not in {}", log[i]);
            }
        };
        has(
            0,
            &[
                "method=subtract",
                "id=41",
                "status=ok",
                "latency_us=",
                "connection=",
                "peer=",
            ],
        );
        has(1, &["method=subtract", r#"id="q-2""#, "status=-32602"]);
        has(2, &["method=nope", "id=3", "status=-32601"]);
        let _ = child.kill().await;
        let mut rest = String::new();
        while let Ok(Ok(Some(line))) =
            tokio::time::timeout(Duration::from_millis(200), lines.next_line()).await
        {
            rest.push_str(&line);
        }
        assert!(!rest.contains(TOKEN), "the token was logged: {rest}");
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
