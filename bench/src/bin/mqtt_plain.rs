//! The reference of the `mqtt` bench: a plain `rumqttc` (MQTT 5) request/reply loop that
//! answers `subtract` with serde_json (the request parsed into a struct, the answer serialized
//! from one), published to the request's Response Topic with its Correlation Data, QoS 0 both
//! ways, on one worker thread, each message answered in the event loop itself.
//!
//! Usage: `mqtt-plain HOST PORT TOPIC`; prints `ready` on stderr once subscribed.

use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Request<'a> {
    #[serde(borrow)]
    method: &'a str,
    params: (i64, i64),
    #[serde(borrow)]
    id: &'a RawValue,
}

#[derive(Serialize)]
struct Answer<'a> {
    jsonrpc: &'static str,
    result: i64,
    id: &'a RawValue,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [host, port, topic] = args.as_slice() else {
        return Err("usage: mqtt-plain HOST PORT TOPIC".into());
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let id = format!("mqtt-plain-{}", std::process::id());
        let mut options = MqttOptions::new(id, host.as_str(), port.parse()?);
        options.set_keep_alive(std::time::Duration::from_secs(30));
        // Room for every answer of the bench's 128 requests under way, as rpcwire's server.
        let (mqtt, mut events) = AsyncClient::new(options, 1024);
        mqtt.subscribe(topic.as_str(), QoS::AtMostOnce).await?;
        loop {
            match events.poll().await? {
                Event::Incoming(Packet::SubAck(_)) => eprintln!("ready"),
                Event::Incoming(Packet::Publish(publish)) => {
                    let Some(properties) = publish.properties else {
                        continue;
                    };
                    let Some(to) = properties.response_topic else {
                        continue;
                    };
                    let Ok(request) = serde_json::from_slice::<Request<'_>>(&publish.payload)
                    else {
                        continue;
                    };
                    if request.method != "subtract" {
                        continue;
                    }
                    let (a, b) = request.params;
                    let answer = Answer {
                        jsonrpc: "2.0",
                        result: a - b,
                        id: request.id,
                    };
                    let properties = PublishProperties {
                        correlation_data: properties.correlation_data,
                        ..PublishProperties::default()
                    };
                    let answer = serde_json::to_vec(&answer)?;
                    mqtt.publish_with_properties(to, QoS::AtMostOnce, false, answer, properties)
                        .await?;
                }
                _ => {}
            }
        }
    })
}
