//! One policy suite over every path (issue 40): the same service, served over stdio (a child
//! process), TCP, TLS over TCP with a client certificate, HTTP/1.1 keep-alive (with a
//! handler that reads its `Context` and with one that does not), HTTP/2, WebSocket, HTTPS and
//! WSS with a client certificate, and through the A2A endpoint and the MCP Streamable HTTP
//! endpoint (stateless revision) with the suite's methods on the profile's router, gives the
//! same observable results on each:
//!
//! - the caller's identity as its transport established it (the local process on stdio,
//!   anonymous on plain TCP, the bearer token's subject on HTTP and WebSocket, the client
//!   certificate's subject under mutual TLS);
//! - Forbidden (-32040) for a method the access rules refuse, member by member in a batch
//!   (the A2A and MCP endpoints, whose protocols have no batches, are sent none);
//! - the generic internal error for a handler that panics and for one whose internal error
//!   carries details (no `data`, no detail);
//! - the rate limit counted exactly once per call: a burst of N + k calls gives exactly N
//!   answers and k refusals (-32041);
//! - one SERVER span per call, whose parent is the caller's `traceparent` (an HTTP header, or
//!   `params._meta` on a stream), with no span between (checked on the OpenTelemetry spans
//!   the calls export).
//!
//! A test binary without libtest's harness: it is its own stdio server (run again with
//! `RPCWIRE_POLICY_STDIO=1`, it serves the suite's service on stdin and stdout and prints the
//! spans it exported on stderr when stdin ends).
#![allow(missing_docs, clippy::unwrap_used, clippy::expect_used)]

use std::net::SocketAddr;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use opentelemetry::trace::{SpanKind, TracerProvider as _};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use rpcwire_http::ws::{WsConfig, WsServer};
use rpcwire_http::HttpServer;
use rpcwire_mcp::http::{McpHttpServer, Mode, STATELESS_VERSION};
use rpcwire_tests::pki::{LoopbackPki, Scratch, Usage};
use rpcwire_tests::raw_http;
use rpcwire_tokio::tls::{ServerTls, TlsFiles};
use rpcwire_tokio::{
    AuthError, AuthFuture, Authenticator, Builder, Context, Credentials, Identity, RateLimiter,
    Router, RpcError, Service,
};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::Message;
use tracing_subscriber::layer::SubscriberExt;

/// The caller's trace context, in every transport's place for it.
const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// Calls of the suite counted by the rate limit before its burst check (see `check`).
const COUNTED_BEFORE: u32 = 6;
/// The calls the burst check may still make, and those past it.
const N: u32 = 4;
const K: u32 = 3;

const CHILD: &str = "RPCWIRE_POLICY_STDIO";

fn router() -> Router {
    suite_methods(Router::new())
}

/// The suite's methods, added to `router` (a profile's, or an empty one).
fn suite_methods(router: Router) -> Router {
    router
        .method_with_context("whoami", |ctx: Context, _: Option<Value>| async move {
            Ok::<_, RpcError>(ctx.identity().subject().to_owned())
        })
        .sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b))
        .sync_method("admin.reset", |_: Option<Value>| Ok::<_, RpcError>("reset"))
        .sync_method("boom", |_: Option<Value>| -> Result<(), RpcError> {
            panic!("a planted bug")
        })
        .method("secret", |_: Option<Value>| async {
            Err::<(), _>(RpcError::internal("db at 10.0.0.5 refused"))
        })
        // Only `admin` may reset: a policy function, so that it holds for the local process
        // (which holds every role) too.
        .policy(|identity, method| method != "admin.reset" || identity.subject() == "admin")
}

/// The suite's authenticator: a client certificate names its subject; the bearer token
/// `alice-token` is alice; no credentials are anonymous; any other token is refused.
struct SuiteAuth;

impl Authenticator for SuiteAuth {
    fn authenticate<'a>(&'a self, credentials: Credentials<'a>) -> AuthFuture<'a> {
        let identity = match (credentials.certificate, credentials.bearer()) {
            (Some(certificate), _) => Ok(Identity::new(certificate.subject.clone())),
            (None, Ok(Some("alice-token"))) => Ok(Identity::new("alice")),
            (None, Ok(Some(_))) => Err(AuthError::Invalid("unknown token")),
            (None, Ok(None)) => Ok(Identity::anonymous()),
            (None, Err(e)) => Err(e),
        };
        Box::pin(async move { identity })
    }
}

