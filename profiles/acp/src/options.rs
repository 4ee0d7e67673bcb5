//! The connection settings both sides share: newline framing, the message size limit, the
//! request cancellation notification, and timeouts.

use std::time::Duration;

use rpcwire_tokio::{Builder, Framing};

/// ACP's request cancellation notification (`$/cancel_request`, params `{"requestId": id}`).
pub const CANCEL_REQUEST: &str = "$/cancel_request";

/// The error code of a request answered after a `$/cancel_request` (LSP's `RequestCancelled`).
pub const REQUEST_CANCELLED: i32 = -32800;

/// Settings of an ACP connection (agent or client side).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AcpOptions {
    /// The largest message, in bytes, either way (default 8 MiB). An inbound line over it is
    /// answered Invalid Request (when it is a request) and skipped, the connection goes on; an
    /// outbound one fails its call with [`CallError::TooLarge`](rpcwire_tokio::CallError::TooLarge).
    pub max_message: usize,
    /// The timeout of short requests: `initialize`, `authenticate`, `session/new`,
    /// `session/load`, `fs/*`, `terminal/*` except `terminal/wait_for_exit` (default 30 s).
    /// A prompt turn and a permission request wait as long as the connection lives: they end
    /// by an answer, a cancellation, or the peer's exit.
    pub request_timeout: Duration,
    /// How long an agent's prompt turn may run on after a cancellation before it is dropped
    /// and answered anyway (default 5 s): a turn that ignores the cancellation never holds
    /// the client up.
    pub cancel_grace: Duration,
    /// How many `session/update` notifications a client buffers for a prompt turn nobody
    /// reads (default 4 096). Past it, updates are dropped and a warning is logged.
    pub max_buffered_updates: usize,
    /// Whether an agent's server connects the MCP servers a client gives in `session/new`,
    /// `session/load` and `session/resume` (feature `mcp`; default true): stdio servers are
    /// started, Streamable HTTP ones connected (and `mcpCapabilities.http` advertised), their
    /// tools listed for [`SessionHandle::mcp`](crate::SessionHandle::mcp). Each request to
    /// them is bounded by [`request_timeout`](AcpOptions::request_timeout); one that fails is
    /// left out with a warning.
    #[cfg(feature = "mcp")]
    pub connect_mcp_servers: bool,
}

impl Default for AcpOptions {
    fn default() -> Self {
        AcpOptions {
            max_message: 8 << 20,
            request_timeout: Duration::from_secs(30),
            cancel_grace: Duration::from_secs(5),
            max_buffered_updates: 4096,
            #[cfg(feature = "mcp")]
            connect_mcp_servers: true,
        }
    }
}

impl AcpOptions {
    /// The default settings.
    pub fn new() -> Self {
        AcpOptions::default()
    }

    /// Sets [`max_message`](AcpOptions::max_message).
    pub fn max_message(mut self, bytes: usize) -> Self {
        self.max_message = bytes;
        self
    }

    /// Sets [`request_timeout`](AcpOptions::request_timeout).
    pub fn request_timeout(mut self, timeout: Duration) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// Sets [`cancel_grace`](AcpOptions::cancel_grace).
    pub fn cancel_grace(mut self, grace: Duration) -> Self {
        self.cancel_grace = grace;
        self
    }

    /// Sets [`max_buffered_updates`](AcpOptions::max_buffered_updates).
    pub fn max_buffered_updates(mut self, updates: usize) -> Self {
        self.max_buffered_updates = updates;
        self
    }

    /// Sets [`connect_mcp_servers`](AcpOptions::connect_mcp_servers).
    #[cfg(feature = "mcp")]
    pub fn connect_mcp_servers(mut self, connect: bool) -> Self {
        self.connect_mcp_servers = connect;
        self
    }

    /// An `rpcwire-tokio` [`Builder`] configured for ACP: one compact JSON text per line, no
    /// batches (ACP has none), `$/cancel_request` both ways with cancelled requests still
    /// answered (-32800, or the method's own cancelled result), no default call timeout
    /// (prompt turns are long; short requests set their own).
    pub fn builder(&self) -> Builder {
        Builder::new()
            .framing(Framing::Line)
            .max_frame(self.max_message)
            .batches(false)
            .request_timeout(None)
            .service(
                rpcwire_tokio::Service::client_only()
                    .cancel_notification(CANCEL_REQUEST, "requestId")
                    .answer_cancelled(true),
            )
    }
}
