//! JSON-RPC 2.0 over [MQTT](https://mqtt.org), on the `rumqttc` client (MQTT 5).
//!
//! - [`MqttServer`] serves a [`Router`](rpcwire_tokio::Router) (any
//!   [`Builder`](rpcwire_tokio::Builder)'s service) on a topic, alone or in a shared
//!   subscription group (`$share/GROUP/...`: N instances share the load). Each MQTT message is
//!   one JSON-RPC message (a call, a notification or a batch), answered as the specification
//!   says (nothing for notifications) on the message's MQTT 5 Response Topic with its
//!   Correlation Data, or, from MQTT 3.1.1 peers, on the topic the request's own topic names
//!   ([`REPLY_LEVEL`]: a request published on `TOPIC/reply/R` is answered on `R`). The server
//!   may keep a retained status topic, `online` while it serves and `offline` (its last will)
//!   once it is gone.
//! - [`MqttClient`] calls such a service with the whole of [`Client`](rpcwire_tokio::Client)'s
//!   API (calls with deadlines, notifications, batches): requests carry its reply topic and
//!   correlation data; it also receives what the topics it listens to bring.
//!
//! The bodies run through the service layer (its [`MessageAnswers`](rpcwire_service::MessageAnswers)
//! on the server, a `rpcwire-tokio` connection on the client): every protocol rule, limit and
//! policy holds as on any other transport.
//!
//! ```no_run
//! use rpcwire_mqtt::rumqttc::v5::MqttOptions;
//! use rpcwire_mqtt::{MqttClient, MqttServer};
//! use rpcwire_tokio::{Builder, Router, RpcError};
//!
//! # #[tokio::main]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
//! let server = MqttServer { group: Some("math".into()), ..MqttServer::new("math") };
//! let options = MqttOptions::new("math-1", "127.0.0.1", 1883);
//! tokio::spawn(server.serve(options, Builder::new().router(router)));
//!
//! let options = MqttOptions::new("caller-1", "127.0.0.1", 1883);
//! let session = MqttClient::new("math").start(options, Builder::new()).await?;
//! let sum: i64 = session.client().call("add", [1, 2]).await?;
//! assert_eq!(sum, 3);
//! # Ok(()) }
//! ```

mod client;
mod server;

use rumqttc::v5::mqttbytes::v5::{Filter, Packet, Publish, SubscribeReasonCode::Success};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{ConnectionError, Event};

/// The MQTT client this crate is built on (its options: broker, client id, keep-alive,
/// credentials, session expiry).
pub use rumqttc;

pub use client::MqttClient;
pub use server::{reply_topic, MqttServer, OFFLINE, ONLINE, REPLY_LEVEL};

/// A message over MQTT, as callers' [`Caller::transport`](rpcwire_tokio::Caller::transport)
/// names it.
pub const MQTT: rpcwire_tokio::Transport = rpcwire_tokio::Transport::new("mqtt", "tcp");

/// The most QoS 1 and 2 publishes of a connection awaiting the broker's acknowledgement when
/// its `MqttOptions` set no limit (`set_outgoing_inflight_upper_limit`): `rumqttc` allocates a
/// slot for each up front, 65 536 by default (13.5 MiB a connection, measured), and the
/// broker's Receive Maximum bounds them anyway (Mosquitto's default: 20).
pub const MAX_INFLIGHT: u16 = 256;