/// The same service for every path, each with a limiter of its own.
fn service() -> Service {
    Service::new(router())
        .authenticator(SuiteAuth)
        .rate_limit(RateLimiter::new(0.0001, COUNTED_BEFORE + N))
}

/// One path to the service: a body in, its answer out.
trait Path {
    /// Sends `body` (with `traceparent` where the path carries it beside the message) and
    /// returns its answer.
    async fn call(&mut self, body: &str, traceparent: Option<&str>) -> Value;
    /// Whether the trace context travels beside the message (HTTP headers) rather than in
    /// `params._meta`.
    fn headers_carry_traces(&self) -> bool {
        false
    }
    /// Whether the protocol on this path has batches.
    fn batches(&self) -> bool {
        true
    }
}

/// A line-framed byte stream (stdio, TCP, TLS).
struct Lines<R, W> {
    read: BufReader<R>,
    write: W,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Path for Lines<R, W> {
    async fn call(&mut self, body: &str, _: Option<&str>) -> Value {
        self.write.write_all(body.as_bytes()).await.unwrap();
        self.write.write_all(b"\n").await.unwrap();
        self.write.flush().await.unwrap();
        let mut line = String::new();
        self.read.read_line(&mut line).await.unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }
}

/// HTTP/1.1 on one keep-alive connection (plain or over TLS), the bearer token on each request.
struct Http1<S> {
    stream: S,
    bearer: Option<&'static str>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Path for Http1<S> {
    async fn call(&mut self, body: &str, traceparent: Option<&str>) -> Value {
        let mut headers = Vec::new();
        if let Some(token) = self.bearer {
            headers.push(("authorization".to_owned(), format!("Bearer {token}")));
        }
        if let Some(tp) = traceparent {
            headers.push(("traceparent".to_owned(), tp.to_owned()));
        }
        let request = raw_http::json_post("/rpc", &headers, body);
        self.stream.write_all(request.as_bytes()).await.unwrap();
        let (head, answer) = read_answer(&mut self.stream).await;
        let status = raw_http::status(&head);
        // 200, or 429 for a call refused by the rate limit alone (the JSON-RPC error is the
        // body either way).
        assert!(status == 200 || status == 429, "{head}");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {head}{answer}"))
    }

    fn headers_carry_traces(&self) -> bool {
        true
    }
}

/// A profile's endpoint (A2A, MCP), a connection per call, as alice, with the headers the
/// profile asks for each method.
struct Profile {
    addr: SocketAddr,
    path: &'static str,
    headers: fn(&str) -> Vec<(String, String)>,
    batches: bool,
    /// MCP's stateless revision: every request's object params carry its `_meta`.
    mcp_meta: bool,
}

impl Path for Profile {
    async fn call(&mut self, body: &str, traceparent: Option<&str>) -> Value {
        let mut message: Value = serde_json::from_str(body).unwrap();
        let with_meta;
        let body = match message["params"].as_object_mut() {
            Some(params) if self.mcp_meta => {
                let meta = params.entry("_meta").or_insert_with(|| json!({}));
                meta["io.modelcontextprotocol/protocolVersion"] = json!(STATELESS_VERSION);
                meta["io.modelcontextprotocol/clientCapabilities"] = json!({});
                with_meta = message.to_string();
                &with_meta
            }
            _ => body,
        };
        let mut headers = (self.headers)(message["method"].as_str().unwrap_or_default());
        headers.push(("authorization".to_owned(), "Bearer alice-token".to_owned()));
        if let Some(tp) = traceparent {
            headers.push(("traceparent".to_owned(), tp.to_owned()));
        }
        let request = raw_http::json_post(self.path, &headers, body);
        let (head, answer) = raw_http::exchange(self.addr, &[request]).await.remove(0);
        let status = raw_http::status(&head);
        assert!(status == 200 || status == 429, "{head}{answer}");
        serde_json::from_str(&answer).unwrap_or_else(|e| panic!("{e}: {head}{answer}"))
    }

    fn headers_carry_traces(&self) -> bool {
        true
    }

