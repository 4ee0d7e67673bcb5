//! The 2026-07-28 revision's per-request rules without a heap, shared by the no_std
//! [`Server`](crate::Server) and the std server (`tokio::revision` re-exports these): which
//! requests are of that revision (their `_meta` names it), what their `_meta` must hold, and
//! the methods the revision removed.

use rpcwire::wire::RawJson;

use crate::{member, methods, ProtocolVersion};

/// The stateless revision: no `initialize`, each request names it in `_meta`.
pub const STATELESS_VERSION: &str = "2026-07-28";

/// Every revision a server that speaks both the session revisions and 2026-07-28 (over
/// stdio, or a UART) lists in `server/discover`'s `supportedVersions`, oldest first.
pub const SUPPORTED_VERSIONS: [&str; 5] = [
    ProtocolVersion::V2024_11_05.as_str(),
    ProtocolVersion::V2025_03_26.as_str(),
    ProtocolVersion::V2025_06_18.as_str(),
    ProtocolVersion::V2025_11_25.as_str(),
    STATELESS_VERSION,
];

/// Methods of the session revisions that 2026-07-28 removed: a request of that revision
/// naming one is answered Method not found.
pub const REMOVED_METHODS: [&str; 5] = [
    methods::INITIALIZE,
    methods::PING,
    methods::LOGGING_SET_LEVEL,
    "resources/subscribe",
    "resources/unsubscribe",
];

/// What is wrong with a 2026-07-28 request's `_meta`; answered Invalid params (-32602) with
/// [`message`](MetaProblem::message), as the specification asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum MetaProblem {
    /// No `_meta` at all.
    Missing,
    /// `_meta` is not an object.
    NotAnObject,
    /// No `io.modelcontextprotocol/protocolVersion` string.
    NoProtocolVersion,
    /// No `io.modelcontextprotocol/clientCapabilities` object.
    NoClientCapabilities,
}

impl MetaProblem {
    /// The error's message.
    pub const fn message(self) -> &'static str {
        match self {
            MetaProblem::Missing => "Invalid params: _meta is required",
            MetaProblem::NotAnObject => "Invalid params: _meta must be an object",
            MetaProblem::NoProtocolVersion => {
                "Invalid params: _meta lacks io.modelcontextprotocol/protocolVersion"
            }
            MetaProblem::NoClientCapabilities => {
                "Invalid params: _meta lacks io.modelcontextprotocol/clientCapabilities"
            }
        }
    }
}

/// Which revision a request is of, as its `_meta` says ([`classify`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RequestRevision<'a> {
    /// Its `_meta` has neither of the 2026-07-28 keys, or names a session revision: the
    /// request belongs to the connection's `initialize` session.
    Session,
    /// A complete 2026-07-28 request: no handshake needed.
    Stateless,
    /// A 2026-07-28 request (its `_meta` has one of that revision's keys) whose `_meta` is
    /// incomplete: Invalid params.
    Invalid(MetaProblem),
    /// `_meta` names a revision this crate does not speak (the JSON string, quotes
    /// included): `UnsupportedProtocolVersionError` (-32022).
    Unsupported(RawJson<'a>),
}

/// Reads a request's `_meta` for its revision: zero-copy, no heap.
///
/// ```
/// use rpcwire::wire::RawJson;
/// use rpcwire_mcp::{classify, MetaProblem, RequestRevision};
/// let p = |s| Some(RawJson::parse(s, 8).unwrap());
/// assert_eq!(classify(p(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
///     "io.modelcontextprotocol/clientCapabilities":{}}}"#)), RequestRevision::Stateless);
/// assert_eq!(classify(p(r#"{"name":"x","_meta":{"progressToken":1}}"#)), RequestRevision::Session);
/// assert_eq!(classify(None), RequestRevision::Session);
/// assert_eq!(classify(p(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}"#)),
///     RequestRevision::Invalid(MetaProblem::NoClientCapabilities));
/// assert!(matches!(classify(p(r#"{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01",
///     "io.modelcontextprotocol/clientCapabilities":{}}}"#)), RequestRevision::Unsupported(_)));
/// ```
pub fn classify(params: Option<RawJson<'_>>) -> RequestRevision<'_> {
    let Some(meta) = params.and_then(|p| member(p, "_meta")) else {
        return RequestRevision::Session;
    };
    if !meta.is_object() {
        return RequestRevision::Invalid(MetaProblem::NotAnObject);
    }
    let version = member(meta, methods::META_PROTOCOL_VERSION);
    let caps = member(meta, methods::META_CLIENT_CAPABILITIES);
    let (raw, name) = match (version, caps) {
        (None, None) => return RequestRevision::Session,
        (None, Some(_)) => return RequestRevision::Invalid(MetaProblem::NoProtocolVersion),
        (Some(v), _) => match v.as_json_str() {
            Some(name) => (v, name),
            None => return RequestRevision::Invalid(MetaProblem::NoProtocolVersion),
        },
    };
    let name_bytes = name.escaped_bytes();
    if name_bytes == STATELESS_VERSION.as_bytes() {
        match caps {
            Some(c) if c.is_object() => RequestRevision::Stateless,
            _ => RequestRevision::Invalid(MetaProblem::NoClientCapabilities),
        }
    } else if ProtocolVersion::from_bytes(name_bytes).is_some() {
        RequestRevision::Session
    } else {
        RequestRevision::Unsupported(raw)
    }
}

/// True for a method 2026-07-28 removed ([`REMOVED_METHODS`]), by its name's bytes.
pub fn is_removed(method: &[u8]) -> bool {
    REMOVED_METHODS.iter().any(|m| m.as_bytes() == method)
}
