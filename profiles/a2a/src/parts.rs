//! Typed ways to make the parts of messages and artifacts: text, a file given as bytes
//! (base64 encoded here, as the protobuf JSON mapping writes bytes) or as a URL, and
//! structured data; and how to read a file part's bytes back.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

use crate::types::Part;

impl Part {
    /// A file part holding `bytes`, of `media_type`, named `filename` (may be empty).
    ///
    /// ```
    /// let part = rpcwire_a2a::Part::file_bytes(b"tck", "text/plain", "output.txt");
    /// assert_eq!(part.raw.as_deref(), Some("dGNr"));
    /// assert_eq!(part.bytes(), Some(b"tck".to_vec()));
    /// ```
    pub fn file_bytes(
        bytes: &[u8],
        media_type: impl Into<String>,
        filename: impl Into<String>,
    ) -> Self {
        Part {
            raw: Some(STANDARD.encode(bytes)),
            media_type: media_type.into(),
            filename: filename.into(),
            ..Part::default()
        }
    }

    /// A file part pointing at `url`, of `media_type`, named `filename` (may be empty).
    pub fn file_url(
        url: impl Into<String>,
        media_type: impl Into<String>,
        filename: impl Into<String>,
    ) -> Self {
        Part {
            url: Some(url.into()),
            media_type: media_type.into(),
            filename: filename.into(),
            ..Part::default()
        }
    }

    /// A structured data part (`application/json` unless [`with_media_type`](Self::with_media_type)
    /// says otherwise).
    ///
    /// ```
    /// use rpcwire_a2a::{serde_json::json, Part};
    /// let part = Part::data(json!({"key": "value", "count": 42}));
    /// assert_eq!(part.data.as_ref().map(|d| d["count"].clone()), Some(json!(42)));
    /// ```
    pub fn data(data: Value) -> Self {
        Part {
            data: Some(data),
            ..Part::default()
        }
    }

    /// The part, of media type `media_type`.
    pub fn with_media_type(mut self, media_type: impl Into<String>) -> Self {
        self.media_type = media_type.into();
        self
    }

    /// The part, named `filename`.
    pub fn with_filename(mut self, filename: impl Into<String>) -> Self {
        self.filename = filename.into();
        self
    }

    /// The bytes of a file part holding them (`raw`, base64); `None` for other parts or
    /// text that is not base64.
    pub fn bytes(&self) -> Option<Vec<u8>> {
        STANDARD.decode(self.raw.as_deref()?).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        let f = Part::file_url("https://example.com/a.txt", "text/plain", "a.txt");
        assert_eq!(
            serde_json::to_value(&f).unwrap_or_default(),
            serde_json::json!({"url": "https://example.com/a.txt", "mediaType": "text/plain", "filename": "a.txt"})
        );
        assert_eq!(Part::text("x").bytes(), None);
        let bad = Part {
            raw: Some("!!".into()),
            ..Part::default()
        };
        assert_eq!(bad.bytes(), None);
        let d = Part::data(serde_json::json!([1])).with_media_type("application/vnd.x+json");
        assert_eq!(d.media_type, "application/vnd.x+json");
    }
}
