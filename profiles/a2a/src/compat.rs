//! A2A 0.3 compatibility (opt-in, [`A2aServer::compat_v03`](crate::A2aServer::compat_v03)):
//! the 0.3 method names (`message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
//! `tasks/resubscribe`, `tasks/pushNotificationConfig/*`,
//! `agent/getAuthenticatedExtendedCard`) served by the same handlers, their parameters read
//! from the 0.3 shapes and their results written in them: objects tagged by `kind`, parts
//! as `{"kind": "text" | "file" | "data"}`, states and roles in lower case, a status
//! update's `final`, and the message or task itself as `message/send`'s result.

use serde_json::{json, Map, Value};

/// Which shapes a request is read in and its answers written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// A2A 1.0.
    V1,
    /// A2A 0.3 (the compatibility mode).
    V03,
}

/// The 0.3 method names and the 1.0 methods that serve them.
const NAMES: [(&str, &str); 10] = [
    ("message/send", "SendMessage"),
    ("message/stream", "SendStreamingMessage"),
    ("tasks/get", "GetTask"),
    ("tasks/cancel", "CancelTask"),
    ("tasks/resubscribe", "SubscribeToTask"),
    (
        "tasks/pushNotificationConfig/set",
        "CreateTaskPushNotificationConfig",
    ),
    (
        "tasks/pushNotificationConfig/get",
        "GetTaskPushNotificationConfig",
    ),
    (
        "tasks/pushNotificationConfig/list",
        "ListTaskPushNotificationConfigs",
    ),
    (
        "tasks/pushNotificationConfig/delete",
        "DeleteTaskPushNotificationConfig",
    ),
    ("agent/getAuthenticatedExtendedCard", "GetExtendedAgentCard"),
];

/// The 0.3 name of a 1.0 method, when 0.3 has it.
pub(crate) fn method_v03(v1: &str) -> Option<&'static str> {
    NAMES.iter().find(|(_, v)| *v == v1).map(|(old, _)| *old)
}

fn take_str(o: &mut Map<String, Value>, key: &str) -> Option<Value> {
    o.remove(key).filter(|v| !v.is_null())
}

/// 0.3 parameters in the 1.0 shapes (only the message and the configuration differ).
pub(crate) fn params_to_v1(mut params: Value) -> Value {
    if let Some(o) = params.as_object_mut() {
        if let Some(m) = o.get_mut("message") {
            *m = message_to_v1(m.take());
        }
        if let Some(Value::Object(c)) = o.get_mut("configuration") {
            // 0.3's `blocking` (default true) is 1.0's `returnImmediately` inverted.
            if let Some(Value::Bool(blocking)) = c.remove("blocking") {
                c.insert("returnImmediately".into(), Value::Bool(!blocking));
            }
            c.remove("pushNotificationConfig");
        }
    }
    params
}

fn message_to_v1(m: Value) -> Value {
    let Value::Object(mut o) = m else { return m };
    o.remove("kind");
    if let Some(Value::String(role)) = o.get("role") {
        let role = match role.as_str() {
            "user" => "ROLE_USER",
            "agent" => "ROLE_AGENT",
            _ => "ROLE_UNSPECIFIED",
        };
        o.insert("role".into(), json!(role));
    }
    if let Some(Value::Array(parts)) = o.get_mut("parts") {
        for p in parts.iter_mut() {
            *p = part_to_v1(p.take());
        }
    }
    Value::Object(o)
}

