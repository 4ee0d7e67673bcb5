//! The browser console's page and its live view's numbers, as both servers answer them: the
//! WebSocket server ([`WsServer::console`](crate::ws::WsServer::console)) on `GET /` and
//! `/console`, the HTTP server ([`HttpServer::console`](crate::HttpServer::console)) on
//! `GET /console`; both on `GET /console/stats` (feature `metrics`). The page is embedded in
//! the binary; nothing is fetched from elsewhere.

use bytes::Bytes;

/// The page (one static file, no build step).
const HTML: &str = include_str!("../console/index.html");

/// The tag that tells the page where to open its WebSocket (the path on the page's host).
const WS_PATH_TAG: &str = r#"<meta name="rpcwire-ws-path" content="/">"#;

/// Where the page reads the live view's numbers (`rpcwire_telemetry::live_stats`).
pub const CONSOLE_STATS: &str = "/console/stats";

/// What a console answers for `path`: the page (its WebSocket on `ws_path`) when `path` is
/// one of `pages`, the live view's numbers on [`CONSOLE_STATS`] (feature `metrics`), as
/// `(content type, body)`; `None` for any other path.
pub(crate) fn answer(path: &str, pages: &[&str], ws_path: &str) -> Option<(&'static str, Bytes)> {
    if pages.contains(&path) {
        let page = if ws_path == "/" {
            Bytes::from_static(HTML.as_bytes())
        } else {
            let mut tag = String::from(r#"<meta name="rpcwire-ws-path" content=""#);
            for c in ws_path.chars() {
                match c {
                    '"' => tag.push_str("&quot;"),
                    '&' => tag.push_str("&amp;"),
                    '<' => tag.push_str("&lt;"),
                    '>' => tag.push_str("&gt;"),
                    c => tag.push(c),
                }
            }
            tag.push_str(r#"">"#);
            Bytes::from(HTML.replacen(WS_PATH_TAG, &tag, 1))
        };
        return Some(("text/html; charset=utf-8", page));
    }
    #[cfg(feature = "metrics")]
    if path == CONSOLE_STATS {
        let body = rpcwire_telemetry::live_stats::snapshot_json();
        return Some(("application/json", Bytes::from(body)));
    }
    None
}

/// The headers of a console answer of `kind`: its content type, and no caching (the numbers
/// change on every request).
pub(crate) fn headers(headers: &mut http::HeaderMap, kind: &'static str) {
    use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
}

/// Turns the live view on when a console is (feature `metrics`; see
/// `rpcwire_telemetry::live_stats`): off until then, and never off again.
pub(crate) fn enable_live_view() {
    #[cfg(feature = "metrics")]
    rpcwire_telemetry::live_stats::enable();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_its_websocket_path() {
        assert!(HTML.contains(WS_PATH_TAG));
        let (kind, page) = answer("/console", &["/console"], "/rpc\"<x>").unwrap();
        assert_eq!(kind, "text/html; charset=utf-8");
        let page = std::str::from_utf8(&page).unwrap();
        assert!(page.contains(r#"<meta name="rpcwire-ws-path" content="/rpc&quot;&lt;x&gt;">"#));
        assert!(answer("/other", &["/console"], "/").is_none());
        #[cfg(feature = "metrics")]
        assert!(answer(CONSOLE_STATS, &[], "/").is_some());
    }
}