    fn batches(&self) -> bool {
        self.batches
    }
}

/// One HTTP/1.1 answer from `stream`: its head and its body (by `content-length`).
async fn read_answer<S: AsyncRead + Unpin>(stream: &mut S) -> (String, String) {
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).await.unwrap();
        assert!(!line.is_empty(), "the connection closed: {head}");
        head.push_str(&line.to_ascii_lowercase());
        if line == "\r\n" {
            break;
        }
    }
    let len: usize = raw_http::header(&head, "content-length").parse().unwrap();
    let mut body = vec![0; len];
    tokio::io::AsyncReadExt::read_exact(&mut reader, &mut body)
        .await
        .unwrap();
    // Nothing is read past the body: the buffered reader is dropped empty.
    assert!(reader.buffer().is_empty());
    (head, String::from_utf8(body).unwrap())
}

/// HTTP/2 with prior knowledge, one stream per call.
struct Http2 {
    send: hyper::client::conn::http2::SendRequest<Full<Bytes>>,
    base: String,
}

impl Path for Http2 {
    async fn call(&mut self, body: &str, traceparent: Option<&str>) -> Value {
        let mut request = http::Request::post(format!("{}/rpc", self.base))
            .header("content-type", "application/json")
            .header("authorization", "Bearer alice-token");
        if let Some(tp) = traceparent {
            request = request.header("traceparent", tp);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body.as_bytes())))
            .unwrap();
        let response = self.send.send_request(request).await.unwrap();
        let status = response.status().as_u16();
        assert!(status == 200 || status == 429, "{status}");
        let body = response.into_body().collect().await.unwrap().to_bytes();
        serde_json::from_slice(&body).unwrap()
    }

    fn headers_carry_traces(&self) -> bool {
        true
    }
}

/// A WebSocket (plain or over TLS): one message per text message.
struct Ws<S> {
    socket: tokio_tungstenite::WebSocketStream<S>,
}

impl<S: AsyncRead + AsyncWrite + Unpin> Path for Ws<S> {
    async fn call(&mut self, body: &str, _: Option<&str>) -> Value {
        self.socket.send(Message::text(body)).await.unwrap();
        loop {
            match self.socket.next().await.unwrap().unwrap() {
                Message::Text(text) => return serde_json::from_str(&text).unwrap(),
                _ => continue,
            }
        }
    }
}

/// A call of `method` with id `id`, and in `params._meta` the trace context when asked.
fn request(method: &str, id: &Value, params: Value) -> String {
    json!({"jsonrpc": "2.0", "method": method, "params": params, "id": id}).to_string()
}

/// What every path must give, and the id of its traced call.
async fn check(name: &str, path: &mut impl Path, subject: &str, limited: &str) -> String {
    let error = |answer: &Value| answer["error"]["code"].as_i64();
    // 1. The identity its transport established. (Counted: 1.)
    let answer = path
        .call(&request("whoami", &json!(1), json!({})), None)
        .await;
    assert_eq!(answer["result"], subject, "{name}: {answer}");
    // 2. Forbidden, for the local process too. (Not counted: refused before the limit.)
    let answer = path
        .call(&request("admin.reset", &json!(2), json!({})), None)
        .await;
    assert_eq!(error(&answer), Some(-32040), "{name}: {answer}");
    assert_eq!(answer["error"]["message"], "Forbidden", "{name}: {answer}");
    // 3. The generic internal error, for a panic and for an internal error's details. (2, 3.)
    for (id, method) in [(3, "boom"), (4, "secret")] {
        let answer = path
            .call(&request(method, &json!(id), json!({})), None)
            .await;
        assert_eq!(
            answer["error"],
            json!({"code": -32603, "message": "Internal error"}),
            "{name}: {answer}"
        );
    }
    // 4. A batch, member by member. (4, 5: paths without batches count 2 less.)
    if path.batches() {
        let batch = format!(
            "[{},{},{}]",
            request("add", &json!(5), json!([2, 3])),
            request("whoami", &json!(6), json!({})),
            request("admin.reset", &json!(7), json!({})),
        );
        let answer = path.call(&batch, None).await;
        let mut members = answer
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {answer}"))
            .clone();
        members.sort_by_key(|m| m["id"].as_i64());
        assert_eq!(members.len(), 3, "{name}: {answer}");
        assert_eq!(members[0]["result"], 5, "{name}: {answer}");
        assert_eq!(members[1]["result"], subject, "{name}: {answer}");
        assert_eq!(error(&members[2]), Some(-32040), "{name}: {answer}");
    }
    // 5. A traced call. (6.)
    let traced = format!("traced-{name}");
    let params = if path.headers_carry_traces() {
        json!({})
    } else {
        json!({"_meta": {"traceparent": TRACEPARENT}})
    };
    let answer = path
        .call(
            &request("whoami", &json!(traced), params),
            Some(TRACEPARENT),
        )
        .await;
    assert_eq!(answer["result"], subject, "{name}: {answer}");
    // 6. The rate limit, each call counted once: N answers and K refusals.
    let (mut answered, mut refused) = (0, 0);
    for i in 0..N + K {
        let params = if limited == "add" {
            json!([i, 1])
        } else {
            json!({})
        };
        let answer = path
            .call(&request(limited, &json!(100 + i), params), None)
            .await;
        match error(&answer) {
            None => answered += 1,
            Some(-32041) => refused += 1,
            Some(_) => panic!("{name}: {answer}"),
        }
    }
    assert_eq!((answered, refused), (N, K), "{name}: the rate limit");
    let batch = if path.batches() {
        "batch"
    } else {
        "no batches"
    };
    println!("{name}: identity, Forbidden, internal errors, {batch}, rate limit: ok");
    traced
}

