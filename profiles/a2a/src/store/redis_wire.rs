//! What the modules of the [`RedisTaskStore`](super::RedisTaskStore) share: its error, its
//! key names, and the reading of Redis replies.

use std::sync::Arc;

use ::redis::Value;

use super::StoreError;

/// Why a Redis store could not be opened or used.
#[derive(Debug, thiserror::Error)]
pub enum RedisError {
    /// The server (or the connection to it) said no, or did not answer in time.
    #[error("Redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    /// A stored task's JSON does not decode (or a task does not encode).
    #[error("a stored task does not decode: {0}")]
    Json(#[from] serde_json::Error),
    /// A reply that is not what the store's scripts return (keys under the prefix written by
    /// something else).
    #[error("an unexpected reply from Redis: {0}")]
    Unexpected(&'static str),
}

impl From<RedisError> for StoreError {
    fn from(e: RedisError) -> Self {
        StoreError::Backend(Arc::new(e))
    }
}

impl From<::redis::RedisError> for StoreError {
    fn from(e: ::redis::RedisError) -> Self {
        RedisError::from(e).into()
    }
}

impl From<serde_json::Error> for StoreError {
    fn from(e: serde_json::Error) -> Self {
        RedisError::from(e).into()
    }
}

/// The store's key names under its prefix.
pub(super) struct Keys {
    pub(super) prefix: String,
    pub(super) tasks: String,
    pub(super) finished: String,
    pub(super) leases: String,
    pub(super) seq: String,
    pub(super) logs: String,
    pub(super) log_seq: String,
    pub(super) events: String,
    pub(super) cancel: String,
}

impl Keys {
    pub(super) fn new(prefix: &str) -> Self {
        let key = |name: &str| format!("{prefix}:{name}");
        Keys {
            prefix: prefix.to_owned(),
            tasks: key("tasks"),
            finished: key("finished"),
            leases: key("leases"),
            seq: key("seq"),
            logs: key("logs"),
            log_seq: key("logseq"),
            events: key("events"),
            cancel: key("cancel"),
        }
    }

    pub(super) fn task(&self, id: &str) -> String {
        format!("{}:t:{id}", self.prefix)
    }

    pub(super) fn push(&self, id: &str) -> String {
        format!("{}:p:{id}", self.prefix)
    }

    /// Task `id`'s log's hash and its stream of events.
    pub(super) fn log(&self, id: &str) -> (String, String) {
        (
            format!("{}:l:{id}", self.prefix),
            format!("{}:e:{id}", self.prefix),
        )
    }
}

/// A count or time as a script argument: saturated to `i64`.
pub(super) fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// The bytes of a bulk or simple string reply.
pub(super) fn bytes_of(v: &Value) -> Option<&[u8]> {
    match v {
        Value::BulkString(b) => Some(b),
        Value::SimpleString(s) => Some(s.as_bytes()),
        _ => None,
    }
}

/// A reply's text.
pub(super) fn text_of(v: &Value) -> Result<&str, RedisError> {
    bytes_of(v)
        .and_then(|b| std::str::from_utf8(b).ok())
        .ok_or(RedisError::Unexpected("a string"))
}

/// A reply that is a string or nil (`false` in a script's table).
pub(super) fn opt_text_of(v: &Value) -> Result<Option<String>, RedisError> {
    match v {
        Value::Nil => Ok(None),
        v => text_of(v).map(|s| Some(s.to_owned())),
    }
}

/// A reply's integer (an integer, or its decimal text).
pub(super) fn int_of(v: &Value) -> Result<i64, RedisError> {
    match v {
        Value::Int(n) => Ok(*n),
        v => text_of(v)?
            .parse()
            .map_err(|_| RedisError::Unexpected("an integer")),
    }
}

/// A reply's array items.
pub(super) fn items(v: Value) -> Result<Vec<Value>, RedisError> {
    match v {
        Value::Array(items) => Ok(items),
        Value::Nil => Ok(Vec::new()),
        _ => Err(RedisError::Unexpected("an array")),
    }
}
