//! The transports of this crate, as callers'
//! [`Caller::transport`](rpcwire_service::Caller::transport) names them.

use rpcwire_telemetry::Transport;

/// An HTTP request (a POST, or an event stream): `network.protocol.name = http`, version 1.1
/// (a caller over HTTP/2 says so with `Caller::with_protocol_version`).
pub const HTTP: Transport = Transport::new("http", "tcp").over("http", "1.1");
/// A WebSocket connection (`network.protocol.name = websocket`, version 13: RFC 6455's).
pub const WEBSOCKET: Transport = Transport::new("websocket", "tcp").over("websocket", "13");
/// The in-memory connection behind a server's event streams (an [`EventHub`]'s): the
/// server's own, [internal](Transport::internal), not counted as a client connection.
///
/// [`EventHub`]: crate::profile::EventHub
pub const EVENT_STREAM: Transport = Transport::new("event-stream", "pipe").internal();