/// A finished span, as the checks read it.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Finished {
    name: String,
    server: bool,
    trace_id: String,
    parent: String,
    id: Option<String>,
}

impl Finished {
    fn of(span: &SpanData) -> Self {
        let id = span
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == "jsonrpc.request.id")
            .map(|kv| kv.value.as_str().into_owned());
        Finished {
            name: span.name.to_string(),
            server: span.span_kind == SpanKind::Server,
            trace_id: span.span_context.trace_id().to_string(),
            parent: span.parent_span_id.to_string(),
            id,
        }
    }
}

/// Exactly one SERVER span for the call `id`, a child of the caller's trace context.
fn check_span(name: &str, spans: &[Finished], id: &str) {
    let calls: Vec<&Finished> = spans
        .iter()
        .filter(|s| s.id.as_deref() == Some(id))
        .collect();
    assert_eq!(calls.len(), 1, "{name}: one span for {id}: {spans:#?}");
    let call = calls[0];
    assert!(call.server, "{name}: {call:?}");
    assert_eq!(call.name, "whoami", "{name}: {call:?}");
    assert_eq!(call.trace_id, TRACE_ID, "{name}: {call:?}");
    assert_eq!(
        call.parent, PARENT_ID,
        "{name}: the caller's traceparent is the parent, nothing between: {call:?}"
    );
    println!("{name}: one SERVER span, child of the caller's traceparent: ok");
}

/// Installs the process's OpenTelemetry pipeline: every span sampled, exported in memory.
fn install_spans() -> (SdkTracerProvider, InMemorySpanExporter) {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let tracer = provider.tracer("policy-matrix");
    let subscriber =
        tracing_subscriber::registry().with(tracing_opentelemetry::layer().with_tracer(tracer));
    tracing::subscriber::set_global_default(subscriber).unwrap();
    (provider, exporter)
}

fn finished(provider: &SdkTracerProvider, exporter: &InMemorySpanExporter) -> Vec<Finished> {
    let _ = provider.force_flush();
    exporter
        .get_finished_spans()
        .unwrap()
        .iter()
        .map(Finished::of)
        .collect()
}

/// The stdio child: serves the suite's service on stdin and stdout until stdin ends, then
/// prints the spans it exported on stderr, one JSON object per line.
fn stdio_child() {
    let (provider, exporter) = install_spans();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        Builder::new()
            .service(service())
            .stdio()
            .join()
            .await
            .unwrap();
    });
    for span in finished(&provider, &exporter) {
        eprintln!("{}", serde_json::to_string(&span).unwrap());
    }
}

/// Keeps the planted panic out of the output (it is answered, and checked, as an internal
/// error); any other panic is reported as usual.
fn quiet_planted_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if info.payload().downcast_ref::<&str>() != Some(&"a planted bug") {
            report(info);
        }
    }));
}

fn main() {
    quiet_planted_panics();
    if std::env::var_os(CHILD).is_some() {
        return stdio_child();
    }
    let (provider, exporter) = install_spans();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async move {
        tokio::time::timeout(Duration::from_secs(120), matrix(&provider, &exporter))
            .await
            .expect("the suite exceeded its time limit");
    });
    println!("policy matrix: every path gives the same results");
}

