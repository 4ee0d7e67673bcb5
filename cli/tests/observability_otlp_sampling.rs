//! Head sampling of call spans (`rpcwire serve --otlp R --otlp-sample RATIO`), exported over
//! OTLP/HTTP to the receiver of `observability_otlp` (`rpcwire_tests::otlp`, PyPI
//! `opentelemetry-proto`).
//!
//! - Ratio 0 (server A0, `--upstream B`): calls without a trace context get no span; a call
//!   with a `traceparent` flagged sampled (`01`) is exported with that parent; a `relay`
//!   without one makes its call to B unsampled (`00`), which B (ratio 1) follows: nothing of
//!   that chain is exported.
//! - Ratio 1 (server A1, `--upstream F`, F a fake upstream in this test that keeps the
//!   `traceparent` headers it gets): a `relay` with a `traceparent` flagged `00` is not
//!   exported, and its call to F carries the same trace id, a parent id of its own and flags
//!   `00`; one flagged `01` is exported and carries `01` on.
//! - The flag's value is checked: NaN, below 0, above 1 are usage errors (exit code 2).
//! - Without the flag, OpenTelemetry's `OTEL_TRACES_SAMPLER` and `OTEL_TRACES_SAMPLER_ARG`
//!   set the ratio (`parentbased_traceidratio` at 0 leaves out calls without a trace
//!   context, yet follows a sampled parent); the flag wins over them; a sampler rpcwire does
//!   not have is warned of, and every call sampled.
//!
//! In a test binary of its own (`tracing` caches callsite interest per process; the servers
//! are processes anyway). Skips with a visible `SKIPPED:` line when the receiver's venv is
//! missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::{bounded, http, serve_http as serve, stop_on_sigterm as stop};
use rpcwire_tests::otlp::OtlpReceiver;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// A sampled incoming trace and its parent span.
const SAMPLED: &str = "5af92f3577b34da6a3ce929d0e0e4736";
const PARENT: &str = "00f067aa0ba902b7";
/// An unsampled incoming trace (flags 00).
const UNSAMPLED: &str = "6af92f3577b34da6a3ce929d0e0e4736";
/// A sampled trace relayed through A1.
const RELAYED: &str = "7af92f3577b34da6a3ce929d0e0e4736";
/// B's own sampled call: seen, so B exports what it samples.
const B_SAMPLED: &str = "8af92f3577b34da6a3ce929d0e0e4736";

/// A JSON-RPC server over HTTP/1.1 on loopback that answers every call `7` and sends the
/// `traceparent` header of each request (`None` for none) to the returned channel.
async fn fake_upstream() -> (String, mpsc::UnboundedReceiver<Option<String>>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let (read, mut write) = stream.into_split();
                let mut read = BufReader::new(read);
                loop {
                    let (mut length, mut traceparent) = (0usize, None);
                    let mut line = String::new();
                    loop {
                        line.clear();
                        if read.read_line(&mut line).await.unwrap_or(0) == 0 {
                            return;
                        }
                        let line = line.trim_end();
                        if line.is_empty() {
                            break;
                        }
                        if let Some((name, value)) = line.split_once(':') {
                            match name.to_ascii_lowercase().as_str() {
                                "content-length" => length = value.trim().parse().unwrap(),
                                "traceparent" => traceparent = Some(value.trim().to_owned()),
                                _ => {}
                            }
                        }
                    }
                    let mut body = vec![0; length];
                    read.read_exact(&mut body).await.unwrap();
                    let call: Value = serde_json::from_slice(&body).unwrap();
                    let answer =
                        serde_json::json!({"jsonrpc": "2.0", "result": 7, "id": call["id"]})
                            .to_string();
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                        answer.len()
                    );
                    let _ = tx.send(traceparent);
                    write.write_all(head.as_bytes()).await.unwrap();
                    write.write_all(answer.as_bytes()).await.unwrap();
                }
            });
        }
    });
    (url, rx)
}

