//! The MQTT transport against a real `mosquitto` on loopback: calls, notifications and
//! batches over MQTT 5, the reply convention of MQTT 3.1.1 devices, a shared subscription,
//! the limits at their edges, the deadlines, the last will, and a broker restart.

#![allow(clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use rpcwire_mqtt::rumqttc::v5::mqttbytes::v5::{Packet, PublishProperties};
use rpcwire_mqtt::rumqttc::v5::mqttbytes::QoS;
use rpcwire_mqtt::rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rpcwire_mqtt::{MqttClient, MqttServer, OFFLINE, ONLINE};
use rpcwire_service::TIMED_OUT;
use rpcwire_tests::brokers::Mosquitto;
use rpcwire_tokio::{Builder, CallError, Router, RpcError};
use serde_json::{json, Value};
use tokio::sync::mpsc;

static IDS: AtomicUsize = AtomicUsize::new(0);

fn options(broker: &Mosquitto) -> MqttOptions {
    let id = format!(
        "t{}-{}",
        std::process::id(),
        IDS.fetch_add(1, Ordering::SeqCst)
    );
    let mut options = MqttOptions::new(id, "127.0.0.1", broker.port);
    options.set_keep_alive(Duration::from_secs(5));
    options
}

fn router() -> Router {
    Router::new()
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("echo", |(s,): (String,)| Ok::<_, RpcError>(s))
        .method("hang", |(): ()| async {
            std::future::pending::<()>().await;
            Ok::<_, RpcError>(())
        })
}

/// A plain MQTT 5 client: what arrives on its subscriptions comes out of the receiver.
struct Raw {
    mqtt: AsyncClient,
    got: mpsc::Receiver<(String, Bytes, Option<Bytes>)>,
}

impl Raw {
    async fn connect(broker: &Mosquitto, subscribe: &[&str]) -> Raw {
        let (mqtt, mut events) = AsyncClient::new(options(broker), 64);
        for topic in subscribe {
            mqtt.subscribe(*topic, QoS::AtLeastOnce)
                .await
                .expect("queued");
        }
        let (tx, got) = mpsc::channel(64);
        let (ready_tx, ready) = tokio::sync::oneshot::channel();
        let mut ready_tx = Some(ready_tx);
        let mut acks = subscribe.len();
        tokio::spawn(async move {
            while let Ok(event) = events.poll().await {
                match event {
                    Event::Incoming(Packet::Publish(p)) => {
                        let topic = String::from_utf8_lossy(&p.topic).into_owned();
                        let correlation = p.properties.and_then(|p| p.correlation_data);
                        if tx.send((topic, p.payload, correlation)).await.is_err() {
                            return;
                        }
                    }
                    Event::Incoming(Packet::SubAck(_)) => acks = acks.saturating_sub(1),
                    _ => {}
                }
                if acks == 0 {
                    if let Some(ready) = ready_tx.take() {
                        let _ = ready.send(());
                    }
                }
            }
        });
        if subscribe.is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        } else {
            ready.await.expect("subscribed");
        }
        Raw { mqtt, got }
    }

    /// Publishes `body` on `topic` with `reply` as its Response Topic and `b"c1"` as its
    /// Correlation Data.
    async fn request(&self, topic: &str, reply: &str, body: &[u8]) {
        let properties = PublishProperties {
            response_topic: Some(reply.into()),
            correlation_data: Some(Bytes::from_static(b"c1")),
            ..PublishProperties::default()
        };
        let sent = self.mqtt.publish_with_properties(
            topic,
            QoS::AtLeastOnce,
            false,
            body.to_vec(),
            properties,
        );
        sent.await.expect("queued");
    }

    async fn next(&mut self, within: Duration) -> Option<(String, Bytes, Option<Bytes>)> {
        tokio::time::timeout(within, self.got.recv())
            .await
            .ok()
            .flatten()
    }
}

/// Starts a server with `server`'s settings and waits until it answers.
async fn serve(
    broker: &Mosquitto,
    server: MqttServer,
    builder: Builder,
) -> (Raw, tokio::task::JoinHandle<()>) {
    let topic = server.topic.clone();
    let task = tokio::spawn({
        let options = options(broker);
        async move {
            if let Err(e) = server.serve(options, builder).await {
                panic!("the server stopped: {e}");
            }
        }
    });
    let mut raw = Raw::connect(broker, &["probe/answers"]).await;
    for _ in 0..100 {
        let ping = br#"{"jsonrpc":"2.0","method":"rpc.discover","id":0}"#;
        raw.request(&topic, "probe/answers", ping).await;
        if raw.next(Duration::from_millis(100)).await.is_some() {
            // Answers to earlier probes arrive late: none is left for the test.
            while raw.next(Duration::from_millis(100)).await.is_some() {}
            return (raw, task);
        }
    }
    panic!("the server never answered");
}

