//! Push notifications end to end, with a webhook receiver in the test: config methods,
//! deliveries of every event with the config's authentication and token, a failed delivery
//! retried, and the SSRF defaults: webhooks on loopback, link-local (the cloud metadata
//! address), private addresses or a name resolving to one are refused unless the server's
//! allow-list names the address.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rpcwire_a2a::{PushLimits, TaskContext, WebhookPolicy};
use rpcwire_tests::raw_http::{exchange, json_post};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod common;

/// What the webhook received: each request's lower-case head and its body.
type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// A webhook on loopback answering 500 to its first `failures` requests, 200 after.
async fn webhook(failures: usize) -> (SocketAddr, Seen) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen: Seen = Arc::default();
    let s = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut n = 0;
        while let Ok((mut stream, _)) = listener.accept().await {
            let mut buf = Vec::new();
            let mut chunk = [0u8; 4096];
            let (head, body) = loop {
                let read = stream.read(&mut chunk).await.unwrap_or(0);
                if read == 0 {
                    break (String::new(), Value::Null);
                }
                buf.extend_from_slice(&chunk[..read]);
                let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
                    continue;
                };
                let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
                let length: usize = head
                    .lines()
                    .find_map(|l| l.strip_prefix("content-length:"))
                    .and_then(|v| v.trim().parse().ok())
                    .unwrap_or(0);
                if buf.len() >= end + 4 + length {
                    let body = serde_json::from_slice(&buf[end + 4..end + 4 + length])
                        .unwrap_or(Value::Null);
                    break (head, body);
                }
            };
            n += 1;
            let status = if n <= failures {
                "500 Internal Server Error"
            } else {
                "200 OK"
            };
            s.lock().unwrap().push((head, body));
            let _ = stream
                .write_all(
                    format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                        .as_bytes(),
                )
                .await;
        }
    });
    (addr, seen)
}

/// `ask` waits for input, its continuation adds an artifact and completes.
async fn agent(ctx: TaskContext) {
    if ctx.is_continuation() {
        ctx.text_artifact("a", "done");
        ctx.complete(None);
    } else {
        ctx.input_required("more?");
    }
}

async fn call(addr: SocketAddr, method: &str, params: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let headers = [("A2A-Version".to_owned(), "1.0".to_owned())];
    let answers = exchange(addr, &[json_post("/", &headers, &body.to_string())]).await;
    serde_json::from_str(&answers[0].1).unwrap()
}

fn send(id: &str, task: Option<&str>) -> Value {
    let mut m = json!({"messageId": id, "role": "ROLE_USER", "parts": [{"text": "x"}]});
    if let Some(t) = task {
        m["taskId"] = json!(t);
    }
    json!({"message": m})
}

fn limits() -> PushLimits {
    PushLimits {
        backoff: Duration::from_millis(20),
        ..PushLimits::default()
    }
}

