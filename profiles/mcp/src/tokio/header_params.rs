//! Tool parameters mirrored into HTTP headers (2026-07-28 Streamable HTTP, "Custom Headers
//! from Tool Parameters"): a property of a tool's input schema annotated
//! `"x-mcp-header": "Region"` travels both in the arguments and in an `Mcp-Param-Region`
//! header, so that a load balancer can route on it. The server checks that the two agree
//! before the tool runs: a value in the arguments needs its header, and the header (after
//! decoding its `=?base64?...?=` form) must say the same; anything else is `HeaderMismatch`
//! (-32020, HTTP 400).

use std::prelude::rust_2021::*;

use serde_json::Value;

/// The most annotated parameters one tool may have (a bound on the work of each call).
pub const MAX_HEADER_PARAMS: usize = 32;

/// The JSON type of an annotated parameter (the revision allows these three).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    String,
    Integer,
    Boolean,
}

/// One annotated parameter: where it is in the arguments, and its header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct HeaderParam {
    /// The chain of `properties` keys from the schema's root.
    path: Vec<String>,
    /// `mcp-param-{name}`, lowercased (header names compare without case).
    header: String,
    kind: Kind,
}

/// The annotated parameters of an input schema, and why any annotation was not taken (the
/// revision's constraints: a token name, unique without case, on a string, integer or
/// boolean property reached through `properties` only).
pub(crate) fn of_schema(schema: &Value) -> (Vec<HeaderParam>, Vec<String>) {
    let mut found = Vec::new();
    let mut problems = Vec::new();
    walk(schema, &mut Vec::new(), &mut found, &mut problems);
    let mut seen: Vec<String> = Vec::new();
    found.retain(|p: &HeaderParam| {
        if seen.contains(&p.header) {
            problems.push(format!("x-mcp-header {} is used twice", p.header));
            return false;
        }
        seen.push(p.header.clone());
        true
    });
    if found.len() > MAX_HEADER_PARAMS {
        problems.push(format!(
            "more than {MAX_HEADER_PARAMS} x-mcp-header parameters"
        ));
        found.truncate(MAX_HEADER_PARAMS);
    }
    (found, problems)
}

fn walk(
    schema: &Value,
    path: &mut Vec<String>,
    found: &mut Vec<HeaderParam>,
    problems: &mut Vec<String>,
) {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return;
    };
    for (key, property) in properties {
        path.push(key.clone());
        if let Some(name) = property.get("x-mcp-header") {
            let kind = match property.get("type").and_then(Value::as_str) {
                Some("string") => Some(Kind::String),
                Some("integer") => Some(Kind::Integer),
                Some("boolean") => Some(Kind::Boolean),
                _ => None,
            };
            match (name.as_str().filter(|n| is_token(n)), kind) {
                (Some(name), Some(kind)) => found.push(HeaderParam {
                    path: path.clone(),
                    header: format!("mcp-param-{}", name.to_ascii_lowercase()),
                    kind,
                }),
                (None, _) => {
                    problems.push(format!("{}: x-mcp-header is not a token", path.join(".")))
                }
                (_, None) => problems.push(format!(
                    "{}: x-mcp-header on a type other than string, integer or boolean",
                    path.join(".")
                )),
            }
        }
        walk(property, path, found, problems);
        path.pop();
    }
}

impl HeaderParam {
    /// The header's name (`mcp-param-{name}`, lowercased).
    #[cfg(feature = "http")]
    pub(crate) fn header(&self) -> &str {
        &self.header
    }