fn call(method: &str, params: &str, id: &str) -> String {
    format!(r#"{{"jsonrpc":"2.0","method":"{method}","params":{params},"id":"{id}"}}"#)
}

/// POSTs `body` to `url` with a `traceparent` of `trace` (flags `flags`) when given; the
/// answer's `result`.
async fn post(url: &str, trace: Option<(&str, &str)>, body: &str) -> Value {
    let header = trace.map_or_else(String::new, |(trace, flags)| {
        format!("traceparent: 00-{trace}-{PARENT}-{flags}\r\n")
    });
    let (status, text) = http("POST", url, &header, body).await;
    assert_eq!(status, 200, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    answer["result"].clone()
}

#[tokio::test]
async fn spans_are_head_sampled_by_ratio_and_by_the_parent_flag() {
    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let collector = receiver.url.clone();
    bounded(async {
        let (upstream, mut seen) = fake_upstream().await;
        let (b, b_url) = serve(&["--otlp", &collector]).await;
        let (a0, a0_url) = serve(&[
            "--otlp",
            &collector,
            "--otlp-sample",
            "0",
            "--upstream",
            &b_url,
        ])
        .await;
        let (a1, a1_url) = serve(&[
            "--otlp",
            &collector,
            "--otlp-sample",
            "1",
            "--upstream",
            &upstream,
        ])
        .await;

        // Ratio 0: no trace context, no span (and a relay's chain unsampled through B).
        for i in 0..5 {
            assert_eq!(
                post(
                    &a0_url,
                    None,
                    &call("subtract", "[5,3]", &format!("none-{i}"))
                )
                .await,
                2
            );
        }
        let relay = |id: &str| call("relay", r#"{"method":"subtract","params":[42,23]}"#, id);
        assert_eq!(post(&a0_url, None, &relay("relay-0")).await, 19);
        // A sampled parent is followed at ratio 0.
        let sampled = Some((SAMPLED, "01"));
        assert_eq!(
            post(&a0_url, sampled, &call("subtract", "[9,1]", "sampled")).await,
            8
        );
        // B samples what comes sampled (its export works).
        assert_eq!(
            post(
                &b_url,
                Some((B_SAMPLED, "01")),
                &call("subtract", "[9,2]", "b-own")
            )
            .await,
            7
        );

        // Ratio 1, parent flagged 00: not exported, its call to F unsampled in the same trace.
        assert_eq!(
            post(&a1_url, Some((UNSAMPLED, "00")), &relay("unsampled")).await,
            7
        );
        let sent = seen
            .recv()
            .await
            .unwrap()
            .expect("a traceparent sent upstream");
        let parts: Vec<&str> = sent.split('-').collect();
        assert_eq!(parts.len(), 4, "{sent}");
        assert_eq!(
            (parts[0], parts[1], parts[3]),
            ("00", UNSAMPLED, "00"),
            "{sent}"
        );
        assert_ne!(parts[2], PARENT, "a parent id of its own: {sent}");
        assert!(
            rpcwire_telemetry::trace_context::TraceContext::parse(&sent, None).is_ok(),
            "{sent}"
        );
        // Flagged 01: exported, and sent on sampled.
        assert_eq!(
            post(&a1_url, Some((RELAYED, "01")), &relay("relayed")).await,
            7
        );
        let sent = seen
            .recv()
            .await
            .unwrap()
            .expect("a traceparent sent upstream");
        assert!(
            sent.starts_with(&format!("00-{RELAYED}-")) && sent.ends_with("-01"),
            "{sent}"
        );

        stop(a0).await;
        stop(a1).await;
        stop(b).await;

        // Every span exported (all sent as the servers stopped), by request id.
        let mut by_id: HashMap<String, Vec<Value>> = HashMap::new();
        let mut traces = Vec::new();
        let wanted = ["sampled", "b-own", "relayed"];
        while let Some(span) =
            receiver.try_next_span(if wanted.iter().all(|id| by_id.contains_key(*id)) {
                Duration::from_secs(2)
            } else {
                Duration::from_secs(30)
            })
        {
            traces.push(span["trace_id"].as_str().unwrap_or_default().to_owned());
            if span["name"] == "rpc.connection" {
                continue;
            }
            let id = span["attributes"]["jsonrpc.request.id"]
                .as_str()
                .unwrap_or("-")
                .to_owned();
            by_id.entry(id).or_default().push(span);
        }
        for id in wanted {
            assert!(by_id.contains_key(id), "no span of {id}: {by_id:?}");
        }
        let s = &by_id["sampled"][0];
        assert_eq!(
            (&s["trace_id"], &s["parent_span_id"]),
            (&SAMPLED.into(), &PARENT.into()),
            "{s}"
        );
        let b_own = &by_id["b-own"][0];
        assert_eq!(b_own["trace_id"], B_SAMPLED, "{b_own}");
        // Nothing of the calls left out: not A0's, not the relay's call or B's span of it
        // (B's server spans have numeric ids from A0's client), not the unsampled relay's.
        let left_out = (0..5)
            .map(|i| format!("none-{i}"))
            .chain(["relay-0".into(), "unsampled".into()]);
        for id in left_out {
            assert!(!by_id.contains_key(&id), "{id} exported: {:?}", by_id[&id]);
        }
        let numeric: Vec<_> = by_id
            .iter()
            .filter(|(id, _)| id.parse::<u64>().is_ok())
            .collect();
        assert!(
            numeric.is_empty(),
            "B exported the unsampled relay's call: {numeric:?}"
        );
        let clients: Vec<_> = by_id
            .values()
            .flatten()
            .filter(|s| s["kind"] == 3)
            .collect();
        assert!(
            clients.iter().all(|s| s["trace_id"] == RELAYED),
            "only the sampled relay's client span: {clients:?}"
        );
        assert!(!traces.iter().any(|t| t == UNSAMPLED), "{traces:?}");
    })
    .await;
}

/// The request ids of the call spans the receiver gets until it has those of `wanted` (then
/// 2 s more, for any that should not be there), by server (`service.name` is the same: the
/// ids tell them apart).
fn exported_call_ids(receiver: &OtlpReceiver, wanted: &[&str]) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    loop {
        let all = wanted.iter().all(|w| ids.iter().any(|id| id == w));
        let wait = Duration::from_secs(if all { 2 } else { 30 });
        let Some(span) = receiver.try_next_span(wait) else {
            return ids;
        };
        if span["name"] == "rpc.connection" {
            continue;
        }
        if let Some(id) = span["attributes"]["jsonrpc.request.id"].as_str() {
            ids.push(id.to_owned());
        }
    }
}

#[tokio::test]
async fn the_environment_sets_the_sampler_unless_the_flag_does() {
    let Some(receiver) = OtlpReceiver::start() else {
        return;
    };
    let collector = receiver.url.clone();
    bounded(async {
        let ratio_0 = [
            ("OTEL_TRACES_SAMPLER", "parentbased_traceidratio"),
            ("OTEL_TRACES_SAMPLER_ARG", "0"),
        ];
        let (e0, e0_url) = common::serve_env("--http", &["--otlp", &collector], &ratio_0).await;
        // The flag wins over the environment.
        let off = [("OTEL_TRACES_SAMPLER", "always_off")];
        let (f1, f1_url) = common::serve_env(
            "--http",
            &["--otlp", &collector, "--otlp-sample", "1"],
            &off,
        )
        .await;
        for i in 0..3 {
            let id = format!("env-none-{i}");
            assert_eq!(
                post(&e0_url, None, &call("subtract", "[5,3]", &id)).await,
                2
            );
        }
        let sampled = Some((SAMPLED, "01"));
        assert_eq!(
            post(&e0_url, sampled, &call("subtract", "[9,1]", "env-sampled")).await,
            8
        );
        assert_eq!(
            post(&f1_url, None, &call("subtract", "[9,2]", "flag-wins")).await,
            7
        );
        stop(e0).await;
        stop(f1).await;
        let ids = exported_call_ids(&receiver, &["env-sampled", "flag-wins"]);
        assert!(ids.iter().any(|id| id == "env-sampled"), "{ids:?}");
        assert!(ids.iter().any(|id| id == "flag-wins"), "{ids:?}");
        assert!(!ids.iter().any(|id| id.starts_with("env-none")), "{ids:?}");

        // A sampler rpcwire does not have: warned of, every call sampled.
        let (child, mut lines) = common::spawn_serve_env(
            &["--http", "127.0.0.1:0", "--otlp", &collector],
            &[("OTEL_TRACES_SAMPLER", "jaeger_remote")],
        );
        let mut warned = false;
        let url = loop {
            let line = lines.next_line().await.unwrap().expect("a line on stderr");
            warned |= line.contains("OTEL_TRACES_SAMPLER=\"jaeger_remote\"")
                && line.contains("every call sampled");
            if let Some(url) = line.split(' ').find(|w| w.starts_with("http://")) {
                break url.to_owned();
            }
        };
        assert!(warned, "no warning of the unknown sampler");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        assert_eq!(
            post(&url, None, &call("subtract", "[4,1]", "default-ratio")).await,
            3
        );
        stop(child).await;
        let ids = exported_call_ids(&receiver, &["default-ratio"]);
        assert!(ids.iter().any(|id| id == "default-ratio"), "{ids:?}");
    })
    .await;
}

#[tokio::test]
async fn the_sample_ratio_is_checked() {
    for bad in ["NaN", "-0.1", "1.01", "x"] {
        let refused = common::rpcwire(&[
            "serve",
            "--tcp",
            "127.0.0.1:0",
            "--otlp",
            "http://127.0.0.1:9",
            &format!("--otlp-sample={bad}"),
        ])
        .await;
        assert_eq!(refused.code, Some(2), "{bad}: {}", refused.stderr);
        assert!(
            refused.stderr.contains("invalid value") && refused.stderr.contains("--otlp-sample"),
            "{}",
            refused.stderr
        );
    }
    // Only with --otlp.
    let refused = common::rpcwire(&["serve", "--tcp", "127.0.0.1:0", "--otlp-sample", "0.5"]).await;
    assert_eq!(refused.code, Some(2), "{}", refused.stderr);
}