fn part_to_v1(p: Value) -> Value {
    let Value::Object(mut o) = p else { return p };
    let kind = o.remove("kind");
    let mut out = Map::new();
    if let Some(m) = take_str(&mut o, "metadata") {
        out.insert("metadata".into(), m);
    }
    match kind.as_ref().and_then(Value::as_str) {
        Some("file") => {
            if let Some(Value::Object(mut f)) = o.remove("file") {
                if let Some(b) = take_str(&mut f, "bytes") {
                    out.insert("raw".into(), b);
                }
                if let Some(u) = take_str(&mut f, "uri") {
                    out.insert("url".into(), u);
                }
                if let Some(n) = take_str(&mut f, "name") {
                    out.insert("filename".into(), n);
                }
                if let Some(t) = take_str(&mut f, "mimeType") {
                    out.insert("mediaType".into(), t);
                }
            }
        }
        Some("data") => {
            out.insert("data".into(), o.remove("data").unwrap_or(Value::Null));
        }
        _ => {
            out.insert("text".into(), o.remove("text").unwrap_or(json!("")));
        }
    }
    Value::Object(out)
}

/// A 1.0 result (a task, a message, a `SendMessage` or stream answer, a list of tasks) in
/// the 0.3 shapes.
pub(crate) fn result_to_v03(v: Value) -> Value {
    let Value::Object(mut o) = v else { return v };
    // The wrappers of `SendMessageResponse` and `StreamResponse` are gone in 0.3: the object
    // itself, tagged by `kind`.
    if o.len() == 1 {
        if let Some(t) = o.remove("task") {
            return task_to_v03(t);
        }
        if let Some(m) = o.remove("message") {
            return message_to_v03(m);
        }
        if let Some(s) = o.remove("statusUpdate") {
            return status_update_to_v03(s);
        }
        if let Some(a) = o.remove("artifactUpdate") {
            return artifact_update_to_v03(a);
        }
    }
    if o.contains_key("status") && o.contains_key("id") {
        return task_to_v03(Value::Object(o));
    }
    Value::Object(o)
}

fn state_to_v03(state: &str) -> &'static str {
    match state {
        "TASK_STATE_SUBMITTED" => "submitted",
        "TASK_STATE_WORKING" => "working",
        "TASK_STATE_COMPLETED" => "completed",
        "TASK_STATE_FAILED" => "failed",
        "TASK_STATE_CANCELED" => "canceled",
        "TASK_STATE_INPUT_REQUIRED" => "input-required",
        "TASK_STATE_REJECTED" => "rejected",
        "TASK_STATE_AUTH_REQUIRED" => "auth-required",
        _ => "unknown",
    }
}

fn status_to_v03(s: &mut Value) {
    if let Some(o) = s.as_object_mut() {
        let state = o.get("state").and_then(Value::as_str).unwrap_or("");
        let state = state_to_v03(state);
        o.insert("state".into(), json!(state));
        if let Some(m) = o.get_mut("message") {
            *m = message_to_v03(m.take());
        }
    }
}

fn task_to_v03(t: Value) -> Value {
    let Value::Object(mut o) = t else { return t };
    if let Some(s) = o.get_mut("status") {
        status_to_v03(s);
    }
    for key in ["history"] {
        if let Some(Value::Array(ms)) = o.get_mut(key) {
            for m in ms.iter_mut() {
                *m = message_to_v03(m.take());
            }
        }
    }
    if let Some(Value::Array(arts)) = o.get_mut("artifacts") {
        for a in arts.iter_mut() {
            artifact_to_v03(a);
        }
    }
    o.insert("kind".into(), json!("task"));
    Value::Object(o)
}

fn artifact_to_v03(a: &mut Value) {
    if let Some(Value::Array(parts)) = a.get_mut("parts") {
        for p in parts.iter_mut() {
            *p = part_to_v03(p.take());
        }
    }
}

fn message_to_v03(m: Value) -> Value {
    let Value::Object(mut o) = m else { return m };
    let role = match o.get("role").and_then(Value::as_str) {
        Some("ROLE_AGENT") => "agent",
        _ => "user",
    };
    o.insert("role".into(), json!(role));
    if let Some(Value::Array(parts)) = o.get_mut("parts") {
        for p in parts.iter_mut() {
            *p = part_to_v03(p.take());
        }
    }
    o.insert("kind".into(), json!("message"));
    Value::Object(o)
}

