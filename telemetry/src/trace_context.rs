//! W3C Trace Context (`traceparent`, `tracestate`) across hops: taken from an incoming call
//! (HTTP headers, a WebSocket upgrade's headers, `params._meta` as MCP carries it) and made
//! the parent of the call's server span; sent on outgoing calls from the client call's span.
//!
//! The parser here is the project's own, not OpenTelemetry's `TraceContextPropagator`: a
//! value from a peer must be refused by the rules of the W3C recommendation with a reason
//! (logged at debug level), including the cases the propagator's `Extractor` cannot see (a
//! repeated `traceparent` header: it reads the first), within fixed size limits, and without
//! the OpenTelemetry crates in builds that do not export spans (the HTTP transport parses the
//! headers in every build; only the feature `otel` sets the parent, through
//! `tracing-opentelemetry`, and reads the context of a client span to send it on).
//!
//! Nothing here runs unless a `tracing` subscriber listens to the call spans: with none, an
//! incoming `traceparent` is not even looked at.
//!
//! ```
//! use rpcwire_telemetry::trace_context::TraceContext;
//! let cx = TraceContext::parse(
//!     "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
//!     Some("rojo=00f067aa0ba902b7"),
//! )
//! .unwrap();
//! assert_eq!(cx.trace_id_hex(), "4bf92f3577b34da6a3ce929d0e0e4736");
//! assert!(cx.sampled());
//! assert_eq!(cx.traceparent(), "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");
//! assert!(TraceContext::parse("00-00000000000000000000000000000000-00f067aa0ba902b7-01", None).is_err());
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The longest `traceparent` value taken (a version `00` one is 55 bytes; a later version may
/// add fields, up to this).
pub const MAX_TRACEPARENT: usize = 256;

/// The longest `tracestate` value taken: the 512 bytes the recommendation asks vendors to
/// pass on at least. A longer one is dropped (the `traceparent` still counts).
pub const MAX_TRACESTATE: usize = 512;

/// The most list members a `tracestate` may have (the recommendation's limit).
pub const MAX_TRACESTATE_MEMBERS: usize = 32;

/// Why a `traceparent` (or the headers carrying it) was ignored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceContextError {
    /// Longer than [`MAX_TRACEPARENT`].
    #[error("traceparent longer than {MAX_TRACEPARENT} bytes")]
    TooLong,
    /// Not the `version-traceid-parentid-flags` form (wrong length, separators, characters
    /// other than lowercase hex digits).
    #[error("traceparent is not version-traceid-parentid-flags in lowercase hex")]
    Malformed,
    /// Version `ff`, which the recommendation forbids.
    #[error("traceparent version ff is invalid")]
    InvalidVersion,
    /// An all-zero trace id or parent id.
    #[error("traceparent has an all-zero trace id or parent id")]
    ZeroId,
    /// More than one `traceparent` (headers, or keys in `_meta`).
    #[error("more than one traceparent")]
    Repeated,
}

/// A parsed W3C trace context: the remote parent of a span.
#[derive(Clone, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: [u8; 16],
    span_id: [u8; 8],
    flags: u8,
    state: Option<Box<str>>,
}

impl std::fmt::Debug for TraceContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TraceContext")
            .field("traceparent", &self.traceparent())
            .field("tracestate", &self.state)
            .finish()
    }
}

/// The value of a lowercase hex digit.
fn hex_digit(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

/// `N` bytes from `2 * N` lowercase hex digits.
fn hex_bytes<const N: usize>(text: &[u8]) -> Option<[u8; N]> {
    if text.len() != 2 * N {
        return None;
    }
    let mut out = [0u8; N];
    for (i, pair) in text.chunks_exact(2).enumerate() {
        out[i] = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
    }
    Some(out)
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 15)] as char);
    }
}

