//! Third-party HTTP clients against `rpcwire serve --http` (installed by
//! `.ci/install/http-interop.sh`): Python `httpx` and `jsonrpcclient` (every example of the
//! specification, notification-only bodies, 413/415/405, 200 concurrent keep-alive clients),
//! Python `httpx-sse` and Node's `eventsource` on the GET stream (disconnect, resume from
//! `Last-Event-ID`, no event lost or repeated).
//!
//! Skips with a visible `SKIPPED:` line when the tools are missing, unless `CI=true`.
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{bounded, serve_http};
use rpcwire_demo::spec::SPEC_EXAMPLES;
use tokio::process::Command;

/// Where `.ci/install/http-interop.sh` put the clients.
fn interop_dir() -> PathBuf {
    match std::env::var_os("RPCWIRE_HTTP_INTEROP") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default())
            .join(".cache/rpcwire-interop/http"),
    }
}

fn python() -> Option<PathBuf> {
    let py = interop_dir().join("venv/bin/python");
    if py.exists() {
        Some(py)
    } else {
        rpcwire_tests::skip("no httpx venv: run .ci/install/http-interop.sh");
        None
    }
}

/// Runs `program args...`, returns stdout; asserts exit 0 (printing both streams if not).
async fn run(program: &PathBuf, args: &[&str]) -> String {
    let out = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{} failed ({}):\n{stdout}\n{}",
        program.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

const HTTPX_SPEC: &str = r#"
import json, sys, threading
from concurrent.futures import ThreadPoolExecutor
import httpx
from jsonrpcclient import request, notification, parse, Ok, Error

url, examples_file, max_body = sys.argv[1], sys.argv[2], int(sys.argv[3])
examples = json.load(open(examples_file))

def norm(v):
    return sorted(v, key=lambda x: json.dumps(x, sort_keys=True)) if isinstance(v, list) else v

json_headers = {"content-type": "application/json"}
with httpx.Client(timeout=10) as c:
    for ex in examples:
        r = c.post(url, content=ex["request"].encode(), headers=json_headers)
        if ex["response"] is None:
            assert r.status_code == 202 and r.content == b"", (ex["name"], r.status_code, r.content)
        else:
            assert r.status_code == 200, (ex["name"], r.status_code)
            assert r.headers["content-type"] == "application/json", r.headers
            assert norm(r.json()) == norm(json.loads(ex["response"])), (ex["name"], r.text)
    # jsonrpcclient builds the messages and reads the answers.
    p = parse(c.post(url, json=request("subtract", params=[42, 23])).json())
    assert isinstance(p, Ok) and p.result == 19, p
    p = parse(c.post(url, json=request("nope")).json())
    assert isinstance(p, Error) and p.code == -32601, p
    r = c.post(url, json=notification("update", params=[1, 2]))
    assert r.status_code == 202 and r.content == b"", r
    # Limits.
    big = b'{"jsonrpc":"2.0","method":"echo","params":["' + b"x" * max_body + b'"],"id":1}'
    assert c.post(url, content=big, headers=json_headers).status_code == 413
    assert c.post(url, content=b"{}", headers={"content-type": "text/plain"}).status_code == 415
    r = c.put(url, content=b"{}", headers=json_headers)
    assert r.status_code == 405 and "POST" in r.headers["allow"], r
    assert c.delete(url).status_code == 405

# 200 clients at once, each on its own keep-alive connection, 5 calls each.
barrier = threading.Barrier(200)
def client(k):
    with httpx.Client(timeout=30) as c:
        barrier.wait()
        for j in range(5):
            r = c.post(url, json=request("subtract", params=[k * 10 + j, j]))
            assert r.status_code == 200 and r.http_version == "HTTP/1.1", r
            assert r.headers.get("connection", "").lower() != "close"
            p = parse(r.json())
            assert isinstance(p, Ok) and p.result == k * 10, (k, j, p)
    return 5
with ThreadPoolExecutor(200) as pool:
    total = sum(pool.map(client, range(200)))
assert total == 1000
print("ok", len(examples), total)
"#;

#[tokio::test]
async fn httpx_and_jsonrpcclient_spec_examples_limits_and_200_clients() {
    let Some(py) = python() else { return };
    bounded(async {
        let (_server, url) = serve_http(&["--max-frame", "65536"]).await;
        let examples: Vec<serde_json::Value> = SPEC_EXAMPLES
            .iter()
            .map(|e| serde_json::json!({"name": e.name, "request": e.request, "response": e.response}))
            .collect();
        let dir = std::env::temp_dir().join(format!("rpcwire-http-interop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("spec.json");
        std::fs::write(&file, serde_json::to_vec(&examples).unwrap()).unwrap();
        let script = dir.join("spec.py");
        std::fs::write(&script, HTTPX_SPEC).unwrap();
        let out = run(
            &py,
            &[script.to_str().unwrap(), &url, file.to_str().unwrap(), "65536"],
        )
        .await;
        assert_eq!(out.trim(), format!("ok {} 1000", SPEC_EXAMPLES.len()));
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

const HTTPX_SSE: &str = r#"
import json, sys
import httpx
from httpx_sse import connect_sse

url = sys.argv[1]
def publish(c, v):
    r = c.post(url, json={"jsonrpc": "2.0", "method": "publish", "params": [v], "id": 1})
    assert r.status_code == 200 and "result" in r.json(), r.text

got, last = [], None
with httpx.Client(timeout=10) as c, httpx.Client(timeout=10) as pub:
    with connect_sse(c, "GET", url) as es:
        assert es.response.headers["content-type"].startswith("text/event-stream")
        for i in range(5):
            publish(pub, i)
        for sse in es.iter_sse():
            if not sse.data:
                continue  # httpx-sse reports the stream's `retry:` field as an empty event
            got.append(json.loads(sse.data)["params"][0])
            last = sse.id
            if len(got) == 3:
                break
    # Disconnected with 3 and 4 sent but unread; more are published meanwhile.
    for i in range(5, 8):
        publish(pub, i)
    with connect_sse(c, "GET", url, headers={"Last-Event-ID": last}) as es:
        for sse in es.iter_sse():
            if not sse.data:
                continue
            got.append(json.loads(sse.data)["params"][0])
            if len(got) == 8:
                break
assert got == list(range(8)), got
print("ok", last)
"#;

#[tokio::test]
async fn httpx_sse_disconnects_and_resumes_from_last_event_id() {
    let Some(py) = python() else { return };
    bounded(async {
        let (_server, url) = serve_http(&[]).await;
        let dir = std::env::temp_dir().join(format!("rpcwire-http-sse-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("sse.py");
        std::fs::write(&script, HTTPX_SSE).unwrap();
        let out = run(&py, &[script.to_str().unwrap(), &url]).await;
        assert!(out.starts_with("ok "), "{out}");
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}

const NODE_EVENTSOURCE: &str = r#"
const { EventSource } = require(process.argv[2]);
const url = process.argv[3];
const post = (method, params) => fetch(url, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ jsonrpc: '2.0', method, params, id: 1 }),
}).then((r) => r.json());
const got = [];
const ids = [];
let opens = 0;
const es = new EventSource(url);
es.onopen = async () => {
  opens += 1;
  if (opens === 1) for (let i = 0; i < 3; i++) await post('publish', [i]);
};
es.onmessage = async (e) => {
  got.push(JSON.parse(e.data).params[0]);
  ids.push(e.lastEventId);
  if (got.length === 3) {
    // The server ends the stream; the client reconnects by itself with Last-Event-ID.
    await post('end_streams');
    for (let i = 3; i < 6; i++) await post('publish', [i]);
  }
  if (got.length === 6) {
    es.close();
    console.log(JSON.stringify({ got, opens, ids }));
    process.exit(0);
  }
};
setTimeout(() => { console.log('timeout ' + JSON.stringify({ got, opens })); process.exit(1); }, 20000);
"#;

#[tokio::test]
async fn node_eventsource_reconnects_and_resumes() {
    let modules = interop_dir().join("node/node_modules/eventsource");
    let node = PathBuf::from("node");
    if !modules.exists()
        || std::process::Command::new("node")
            .arg("-v")
            .output()
            .is_err()
    {
        rpcwire_tests::skip("no node eventsource: run .ci/install/http-interop.sh");
        return;
    }
    bounded(async {
        let (_server, url) = serve_http(&[]).await;
        let dir = std::env::temp_dir().join(format!("rpcwire-http-es-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let script = dir.join("es.js");
        std::fs::write(&script, NODE_EVENTSOURCE).unwrap();
        let out = run(
            &node,
            &[script.to_str().unwrap(), modules.to_str().unwrap(), &url],
        )
        .await;
        let v: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(v["got"], serde_json::json!([0, 1, 2, 3, 4, 5]), "{out}");
        assert!(
            v["opens"].as_u64().unwrap() >= 2,
            "the stream was reopened: {out}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    })
    .await;
}
