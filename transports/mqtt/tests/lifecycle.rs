//! The server's life against a real `mosquitto` on loopback: a persistent session (MQTT 5
//! session expiry, clean start off) keeps the QoS 1 requests published while the server's
//! connection is down, within the interval and not after it; and the graceful shutdown
//! answers the calls under way, says `offline` and leaves.

#![allow(clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rpcwire_mqtt::rumqttc::v5::mqttbytes::v5::Packet;
use rpcwire_mqtt::rumqttc::v5::mqttbytes::QoS;
use rpcwire_mqtt::rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rpcwire_mqtt::{MqttClient, MqttServer, OFFLINE, ONLINE};
use rpcwire_service::Shutdown;
use rpcwire_tests::brokers::Mosquitto;
use rpcwire_tokio::{Builder, CallError, Router, RpcError, Session};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify};

fn options(id: &str, port: u16) -> MqttOptions {
    let mut options = MqttOptions::new(format!("{id}-{}", std::process::id()), "127.0.0.1", port);
    options.set_keep_alive(Duration::from_secs(5));
    options
}

/// A loopback TCP relay to the broker that the test cuts: every relayed connection is closed
/// (no DISCONNECT reaches the broker: the connection is lost) and new ones are closed as soon
/// as they are accepted, until it is restored.
struct Relay {
    port: u16,
    open: watch::Sender<bool>,
}

impl Relay {
    async fn to(broker: u16) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bound");
        let port = listener.local_addr().expect("an address").port();
        let (open, watching) = watch::channel(true);
        tokio::spawn(async move {
            while let Ok((mut inward, _)) = listener.accept().await {
                if !*watching.borrow() {
                    continue;
                }
                let Ok(mut outward) = TcpStream::connect(("127.0.0.1", broker)).await else {
                    continue;
                };
                let mut cut = watching.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inward, &mut outward) => {}
                        _ = cut.wait_for(|open| !open) => {}
                    }
                });
            }
        });
        Relay { port, open }
    }

    fn set(&self, open: bool) {
        self.open.send_replace(open);
    }
}

/// A server on topic `dev` behind `relay`, with a persistent session the broker keeps
/// `expiry` seconds, QoS 1 requests; `marks` counts the `mark` calls it ran.
fn persistent_server(relay: &Relay, expiry: u32, marks: Arc<AtomicUsize>) {
    let mut options = options("persistent-server", relay.port);
    options.set_clean_start(false);
    options.set_session_expiry_interval(Some(expiry));
    let server = MqttServer {
        request_qos: QoS::AtLeastOnce,
        reconnect_after: Duration::from_millis(100),
        ..MqttServer::new("dev")
    };
    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("mark", move |(): ()| {
            Ok::<_, RpcError>(marks.fetch_add(1, Ordering::SeqCst) + 1)
        });
    tokio::spawn(server.serve(options, Builder::new().router(router)));
}

/// A QoS 1 client of `dev`, once the server answers it.
async fn caller(broker: &Mosquitto) -> Session {
    let client = MqttClient {
        qos: QoS::AtLeastOnce,
        ..MqttClient::new("dev")
    };
    let session = client
        .start(options("caller", broker.port), Builder::new())
        .await
        .expect("starts");
    ready(&session).await;
    session
}

/// Returns once the server answers `session` (requests published before it subscribed are
/// lost).
async fn ready(session: &Session) {
    for _ in 0..100 {
        let call =
            session
                .client()
                .call_with_timeout::<_, i64>("add", [1, 2], Duration::from_millis(100));
        if call.await.is_ok() {
            return;
        }
    }
    panic!("the server never answered");
}

/// Cut within the session expiry interval: the request published meanwhile waits in the
/// server's session and is answered once the server is connected again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_sent_while_the_server_is_away_are_answered_within_the_session_expiry() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let relay = Relay::to(broker.port).await;
    let marks = Arc::new(AtomicUsize::new(0));
    persistent_server(&relay, 30, Arc::clone(&marks));
    let session = caller(&broker).await;
    relay.set(false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let client = session.client().clone();
    let call = tokio::spawn(async move {
        client
            .call_with_timeout::<_, usize>("mark", (), Duration::from_secs(10))
            .await
    });
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(!call.is_finished(), "answered while the server was away");
    assert_eq!(marks.load(Ordering::SeqCst), 0);
    relay.set(true);
    let answer = call.await.expect("joined");
    assert_eq!(answer.expect("answered after the reconnect"), 1);
}

