//! What a request's `Accept` and `Content-Type` say: the media a server may answer with, and
//! whether a body is JSON. Every server of the crate (and the fast path, from a head's bytes)
//! reads them here.

use http::header::{self, HeaderMap};

/// What the client's `Accept` allows: (JSON, event stream). No header means JSON.
pub(crate) fn accepts(headers: &HeaderMap) -> (bool, bool) {
    accepts_values(
        headers
            .get_all(header::ACCEPT)
            .iter()
            .filter_map(|v| v.to_str().ok()),
    )
}

/// [`accepts`] over the `Accept` values (those that are text).
pub(crate) fn accepts_values<'a>(values: impl Iterator<Item = &'a str>) -> (bool, bool) {
    match accepted_media(values) {
        None => (true, false),
        Some(AcceptedMedia { json, sse, any }) => (json || any, sse),
    }
}

/// The media ranges an `Accept` header names, of those an answer can be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AcceptedMedia {
    /// `application/json` or `application/*`.
    pub json: bool,
    /// `text/event-stream` or `text/*`.
    pub sse: bool,
    /// `*/*`.
    pub any: bool,
}

impl AcceptedMedia {
    /// What a request's `Accept` headers name ([`accepted_media`] of their text values).
    pub fn of(headers: &HeaderMap) -> Option<Self> {
        accepted_media(
            headers
                .get_all(header::ACCEPT)
                .iter()
                .filter_map(|v| v.to_str().ok()),
        )
    }
}

/// What the `Accept` values name (ranges with `q=0` are refused ones, not counted); `None`
/// when there is no `Accept` value at all.
pub fn accepted_media<'a>(values: impl Iterator<Item = &'a str>) -> Option<AcceptedMedia> {
    let mut media = AcceptedMedia {
        json: false,
        sse: false,
        any: false,
    };
    let mut seen = false;
    for value in values {
        for item in value.split(',') {
            seen = true;
            let mut parts = item.split(';');
            let range = parts.next().unwrap_or("").trim();
            // `q=0` means "not acceptable".
            if parts.any(|p| {
                p.trim()
                    .strip_prefix("q=")
                    .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
            }) {
                continue;
            }
            let is = |name: &str| range.eq_ignore_ascii_case(name);
            if is("*/*") {
                media.any = true;
            } else if is("application/*") || is("application/json") {
                media.json = true;
            } else if is("text/*") || is("text/event-stream") {
                media.sse = true;
            }
        }
    }
    seen.then_some(media)
}

pub(crate) fn is_json_content_type(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json_media)
}

/// Whether a `Content-Type` value is `application/json` (parameters such as a charset allowed).
pub(crate) fn is_json_media(value: &str) -> bool {
    is_json_media_bytes(value.as_bytes())
}

/// [`is_json_media`] of a header value's bytes.
pub(crate) fn is_json_media_bytes(value: &[u8]) -> bool {
    // The value nearly every client sends, told in one comparison: this runs per request.
    if value == b"application/json" {
        return true;
    }
    let end = value.iter().position(|&b| b == b';').unwrap_or(value.len());
    value
        .get(..end)
        .unwrap_or(value)
        .trim_ascii()
        .eq_ignore_ascii_case(b"application/json")
}
