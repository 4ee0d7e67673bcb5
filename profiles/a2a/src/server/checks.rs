//! What the server checks of a message before a turn runs, from its card: the message's
//! shape (`parts` not empty, each part one kind of content), the media types of its parts
//! against the input modes the card declares (-32005), the extensions the card requires
//! against those the request activates (-32008), and whether streaming is offered (-32004).

use serde_json::Value;

use crate::error::{A2aError, ErrorKind};
use crate::types::{AgentCard, Message, Part};

/// What the card says a request must be.
#[derive(Debug, Default)]
pub(crate) struct Admission {
    /// The media types accepted: the card's default input modes and its skills'. Empty:
    /// any.
    input_modes: Vec<String>,
    /// The URIs of the extensions the card marks `required`.
    required_extensions: Vec<String>,
    /// Whether the card offers streaming.
    pub(crate) streaming: bool,
}

impl Admission {
    pub(crate) fn of(card: &AgentCard) -> Self {
        let mut input_modes = card.default_input_modes.clone();
        for skill in &card.skills {
            input_modes.extend(skill.input_modes.iter().cloned());
        }
        // Skills that name none take the defaults: nothing more to accept. Defaults that
        // name none accept anything.
        if card.default_input_modes.is_empty() {
            input_modes.clear();
        }
        let required_extensions = card
            .capabilities
            .extensions
            .iter()
            .filter(|e| e.get("required").and_then(Value::as_bool) == Some(true))
            .filter_map(|e| e.get("uri").and_then(Value::as_str).map(str::to_owned))
            .collect();
        Admission {
            input_modes,
            required_extensions,
            streaming: card.capabilities.streaming,
        }
    }

    /// Checks `message`, sent with a request activating `extensions`.
    pub(crate) fn check(&self, message: &Message, extensions: &[String]) -> Result<(), A2aError> {
        if message.message_id.is_empty() {
            return Err(invalid("message.messageId is required"));
        }
        if message.parts.is_empty() {
            return Err(invalid("message.parts must hold at least one part"));
        }
        for (i, part) in message.parts.iter().enumerate() {
            let kinds = [
                part.text.is_some(),
                part.raw.is_some(),
                part.url.is_some(),
                part.data.is_some(),
            ];
            if kinds.iter().filter(|k| **k).count() != 1 {
                return Err(invalid(format!(
                    "message.parts[{i}] must hold exactly one of text, raw, url or data"
                )));
            }
            let media = media_type(part);
            if !self.accepts(media) {
                return Err(A2aError::with_message(
                    ErrorKind::ContentTypeNotSupported,
                    format!("Media type {media} is not one this agent takes"),
                ));
            }
        }
        let used = |uri: &String| extensions.contains(uri) || message.extensions.contains(uri);
        if let Some(missing) = self.required_extensions.iter().find(|u| !used(u)) {
            return Err(A2aError::with_message(
                ErrorKind::ExtensionSupportRequired,
                format!("This agent requires extension {missing} (A2A-Extensions header)"),
            ));
        }
        Ok(())
    }

    /// Whether an input of media type `media` is taken: a mode equal to it (parameters and
    /// case aside), `*/*`, `type/*`, or a bare `type` (as some cards write `text`).
    fn accepts(&self, media: &str) -> bool {
        if self.input_modes.is_empty() {
            return true;
        }
        let essence = media.split(';').next().unwrap_or("").trim();
        let top = essence.split('/').next().unwrap_or("");
        self.input_modes.iter().any(|mode| {
            let mode = mode.split(';').next().unwrap_or("").trim();
            mode == "*/*"
                || mode.eq_ignore_ascii_case(essence)
                || mode
                    .strip_suffix("/*")
                    .or_else(|| (!mode.contains('/')).then_some(mode))
                    .is_some_and(|t| t.eq_ignore_ascii_case(top))
        })
    }
}

/// A part's media type: its own, else what its kind implies.
fn media_type(part: &Part) -> &str {
    if !part.media_type.is_empty() {
        return &part.media_type;
    }
    if part.text.is_some() {
        "text/plain"
    } else if part.data.is_some() {
        "application/json"
    } else {
        "application/octet-stream"
    }
}

