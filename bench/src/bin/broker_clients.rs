//! The subject of the `broker_memory` bench: N idle clients in this process, each with a
//! broker connection of its own, and this process's RSS before and after them.
//!
//! KIND is one of `rpcwire-nats` (`async_nats::connect` and `rpcwire_nats::NatsClient::start`),
//! `nats` (`async_nats::connect` alone), `rpcwire-mqtt` (`rpcwire_mqtt::MqttClient::start`:
//! connected and subscribed to its reply topic) or `mqtt` (a `rumqttc` MQTT 5 client whose
//! event loop is polled in a task, subscribed to a reply topic of its own; `mqtt-256`: the
//! same with the outgoing in-flight limit `rpcwire_mqtt` sets, 256). Every client is
//! ready (its subscriptions acknowledged, or flushed to the NATS server) before the second
//! reading, and none is used after it.
//!
//! Usage: `broker-clients KIND URL N` (URL `nats://HOST:PORT`, or `HOST:PORT` for MQTT);
//! prints `N RSS_BEFORE_KIB RSS_AFTER_KIB` on stdout.

use std::time::Duration;

use rumqttc::v5::mqttbytes::v5::Packet;
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};

type Failure = Box<dyn std::error::Error + Send + Sync>;

/// This process's resident set, in KiB.
fn rss_kib() -> Result<u64, Failure> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
    let kib = line.and_then(|rest| rest.split_whitespace().next());
    Ok(kib.ok_or("no VmRSS in /proc/self/status")?.parse()?)
}

fn mqtt_options(address: &str, id: String) -> Result<MqttOptions, Failure> {
    let (host, port) = address.rsplit_once(':').ok_or("HOST:PORT")?;
    let mut options = MqttOptions::new(id, host, port.parse()?);
    options.set_keep_alive(Duration::from_secs(60));
    Ok(options)
}

/// Something each client keeps alive until the second reading.
enum Held {
    Session(#[allow(dead_code)] rpcwire_tokio::Session),
    Nats(#[allow(dead_code)] async_nats::Client),
    Mqtt(#[allow(dead_code)] AsyncClient),
}

async fn client(kind: &str, url: &str, i: usize) -> Result<Held, Failure> {
    let id = format!("idle-{}-{i}", std::process::id());
    let builder = rpcwire_tokio::Builder::new();
    Ok(match kind {
        "rpcwire-nats" => {
            let nats = async_nats::connect(url).await?;
            let client = rpcwire_nats::NatsClient::new("bench");
            Held::Session(client.start(nats, builder).await?)
        }
        "nats" => {
            let nats = async_nats::connect(url).await?;
            nats.flush().await?;
            Held::Nats(nats)
        }
        "rpcwire-mqtt" => {
            let client = rpcwire_mqtt::MqttClient::new("bench");
            Held::Session(client.start(mqtt_options(url, id)?, builder).await?)
        }
        "mqtt" | "mqtt-256" => {
            let reply = format!("bench/answers/{id}");
            let mut options = mqtt_options(url, id)?;
            if kind == "mqtt-256" {
                options.set_outgoing_inflight_upper_limit(rpcwire_mqtt::MAX_INFLIGHT);
            }
            let (mqtt, mut events) = AsyncClient::new(options, 64);
            mqtt.subscribe(reply, QoS::AtMostOnce).await?;
            loop {
                if let Event::Incoming(Packet::SubAck(_)) = events.poll().await? {
                    break;
                }
            }
            tokio::spawn(async move { while events.poll().await.is_ok() {} });
            Held::Mqtt(mqtt)
        }
        _ => return Err(format!("unknown kind {kind}").into()),
    })
}

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, url, n] = args.as_slice() else {
        return Err(
            "usage: broker-clients rpcwire-nats|nats|rpcwire-mqtt|mqtt|mqtt-256 URL N".into(),
        );
    };
    let n: usize = n.parse()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        // One client first: what every kind loads once (TLS roots, the runtime's first
        // allocations) is in the first reading, not in the growth.
        let _first = client(kind, url, n).await?;
        tokio::time::sleep(Duration::from_millis(200)).await;
        let before = rss_kib()?;
        let mut held = Vec::with_capacity(n);
        for i in 0..n {
            held.push(client(kind, url, i).await?);
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = rss_kib()?;
        println!("{n} {before} {after}");
        drop(held);
        Ok(())
    })
}
