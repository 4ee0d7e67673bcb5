//! `rpcwire serve --nats` and `rpcwire call --nats` against a real `nats-server` on loopback:
//! three servers in one queue group sharing 10 000 calls from 16 clients, one of them killed
//! mid-run, "no responders" at once, and NATS's own Python client (`nats-py`) sending the
//! specification's examples and asking NATS's service API about the service.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use rpcwire_nats::{async_nats, is_no_responders, NatsClient};
use rpcwire_tests::brokers::Nats;
use rpcwire_tokio::{Builder, CallError};
use serde_json::Value;
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_rpcwire");

/// `rpcwire serve --nats URL --subject demo --queue workers`, on one worker thread.
fn server(nats: &Nats) -> Child {
    Command::new(BIN)
        .args([
            "serve",
            "--nats",
            &nats.url(),
            "--subject",
            "demo",
            "--queue",
            "workers",
        ])
        .env("RPCWIRE_THREADS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("rpcwire starts")
}

/// Every answer to one request to `subject` (one per service instance) within 300 ms.
async fn gather(nats: &async_nats::Client, subject: &str) -> Vec<Value> {
    let inbox = nats.new_inbox();
    let mut answers = nats.subscribe(inbox.clone()).await.expect("subscribes");
    nats.publish_with_reply(subject.to_owned(), inbox, "".into())
        .await
        .expect("published");
    let mut all = Vec::new();
    let until = tokio::time::Instant::now() + Duration::from_millis(300);
    while let Ok(Some(m)) = tokio::time::timeout_at(until, answers.next()).await {
        // NATS's "no responders" status (no payload) before any instance is up.
        if !m.payload.is_empty() {
            all.push(serde_json::from_slice(&m.payload).expect("JSON"));
        }
    }
    all
}

/// Waits until `n` instances of the service answer `$SRV.PING`.
async fn await_instances(nats: &async_nats::Client, n: usize) {
    for _ in 0..50 {
        if gather(nats, "$SRV.PING.rpcwire").await.len() == n {
            return;
        }
    }
    panic!("{n} servers never registered");
}

/// Requests answered by each instance, by its id (`$SRV.STATS`).
async fn answered_by_instance(nats: &async_nats::Client) -> HashMap<String, u64> {
    gather(nats, "$SRV.STATS.rpcwire")
        .await
        .iter()
        .map(|s| {
            let id = s["id"].as_str().expect("an id").to_owned();
            (
                id,
                s["endpoints"][0]["num_requests"].as_u64().expect("a count"),
            )
        })
        .collect()
}

async fn clients(nats: &Nats, n: usize, deadline: Duration) -> Vec<rpcwire_tokio::Session> {
    let mut all = Vec::new();
    for _ in 0..n {
        let conn = async_nats::connect(nats.url()).await.expect("connects");
        let builder = Builder::new().request_timeout(Some(deadline));
        all.push(
            NatsClient::new("demo")
                .start(conn, builder)
                .await
                .expect("starts"),
        );
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_servers_in_a_queue_group_answer_10_000_calls_exactly_once() {
    let Some(nats) = Nats::start() else { return };
    let _servers: Vec<Child> = (0..3).map(|_| server(&nats)).collect();
    let probe = async_nats::connect(nats.url()).await.expect("connects");
    await_instances(&probe, 3).await;
    let sessions = clients(&nats, 16, Duration::from_secs(10)).await;
    let run = sessions.iter().enumerate().map(|(c, session)| async move {
        for i in 0..625_i64 {
            let n = (c as i64) * 1000 + i;
            let got: i64 = session
                .client()
                .call("subtract", [n, 1])
                .await
                .expect("answered");
            assert_eq!(got, n - 1);
        }
    });
    let all = futures_util::future::join_all(run);
    tokio::time::timeout(Duration::from_secs(240), all)
        .await
        .expect("no call hangs");
    let by_instance = answered_by_instance(&probe).await;
    assert_eq!(by_instance.len(), 3, "{by_instance:?}");
    assert_eq!(
        by_instance.values().sum::<u64>(),
        10_000,
        "each call answered once: {by_instance:?}"
    );
    assert!(
        by_instance.values().all(|&n| n > 0),
        "spread over all three: {by_instance:?}"
    );
    eprintln!("calls answered by each instance: {by_instance:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_run_leaves_no_call_hanging() {
    let Some(nats) = Nats::start() else { return };
    let mut servers: Vec<Child> = (0..3).map(|_| server(&nats)).collect();
    let probe = async_nats::connect(nats.url()).await.expect("connects");
    await_instances(&probe, 3).await;
    const DEADLINE: Duration = Duration::from_secs(2);
    // Calls before the kill; then every client goes on calling for `AFTER` past it (however
    // fast the machine), so that calls made once the killed process is surely gone exist.
    const BEFORE_KILL: usize = 1_600;
    const AFTER: Duration = Duration::from_millis(1_500);
    // A bound on each client's loop whatever happens.
    const MAX_CALLS: i64 = 100_000;
    let sessions = clients(&nats, 16, DEADLINE).await;
    let done = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let run = sessions.iter().map(|session| {
        let done = Arc::clone(&done);
        let stop = Arc::clone(&stop);
        async move {
            let mut outcomes = Vec::new();
            for i in 0..MAX_CALLS {
                if stop.load(Ordering::SeqCst) {
                    break;
                }
                let started = Instant::now();
                let outcome = session.client().call::<_, i64>("subtract", [i, 1]).await;
                let took = started.elapsed();
                assert!(
                    took < DEADLINE + Duration::from_secs(1),
                    "a call took {took:?}"
                );
                match &outcome {
                    Ok(got) => assert_eq!(*got, i - 1),
                    Err(e) => assert!(
                        matches!(e, CallError::Timeout) || is_no_responders(e),
                        "a clear error: {e:?}"
                    ),
                }
                outcomes.push((started, outcome.is_ok()));
                done.fetch_add(1, Ordering::SeqCst);
            }
            outcomes
        }
    });
    let all = futures_util::future::join_all(run);
    let kill = async {
        while done.load(Ordering::SeqCst) < BEFORE_KILL {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        servers[0].start_kill().expect("killed");
        let killed_at = Instant::now();
        tokio::time::sleep(AFTER).await;
        stop.store(true, Ordering::SeqCst);
        killed_at
    };
    let (outcomes, killed_at) =
        tokio::time::timeout(Duration::from_secs(120), async { tokio::join!(all, kill) })
            .await
            .expect("no call hangs");
    let failed: usize = outcomes.iter().flatten().filter(|(_, ok)| !ok).count();
    // Only the calls the killed server held when it died end with an error: one per client
    // at most (each client has one call under way at a time).
    assert!(failed <= 16, "{failed} calls failed");
    // The calls made once the killed process is surely gone: the others took them all.
    let later: Vec<bool> = outcomes
        .iter()
        .flatten()
        .filter(|(started, _)| *started > killed_at + Duration::from_millis(500))
        .map(|(_, ok)| *ok)
        .collect();
    // Every client called at least once in the second before it stopped.
    assert!(
        later.len() >= 16,
        "only {} calls after the kill",
        later.len()
    );
    assert!(later.iter().all(|ok| *ok), "the others take the rest");
    assert_eq!(answered_by_instance(&probe).await.len(), 2);
    let total: usize = outcomes.iter().map(Vec::len).sum();
    eprintln!(
        "{failed} of {total} calls ended with an error, {} after the kill",
        later.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_with_no_server_gets_no_responders_at_once() {
    let Some(nats) = Nats::start() else { return };
    let started = Instant::now();
    let out = Command::new(BIN)
        .args([
            "call",
            "--nats",
            &nats.url(),
            "--subject",
            "nobody",
            "--timeout",
            "20",
        ])
        .args(["subtract", "[42,23]"])
        .output();
    let out = tokio::time::timeout(Duration::from_secs(10), out)
        .await
        .expect("ends")
        .expect("runs");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert!(!out.status.success());
    let said =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("no responders") && said.contains("-32098"),
        "{said}"
    );
}

/// The Python client: each example sent as raw bytes, its answer (or `null` when none came
/// within 500 ms) printed as one JSON line; then `$SRV.INFO`'s answer.
const PY_CLIENT: &str = r#"
import asyncio, json, sys
import nats

async def main():
    url, subject, path = sys.argv[1:4]
    examples = json.load(open(path))
    nc = await nats.connect(url)
    for request in examples:
        inbox = nc.new_inbox()
        sub = await nc.subscribe(inbox)
        await nc.publish(subject, request.encode(), reply=inbox)
        try:
            msg = await sub.next_msg(timeout=0.5)
            print(json.dumps(msg.data.decode()))
        except nats.errors.TimeoutError:
            print("null")
        await sub.unsubscribe()
    info = await nc.request("$SRV.INFO.rpcwire", b"", timeout=2)
    print(info.data.decode())
    await nc.close()

asyncio.run(main())
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nats_py_gets_the_specifications_answers() {
    let Some(nats) = Nats::start() else { return };
    let Some(python) = rpcwire_tests::interop::venv_python("brokers", "nats") else {
        return;
    };
    let _server = server(&nats);
    let probe = async_nats::connect(nats.url()).await.expect("connects");
    await_instances(&probe, 1).await;
    let examples = rpcwire_demo::spec::SPEC_EXAMPLES;
    let dir = std::env::temp_dir().join(format!("rpcwire-nats-py-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("examples.json");
    let requests: Vec<&str> = examples.iter().map(|e| e.request).collect();
    std::fs::write(&path, serde_json::to_vec(&requests).unwrap()).unwrap();
    let script = dir.join("client.py");
    std::fs::write(&script, PY_CLIENT).unwrap();
    let out = Command::new(python)
        .args([
            script.as_os_str(),
            nats.url().as_ref(),
            "demo".as_ref(),
            path.as_os_str(),
        ])
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
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), examples.len() + 1, "{stdout}");
    for (example, line) in examples.iter().zip(&lines) {
        let answer: Option<String> = serde_json::from_str(line).unwrap();
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
    let info: Value = serde_json::from_str(lines[examples.len()]).unwrap();
    assert_eq!(info["type"], "io.nats.micro.v1.info_response", "{info}");
    assert_eq!(info["name"], "rpcwire");
    assert_eq!(info["endpoints"][0]["name"], "jsonrpc");
    assert_eq!(info["endpoints"][0]["subject"], "demo");
    assert_eq!(info["endpoints"][0]["queue_group"], "workers");
}