/// A `tracestate` kept only when it is within the limits and made of what a list member may
/// hold (printable ASCII, members split by commas); otherwise `None` (with a debug log).
fn valid_state(state: &str) -> Option<Box<str>> {
    let state = state.trim_matches([' ', '\t']);
    if state.is_empty() {
        return None;
    }
    let ok = state.len() <= MAX_TRACESTATE
        && state
            .bytes()
            .all(|b| (0x20..0x7f).contains(&b) || b == b'\t')
        && state.split(',').filter(|m| !m.trim().is_empty()).count() <= MAX_TRACESTATE_MEMBERS
        && state.split(',').all(|m| {
            let m = m.trim_matches([' ', '\t']);
            m.is_empty()
                || m.split_once('=')
                    .is_some_and(|(k, v)| !k.is_empty() && !v.is_empty())
        });
    if !ok {
        tracing::debug!(
            len = state.len(),
            "tracestate ignored: over the limits or malformed"
        );
        return None;
    }
    Some(state.into())
}

impl TraceContext {
    /// Parses a `traceparent` value (and, when the `traceparent` is valid, a `tracestate`,
    /// dropped when invalid or over its limits) by the W3C Trace Context recommendation.
    pub fn parse(traceparent: &str, tracestate: Option<&str>) -> Result<Self, TraceContextError> {
        let text = traceparent.trim_matches([' ', '\t']).as_bytes();
        if text.len() > MAX_TRACEPARENT {
            return Err(TraceContextError::TooLong);
        }
        // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2.
        if text.len() < 55 {
            return Err(TraceContextError::Malformed);
        }
        let version = hex_bytes::<1>(&text[..2]).ok_or(TraceContextError::Malformed)?[0];
        if version == 0xff {
            return Err(TraceContextError::InvalidVersion);
        }
        // Version 00 is exactly 55 bytes; a later one may go on after a dash.
        if (version == 0 && text.len() != 55) || (text.len() > 55 && text[55] != b'-') {
            return Err(TraceContextError::Malformed);
        }
        if text[2] != b'-' || text[35] != b'-' || text[52] != b'-' {
            return Err(TraceContextError::Malformed);
        }
        let trace_id = hex_bytes::<16>(&text[3..35]).ok_or(TraceContextError::Malformed)?;
        let span_id = hex_bytes::<8>(&text[36..52]).ok_or(TraceContextError::Malformed)?;
        let flags = hex_bytes::<1>(&text[53..55]).ok_or(TraceContextError::Malformed)?[0];
        if trace_id == [0; 16] || span_id == [0; 8] {
            return Err(TraceContextError::ZeroId);
        }
        Ok(TraceContext {
            trace_id,
            span_id,
            flags,
            state: tracestate.and_then(valid_state),
        })
    }

