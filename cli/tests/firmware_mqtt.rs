//! The demo firmware image (examples/firmware, `rpcwire-firmware`) running in qemu, served on
//! a real `mosquitto` by `rpcwire bridge --serial PTY --mqtt URL --topic fw`: the pty is one
//! end of a socat pair whose other end the test joins to qemu's UART0 (a TCP socket).
//!
//! - the MQTT Python client (`paho-mqtt`, MQTT 5: Response Topic and Correlation Data) calls
//!   the device (single calls, an unknown method, a batch with a notification) and
//!   `rpcwire call --mqtt` calls it too;
//! - on the way from the device the test puts a garbled line and an oversize line (over the
//!   bridge's `--max-frame 1024`) before every device frame: none reaches a caller, the bridge
//!   reports each on stderr;
//! - the device is reset while a call waits (the guest stops hearing the line, then qemu is
//!   restarted on the same pty): its boot notification fails the waiting call at once with the
//!   stdio bridge's error (-32000, `data.reason` "device_reset"), long before `--timeout`,
//!   and the rebooted device answers the next call;
//! - the bridge killed, the broker publishes `offline` on its status topic (its last will).
//!
//! Skips (printing `SKIPPED:`) when qemu, socat, the thumbv7m target, mosquitto or paho-mqtt
//! is missing, unless CI=true.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rpcwire_mqtt::rumqttc::v5::mqttbytes::v5::Packet;
use rpcwire_mqtt::rumqttc::v5::mqttbytes::QoS;
use rpcwire_mqtt::rumqttc::v5::{AsyncClient, Event, MqttOptions};
use rpcwire_mqtt::MqttClient;
use rpcwire_tests::brokers::Mosquitto;
use rpcwire_tests::firmware::{self, start_on_socket};
use rpcwire_tests::pty::socat_pair;
use rpcwire_tokio::Builder;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;
use tokio::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_rpcwire");

/// What goes on the line before every device frame: a garbled line and an oversize one.
fn junk() -> Vec<u8> {
    let mut junk = b"\x00\xff\xfe}{ garbage from a glitching UART \x1b[0m\n".to_vec();
    let big = format!(
        r#"{{"jsonrpc":"2.0","method":"log","params":["{}"]}}"#,
        "x".repeat(2000)
    );
    junk.extend_from_slice(big.as_bytes());
    junk.push(b'\n');
    junk
}

/// The pty's device end joined to the running qemu's UART: one thread copies the device's
/// lines to the pty (junk in front of each), one copies the pty to the current UART. The UART
/// can be taken away (bytes from the bridge are then lost, as on a device going down) and a
/// new qemu's put in its place.
struct Line {
    pty: std::fs::File,
    uart: Arc<Mutex<Option<TcpStream>>>,
    /// Bytes from the bridge lost while no UART was there.
    lost: Arc<AtomicUsize>,
    /// Junk lines put on the line.
    injected: Arc<AtomicUsize>,
    /// Device frames must wait until the bridge has the pty open.
    release: Arc<AtomicBool>,
}

impl Line {
    fn new(pty_path: &str) -> Line {
        let pty = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(pty_path)
            .expect("open the device end of the pty pair");
        let line = Line {
            pty,
            uart: Arc::new(Mutex::new(None)),
            lost: Arc::new(AtomicUsize::new(0)),
            injected: Arc::new(AtomicUsize::new(0)),
            release: Arc::new(AtomicBool::new(false)),
        };
        let (mut pty, uart, lost) = (
            line.pty.try_clone().unwrap(),
            Arc::clone(&line.uart),
            Arc::clone(&line.lost),
        );
        std::thread::spawn(move || {
            let mut buf = [0u8; 2048];
            loop {
                let k = match pty.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => k,
                };
                let mut uart = uart.lock().unwrap();
                let written = uart
                    .as_mut()
                    .is_some_and(|u| u.write_all(&buf[..k]).is_ok());
                if !written {
                    lost.fetch_add(k, Ordering::SeqCst);
                }
            }
        });
        line
    }

    /// Joins a (new) qemu's UART to the pty.
    fn attach(&self, uart: TcpStream) {
        *self.uart.lock().unwrap() = Some(uart.try_clone().unwrap());
        let (mut uart, mut pty) = (uart, self.pty.try_clone().unwrap());
        let (release, injected) = (Arc::clone(&self.release), Arc::clone(&self.injected));
        std::thread::spawn(move || {
            let mut pending = Vec::new();
            let mut buf = [0u8; 2048];
            loop {
                match uart.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(k) => pending.extend_from_slice(&buf[..k]),
                }
                while !release.load(Ordering::Acquire) {
                    std::thread::sleep(Duration::from_millis(10));
                }
                while let Some(nl) = pending.iter().position(|&b| b == b'\n') {
                    let mut out = junk();
                    injected.fetch_add(2, Ordering::Relaxed);
                    out.extend(pending.drain(..=nl));
                    if pty.write_all(&out).and_then(|()| pty.flush()).is_err() {
                        return;
                    }
                }
            }
        });
    }

    /// Takes the UART away: what the bridge sends is lost.
    fn detach(&self) {
        *self.uart.lock().unwrap() = None;
    }
}

