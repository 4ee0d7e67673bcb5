//! The typed MCP surface beside tools: resources (fixed URIs) and resource templates (RFC 6570
//! level-1 URI templates, matched to the URI read), prompts with arguments, completion, and
//! the content types they answer with. Registered on [`McpServer`](super::McpServer) in the
//! manner of `.tool(..)`; the server answers `resources/list`, `resources/templates/list`,
//! `resources/read`, `prompts/list`, `prompts/get` and `completion/complete` itself, declares
//! the capabilities, and on 2026-07-28 completes the results and runs input rounds
//! ([`Answer::InputRequired`]) as for tools.

use std::prelude::rust_2021::*;

use std::collections::HashMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::input::InputRequired;

/// What a resource, template or prompt handler answers: the result, or a request for the
/// client's input (2026-07-28 `InputRequiredResult`; on a session revision the server asks
/// the client itself and calls the handler again).
#[derive(Debug, Clone, PartialEq)]
pub enum Answer<T> {
    /// The result.
    Complete(T),
    /// The client must answer these requests and retry.
    InputRequired(InputRequired),
}

/// One item of content (tool results, prompt messages).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Content {
    /// Text.
    Text {
        /// The text.
        text: String,
    },
    /// An image, Base64.
    Image {
        /// Base64 of the image.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio, Base64.
    Audio {
        /// Base64 of the audio.
        data: String,
        /// Its media type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// A resource's contents, embedded.
    Resource {
        /// The contents.
        resource: ResourceContents,
    },
    /// A link to a resource the client may read.
    ResourceLink(ResourceInfo),
}

impl Content {
    /// A text item.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// The item as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// A resource as `resources/list` shows it (also a resource link's target, and, with `uri`
/// holding the template, a template's listing).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct ResourceInfo {
    /// Its URI.
    pub uri: String,
    /// A name for people.
    pub name: String,
    /// What it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceInfo {
    /// A resource at `uri` named `name`.
    pub fn new(uri: &str, name: &str) -> Self {
        ResourceInfo {
            uri: uri.to_owned(),
            name: name.to_owned(),
            ..ResourceInfo::default()
        }
    }

    /// With a description.
    pub fn description(mut self, text: &str) -> Self {
        self.description = Some(text.to_owned());
        self
    }

    /// With a media type.
    pub fn mime_type(mut self, mime: &str) -> Self {
        self.mime_type = Some(mime.to_owned());
        self
    }
}

/// The contents of a resource read: text or Base64 (`blob`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceContents {
    /// The URI read.
    pub uri: String,
    /// Its media type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, Base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: &str, mime_type: &str, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.to_owned()),
            text: Some(text.into()),
            blob: None,
        }
    }

    /// Binary contents, given as Base64.
    pub fn blob(uri: &str, mime_type: &str, base64: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(mime_type.to_owned()),
            text: None,
            blob: Some(base64.into()),
        }
    }
}

/// An argument a prompt takes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    pub description: String,
    /// Whether `prompts/get` must give it (checked before the handler runs).
    pub required: bool,
}

impl PromptArgument {
    /// A required argument.
    pub fn required(name: &str, description: &str) -> Self {
        PromptArgument {
            name: name.to_owned(),
            description: description.to_owned(),
            required: true,
        }
    }
}

/// A message of a prompt: `user` or `assistant`, and its content.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// `"user"` or `"assistant"`.
    pub role: &'static str,
    /// What it says.
    pub content: Content,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: Content) -> Self {
        PromptMessage {
            role: "user",
            content,
        }
    }
}

/// A URI template of RFC 6570 level 1 (`test://items/{id}/data`): literal text and `{name}`
/// variables. A variable matches a non-empty value with none of the characters simple
/// expansion would have percent-encoded as reserved (`/`, `?`, `#`, ...), up to the literal
/// that follows it. Hand-written: level 1 is all MCP resource templates use, and matching
/// (not expanding) is what a server needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UriTemplate {
    text: String,
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Literal(String),
    Var(String),
}

/// A template that is not level 1 (an unclosed brace, an empty or operator variable, two
/// variables with no literal between them).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a level-1 URI template: {0}")]
pub struct TemplateError(String);

