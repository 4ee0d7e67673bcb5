//! Checks what a server wrote against what the reference model says it owes.

use std::collections::{BTreeMap, HashSet};

use rpcwire::wire::Framing;
use serde_json::value::RawValue;
use serde_json::Value;

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
    exchange(owed(input, limits), output, limits.framing).map(drop)
}

/// What a checked exchange showed: the calls the service received, the answers' error codes
/// (`None`: a result) and the batch sizes sent, for a run's [`Coverage`](crate::Coverage).
#[derive(Debug, Default, Clone)]
#[cfg_attr(not(feature = "proptest"), allow(dead_code))] // read by the proptest helpers
pub(crate) struct Seen {
    /// Each call's method name and whether it was a request.
    pub(crate) calls: Vec<(String, bool)>,
    /// Each answer's error code, `None` for a result.
    pub(crate) answers: Vec<Option<i64>>,
    /// The length of each batch sent.
    pub(crate) batch_sizes: Vec<usize>,
}

/// Checks `output` against what a stream is `owed` (with the method models' expectations, if
/// any were noted): see [`check_exchange`].
pub(crate) fn exchange(mut owed: Owed, output: &[u8], framing: Framing) -> Result<Seen, Violation> {
    let mut seen = Seen {
        calls: owed
            .calls
            .iter()
            .filter_map(|c| Some((c.method.clone()?, c.due.is_some())))
            .collect(),
        answers: Vec::new(),
        batch_sizes: std::mem::take(&mut owed.batch_sizes),
    };
    let mut answered: HashSet<String> = HashSet::new();
    for frame in split_frames(output, framing) {
        let text = String::from_utf8_lossy(frame);
        let shown = || text.chars().take(300).collect::<String>();
        let value: &RawValue = std::str::from_utf8(frame)
            .ok()
            .and_then(|t| serde_json::from_str(t).ok())
            .ok_or_else(|| Violation::NotJson { frame: shown() })?;
        let body = value.get();
        if body.starts_with('[') {
            let items: Vec<&RawValue> = serde_json::from_str(body).unwrap_or_default();
            let mut answers = Vec::with_capacity(items.len());
            for item in &items {
                let obj = object(item)
                    .ok_or_else(|| invalid("a batch answer holds a non-object", shown()))?;
                answers.push(response(&obj).map_err(|reason| invalid(reason, shown()))?);
            }
            if answers.is_empty() {
                return Err(invalid("an empty array", shown()));
            }
            seen.answers.extend(answers.iter().map(Answer::code));
            take_batch(&mut owed, &answers, &text)?;
        } else {
            let obj =
                object(value).ok_or_else(|| invalid("neither an object nor an array", shown()))?;
            if obj.contains_key("method") {
                // The server calling or notifying the client: allowed.
                continue;
            }
            let answer = response(&obj).map_err(|reason| invalid(reason, shown()))?;
            seen.answers.push(answer.code());
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
    Ok(seen)
}

fn invalid(reason: &'static str, frame: String) -> Violation {
    Violation::InvalidResponse { reason, frame }
}

/// A response as the checker sees it: its id's JSON text, and its result or error code.
#[derive(Debug, Clone)]
struct Answer {
    id: String,
    outcome: Result<Value, i64>,
}

impl Answer {
    fn code(&self) -> Option<i64> {
        self.outcome.as_ref().err().copied()
    }
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
    let outcome = match (obj.get("result"), obj.get("error")) {
        // A result too big for serde_json's numbers compares as null: it matches no model's
        // value but `Any`.
        (Some(result), None) => Ok(serde_json::from_str(result.get()).unwrap_or(Value::Null)),
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
            Err(code.ok_or("the error code is not an integer")?)
        }
        (Some(_), Some(_)) => return Err("both result and error"),
        (None, None) => return Err("neither result nor error"),
    };
    // Ids are echoed byte-exact: compared as text.
    Ok(Answer {
        id: id.get().to_owned(),
        outcome,
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
            Some(PARSE_ERROR) => matches!(answer.code(), Some(PARSE_ERROR | INVALID_REQUEST)),
            Some(code) => answer.code() == Some(code),
        }
}

/// Whether `answer` is what a method model expects of `due` (true when none is modelled).
fn fits(due: &Due, answer: &Answer) -> bool {
    due.expect
        .as_ref()
        .is_none_or(|m| m.expected.admits(&answer.outcome))
}

/// The violation of an answer that settles `due` but is not what its model expects.
fn not_as_modelled(due: &Due, answer: &Answer, frame: String) -> Violation {
    let (call, expected) = due.expect.as_ref().map_or_else(
        || (String::new(), String::new()),
        |m| (m.call.clone(), m.expected.to_string()),
    );
    Violation::NotAsModelled {
        id: answer.id.clone(),
        call,
        expected,
        frame,
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
        .or_else(|| {
            owed.singles
                .iter()
                .position(|d| settles(d, answer) && fits(d, answer))
        });
    if let Some(at) = pick {
        owed.singles.remove(at);
        answered.insert(answer.id.clone());
        return Ok(());
    }
    if let Some(due) = owed.singles.iter().find(|d| settles(d, answer)) {
        return Err(not_as_modelled(due, answer, frame));
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

/// How strictly a batch answer is matched to a batch's dues.
#[derive(Clone, Copy)]
struct Strictness {
    /// Only answers the method models expect.
    modelled: bool,
    /// A due that a call owes (any answer) does not take a parse error or an Invalid
    /// Request: with the same id (`null`) in two batches, the error goes to the batch that
    /// owes it.
    protocol: bool,
}

/// Matches a batch's answers to its dues one to one (fixed errors first, as for single
/// answers, then as strictly as asked): the first answer left without a due and the dues
/// still unmatched then, or `None` when every answer found its own.
fn unmatched<'a, 'd>(
    dues: &'d [Due],
    answers: &'a [Answer],
    strict: Strictness,
) -> Option<(&'a Answer, Vec<&'d Due>)> {
    let first = answers.first()?;
    if dues.len() != answers.len() {
        return Some((first, dues.iter().collect()));
    }
    let mut left: Vec<&Due> = dues.iter().collect();
    let mut order: Vec<&Answer> = answers.iter().collect();
    order.sort_by_key(|a| a.code().is_none());
    for a in order {
        let at = left
            .iter()
            .position(|d| d.code.is_some() && settles(d, a))
            .or_else(|| {
                let protocol_error = matches!(a.code(), Some(PARSE_ERROR | INVALID_REQUEST));
                left.iter().position(|d| {
                    settles(d, a)
                        && (!strict.modelled || fits(d, a))
                        && !(strict.protocol && protocol_error)
                })
            });
        match at {
            Some(at) => {
                left.remove(at);
            }
            None => return Some((a, left)),
        }
    }
    None
}

/// Takes the batch an array answer settles exactly (every due once, nothing else).
fn take_batch(owed: &mut Owed, answers: &[Answer], text: &str) -> Result<(), Violation> {
    let shown = || text.chars().take(300).collect::<String>();
    let exact = |modelled: bool, protocol: bool| {
        let strict = Strictness { modelled, protocol };
        owed.batches
            .iter()
            .position(|dues| unmatched(dues, answers, strict).is_none())
    };
    if let Some(at) = exact(true, true).or_else(|| exact(true, false)) {
        owed.batches.remove(at);
        return Ok(());
    }
    if let Some(at) = exact(false, false) {
        // The right ids, but an answer the models do not expect: name it.
        let modelled = Strictness {
            modelled: true,
            protocol: false,
        };
        if let Some((answer, left)) = unmatched(&owed.batches[at], answers, modelled) {
            if let Some(due) = left.iter().find(|d| settles(d, answer)) {
                return Err(not_as_modelled(due, answer, shown()));
            }
        }
    }
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
        frame: shown(),
    })
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
