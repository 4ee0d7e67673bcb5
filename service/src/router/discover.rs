//! `rpc.discover`: the OpenRPC service-discovery method, generated from a [`Router`].
//!
//! OpenRPC (<https://spec.open-rpc.org>) names `rpc.discover` as the method that returns a
//! service's description. The document names the application ([`Router::info`]; rpcwire's
//! own name and version otherwise), lists each request method by name (with the description
//! given to [`Router::describe`], if any) and its params, and, in the extension member
//! `x-notifications`, the notifications the router handles.
//!
//! Params: a method registered with typed params ([`Router::method`] and the like) is listed
//! with one param named after its Rust type (schema `{}`: without a schema generator the
//! router knows only the type's name), none for `()`; [`Router::params`] gives them by hand
//! (the way for [`Router::raw_method`]s), and with feature `schemars`,
//! `Router::params_schema` generates them from the type's JSON Schema.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use std::sync::Arc;

use crate::access::DISCOVER_METHOD;
#[cfg(feature = "schemars")]
use crate::router::docs::schema_doc;
use crate::router::docs::MethodDoc;
use crate::router::{answer, MethodFn};
use crate::{Router, RpcError};

/// `document` with only the methods and notifications `shown` keeps.
fn document_for(document: &Value, shown: impl Fn(&str) -> bool) -> Value {
    let mut document = document.clone();
    for list in ["methods", "x-notifications"] {
        if let Some(Value::Array(entries)) = document.get_mut(list) {
            entries.retain(|entry| entry["name"].as_str().is_some_and(&shown));
        }
    }
    document
}

/// The OpenRPC version the document declares.
const OPENRPC_VERSION: &str = "1.3.2";

impl Router {
    /// Gives `name` a human-readable description, shown in the `rpc.discover` document (and by
    /// the browser console of the WebSocket transport). Describing a name that has no handler
    /// is harmless: only registered methods are listed.
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
    /// let router = Router::new()
    ///     .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
    ///     .describe("subtract", "a - b, params [a, b]");
    /// let doc = router.openrpc_document();
    /// assert_eq!(doc["methods"][0]["description"], "a - b, params [a, b]");
    /// ```
    pub fn describe(mut self, name: &str, description: &str) -> Self {
        match self.descriptions.iter_mut().find(|(n, _)| n == name) {
            Some(entry) => entry.1 = description.to_owned(),
            None => self
                .descriptions
                .push((name.to_owned(), description.to_owned())),
        }
        self
    }

    /// Names the application in the `rpc.discover` document (its `info` object): `title`
    /// and `version` (by default rpcwire's own).
    ///
    /// ```
    /// use rpcwire_service::Router;
    /// let doc = Router::new().info("inventory", "2.4.0").openrpc_document();
    /// assert_eq!(doc["info"]["title"], "inventory");
    /// assert_eq!(doc["info"]["version"], "2.4.0");
    /// ```
    pub fn info(mut self, title: &str, version: &str) -> Self {
        self.docs.info = Some((title.to_owned(), version.to_owned()));
        self
    }

    /// Gives `name`'s params in the `rpc.discover` document: OpenRPC content descriptors
    /// (`{"name": .., "schema": ..}`, optionally `"required"`, `"description"`), in
    /// positional order. For a [`raw_method`](Router::raw_method), whose params have no
    /// type, this is the only way; for a typed method it replaces the type's name.
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
    /// use serde_json::json;
    /// let router = Router::new()
    ///     .raw_method("count", |p| Ok::<_, RpcError>(p.map_or(0, |p| p.elements().count())))
    ///     .params("count", json!([{"name": "items", "schema": {"type": "array"}}]));
    /// let doc = router.openrpc_document();
    /// assert_eq!(doc["methods"][0]["params"][0]["name"], "items");
    /// ```
    pub fn params(mut self, name: &str, params: Value) -> Self {
        let params = match params {
            Value::Array(items) => items,
            other => vec![other],
        };
        self.docs.set(
            name,
            MethodDoc {
                params,
                ..MethodDoc::default()
            },
        );
        self
    }

