//! `subscriptions/listen` (2026-07-28): a long-lived request on which the server sends the
//! list-changed and resource-updated notifications the client opted in to, each tagged with
//! the request's id in `_meta`. It replaces the session revisions' GET stream and
//! `resources/subscribe`. The request stays open until the client cancels it (over Streamable
//! HTTP: closes the stream); changes reach every open subscription through a bounded
//! broadcast channel.

// Named, not the std prelude's glob: its `panic` would be ambiguous in `tokio::select!`.
use std::borrow::ToOwned;
use std::format;
use std::string::String;
use std::vec::Vec;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use crate::methods;

/// Changes buffered for a slow subscription before it misses some (it is then told every
/// list it follows changed, which is always true enough: the client lists again).
pub const CHANGE_BUFFER: usize = 64;
/// The most resource URIs one subscription may name.
pub const MAX_RESOURCE_SUBSCRIPTIONS: usize = 256;

/// A change a server announces to the subscriptions that follow it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Change {
    /// The tool list changed (`notifications/tools/list_changed`).
    Tools,
    /// The prompt list changed.
    Prompts,
    /// The resource list changed.
    Resources,
    /// The resource at this URI changed (`notifications/resources/updated`).
    Resource(String),
}

/// Announces changes to the open `subscriptions/listen` streams (from
/// [`McpServer::changes`](super::McpServer::changes) or
/// [`ToolContext::changed`](super::ToolContext::changed)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct Changes {
    tx: broadcast::Sender<Change>,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            tx: broadcast::channel(CHANGE_BUFFER).0,
        }
    }
}

impl Changes {
    /// Announces `change`; the number of open subscriptions it reached (0: none open).
    pub fn announce(&self, change: Change) -> usize {
        self.tx.send(change).unwrap_or(0)
    }

    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.tx.subscribe()
    }
}

/// What one subscription follows, as the client asked and the server offers.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

impl Filter {
    /// The client's `notifications` filter, keeping what the server offers (`offers` answers
    /// for `tools`, `prompts`, `resources`, `subscribe`). Invalid params when malformed.
    pub(crate) fn of(
        params: &Value,
        offers: impl Fn(&str) -> bool,
    ) -> Result<Filter, rpcwire_tokio::RpcError> {
        let bad = |why: &str| rpcwire_tokio::RpcError::invalid_params(why);
        let Some(asked) = params.get("notifications").and_then(Value::as_object) else {
            return Err(bad("subscriptions/listen needs a notifications object"));
        };
        let flag = |key: &str| asked.get(key).and_then(Value::as_bool).unwrap_or(false);
        let uris = match asked.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) if a.len() <= MAX_RESOURCE_SUBSCRIPTIONS => a
                .iter()
                .map(|u| {
                    u.as_str()
                        .map(str::to_owned)
                        .ok_or_else(|| bad("resourceSubscriptions holds URIs"))
                })
                .collect::<Result<_, _>>()?,
            Some(Value::Array(_)) => {
                return Err(bad(&format!(
                    "at most {MAX_RESOURCE_SUBSCRIPTIONS} resourceSubscriptions"
                )))
            }
            Some(_) => return Err(bad("resourceSubscriptions must be an array")),
        };
        Ok(Filter {
            tools: flag("toolsListChanged") && offers("tools"),
            prompts: flag("promptsListChanged") && offers("prompts"),
            resources: flag("resourcesListChanged") && offers("resources"),
            uris: if offers("subscribe") {
                uris
            } else {
                Vec::new()
            },
        })
    }

    /// The filter as acknowledged: only what the server will send.
    pub(crate) fn acknowledged(&self) -> Value {
        let mut m = Map::new();
        for (key, on) in [
            ("toolsListChanged", self.tools),
            ("promptsListChanged", self.prompts),
            ("resourcesListChanged", self.resources),
        ] {
            if on {
                m.insert(key.to_owned(), Value::Bool(true));
            }
        }
        if !self.uris.is_empty() {
            m.insert("resourceSubscriptions".to_owned(), json!(self.uris));
        }
        Value::Object(m)
    }

    /// The notification (method, params without `_meta`) this change makes on this
    /// subscription, if it follows it.
    pub(crate) fn notification(
        &self,
        change: &Change,
    ) -> Option<(&'static str, Map<String, Value>)> {
        match change {
            Change::Tools if self.tools => Some((methods::TOOLS_LIST_CHANGED, Map::new())),
            Change::Prompts if self.prompts => Some((methods::PROMPTS_LIST_CHANGED, Map::new())),
            Change::Resources if self.resources => {
                Some((methods::RESOURCES_LIST_CHANGED, Map::new()))
            }
            Change::Resource(uri) if self.uris.iter().any(|u| u == uri) => {
                let mut p = Map::new();
                p.insert("uri".to_owned(), Value::String(uri.clone()));
                Some((methods::RESOURCES_UPDATED, p))
            }
            _ => None,
        }
    }

    /// Every notification this subscription follows (after it missed changes).
    pub(crate) fn everything(&self) -> Vec<Change> {
        let mut all = Vec::new();
        if self.tools {
            all.push(Change::Tools);
        }
        if self.prompts {
            all.push(Change::Prompts);
        }
        if self.resources {
            all.push(Change::Resources);
        }
        all.extend(self.uris.iter().cloned().map(Change::Resource));
        all
    }
}

