//! The transports of this crate, as callers'
//! [`Caller::transport`](rpcwire_service::Caller::transport) names them.

use rpcwire_telemetry::Transport;

/// An HTTP request (a POST, or an event stream).
pub const HTTP: Transport = Transport::new("http", "tcp");
/// A WebSocket connection.
pub const WEBSOCKET: Transport = Transport::new("websocket", "tcp");
/// The in-memory connection behind a server's event streams (an [`EventHub`]'s): the
/// server's own, [internal](Transport::internal), not counted as a client connection.
///
/// [`EventHub`]: crate::profile::EventHub
pub const EVENT_STREAM: Transport = Transport::new("event-stream", "pipe").internal();
