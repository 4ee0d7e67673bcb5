//! Checks what a server wrote against what the reference model says it owes.

use std::collections::{BTreeMap, HashSet};

use serde_json::value::RawValue;

use crate::model::{owed, split_frames, Due, Limits, Owed, INVALID_REQUEST, PARSE_ERROR};
use crate::Violation;

/// Checks the server's whole output `output` for the input stream `input`: every frame is a
/// valid JSON-RPC response or batch answer (requests and notifications the server sends on its
/// own are allowed and skipped), every request is answered exactly once with its id, no
/// notification is answered, each batch gets exactly one array holding its answers, and the
/// errors the specification fixes (parse error, invalid request) are the ones sent.
///
/// Useful on its own for a server the harnesses do not run: feed it the bytes both ways.
pub fn check_exchange(input: &[u8], output: &[u8], limits: &Limits) -> Result<(), Violation> {
    let mut owed = owed(input, limits);
    let mut answered: HashSet<String> = HashSet::new();
    for frame in split_frames(output, limits.framing) {
        let text = String::from_utf8_lossy(frame);
        let shown = || text.chars().take(300).collect::<String>();
        let value: &RawValue = std::str::from_utf8(frame)
            .ok()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| Violation::NotJson { frame: shown() })?;
        let body = value.get();
        if body.starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(body).unwrap_or_default();
            let mut ids = Vec::with_capacity(items.len());
            for item in &items {
                let obj = object(item)
                    .ok_or_else(|| invalid("a batch answer holds a non-object", shown()))?;
                ids.push(response(&obj).map_err(|reason| invalid(reason, shown()))?);
            }
            if ids.is_empty() {
                return Err(invalid("an empty array", shown()));
            }
            take_batch(&mut owed, &ids, &text)?;
        } else {
            let obj =
                object(value).ok_or_else(|| invalid("neither an object nor an array", shown()))?;
            if obj.contains_key("method") {
                // The server calling or notifying the client: allowed.
                continue;
            }
            let answer = response(&obj).map_err(|reason| invalid(reason, shown()))?;
            take_single(&mut owed, &answer, &mut answered, shown())?;
        }
    }
    if let Some(due) = owed.singles.first() {
        return Err(Violation::Missing {
            due: due.to_string(),
        });
    }
    if let Some(batch) = owed.batches.first() {
        return Err(Violation::Missing {
            due: format!("a batch answer holding [{}]", list(batch)),
        });
    }
    Ok(())
}

fn invalid(reason: &'static str, frame: String) -> Violation {
    Violation::InvalidResponse { reason, frame }
}

/// A response as the checker sees it: its id's JSON text and its error code, if an error.
#[derive(Debug, Clone)]
struct Answer {
    id: String,
    code: Option<i64>,
}

/// An object's members as raw JSON (numbers of any size stay text).
type Object<'a> = BTreeMap<String, &'a RawValue>;

fn object(raw: &RawValue) -> Option<Object<'_>> {
    serde_json::from_str(raw.get()).ok()
}