/// Runs one subscription on `ctx`'s connection until the client cancels it: the
/// acknowledgement first, then each change it follows.
pub(crate) async fn run(
    ctx: rpcwire_tokio::Context,
    filter: Filter,
    mut changes: broadcast::Receiver<Change>,
) {
    // The id as JSON (a string or a number), as sent.
    let id: Value = ctx
        .id()
        .and_then(|text| serde_json::from_str(text).ok())
        .unwrap_or(Value::Null);
    let tagged = |mut params: Map<String, Value>| {
        params.insert(
            "_meta".to_owned(),
            json!({ methods::META_SUBSCRIPTION_ID: id }),
        );
        Value::Object(params)
    };
    let mut ack = Map::new();
    ack.insert("notifications".to_owned(), filter.acknowledged());
    if ctx
        .peer()
        .notify(methods::SUBSCRIPTIONS_ACKNOWLEDGED, tagged(ack))
        .await
        .is_err()
    {
        return;
    }
    loop {
        let changed = tokio::select! {
            () = ctx.cancelled() => return,
            c = changes.recv() => c,
        };
        let due = match changed {
            Ok(change) => vec![change],
            Err(broadcast::error::RecvError::Lagged(_)) => filter.everything(),
            Err(broadcast::error::RecvError::Closed) => return,
        };
        for change in &due {
            if let Some((method, params)) = filter.notification(change) {
                if ctx.peer().notify(method, tagged(params)).await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_filter_keeps_what_is_asked_and_offered() {
        let params = json!({"notifications": {"toolsListChanged": true, "promptsListChanged": true,
            "resourceSubscriptions": ["test://a"]}});
        let f = Filter::of(&params, |c| c != "prompts").unwrap_or_default();
        assert_eq!(
            f.acknowledged(),
            json!({"toolsListChanged": true, "resourceSubscriptions": ["test://a"]})
        );
        assert!(f.notification(&Change::Tools).is_some());
        assert!(f.notification(&Change::Prompts).is_none());
        assert!(f.notification(&Change::Resources).is_none());
        assert!(f
            .notification(&Change::Resource("test://a".into()))
            .is_some());
        assert!(f
            .notification(&Change::Resource("test://b".into()))
            .is_none());
    }

    #[test]
    fn malformed_filters_are_refused() {
        let many: Vec<String> = (0..=MAX_RESOURCE_SUBSCRIPTIONS)
            .map(|i| format!("u{i}"))
            .collect();
        for bad in [
            json!({}),
            json!({"notifications": 1}),
            json!({"notifications": {"resourceSubscriptions": "x"}}),
            json!({"notifications": {"resourceSubscriptions": [1]}}),
            json!({"notifications": {"resourceSubscriptions": many}}),
        ] {
            assert!(Filter::of(&bad, |_| true).is_err(), "{bad}");
        }
        let edge: Vec<String> = (0..MAX_RESOURCE_SUBSCRIPTIONS)
            .map(|i| format!("u{i}"))
            .collect();
        assert!(Filter::of(
            &json!({"notifications": {"resourceSubscriptions": edge}}),
            |_| true
        )
        .is_ok());
    }
}