    /// The context of a request's header values: `traceparent` (exactly one) and the
    /// `tracestate` lines (joined by commas, as the recommendation allows). `None`, with a
    /// debug log saying why, for none, a repeated or an invalid one.
    pub fn from_headers<'a>(
        mut traceparent: impl Iterator<Item = &'a [u8]>,
        tracestate: impl Iterator<Item = &'a [u8]>,
    ) -> Option<Self> {
        let first = traceparent.next()?;
        let parsed = if traceparent.next().is_some() {
            Err(TraceContextError::Repeated)
        } else {
            match std::str::from_utf8(first) {
                Ok(text) => {
                    let mut state = String::new();
                    for line in tracestate {
                        // Past the limit it is dropped anyway: stop copying.
                        if state.len() > MAX_TRACESTATE {
                            break;
                        }
                        if let Ok(line) = std::str::from_utf8(line) {
                            if !state.is_empty() {
                                state.push(',');
                            }
                            state.push_str(line);
                        }
                    }
                    Self::parse(text, (!state.is_empty()).then_some(state.as_str()))
                }
                Err(_) => Err(TraceContextError::Malformed),
            }
        };
        parsed
            .map_err(|e| tracing::debug!(reason = %e, "traceparent header ignored"))
            .ok()
    }

    /// The context in a call's `params._meta` (`traceparent`, `tracestate`: MCP's place for
    /// them). `None` for params without one; a repeated key, a value that is not a string or
    /// an invalid one is ignored with a debug log.
    pub fn from_params_meta(params: &str) -> Option<Self> {
        // Most params carry none: told without parsing.
        if !params.contains("traceparent") {
            return None;
        }
        #[derive(serde::Deserialize)]
        struct Meta {
            traceparent: Option<String>,
            tracestate: Option<String>,
        }
        #[derive(serde::Deserialize)]
        struct Params {
            #[serde(rename = "_meta")]
            meta: Option<Meta>,
        }
        // serde refuses a repeated field of a struct: a repeated key is ignored that way.
        let parsed = match serde_json::from_str::<Params>(params) {
            Ok(Params {
                meta:
                    Some(Meta {
                        traceparent: Some(tp),
                        tracestate,
                    }),
            }) => Self::parse(&tp, tracestate.as_deref()),
            Ok(_) => return None,
            Err(e) if e.to_string().starts_with("duplicate field") => {
                Err(TraceContextError::Repeated)
            }
            Err(_) => Err(TraceContextError::Malformed),
        };
        parsed
            .map_err(|e| tracing::debug!(reason = %e, "_meta.traceparent ignored"))
            .ok()
    }

    /// The trace id's 16 bytes.
    pub fn trace_id(&self) -> [u8; 16] {
        self.trace_id
    }

    /// The trace id in lowercase hex.
    pub fn trace_id_hex(&self) -> String {
        let mut s = String::with_capacity(32);
        push_hex(&mut s, &self.trace_id);
        s
    }

    /// The parent span's id.
    pub fn span_id(&self) -> [u8; 8] {
        self.span_id
    }

    /// The trace flags.
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// True when the `sampled` flag is set.
    pub fn sampled(&self) -> bool {
        self.flags & 1 == 1
    }

    /// The context an unsampled call sends on: `trace` (a trace id as a number, not 0), a
    /// fresh parent id, the `sampled` flag cleared.
    #[cfg(feature = "otel")]
    pub(crate) fn unsampled(trace: u128) -> Self {
        TraceContext {
            trace_id: trace.to_be_bytes(),
            span_id: crate::sampling::new_span_id(),
            flags: 0,
            state: None,
        }
    }

    /// The trace id as a number (for the thread-local of an unsampled call).
    pub(crate) fn trace_number(&self) -> u128 {
        u128::from_be_bytes(self.trace_id)
    }

    /// The `tracestate`, when one came with it and was valid.
    pub fn tracestate(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The `traceparent` value (version `00`) to send.
    pub fn traceparent(&self) -> String {
        let mut s = String::with_capacity(55);
        s.push_str("00-");
        push_hex(&mut s, &self.trace_id);
        s.push('-');
        push_hex(&mut s, &self.span_id);
        s.push('-');
        push_hex(&mut s, &[self.flags]);
        s
    }

    /// `params` (an object's JSON text, or none) with this context in its `_meta`
    /// (`traceparent`, and `tracestate` when there is one), as MCP carries it. Params given
    /// as an array, a `_meta` that is not an object, and a `_meta.traceparent` already there
    /// are left as they are.
    pub fn put_in_params_meta(&self, params: Option<String>) -> Option<String> {
        use serde_json::{Map, Value};
        let mut object = match &params {
            None => Map::new(),
            Some(text) => match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(object)) => object,
                _ => return params,
            },
        };
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        let Value::Object(meta) = meta else {
            return params;
        };
        if meta.contains_key("traceparent") {
            return params;
        }
        meta.insert("traceparent".into(), self.traceparent().into());
        if let Some(state) = self.tracestate() {
            meta.insert("tracestate".into(), state.into());
        }
        serde_json::to_string(&object).ok().or(params)
    }

    /// Makes this context the parent of `span` (feature `otel`, with a `tracing-opentelemetry`
    /// layer; otherwise nothing). Call it before the span is entered: once started, its
    /// parent stays.
    pub fn set_parent_of(&self, span: &tracing::Span) {
        #[cfg(feature = "otel")]
        otel::set_parent(span, self);
        #[cfg(not(feature = "otel"))]
        let _ = span;
    }

    /// The context `span` gives its children on other hosts: its trace, with itself as the
    /// parent (feature `otel`, with a `tracing-opentelemetry` layer; `None` otherwise, and
    /// for a span no subscriber listens to).
    pub fn of_span(span: &tracing::Span) -> Option<Self> {
        if span.is_disabled() {
            return None;
        }
        #[cfg(feature = "otel")]
        return otel::of_span(span);
        #[cfg(not(feature = "otel"))]
        None
    }
}