fn invalid(why: impl Into<String>) -> A2aError {
    A2aError::with_message(ErrorKind::InvalidParams, why)
}

/// The extension URIs a request activates: its `A2A-Extensions` header values, comma
/// separated.
pub(crate) fn requested_extensions<'a>(values: impl Iterator<Item = &'a str>) -> Vec<String> {
    values
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::{AgentCapabilities, Role};

    fn card(modes: &[&str], required: Option<&str>) -> Admission {
        Admission::of(&AgentCard {
            default_input_modes: modes.iter().map(|m| (*m).to_owned()).collect(),
            capabilities: AgentCapabilities {
                extensions: required
                    .map(|u| serde_json::json!({"uri": u, "required": true}))
                    .into_iter()
                    .chain([serde_json::json!({"uri": "urn:optional"})])
                    .collect(),
                ..AgentCapabilities::default()
            },
            ..AgentCard::default()
        })
    }

    fn with(parts: Vec<Part>) -> Message {
        Message {
            message_id: "m".into(),
            role: Role::User,
            parts,
            ..Message::default()
        }
    }

    fn kind(r: Result<(), A2aError>) -> Option<ErrorKind> {
        r.err().map(|e| e.kind)
    }

    #[test]
    fn shapes() {
        let a = card(&[], None);
        assert_eq!(
            kind(a.check(&with(vec![]), &[])),
            Some(ErrorKind::InvalidParams)
        );
        let two = Part {
            url: Some("https://x".into()),
            ..Part::text("t")
        };
        assert_eq!(
            kind(a.check(&with(vec![two]), &[])),
            Some(ErrorKind::InvalidParams)
        );
        assert_eq!(
            kind(a.check(&with(vec![Part::default()]), &[])),
            Some(ErrorKind::InvalidParams)
        );
        let mut no_id = with(vec![Part::text("t")]);
        no_id.message_id.clear();
        assert_eq!(kind(a.check(&no_id, &[])), Some(ErrorKind::InvalidParams));
        assert_eq!(kind(a.check(&with(vec![Part::text("t")]), &[])), None);
    }

    #[test]
    fn input_modes() {
        let raw = |media: &str| Part {
            raw: Some("dGNr".into()),
            media_type: media.into(),
            ..Part::default()
        };
        let a = card(&["text/plain", "image/*"], None);
        assert_eq!(kind(a.check(&with(vec![Part::text("t")]), &[])), None);
        assert_eq!(kind(a.check(&with(vec![raw("image/png")]), &[])), None);
        assert_eq!(
            kind(a.check(&with(vec![raw("Text/Plain; charset=utf-8")]), &[])),
            None
        );
        assert_eq!(
            kind(a.check(
                &with(vec![Part::text("t"), raw("application/x-unsupported")]),
                &[]
            )),
            Some(ErrorKind::ContentTypeNotSupported)
        );
        let data = Part {
            data: Some(serde_json::json!({})),
            ..Part::default()
        };
        assert_eq!(
            kind(a.check(&with(vec![data.clone()]), &[])),
            Some(ErrorKind::ContentTypeNotSupported)
        );
        assert_eq!(
            kind(card(&["text"], None).check(&with(vec![Part::text("t")]), &[])),
            None
        );
        assert_eq!(
            kind(card(&["*/*"], None).check(&with(vec![data]), &[])),
            None
        );
    }

    #[test]
    fn required_extensions() {
        let a = card(&[], Some("urn:x"));
        let m = with(vec![Part::text("t")]);
        assert_eq!(
            kind(a.check(&m, &[])),
            Some(ErrorKind::ExtensionSupportRequired)
        );
        let header = requested_extensions(["urn:y, urn:x"].into_iter());
        assert_eq!(header, ["urn:y", "urn:x"]);
        assert_eq!(kind(a.check(&m, &header)), None);
        let declared = Message {
            extensions: vec!["urn:x".into()],
            ..m
        };
        assert_eq!(kind(a.check(&declared, &[])), None);
    }
}
