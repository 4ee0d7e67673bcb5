//! Seeds for a fuzzer of your service: a corpus of valid calls to its methods and a
//! dictionary of its method names, param names and JSON-RPC's tokens, generated from its
//! [`Router`]. A byte-level fuzzer starting from nothing rarely writes a whole valid request
//! to a method by chance; from these it mutates real calls.
//!
//! ```
//! use rpcwire_testkit::seeds::FuzzSeeds;
//! use rpcwire_tokio::{Router, RpcError};
//! use serde_json::json;
//!
//! let router = Router::new()
//!     .method("add", |(a, b): (i64, i64)| async move { Ok::<_, RpcError>(a + b) })
//!     .params("add", json!([{"name": "a", "schema": {"type": "integer"}},
//!                           {"name": "b", "schema": {"type": "integer"}}]));
//! let seeds = FuzzSeeds::from_router(&router).example("add", json!([2, 3]));
//! assert!(seeds.dictionary().contains(r#""\"add\"""#));
//! let inputs = seeds.inputs();
//! assert!(inputs.iter().any(|(_, bytes)| String::from_utf8_lossy(bytes).contains("[2,3]")));
//! ```

use std::collections::BTreeSet;
use std::path::Path;

use rpcwire_tokio::Router;
use serde_json::{json, Map, Value};

use crate::case::{Case, Frame, Message};
use crate::Id;

/// JSON-RPC 2.0's own tokens: member names, the version, the standard error codes, and the
/// JSON structure around them.
pub const JSONRPC_TOKENS: &[&str] = &[
    "\"jsonrpc\"",
    "\"2.0\"",
    "\"method\"",
    "\"params\"",
    "\"id\"",
    "\"result\"",
    "\"error\"",
    "\"code\"",
    "\"message\"",
    "\"data\"",
    "\"jsonrpc\":\"2.0\"",
    "{\"jsonrpc\":\"2.0\",\"method\":",
    ",\"id\":",
    ",\"params\":",
    "-32700",
    "-32600",
    "-32601",
    "-32602",
    "-32603",
    "null",
    "true",
    "false",
    "[]",
    "{}",
    "[{",
    "}]",
    "},{",
    "\"rpc.discover\"",
    "\\u0000",
    "\\\"",
    "1e400",
    "-0",
    "\r\n",
];

/// A method and the params its seeds call it with (`None`: no params member).
#[derive(Debug, Clone)]
struct Seeded {
    name: String,
    params: Vec<Option<Value>>,
    request: bool,
}

/// A fuzzer's seed corpus and dictionary for a service (see the [module](self)).
#[derive(Debug, Clone, Default)]
pub struct FuzzSeeds {
    methods: Vec<Seeded>,
    tokens: BTreeSet<String>,
}

/// Example values for a JSON Schema (as `rpc.discover` documents a param): a typical one and
/// a boundary one (`1` and `0` for an integer, `"a"` and `""` for a string, ...), the values
/// a service's edge cases hide behind.
fn examples(schema: &Value) -> [Value; 2] {
    if let Some(v) = schema.get("const") {
        return [v.clone(), v.clone()];
    }
    if let Some(all) = schema.get("enum").and_then(Value::as_array) {
        if let (Some(first), Some(last)) = (all.first(), all.last()) {
            return [first.clone(), last.clone()];
        }
    }
    let kind = match schema.get("type") {
        Some(Value::Array(kinds)) => kinds
            .iter()
            .filter_map(Value::as_str)
            .find(|k| *k != "null")
            .unwrap_or("null"),
        Some(Value::String(k)) => k.as_str(),
        _ => "",
    };
    match kind {
        "string" => [json!("a"), json!("")],
        "integer" => [json!(1), json!(0)],
        "number" => [json!(1.5), json!(0)],
        "boolean" => [json!(true), json!(false)],
        "array" => [json!([1]), json!([])],
        "object" => [json!({"a": 1}), json!({})],
        _ => [Value::Null, Value::Null],
    }
}