/// Waits (bounded) until the webhook has seen `n` requests.
async fn wait_for(seen: &Seen, n: usize) -> Vec<(String, Value)> {
    for _ in 0..200 {
        if seen.lock().unwrap().len() >= n {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    seen.lock().unwrap().clone()
}

#[tokio::test]
async fn every_event_is_pushed_with_the_configs_credentials_and_retried() {
    // The first delivery fails once: it is retried.
    let (hook, seen) = webhook(1).await;
    let policy = WebhookPolicy::public_only().allow([IpAddr::V4(Ipv4Addr::LOCALHOST)]);
    let (addr, _, _) =
        common::serve("push", agent, |s| s.push_notifications(policy, limits())).await;
    let card: Value = {
        let get = "GET /.well-known/agent-card.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_owned();
        serde_json::from_str(&exchange(addr, &[get]).await[0].1).unwrap()
    };
    assert_eq!(card["capabilities"]["pushNotifications"], true);

    let task = call(addr, "SendMessage", send("m1", None)).await;
    let task_id = task["result"]["task"]["id"].as_str().unwrap().to_owned();
    let config = json!({"task_id": task_id, "url": format!("http://{hook}/hook"), "token": "tok-1",
        "authentication": {"scheme": "Bearer", "credentials": "secret-1"}});
    let created = call(addr, "CreateTaskPushNotificationConfig", config).await;
    let id = created["result"]["id"].as_str().unwrap().to_owned();
    assert!(!id.is_empty(), "{created}");
    let got = call(
        addr,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": id}),
    )
    .await;
    assert_eq!(got["result"], created["result"]);
    let listed = call(
        addr,
        "ListTaskPushNotificationConfigs",
        json!({"taskId": task_id}),
    )
    .await;
    assert_eq!(listed["result"]["configs"][0], created["result"]);

    // The next turn: a task event, an artifact, the completion; the first retried.
    call(addr, "SendMessage", send("m2", Some(&task_id))).await;
    let seen = wait_for(&seen, 4).await;
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (head, body) in &seen {
        assert!(head.starts_with("post /hook "), "{head}");
        assert!(
            head.contains("\r\nauthorization: bearer secret-1"),
            "{head}"
        );
        assert!(
            head.contains("\r\nx-a2a-notification-token: tok-1"),
            "{head}"
        );
        assert!(
            head.contains("\r\ncontent-type: application/json"),
            "{head}"
        );
        assert_eq!(
            body.as_object().map(|o| o.len()),
            Some(1),
            "one StreamResponse member: {body}"
        );
    }
    assert_eq!(seen[0].1, seen[1].1, "the failed delivery, made again");
    assert!(seen[0].1.get("task").is_some(), "{:?}", seen[0].1);
    assert_eq!(
        seen[2].1["artifactUpdate"]["artifact"]["parts"][0]["text"],
        "done"
    );
    assert_eq!(
        seen[3].1["statusUpdate"]["status"]["state"],
        "TASK_STATE_COMPLETED"
    );

    // Deleted twice: both answered; no config left.
    for _ in 0..2 {
        let gone = call(
            addr,
            "DeleteTaskPushNotificationConfig",
            json!({"taskId": task_id, "id": id}),
        )
        .await;
        assert_eq!(gone["result"], json!({}), "{gone}");
    }
    let missing = call(
        addr,
        "GetTaskPushNotificationConfig",
        json!({"taskId": task_id, "id": id}),
    )
    .await;
    assert_eq!(missing["error"]["code"], -32001, "{missing}");
    let none = call(
        addr,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": "no-such-task", "url": "http://93.184.216.34/"}),
    )
    .await;
    assert_eq!(none["error"]["code"], -32001, "{none}");
}

#[tokio::test]
async fn webhooks_at_special_addresses_are_refused_unless_allowed() {
    let (hook, seen) = webhook(0).await;
    let (addr, _, _) = common::serve("push", agent, |s| {
        s.push_notifications(WebhookPolicy::public_only(), limits())
    })
    .await;
    let task = call(addr, "SendMessage", send("m1", None)).await;
    let task_id = task["result"]["task"]["id"].as_str().unwrap().to_owned();
    for url in [
        format!("http://{hook}/hook"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://10.0.0.1/hook".to_owned(),
        format!("http://localhost:{}/hook", hook.port()),
        "http://[::ffff:127.0.0.1]/hook".to_owned(),
        "file:///etc/passwd".to_owned(),
        "gopher://example.com/".to_owned(),
    ] {
        let refused = call(
            addr,
            "CreateTaskPushNotificationConfig",
            json!({"taskId": task_id, "url": url}),
        )
        .await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
        // Nor sent with a message.
        let mut inline = send("m-inline", None);
        inline["configuration"] = json!({"taskPushNotificationConfig": {"url": url}});
        let refused = call(addr, "SendMessage", inline).await;
        assert_eq!(refused["error"]["code"], -32602, "{url}: {refused}");
    }
    call(addr, "SendMessage", send("m2", Some(&task_id))).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert!(
        seen.lock().unwrap().is_empty(),
        "nothing reached the loopback webhook"
    );
}

#[tokio::test]
async fn without_push_notifications_the_methods_answer_not_supported() {
    let (addr, _, _) = common::serve("push", agent, |s| s).await;
    let task = call(addr, "SendMessage", send("m1", None)).await;
    let task_id = task["result"]["task"]["id"].as_str().unwrap().to_owned();
    let answer = call(
        addr,
        "CreateTaskPushNotificationConfig",
        json!({"taskId": task_id, "url": "http://93.184.216.34/"}),
    )
    .await;
    assert_eq!(answer["error"]["code"], -32003, "{answer}");
}