async fn answer(raw: &mut Raw, topic: &str, body: &[u8]) -> Value {
    raw.request(topic, "probe/answers", body).await;
    let (_, payload, correlation) = raw.next(Duration::from_secs(5)).await.expect("an answer");
    assert_eq!(
        correlation.as_deref(),
        Some(&b"c1"[..]),
        "the correlation data comes back"
    );
    serde_json::from_slice(&payload).expect("JSON")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_notifications_and_batches_over_mqtt5() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let seen = Arc::new(AtomicUsize::new(0));
    let count = Arc::clone(&seen);
    let router = router().notification("seen", move |(n,): (usize,)| {
        count.fetch_add(n, Ordering::SeqCst);
        async {}
    });
    let (mut raw, _server) = serve(
        &broker,
        MqttServer::new("svc"),
        Builder::new().router(router),
    )
    .await;
    let session = MqttClient::new("svc")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let client = session.client();
    assert_eq!(
        client
            .call::<_, i64>("add", [40, 2])
            .await
            .expect("answered"),
        42
    );
    let mut batch = client.batch();
    batch.call("add", [1, 2]).expect("queued");
    batch.notify("seen", [5]).expect("queued");
    batch.call("nope", ()).expect("queued");
    let results = batch.send().await.expect("answered");
    assert_eq!(results.get::<i64>(0).expect("a result"), 3);
    let missing = results.get::<i64>(1).expect_err("no such method");
    assert_eq!(missing.rpc().map(|e| e.code), Some(-32601));
    client.notify("seen", [2]).await.expect("published");
    let until = Instant::now() + Duration::from_secs(5);
    while seen.load(Ordering::SeqCst) < 7 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        seen.load(Ordering::SeqCst),
        7,
        "both notifications ran once"
    );
    // A notification with a response topic still gets no answer.
    raw.request(
        "svc",
        "probe/answers",
        br#"{"jsonrpc":"2.0","method":"seen","params":[0]}"#,
    )
    .await;
    assert!(raw.next(Duration::from_millis(300)).await.is_none());
    // What a topic the client listens to brings reaches its router (a server's notifications).
    let (tx, mut rx) = mpsc::channel(4);
    let listener = Router::new().notification("tick", move |(n,): (u32,)| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(n).await;
        }
    });
    let listening = MqttClient {
        listen: vec!["svc/events".into()],
        ..MqttClient::new("svc")
    };
    let _listening = listening
        .start(options(&broker), Builder::new().router(listener))
        .await
        .expect("starts");
    let notifier = MqttClient::new("svc/events")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    notifier
        .client()
        .notify("tick", [9])
        .await
        .expect("published");
    let tick = tokio::time::timeout(Duration::from_secs(5), rx.recv()).await;
    assert_eq!(tick.expect("in time"), Some(9));
}

/// An MQTT 3.1.1 device has no Response Topic: it publishes on `TOPIC/reply/R` and is
/// answered on `R`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mqtt_3_1_1_device_is_answered_on_the_topic_its_request_names() {
    use rpcwire_mqtt::rumqttc::{
        self, AsyncClient as Client311, Event as Event311, MqttOptions as Options311,
    };
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let _server = serve(
        &broker,
        MqttServer::new("svc"),
        Builder::new().router(router()),
    )
    .await;
    let (mqtt, mut events) =
        Client311::new(Options311::new("device-311", "127.0.0.1", broker.port), 16);
    mqtt.subscribe("devices/7/answers", rumqttc::QoS::AtLeastOnce)
        .await
        .expect("queued");
    let (tx, mut got) = mpsc::channel(8);
    tokio::spawn(async move {
        while let Ok(event) = events.poll().await {
            if let Event311::Incoming(packet) = event {
                if tx.send(packet).await.is_err() {
                    return;
                }
            }
        }
    });
    assert!(next_311(&mut got).await.is_none(), "subscribed");
    let topic = "svc/reply/devices/7/answers";
    let body = r#"[{"jsonrpc":"2.0","method":"add","params":[2,3],"id":"a"},{"jsonrpc":"2.0","method":"add","params":[0,0]}]"#;
    mqtt.publish(topic, rumqttc::QoS::AtLeastOnce, false, body)
        .await
        .expect("queued");
    let answer = next_311(&mut got).await.expect("answered");
    assert_eq!(answer.topic, "devices/7/answers");
    let answer: Value = serde_json::from_slice(&answer.payload).expect("JSON");
    assert_eq!(answer, json!([{"jsonrpc": "2.0", "result": 5, "id": "a"}]));
}