async fn listen() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    (listener, addr)
}

/// An HTTP server of the suite's service with WebSocket on the same path.
fn http_service() -> rpcwire_http::RpcService {
    let ws = WsServer::new(Builder::new().service(service()), WsConfig::default());
    HttpServer::new(Builder::new().service(service()))
        .path("/rpc")
        .websocket(ws)
        .build()
}

async fn matrix(provider: &SdkTracerProvider, exporter: &InMemorySpanExporter) {
    let spans = || finished(provider, exporter);

    // stdio: this binary again, as a child process.
    {
        let mut child = tokio::process::Command::new(std::env::current_exe().unwrap())
            .env(CHILD, "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap();
        let mut path = Lines {
            read: BufReader::new(child.stdout.take().unwrap()),
            write: child.stdin.take().unwrap(),
        };
        let traced = check("stdio", &mut path, "local", "add").await;
        drop(path);
        let out = child.wait_with_output().await.unwrap();
        assert!(out.status.success(), "{out:?}");
        let exported: Vec<Finished> = String::from_utf8(out.stderr)
            .unwrap()
            .lines()
            .filter_map(|l| serde_json::from_str(l).ok())
            .collect();
        check_span("stdio", &exported, &traced);
    }

    // TCP.
    {
        let (listener, addr) = listen().await;
        let server = tokio::spawn(Builder::new().service(service()).serve_tcp(listener));
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (read, write) = stream.into_split();
        let mut path = Lines {
            read: BufReader::new(read),
            write,
        };
        let traced = check("tcp", &mut path, "anonymous", "add").await;
        check_span("tcp", &spans(), &traced);
        server.abort();
    }

    // TLS over TCP, HTTPS and WSS, all with a client certificate.
    let scratch = Scratch::new("policy-matrix").unwrap();
    let pki = LoopbackPki::new(&scratch, "policy matrix CA").unwrap();
    let (client_cert, client_key) = pki
        .ca
        .issue_files(
            &scratch,
            "client",
            "client-1",
            &["client1.example"],
            Usage::Client,
        )
        .unwrap();
    let files = TlsFiles {
        cert: pki.cert.clone(),
        key: pki.key.clone(),
        client_ca: Some(pki.ca_file.clone()),
    };
    let client_tls = Arc::new(
        rpcwire_tokio::tls::client_config(&pki.ca_file, Some((&client_cert, &client_key))).unwrap(),
    );
    let subject = {
        let der = rpcwire_tokio::tls::certificates_from_pem(&client_cert).unwrap();
        rpcwire_tokio::tls::peer_certificate(der[0].as_ref()).subject
    };
    {
        let (listener, addr) = listen().await;
        let tls = ServerTls::from_files(files.clone()).unwrap();
        let server = tokio::spawn(Builder::new().service(service()).serve_tls(listener, tls));
        let stream = rpcwire_tokio::tls::connect(addr, "localhost", Arc::clone(&client_tls))
            .await
            .unwrap();
        let (read, write) = tokio::io::split(stream);
        let mut path = Lines {
            read: BufReader::new(read),
            write,
        };
        let traced = check("tls", &mut path, &subject, "add").await;
        check_span("tls", &spans(), &traced);
        server.abort();
    }
    {
        let (listener, addr) = listen().await;
        let tls = ServerTls::with_alpn(files.clone(), &[b"http/1.1"]).unwrap();
        let server = tokio::spawn(rpcwire_http::serve_tls(
            listener,
            http_service(),
            tls,
            Duration::from_secs(10),
        ));
        let stream = rpcwire_tokio::tls::connect(addr, "localhost", Arc::clone(&client_tls))
            .await
            .unwrap();
        let mut path = Http1 {
            stream,
            bearer: None,
        };
        let traced = check("https", &mut path, &subject, "whoami").await;
        check_span("https", &spans(), &traced);
        let stream = rpcwire_tokio::tls::connect(addr, "localhost", Arc::clone(&client_tls))
            .await
            .unwrap();
        let upgrade = format!("wss://localhost:{}/rpc", addr.port())
            .into_client_request()
            .unwrap();
        let (socket, _) = tokio_tungstenite::client_async(upgrade, stream)
            .await
            .unwrap();
        let mut path = Ws { socket };
        let traced = check("wss", &mut path, &subject, "add").await;
        check_span("wss", &spans(), &traced);
        server.abort();
    }

    // HTTP/1.1 keep-alive, with a handler that reads its context and with one that does not;
    // HTTP/2; WebSocket: one server, the bearer token's identity.
    let (listener, addr) = listen().await;
    let server = tokio::spawn(rpcwire_http::serve(listener, http_service()));
    for (name, limited) in [("http1-context", "whoami"), ("http1", "add")] {
        // A fresh service per check: the rate limit's budget is the suite's each time.
        let (listener, addr) = listen().await;
        let server = tokio::spawn(rpcwire_http::serve(listener, http_service()));
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let mut path = Http1 {
            stream,
            bearer: Some("alice-token"),
        };
        let traced = check(name, &mut path, "alice", limited).await;
        check_span(name, &spans(), &traced);
        server.abort();
    }
    {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (send, connection) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(stream),
        )
        .await
        .unwrap();
        tokio::spawn(connection);
        let mut path = Http2 {
            send,
            base: format!("http://{addr}"),
        };
        let traced = check("http2", &mut path, "alice", "add").await;
        check_span("http2", &spans(), &traced);
    }
    {
        let mut upgrade = format!("ws://{addr}/rpc").into_client_request().unwrap();
        upgrade
            .headers_mut()
            .insert("authorization", "Bearer alice-token".parse().unwrap());
        let (socket, _) = tokio_tungstenite::connect_async(upgrade).await.unwrap();
        let mut path = Ws { socket };
        let traced = check("websocket", &mut path, "alice", "add").await;
        check_span("websocket", &spans(), &traced);
    }
    server.abort();
    profiles(provider, exporter).await;
}

