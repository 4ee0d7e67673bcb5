//! A case written as Rust source: what a failure prints, ready to paste into a test file.
//!
//! Values are written for `serde_json::json!` with Rust literals (strings through `{:?}`, which
//! Rust reads back; integers outside `i32` with a suffix, since an unsuffixed literal is an
//! `i32` inside `json!`), so the printed test compiles as it is.

// Failures and coverage are reported by the proptest helpers only (feature `proptest`).
#![cfg_attr(not(feature = "proptest"), allow(dead_code))]

use std::collections::BTreeSet;
use std::fmt::Write;

use serde_json::{Number, Value};

use crate::case::{Case, Frame, Id, Message};

/// The names a piece of source uses from `rpcwire_testkit` and `serde_json`, for its `use`
/// lines (an unused import would fail a `-D warnings` build).
#[derive(Debug, Default)]
pub(crate) struct Uses(BTreeSet<&'static str>);

impl Uses {
    /// The `use` lines, indented by `indent`.
    pub(crate) fn lines(&self, indent: &str) -> String {
        let kit: Vec<&str> = ["Case", "Frame", "Id", "Message"]
            .into_iter()
            .filter(|n| self.0.contains(n))
            .collect();
        let mut out = String::new();
        match kit.as_slice() {
            [] => {}
            [one] => {
                let _ = writeln!(out, "{indent}use rpcwire_testkit::{one};");
            }
            many => {
                let _ = writeln!(out, "{indent}use rpcwire_testkit::{{{}}};", many.join(", "));
            }
        }
        if self.0.contains("json") {
            let _ = writeln!(out, "{indent}use serde_json::json;");
        }
        out
    }
}

fn integer<T: std::fmt::Display>(n: T, fits_i32: bool, suffix: &str) -> String {
    if fits_i32 {
        n.to_string()
    } else {
        format!("{n}{suffix}")
    }
}

fn number(n: &Number) -> String {
    if let Some(i) = n.as_i64() {
        integer(i, i32::try_from(i).is_ok(), "i64")
    } else if let Some(u) = n.as_u64() {
        integer(u, false, "u64")
    } else {
        // `{:?}` keeps a decimal point or an exponent: a float literal.
        format!("{:?}", n.as_f64().unwrap_or_default())
    }
}

/// A value in `json!`'s syntax with Rust literals.
fn value(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&number(n)),
        Value::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (k, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let _ = write!(out, "{k:?}: ");
                value(item, out);
            }
            out.push('}');
        }
    }
}

fn json(v: &Value, uses: &mut Uses) -> String {
    uses.0.insert("json");
    let mut out = String::from("json!(");
    value(v, &mut out);
    out.push(')');
    out
}

fn id(id: &Id, uses: &mut Uses) -> String {
    uses.0.insert("Id");
    match id {
        Id::Num(n) => format!("Id::Num({})", integer(n, i32::try_from(*n).is_ok(), "i64")),
        Id::Str(s) => format!("Id::Str({s:?}.into())"),
        Id::Null => "Id::Null".into(),
    }
}

fn params(p: &Option<Value>, uses: &mut Uses) -> String {
    match p {
        None => "None".into(),
        Some(v) => format!("Some({})", json(v, uses)),
    }
}

fn structured(p: &Option<Value>) -> Option<&Value> {
    p.as_ref().filter(|v| v.is_array() || v.is_object())
}

fn message(m: &Message, uses: &mut Uses) -> String {
    uses.0.insert("Message");
    match m {
        Message::Request {
            method,
            params: p,
            id: Id::Num(n),
        } if structured(p).is_some() => {
            let p = structured(p).map_or_else(String::new, |v| json(v, uses));
            format!(
                "Message::request({method:?}, {p}, {})",
                integer(n, i32::try_from(*n).is_ok(), "i64")
            )
        }
        Message::Request {
            method,
            params: None,
            id: Id::Num(n),
        } => format!(
            "Message::request_without_params({method:?}, {})",
            integer(n, i32::try_from(*n).is_ok(), "i64")
        ),
        Message::Request {
            method,
            params: p,
            id: i,
        } => format!(
            "Message::Request {{ method: {method:?}.into(), params: {}, id: {} }}",
            params(p, uses),
            id(i, uses)
        ),
        Message::Notification { method, params: p } => match structured(p) {
            Some(v) => format!("Message::notification({method:?}, {})", json(v, uses)),
            None => format!(
                "Message::Notification {{ method: {method:?}.into(), params: {} }}",
                params(p, uses)
            ),
        },
        Message::Json(text) => format!("Message::Json({text:?}.into())"),
    }
}

/// Bytes between double quotes with printable ASCII as it is and the rest `\xNN`-escaped
/// (`"` and `\` backslash-escaped): a Rust byte string's body, and a libFuzzer dictionary
/// entry's.
pub(crate) fn escaped(b: &[u8]) -> String {
    let mut out = String::from("\"");
    for &c in b {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            0x20..=0x7e => out.push(char::from(c)),
            _ => {
                let _ = write!(out, "\\x{c:02X}");
            }
        }
    }
    out.push('"');
    out
}

/// Bytes as a byte string literal.
fn bytes(b: &[u8]) -> String {
    format!("b{}", escaped(b))
}