impl UriTemplate {
    /// Parses a template.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let bad = || TemplateError(text.to_owned());
        let mut parts = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find('{') {
            if open > 0 {
                parts.push(Part::Literal(rest[..open].to_owned()));
            }
            let close = rest[open..].find('}').ok_or_else(bad)? + open;
            let name = &rest[open + 1..close];
            let valid = !name.is_empty()
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
            if !valid || matches!(parts.last(), Some(Part::Var(_))) {
                return Err(bad());
            }
            parts.push(Part::Var(name.to_owned()));
            rest = &rest[close + 1..];
        }
        if rest.contains('}') {
            return Err(bad());
        }
        if !rest.is_empty() {
            parts.push(Part::Literal(rest.to_owned()));
        }
        Ok(UriTemplate {
            text: text.to_owned(),
            parts,
        })
    }

    /// The template as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The variables' values when `uri` matches.
    pub fn matches(&self, uri: &str) -> Option<HashMap<String, String>> {
        let mut vars = HashMap::new();
        let mut rest = uri;
        let mut parts = self.parts.iter().peekable();
        while let Some(part) = parts.next() {
            match part {
                Part::Literal(l) => rest = rest.strip_prefix(l.as_str())?,
                Part::Var(name) => {
                    let end = match parts.peek() {
                        Some(Part::Literal(next)) => rest.find(next.as_str())?,
                        _ => rest.len(),
                    };
                    let value = &rest[..end];
                    let reserved = |c: char| ":/?#[]@!$&'()*+,;=".contains(c);
                    if value.is_empty() || value.contains(reserved) {
                        return None;
                    }
                    vars.insert(name.clone(), value.to_owned());
                    rest = &rest[end..];
                }
            }
        }
        rest.is_empty().then_some(vars)
    }
}

/// The most completion values one answer carries (the revision's limit).
pub const MAX_COMPLETION_VALUES: usize = 100;

/// The `resources/read` result.
pub(crate) fn read_result(contents: Vec<ResourceContents>) -> Value {
    json!({ "contents": contents })
}

/// The `prompts/get` result.
pub(crate) fn prompt_result(messages: Vec<PromptMessage>) -> Value {
    json!({ "messages": messages })
}

/// The `completion/complete` result: at most [`MAX_COMPLETION_VALUES`], `total` and
/// `hasMore` saying what was left out.
pub(crate) fn completion_result(mut values: Vec<String>) -> Value {
    let total = values.len();
    values.truncate(MAX_COMPLETION_VALUES);
    json!({"completion": {"values": values, "total": total, "hasMore": total > MAX_COMPLETION_VALUES}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn level_one_templates_match_and_bind() {
        let t = UriTemplate::parse("test://template/{id}/data").unwrap();
        let vars = t.matches("test://template/42/data").unwrap_or_default();
        assert_eq!(vars.get("id").map(String::as_str), Some("42"));
        for miss in [
            "test://template//data",
            "test://template/a/b/data",
            "test://template/42/datax",
            "test://other/42/data",
            "test://template/4?2/data",
        ] {
            assert_eq!(t.matches(miss), None, "{miss}");
        }
        let two = UriTemplate::parse("file:///{dir}/{name}.txt").unwrap();
        let v = two.matches("file:///docs/readme.txt").unwrap_or_default();
        assert_eq!((v["dir"].as_str(), v["name"].as_str()), ("docs", "readme"));
        for bad in ["x/{", "x/{}", "x/{a}{b}", "x/}", "x/{+a}"] {
            assert!(UriTemplate::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn content_serializes_as_mcp_says() {
        assert_eq!(
            Content::text("hi").to_value(),
            json!({"type": "text", "text": "hi"})
        );
        let image = Content::Image {
            data: "AA==".into(),
            mime_type: "image/png".into(),
        };
        assert_eq!(
            image.to_value(),
            json!({"type": "image", "data": "AA==", "mimeType": "image/png"})
        );
        let embedded = Content::Resource {
            resource: ResourceContents::text("u://a", "text/plain", "t"),
        };
        assert_eq!(
            embedded.to_value(),
            json!({"type": "resource", "resource": {"uri": "u://a", "mimeType": "text/plain", "text": "t"}})
        );
        let link = Content::ResourceLink(ResourceInfo::new("u://b", "B").mime_type("text/plain"));
        assert_eq!(
            link.to_value(),
            json!({"type": "resource_link", "uri": "u://b", "name": "B", "mimeType": "text/plain"})
        );
    }

    #[test]
    fn completion_is_capped() {
        let many: Vec<String> = (0..150).map(|i| i.to_string()).collect();
        let r = completion_result(many);
        assert_eq!(
            r["completion"]["values"].as_array().map(Vec::len),
            Some(100)
        );
        assert_eq!(r["completion"]["total"], 150);
        assert_eq!(r["completion"]["hasMore"], true);
    }
}