/// paho-mqtt over MQTT 5: each request (argv[3], a JSON list of frames) published on the
/// topic with a Response Topic and Correlation Data; its answer (checked to carry the
/// correlation data back), or `null` when none came within 3 s, printed as one JSON line.
const PY_CLIENT: &str = r#"
import json, queue, sys
import paho.mqtt.client as mqtt
from paho.mqtt.packettypes import PacketTypes
from paho.mqtt.properties import Properties

port, topic, requests = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
reply = "py/fw/answers"
answers, subscribed = queue.Queue(), queue.Queue()
client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="py-fw", protocol=mqtt.MQTTv5)
client.on_message = lambda c, u, msg: answers.put(msg)
client.on_subscribe = lambda c, u, mid, codes, props: subscribed.put(codes)
client.connect("127.0.0.1", port)
client.loop_start()
client.subscribe(reply, qos=1)
subscribed.get(timeout=5)
for n, request in enumerate(requests):
    correlation = b"fw-%d" % n
    props = Properties(PacketTypes.PUBLISH)
    props.ResponseTopic = reply
    props.CorrelationData = correlation
    client.publish(topic, request.encode(), qos=1, properties=props).wait_for_publish(5)
    try:
        msg = answers.get(timeout=3)
    except queue.Empty:
        print("null", flush=True)
        continue
    got = getattr(msg.properties, "CorrelationData", None)
    assert got == correlation, (got, correlation)
    print(msg.payload.decode(), flush=True)
client.loop_stop()
client.disconnect()
"#;

