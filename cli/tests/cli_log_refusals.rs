//! The log an operator reads: refused callers at warn level with the peer, the transport and
//! the reason, never the credential, rate-limited (`--refusal-log-rate`,
//! `--refusal-log-burst`); the call log with the caller's subject, the trace id and the
//! transport the call came by; `--log-format json`. Each test asserts on the lines logged.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::Duration;

use common::{bounded, http, spawn_serve};
use serde_json::Value;

const TOKEN: &str = "good-token-4c1e9a";
const BAD_TOKEN: &str = "bad-token-77aa01";
const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

/// A directory with a tokens file (`TOKEN @alice user`) and a policy file (`subtract`
/// open, `fail` for `admin` only).
fn files(name: &str) -> (std::path::PathBuf, String, String) {
    let dir = std::env::temp_dir().join(format!("rpcwire-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, format!("{TOKEN} @alice user\n")).unwrap();
    let policy = dir.join("policy");
    std::fs::write(&policy, "subtract\nfail admin\n").unwrap();
    let (t, p) = (
        tokens.to_str().unwrap().to_owned(),
        policy.to_str().unwrap().to_owned(),
    );
    (dir, t, p)
}

async fn post(url: &str, token: &str, extra: &str, body: &str) -> (u16, String) {
    http(
        "POST",
        url,
        &format!("Authorization: Bearer {token}\r\n{extra}"),
        body,
    )
    .await
}

/// Every line left on stderr once the server is stopped (bounded), each checked for the
/// tokens.
async fn rest(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStderr>>,
) -> Vec<String> {
    let mut all = Vec::new();
    while let Some(line) = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
        .await
        .expect("stderr ends when the server is stopped")
        .unwrap()
    {
        assert!(
            !line.contains(TOKEN) && !line.contains(BAD_TOKEN),
            "a token logged: {line}"
        );
        all.push(line);
    }
    all
}

#[tokio::test]
async fn refusals_are_warned_with_peer_and_reason_at_a_bounded_rate() {
    bounded(async {
        let (dir, tokens, policy) = files("log-refusals");
        // A burst of 3 and no refill: exactly 3 lines, whatever the flood.
        let (mut child, mut lines) = spawn_serve(&[
            "--log-format",
            "json",
            "--http",
            "127.0.0.1:0",
            "--tokens",
            &tokens,
            "--policy",
            &policy,
            "--refusal-log-burst",
            "3",
            "--refusal-log-rate",
            "0",
        ]);
        let first = lines.next_line().await.unwrap().unwrap();
        let url = first.rsplit(' ').next().unwrap().to_owned();
        assert!(url.starts_with("http://"), "{first}");

        let call = r#"{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":1}"#;
        // One refused by the access rules first: alice may not call `fail`.
        let fail = r#"{"jsonrpc":"2.0","method":"fail","id":2}"#;
        let (status, body) = post(&url, TOKEN, "", fail).await;
        assert_eq!(status, 200);
        assert!(body.contains("-32040"), "{body}");
        for _ in 0..10 {
            let (status, _) = post(&url, BAD_TOKEN, "", call).await;
            assert_eq!(status, 401);
        }
        // A call let in after the flood: its answer comes after every refusal was logged.
        let (status, body) = post(&url, TOKEN, "", call).await;
        assert_eq!(
            (status, body.contains(r#""result":2"#)),
            (200, true),
            "{body}"
        );
        let _ = child.kill().await;
        let log: Vec<Value> = rest(&mut lines)
            .await
            .iter()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect();
        let refusals: Vec<&Value> = log
            .iter()
            .filter(|l| l["message"].as_str().is_some_and(|m| m.contains("refused")))
            .collect();
        // The burst, and nothing more: one for the access rules, two of the ten bad tokens.
        assert_eq!(refusals.len(), 3, "{log:#?}");
        for line in &refusals {
            assert_eq!(line["level"], "WARN", "{line}");
            assert_eq!(line["transport"], "http", "{line}");
            let peer = line["peer"].as_str().unwrap();
            assert!(peer.starts_with("127.0.0.1:") && peer.len() > 10, "{line}");
            assert_eq!(line["suppressed"], 0, "{line}");
        }
        let denied = refusals[0];
        assert_eq!(
            denied["message"], "call refused: not authorized",
            "{denied}"
        );
        assert_eq!(denied["subject"], "alice");
        assert_eq!(denied["method"], "fail");
        for line in &refusals[1..] {
            assert_eq!(
                line["message"], "caller refused: authentication failed",
                "{line}"
            );
            assert!(
                line["reason"].as_str().unwrap().contains("unknown token"),
                "{line}"
            );
        }
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

/// The call log over HTTP and WebSocket, with the spans exported (`--otlp`, so that a call has
/// a trace): each line names the caller's subject, the trace the call is in (the
/// `traceparent` the request came with) and its transport as the transport names itself.
#[tokio::test]
async fn the_call_log_names_subject_trace_and_transport() {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Message;

    let Some(receiver) = rpcwire_tests::otlp::OtlpReceiver::start() else {
        return;
    };
    bounded(async {
        let (dir, tokens, _) = files("log-call-fields");
        let (mut child, mut lines) = spawn_serve(&[
            "--http",
            "127.0.0.1:0",
            "--tokens",
            &tokens,
            "--log-calls",
            "--otlp",
            &receiver.url,
        ]);
        let url = loop {
            let line = lines.next_line().await.unwrap().unwrap();
            let last = line.rsplit(' ').next().unwrap_or_default().to_owned();
            if last.starts_with("http://") {
                break last;
            }
        };
        let call = r#"{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":7}"#;
        let traceparent = format!("traceparent: 00-{TRACE}-00f067aa0ba902b7-01\r\n");
        let (status, body) = post(&url, TOKEN, &traceparent, call).await;
        assert_eq!(
            (status, body.contains(r#""result":2"#)),
            (200, true),
            "{body}"
        );

        let mut request = url
            .replacen("http://", "ws://", 1)
            .into_client_request()
            .unwrap();
        request
            .headers_mut()
            .insert("authorization", format!("Bearer {TOKEN}").parse().unwrap());
        let (mut ws, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        ws.send(Message::text(call.replace("7", "8")))
            .await
            .unwrap();
        let reply = ws.next().await.unwrap().unwrap().into_text().unwrap();
        assert!(reply.contains(r#""result":2"#), "{reply}");
        ws.close(None).await.unwrap();
        let _ = child.kill().await;

        let log = rest(&mut lines).await;
        let calls: Vec<&String> = log
            .iter()
            .filter(|l| l.contains("rpcwire::calls"))
            .collect();
        assert_eq!(calls.len(), 2, "{log:#?}");
        for part in [
            "id=7",
            "connection=http",
            "subject=alice",
            &format!("trace_id={TRACE}"),
        ] {
            assert!(calls[0].contains(part), "{part} not in {}", calls[0]);
        }
        for part in ["id=8", "connection=websocket", "subject=alice", "trace_id="] {
            assert!(calls[1].contains(part), "{part} not in {}", calls[1]);
        }
        assert!(!calls[1].contains("trace_id=-"), "{}", calls[1]);
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