/// Cut longer than the session expiry interval: the broker discards the session and the
/// request with it; the server comes back with a new session, the call ends at its deadline
/// with `CallError::Timeout`, and the request never runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_session_expiry_the_request_is_gone_and_the_deadline_ends_the_call() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let relay = Relay::to(broker.port).await;
    let marks = Arc::new(AtomicUsize::new(0));
    persistent_server(&relay, 1, Arc::clone(&marks));
    let session = caller(&broker).await;
    relay.set(false);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    let client = session.client().clone();
    let call = tokio::spawn(async move {
        client
            .call_with_timeout::<_, usize>("mark", (), Duration::from_secs(5))
            .await
    });
    // The broker expires sessions on its once-a-second sweep: 3 s is past a 1 s interval.
    tokio::time::sleep(Duration::from_secs(3)).await;
    relay.set(true);
    let answer = call.await.expect("joined");
    assert!(matches!(answer, Err(CallError::Timeout)), "{answer:?}");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(7),
        "{took:?}"
    );
    // The server is back (subscribed again on a new session) and the old request never ran.
    let again = session
        .client()
        .call_with_timeout::<_, usize>("mark", (), Duration::from_secs(5));
    assert_eq!(again.await.expect("answered"), 1);
    assert_eq!(marks.load(Ordering::SeqCst), 1);
}

/// A subscriber's first message on `topic` (its retained one, if any).
async fn retained(broker: &Mosquitto, topic: &str) -> Option<Vec<u8>> {
    let (mqtt, mut events) = AsyncClient::new(options("watcher", broker.port), 16);
    mqtt.subscribe(topic, QoS::AtLeastOnce)
        .await
        .expect("queued");
    let first = async {
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::Publish(p))) => return Some(p.payload.to_vec()),
                Ok(_) => {}
                Err(_) => return None,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(2), first)
        .await
        .ok()
        .flatten()
}

/// The shutdown's drain: the call under way is answered, no new request is taken, the status
/// topic says `offline` and `serve` returns.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_drain_answers_the_call_under_way_and_says_offline() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let shutdown = Shutdown::new(Duration::from_secs(10));
    let started = Arc::new(Notify::new());
    let running = Arc::clone(&started);
    let router = Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .method("slow", move |(): ()| {
            let running = Arc::clone(&running);
            async move {
                running.notify_one();
                tokio::time::sleep(Duration::from_millis(700)).await;
                Ok::<_, RpcError>(42)
            }
        });
    let builder = Builder::new()
        .router(router)
        .map_service(|s| s.shutdown(&shutdown));
    let server = MqttServer {
        status_topic: Some("dev/status".into()),
        ..MqttServer::new("dev")
    };
    let served = tokio::spawn(server.serve(options("draining-server", broker.port), builder));
    let session = MqttClient::new("dev")
        .start(options("caller", broker.port), Builder::new())
        .await
        .expect("starts");
    ready(&session).await;
    let client = session.client().clone();
    let slow = tokio::spawn(async move {
        client
            .call_with_timeout::<_, i64>("slow", (), Duration::from_secs(5))
            .await
    });
    tokio::time::timeout(Duration::from_secs(5), started.notified())
        .await
        .expect("the slow call runs");
    assert_eq!(
        retained(&broker, "dev/status").await.as_deref(),
        Some(ONLINE)
    );
    shutdown.trigger();
    let answer = slow.await.expect("joined");
    assert_eq!(answer.expect("answered during the drain"), 42);
    let ended = tokio::time::timeout(Duration::from_secs(5), served).await;
    ended
        .expect("serve returns")
        .expect("joined")
        .expect("a clean end");
    assert_eq!(
        retained(&broker, "dev/status").await.as_deref(),
        Some(OFFLINE)
    );
    let after =
        session
            .client()
            .call_with_timeout::<_, i64>("add", [1, 2], Duration::from_millis(500));
    assert!(
        matches!(after.await, Err(CallError::Timeout)),
        "nobody serves any more"
    );
}
