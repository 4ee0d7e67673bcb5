//! The Agent Card as an HTTP resource: its bytes, encoded once, served with `Cache-Control`
//! (`max-age`), a strong `ETag` (a hash of the bytes) and `Last-Modified` (when the server
//! was built), and answered `304 Not Modified` to a conditional request that still holds
//! (`If-None-Match`, or else `If-Modified-Since`, as RFC 9110 orders them).

use std::hash::{Hash, Hasher};
use std::time::{Duration, SystemTime};

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use rpcwire_http::profile::{json, status, Body};

/// The card and its validators.
pub(crate) struct CardResource {
    bytes: Bytes,
    etag: HeaderValue,
    modified: SystemTime,
    last_modified: HeaderValue,
    cache_control: HeaderValue,
}

impl CardResource {
    /// The card's `bytes`, fresh for `max_age`, modified now.
    pub(crate) fn new(bytes: Bytes, max_age: Duration) -> Self {
        // `DefaultHasher` is stable for one build of the server, which is all an ETag of a
        // card built at start-up needs (a restarted server may change it: clients re-read).
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        bytes.hash(&mut hasher);
        let etag = HeaderValue::from_str(&format!("\"{:016x}\"", hasher.finish()))
            .unwrap_or_else(|_| HeaderValue::from_static("\"card\""));
        // HTTP dates have whole seconds: the one compared is the one sent.
        let modified = httpdate::parse_http_date(&httpdate::fmt_http_date(SystemTime::now()))
            .unwrap_or_else(|_| SystemTime::now());
        let last_modified = HeaderValue::from_str(&httpdate::fmt_http_date(modified))
            .unwrap_or_else(|_| HeaderValue::from_static("Thu, 01 Jan 1970 00:00:00 GMT"));
        let cache_control =
            HeaderValue::from_str(&format!("public, max-age={}", max_age.as_secs()))
                .unwrap_or_else(|_| HeaderValue::from_static("no-cache"));
        CardResource {
            bytes,
            etag,
            modified,
            last_modified,
            cache_control,
        }
    }

    /// The answer to a GET with these `headers`: the card, or 304 when the client's copy is
    /// still the card.
    pub(crate) fn answer(&self, headers: &HeaderMap) -> Response<Body> {
        let mut r = if self.not_modified(headers) {
            status(StatusCode::NOT_MODIFIED)
        } else {
            json(self.bytes.clone())
        };
        let h = r.headers_mut();
        h.insert(header::ETAG, self.etag.clone());
        h.insert(header::LAST_MODIFIED, self.last_modified.clone());
        h.insert(header::CACHE_CONTROL, self.cache_control.clone());
        r
    }

    /// RFC 9110 13.2.2: `If-None-Match` decides when present (weak comparison, `*`
    /// matches); `If-Modified-Since` only without it.
    fn not_modified(&self, headers: &HeaderMap) -> bool {
        let matches = headers
            .get_all(header::IF_NONE_MATCH)
            .iter()
            .fold(None, |m, v| {
                let hit = v.to_str().is_ok_and(|v| {
                    v.split(',').map(str::trim).any(|tag| {
                        tag == "*"
                            || tag.trim_start_matches("W/").as_bytes() == self.etag.as_bytes()
                    })
                });
                Some(m.unwrap_or(false) || hit)
            });
        if let Some(matches) = matches {
            return matches;
        }
        headers
            .get(header::IF_MODIFIED_SINCE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| httpdate::parse_http_date(v).ok())
            .is_some_and(|since| self.modified <= since)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(card: &CardResource, headers: &[(&'static str, &str)]) -> Response<Body> {
        let mut h = HeaderMap::new();
        for (name, value) in headers {
            h.append(
                *name,
                HeaderValue::from_str(value).unwrap_or(HeaderValue::from_static("")),
            );
        }
        card.answer(&h)
    }

    #[test]
    fn validators_and_conditional_requests() {
        let card = CardResource::new(
            Bytes::from_static(b"{\"name\":\"a\"}"),
            Duration::from_secs(60),
        );
        let full = get(&card, &[]);
        assert_eq!(full.status(), StatusCode::OK);
        let etag = full.headers()[header::ETAG]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        let modified = full.headers()[header::LAST_MODIFIED]
            .to_str()
            .unwrap_or_default()
            .to_owned();
        assert_eq!(full.headers()[header::CACHE_CONTROL], "public, max-age=60");
        assert!(etag.starts_with('"') && etag.len() == 18, "{etag}");
        assert_eq!(
            get(&card, &[("if-none-match", &etag)]).status(),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(
            get(&card, &[("if-none-match", &format!("\"x\", W/{etag}"))]).status(),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(
            get(&card, &[("if-none-match", "\"other\"")]).status(),
            StatusCode::OK
        );
        assert_eq!(
            get(&card, &[("if-modified-since", &modified)]).status(),
            StatusCode::NOT_MODIFIED
        );
        assert_eq!(
            get(
                &card,
                &[("if-modified-since", "Thu, 01 Jan 2004 00:00:00 GMT")]
            )
            .status(),
            StatusCode::OK
        );
        // If-None-Match decides when both are sent.
        assert_eq!(
            get(
                &card,
                &[
                    ("if-none-match", "\"other\""),
                    ("if-modified-since", &modified)
                ]
            )
            .status(),
            StatusCode::OK
        );
        let not_modified = get(&card, &[("if-none-match", "*")]);
        assert_eq!(not_modified.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(not_modified.headers()[header::ETAG], etag.as_str());
    }
}