/// The A2A and MCP endpoints, each with the suite's methods on the profile's own router and
/// the suite's authenticator and rate limit.
async fn profiles(provider: &SdkTracerProvider, exporter: &InMemorySpanExporter) {
    // Neither profile takes batches (the A2A endpoint answers one with Invalid Request; MCP's
    // revisions have none): the batch's two counted calls are not made.
    {
        async fn agent(ctx: rpcwire_a2a::TaskContext) {
            ctx.complete(None);
        }
        let card = rpcwire_a2a::AgentCard {
            name: "policy-matrix".into(),
            ..rpcwire_a2a::AgentCard::default()
        };
        let service = rpcwire_a2a::A2aServer::new(card, agent)
            .authenticator(SuiteAuth)
            .rate_limit(RateLimiter::new(0.0001, COUNTED_BEFORE - 2 + N))
            .map_router(suite_methods)
            .build();
        let (listener, addr) = listen().await;
        let server = tokio::spawn(rpcwire_a2a::serve(listener, service));
        let mut path = Profile {
            addr,
            path: "/",
            headers: |_| vec![("a2a-version".to_owned(), "1.0".to_owned())],
            mcp_meta: false,
            batches: false,
        };
        let traced = check("a2a", &mut path, "alice", "add").await;
        check_span("a2a", &finished(provider, exporter), &traced);
        server.abort();
    }
    {
        let tools = rpcwire_mcp::tokio::McpServer::new("policy-matrix", "1.0");
        let builder = rpcwire_mcp::tokio::mcp_builder().router(suite_methods(tools.router()));
        let service = McpHttpServer::from_builder(builder)
            .mode(Mode::Stateless)
            .authenticator(SuiteAuth)
            .rate_limit(RateLimiter::new(0.0001, COUNTED_BEFORE - 2 + N))
            .build();
        let (listener, addr) = listen().await;
        let server = tokio::spawn(rpcwire_mcp::http::serve(listener, service));
        let mut path = Profile {
            addr,
            path: "/mcp",
            headers: |method| {
                vec![
                    (
                        "mcp-protocol-version".to_owned(),
                        STATELESS_VERSION.to_owned(),
                    ),
                    ("mcp-method".to_owned(), method.to_owned()),
                ]
            },
            batches: false,
            mcp_meta: true,
        };
        let traced = check("mcp", &mut path, "alice", "add").await;
        check_span("mcp", &finished(provider, exporter), &traced);
        server.abort();
    }
}