impl FuzzSeeds {
    /// Seeds for every method and notification of `router`: where `rpc.discover` documents
    /// its params ([`Router::params`], or a schema), called with typical examples of them by
    /// name and by position and with boundary ones (`0`, `""`, `false`, `[]`, `{}`) by
    /// position; otherwise with no params, `[]` and `{}`. The dictionary holds
    /// JSON-RPC's tokens ([`JSONRPC_TOKENS`]), the names, and the documented param names.
    pub fn from_router(router: &Router) -> Self {
        let doc = router.openrpc_document();
        let mut seeds = FuzzSeeds {
            methods: Vec::new(),
            tokens: JSONRPC_TOKENS.iter().map(|t| (*t).to_owned()).collect(),
        };
        let documented = |name: &str| -> Vec<Value> {
            doc["methods"]
                .as_array()
                .and_then(|ms| ms.iter().find(|m| m["name"] == name))
                .and_then(|m| m["params"].as_array().cloned())
                .unwrap_or_default()
        };
        let names = router.method_names().into_iter().map(|n| (n, true));
        let notes = router.notification_names().into_iter().map(|n| (n, false));
        for (name, request) in names.chain(notes) {
            let mut params = Vec::new();
            let described = documented(name);
            // Descriptors named after a Rust type ("params") say nothing of the shape.
            let usable: Vec<&Value> = described
                .iter()
                .filter(|d| d["name"].as_str().is_some_and(|n| n != "params"))
                .collect();
            if !usable.is_empty() {
                // Typical values by name and by position, boundary values by position.
                let mut by_name = Map::new();
                let (mut typical, mut boundary) = (Vec::new(), Vec::new());
                for d in &usable {
                    let [usual, edge] = examples(&d["schema"]);
                    if let Some(n) = d["name"].as_str() {
                        seeds.tokens.insert(Value::from(n).to_string());
                        by_name.insert(n.to_owned(), usual.clone());
                    }
                    typical.push(usual);
                    boundary.push(edge);
                }
                params.push(Some(Value::Object(by_name)));
                params.push(Some(Value::Array(typical)));
                params.push(Some(Value::Array(boundary)));
            } else {
                // Shapes only: a few seeds, for every seed more dilutes the fuzzer's attention
                // once the corpus grows.
                params.extend([None, Some(json!([])), Some(json!({}))]);
            }
            seeds.tokens.insert(Value::from(name).to_string());
            seeds.methods.push(Seeded {
                name: name.to_owned(),
                params,
                request,
            });
        }
        seeds
    }

    /// One more call to seed `method` with (an example the documentation cannot give: a
    /// realistic value). Its keys and strings go into the dictionary too.
    pub fn example(mut self, method: &str, params: Value) -> Self {
        fn tokens(v: &Value, out: &mut BTreeSet<String>) {
            match v {
                Value::String(_) => {
                    out.insert(v.to_string());
                }
                Value::Array(items) => items.iter().for_each(|i| tokens(i, out)),
                Value::Object(map) => {
                    for (k, i) in map {
                        out.insert(Value::from(k.as_str()).to_string());
                        tokens(i, out);
                    }
                }
                _ => {}
            }
        }
        tokens(&params, &mut self.tokens);
        match self.methods.iter_mut().find(|m| m.name == method) {
            Some(m) => m.params.push(Some(params)),
            None => self.methods.push(Seeded {
                name: method.to_owned(),
                params: vec![Some(params)],
                request: true,
            }),
        }
        self
    }

    fn message(seeded: &Seeded, params: Option<Value>) -> Message {
        if seeded.request {
            Message::Request {
                method: seeded.name.clone(),
                params,
                id: Id::Num(1),
            }
        } else {
            Message::Notification {
                method: seeded.name.clone(),
                params,
            }
        }
    }

