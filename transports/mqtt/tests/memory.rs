//! An idle connection's memory, against a real `mosquitto` on loopback: `rumqttc` sizes a
//! connection's in-flight table from the options' limit (65 536 slots, 13.5 MiB, by default);
//! the server and the client set `MAX_INFLIGHT` when the options set none. A test file of its
//! own: the process's RSS is read, and no other test may run beside it.

#![allow(clippy::expect_used)]

use std::time::Duration;

use rpcwire_mqtt::rumqttc::v5::MqttOptions;
use rpcwire_mqtt::MqttClient;
use rpcwire_tests::brokers::Mosquitto;
use rpcwire_tokio::Builder;

/// This process's resident set, in KiB.
fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    let line = status.lines().find_map(|l| l.strip_prefix("VmRSS:"));
    let kib = line.and_then(|rest| rest.split_whitespace().next());
    kib.expect("a VmRSS line").parse().expect("a number")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_client_holds_well_under_a_mebibyte() {
    let Some(broker) = Mosquitto::start() else {
        return;
    };
    let start = |i: usize| {
        let id = format!("idle-{}-{i}", std::process::id());
        let options = MqttOptions::new(id, "127.0.0.1", broker.port);
        MqttClient::new("svc").start(options, Builder::new())
    };
    // One first: what any client loads once is not counted.
    let _first = start(0).await.expect("starts");
    let before = rss_kib();
    let mut clients = Vec::new();
    for i in 1..=20 {
        clients.push(start(i).await.expect("starts"));
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    let per_client = (rss_kib().saturating_sub(before)) / 20;
    assert!(per_client < 1024, "{per_client} KiB per idle client");
}