/// The requests paho sends and the answers expected (`None`: no answer).
const EXCHANGES: &[(&str, Option<&str>)] = &[
    (
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
        Some(r#"{"jsonrpc":"2.0","result":19,"id":1}"#),
    ),
    (
        r#"{"jsonrpc":"2.0","method":"sum","params":[1,2,4],"id":"s"}"#,
        Some(r#"{"jsonrpc":"2.0","result":7,"id":"s"}"#),
    ),
    (
        r#"{"jsonrpc":"2.0","method":"echo","params":{"a":[1,"b"]},"id":3}"#,
        Some(r#"{"jsonrpc":"2.0","result":{"a":[1,"b"]},"id":3}"#),
    ),
    (
        r#"{"jsonrpc":"2.0","method":"notify_hello","params":[7]}"#,
        None,
    ),
    (
        r#"[{"jsonrpc":"2.0","method":"get_data","id":"g"},{"jsonrpc":"2.0","method":"notify_hello","params":[7]},{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":5}]"#,
        Some(
            r#"[{"jsonrpc":"2.0","result":["hello",5],"id":"g"},{"jsonrpc":"2.0","result":2,"id":5}]"#,
        ),
    ),
];

/// Lines of a child's stderr, collected as they come.
type Lines = Arc<Mutex<Vec<String>>>;

fn count(lines: &Lines, needle: &str) -> usize {
    let lines = lines.lock().unwrap();
    lines.iter().filter(|l| l.contains(needle)).count()
}

async fn wait_for(lines: &Lines, needle: &str, times: usize) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while count(lines, needle) < times {
        assert!(
            Instant::now() < deadline,
            "{needle:?} not seen {times} times in:\n{}",
            lines.lock().unwrap().join("\n")
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_firmware_behind_the_mqtt_bridge_answers_paho_and_rpcwire_call() {
    if !firmware::have_qemu() {
        return;
    }
    let Some(pair) = socat_pair() else { return };
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let Some(python) = rpcwire_tests::interop::venv_python("brokers", "paho.mqtt.client") else {
        return;
    };
    let Some(elf) = firmware::build("rpcwire-firmware") else {
        return;
    };
    let (device_end, host_end) = pair.ends.clone();
    let line = Line::new(&device_end);
    let (qemu, uart) = start_on_socket(&elf);
    let mut qemu = Some(qemu);
    line.attach(uart);

    let mut bridge = Command::new(BIN)
        .args(["bridge", "--serial", &host_end, "--mqtt", &broker.url()])
        .args(["--topic", "fw", "--status-topic", "fw/status"])
        .args(["--timeout", "30", "--max-frame", "1024"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the bridge starts");
    let reports: Lines = Arc::default();
    let reader = {
        let mut stderr = tokio::io::BufReader::new(bridge.stderr.take().unwrap()).lines();
        let reports = Arc::clone(&reports);
        tokio::spawn(async move {
            while let Ok(Some(l)) = stderr.next_line().await {
                reports.lock().unwrap().push(l);
            }
        })
    };
    let (mqtt, mut events) =
        AsyncClient::new(MqttOptions::new("fw-watcher", "127.0.0.1", broker.port), 8);
    mqtt.subscribe("fw/status", QoS::AtLeastOnce)
        .await
        .expect("queued");
    let mut next_status = async || loop {
        if let Event::Incoming(Packet::Publish(p)) = events.poll().await.expect("connected") {
            return p.payload;
        }
    };
    let online = tokio::time::timeout(Duration::from_secs(20), next_status())
        .await
        .expect("online");
    assert_eq!(online, "online");
    // The bridge has the pty open and is subscribed: the device's boot goes through.
    line.release.store(true, Ordering::Release);
    let boot = r#"the device reset (boot notification {"firmware":"rpcwire-firmware""#;
    wait_for(&reports, boot, 1).await;

    // paho-mqtt, MQTT 5.
    let requests: Vec<&str> = EXCHANGES.iter().map(|(request, _)| *request).collect();
    let out = std::process::Command::new(&python)
        .args(["-c", PY_CLIENT, &broker.port.to_string(), "fw"])
        .arg(serde_json::to_string(&requests).unwrap())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A batch's answers may come in any order (the specification): compared as sets.
    let answers: Vec<Option<Value>> = stdout
        .lines()
        .map(|l| (l != "null").then(|| rpcwire_tests::normalize(l)))
        .collect();
    assert_eq!(answers.len(), EXCHANGES.len(), "{stdout}");
    for ((request, expected), got) in EXCHANGES.iter().zip(&answers) {
        let expected = expected.map(rpcwire_tests::normalize);
        assert_eq!(got, &expected, "{request}");
    }

    // rpcwire call --mqtt; the device's own error passed back as it sent it.
    let call = |method: &'static str, params: &'static str| {
        let url = broker.url();
        async move {
            let out = Command::new(BIN)
                .args(["call", "--mqtt", &url, "--topic", "fw", method, params])
                .output();
            tokio::time::timeout(Duration::from_secs(30), out)
                .await
                .expect("ends")
                .expect("runs")
        }
    };
    let out = call("subtract", "[42,23]").await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "19");
    let out = call("no_such_method", "[]").await;
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("-32601"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A reset while a call waits: the device goes down (its line silent), qemu starts again
    // on the same pty, and its boot notification fails the waiting call at once.
    let probe = MqttClient::new("fw")
        .start(
            MqttOptions::new("fw-probe", "127.0.0.1", broker.port),
            Builder::new(),
        )
        .await
        .expect("connects");
    line.detach();
    let lost_before = line.lost.load(Ordering::SeqCst);
    let client = probe.client().clone();
    let started = Instant::now();
    let waiting = tokio::spawn(async move {
        client
            .call_with_timeout::<_, i64>("subtract", [9, 4], Duration::from_secs(25))
            .await
    });
    let deadline = Instant::now() + Duration::from_secs(10);
    while line.lost.load(Ordering::SeqCst) == lost_before {
        assert!(Instant::now() < deadline, "the call never reached the line");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(qemu.take());
    let (qemu_again, uart) = start_on_socket(&elf);
    qemu = Some(qemu_again);
    line.attach(uart);
    let failed = tokio::time::timeout(Duration::from_secs(20), waiting)
        .await
        .expect("failed in time")
        .unwrap()
        .expect_err("the device reset");
    let error = failed.rpc().unwrap_or_else(|| panic!("{failed:?}"));
    let data: Value = serde_json::from_str(error.data.as_ref().expect("data").get()).unwrap();
    assert_eq!(
        (error.code, &data["reason"]),
        (-32000, &json!("device_reset"))
    );
    assert!(
        started.elapsed() < Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
    wait_for(&reports, boot, 2).await;
    let again = probe
        .client()
        .call_with_timeout::<_, i64>("subtract", [9, 4], Duration::from_secs(10))
        .await
        .expect("the rebooted device answers");
    assert_eq!(again, 5);

    // The bridge dies: the broker publishes its last will.
    bridge.kill().await.expect("killed");
    let offline = tokio::time::timeout(Duration::from_secs(10), next_status())
        .await
        .expect("the will");
    assert_eq!(offline, "offline");
    drop(qemu);
    tokio::time::timeout(Duration::from_secs(5), reader)
        .await
        .expect("stderr ends")
        .unwrap();

    // Every junk line was dropped by the bridge (no caller saw one: the answers above are
    // exact), and reported.
    let injected = line.injected.load(Ordering::Relaxed);
    let reports = reports.lock().unwrap().join("\n");
    println!("--- the bridge's reports\n{reports}");
    let garbled = reports.matches("dropped a garbled line").count();
    let oversize = reports.matches("over --max-frame 1024").count();
    assert!(garbled >= 8, "{garbled} garbled lines dropped");
    assert_eq!(garbled + oversize, injected, "{reports}");
    assert!(
        reports.contains("1 calls were waiting: failed them"),
        "{reports}"
    );
}
