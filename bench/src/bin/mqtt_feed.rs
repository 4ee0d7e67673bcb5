//! The load generator of the `mqtt` bench and `callgrind-mqtt.sh`: W1 calls (`subtract
//! [42,23]`, answer 19, every answer checked) as MQTT 5 requests (a Response Topic of the
//! connection's own and Correlation Data, QoS 0) from CONNS connections with INFLIGHT requests
//! under way on each, CALLS in all.
//!
//! Usage: `mqtt-feed HOST PORT TOPIC CALLS CONNS INFLIGHT`; prints `CALLS SECONDS` on stdout,
//! or fails (exit 1) on a wrong answer or when no answer came for `MQTT_FEED_STALL_MS`
//! milliseconds (default 10 000: QoS 0 messages published before the server subscribed are
//! lost, so this is also how a caller sees no server is there yet).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rumqttc::v5::mqttbytes::QoS;
use rumqttc::v5::{AsyncClient, Event, MqttOptions};

const W1: &[u8] = br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;

type Failure = Box<dyn std::error::Error + Send + Sync>;

fn main() -> Result<(), Failure> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [host, port, topic, calls, conns, inflight] = args.as_slice() else {
        return Err("usage: mqtt-feed HOST PORT TOPIC CALLS CONNS INFLIGHT".into());
    };
    let (port, calls, conns, inflight): (u16, u64, usize, u64) = (
        port.parse()?,
        calls.parse()?,
        conns.parse()?,
        inflight.parse()?,
    );
    let stall = std::env::var("MQTT_FEED_STALL_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(Duration::from_secs(10), Duration::from_millis);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let left = Arc::new(AtomicU64::new(calls));
        let mut ready = Vec::new();
        for i in 0..conns {
            ready.push(connect(host, port, topic, i).await?);
        }
        let started = Instant::now();
        let mut tasks = tokio::task::JoinSet::new();
        for (mqtt, events, reply) in ready {
            let (topic, left) = (topic.clone(), Arc::clone(&left));
            tasks.spawn(drive(mqtt, events, topic, reply, left, inflight, stall));
        }
        while let Some(done) = tasks.join_next().await {
            done??;
        }
        println!("{calls} {}", started.elapsed().as_secs_f64());
        Ok(())
    })
}

/// A connection subscribed to a reply topic of its own (returned), once the broker says so.
async fn connect(
    host: &str,
    port: u16,
    topic: &str,
    i: usize,
) -> Result<(AsyncClient, rumqttc::v5::EventLoop, String), Failure> {
    let id = format!("mqtt-feed-{}-{i}", std::process::id());
    let reply = format!("{topic}/answers/{id}");
    let mut options = MqttOptions::new(id, host, port);
    options.set_keep_alive(Duration::from_secs(30));
    let (mqtt, mut events) = AsyncClient::new(options, 1024);
    mqtt.subscribe(reply.as_str(), QoS::AtMostOnce).await?;
    loop {
        if let Event::Incoming(Packet::SubAck(_)) = events.poll().await? {
            return Ok((mqtt, events, reply));
        }
    }
}

/// Keeps `inflight` requests under way on one connection while `left` calls remain, checking
/// every answer.
async fn drive(
    mqtt: AsyncClient,
    mut events: rumqttc::v5::EventLoop,
    topic: String,
    reply: String,
    left: Arc<AtomicU64>,
    inflight: u64,
    stall: Duration,
) -> Result<(), Failure> {
    let take = || {
        left.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    };
    let mut sequence = 0u64;
    let mut send = |mqtt: &AsyncClient| {
        sequence += 1;
        let properties = PublishProperties {
            response_topic: Some(reply.clone()),
            correlation_data: Some(sequence.to_be_bytes().to_vec().into()),
            ..PublishProperties::default()
        };
        mqtt.try_publish_with_properties(topic.as_str(), QoS::AtMostOnce, false, W1, properties)
            .map_err(Box::new)
    };
    let mut under_way = 0u64;
    while under_way < inflight && take() {
        send(&mqtt)?;
        under_way += 1;
    }
    while under_way > 0 {
        let event = tokio::time::timeout(stall, events.poll()).await;
        let event = event.map_err(|_| format!("no answer for {stall:?}"))??;
        if let Event::Incoming(Packet::Publish(answer)) = event {
            if !answer.payload.windows(11).any(|w| w == br#""result":19"#) {
                return Err(format!("wrong answer: {:?}", answer.payload).into());
            }
            under_way -= 1;
            if take() {
                send(&mqtt)?;
                under_way += 1;
            }
        }
    }
    let _ = mqtt.try_disconnect();
    let _ = tokio::time::timeout(Duration::from_secs(1), events.poll()).await;
    Ok(())
}