    /// Gives `name`'s params from the JSON Schema of `P` (feature `schemars`): a struct's
    /// fields become by-name params (required unless optional), a tuple's elements
    /// by-position params; the schemas they refer to go to `components.schemas`.
    ///
    /// ```
    /// use rpcwire_service::{Router, RpcError};
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Greet { name: String, #[serde(default)] shout: bool }
    /// let router = Router::new()
    ///     .method("greet", |g: Greet| async move { Ok::<_, RpcError>(g.name) })
    ///     .params_schema::<Greet>("greet");
    /// let doc = router.openrpc_document();
    /// assert_eq!(doc["methods"][0]["paramStructure"], "by-name");
    /// assert_eq!(doc["methods"][0]["params"][0]["name"], "name");
    /// assert_eq!(doc["methods"][0]["params"][0]["required"], true);
    /// ```
    #[cfg(feature = "schemars")]
    pub fn params_schema<P: schemars::JsonSchema>(mut self, name: &str) -> Self {
        let schema = schemars::schema_for!(P).to_value();
        self.docs.set(name, schema_doc(schema));
        self
    }

    /// The OpenRPC document describing this router: every request method by name, sorted
    /// (`rpc.discover` itself left out, as OpenRPC does), and the notification names under
    /// `x-notifications`.
    pub fn openrpc_document(&self) -> Value {
        let describe = |name: &str| {
            self.descriptions
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, d)| d.as_str())
        };
        let methods: Vec<Value> = self
            .method_names()
            .into_iter()
            .filter(|name| *name != DISCOVER_METHOD)
            .map(|name| {
                let doc = self.docs.get(name);
                let mut method = json!({
                    "name": name,
                    "params": doc.map_or(Vec::new(), |d| d.params.clone()),
                    "result": { "name": "result", "schema": {} },
                });
                if let Some(obj) = method.as_object_mut() {
                    if let Some(text) = describe(name) {
                        obj.insert("description".into(), Value::String(text.to_owned()));
                    }
                    if let Some(structure) = doc.and_then(|d| d.structure) {
                        obj.insert("paramStructure".into(), Value::from(structure));
                    }
                }
                method
            })
            .collect();
        let notifications: Vec<Value> = self
            .notification_names()
            .into_iter()
            .map(|name| match describe(name) {
                Some(text) => json!({ "name": name, "description": text }),
                None => json!({ "name": name }),
            })
            .collect();
        let (title, version) = self
            .docs
            .info
            .clone()
            .unwrap_or_else(|| ("rpcwire service".into(), env!("CARGO_PKG_VERSION").into()));
        let mut doc = json!({
            "openrpc": OPENRPC_VERSION,
            "info": { "title": title, "version": version },
            "methods": methods,
            "x-notifications": notifications,
        });
        let schemas: serde_json::Map<String, Value> = self
            .docs
            .methods
            .iter()
            .flat_map(|(_, d)| d.schemas.clone())
            .collect();
        if let (false, Some(obj)) = (schemas.is_empty(), doc.as_object_mut()) {
            obj.insert("components".into(), json!({ "schemas": schemas }));
        }
        doc
    }

    /// This router with an `rpc.discover` method answering [`openrpc_document`]
    /// (computed now, so register every method first), unless it already has one (then it is
    /// returned unchanged). [`Service::new`](crate::Service::new) calls it, so every
    /// transport built on this crate answers `rpc.discover`.
    ///
    /// [`openrpc_document`]: Router::openrpc_document
    ///
    /// Under access rules ([`Router::require`], [`Router::policy`], as they stand when this is
    /// called) each caller is shown only the methods and notifications it may call.
    pub fn discoverable(self) -> Self {
        if self.has_method(DISCOVER_METHOD) {
            return self;
        }
        if !self.access.is_open() {
            let access = self.access.clone();
            let document = self.openrpc_document();
            let run: MethodFn = Arc::new(move |origin, _params, conn, handle| {
                let identity = origin.caller.identity();
                let shown = document_for(&document, |name| access.permits(identity, name));
                answer(conn, handle, Ok(&shown))
            });
            return self.insert_method_fn(DISCOVER_METHOD, run);
        }
        let document = match RawValue::from_string(self.openrpc_document().to_string()) {
            Ok(doc) => doc,
            // A serde_json Value always prints as valid JSON; keep the router as it is if not.
            Err(_) => return self,
        };
        self.raw_method(DISCOVER_METHOD, move |_params| {
            Ok::<_, RpcError>(document.clone())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn document_lists_methods_sorted_with_descriptions() {
        let router = Router::new()
            .sync_method("b", |_: ()| Ok::<_, RpcError>(1))
            .sync_method("a", |_: ()| Ok::<_, RpcError>(2))
            .notification("n", |_: ()| async {})
            .describe("a", "the first")
            .describe("a", "the first, again")
            .discoverable();
        let doc = router.openrpc_document();
        assert_eq!(doc["openrpc"], "1.3.2");
        let names: Vec<&str> = doc["methods"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|m| m["name"].as_str())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(doc["methods"][0]["description"], "the first, again");
        assert!(doc["methods"][1].get("description").is_none());
        assert_eq!(doc["x-notifications"][0]["name"], "n");
        assert!(router.has_method(DISCOVER_METHOD));
    }

    #[test]
    fn typed_methods_list_their_params() {
        let router = Router::new()
            .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
            .sync_method("now", |_: ()| Ok::<_, RpcError>(0))
            .info("calc", "1.2.3");
        let doc = router.openrpc_document();
        assert_eq!(doc["info"], json!({"title": "calc", "version": "1.2.3"}));
        assert_eq!(
            doc["methods"][0]["params"][0]["description"],
            "Rust type `(i64, i64)`"
        );
        assert_eq!(doc["methods"][1]["params"], json!([]));
    }

    #[test]
    fn an_own_discover_method_is_kept() {
        let router = Router::new()
            .sync_method(DISCOVER_METHOD, |_: ()| Ok::<_, RpcError>("mine"))
            .discoverable();
        assert_eq!(router.method_names(), [DISCOVER_METHOD]);
    }
}