/// Why a server or a client stopped or could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MqttError {
    /// The broker refused the connection (bad credentials, a client id it does not accept).
    #[error("the broker refused the connection: {0}")]
    Connect(#[source] rumqttc::v5::ConnectionError),
    /// The broker refused a subscription (`$share` groups unsupported, not authorized).
    #[error("the broker refused the subscription to {0}")]
    Subscribe(String),
    /// The client's connection ended before it was ready.
    #[error("the MQTT connection ended: {0}")]
    Ended(#[from] rumqttc::v5::ClientError),
}

/// A connection and its subscriptions, made again whenever they are lost: what the server
/// and the client read their messages from.
struct Subscribed {
    events: rumqttc::v5::EventLoop,
    mqtt: rumqttc::v5::AsyncClient,
    filters: Vec<String>,
    qos: QoS,
    /// A retained [`ONLINE`] published there at each connection (its last will is set).
    status: Option<String>,
    /// The pause before connecting again.
    pause: std::time::Duration,
    /// The broker has acknowledged the subscriptions once.
    ready: bool,
}

impl Subscribed {
    /// Connects with `options` (a request channel of `capacity`), subscribes to `filters` at
    /// `qos`, and returns once the broker has acknowledged the subscriptions.
    async fn connect(
        mut options: rumqttc::v5::MqttOptions,
        capacity: usize,
        filters: Vec<String>,
        qos: QoS,
        status: Option<String>,
        pause: std::time::Duration,
    ) -> Result<(rumqttc::v5::AsyncClient, Subscribed), MqttError> {
        let inflight = options.get_outgoing_inflight_upper_limit();
        options.set_outgoing_inflight_upper_limit(inflight.unwrap_or(MAX_INFLIGHT));
        let (mqtt, events) = rumqttc::v5::AsyncClient::new(options, capacity);
        let mut subscribed = Subscribed {
            events,
            mqtt: mqtt.clone(),
            filters,
            qos,
            status,
            pause,
            ready: false,
        };
        while !subscribed.ready {
            subscribed.next().await?;
        }
        Ok((mqtt, subscribed))
    }

    /// The next message of the subscriptions; `None` when the subscriptions are first
    /// acknowledged, and once the client has disconnected.
    /// Connects again after the connection is lost, after the pause, and subscribes again when
    /// the broker kept no session. Fails when the broker refuses the connection or a
    /// subscription, and on any failure before the subscriptions were first acknowledged.
    async fn next(&mut self) -> Result<Option<Publish>, MqttError> {
        loop {
            match self.events.poll().await {
                Ok(Event::Incoming(Packet::Publish(publish))) => return Ok(Some(publish)),
                Ok(Event::Incoming(Packet::ConnAck(ack))) => {
                    if !ack.session_present || !self.ready {
                        let filters = self.filters.iter();
                        let filters = filters.map(|f| Filter::new(f.clone(), self.qos));
                        self.mqtt.subscribe_many(filters).await?;
                    }
                    if let Some(status) = &self.status {
                        self.mqtt
                            .publish(status, QoS::AtLeastOnce, true, ONLINE)
                            .await?;
                    }
                    // A session the broker kept: what it kept for it (QoS 1 and 2 messages
                    // published while no connection was there) comes right after the ConnAck,
                    // before the SubAck, and must not be taken for start-up traffic. Ready now
                    // (the session's subscriptions are there); the SubAck is still checked.
                    if ack.session_present && !std::mem::replace(&mut self.ready, true) {
                        return Ok(None);
                    }
                }
                Ok(Event::Incoming(Packet::SubAck(ack))) => {
                    let codes = &ack.return_codes;
                    let refused = codes.iter().position(|c| !matches!(c, Success(_)));
                    if let Some(i) = refused {
                        let filter = self.filters.get(i).cloned().unwrap_or_default();
                        return Err(MqttError::Subscribe(filter));
                    }
                    if !self.ready {
                        self.ready = true;
                        return Ok(None);
                    }
                }
                Ok(Event::Outgoing(rumqttc::Outgoing::Disconnect)) => return Ok(None),
                Ok(_) => {}
                Err(
                    e @ (ConnectionError::ConnectionRefused(_) | ConnectionError::RequestsDone),
                ) => return Err(MqttError::Connect(e)),
                Err(e) if !self.ready => return Err(MqttError::Connect(e)),
                Err(error) => {
                    tracing::debug!(%error, "MQTT connection lost; connecting again");
                    tokio::time::sleep(self.pause).await;
                }
            }
        }
    }
}