#[cfg(feature = "otel")]
mod otel {
    use opentelemetry::trace::{
        SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState,
    };
    use tracing_opentelemetry::OpenTelemetrySpanExt;

    use super::TraceContext;

    pub(super) fn set_parent(span: &tracing::Span, cx: &TraceContext) {
        if span.is_disabled() {
            return;
        }
        let state = cx
            .tracestate()
            .and_then(|s| s.parse::<TraceState>().ok())
            .unwrap_or_default();
        let remote = SpanContext::new(
            TraceId::from_bytes(cx.trace_id),
            SpanId::from_bytes(cx.span_id),
            TraceFlags::new(cx.flags),
            true,
            state,
        );
        let parent = opentelemetry::Context::new().with_remote_span_context(remote);
        if let Err(e) = span.set_parent(parent) {
            tracing::debug!(error = %e, "remote parent not set");
        }
    }

    pub(super) fn of_span(span: &tracing::Span) -> Option<TraceContext> {
        let cx = span.context();
        let sc = cx.span().span_context().clone();
        if !sc.is_valid() {
            return None;
        }
        let state = sc.trace_state().header();
        Some(TraceContext {
            trace_id: sc.trace_id().to_bytes(),
            span_id: sc.span_id().to_bytes(),
            flags: sc.trace_flags().to_u8(),
            state: (!state.is_empty()).then(|| state.into()),
        })
    }
}

/// The most contexts an [`OutgoingTraces`] holds; past it, it starts over (a transport that
/// never takes them cannot grow it).
const MAX_OUTGOING: usize = 1024;

/// The trace contexts of a connection's outgoing calls, by request id: the client puts the
/// context of each call's span here when the call goes out (only when a subscriber listens),
/// and a transport that can carry it beside the message (the HTTP client: `traceparent` and
/// `tracestate` headers) takes it when it sends the message. Give it to the connection with
/// `rpcwire_tokio::Builder::outgoing_traces`.
#[derive(Clone, Default)]
pub struct OutgoingTraces(Arc<Mutex<HashMap<u64, TraceContext>>>);

impl std::fmt::Debug for OutgoingTraces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingTraces").finish_non_exhaustive()
    }
}

