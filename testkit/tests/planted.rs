//! The harness catches real bugs: services with a planted defect fail, with a shrunk case.
//!
//! A handler that never answers and one that panics are planted in a `Router`. Answering a
//! request twice or a batch out of specification cannot be written with the `Router` API
//! (each request has one handle, and the driver assembles batch answers), so those defects
//! are planted in servers written over the byte stream ([`RawServer`]), which the harness
//! checks the same way.

use proptest::prelude::*;
use rpcwire_testkit::strategy::{self, method, method_any};
use rpcwire_testkit::{Failure, Frame, Harness, RawServer, Target, Violation};
use rpcwire_tokio::{Router, RpcError};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};

fn methods() -> Vec<strategy::Method> {
    vec![
        method("add", strategy::int_pair()),
        method(
            "div",
            (any::<i64>(), -3i64..3).prop_map(|(a, b)| json!([a, b])),
        ),
        method_any("echo"),
        method_any("hang"),
    ]
}

/// A router: `add`, `echo` and a planted defect.
fn router() -> Router {
    Router::new()
        .method("add", |(a, b): (i64, i64)| async move {
            Ok::<_, RpcError>(a.wrapping_add(b))
        })
        .method(
            "echo",
            |p: Option<Value>| async move { Ok::<_, RpcError>(p) },
        )
}

fn shrunk(failure: &Failure) -> usize {
    failure.case.frames.len()
}

#[test]
fn a_handler_that_never_answers_is_caught() {
    let router = router().method("hang", |_: Option<Value>| {
        std::future::pending::<Result<(), RpcError>>()
    });
    let failure = Harness::new(router)
        .run_proptest(strategy::case(methods()), 500)
        .unwrap_err();
    assert!(
        matches!(failure.violation, Violation::Missing { .. }),
        "{failure}"
    );
    assert_eq!(shrunk(&failure), 1, "{failure}");
    let text = format!("{:?}", failure.case);
    assert!(text.contains("\"method\":\"hang\""), "{failure}");
}

#[test]
fn a_handler_that_panics_on_zero_is_caught() {
    let router = router().method("div", |(a, b): (i64, i64)| async move {
        Ok::<_, RpcError>(a.wrapping_div(b)) // panics when b is 0
    });
    let failure = Harness::new(router)
        .run_proptest(strategy::case(methods()), 500)
        .unwrap_err();
    assert!(
        matches!(failure.violation, Violation::Panic { .. }),
        "{failure}"
    );
    assert_eq!(shrunk(&failure), 1, "{failure}");
    let text = format!("{:?}", failure.case);
    assert!(
        text.contains("\"method\":\"div\"") && text.contains(",0]"),
        "{failure}"
    );
}

/// Which defect a hand-written server has.
#[derive(Clone, Copy)]
enum Defect {
    /// None: the control.
    None,
    /// `add` is answered twice.
    AnswersTwice,
    /// Batch members are answered one by one, not in one array.
    SplitsBatches,
    /// A notification to `add` is answered.
    AnswersNotifications,
}

/// A naive line server over the bytes: answers `add` and `echo`, nothing else well.
async fn naive(io: DuplexStream, defect: Defect) -> Result<(), String> {
    let (read, mut write) = tokio::io::split(io);
    let mut lines = BufReader::new(read).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let Ok(value) = serde_json::from_str::<Value>(&line) else {
            let err = json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "Parse error"}, "id": null});
            write
                .write_all(format!("{err}\n").as_bytes())
                .await
                .map_err(|e| e.to_string())?;
            continue;
        };
        let mut out = Vec::new();
        match &value {
            Value::Array(items) if !items.is_empty() => {
                let answers: Vec<Value> = items
                    .iter()
                    .filter_map(|m| answer(m, defect))
                    .flatten()
                    .collect();
                match defect {
                    Defect::SplitsBatches => out.extend(answers.into_iter().map(|a| json!([a]))),
                    _ if answers.is_empty() => {}
                    _ => out.push(Value::Array(answers)),
                }
            }
            _ => out.extend(answer(&value, defect).unwrap_or_default()),
        }
        for frame in out {
            write
                .write_all(format!("{frame}\n").as_bytes())
                .await
                .map_err(|e| e.to_string())?;
        }
    }
    write.shutdown().await.map_err(|e| e.to_string())
}

