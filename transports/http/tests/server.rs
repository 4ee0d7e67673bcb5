//! The HTTP server and client end to end on loopback: statuses, JSON and event-stream answers,
//! the GET stream and its resumption, the client's calls, batches and progress.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client as Hyper;
use hyper_util::rt::TokioExecutor;
use rpcwire::wire::sse::{SseDecoder, SseItem};
use rpcwire_http::{HttpClient, HttpServer, RpcService};
use rpcwire_tokio::{Builder, Context, Router, RpcError};
use serde_json::{json, Value};

const WAIT: Duration = Duration::from_secs(10);

fn router() -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method("sleep", |(ms,): (u64,)| async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, RpcError>(ms)
        })
        .method_with_context("count", |cx: Context, (n,): (u64,)| async move {
            for i in 1..=n {
                cx.peer()
                    .notify("progress", json!({"done": i, "of": n}))
                    .await?;
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            Ok::<_, RpcError>(n)
        })
        .notification("tick", |_: Value| async {})
}

async fn start(server: HttpServer) -> (String, RpcService) {
    let service = server.build();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/rpc", listener.local_addr().unwrap());
    tokio::spawn(rpcwire_http::serve(listener, service.clone()));
    (url, service)
}

fn default_server() -> HttpServer {
    HttpServer::new(Builder::new().router(router())).path("/rpc")
}

struct Answer {
    status: StatusCode,
    content_type: String,
    body: String,
}

async fn send(req: Request<Full<Bytes>>) -> Answer {
    let client: Hyper<_, Full<Bytes>> = Hyper::builder(TokioExecutor::new()).build_http();
    let response = tokio::time::timeout(WAIT, client.request(req))
        .await
        .unwrap()
        .unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let body = tokio::time::timeout(WAIT, response.into_body().collect())
        .await
        .unwrap()
        .unwrap()
        .to_bytes();
    Answer {
        status,
        content_type,
        body: String::from_utf8(body.to_vec()).unwrap(),
    }
}

fn post(url: &str, body: &str) -> http::request::Builder {
    let _ = body;
    Request::post(url).header("content-type", "application/json")
}

async fn post_json(url: &str, body: &str) -> Answer {
    send(
        post(url, body)
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap(),
    )
    .await
}

fn events(text: &str) -> Vec<(String, String)> {
    let mut dec: SseDecoder<Vec<u8>> = SseDecoder::with_buffer(Vec::new(), 1 << 20);
    let mut input = text.as_bytes();
    let mut out = Vec::new();
    while let Some(item) = dec.next(&mut input) {
        if let SseItem::Event(e) = item {
            out.push((e.id.to_owned(), e.data.to_owned()));
        }
    }
    out
}

#[tokio::test]
async fn request_batch_notification_and_errors() {
    let (url, _service) = start(default_server()).await;
    let a = post_json(
        &url,
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type, "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(&a.body).unwrap(),
        json!({"jsonrpc":"2.0","result":19,"id":1})
    );

    // Pretty-printed bodies with newlines are one JSON text.
    let a = post_json(&url, "{\n  \"jsonrpc\": \"2.0\",\n  \"method\": \"subtract\",\n  \"params\": [1, 2],\n  \"id\": \"x\"\n}\n").await;
    assert_eq!(
        serde_json::from_str::<Value>(&a.body).unwrap(),
        json!({"jsonrpc":"2.0","result":-1,"id":"x"})
    );

    let a = post_json(&url, r#"[{"jsonrpc":"2.0","method":"subtract","params":[5,3],"id":1},{"jsonrpc":"2.0","method":"tick"},{"jsonrpc":"2.0","method":"nope","id":2}]"#).await;
    assert_eq!(a.status, StatusCode::OK);
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 2);

    // Notifications only, responses only: 202, no body.
    let a = post_json(&url, r#"{"jsonrpc":"2.0","method":"tick","params":[1]}"#).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::ACCEPTED, ""));
    let a = post_json(
        &url,
        r#"[{"jsonrpc":"2.0","method":"tick"},{"jsonrpc":"2.0","method":"tick"}]"#,
    )
    .await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::ACCEPTED, ""));
    let a = post_json(&url, r#"{"jsonrpc":"2.0","result":1,"id":99}"#).await;
    assert_eq!((a.status, a.body.as_str()), (StatusCode::ACCEPTED, ""));

    // Parse error and invalid requests: the specification's error objects.
    let a = post_json(
        &url,
        r#"{"jsonrpc":"2.0","method":"foobar,"params":"bar","baz]"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&a.body).unwrap(),
        json!({"jsonrpc":"2.0","error":{"code":-32700,"message":"Parse error"},"id":null})
    );
    let a = post_json(&url, "[]").await;
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["error"]["code"], -32600);
    assert_eq!(v["id"], Value::Null);
}

