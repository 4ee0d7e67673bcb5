//! [`WsConfig`]: the WebSocket layer's limits and timings, and the tungstenite and driver
//! settings they translate to.

use std::time::Duration;

use rpcwire_tokio::{Builder, Framing};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;

/// Settings of the WebSocket layer (the JSON-RPC settings are the [`Builder`]'s).
#[derive(Clone, Debug)]
pub struct WsConfig {
    /// The largest inbound message (and frame) in bytes; larger ones close the connection
    /// with 1009. Also the driver's maximum frame. Default 4 MiB.
    pub max_message: usize,
    /// Send a ping after this long without hearing from the peer (`None`: never). Default
    /// 30 s.
    pub ping_interval: Option<Duration>,
    /// After a ping, how long the peer has to send anything (its pong) before the connection
    /// is dropped as dead. Default 20 s.
    pub pong_timeout: Duration,
    /// How long output may wait for a peer that does not read before the connection is
    /// dropped. Default 10 s.
    pub send_timeout: Duration,
    /// The read buffer each connection allocates (bytes, at least 256). Default 1 KiB: small,
    /// so that many connections fit (each holds it for its whole life); a larger message gets
    /// room of its size while it is read.
    pub read_buffer: usize,
    /// Output is gathered up to this many bytes before it is written to the socket (a flush
    /// writes at once). Default 16 KiB.
    pub write_buffer: usize,
    /// With [`WsServer::serve_tcp`](super::WsServer::serve_tcp): how long a connection may go
    /// without its upgrade request's whole head (from the moment it connects, or after an answer
    /// that was not an upgrade) before it is closed. Default 30 s.
    pub handshake_timeout: Duration,
    /// A connection whose caller's credential expires ([`Identity::expires`], a JWT's `exp`)
    /// is closed with 1008 (policy violation) this long after the expiry; nothing it sends
    /// after is answered. `None`: connections outlive their credentials. Default 0 s.
    ///
    /// [`Identity::expires`]: rpcwire_tokio::Identity::expires
    pub credential_leeway: Option<Duration>,
}

impl Default for WsConfig {
    fn default() -> Self {
        WsConfig {
            max_message: rpcwire_tokio::DEFAULT_MAX_FRAME,
            ping_interval: Some(Duration::from_secs(30)),
            pong_timeout: Duration::from_secs(20),
            send_timeout: Duration::from_secs(10),
            read_buffer: 1 << 10,
            write_buffer: 16 << 10,
            handshake_timeout: Duration::from_secs(30),
            credential_leeway: Some(Duration::ZERO),
        }
    }
}

impl WsConfig {
    /// The tungstenite settings these limits translate to.
    pub(super) fn tungstenite(&self) -> WebSocketConfig {
        WebSocketConfig::default()
            .read_buffer_size(self.read_buffer.max(256))
            .write_buffer_size(self.write_buffer)
            .max_message_size(Some(self.max_message))
            .max_frame_size(Some(self.max_message))
    }

    /// The driver settings that go with them: `Content-Length` framing between the adapter
    /// and the core, and the same maximum message.
    pub(super) fn driver(&self, builder: Builder) -> Builder {
        builder
            .framing(Framing::ContentLength)
            .max_frame(self.max_message)
    }
}
