//! The server: a subscription to the request topics whose messages the service layer's
//! `MessageAnswers` answers, each answer published to the topic its request names.

use std::time::Duration;

use rpcwire_service::MessageAnswers;
use rpcwire_tokio::Builder;
use rumqttc::v5::mqttbytes::v5::{LastWill, Publish, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::MqttOptions;

use crate::{MqttError, Subscribed, MQTT};

/// The topic level of the reply convention for MQTT 3.1.1 peers, which have no Response
/// Topic: a request published on `TOPIC/reply/R` (`R` one or more levels) is answered on `R`.
pub const REPLY_LEVEL: &str = "reply";

/// The retained payload of the status topic while the server is connected.
pub const ONLINE: &[u8] = b"online";

/// The retained payload of the status topic once the server is gone (its last will, which the
/// broker publishes when the connection is lost without a clean disconnect).
pub const OFFLINE: &[u8] = b"offline";

/// Bytes a request's packet may hold besides its body (fixed header, topic, properties).
const PACKET_ROOM: usize = 64 << 10;

/// Where and how a [`Builder`]'s service is served on MQTT ([`serve`](MqttServer::serve)):
/// see the [crate docs](crate).
///
/// Limits: the builder's (the largest body, `max_frame`, answered with Invalid Request past
/// it, and a packet larger than that by more than 64 KiB is never sent by the broker: the
/// connection's MQTT 5 Maximum Packet Size; the batch size; the service's handler
/// concurrency), and `concurrency`: messages answered at once, past which the server reads no
/// further message (the broker holds them).
#[derive(Debug, Clone)]
pub struct MqttServer {
    /// The request topic (MQTT 5 requests; `TOPIC/reply/...` for MQTT 3.1.1 ones).
    pub topic: String,
    /// A shared subscription's group: each message goes to one server of the group.
    pub group: Option<String>,
    /// The QoS the requests are subscribed with (the most they are delivered with).
    pub request_qos: QoS,
    /// The QoS the answers are published with.
    pub answer_qos: QoS,
    /// A topic that holds, retained, [`ONLINE`] while the server is connected and
    /// [`OFFLINE`] (its last will) once it is not.
    pub status_topic: Option<String>,
    /// The most messages answered at once (at least 1).
    pub concurrency: usize,
    /// How long one message's answer may take: past it, its handlers are dropped and each of
    /// its requests is answered with `TIMED_OUT` (-32096).
    pub timeout: Duration,
    /// The pause before connecting again after the connection is lost.
    pub reconnect_after: Duration,
}

impl MqttServer {
    /// Serves on `topic`, alone, requests and answers at QoS 0, no status topic, 256 messages
    /// at once, 30 s an answer.
    pub fn new(topic: impl Into<String>) -> Self {
        MqttServer {
            topic: topic.into(),
            group: None,
            request_qos: QoS::AtMostOnce,
            answer_qos: QoS::AtMostOnce,
            status_topic: None,
            concurrency: 256,
            timeout: Duration::from_secs(30),
            reconnect_after: Duration::from_secs(1),
        }
    }

    /// The subscription's filters: the request topic and the MQTT 3.1.1 convention's, in the
    /// shared group if there is one.
    pub fn filters(&self) -> [String; 2] {
        let shared = |t: String| match &self.group {
            Some(group) => format!("$share/{group}/{t}"),
            None => t,
        };
        let reply = format!("{}/{REPLY_LEVEL}/#", self.topic);
        [shared(self.topic.clone()), shared(reply)]
    }

    /// Connects with `options` (the broker, the client id, keep-alive, credentials, session
    /// expiry: the server sets the last will and the maximum packet size) and answers the
    /// requests with `builder`'s service, connecting again whenever the connection is lost
    /// (subscribing again when the broker kept no session). Fails when the first connection
    /// or subscription fails, or the broker later refuses one.
    pub async fn serve(self, mut options: MqttOptions, builder: Builder) -> Result<(), MqttError> {
        let packet = builder.config().max_frame.saturating_add(PACKET_ROOM);
        options.set_max_packet_size(Some(u32::try_from(packet).unwrap_or(u32::MAX)));
        if let Some(status) = &self.status_topic {
            options.set_last_will(LastWill::new(status, OFFLINE, QoS::AtLeastOnce, true, None));
        }
        // Room for every answer in flight: a reply never waits for the loop below, which may
        // be waiting for one of them to finish.
        let concurrency = self.concurrency.max(1);
        let (service, config) = (builder.service_ref(), builder.config());
        let answers = MessageAnswers::anonymous(service, config, MQTT, concurrency, self.timeout);
        let status = self.status_topic.clone();
        let (qos, pause) = (self.request_qos, self.reconnect_after);
        let (filters, capacity) = (self.filters(), concurrency + 16);
        let (mqtt, mut subscribed) =
            Subscribed::connect(options, capacity, filters.to_vec(), qos, status, pause).await?;
        let served = async {
            while let Some(publish) = subscribed.next().await? {
                // At the limit, the next message waits in the broker's hands.
                let slot = answers.slot().await;
                let (mqtt, qos) = (mqtt.clone(), self.answer_qos);
                let to = reply_topic(&self.topic, &publish);
                let correlation = publish.properties.and_then(|p| p.correlation_data);
                let reply = move |answer: Vec<u8>| async move {
                    if let Some(to) = to.filter(|_| !answer.is_empty()) {
                        let properties = PublishProperties {
                            correlation_data: correlation,
                            ..PublishProperties::default()
                        };
                        let sent = mqtt.publish_with_properties(to, qos, false, answer, properties);
                        if let Err(e) = sent.await {
                            tracing::debug!(error = %e, "MQTT answer not sent");
                        }
                    }
                };
                answers.answer(slot, publish.payload, reply).await;
            }
            Ok(())
        };
        // The drain: no further request (one that arrives before the broker has the
        // unsubscription is refused with `SHUTTING_DOWN`), then `offline` and a DISCONNECT.
        let stop = async {
            for filter in &filters {
                mqtt.unsubscribe(filter).await?;
            }
            Ok(())
        };
        let leave = async {
            if let Some(status) = &self.status_topic {
                mqtt.publish(status, QoS::AtLeastOnce, true, OFFLINE)
                    .await?;
            }
            mqtt.disconnect().await
        };
        let shutdown = builder.service_ref().shutdown_ref();
        answers.serve_draining(shutdown, served, stop, leave).await
    }
}

/// Where the answer to `publish`, received on a subscription of `served`, goes: its MQTT 5
/// Response Topic, else the topic named by the MQTT 3.1.1 convention (`served/reply/R` is
/// answered on `R`); `None` when it names none (its answer, if any, is dropped).
pub fn reply_topic(served: &str, publish: &Publish) -> Option<String> {
    let named = publish
        .properties
        .as_ref()
        .and_then(|p| p.response_topic.clone());
    let topic = std::str::from_utf8(&publish.topic).ok()?;
    let convention = || {
        let rest = topic.strip_prefix(served)?.strip_prefix('/')?;
        let to = rest.strip_prefix(REPLY_LEVEL)?.strip_prefix('/')?;
        (!to.is_empty()).then(|| to.to_owned())
    };
    named.or_else(convention)
}