    /// The header's value for these arguments, before the transport's encoding: the string
    /// itself, the integer or boolean written out; `None` when the parameter is absent or
    /// null (the header is then left out) or not of its declared type.
    #[cfg(feature = "http")]
    pub(crate) fn value(&self, arguments: &Value) -> Option<String> {
        let value = self.path.iter().try_fold(arguments, |v, key| v.get(key))?;
        match (self.kind, value) {
            (Kind::String, Value::String(s)) => Some(s.clone()),
            (Kind::Integer, Value::Number(n)) if n.is_i64() || n.is_u64() => Some(n.to_string()),
            (Kind::Boolean, Value::Bool(b)) => Some(b.to_string()),
            _ => None,
        }
    }
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// A header as the transport found it: absent, its value (decoded from its Base64 form), or
/// unreadable (not visible ASCII, repeated, bad Base64).
#[cfg(any(feature = "http", test))]
pub(crate) type HeaderLookup<'a> = &'a dyn Fn(&str) -> Result<Option<String>, ()>;

/// Checks a call's arguments against its headers; the mismatch's message when they disagree.
/// (Over Streamable HTTP only: no other transport has headers.)
#[cfg(any(feature = "http", test))]
pub(crate) fn check(
    params: &[HeaderParam],
    arguments: &Value,
    header: HeaderLookup<'_>,
) -> Result<(), String> {
    for p in params {
        let value = p
            .path
            .iter()
            .try_fold(arguments, |v, key| v.get(key))
            .filter(|v| !v.is_null());
        let sent = header(&p.header).map_err(|()| format!("{} header is malformed", p.header))?;
        let (Some(value), Some(sent)) = (value, sent) else {
            if value.is_some() {
                return Err(format!(
                    "{} header is required: its parameter is in the arguments",
                    p.header
                ));
            }
            // No value: the header is not expected (one sent anyway says nothing).
            continue;
        };
        let same = match (p.kind, value) {
            (Kind::String, Value::String(s)) => *s == sent,
            (Kind::Boolean, Value::Bool(b)) => sent == if *b { "true" } else { "false" },
            // Compared as numbers: "42.0" and 42 agree.
            (Kind::Integer, Value::Number(n)) => sent.trim().parse::<f64>().ok() == n.as_f64(),
            // The argument is not of the declared type: no header can agree with it.
            _ => false,
        };
        if !same {
            return Err(format!(
                "Header mismatch: {} does not match the argument {}",
                p.header,
                p.path.join(".")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "deep": {"type": "object", "properties": {"on": {"type": "boolean", "x-mcp-header": "On"}}},
            "list": {"type": "array", "items": {"type": "string", "x-mcp-header": "Item"}},
            "bad": {"type": "number", "x-mcp-header": "Bad"},
            "spaced": {"type": "string", "x-mcp-header": "Has Space"},
            "dup": {"type": "string", "x-mcp-header": "REGION"}}})
    }

    #[test]
    fn annotations_are_taken_only_where_the_revision_allows() {
        let (found, problems) = of_schema(&schema());
        let headers: Vec<&str> = found.iter().map(|p| p.header.as_str()).collect();
        // `items` is not followed; `number`, a non-token and a duplicate are refused.
        assert_eq!(headers.len(), 3, "{headers:?}");
        for h in ["mcp-param-n", "mcp-param-on"] {
            assert!(headers.contains(&h), "{headers:?}");
        }
        assert!(headers.contains(&"mcp-param-region"));
        assert_eq!(problems.len(), 3, "{problems:?}");
    }

    #[test]
    fn headers_must_agree_with_the_arguments() {
        let (found, _) = of_schema(&json!({"properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "n": {"type": "integer", "x-mcp-header": "N"},
            "on": {"type": "boolean", "x-mcp-header": "On"}}}));
        let with = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| -> Result<Option<String>, ()> {
                Ok(pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| (*v).to_owned()))
            }
        };
        let args = json!({"region": "eu", "n": 42, "on": true});
        let all = with(&[
            ("mcp-param-region", "eu"),
            ("mcp-param-n", "42.0"),
            ("mcp-param-on", "true"),
        ]);
        assert_eq!(check(&found, &args, &all), Ok(()));
        for bad in [
            with(&[("mcp-param-n", "42"), ("mcp-param-on", "true")]),
            with(&[
                ("mcp-param-region", "EU"),
                ("mcp-param-n", "42"),
                ("mcp-param-on", "true"),
            ]),
            with(&[
                ("mcp-param-region", "eu"),
                ("mcp-param-n", "43"),
                ("mcp-param-on", "true"),
            ]),
            with(&[
                ("mcp-param-region", "eu"),
                ("mcp-param-n", "42"),
                ("mcp-param-on", "True"),
            ]),
        ] {
            assert!(check(&found, &args, &bad).is_err());
        }
        // Absent or null values: no header expected.
        assert_eq!(check(&found, &json!({"region": null}), &with(&[])), Ok(()));
        // An unreadable header is a mismatch.
        let broken = |_: &str| -> Result<Option<String>, ()> { Err(()) };
        assert!(check(&found, &args, &broken).is_err());
    }
}