    /// The corpus: named inputs in [`Case::from_fuzz_bytes`]' format (a first byte of 0: one
    /// write, then line-framed messages): one call per method and params, and one batch of
    /// every method's first documented call.
    pub fn inputs(&self) -> Vec<(String, Vec<u8>)> {
        let mut inputs = Vec::new();
        let encode = |frames: Vec<Frame>| {
            let mut bytes = vec![0u8];
            bytes.extend(Case::new(frames).bytes(rpcwire::wire::Framing::Line));
            bytes
        };
        for seeded in &self.methods {
            let slug: String = seeded
                .name
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                .collect();
            for (i, params) in seeded.params.iter().enumerate() {
                let frame = Frame::Single(FuzzSeeds::message(seeded, params.clone()));
                inputs.push((format!("seed-{slug}-{i}"), encode(vec![frame])));
            }
        }
        let batch: Vec<Message> = self
            .methods
            .iter()
            .map(|m| FuzzSeeds::message(m, m.params.last().cloned().flatten()))
            .collect();
        if !batch.is_empty() {
            inputs.push(("seed-batch".into(), encode(vec![Frame::Batch(batch)])));
        }
        inputs
    }

    /// The dictionary, in libFuzzer's format (`-dict=FILE`): one quoted token a line.
    pub fn dictionary(&self) -> String {
        let mut out = String::from("# Generated by rpcwire_testkit::seeds::FuzzSeeds.\n");
        for token in &self.tokens {
            out.push_str(&crate::rust::escaped(token.as_bytes()));
            out.push('\n');
        }
        out
    }

    /// Writes the corpus into the folder `corpus` (created if needed; files of the same
    /// names replaced, others kept) and the dictionary to `dictionary`; how many inputs.
    pub fn write(&self, corpus: &Path, dictionary: &Path) -> std::io::Result<usize> {
        std::fs::create_dir_all(corpus)?;
        let inputs = self.inputs();
        for (name, bytes) in &inputs {
            std::fs::write(corpus.join(name), bytes)?;
        }
        std::fs::write(dictionary, self.dictionary())?;
        Ok(inputs.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rpcwire_tokio::RpcError;

    #[test]
    fn documented_params_give_examples_and_tokens() {
        let router = Router::new()
            .method("greet", |_: Value| async { Ok::<_, RpcError>(()) })
            .params(
                "greet",
                json!([{"name": "name", "schema": {"type": "string"}, "required": true}]),
            )
            .notification("log", |_: Value| async {});
        let seeds = FuzzSeeds::from_router(&router);
        let inputs = seeds.inputs();
        let text: Vec<String> = inputs
            .iter()
            .map(|(_, b)| String::from_utf8_lossy(&b[1..]).into_owned())
            .collect();
        assert!(
            text.iter()
                .any(|t| t.contains("\"params\":{\"name\":\"a\"}")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.contains("\"params\":[\"a\"]")),
            "{text:?}"
        );
        assert!(
            text.iter().any(|t| t.contains("\"params\":[\"\"]")),
            "{text:?}"
        );
        assert!(
            text.iter()
                .any(|t| t.contains("\"method\":\"log\"") && !t.contains("\"id\"")),
            "{text:?}"
        );
        let dict = seeds.dictionary();
        for token in [
            "\"\\\"greet\\\"\"",
            "\"\\\"name\\\"\"",
            "\"\\\"jsonrpc\\\"\"",
        ] {
            assert!(dict.lines().any(|l| l == token), "{token} in {dict}");
        }
        // Every input is what the byte target feeds the harness: valid calls, answered.
        let harness = crate::Harness::new(router);
        for (name, bytes) in &inputs {
            assert_eq!(
                harness.check(&Case::from_fuzz_bytes(bytes)),
                Ok(()),
                "{name}"
            );
        }
    }

    #[test]
    fn dictionary_escapes_what_libfuzzer_needs_escaped() {
        let seeds = FuzzSeeds::default().example("m", json!({"k": "é\\"}));
        let dict = seeds.dictionary();
        assert!(dict.contains("\"\\\"\\xC3\\xA9\\\\\\\\\\\"\"\n"), "{dict}");
    }
}
