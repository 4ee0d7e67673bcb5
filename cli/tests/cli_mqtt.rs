//! `rpcwire serve --mqtt` and `rpcwire call --mqtt` against a real `mosquitto` on loopback:
//! the MQTT Python client (`paho-mqtt`) sending the specification's examples over MQTT 5
//! (Response Topic and Correlation Data) and over MQTT 3.1.1 (the reply-topic convention, to
//! the demo service and to a TCP device behind `rpcwire bridge`),
//! `rpcwire call --mqtt`, and the server's last will.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::process::Stdio;
use std::time::Duration;

use rpcwire_mqtt::rumqttc::v5::mqttbytes::v5::Packet;
use rpcwire_mqtt::rumqttc::v5::mqttbytes::QoS;
use rpcwire_mqtt::rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rpcwire_mqtt::MqttClient;
use rpcwire_tests::brokers::Mosquitto;
use rpcwire_tokio::Builder;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_rpcwire");

/// `rpcwire serve --mqtt URL --topic demo --group workers --status-topic demo/status`, once
/// it answers.
async fn server(broker: &Mosquitto) -> Child {
    let child = Command::new(BIN)
        .args(["serve", "--mqtt", &broker.url(), "--topic", "demo"])
        .args(["--group", "workers", "--status-topic", "demo/status"])
        .env("RPCWIRE_THREADS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("rpcwire starts");
    let options = MqttOptions::new("probe", "127.0.0.1", broker.port);
    let probe = MqttClient::new("demo")
        .start(options, Builder::new())
        .await
        .expect("connects");
    for _ in 0..100 {
        let call = probe.client().call_with_timeout::<_, serde_json::Value>(
            "rpc.discover",
            (),
            Duration::from_millis(200),
        );
        if call.await.is_ok() {
            return child;
        }
    }
    panic!("rpcwire serve --mqtt never answered");
}

/// The Python client: each example sent as raw bytes, over MQTT 5 (`v5`: a Response Topic and
/// Correlation Data, which must come back) or MQTT 3.1.1 (`v311`: published on
/// `demo/reply/<its reply topic>`); its answer (or `null` when none came within 500 ms)
/// printed as one JSON line.
const PY_CLIENT: &str = r#"
import json, queue, sys
import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

port, topic, path, version = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
examples = json.load(open(path))
v5 = version == "v5"
reply = "py/" + version + "/answers"
answers, subscribed = queue.Queue(), queue.Queue()
client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="py-" + version,
                     protocol=mqtt.MQTTv5 if v5 else mqtt.MQTTv311)
client.on_message = lambda c, u, msg: answers.put(msg)
client.on_subscribe = lambda c, u, mid, codes, props: subscribed.put(codes)
client.connect("127.0.0.1", port)
client.loop_start()
client.subscribe(reply, qos=1)
subscribed.get(timeout=5)
for n, request in enumerate(examples):
    correlation = b"corr-%d" % n
    if v5:
        props = Properties(PacketTypes.PUBLISH)
        props.ResponseTopic = reply
        props.CorrelationData = correlation
        client.publish(topic, request.encode(), qos=1, properties=props).wait_for_publish(5)
    else:
        client.publish(topic + "/reply/" + reply, request.encode(), qos=1).wait_for_publish(5)
    try:
        msg = answers.get(timeout=0.5)
    except queue.Empty:
        print("null")
        continue
    assert msg.topic == reply, msg.topic
    if v5:
        got = getattr(msg.properties, "CorrelationData", None)
        assert got == correlation, (got, correlation)
    print(json.dumps(msg.payload.decode()))
client.loop_stop()
client.disconnect()
"#;