/// The next publish, or `None` at a subscription's acknowledgement or after 5 s.
async fn next_311(
    got: &mut mpsc::Receiver<rpcwire_mqtt::rumqttc::Packet>,
) -> Option<rpcwire_mqtt::rumqttc::mqttbytes::v4::Publish> {
    use rpcwire_mqtt::rumqttc::Packet;
    let until = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        match tokio::time::timeout_at(until, got.recv()).await.ok()?? {
            Packet::Publish(p) => return Some(p),
            Packet::SubAck(_) => return None,
            _ => {}
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_largest_message_is_answered_and_one_byte_more_is_refused() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    const MAX: usize = 1024; // the smallest a builder takes
    let builder = Builder::new().router(router()).max_frame(MAX);
    let (mut raw, _server) = serve(&broker, MqttServer::new("limits"), builder).await;
    let frame = |pad: usize| {
        let x = "x".repeat(pad);
        format!(r#"{{"jsonrpc":"2.0","method":"echo","params":["{x}"],"id":1}}"#)
    };
    let pad = MAX - frame(0).len();
    assert_eq!(frame(pad).len(), MAX);
    let at_limit = answer(&mut raw, "limits", frame(pad).as_bytes()).await;
    assert_eq!(at_limit["result"], json!("x".repeat(pad)), "{at_limit}");
    let over = answer(&mut raw, "limits", frame(pad + 1).as_bytes()).await;
    assert_eq!(over["error"]["code"], json!(-32600), "{over}");
    assert_eq!(over["error"]["data"], json!("frame too large"), "{over}");
    // A packet past the server's Maximum Packet Size never reaches it (the broker drops it
    // for that client), and the server goes on serving.
    raw.request(
        "limits",
        "probe/answers",
        frame(MAX + (64 << 10)).as_bytes(),
    )
    .await;
    assert!(raw.next(Duration::from_millis(500)).await.is_none());
    let after = answer(
        &mut raw,
        "limits",
        br#"{"jsonrpc":"2.0","method":"add","params":[1,1],"id":2}"#,
    )
    .await;
    assert_eq!(after["result"], json!(2));
}

/// `concurrency` messages are answered at once, and not one more: the others wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_more_messages_than_the_limit_are_answered_at_once() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    const LIMIT: usize = 3;
    let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (r, m) = (Arc::clone(&running), Arc::clone(&most));
    let router = Router::new().method("work", move |(): ()| {
        let (r, m) = (Arc::clone(&r), Arc::clone(&m));
        async move {
            let now = r.fetch_add(1, Ordering::SeqCst) + 1;
            m.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(150)).await;
            r.fetch_sub(1, Ordering::SeqCst);
            Ok::<_, RpcError>(now)
        }
    });
    let server = MqttServer {
        concurrency: LIMIT,
        ..MqttServer::new("busy")
    };
    let _server = serve(&broker, server, Builder::new().router(router)).await;
    let session = MqttClient::new("busy")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let calls = (0..4 * LIMIT).map(|_| session.client().call::<_, usize>("work", ()));
    let started = Instant::now();
    for answer in futures_util::future::join_all(calls).await {
        assert!(answer.expect("answered") <= LIMIT);
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        LIMIT,
        "the limit is reached, never passed"
    );
    assert!(started.elapsed() >= Duration::from_millis(4 * 150 - 50));
}

/// The deadline ends a call: one the server takes too long for, one nobody serves; the
/// server's own timeout answers what takes too long.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_deadline_always_ends_a_call() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let session = MqttClient::new("nobody")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let started = Instant::now();
    let call =
        session
            .client()
            .call_with_timeout::<_, i64>("add", [1, 2], Duration::from_millis(300));
    assert!(matches!(call.await, Err(CallError::Timeout)));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let server = MqttServer {
        timeout: Duration::from_millis(200),
        ..MqttServer::new("slow")
    };
    let (mut raw, _server) = serve(&broker, server, Builder::new().router(router())).await;
    let slow = MqttClient::new("slow")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let started = Instant::now();
    let hang = slow
        .client()
        .call_with_timeout::<_, ()>("hang", (), Duration::from_millis(100));
    assert!(matches!(hang.await, Err(CallError::Timeout)));
    assert!(started.elapsed() < Duration::from_secs(1));
    let body = br#"[{"jsonrpc":"2.0","method":"hang","id":"a"},{"jsonrpc":"2.0","method":"hang"}]"#;
    let late = answer(&mut raw, "slow", body).await;
    assert_eq!(late[0]["error"]["code"], json!(TIMED_OUT), "{late}");
    assert_eq!(late[0]["id"], json!("a"));
    assert_eq!(late.as_array().map(Vec::len), Some(1));
}