/// The answers to one message (`None`: a notification, when answered correctly).
fn answer(msg: &Value, defect: Defect) -> Option<Vec<Value>> {
    let invalid = || {
        vec![
            json!({"jsonrpc": "2.0", "error": {"code": -32600, "message": "Invalid Request"}, "id": null}),
        ]
    };
    let Some(obj) = msg.as_object() else {
        return Some(invalid());
    };
    let method = obj.get("method").and_then(Value::as_str);
    let valid = obj.get("jsonrpc") == Some(&json!("2.0"))
        && method.is_some()
        && obj
            .get("params")
            .is_none_or(|p| p.is_array() || p.is_object())
        && obj
            .get("id")
            .is_none_or(|id| id.is_null() || id.is_string() || id.is_number());
    if !valid {
        return Some(invalid());
    }
    let method = method.unwrap_or_default();
    let id = match obj.get("id") {
        Some(id) => id.clone(),
        None if matches!(defect, Defect::AnswersNotifications) && method == "add" => Value::Null,
        None => return None,
    };
    let one = match method {
        "echo" => json!({"jsonrpc": "2.0", "result": obj.get("params"), "id": id}),
        "add" => json!({"jsonrpc": "2.0", "result": 0, "id": id}),
        _ => {
            json!({"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": id})
        }
    };
    let twice = matches!(defect, Defect::AnswersTwice) && method == "add";
    Some(if twice {
        vec![one.clone(), one]
    } else {
        vec![one]
    })
}

fn raw_harness(defect: Defect) -> Harness<impl Target> {
    Harness::for_target(RawServer::new(move |io| naive(io, defect)))
}

/// Valid traffic only: the naive servers answer hostile frames loosely, which is not the
/// defect under test.
fn valid() -> impl Strategy<Value = rpcwire_testkit::Case> {
    strategy::valid_case(vec![
        method("add", strategy::int_pair()),
        method_any("echo"),
    ])
}

#[test]
fn a_naive_server_without_the_defects_passes() {
    // The planted servers below differ from this one by their defect only.
    let passed = raw_harness(Defect::None).run_proptest(valid(), 300);
    assert!(passed.is_ok(), "{passed:?}");
}

#[test]
fn a_request_answered_twice_is_caught() {
    let failure = raw_harness(Defect::AnswersTwice)
        .run_proptest(valid(), 500)
        .unwrap_err();
    assert!(
        matches!(
            failure.violation,
            Violation::AnsweredTwice { .. } | Violation::BatchMismatch { .. }
        ),
        "{failure}"
    );
    assert_eq!(shrunk(&failure), 1, "{failure}");
}

#[test]
fn a_batch_answered_in_pieces_is_caught() {
    let failure = raw_harness(Defect::SplitsBatches)
        .run_proptest(valid(), 500)
        .unwrap_err();
    assert!(
        matches!(failure.violation, Violation::BatchMismatch { .. }),
        "{failure}"
    );
    assert_eq!(shrunk(&failure), 1, "{failure}");
    assert!(
        matches!(&failure.case.frames[0], Frame::Batch(items) if items.len() == 2),
        "{failure}"
    );
}

#[test]
fn an_answered_notification_is_caught() {
    let failure = raw_harness(Defect::AnswersNotifications)
        .run_proptest(valid(), 500)
        .unwrap_err();
    assert!(
        matches!(
            failure.violation,
            Violation::Unexpected { .. } | Violation::BatchMismatch { .. }
        ),
        "{failure}"
    );
    assert_eq!(shrunk(&failure), 1, "{failure}");
}
