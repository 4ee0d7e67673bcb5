//! `rpc.discover`: the OpenRPC service-discovery method, generated from a [`Router`].
//!
//! OpenRPC (<https://spec.open-rpc.org>) names `rpc.discover` as the method that returns a
//! service's description. The document lists each request method by name (with the
//! description given to [`Router::describe`], if any) and, in the extension member
//! `x-notifications`, the notifications the router handles. Params and results are not typed
//! (schema `{}`): the router only knows their Rust types.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use std::sync::Arc;

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

/// The method name OpenRPC reserves for service discovery.
pub const DISCOVER_METHOD: &str = "rpc.discover";

/// The OpenRPC version the document declares.
const OPENRPC_VERSION: &str = "1.3.2";

impl Router {
    /// Gives `name` a human-readable description, shown in the `rpc.discover` document (and by
    /// the browser console of the WebSocket transport). Describing a name that has no handler
    /// is harmless: only registered methods are listed.
    ///
    /// ```
    /// use rpcwire_tokio::{Router, RpcError};
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
                let mut method = json!({
                    "name": name,
                    "params": [],
                    "result": { "name": "result", "schema": {} },
                });
                if let (Some(text), Some(obj)) = (describe(name), method.as_object_mut()) {
                    obj.insert("description".into(), Value::String(text.to_owned()));
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
        json!({
            "openrpc": OPENRPC_VERSION,
            "info": { "title": "rpcwire service", "version": env!("CARGO_PKG_VERSION") },
            "methods": methods,
            "x-notifications": notifications,
        })
    }

    /// This router with an `rpc.discover` method answering [`openrpc_document`]
    /// (computed now, so register every method first), unless it already has one (then it is
    /// returned unchanged). [`Builder::router`](crate::Builder::router) calls it, so every
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
    fn an_own_discover_method_is_kept() {
        let router = Router::new()
            .sync_method(DISCOVER_METHOD, |_: ()| Ok::<_, RpcError>("mine"))
            .discoverable();
        assert_eq!(router.method_names(), [DISCOVER_METHOD]);
    }
}
