//! Bodies in the call log (opt-in: `rpcwire serve --log-calls --log-bodies`): each call's
//! line also shows its params and its result (or error), with the values of configured JSON
//! member names replaced by `"[redacted]"` at any depth, any string a [`BodyLog::secret`]
//! check recognises (a bearer token's value, with or without `Bearer `) replaced too, and the
//! text cut at [`BodyLog::max_len`] bytes with a marker saying how much was left out.
//!
//! Off until [`install`]: the call path then pays one relaxed load where a handler answers.

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use serde_json::Value;

/// What replaces a redacted value.
pub const REDACTED: &str = "[redacted]";

/// Member names always redacted (compared without regard to case), whatever is configured.
pub const ALWAYS_REDACTED: [&str; 9] = [
    "authorization",
    "password",
    "token",
    "access_token",
    "refresh_token",
    "id_token",
    "api_key",
    "secret",
    "client_secret",
];

/// The default longest body shown, bytes.
pub const DEFAULT_MAX_LEN: usize = 1024;

/// A check telling whether a string is a credential.
pub type SecretCheck = Arc<dyn Fn(&str) -> bool + Send + Sync>;

/// How bodies are logged.
#[derive(Clone)]
pub struct BodyLog {
    names: Vec<String>,
    secret: Option<SecretCheck>,
    max_len: usize,
}

impl std::fmt::Debug for BodyLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BodyLog")
            .field("names", &self.names)
            .field("secret", &self.secret.is_some())
            .field("max_len", &self.max_len)
            .finish()
    }
}

impl Default for BodyLog {
    fn default() -> Self {
        BodyLog {
            names: ALWAYS_REDACTED.iter().map(|n| (*n).to_owned()).collect(),
            secret: None,
            max_len: DEFAULT_MAX_LEN,
        }
    }
}

impl BodyLog {
    /// Redacts the members named `name` too (any case).
    pub fn redact(mut self, name: &str) -> Self {
        self.names.push(name.to_ascii_lowercase());
        self
    }

    /// Redacts every string `check` says is a credential (and `Bearer ` followed by one).
    pub fn secret(mut self, check: SecretCheck) -> Self {
        self.secret = Some(check);
        self
    }

    /// Cuts each body at `bytes` (at a character boundary).
    pub fn max_len(mut self, bytes: usize) -> Self {
        self.max_len = bytes;
        self
    }

    fn is_secret(&self, text: &str) -> bool {
        let Some(check) = &self.secret else {
            return false;
        };
        let bare = text
            .strip_prefix("Bearer ")
            .or_else(|| text.strip_prefix("bearer "))
            .unwrap_or(text)
            .trim();
        !bare.is_empty() && check(bare)
    }

    fn scrub(&self, value: &mut Value) {
        match value {
            Value::Object(members) => {
                for (name, member) in members.iter_mut() {
                    if self.names.iter().any(|n| n.eq_ignore_ascii_case(name)) {
                        *member = Value::String(REDACTED.to_owned());
                    } else {
                        self.scrub(member);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.scrub(v)),
            Value::String(text) if self.is_secret(text) => *text = REDACTED.to_owned(),
            _ => {}
        }
    }

    /// `json` as the log shows it: redacted, then cut at the limit. Text that is not JSON is
    /// not shown (only its length): it cannot be redacted.
    pub fn render(&self, json: &str) -> String {
        let mut value: Value = match serde_json::from_str(json) {
            Ok(v) => v,
            Err(_) => return format!("[not JSON, {} bytes]", json.len()),
        };
        self.scrub(&mut value);
        let mut text = value.to_string();
        if text.len() > self.max_len {
            let mut cut = self.max_len;
            while !text.is_char_boundary(cut) {
                cut -= 1;
            }
            let left = text.len() - cut;
            text.truncate(cut);
            text.push_str(&format!("…[truncated {left} bytes]"));
        }
        text
    }
}

static CONFIG: OnceLock<BodyLog> = OnceLock::new();
static ON: AtomicBool = AtomicBool::new(false);

/// Turns body logging on with `config` (once per process: later calls are ignored). Bodies
/// show only in the lines of the call log (target [`crate::CALL_LOG`]), so that
/// target must be enabled too.
pub fn install(config: BodyLog) {
    if CONFIG.set(config).is_ok() {
        ON.store(true, Ordering::Relaxed);
    }
}

/// The configuration, when bodies are logged.
pub(crate) fn config() -> Option<&'static BodyLog> {
    if ON.load(Ordering::Relaxed) {
        CONFIG.get()
    } else {
        None
    }
}

thread_local! {
    /// The answer a handler wrote straight into its connection, kept for its call's log line
    /// (taken right after the handler returns, on the same thread).
    static ANSWERED: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Keeps the JSON of an answer written in place, when bodies are logged.
#[inline]
pub fn note_answer(json: impl FnOnce() -> Option<String>) {
    if ON.load(Ordering::Relaxed) {
        let text = json();
        ANSWERED.with_borrow_mut(|slot| *slot = text);
    }
}

/// The answer kept by [`note_answer`] since the last take.
pub(crate) fn take_answer() -> Option<String> {
    ANSWERED.with_borrow_mut(Option::take)
}

/// The JSON of an error answer as the log shows it (`code`, `message`, `data`).
pub fn error_json<E: serde::Serialize>(e: &E) -> Option<String> {
    serde_json::to_string(e).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacts_at_any_depth_and_cuts() {
        let log = BodyLog::default()
            .redact("Card")
            .secret(Arc::new(|s| s == "tok-1"))
            .max_len(60);
        let shown = log.render(
            r#"{"user":"ann","password":"pw","deep":[{"card":"4111"},{"note":"Bearer tok-1"}]}"#,
        );
        // Members come out in the order serde_json's map keeps (sorted, or as read when a
        // crate in the build turns on its `preserve_order`): the expected text goes through
        // the same map.
        let expected: serde_json::Value = serde_json::from_str(
            r#"{"user":"ann","password":"[redacted]","deep":[{"card":"[redacted]"},{"note":"[redacted]"}]}"#,
        )
        .unwrap();
        assert_eq!(
            shown,
            expected
                .to_string()
                .get(..60)
                .map(|s| format!("{s}…[truncated 31 bytes]"))
                .unwrap()
        );
        let long = format!("[\"{}\"]", "é".repeat(100));
        let cut = BodyLog::default().max_len(10).render(&long);
        assert!(cut.starts_with("[\"éééé"), "{cut}");
        assert!(cut.ends_with("…[truncated 194 bytes]"), "{cut}");
        assert_eq!(log.render("not json"), "[not JSON, 8 bytes]");
    }
}