fn frame(f: &Frame, uses: &mut Uses) -> String {
    uses.0.insert("Frame");
    match f {
        Frame::Single(m) => format!("Frame::Single({})", message(m, uses)),
        Frame::Batch(items) if items.is_empty() => "Frame::Batch(vec![])".into(),
        Frame::Batch(items) => {
            let inner: Vec<String> = items.iter().map(|m| message(m, uses)).collect();
            format!("Frame::Batch(vec![{}])", inner.join(", "))
        }
        Frame::Raw(b) => format!("Frame::Raw({}.to_vec())", bytes(b)),
    }
}

/// The case as an expression (indented for a test body), and the names it uses.
pub(crate) fn case(c: &Case) -> (String, Uses) {
    let mut uses = Uses::default();
    uses.0.insert("Case");
    let mut out = String::from("Case::new(vec![\n");
    for f in &c.frames {
        let _ = writeln!(out, "        {},", frame(f, &mut uses));
    }
    out.push_str("    ])");
    if !c.chunks.is_empty() {
        let chunks: Vec<String> = c.chunks.iter().map(usize::to_string).collect();
        let _ = write!(out, "\n    .chunked(vec![{}])", chunks.join(", "));
    }
    (out, uses)
}

impl Case {
    /// The case as a Rust expression (`Case::new(vec![..])`), ready to paste into a test
    /// (with `use rpcwire_testkit::{Case, Frame, Id, Message}; use serde_json::json;` as it
    /// needs).
    pub fn to_rust(&self) -> String {
        case(self).0
    }

    /// The case as a `#[test]` that checks it with `harness` (an expression giving a
    /// [`Harness`](crate::Harness) or [`Firmware`](crate::Firmware)), its `use` lines
    /// included, and `note` (what failed) as its comment: what a fuzz target prints with a
    /// crash.
    ///
    /// ```
    /// use rpcwire_testkit::{Case, Frame, Message};
    /// let case = Case::new(vec![Frame::Single(Message::request("div", serde_json::json!([1, 0]), 1))]);
    /// let test = case.to_test("harness()", "a handler panicked");
    /// assert!(test.contains("assert_eq!(harness().check(&case), Ok(()));"));
    /// ```
    pub fn to_test(&self, harness: &str, note: &str) -> String {
        test(self, harness, note, None)
    }
}

/// A test name from the case's first call: `regression_<method>`.
fn test_name(c: &Case) -> String {
    let method = c.frames.iter().find_map(|f| match f {
        Frame::Single(Message::Request { method, .. })
        | Frame::Single(Message::Notification { method, .. }) => Some(method.as_str()),
        Frame::Batch(items) => items.iter().find_map(|m| match m {
            Message::Request { method, .. } | Message::Notification { method, .. } => {
                Some(method.as_str())
            }
            Message::Json(_) => None,
        }),
        _ => None,
    });
    let mut name = String::from("regression");
    if let Some(method) = method {
        name.push('_');
        for c in method.chars() {
            match c {
                'a'..='z' | '0'..='9' => name.push(c),
                'A'..='Z' => name.push(c.to_ascii_lowercase()),
                _ if !name.ends_with('_') => name.push('_'),
                _ => {}
            }
        }
    }
    name.trim_end_matches('_').to_owned()
}

/// A `#[test]` that checks the case with `harness` (an expression, `harness()` by default)
/// and fails while the defect is there; `note` (the violation) and the seed become its
/// comment.
pub(crate) fn test(c: &Case, harness: &str, note: &str, seed: Option<u64>) -> String {
    let (expr, uses) = case(c);
    let mut out = String::new();
    for line in note.lines().take(3) {
        let _ = writeln!(out, "// {line}");
    }
    if let Some(seed) = seed {
        let _ = writeln!(out, "// Found with RPCWIRE_TESTKIT_SEED={seed}.");
    }
    let _ = writeln!(out, "#[test]");
    let _ = writeln!(out, "fn {}() {{", test_name(c));
    out.push_str(&uses.lines("    "));
    let _ = writeln!(out, "    let case = {expr};");
    let _ = writeln!(out, "    assert_eq!({harness}.check(&case), Ok(()));");
    out.push_str("}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn values_are_written_as_rust_reads_them() {
        let mut out = String::new();
        value(
            &json!({"a": [1, 5_000_000_000i64, u64::MAX, 0.5, "q\"\u{1}é"], "b": null}),
            &mut out,
        );
        assert_eq!(
            out,
            "{\"a\": [1, 5000000000i64, 18446744073709551615u64, 0.5, \"q\\\"\\u{1}é\"], \"b\": null}"
        );
        assert_eq!(bytes(b"{\"a\xff\n"), "b\"{\\\"a\\xFF\\x0A\"");
    }

    #[test]
    fn a_test_imports_only_what_it_uses() {
        let c = Case::new(vec![Frame::Single(Message::request(
            "Add.Two",
            json!([1]),
            3,
        ))]);
        let text = test(&c, "harness()", "id 3: wrong", Some(7));
        assert!(text.contains("fn regression_add_two() {"), "{text}");
        assert!(
            text.contains("use rpcwire_testkit::{Case, Frame, Message};"),
            "{text}"
        );
        assert!(text.contains("use serde_json::json;"), "{text}");
        assert!(
            text.contains("Message::request(\"Add.Two\", json!([1]), 3)"),
            "{text}"
        );
        assert!(
            text.contains("// Found with RPCWIRE_TESTKIT_SEED=7."),
            "{text}"
        );
    }
}
