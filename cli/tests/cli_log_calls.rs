//! `rpcwire serve --http ... --tokens FILE --log-calls`: one line per call on stderr (method,
//! id, latency, status, connection, peer), and neither the `Authorization` header nor the
//! token's value anywhere in the log; no bodies unless `--log-bodies`, and then redacted
//! (`--redact`, credential-like names, the tokens' values) and cut (`--log-body-limit`).
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

/// A directory of this test's with a tokens file holding [`TOKEN`]: the directory, and the
/// file's path.
fn tokens_file(name: &str) -> (std::path::PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("rpcwire-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} @alice user\n")).unwrap();
    let path = tokens.to_str().unwrap().to_owned();
    (dir, path)
}

#[tokio::test]
async fn one_line_per_call_and_no_credential() {
    bounded(async {
        let (dir, tokens) = tokens_file("log-calls");
        let tokens = tokens.as_str();
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

        let log = call_lines(&mut lines, 3).await;
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
        assert!(log.iter().all(|l| !l.contains("params=")), "{log:?}");
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

/// The call lines of the next `n` calls (every line read checked for the token and the
/// `Authorization` header).
async fn call_lines(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
    n: usize,
) -> Vec<String> {
    let mut log = Vec::new();
    while log.len() < n {
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
    log
}

#[tokio::test]
async fn bodies_redacted_and_cut() {
    bounded(async {
        let (dir, tokens) = tokens_file("log-bodies");
        let tokens = tokens.as_str();
        let limit = 200;
        let (mut child, mut lines) = spawn_serve(&[
            "--http",
            "127.0.0.1:0",
            "--log-calls",
            "--log-bodies",
            "--redact",
            "card",
            "--redact",
            "pin",
            "--log-body-limit",
            &limit.to_string(),
            "--tokens",
            tokens,
        ]);
        let first = lines.next_line().await.unwrap().unwrap();
        let url = first.rsplit(' ').next().unwrap().to_owned();

        // Redacted names at every depth, in params and in the echoed result; the token's
        // value as a plain string and as `Bearer ...`.
        let params = format!(
            r#"{{"user":"ann","card":"4111-1111","deep":{{"password":"pw-1","list":[{{"Card":"5500-22"}},{{"PIN":1234}}]}},"note":"{TOKEN}","auth":"Bearer {TOKEN}"}}"#
        );
        let echoed = post(
            &url,
            &format!(r#"{{"jsonrpc":"2.0","method":"echo","params":{params},"id":1}}"#),
        )
        .await;
        assert!(echoed.contains("4111-1111"), "echo answers as it is: {echoed}");
        // A long body is cut.
        let long = "x".repeat(3 * limit);
        let cut = post(
            &url,
            &format!(r#"{{"jsonrpc":"2.0","method":"echo","params":["{long}"],"id":2}}"#),
        )
        .await;
        assert!(cut.contains(&long), "{cut}");
        // An error's body.
        let failed = post(&url, r#"{"jsonrpc":"2.0","method":"fail","id":3}"#).await;
        assert!(failed.contains("-32000"), "{failed}");

        let log = call_lines(&mut lines, 3).await;
        let redacted = &log[0];
        for secret in ["4111-1111", "pw-1", "5500-22", "1234"] {
            assert!(!redacted.contains(secret), "{secret} logged: {redacted}");
        }
        let params_at = redacted.find("params=").expect("params logged");
        let result_at = redacted.find("result=").expect("result logged");
        for (part, at) in [("params", params_at), ("result", result_at)] {
            let body = &redacted[at..];
            assert!(body.contains(r#""user":"ann""#), "{part}: {redacted}");
            assert!(
                body.matches("[redacted]").count() >= 6,
                "{part}: 6 values redacted in {redacted}"
            );
        }
        assert!(redacted.contains("error=-"), "{redacted}");

        let long_line = &log[1];
        let marker = format!("…[truncated {} bytes]", 3 * limit + 4 - limit);
        assert!(long_line.contains(&marker), "no `{marker}` in {long_line}");
        assert!(!long_line.contains(&"x".repeat(limit)), "{long_line}");

        let fail_line = &log[2];
        assert!(fail_line.contains("status=-32000"), "{fail_line}");
        assert!(fail_line.contains("result=-"), "{fail_line}");
        assert!(
            fail_line.contains(r#"error={"code":-32000"#)
                && fail_line.contains("the method fail always fails"),
            "{fail_line}"
        );
        let _ = child.kill().await;
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