fn part_to_v03(p: Value) -> Value {
    let Value::Object(mut o) = p else { return p };
    let mut out = Map::new();
    if let Some(m) = take_str(&mut o, "metadata") {
        out.insert("metadata".into(), m);
    }
    if let Some(text) = o.remove("text") {
        out.insert("kind".into(), json!("text"));
        out.insert("text".into(), text);
    } else if let Some(data) = o.remove("data") {
        out.insert("kind".into(), json!("data"));
        out.insert("data".into(), data);
    } else {
        let mut file = Map::new();
        if let Some(b) = o.remove("raw") {
            file.insert("bytes".into(), b);
        }
        if let Some(u) = o.remove("url") {
            file.insert("uri".into(), u);
        }
        if let Some(n) = o.remove("filename") {
            file.insert("name".into(), n);
        }
        if let Some(t) = o.remove("mediaType") {
            file.insert("mimeType".into(), t);
        }
        out.insert("kind".into(), json!("file"));
        out.insert("file".into(), Value::Object(file));
    }
    Value::Object(out)
}

fn status_update_to_v03(s: Value) -> Value {
    let Value::Object(mut o) = s else { return s };
    let terminal = matches!(
        o.pointer_state(),
        Some(
            "TASK_STATE_COMPLETED"
                | "TASK_STATE_FAILED"
                | "TASK_STATE_CANCELED"
                | "TASK_STATE_REJECTED"
                | "TASK_STATE_INPUT_REQUIRED"
                | "TASK_STATE_AUTH_REQUIRED"
        )
    );
    if let Some(st) = o.get_mut("status") {
        status_to_v03(st);
    }
    o.insert("final".into(), json!(terminal));
    o.insert("kind".into(), json!("status-update"));
    Value::Object(o)
}

fn artifact_update_to_v03(a: Value) -> Value {
    let Value::Object(mut o) = a else { return a };
    if let Some(art) = o.get_mut("artifact") {
        artifact_to_v03(art);
    }
    o.insert("kind".into(), json!("artifact-update"));
    Value::Object(o)
}

/// The state a status update object names.
trait PointerState {
    fn pointer_state(&self) -> Option<&str>;
}

impl PointerState for Map<String, Value> {
    fn pointer_state(&self) -> Option<&str> {
        self.get("status")?.get("state")?.as_str()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_params_read_from_v03() {
        let p = params_to_v1(json!({
            "message": {"kind": "message", "messageId": "m", "role": "user",
                "parts": [{"kind": "text", "text": "hi"},
                          {"kind": "file", "file": {"uri": "http://x/y", "mimeType": "text/plain"}}]},
            "configuration": {"blocking": false}
        }));
        assert_eq!(
            p,
            json!({
                "message": {"messageId": "m", "role": "ROLE_USER",
                    "parts": [{"text": "hi"}, {"url": "http://x/y", "mediaType": "text/plain"}]},
                "configuration": {"returnImmediately": true}
            })
        );
    }

    #[test]
    fn stream_events_written_as_v03() {
        let e = result_to_v03(json!({"statusUpdate": {"taskId": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_COMPLETED"}}}));
        assert_eq!(
            e,
            json!({"kind": "status-update", "taskId": "t", "contextId": "c",
                "status": {"state": "completed"}, "final": true})
        );
        let t = result_to_v03(json!({"task": {"id": "t", "contextId": "c",
            "status": {"state": "TASK_STATE_INPUT_REQUIRED"},
            "history": [{"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "?"}]}]}}));
        assert_eq!(t["kind"], "task");
        assert_eq!(t["status"]["state"], "input-required");
        assert_eq!(
            t["history"][0]["parts"][0],
            json!({"kind": "text", "text": "?"})
        );
        assert_eq!(t["history"][0]["role"], "agent");
    }
}