/// Validates a response object (members, `jsonrpc`, exactly one of result and error, the
/// error object's shape).
fn response(obj: &Object<'_>) -> Result<Answer, &'static str> {
    if obj.get("jsonrpc").map(|v| v.get()) != Some("\"2.0\"") {
        return Err("jsonrpc is not \"2.0\"");
    }
    if obj
        .keys()
        .any(|k| !matches!(k.as_str(), "jsonrpc" | "id" | "result" | "error"))
    {
        return Err("a member other than jsonrpc, id, result, error");
    }
    let id = match obj.get("id") {
        Some(id) if matches!(id.get().as_bytes()[0], b'"' | b'-' | b'0'..=b'9' | b'n') => id,
        Some(_) => return Err("the id is not a string, number or null"),
        None => return Err("no id member"),
    };
    let code = match (obj.get("result"), obj.get("error")) {
        (Some(_), None) => None,
        (None, Some(err)) => {
            let err = object(err).ok_or("the error is not an object")?;
            if err
                .keys()
                .any(|k| !matches!(k.as_str(), "code" | "message" | "data"))
            {
                return Err("an error member other than code, message, data");
            }
            if !err.get("message").is_some_and(|m| m.get().starts_with('"')) {
                return Err("the error message is not a string");
            }
            let code = err.get("code").and_then(|c| c.get().parse::<i64>().ok());
            Some(code.ok_or("the error code is not an integer")?)
        }
        (Some(_), Some(_)) => return Err("both result and error"),
        (None, None) => return Err("neither result nor error"),
    };
    // Ids are echoed byte-exact: compared as text.
    Ok(Answer {
        id: id.get().to_owned(),
        code,
    })
}

/// The text a due's id compares as.
fn due_id(due: &Due) -> &str {
    &due.id
}

/// Whether `answer` settles `due`: same id, and the error the due requires, if any.
fn settles(due: &Due, answer: &Answer) -> bool {
    due_id(due) == answer.id
        && match due.code {
            None => true,
            // A frame refused whole: a parse error, or Invalid Request for a frame rpcwire
            // refuses before parsing it (too deep).
            Some(PARSE_ERROR) => matches!(answer.code, Some(PARSE_ERROR | INVALID_REQUEST)),
            Some(code) => answer.code == Some(code),
        }
}

/// Takes the due an answer on its own settles (one with a fixed error first, so that a
/// request with id null does not take a parse error's answer).
fn take_single(
    owed: &mut Owed,
    answer: &Answer,
    answered: &mut HashSet<String>,
    frame: String,
) -> Result<(), Violation> {
    let pick = owed
        .singles
        .iter()
        .position(|d| d.code.is_some() && settles(d, answer))
        .or_else(|| owed.singles.iter().position(|d| settles(d, answer)));
    if let Some(at) = pick {
        owed.singles.remove(at);
        answered.insert(answer.id.clone());
        return Ok(());
    }
    if let Some(due) = owed.singles.iter().find(|d| due_id(d) == answer.id) {
        let expected = match due.code {
            Some(PARSE_ERROR) => format!("{PARSE_ERROR} or {INVALID_REQUEST}"),
            Some(code) => code.to_string(),
            None => "any".into(),
        };
        return Err(Violation::WrongAnswer {
            id: answer.id.clone(),
            expected,
            frame,
        });
    }
    if owed.batches.iter().flatten().any(|d| settles(d, answer)) {
        return Err(Violation::BatchMismatch {
            expected: "(a batch member answered outside its array)".into(),
            frame,
        });
    }
    if answered.contains(&answer.id) {
        return Err(Violation::AnsweredTwice {
            id: answer.id.clone(),
            frame,
        });
    }
    Err(Violation::Unexpected { frame })
}

/// Takes the batch an array answer settles exactly (every due once, nothing else).
fn take_batch(owed: &mut Owed, answers: &[Answer], text: &str) -> Result<(), Violation> {
    let exact = |dues: &Vec<Due>| {
        if dues.len() != answers.len() {
            return false;
        }
        let mut left: Vec<&Due> = dues.iter().collect();
        // Fixed errors first, as for single answers.
        let mut order: Vec<&Answer> = answers.iter().collect();
        order.sort_by_key(|a| a.code.is_none());
        order.iter().all(|a| {
            let at = left
                .iter()
                .position(|d| d.code.is_some() && settles(d, a))
                .or_else(|| left.iter().position(|d| settles(d, a)));
            at.map(|at| left.remove(at)).is_some()
        })
    };
    match owed.batches.iter().position(exact) {
        Some(at) => {
            owed.batches.remove(at);
            Ok(())
        }
        None => {
            let expected = owed
                .batches
                .iter()
                .map(|b| format!("[{}]", list(b)))
                .collect::<Vec<_>>()
                .join(" or ");
            Err(Violation::BatchMismatch {
                expected: if expected.is_empty() {
                    "nothing (no batch is owed an answer)".into()
                } else {
                    expected
                },
                frame: text.chars().take(300).collect(),
            })
        }
    }
}

fn list(dues: &[Due]) -> String {
    dues.iter()
        .map(Due::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, output: &str) -> Result<(), Violation> {
        check_exchange(input.as_bytes(), output.as_bytes(), &Limits::default())
    }

    const REQ: &str = "{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1}\n";
    const OK1: &str = "{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}\n";

    #[test]
    fn one_answer_per_request() {
        assert_eq!(check(REQ, OK1), Ok(()));
        assert!(matches!(check(REQ, ""), Err(Violation::Missing { .. })));
        let twice = format!("{OK1}{OK1}");
        assert!(matches!(
            check(REQ, &twice),
            Err(Violation::AnsweredTwice { .. })
        ));
        let note = "{\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n";
        assert!(matches!(
            check(note, OK1),
            Err(Violation::Unexpected { .. })
        ));
    }

    #[test]
    fn responses_are_validated() {
        let both =
            "{\"jsonrpc\":\"2.0\",\"result\":0,\"error\":{\"code\":1,\"message\":\"\"},\"id\":1}\n";
        assert!(matches!(
            check(REQ, both),
            Err(Violation::InvalidResponse { .. })
        ));
        assert!(matches!(check(REQ, "{\n"), Err(Violation::NotJson { .. })));
    }

    #[test]
    fn batches_get_one_array() {
        let batch = "[{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":1},{\"jsonrpc\":\"2.0\",\"method\":\"a\",\"id\":2}]\n";
        let good = "[{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":2},{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}]\n";
        assert_eq!(check(batch, good), Ok(()));
        let split = "[{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":2}]\n[{\"jsonrpc\":\"2.0\",\"result\":0,\"id\":1}]\n";
        assert!(matches!(
            check(batch, split),
            Err(Violation::BatchMismatch { .. })
        ));
        let parse =
            "{\"jsonrpc\":\"2.0\",\"error\":{\"code\":-32600,\"message\":\"x\"},\"id\":null}\n";
        assert!(matches!(check("{]\n", parse), Ok(())));
    }
}