async fn paho_gets_the_specifications_answers(version: &str) {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let Some(python) = rpcwire_tests::interop::venv_python("brokers", "paho.mqtt.client") else {
        return;
    };
    let _server = server(&broker).await;
    let examples = rpcwire_demo::spec::SPEC_EXAMPLES;
    let requests: Vec<&str> = examples.iter().map(|e| e.request).collect();
    let answers = paho(&python, broker.port, "demo", &requests, version).await;
    assert_eq!(answers.len(), examples.len(), "{answers:?}");
    for (example, answer) in examples.iter().zip(answers) {
        match (example.response, answer) {
            (None, None) => {}
            (Some(expected), Some(got)) => assert_eq!(
                rpcwire_tests::normalize(&got),
                rpcwire_tests::normalize(expected),
                "{}",
                example.name
            ),
            (expected, got) => panic!("{}: expected {expected:?}, got {got:?}", example.name),
        }
    }
}

/// Runs [`PY_CLIENT`] with `python` against the service on `topic` over `version` (`v5` or
/// `v311`): the answer to each of `requests`, `None` where none came.
async fn paho(
    python: &std::path::Path,
    port: u16,
    topic: &str,
    requests: &[&str],
    version: &str,
) -> Vec<Option<String>> {
    let dir = std::env::temp_dir().join(format!(
        "rpcwire-mqtt-py-{}-{topic}-{version}",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("examples.json");
    std::fs::write(&path, serde_json::to_vec(requests).unwrap()).unwrap();
    let script = dir.join("client.py");
    std::fs::write(&script, PY_CLIENT).unwrap();
    let port = port.to_string();
    let out = Command::new(python)
        .arg(&script)
        .args([port.as_str(), topic])
        .arg(&path)
        .arg(version)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("ends")
        .expect("runs");
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_mqtt_5_gets_the_specifications_answers() {
    paho_gets_the_specifications_answers("v5").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paho_mqtt_3_1_1_gets_the_specifications_answers() {
    paho_gets_the_specifications_answers("v311").await;
}

/// `rpcwire call --mqtt` gets the answer; the server's status topic says `online`, then
/// `offline` once the process is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rpcwire_call_over_mqtt_and_the_servers_last_will() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let mut server = server(&broker).await;
    let out = Command::new(BIN)
        .args([
            "call",
            "--mqtt",
            &broker.url(),
            "--topic",
            "demo",
            "subtract",
            "[42,23]",
        ])
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("ends")
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
    let (mqtt, mut events) =
        AsyncClient::new(MqttOptions::new("watcher", "127.0.0.1", broker.port), 8);
    mqtt.subscribe("demo/status", QoS::AtLeastOnce)
        .await
        .expect("queued");
    let mut next_status = async || loop {
        match events.poll().await.expect("connected") {
            Event::Incoming(Packet::Publish(p)) => return p.payload,
            _ => continue,
        }
    };
    let online = tokio::time::timeout(Duration::from_secs(5), next_status())
        .await
        .expect("retained");
    assert_eq!(online, "online");
    server.kill().await.expect("killed");
    let offline = tokio::time::timeout(Duration::from_secs(5), next_status())
        .await
        .expect("the will");
    assert_eq!(offline, "offline");
}

/// SIGTERM drains `rpcwire serve --mqtt`: the `sleep` call under way is answered, the status
/// topic says `offline` (published by the server: it disconnects cleanly) and the process
/// exits 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_serve_mqtt() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let mut server = server(&broker).await;
    let options = MqttOptions::new("drain-caller", "127.0.0.1", broker.port);
    let caller = MqttClient::new("demo")
        .start(options, Builder::new())
        .await
        .expect("connects");
    let client = caller.client().clone();
    let sleep = tokio::spawn(async move {
        let params = serde_json::json!({"ms": 800});
        client.call::<_, serde_json::Value>("sleep", params).await
    });
    // The call is under way (the server has it) before the signal.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let pid = server.id().expect("running").to_string();
    let killed = Command::new("kill").args(["-TERM", &pid]).status().await;
    assert!(killed.expect("kill runs").success());
    let answer = tokio::time::timeout(Duration::from_secs(5), sleep)
        .await
        .expect("answered in time")
        .expect("joined");
    assert_eq!(
        answer.expect("answered during the drain"),
        serde_json::Value::Null
    );
    let status = tokio::time::timeout(Duration::from_secs(10), server.wait())
        .await
        .expect("exits")
        .expect("waited");
    assert!(status.success(), "{status:?}");
    let (mqtt, mut events) =
        AsyncClient::new(MqttOptions::new("watcher", "127.0.0.1", broker.port), 8);
    mqtt.subscribe("demo/status", QoS::AtLeastOnce)
        .await
        .expect("queued");
    let retained = async {
        loop {
            if let Event::Incoming(Packet::Publish(p)) = events.poll().await.expect("connected") {
                return p.payload;
            }
        }
    };
    let retained = tokio::time::timeout(Duration::from_secs(5), retained).await;
    assert_eq!(retained.expect("retained"), "offline");
}

/// `rpcwire serve --mqtt --session-expiry 30 --client-id ID`: killed, and started again with
/// the same client id, the server gets the QoS 1 request published while it was gone (kept
/// in its session by the broker) and answers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_persistent_session_keeps_the_requests_of_a_restart() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let start = || {
        Command::new(BIN)
            .args(["serve", "--mqtt", &broker.url(), "--topic", "kept"])
            .args(["--session-expiry", "30", "--client-id", "kept-server"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("rpcwire starts")
    };
    let mut first = start();
    let options = MqttOptions::new("kept-caller", "127.0.0.1", broker.port);
    let client = MqttClient {
        qos: QoS::AtLeastOnce,
        ..MqttClient::new("kept")
    };
    let caller = client
        .start(options, Builder::new())
        .await
        .expect("connects");
    let mut ready = false;
    for _ in 0..100 {
        let call = caller.client().call_with_timeout::<_, i64>(
            "subtract",
            [3, 1],
            Duration::from_millis(200),
        );
        if call.await.is_ok() {
            ready = true;
            break;
        }
    }
    assert!(ready, "rpcwire serve --mqtt never answered");
    first.kill().await.expect("killed");
    let client = caller.client().clone();
    let call = tokio::spawn(async move {
        let call =
            client.call_with_timeout::<_, i64>("subtract", [42, 23], Duration::from_secs(10));
        call.await
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(!call.is_finished(), "answered while no server ran");
    let _second = start();
    let answer = call.await.expect("joined");
    assert_eq!(answer.expect("answered after the restart"), 19);
}

/// `rpcwire bridge --tcp ADDR --mqtt URL --topic dev`: a TCP device (here `rpcwire serve
/// --tcp`, the demo service) answers `rpcwire call --mqtt`, its errors passed back as it sent
/// them; the bridge's status topic says `offline` once the bridge is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tcp_device_behind_rpcwire_bridge_answers_over_mqtt() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let addr = format!("127.0.0.1:{}", rpcwire_tests::brokers::free_port());
    let _device = Command::new(BIN)
        .args(["serve", "--tcp", &addr])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the device starts");
    for _ in 0..200 {
        if tokio::net::TcpStream::connect(&addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut bridge = Command::new(BIN)
        .args([
            "bridge",
            "--tcp",
            &addr,
            "--mqtt",
            &broker.url(),
            "--topic",
            "dev",
        ])
        .args(["--status-topic", "dev/status"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the bridge starts");
    let options = MqttOptions::new("probe", "127.0.0.1", broker.port);
    let probe = MqttClient::new("dev")
        .start(options, Builder::new())
        .await
        .expect("connects");
    let mut answered = None;
    for _ in 0..100 {
        let call = probe.client().call_with_timeout::<_, i64>(
            "subtract",
            [42, 23],
            Duration::from_millis(200),
        );
        if let Ok(n) = call.await {
            answered = Some(n);
            break;
        }
    }
    assert_eq!(answered, Some(19), "the bridge never answered");
    let out = Command::new(BIN)
        .args([
            "call",
            "--mqtt",
            &broker.url(),
            "--topic",
            "dev",
            "subtract",
            "[5,3]",
        ])
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), out)
        .await
        .expect("ends")
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "2");
    // The device's own error comes back as it sent it.
    let missing = probe
        .client()
        .call::<_, i64>("no_such_method", ())
        .await
        .expect_err("an error");
    assert_eq!(missing.rpc().map(|e| e.code), Some(-32601), "{missing:?}");
    // An MQTT 3.1.1 caller (paho), by the reply-topic convention: a call answered with the
    // caller's own id, a notification with nothing, the device's own error passed back.
    if let Some(python) = rpcwire_tests::interop::venv_python("brokers", "paho.mqtt.client") {
        let requests = [
            r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":"v311-1"}"#,
            r#"{"jsonrpc":"2.0","method":"update","params":[1,2,3,4,5]}"#,
            r#"{"jsonrpc":"2.0","method":"no_such_method","id":7}"#,
        ];
        let answers = paho(&python, broker.port, "dev", &requests, "v311").await;
        let answers: Vec<Option<serde_json::Value>> = answers
            .iter()
            .map(|a| a.as_deref().map(|a| serde_json::from_str(a).unwrap()))
            .collect();
        let subtracted = serde_json::json!({"jsonrpc": "2.0", "result": 19, "id": "v311-1"});
        assert_eq!(answers[0], Some(subtracted), "{answers:?}");
        assert_eq!(answers[1], None, "a notification is not answered");
        let missing = answers[2].as_ref().expect("an error answer");
        assert_eq!(missing["error"]["code"], -32601, "{missing}");
        assert_eq!(missing["id"], 7);
    }
    let (mqtt, mut events) =
        AsyncClient::new(MqttOptions::new("watcher", "127.0.0.1", broker.port), 8);
    mqtt.subscribe("dev/status", QoS::AtLeastOnce)
        .await
        .expect("queued");
    let mut next_status = async || loop {
        if let Event::Incoming(Packet::Publish(p)) = events.poll().await.expect("connected") {
            return p.payload;
        }
    };
    let online = tokio::time::timeout(Duration::from_secs(5), next_status())
        .await
        .expect("retained");
    assert_eq!(online, "online");
    bridge.kill().await.expect("killed");
    let offline = tokio::time::timeout(Duration::from_secs(5), next_status())
        .await
        .expect("the will");
    assert_eq!(offline, "offline");
}

/// `rpcwire bridge --tcp ADDR --mqtt URL` in front of a fake device (this test, on a TCP
/// socket), checked as the stdio bridge's own tests check it: garbage, an oversize line, an
/// invalid message and an answer to no call from the device are dropped (the waiting call
/// gets the device's real answer); the device's boot notification fails the call waiting on
/// it at once with the stdio bridge's error (-32000, `data.reason` "device_reset"), long
/// before `--timeout`; the device closing its link ends the bridge (exit 3) and its status
/// topic goes `offline`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_mqtt_bridge_drops_device_garbage_and_fails_calls_on_a_reset() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let bridge = Command::new(BIN)
        .args(["bridge", "--tcp", &addr, "--mqtt", &broker.url()])
        .args(["--topic", "fake", "--status-topic", "fake/status"])
        .args(["--timeout", "30", "--max-frame", "1024"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the bridge starts");
    let (device, _) = tokio::time::timeout(Duration::from_secs(10), listener.accept())
        .await
        .expect("the bridge connects")
        .unwrap();
    let (device_in, mut device_out) = device.into_split();
    let mut device_in = BufReader::new(device_in).lines();
    let mut next_request = async || {
        let line = tokio::time::timeout(Duration::from_secs(10), device_in.next_line())
            .await
            .expect("a request reaches the device")
            .unwrap()
            .expect("the link is open");
        serde_json::from_str::<serde_json::Value>(&line).unwrap()
    };

    // Online once the bridge has subscribed: requests published after it are seen.
    let (mqtt, mut events) = AsyncClient::new(
        MqttOptions::new("fake-watcher", "127.0.0.1", broker.port),
        8,
    );
    mqtt.subscribe("fake/status", QoS::AtLeastOnce)
        .await
        .expect("queued");
    let mut next_status = async || loop {
        if let Event::Incoming(Packet::Publish(p)) = events.poll().await.expect("connected") {
            return p.payload;
        }
    };
    let online = tokio::time::timeout(Duration::from_secs(10), next_status())
        .await
        .expect("online");
    assert_eq!(online, "online");
    let options = MqttOptions::new("fake-probe", "127.0.0.1", broker.port);
    let probe = MqttClient::new("fake")
        .start(options, Builder::new())
        .await
        .expect("connects");

    // Garbage before the answer: dropped, the call gets the answer.
    let client = probe.client().clone();
    let call = tokio::spawn(async move {
        client
            .call_with_timeout::<_, i64>("subtract", [42, 23], Duration::from_secs(20))
            .await
    });
    let request = next_request().await;
    assert_eq!(
        (&request["method"], &request["params"]),
        (&serde_json::json!("subtract"), &serde_json::json!([42, 23]))
    );
    let mut junk = b"\x00\xff\xfe}{ garbage from a glitching UART\n".to_vec();
    junk.extend_from_slice(
        format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"n\",\"params\":[\"{}\"]}}\n",
            "x".repeat(2000)
        )
        .as_bytes(),
    );
    junk.extend_from_slice(
        b"{\"x\":1}\n{\"jsonrpc\":\"2.0\",\"result\":7,\"id\":\"nobody-asked\"}\n",
    );
    let answer = serde_json::json!({"jsonrpc": "2.0", "result": 19, "id": request["id"]});
    junk.extend_from_slice(format!("{answer}\n").as_bytes());
    device_out.write_all(&junk).await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("answered")
        .unwrap();
    assert_eq!(answered.expect("the device's answer"), 19);

    // A reset while a call waits: the call fails at once, not at --timeout (30 s).
    let client = probe.client().clone();
    let started = std::time::Instant::now();
    let call = tokio::spawn(async move {
        client
            .call_with_timeout::<_, i64>("sum", [1, 2], Duration::from_secs(20))
            .await
    });
    assert_eq!(next_request().await["method"], "sum");
    device_out
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"booted\",\"params\":{\"firmware\":\"fake\"}}\n",
        )
        .await
        .unwrap();
    let failed = tokio::time::timeout(Duration::from_secs(10), call)
        .await
        .expect("failed in time")
        .unwrap()
        .expect_err("the device reset");
    let error = failed.rpc().unwrap_or_else(|| panic!("{failed:?}"));
    let data: serde_json::Value =
        serde_json::from_str(error.data.as_ref().expect("data").get()).unwrap();
    assert_eq!(
        (error.code, error.message.as_str(), &data["reason"]),
        (
            -32000,
            "the device reset before answering",
            &serde_json::json!("device_reset")
        )
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );

    // The device link closes: the bridge ends (exit 3), the broker publishes its last will.
    drop(device_out);
    drop(device_in);
    let out = tokio::time::timeout(Duration::from_secs(10), bridge.wait_with_output())
        .await
        .expect("the bridge ends")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let offline = tokio::time::timeout(Duration::from_secs(10), next_status())
        .await
        .expect("the will");
    assert_eq!(offline, "offline");
    for report in [
        "dropped a garbled line",
        "over --max-frame 1024",
        "dropped an invalid message from the device",
        "no waiting call (id \"nobody-asked\"",
        "the device reset (boot notification {\"firmware\":\"fake\"})",
        "1 calls were waiting: failed them",
    ] {
        assert!(stderr.contains(report), "{report:?} not in:\n{stderr}");
    }
}
