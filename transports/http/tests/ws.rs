//! The WebSocket transport end to end over loopback: calls both ways, notifications to one and
//! to all, close codes at each limit, keep-alive and the send timeout.
#![cfg(feature = "ws")]
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use rpcwire_http::ws::{self, Hub, WsConfig, WsServer};
use rpcwire_tokio::{Builder, Client, Router, RpcError};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::time::timeout;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;

const WAIT: Duration = Duration::from_secs(10);

fn router(hub: Hub) -> Router {
    Router::new()
        .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
        .method_with_context("ask_back", |ctx, (x,): (i64,)| async move {
            // The server calls the client on the same connection.
            let doubled: i64 = ctx.peer().call("double", [x]).await?;
            Ok::<_, RpcError>(doubled + 1)
        })
        .method("broadcast", move |(text,): (String,)| {
            let hub = hub.clone();
            async move {
                let n = hub.notify_all("news", [text]).map_err(RpcError::internal)?;
                Ok::<_, RpcError>(n)
            }
        })
}

async fn start(config: WsConfig) -> (String, WsServer) {
    let hub = Hub::new();
    let server = WsServer::new(Builder::new().router(router(hub.clone())), config).with_hub(hub);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/rpc", listener.local_addr().unwrap());
    tokio::spawn(server.clone().serve_tcp(listener));
    (url, server)
}

type Raw =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn raw(url: &str) -> Raw {
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .max_message_size(None)
        .max_frame_size(None);
    tokio_tungstenite::connect_async_with_config(url, Some(config), true)
        .await
        .unwrap()
        .0
}

/// The next text message, skipping control frames.
async fn next_text(ws: &mut Raw) -> Value {
    loop {
        match timeout(WAIT, ws.next()).await.unwrap() {
            Some(Ok(Message::Text(t))) => return serde_json::from_str(&t).unwrap(),
            Some(Ok(Message::Ping(_) | Message::Pong(_))) => continue,
            other => panic!("expected a text message, got {other:?}"),
        }
    }
}

/// Waits for the close frame and returns its code.
async fn close_code(ws: &mut Raw) -> Option<CloseCode> {
    loop {
        match timeout(WAIT, ws.next()).await.unwrap() {
            Some(Ok(Message::Close(frame))) => return frame.map(|f| f.code),
            Some(Ok(_)) => continue,
            Some(Err(e)) => panic!("error before the close frame: {e}"),
            None => return None,
        }
    }
}

#[tokio::test]
async fn calls_both_ways_and_batches() {
    let (url, _server) = start(WsConfig::default()).await;
    let client_router =
        Router::new().sync_method("double", |(x,): (i64,)| Ok::<_, RpcError>(2 * x));
    let session = ws::connect(
        &url,
        Builder::new().router(client_router),
        &WsConfig::default(),
    )
    .await
    .unwrap();
    let c = session.client();
    assert_eq!(c.call::<_, i64>("subtract", [42, 23]).await.unwrap(), 19);
    assert_eq!(c.call::<_, i64>("ask_back", [20]).await.unwrap(), 41);
    let mut batch = c.batch();
    batch.call("subtract", [5, 3]).unwrap();
    batch.call("subtract", [1, 1]).unwrap();
    let results = batch.send().await.unwrap();
    assert_eq!(results.get::<i64>(0).unwrap(), 2);
    assert_eq!(results.get::<i64>(1).unwrap(), 0);
    let doc: Value = c.call("rpc.discover", ()).await.unwrap();
    let names: Vec<&str> = doc["methods"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["name"].as_str())
        .collect();
    assert_eq!(names, ["ask_back", "broadcast", "subtract"]);
    session.close().await.unwrap();
}

