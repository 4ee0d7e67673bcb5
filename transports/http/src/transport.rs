//! The transports of this crate, as callers'
//! [`Caller::transport`](rpcwire_service::Caller::transport) names them.

use rpcwire_telemetry::Transport;

/// An HTTP request (a POST, or an event stream).
pub const HTTP: Transport = Transport::new("http", "tcp");
/// A WebSocket connection.
pub const WEBSOCKET: Transport = Transport::new("websocket", "tcp");