impl OutgoingTraces {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Keeps `cx` as the trace context of our request `id` (the table is bounded: at its
    /// limit it starts over).
    pub fn put(&self, id: u64, cx: TraceContext) {
        if let Ok(mut table) = self.0.lock() {
            if table.len() >= MAX_OUTGOING {
                table.clear();
            }
            table.insert(id, cx);
        }
    }

    /// Takes the context of the call with this request id (the JSON text of a number id).
    pub fn take(&self, id: &str) -> Option<TraceContext> {
        let id: u64 = id.parse().ok()?;
        let mut table = self.0.lock().ok()?;
        if table.is_empty() {
            return None;
        }
        table.remove(&id)
    }

    /// True when nothing waits to be taken (the transport's check before it looks for ids).
    pub fn is_empty(&self) -> bool {
        self.0.lock().map_or(true, |t| t.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_round_trips() {
        let cx =
            TraceContext::parse(TP, Some(" rojo=00f067aa0ba902b7,congo=t61rcWkgMzE ")).unwrap();
        assert_eq!(cx.traceparent(), TP);
        assert_eq!(
            cx.span_id(),
            [0x00, 0xf0, 0x67, 0xaa, 0x0b, 0xa9, 0x02, 0xb7]
        );
        assert_eq!(cx.flags(), 1);
        assert_eq!(
            cx.tracestate(),
            Some("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")
        );
    }

    #[test]
    fn later_versions_may_go_on_after_a_dash() {
        let later = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-comes";
        assert!(TraceContext::parse(later, None).is_ok());
        let glued = "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x";
        assert_eq!(
            TraceContext::parse(glued, None),
            Err(TraceContextError::Malformed)
        );
        let v0_longer = format!("{TP}-x");
        assert_eq!(
            TraceContext::parse(&v0_longer, None),
            Err(TraceContextError::Malformed)
        );
    }

    #[test]
    fn invalid_traceparents_are_refused_with_their_reason() {
        use TraceContextError::*;
        let cases: &[(&str, TraceContextError)] = &[
            ("", Malformed),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
                Malformed,
            ),
            (
                "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
                Malformed,
            ),
            (
                "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                InvalidVersion,
            ),
            (
                "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
                ZeroId,
            ),
            (
                "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
                ZeroId,
            ),
        ];
        for (text, why) in cases {
            assert_eq!(TraceContext::parse(text, None), Err(*why), "{text:?}");
        }
        let long = format!(
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}",
            "a".repeat(MAX_TRACEPARENT)
        );
        assert_eq!(TraceContext::parse(&long, None), Err(TooLong));
    }

    #[test]
    fn tracestate_at_its_limits() {
        let member = |i: usize| format!("k{i}=v");
        let at = (0..MAX_TRACESTATE_MEMBERS)
            .map(member)
            .collect::<Vec<_>>()
            .join(",");
        assert!(TraceContext::parse(TP, Some(&at))
            .unwrap()
            .tracestate()
            .is_some());
        let over = (0..=MAX_TRACESTATE_MEMBERS)
            .map(member)
            .collect::<Vec<_>>()
            .join(",");
        assert_eq!(
            TraceContext::parse(TP, Some(&over)).unwrap().tracestate(),
            None
        );
        let long = format!("k={}", "v".repeat(MAX_TRACESTATE - 2));
        assert_eq!(long.len(), MAX_TRACESTATE);
        assert!(TraceContext::parse(TP, Some(&long))
            .unwrap()
            .tracestate()
            .is_some());
        let longer = format!("{long}v");
        assert_eq!(
            TraceContext::parse(TP, Some(&longer)).unwrap().tracestate(),
            None
        );
        assert_eq!(
            TraceContext::parse(TP, Some("no-equals"))
                .unwrap()
                .tracestate(),
            None
        );
        assert_eq!(
            TraceContext::parse(TP, Some("k=\u{7f}"))
                .unwrap()
                .tracestate(),
            None
        );
    }

    #[test]
    fn a_repeated_traceparent_header_is_ignored() {
        let one: [&[u8]; 1] = [TP.as_bytes()];
        let two: [&[u8]; 2] = [TP.as_bytes(), TP.as_bytes()];
        let states: [&[u8]; 2] = [b"a=1", b"b=2"];
        let cx = TraceContext::from_headers(one.into_iter(), states.into_iter()).unwrap();
        assert_eq!(cx.tracestate(), Some("a=1,b=2"));
        assert!(TraceContext::from_headers(two.into_iter(), [].into_iter()).is_none());
        let bad: [&[u8]; 1] = [b"\xff\xfe"];
        assert!(TraceContext::from_headers(bad.into_iter(), [].into_iter()).is_none());
    }

    #[test]
    fn meta_traceparent_in_params() {
        let params =
            format!(r#"{{"name":"t","_meta":{{"traceparent":"{TP}","tracestate":"a=1"}}}}"#);
        let cx = TraceContext::from_params_meta(&params).unwrap();
        assert_eq!(cx.traceparent(), TP);
        assert_eq!(cx.tracestate(), Some("a=1"));
        let twice = format!(r#"{{"_meta":{{"traceparent":"{TP}","traceparent":"{TP}"}}}}"#);
        assert!(TraceContext::from_params_meta(&twice).is_none());
        assert!(TraceContext::from_params_meta(r#"{"_meta":{"traceparent":7}}"#).is_none());
        assert!(TraceContext::from_params_meta(r#"{"traceparent":"x"}"#).is_none());
        assert!(TraceContext::from_params_meta(r#"["traceparent"]"#).is_none());
        assert!(TraceContext::from_params_meta(r#"{"a":1}"#).is_none());
    }

    #[test]
    fn the_context_goes_into_params_meta() {
        let cx = TraceContext::parse(TP, Some("a=1")).unwrap();
        let put = |p: Option<&str>| cx.put_in_params_meta(p.map(str::to_owned));
        let back = |text: Option<String>| TraceContext::from_params_meta(&text.unwrap()).unwrap();
        assert_eq!(back(put(None)), cx);
        let with_meta = put(Some(r#"{"name":"t","_meta":{"progressToken":7}}"#)).unwrap();
        assert!(with_meta.contains(r#""progressToken":7"#), "{with_meta}");
        assert_eq!(back(Some(with_meta)), cx);
        assert_eq!(put(Some("[1,2]")).as_deref(), Some("[1,2]"));
        assert_eq!(
            put(Some(r#"{"_meta":3}"#)).as_deref(),
            Some(r#"{"_meta":3}"#)
        );
        let theirs = r#"{"_meta":{"traceparent":"mine"}}"#;
        assert_eq!(put(Some(theirs)).as_deref(), Some(theirs));
    }

    #[test]
    fn outgoing_traces_are_taken_once_and_bounded() {
        let table = OutgoingTraces::new();
        let cx = TraceContext::parse(TP, None).unwrap();
        for id in 0..(MAX_OUTGOING as u64 + 5) {
            table.put(id, cx.clone());
        }
        assert!(table.0.lock().unwrap().len() <= MAX_OUTGOING);
        let last = MAX_OUTGOING as u64 + 4;
        assert_eq!(table.take(&last.to_string()), Some(cx));
        assert_eq!(table.take(&last.to_string()), None);
        assert_eq!(table.take("\"x\""), None);
    }

    proptest::proptest! {
        /// Any text: parsed or refused, never a panic; what parses prints back as the same
        /// trace (version 00 text round-trips exactly).
        #[test]
        fn any_text_parses_or_is_refused(text in ".{0,300}", state in proptest::option::of(".{0,600}")) {
            if let Ok(cx) = TraceContext::parse(&text, state.as_deref()) {
                let again = TraceContext::parse(&cx.traceparent(), cx.tracestate()).unwrap();
                proptest::prop_assert_eq!(&again, &cx);
                proptest::prop_assert!(cx.tracestate().is_none_or(|s| s.len() <= MAX_TRACESTATE));
            }
            let _ = TraceContext::from_params_meta(&text);
        }

        /// Valid values made from their parts parse to those parts; one flipped byte is
        /// refused or still parses to a valid context, never a panic.
        #[test]
        fn built_values_parse(trace in proptest::array::uniform16(proptest::num::u8::ANY),
                              span in proptest::array::uniform8(proptest::num::u8::ANY),
                              flags in proptest::num::u8::ANY,
                              at in 0usize..55, byte in proptest::num::u8::ANY) {
            let mut text = String::from("00-");
            push_hex(&mut text, &trace);
            text.push('-');
            push_hex(&mut text, &span);
            text.push('-');
            push_hex(&mut text, &[flags]);
            let parsed = TraceContext::parse(&text, None);
            if trace == [0; 16] || span == [0; 8] {
                proptest::prop_assert_eq!(parsed, Err(TraceContextError::ZeroId));
            } else {
                let cx = parsed.unwrap();
                proptest::prop_assert_eq!((cx.trace_id(), cx.span_id(), cx.flags()), (trace, span, flags));
            }
            let mut bytes = text.into_bytes();
            bytes[at] = byte;
            if let Ok(flipped) = std::str::from_utf8(&bytes) {
                let _ = TraceContext::parse(flipped, None);
            }
        }
    }
}