#[tokio::test]
async fn one_text_message_per_message_and_pretty_json() {
    let (url, _server) = start(WsConfig::default()).await;
    let mut ws = raw(&url).await;
    // Newlines inside a message are fine: a message is a message, not a line.
    ws.send(Message::text("{\n \"jsonrpc\": \"2.0\",\n \"method\": \"subtract\",\n \"params\": [42, 23],\n \"id\": 1\n}"))
        .await
        .unwrap();
    assert_eq!(
        next_text(&mut ws).await,
        json!({"jsonrpc": "2.0", "result": 19, "id": 1})
    );
    // A batch is one message, and so is its answer.
    ws.send(Message::text(r#"[{"jsonrpc":"2.0","method":"subtract","params":[1,2],"id":"a"},{"jsonrpc":"2.0","method":"nope","id":"b"}]"#))
        .await
        .unwrap();
    let answer = next_text(&mut ws).await;
    assert_eq!(answer.as_array().map(Vec::len), Some(2));
    // Garbage is answered, and the connection goes on.
    ws.send(Message::text("{not json")).await.unwrap();
    assert_eq!(next_text(&mut ws).await["error"]["code"], -32700);
    ws.send(Message::text(
        r#"{"jsonrpc":"2.0","method":"subtract","params":[2,1],"id":2}"#,
    ))
    .await
    .unwrap();
    assert_eq!(next_text(&mut ws).await["result"], 1);
}

#[tokio::test]
async fn notifications_reach_one_and_all() {
    let (url, server) = start(WsConfig::default()).await;
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut sessions = Vec::new();
    for n in 0..3 {
        let seen = Arc::clone(&seen);
        let router = Router::new().notification("news", move |(text,): (String,)| {
            let seen = Arc::clone(&seen);
            async move { seen.lock().unwrap().push(format!("{n}:{text}")) }
        });
        sessions.push(
            ws::connect(&url, Builder::new().router(router), &WsConfig::default())
                .await
                .unwrap(),
        );
    }
    // Every connection is registered once its handshake is done.
    timeout(WAIT, async {
        while server.hub().len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let n: usize = sessions[0]
        .client()
        .call("broadcast", ["hi"])
        .await
        .unwrap();
    assert_eq!(n, 3);
    timeout(WAIT, async {
        while seen.lock().unwrap().len() < 3 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let mut got = seen.lock().unwrap().clone();
    got.sort();
    assert_eq!(got, ["0:hi", "1:hi", "2:hi"]);
    for s in sessions {
        s.close().await.unwrap();
    }
}

#[tokio::test]
async fn on_connect_gives_each_connection_its_client() {
    let kept: Arc<Mutex<Vec<Client>>> = Arc::default();
    let keep = Arc::clone(&kept);
    let server = WsServer::new(Builder::new().router(Router::new()), WsConfig::default())
        .on_connect(move |c| keep.lock().unwrap().push(c));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/", listener.local_addr().unwrap());
    tokio::spawn(server.serve_tcp(listener));
    let mut ws = raw(&url).await;
    let client = timeout(WAIT, async {
        loop {
            if let Some(c) = kept.lock().unwrap().first().cloned() {
                return c;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    client.notify("hello", ["you"]).await.unwrap();
    assert_eq!(
        next_text(&mut ws).await,
        json!({"jsonrpc":"2.0","method":"hello","params":["you"]})
    );
}

#[tokio::test]
async fn oversize_message_closes_1009_at_the_edge() {
    let config = WsConfig {
        max_message: 2048,
        ..WsConfig::default()
    };
    let (url, _server) = start(config).await;
    let mut ws = raw(&url).await;
    // Exactly the limit: answered.
    let head = r#"{"jsonrpc":"2.0","method":"subtract","params":[1,1],"id":1,"pad":""#;
    let fill = 2048 - head.len() - 2;
    let at_limit = format!("{head}{}\"}}", "x".repeat(fill));
    assert_eq!(at_limit.len(), 2048);
    ws.send(Message::text(at_limit)).await.unwrap();
    assert_eq!(next_text(&mut ws).await["result"], 0);
    // One byte more: close 1009.
    let over = format!("{head}{}\"}}", "x".repeat(fill + 1));
    ws.send(Message::text(over)).await.unwrap();
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Size));
}

#[tokio::test]
async fn invalid_utf8_closes_1007_and_binary_1003() {
    let (url, _server) = start(WsConfig::default()).await;
    let mut ws = raw(&url).await;
    let frame = tokio_tungstenite::tungstenite::protocol::frame::Frame::message(
        vec![b'"', 0xff, 0xfe, b'"'],
        tokio_tungstenite::tungstenite::protocol::frame::coding::OpCode::Data(
            tokio_tungstenite::tungstenite::protocol::frame::coding::Data::Text,
        ),
        true,
    );
    ws.send(Message::Frame(frame)).await.unwrap();
    assert_eq!(close_code(&mut ws).await, Some(CloseCode::Invalid));

    let mut ws = raw(&url).await;
    ws.send(Message::binary(&b"{}"[..])).await.unwrap();
    loop {
        match timeout(WAIT, ws.next()).await.unwrap() {
            Some(Ok(Message::Close(Some(frame)))) => {
                assert_eq!(frame.code, CloseCode::Unsupported);
                assert!(frame.reason.contains("text"), "{}", frame.reason);
                break;
            }
            Some(Ok(_)) => continue,
            other => panic!("expected close 1003, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn silent_peer_is_dropped_after_ping_timeout() {
    let config = WsConfig {
        ping_interval: Some(Duration::from_millis(100)),
        pong_timeout: Duration::from_millis(300),
        ..WsConfig::default()
    };
    let (url, server) = start(config.clone()).await;
    // Our client answers pings (its driver always reads).
    let alive = ws::connect(&url, Builder::new(), &WsConfig::default())
        .await
        .unwrap();
    // A raw peer that is never polled again never answers.
    let dead = raw(&url).await;
    timeout(WAIT, async {
        while server.hub().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    let started = tokio::time::Instant::now();
    timeout(WAIT, async {
        while server.hub().len() > 1 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap();
    // Dropped once a ping went unanswered: after the interval plus the timeout, not before.
    assert!(
        started.elapsed() >= Duration::from_millis(250),
        "{:?}",
        started.elapsed()
    );
    // Well past several ping rounds the answering client is still there and served.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(server.hub().len(), 1);
    assert_eq!(
        alive
            .client()
            .call::<_, i64>("subtract", [5, 2])
            .await
            .unwrap(),
        3
    );
    drop(dead);
    alive.close().await.unwrap();
}

#[tokio::test]
async fn peer_that_stops_reading_is_closed_after_send_timeout_others_served() {
    let config = WsConfig {
        send_timeout: Duration::from_millis(500),
        ping_interval: None,
        ..WsConfig::default()
    };
    let (url, server) = start(config).await;
    let stuck = raw(&url).await;
    let session = ws::connect(&url, Builder::new(), &WsConfig::default())
        .await
        .unwrap();
    timeout(WAIT, async {
        while server.hub().len() < 2 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .unwrap();
    // Flood every connection with notifications; `stuck` never reads.
    let big = "x".repeat(32 << 10);
    let start = tokio::time::Instant::now();
    let mut closed_at = None;
    while start.elapsed() < Duration::from_secs(8) {
        server.hub().notify_all("flood", [&big]).unwrap();
        // The reading client keeps being answered.
        let diff: i64 = timeout(
            Duration::from_secs(2),
            session.client().call("subtract", [3, 1]),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(diff, 2);
        if server.hub().len() == 1 {
            closed_at = Some(start.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let closed_at = closed_at.expect("the stuck connection was never closed");
    assert!(
        closed_at >= Duration::from_millis(500),
        "closed too early: {closed_at:?}"
    );
    drop(stuck);
    session.close().await.unwrap();
}

#[tokio::test]
async fn plain_http_gets_426_and_the_console_when_enabled() {
    let server =
        WsServer::new(Builder::new().router(Router::new()), WsConfig::default()).console(true);
    let get = |path: &str| {
        hyper::Request::get(path)
            .body(http_body_util::Empty::<hyper::body::Bytes>::new())
            .unwrap()
    };
    let res = server.handle(get("/"));
    assert_eq!(res.status(), 200);
    let res = server.handle(get("/other"));
    assert_eq!(res.status(), 426);
    let bad = hyper::Request::get("/")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .body(())
        .unwrap();
    assert!(ws::is_upgrade(&bad));
    assert_eq!(server.upgrade(bad).status(), 400); // no key, no version
}

#[tokio::test]
async fn upgrade_from_another_hyper_service_on_the_same_path() {
    use http_body_util::Full;
    use hyper::body::Bytes;
    // An HTTP service of its own (here: plain text for anything else) that hands WebSocket
    // upgrades on /rpc to the WebSocket server.
    let server = WsServer::new(
        Builder::new().router(router(Hub::new())),
        WsConfig::default(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        loop {
            let (stream, _) = listener.accept().await.unwrap();
            let server = server.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let res = if ws::is_upgrade(&req) {
                            server.upgrade(req)
                        } else {
                            hyper::Response::new(Full::new(Bytes::from_static(b"plain HTTP here")))
                        };
                        async move { Ok::<_, std::convert::Infallible>(res) }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(stream), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    let session = ws::connect(
        &format!("ws://{addr}/rpc"),
        Builder::new(),
        &WsConfig::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        session
            .client()
            .call::<_, i64>("subtract", [42, 23])
            .await
            .unwrap(),
        19
    );
    session.close().await.unwrap();
}

#[tokio::test]
async fn empty_and_header_like_messages_are_just_bad_json() {
    let (url, _server) = start(WsConfig::default()).await;
    let mut ws = raw(&url).await;
    // A message cannot smuggle a second frame: its whole text is one JSON text.
    ws.send(Message::text("Content-Length: 2\r\n\r\n{}"))
        .await
        .unwrap();
    assert_eq!(next_text(&mut ws).await["error"]["code"], -32700);
    ws.send(Message::text("")).await.unwrap();
    ws.send(Message::text(
        r#"{"jsonrpc":"2.0","method":"subtract","params":[9,1],"id":7}"#,
    ))
    .await
    .unwrap();
    // The empty message gets a parse error or nothing; either way the next call is answered.
    let mut answer = next_text(&mut ws).await;
    if answer["id"].is_null() {
        assert_eq!(answer["error"]["code"], -32700);
        answer = next_text(&mut ws).await;
    }
    assert_eq!(answer, json!({"jsonrpc": "2.0", "result": 8, "id": 7}));
}

#[tokio::test]
async fn notify_all_refuses_params_that_are_not_structured() {
    let hub = Hub::new();
    assert!(matches!(
        hub.notify_all("x", 5),
        Err(rpcwire_tokio::CallError::ParamsNotStructured)
    ));
    assert_eq!(hub.notify_all("x", ()).unwrap(), 0);
    assert_eq!(hub.notify_all("x", [1]).unwrap(), 0);
}

/// `handshake_timeout`: a connection that never sends its upgrade request is closed, and a
/// WebSocket connection, once upgraded, is not bound by it.
#[tokio::test]
async fn a_connection_without_its_upgrade_is_closed_after_the_handshake_timeout() {
    use tokio::io::AsyncReadExt;
    let config = WsConfig {
        handshake_timeout: Duration::from_millis(300),
        ..WsConfig::default()
    };
    let (url, _) = start(config).await;
    let addr = url.trim_start_matches("ws://").trim_end_matches("/rpc");
    let mut silent = tokio::net::TcpStream::connect(addr).await.unwrap();
    let since = std::time::Instant::now();
    let mut buf = [0u8; 64];
    let n = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut buf))
        .await
        .expect("closed in time");
    assert!(matches!(n, Ok(0) | Err(_)), "{n:?}");
    assert!(since.elapsed() >= Duration::from_millis(250));
    // An upgraded connection stays open past it.
    let mut ws = raw(&url).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    ws.send(Message::text(
        r#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
    ))
    .await
    .unwrap();
    assert_eq!(next_text(&mut ws).await["result"], 19);
}

#[tokio::test]
async fn the_standalone_server_refuses_foreign_hosts_and_origins() {
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::Error;

    // An upgrade with `host` and `origin` to the server; its HTTP status.
    async fn status(url: &str, host: Option<&str>, origin: Option<&str>) -> u16 {
        let mut request = url.into_client_request().unwrap();
        if let Some(host) = host {
            request.headers_mut().insert("host", host.parse().unwrap());
        }
        if let Some(origin) = origin {
            request
                .headers_mut()
                .insert("origin", origin.parse().unwrap());
        }
        match tokio_tungstenite::connect_async(request).await {
            Ok((_, response)) => response.status().as_u16(),
            Err(Error::Http(response)) => response.status().as_u16(),
            Err(e) => panic!("{e}"),
        }
    }

    let (url, _) = start(WsConfig::default()).await;
    let port = url.split(':').nth(2).unwrap().split('/').next().unwrap();
    let local = format!("localhost:{port}");
    assert_eq!(status(&url, None, None).await, 101);
    assert_eq!(
        status(&url, Some(&local), Some("http://localhost")).await,
        101
    );
    // A rebound DNS name, and a page of another site: refused before any upgrade.
    assert_eq!(status(&url, Some("evil.example"), None).await, 403);
    assert_eq!(status(&url, None, Some("https://evil.example")).await, 403);

    // Any host, when the server says so.
    let server = WsServer::new(Builder::new().router(Router::new()), WsConfig::default())
        .hosts(rpcwire_http::HostPolicy::Any);
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/rpc", listener.local_addr().unwrap());
    tokio::spawn(server.serve_tcp(listener));
    let foreign = Some("https://evil.example");
    assert_eq!(status(&url, Some("evil.example"), foreign).await, 101);
}