#[tokio::test]
async fn statuses_at_the_limits() {
    let (url, _service) = start(default_server().max_body(1024)).await;
    let ok = "{\"jsonrpc\":\"2.0\",\"method\":\"subtract\",\"params\":[1,1],\"id\":1}";
    // 413 at the edge: 1024 bytes pass, 1025 do not.
    let pad = |n: usize| format!("{ok}{}", " ".repeat(n - ok.len()));
    assert_eq!(post_json(&url, &pad(1024)).await.status, StatusCode::OK);
    assert_eq!(
        post_json(&url, &pad(1025)).await.status,
        StatusCode::PAYLOAD_TOO_LARGE
    );
    // 413 also without a Content-Length (a chunked body counted as it comes).
    let chunked = http_body_util::StreamBody::new(futures_stream(pad(1025)));
    let client: Hyper<_, http_body_util::StreamBody<_>> =
        Hyper::builder(TokioExecutor::new()).build_http();
    let r = client
        .request(
            Request::post(&url)
                .header("content-type", "application/json")
                .body(chunked)
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // 415: not JSON; a charset parameter is fine.
    let a = send(
        Request::post(&url)
            .header("content-type", "text/plain")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let a = send(
        Request::post(&url)
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    let a = send(
        Request::post(&url)
            .header("content-type", "application/json; charset=utf-8")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    // 405 with Allow.
    let client: Hyper<_, Full<Bytes>> = Hyper::builder(TokioExecutor::new()).build_http();
    let r = client
        .request(Request::put(&url).body(Full::default()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(r.headers()["allow"], "GET, POST");
    // 406: neither JSON nor an event stream acceptable; GET without text/event-stream.
    let a = send(
        post(&url, ok)
            .header("accept", "text/html")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_ACCEPTABLE);
    let a = send(
        Request::get(&url)
            .header("accept", "application/json")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::NOT_ACCEPTABLE);
    // 404 elsewhere.
    let other = url.replace("/rpc", "/other");
    assert_eq!(post_json(&other, ok).await.status, StatusCode::NOT_FOUND);
}

fn futures_stream(
    body: String,
) -> impl futures_core_stream::Stream<Item = Result<http_body::Frame<Bytes>, std::convert::Infallible>>
{
    let bytes = Bytes::from(body);
    let chunks: Vec<_> = (0..bytes.len())
        .step_by(100)
        .map(|i| {
            Ok(http_body::Frame::data(
                bytes.slice(i..(i + 100).min(bytes.len())),
            ))
        })
        .collect();
    futures_core_stream::iter(chunks)
}

/// A tiny `Stream` over a vector, so the test needs no futures crate.
mod futures_core_stream {
    pub use futures_util::stream::{iter, Stream};
}

#[tokio::test]
async fn time_limit_and_host_checks() {
    let (url, _service) = start(default_server().timeout(Duration::from_millis(200))).await;
    let a = post_json(
        &url,
        r#"{"jsonrpc":"2.0","method":"sleep","params":[5000],"id":1}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::SERVICE_UNAVAILABLE);
    let a = post_json(
        &url,
        r#"{"jsonrpc":"2.0","method":"sleep","params":[10],"id":1}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);

    let ok = r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1}"#;
    let evil = send(
        post(&url, ok)
            .header("host", "evil.example:80")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN);
    let evil = send(
        post(&url, ok)
            .header("origin", "http://evil.example")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN);
    let fine = send(
        post(&url, ok)
            .header("origin", "http://localhost:3000")
            .body(Full::new(Bytes::from(ok)))
            .unwrap(),
    )
    .await;
    assert_eq!(fine.status, StatusCode::OK);
}

#[tokio::test]
async fn progress_as_an_event_stream_or_plain_json() {
    let (url, _service) = start(default_server()).await;
    let body = r#"{"jsonrpc":"2.0","method":"count","params":[3],"id":7}"#;
    let a = send(
        post(&url, body)
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(body)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(a.content_type, "text/event-stream");
    let got: Vec<Value> = events(&a.body)
        .into_iter()
        .map(|(_, d)| serde_json::from_str(&d).unwrap())
        .collect();
    assert_eq!(got.len(), 4, "{got:?}");
    for (i, note) in got[..3].iter().enumerate() {
        assert_eq!(note["method"], "progress");
        assert_eq!(note["params"]["done"], i as u64 + 1);
    }
    assert_eq!(got[3], json!({"jsonrpc":"2.0","result":3,"id":7}));

    // Without text/event-stream in Accept: the answer alone, as JSON.
    let a = send(
        post(&url, body)
            .header("accept", "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.content_type, "application/json");
    assert_eq!(
        serde_json::from_str::<Value>(&a.body).unwrap(),
        json!({"jsonrpc":"2.0","result":3,"id":7})
    );
    // A handler that sends nothing first: JSON even when an event stream is accepted.
    let plain = r#"{"jsonrpc":"2.0","method":"subtract","params":[3,1],"id":8}"#;
    let a = send(
        post(&url, plain)
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(plain)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.content_type, "application/json");
}

#[tokio::test]
async fn client_calls_batches_and_progress() {
    let (url, _service) = start(default_server()).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let client = HttpClient::builder(&url)
        .on_notification(move |method, params| {
            log.lock()
                .unwrap()
                .push((method.to_owned(), params.map(str::to_owned)));
        })
        .build()
        .unwrap();
    let c = client.client();
    assert_eq!(c.call::<_, i64>("subtract", [42, 23]).await.unwrap(), 19);
    let err = c.call::<_, i64>("nope", [1]).await.unwrap_err();
    assert_eq!(err.rpc().map(|e| e.code), Some(-32601));
    let mut batch = c.batch();
    batch.call("subtract", [5, 3]).unwrap();
    batch.call("subtract", [1, 3]).unwrap();
    let results = batch.send().await.unwrap();
    assert_eq!(results.get::<i64>(0).unwrap(), 2);
    assert_eq!(results.get::<i64>(1).unwrap(), -2);
    c.notify("tick", [1]).await.unwrap();
    assert_eq!(c.call::<_, u64>("count", [4]).await.unwrap(), 4);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen.iter().all(|(m, _)| m == "progress"));
    // Many at once over the client's connection pool.
    let calls = (0..200).map(|i| c.call::<_, i64>("subtract", [i, 1]));
    let all = futures_util::future::join_all(calls).await;
    for (i, r) in all.into_iter().enumerate() {
        assert_eq!(r.unwrap(), i as i64 - 1);
    }
}

#[tokio::test]
async fn client_reports_http_errors() {
    let (url, _service) = start(default_server().max_body(1024)).await;
    let client = HttpClient::new(&url).unwrap();
    let err = client
        .client()
        .call::<_, Value>("subtract", vec![1; 600])
        .await
        .unwrap_err();
    let rpc = err.rpc().unwrap();
    assert_eq!(rpc.code, rpcwire_http::HTTP_ERROR_CODE);
    let bad = HttpClient::new(&url.replace("/rpc", "/none")).unwrap();
    let err = bad
        .client()
        .call::<_, i64>("subtract", [1, 1])
        .await
        .unwrap_err();
    assert_eq!(err.rpc().unwrap().code, rpcwire_http::HTTP_ERROR_CODE);
}

#[tokio::test]
async fn get_stream_resumes_without_loss_or_repeat() {
    let (url, service) = start(default_server().keep_alive(Duration::from_millis(50))).await;
    let push = service.stream_client().clone();
    // Open a raw stream, read two events, drop it, push more, resume with Last-Event-ID.
    let client: Hyper<_, Full<Bytes>> = Hyper::builder(TokioExecutor::new()).build_http();
    let open = |last: Option<String>| {
        let mut req = Request::get(&url).header("accept", "text/event-stream");
        if let Some(last) = last {
            req = req.header("last-event-id", last);
        }
        client.request(req.body(Full::default()).unwrap())
    };
    let response = open(None).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    for i in 0..2 {
        push.notify("news", [i]).await.unwrap();
    }
    let mut dec: SseDecoder<Vec<u8>> = SseDecoder::with_buffer(Vec::new(), 1 << 20);
    let mut got = Vec::new();
    let mut comments = 0;
    while got.len() < 2 {
        let frame = tokio::time::timeout(WAIT, body.frame())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let chunk = frame.into_data().unwrap();
        comments += chunk.starts_with(b":") as usize;
        let mut input: &[u8] = &chunk;
        while let Some(item) = dec.next(&mut input) {
            if let SseItem::Event(e) = item {
                got.push(serde_json::from_str::<Value>(e.data).unwrap()["params"][0].clone());
            }
        }
    }
    let last = dec.last_event_id().to_owned();
    assert!(!last.is_empty());
    // Keep-alive comments arrive on an idle stream.
    let ka = tokio::time::timeout(WAIT, body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(ka.into_data().unwrap().starts_with(b": keep-alive"));
    assert!(
        comments == 0,
        "events and the stream's head are not comments"
    );
    drop(body);
    for i in 2..5 {
        push.notify("news", [i]).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    let resumed = open(Some(last)).await.unwrap();
    let mut body = resumed.into_body();
    dec.reset();
    while got.len() < 5 {
        let frame = tokio::time::timeout(WAIT, body.frame())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        let Ok(chunk) = frame.into_data() else {
            continue;
        };
        let mut input: &[u8] = &chunk;
        while let Some(item) = dec.next(&mut input) {
            if let SseItem::Event(e) = item {
                got.push(serde_json::from_str::<Value>(e.data).unwrap()["params"][0].clone());
            }
        }
    }
    assert_eq!(got, vec![json!(0), json!(1), json!(2), json!(3), json!(4)]);
    // Nothing more (no repeat) within a moment.
    let more = tokio::time::timeout(Duration::from_millis(150), body.frame()).await;
    if let Ok(Some(Ok(frame))) = more {
        assert!(
            frame.into_data().unwrap().starts_with(b":"),
            "unexpected event"
        );
    }
}

#[tokio::test]
async fn server_calls_a_client_over_the_stream() {
    let (url, service) = start(default_server()).await;
    let client = HttpClient::builder(&url)
        .rpc(Builder::new().router(
            Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b)),
        ))
        .build()
        .unwrap();
    let stream = client.event_stream();
    let deadline = tokio::time::Instant::now() + WAIT;
    while stream.connects() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // The server's stream connection calls the client; its answer comes back by POST.
    let sum: i64 = tokio::time::timeout(WAIT, service.stream_client().call("add", [2, 3]))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(sum, 5);
    assert!(stream.events() >= 1);
}

#[tokio::test]
async fn client_stream_reconnects_with_last_event_id() {
    let (url, service) = start(default_server().retry(Duration::from_millis(20))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let client = HttpClient::builder(&url)
        .on_notification(move |_, params| log.lock().unwrap().push(params.unwrap_or("").to_owned()))
        .build()
        .unwrap();
    let stream = client.event_stream();
    let deadline = tokio::time::Instant::now() + WAIT;
    while stream.connects() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let push = service.stream_client();
    for i in 0..3 {
        push.notify("n", [i]).await.unwrap();
    }
    while seen.lock().unwrap().len() < 3 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    drop(stream);
    for i in 3..6 {
        push.notify("n", [i]).await.unwrap();
    }
    let stream = client.event_stream();
    // A new handle starts without an id: it sees only what comes next.
    while stream.connects() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    push.notify("n", [6]).await.unwrap();
    while seen.lock().unwrap().len() < 4 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(seen.lock().unwrap().clone(), ["[0]", "[1]", "[2]", "[6]"]);
}

#[tokio::test]
async fn http2_with_prior_knowledge_and_http1_on_one_port() {
    let (url, _service) = start(default_server()).await;
    let h2: Hyper<_, Full<Bytes>> = Hyper::builder(TokioExecutor::new())
        .http2_only(true)
        .build_http();
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#;
    for _ in 0..3 {
        let r = h2
            .request(post(&url, body).body(Full::new(Bytes::from(body))).unwrap())
            .await
            .unwrap();
        assert_eq!(r.version(), http::Version::HTTP_2);
        assert_eq!(r.status(), StatusCode::OK);
        let text = r.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(
            serde_json::from_slice::<Value>(&text).unwrap()["result"],
            19
        );
    }
    assert_eq!(post_json(&url, body).await.status, StatusCode::OK);
}

/// `idle_connection_timeout` on HTTP/2: a connection with no stream under way for that long
/// is shut down (GOAWAY, then closed); requests closer together than that, a request that
/// takes longer than it, and an open GET event stream keep it open.
#[tokio::test]
async fn idle_http2_connections_are_shut_down() {
    use hyper_util::rt::TokioIo;
    use std::time::Instant;
    let idle = Duration::from_millis(300);
    let (url, _service) = start(default_server().idle_connection_timeout(idle)).await;
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/rpc")
        .to_owned();
    let tcp = tokio::net::TcpStream::connect(&addr).await.unwrap();
    let (mut h2, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tcp))
            .await
            .unwrap();
    let conn = tokio::spawn(async move {
        let ended = conn.await;
        (ended.is_ok(), Instant::now())
    });
    let request = |body: &str| {
        post(&url, body)
            .header("accept", "application/json, text/event-stream")
            .body(Full::new(Bytes::from(body.to_owned())))
            .unwrap()
    };
    // Requests 150 ms apart for a second.
    for i in 0..7 {
        let body = format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},1],"id":{i}}}"#);
        let r = tokio::time::timeout(WAIT, h2.send_request(request(&body)))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.status(), StatusCode::OK);
        r.into_body().collect().await.unwrap();
        tokio::time::sleep(Duration::from_millis(150)).await;
    }
    // A call that takes longer than the idle timeout.
    let slow = r#"{"jsonrpc":"2.0","method":"sleep","params":[700],"id":"slow"}"#;
    let r = tokio::time::timeout(WAIT, h2.send_request(request(slow)))
        .await
        .unwrap()
        .unwrap();
    let text = r.into_body().collect().await.unwrap().to_bytes();
    assert!(String::from_utf8_lossy(&text).contains(r#""id":"slow""#));
    // The GET event stream, open for longer than the idle timeout.
    let get = Request::get(&url)
        .header("accept", "text/event-stream")
        .body(Full::new(Bytes::new()))
        .unwrap();
    let r = tokio::time::timeout(WAIT, h2.send_request(get))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(r.headers()["content-type"], "text/event-stream");
    let body = r.into_body();
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(!conn.is_finished(), "closed under an open event stream");
    // The client ends the stream (RST_STREAM).
    drop(body);
    // Now idle: shut down once `idle` has passed, not before.
    let idle_from = Instant::now();
    let (clean, ended) = tokio::time::timeout(WAIT, conn).await.unwrap().unwrap();
    let after = ended - idle_from;
    assert!(clean, "a graceful shutdown");
    assert!(
        after >= idle - Duration::from_millis(50) && after < Duration::from_secs(5),
        "closed {after:?} after the last stream ended (idle timeout {idle:?})"
    );
}

#[tokio::test]
async fn batch_length_limit_at_its_edge() {
    let (url, _service) = start(
        HttpServer::new(Builder::new().router(router()))
            .path("/rpc")
            .max_batch_len(3),
    )
    .await;
    let call =
        |i: usize| format!(r#"{{"jsonrpc":"2.0","method":"subtract","params":[{i},0],"id":{i}}}"#);
    let batch = |n: usize| format!("[{}]", (0..n).map(call).collect::<Vec<_>>().join(","));
    let a = post_json(&url, &batch(3)).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(
        serde_json::from_str::<Value>(&a.body)
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let a = post_json(&url, &batch(4)).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE);
    let v: Value = serde_json::from_str(&a.body).unwrap();
    assert_eq!(v["error"]["code"], -32600, "{v}");
    assert_eq!(v["id"], Value::Null);
}

#[tokio::test]
async fn client_stream_resumes_by_itself_after_the_server_ends_it() {
    // The server says `retry: 30` ms; the client reconnects with Last-Event-ID and gets the
    // events published while it was away, once each.
    let (url, service) = start(default_server().retry(Duration::from_millis(30))).await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    let client = HttpClient::builder(&url)
        .on_notification(move |_, params| log.lock().unwrap().push(params.unwrap_or("").to_owned()))
        .build()
        .unwrap();
    let stream = client.event_stream();
    let deadline = tokio::time::Instant::now() + WAIT;
    let wait_for = |n: usize| {
        let seen = Arc::clone(&seen);
        async move {
            while seen.lock().unwrap().len() < n {
                assert!(
                    tokio::time::Instant::now() < deadline,
                    "{:?}",
                    seen.lock().unwrap()
                );
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        }
    };
    while stream.connects() == 0 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let push = service.stream_client();
    for i in 0..3 {
        push.notify("n", [i]).await.unwrap();
    }
    wait_for(3).await;
    service.end_streams();
    for i in 3..6 {
        push.notify("n", [i]).await.unwrap();
    }
    wait_for(6).await;
    while stream.connects() < 2 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    push.notify("n", [6]).await.unwrap();
    wait_for(7).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        seen.lock().unwrap().clone(),
        ["[0]", "[1]", "[2]", "[3]", "[4]", "[5]", "[6]"]
    );
    assert!(
        stream.last_event_id().ends_with("-7"),
        "{}",
        stream.last_event_id()
    );
}

#[tokio::test]
async fn profile_check_and_upgrade_hooks() {
    use rpcwire_http::{RequestCheck, UpgradeHook};
    // A profile's header rule: every request must carry `x-version: 1`.
    let check: RequestCheck = Arc::new(|parts| {
        if parts.headers.get("x-version").is_some_and(|v| v == "1") {
            Ok(())
        } else {
            let mut r = http::Response::new(rpcwire_http::Body::full("x-version: 1 needed"));
            *r.status_mut() = StatusCode::BAD_REQUEST;
            Err(Box::new(r))
        }
    });
    // Where the WebSocket transport plugs in: it gets the head, hyper's upgrade handle inside.
    let upgrade: UpgradeHook = Arc::new(|req| {
        let has_handle = req
            .extensions()
            .get::<hyper::upgrade::OnUpgrade>()
            .is_some();
        Box::pin(async move {
            let mut r = http::Response::new(rpcwire_http::Body::full(format!(
                "upgrade handle: {has_handle}"
            )));
            *r.status_mut() = StatusCode::IM_A_TEAPOT;
            r
        })
    });
    // A rule tying a header to the body: `x-method` must name the body's method.
    let check_body: rpcwire_http::BodyCheck = Arc::new(|parts, body| {
        let named = parts.headers.get("x-method").and_then(|v| v.to_str().ok());
        let method = serde_json::from_slice::<Value>(body)
            .ok()
            .and_then(|v| v["method"].as_str().map(str::to_owned));
        match (named, method) {
            (Some(n), Some(m)) if n != m => {
                let mut r = http::Response::new(rpcwire_http::Body::full("x-method mismatch"));
                *r.status_mut() = StatusCode::BAD_REQUEST;
                Err(Box::new(r))
            }
            _ => Ok(()),
        }
    });
    let (url, _service) = start(
        default_server()
            .check(check)
            .check_body(check_body)
            .upgrade(upgrade),
    )
    .await;
    let body = r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":1}"#;
    let a = post_json(&url, body).await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (StatusCode::BAD_REQUEST, "x-version: 1 needed")
    );
    let a = send(
        post(&url, body)
            .header("x-version", "1")
            .body(Full::new(Bytes::from(body)))
            .unwrap(),
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    let a = send(
        Request::get(&url)
            .header("x-version", "1")
            .header("connection", "upgrade")
            .header("upgrade", "websocket")
            .body(Full::default())
            .unwrap(),
    )
    .await;
    assert_eq!(
        (a.status, a.body.as_str()),
        (StatusCode::IM_A_TEAPOT, "upgrade handle: true")
    );
}

/// A POSTed notification's handler runs to its end even when it sends messages on the way
/// (a POST of notifications has no way back: they are dropped), for both servers' shapes of
/// body: a notification alone and a batch of them.
#[tokio::test]
async fn notification_handlers_that_notify_run_to_their_end() {
    let (done_tx, mut done) = tokio::sync::mpsc::unbounded_channel::<u64>();
    let router =
        Router::new().notification_with_context("work", move |cx: Context, (n,): (u64,)| {
            let done = done_tx.clone();
            async move {
                for i in 0..3 {
                    let _ = cx.peer().notify("progress", [i]).await;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                let _ = done.send(n);
            }
        });
    let (url, _service) = start(HttpServer::new(Builder::new().router(router)).path("/rpc")).await;
    let a = post_json(&url, r#"{"jsonrpc":"2.0","method":"work","params":[1]}"#).await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let a = post_json(
        &url,
        r#"[{"jsonrpc":"2.0","method":"work","params":[2]},{"jsonrpc":"2.0","method":"work","params":[3]}]"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::ACCEPTED);
    let mut ended = Vec::new();
    for _ in 0..3 {
        ended.push(
            tokio::time::timeout(WAIT, done.recv())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    ended.sort_unstable();
    assert_eq!(ended, [1, 2, 3]);
}