/// Two servers in one shared subscription: every call answered exactly once, by both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_subscription_spreads_the_calls_over_its_servers() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let instance = |name: &'static str| {
        let router = Router::new().sync_method("who", move |(): ()| Ok::<_, RpcError>(name));
        let server = MqttServer {
            group: Some("workers".into()),
            ..MqttServer::new("shared")
        };
        (server, Builder::new().router(router))
    };
    let (a, b) = (instance("a"), instance("b"));
    let _a = serve(&broker, a.0, a.1).await;
    let _b = serve(&broker, b.0, b.1).await;
    let session = MqttClient::new("shared")
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let calls = (0..200).map(|_| session.client().call::<_, String>("who", ()));
    let answers = futures_util::future::join_all(calls).await;
    let by_a = answers
        .iter()
        .filter(|a| a.as_deref().ok() == Some("a"))
        .count();
    let by_b = answers
        .iter()
        .filter(|a| a.as_deref().ok() == Some("b"))
        .count();
    assert_eq!(by_a + by_b, 200, "every call answered once");
    assert!(by_a > 0 && by_b > 0, "a: {by_a}, b: {by_b}");
}

/// The status topic holds `online` while the server serves, `offline` once it is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_last_will_tells_the_server_is_gone() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let server = MqttServer {
        status_topic: Some("svc/status".into()),
        ..MqttServer::new("svc")
    };
    let (_raw, task) = serve(&broker, server, Builder::new().router(router())).await;
    let mut watcher = Raw::connect(&broker, &["svc/status"]).await;
    let (_, online, _) = watcher
        .next(Duration::from_secs(5))
        .await
        .expect("retained");
    assert_eq!(online, ONLINE);
    // Gone without a clean disconnect: its socket closes with the task.
    task.abort();
    let (_, offline, _) = watcher
        .next(Duration::from_secs(5))
        .await
        .expect("the will");
    assert_eq!(offline, OFFLINE);
}

/// A broker restart: the server and the client connect again and subscribe again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_ends_come_back_after_a_broker_restart() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let port = broker.port;
    let server = MqttServer {
        reconnect_after: Duration::from_millis(100),
        ..MqttServer::new("svc")
    };
    let _server = serve(&broker, server, Builder::new().router(router())).await;
    let client = MqttClient {
        reconnect_after: Duration::from_millis(100),
        ..MqttClient::new("svc")
    };
    let session = client
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    assert_eq!(
        session
            .client()
            .call::<_, i64>("add", [1, 2])
            .await
            .expect("answered"),
        3
    );
    drop(broker);
    let broker = Mosquitto::start_on(port).expect("starts again");
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let call =
            session
                .client()
                .call_with_timeout::<_, i64>("add", [2, 2], Duration::from_millis(300));
        match call.await {
            Ok(sum) => break assert_eq!(sum, 4),
            Err(CallError::Timeout) if Instant::now() < until => {}
            Err(e) => panic!("not answered after the restart: {e:?}"),
        }
    }
    drop(broker);
}

/// A client whose session has ended disconnects and stays disconnected: the broker's count of
/// connected clients (`$SYS`) goes back down and does not come up again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_ends_leaves_the_broker() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let mut watcher = Raw::connect(&broker, &["$SYS/broker/clients/connected"]).await;
    let mut connected = async |within| loop {
        let (_, count, _) = watcher.next(within).await.expect("a count every second");
        if let Ok(n) = std::str::from_utf8(&count).unwrap_or("").parse::<u32>() {
            return n;
        }
    };
    let client = MqttClient {
        reconnect_after: Duration::from_millis(100),
        ..MqttClient::new("svc")
    };
    let session = client
        .start(options(&broker), Builder::new())
        .await
        .expect("starts");
    let until = Instant::now() + Duration::from_secs(5);
    while connected(Duration::from_secs(3)).await != 2 {
        assert!(Instant::now() < until, "the client never counted");
    }
    drop(session);
    let until = Instant::now() + Duration::from_secs(5);
    while connected(Duration::from_secs(3)).await != 1 {
        assert!(Instant::now() < until, "the client never left");
    }
    // The broker says the count again only when it changes: nothing more within 2.5 s (a
    // client connecting again would make it 2 after 100 ms).
    let again = watcher.next(Duration::from_millis(2500)).await;
    assert!(again.is_none(), "{again:?}");
}
