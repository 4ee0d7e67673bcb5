//! The names on the Streamable HTTP wire that the server's modules share: which revision it
//! speaks ([`Mode`]), its header names, and the notification a handler sends to have its
//! request's stream closed.

/// A notification a handler sends (`ctx.peer().notify(CLOSE_STREAM, ())`) to have its
/// request's event stream closed now, in session mode: the request goes on, and the client
/// (told where it was by the stream's event ids) gets the rest with a GET and
/// `Last-Event-ID` (SSE polling). Never forwarded to the client.
pub const CLOSE_STREAM: &str = "rpcwire/closeStream";

/// The revision the stateless mode speaks.
pub use crate::STATELESS_VERSION;
/// The session header (session mode).
pub const HEADER_SESSION_ID: &str = "mcp-session-id";
/// The protocol revision header.
pub const HEADER_PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// The method header (stateless mode): the body's `method`.
pub const HEADER_METHOD: &str = "mcp-method";
/// The target header (stateless mode): `params.name` of `tools/call` and `prompts/get`,
/// `params.uri` of `resources/read`, `resources/subscribe` and `resources/unsubscribe`.
pub const HEADER_NAME: &str = "mcp-name";

/// Which Streamable HTTP revision the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Sessions (2025-03-26 to 2025-11-25): `Mcp-Session-Id`, GET stream, DELETE.
    Sessions,
    /// Stateless (2026-07-28): no sessions, `Mcp-Method` / `Mcp-Name`, GET and DELETE 405.
    Stateless,
}

impl Mode {
    /// The revisions a server in this mode speaks, as its `server/discover` lists them: a
    /// session server every revision (it takes 2026-07-28 requests too, POSTs with no session
    /// id that name it), a stateless one 2026-07-28 only.
    ///
    /// ```
    /// use rpcwire_mcp::http::Mode;
    /// assert_eq!(Mode::Stateless.versions(), ["2026-07-28"]);
    /// assert_eq!(Mode::Sessions.versions().last(), Some(&"2026-07-28"));
    /// assert!(Mode::Sessions.versions().contains(&"2025-11-25"));
    /// ```
    pub const fn versions(self) -> &'static [&'static str] {
        match self {
            Mode::Sessions => &crate::SUPPORTED_VERSIONS,
            Mode::Stateless => &crate::tokio::revision::DISCOVERABLE_VERSIONS,
        }
    }
}
