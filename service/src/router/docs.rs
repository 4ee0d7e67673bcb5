//! What the `rpc.discover` document says of each method beyond its name (its params, from
//! their Rust type, given by hand, or generated from a JSON Schema), kept in the router.

use serde_json::{json, Value};

/// What the document says of one method beyond its name and description.
#[derive(Debug, Clone, Default)]
pub(crate) struct MethodDoc {
    /// The OpenRPC `params` (content descriptors).
    pub(crate) params: Vec<Value>,
    /// `paramStructure`: `by-name`, `by-position` (absent: either).
    pub(crate) structure: Option<&'static str>,
    /// Schemas the params refer to (`#/components/schemas/..`).
    pub(crate) schemas: serde_json::Map<String, Value>,
}

/// The document's details beyond the names: per-method docs and the application's info.
#[derive(Debug, Clone, Default)]
pub(crate) struct Docs {
    pub(crate) methods: Vec<(String, MethodDoc)>,
    /// The application's name and version ([`Router::info`]).
    pub(crate) info: Option<(String, String)>,
}

impl Docs {
    pub(crate) fn set(&mut self, name: &str, doc: MethodDoc) {
        match self.methods.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = doc,
            None => self.methods.push((name.to_owned(), doc)),
        }
    }

    pub(crate) fn get(&self, name: &str) -> Option<&MethodDoc> {
        self.methods.iter().find(|(n, _)| n == name).map(|(_, d)| d)
    }

    /// Notes a method registered with params of type `P`: one param named after the type
    /// (none for `()`), unless params were given already.
    pub(crate) fn typed<P>(&mut self, name: &str) {
        if self.get(name).is_some() {
            return;
        }
        let rust = std::any::type_name::<P>();
        let params = if rust == "()" {
            Vec::new()
        } else {
            vec![json!({
                "name": "params",
                "description": format!("Rust type `{rust}`"),
                "schema": {},
            })]
        };
        self.set(
            name,
            MethodDoc {
                params,
                ..MethodDoc::default()
            },
        );
    }
}

/// A method's docs from its params' JSON Schema (draft 2020-12, as schemars writes it).
#[cfg(feature = "schemars")]
pub(crate) fn schema_doc(mut schema: Value) -> MethodDoc {
    // Definitions move to the document's components; references follow them.
    let defs = schema
        .as_object_mut()
        .and_then(|o| o.remove("$defs"))
        .and_then(|d| match d {
            Value::Object(map) => Some(map),
            _ => None,
        })
        .unwrap_or_default();
    let mut schema = relink(schema);
    let schemas = defs.into_iter().map(|(k, v)| (k, relink(v))).collect();
    if let Some(obj) = schema.as_object_mut() {
        obj.remove("$schema");
        obj.remove("title");
    }
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let (params, structure) = if let Some(props) = schema["properties"].as_object() {
        let params = props
            .iter()
            .map(|(name, s)| json!({"name": name, "schema": s, "required": required.contains(&name.as_str())}))
            .collect();
        (params, Some("by-name"))
    } else if let Some(items) = schema["prefixItems"].as_array() {
        let params = items
            .iter()
            .enumerate()
            .map(|(i, s)| json!({"name": format!("arg{i}"), "schema": s, "required": true}))
            .collect();
        (params, Some("by-position"))
    } else {
        (vec![json!({"name": "params", "schema": schema})], None)
    };
    MethodDoc {
        params,
        structure,
        schemas,
    }
}

/// Rewrites schemars' `#/$defs/X` references to OpenRPC's `#/components/schemas/X`.
#[cfg(feature = "schemars")]
fn relink(value: Value) -> Value {
    match value {
        Value::String(s) => match s.strip_prefix("#/$defs/") {
            Some(name) => Value::String(format!("#/components/schemas/{name}")),
            None => Value::String(s),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(relink).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, relink(v))).collect()),
        other => other,
    }
}
