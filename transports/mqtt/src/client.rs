//! The client: a `rpcwire-tokio` connection whose messages are published on the service's
//! topic (requests with a Response Topic and Correlation Data) and whose input is what
//! arrives on its reply topic and the topics it listens to.

use std::time::Duration;

use rpcwire::wire::classify::classify;
use rpcwire_tokio::{Builder, Session};
use rumqttc::v5::mqttbytes::v5::PublishProperties;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::MqttOptions;

use crate::{MqttError, Subscribed};

/// A client of a [`MqttServer`](crate::MqttServer)'s topic ([`start`](MqttClient::start)).
#[derive(Debug, Clone)]
pub struct MqttClient {
    /// The service's request topic.
    pub topic: String,
    /// The topic the answers come back on (the requests' Response Topic): one per client.
    pub reply_topic: String,
    /// The QoS of the requests and notifications published, and of the subscriptions.
    pub qos: QoS,
    /// Topics whose messages the client also receives (a server's notifications), handed to
    /// the builder's [`Router`](rpcwire_tokio::Router).
    pub listen: Vec<String>,
    /// The pause before connecting again after the connection is lost.
    pub reconnect_after: Duration,
}

impl MqttClient {
    /// A client of the service on `topic`, its answers on `TOPIC/answers/<random id>`, QoS 0.
    pub fn new(topic: impl Into<String>) -> Self {
        let topic = topic.into();
        let id = rpcwire_service::random_id("c").unwrap_or_else(|| std::process::id().to_string());
        MqttClient {
            reply_topic: format!("{topic}/answers/{id}"),
            topic,
            qos: QoS::AtMostOnce,
            listen: Vec::new(),
            reconnect_after: Duration::from_secs(1),
        }
    }

    /// Connects with `options`, subscribes, and starts a connection with `builder`'s settings
    /// (the calls' default deadline, the largest frame, a router for what the topics listened
    /// to bring) once the broker has acknowledged the subscriptions. A call's deadline ends
    /// it (`CallError::Timeout`), whatever the broker does; a lost connection is made again
    /// (subscribing again when the broker kept no session).
    pub async fn start(self, options: MqttOptions, builder: Builder) -> Result<Session, MqttError> {
        let mut filters = vec![self.reply_topic.clone()];
        filters.extend(self.listen);
        let (qos, pause) = (self.qos, self.reconnect_after);
        // Ready once subscribed: an answer published after this arrives.
        let (mqtt, mut subscribed) =
            Subscribed::connect(options, 64, filters, qos, None, pause).await?;
        let (session, messages) = builder.run_messages(64);
        let incoming = messages.incoming;
        tokio::spawn(async move {
            // Until the client disconnects (its connection ended) or the broker refuses it.
            while let Ok(Some(publish)) = subscribed.next().await {
                if !incoming.send(publish.payload).await {
                    break;
                }
            }
        });
        let mut outgoing = messages.outgoing;
        let (topic, reply_topic) = (self.topic, self.reply_topic);
        tokio::spawn(async move {
            let mut sequence = 0u64;
            while let Some(frame) = outgoing.recv().await {
                // Nothing to answer (notifications, answers to the server): no reply topic.
                let mut properties = PublishProperties::default();
                if !classify(&frame, usize::MAX).is_silent() {
                    sequence += 1;
                    properties.response_topic = Some(reply_topic.clone());
                    properties.correlation_data = Some(sequence.to_be_bytes().to_vec().into());
                }
                let sent = mqtt.publish_with_properties(&topic, qos, false, frame, properties);
                if let Err(e) = sent.await {
                    tracing::debug!(error = %e, "MQTT publish failed");
                }
            }
            // The connection ended: what it published last leaves, then the client goes.
            let _ = mqtt.disconnect().await;
        });
        Ok(session)
    }
}
