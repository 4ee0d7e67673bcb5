//! The client: a `rpcwire-tokio` connection whose messages go out as POSTs and whose input is
//! the answers (JSON or Server-Sent Events) and, optionally, the server's GET event stream.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use rpcwire::wire::sse::{SseDecoder, SseItem};
use rpcwire::wire::{parse, Framing, Message, ParseLimits, Parsed};
use rpcwire_telemetry::trace_context::{OutgoingTraces, TraceContext};
use rpcwire_tokio::{Builder, Client};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::connect::{error_chain, hyper_client, no_tls, parse_url, HyperClient, Tls, UrlError};
use rpcwire_service::pipe::{send_body, ChannelReader, FrameWriter};

/// The code of the error response a call gets when its POST fails at the HTTP level (a status
/// other than 200/202/204, or no connection): one of the specification's implementation-
/// defined server errors. `data` is `{"status": N, "reason": "..."}` (status 0: no answer).
pub const HTTP_ERROR_CODE: i32 = -32099;

/// A client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The URL is not one the client takes.
    #[error(transparent)]
    BadUrl(#[from] UrlError),
    /// The TLS settings are not usable.
    #[cfg(feature = "tls")]
    #[error("TLS settings: {0}")]
    Tls(#[from] rustls::Error),
    /// A header given to the builder is not valid.
    #[error("invalid header: {0}")]
    BadHeader(String),
}

type NotificationHook = Arc<dyn Fn(&str, Option<&str>) + Send + Sync>;

/// Settings of an [`HttpClient`].
#[derive(Clone)]
pub struct HttpClientBuilder {
    url: String,
    rpc: Builder,
    headers: HeaderMap,
    timeout: Duration,
    max_body: usize,
    on_notification: Option<NotificationHook>,
    tls: Tls,
}

impl std::fmt::Debug for HttpClientBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClientBuilder")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl HttpClientBuilder {
    /// The connection's settings: call timeout, and a [`Router`](rpcwire_tokio::Router) for
    /// what the server sends (notifications such as progress, and its requests, answered by
    /// POST). The framing is set here.
    pub fn rpc(mut self, builder: Builder) -> Self {
        self.rpc = builder;
        self
    }

    /// A header sent with every request (an `Authorization`, say).
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, ClientError> {
        let name = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| ClientError::BadHeader(name.to_owned()))?;
        let value =
            HeaderValue::from_str(value).map_err(|_| ClientError::BadHeader(value.to_owned()))?;
        self.headers.insert(name, value);
        Ok(self)
    }

    /// The longest one POST exchange (an event-stream answer included) may take (default 60 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest answer body or event accepted (default 4 MiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1024);
        self
    }

    /// The TLS settings for an `https://` URL (feature `tls`; default
    /// [`default_tls`](crate::tls::default_tls): Mozilla's root certificates). HTTP/2 is used
    /// when the server offers it.
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: std::sync::Arc<rustls::ClientConfig>) -> Self {
        self.tls = Some(config);
        self
    }

    /// Called with the method and params (JSON text) of every notification the server sends,
    /// as it arrives, before any router handler.
    pub fn on_notification(
        mut self,
        hook: impl Fn(&str, Option<&str>) + Send + Sync + 'static,
    ) -> Self {
        self.on_notification = Some(Arc::new(hook));
        self
    }

    /// Starts the client (on the current tokio runtime). Nothing is connected until the
    /// first call.
    pub fn build(self) -> Result<HttpClient, ClientError> {
        let uri = parse_url(&self.url)?;
        let http = hyper_client::<ClientError>(self.tls)?;
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(16);
        let traces = OutgoingTraces::new();
        let session = self
            .rpc
            .outgoing_traces(traces.clone())
            .framing(Framing::ContentLength)
            .max_frame(self.max_body)
            .run(
                ChannelReader::new(in_rx),
                FrameWriter::new(out_tx, self.max_body),
            );
        let (client, task) = session.into_parts();
        let shared = Arc::new(Shared {
            http,
            uri,
            headers: self.headers,
            timeout: self.timeout,
            max_body: self.max_body,
            inbound: in_tx,
            on_notification: self.on_notification,
            traces,
        });
        let poster = Arc::clone(&shared);
        let posts = tokio::spawn(async move {
            let mut running = tokio::task::JoinSet::new();
            while let Some(message) = out_rx.recv().await {
                running.spawn(Arc::clone(&poster).post(message));
                // Reap what has finished, so the set holds only POSTs in flight.
                while running.try_join_next().is_some() {}
            }
            // The connection has ended: let the last POSTs finish (each within its timeout).
            while running.join_next().await.is_some() {}
        });
        Ok(HttpClient {
            client,
            shared,
            driver: task,
            posts,
        })
    }
}

struct Shared {
    http: HyperClient,
    uri: Uri,
    headers: HeaderMap,
    timeout: Duration,
    max_body: usize,
    inbound: mpsc::Sender<Bytes>,
    on_notification: Option<NotificationHook>,
    /// The trace contexts of the calls going out (while a subscriber listens to their spans):
    /// sent as `traceparent` and `tracestate` headers.
    traces: OutgoingTraces,
}

/// A JSON-RPC client over HTTP: each message goes out as one POST; answers come back as JSON
/// or as an event stream (the server's messages first, then the answer). Calls, batches,
/// notifications and timeouts are [`rpcwire_tokio::Client`]'s.
pub struct HttpClient {
    client: Client,
    shared: Arc<Shared>,
    driver: JoinHandle<Result<(), rpcwire_tokio::DriverError>>,
    posts: JoinHandle<()>,
}

impl std::fmt::Debug for HttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpClient")
            .field("url", &self.shared.uri)
            .finish_non_exhaustive()
    }
}

impl Drop for HttpClient {
    fn drop(&mut self) {
        self.posts.abort();
        self.driver.abort();
    }
}

impl HttpClient {
    /// A client of `url` with default settings.
    pub fn new(url: &str) -> Result<Self, ClientError> {
        Self::builder(url).build()
    }

    /// Settings for a client of `url` (`http://host:port/path`, or `https://` with the `tls`
    /// feature).
    pub fn builder(url: &str) -> HttpClientBuilder {
        HttpClientBuilder {
            url: url.to_owned(),
            rpc: Builder::new(),
            headers: HeaderMap::new(),
            timeout: Duration::from_secs(60),
            max_body: crate::endpoint::DEFAULT_MAX_BODY,
            on_notification: None,
            tls: no_tls(),
        }
    }

    /// Ends the client: what is queued is sent, and the POSTs in flight finish (a
    /// notification has left when this returns), each within the client's timeout.
    pub async fn close(mut self) {
        self.client.shutdown();
        let driver = std::mem::replace(&mut self.driver, tokio::spawn(async { Ok(()) }));
        let posts = std::mem::replace(&mut self.posts, tokio::spawn(async {}));
        let _ = driver.await;
        let _ = posts.await;
    }

    /// The connection's client: `call`, `notify`, `batch`.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Opens the server's GET event stream: its notifications and requests go to the
    /// [`Router`](rpcwire_tokio::Router) and the notification hook, and the answers to its
    /// requests go back by POST. It reconnects after the time the server's `retry` field says
    /// (1 s until it says one), sending `Last-Event-ID`, until the returned handle is dropped;
    /// after failed attempts the wait doubles, up to 30 s.
    pub fn event_stream(&self) -> EventStream {
        let state = Arc::new(Mutex::new(StreamState::default()));
        let task = tokio::spawn(Arc::clone(&self.shared).listen(Arc::clone(&state)));
        EventStream { task, state }
    }
}

/// The GET event stream of an [`HttpClient`]; dropping it closes the stream.
#[derive(Debug)]
pub struct EventStream {
    task: JoinHandle<()>,
    state: Arc<Mutex<StreamState>>,
}

#[derive(Debug, Default)]
struct StreamState {
    last_event_id: String,
    connects: u64,
    events: u64,
}

impl EventStream {
    /// The id of the last event received (what a reconnection sends as `Last-Event-ID`).
    pub fn last_event_id(&self) -> String {
        self.state
            .lock()
            .map(|s| s.last_event_id.clone())
            .unwrap_or_default()
    }

    /// How many times the stream has connected (1 on the first connection).
    pub fn connects(&self) -> u64 {
        self.state.lock().map(|s| s.connects).unwrap_or(0)
    }

    /// How many events have been received.
    pub fn events(&self) -> u64 {
        self.state.lock().map(|s| s.events).unwrap_or(0)
    }
}

impl Drop for EventStream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// The ids of the requests in one message (to fail them when their POST fails).
/// `traceparent` and `tracestate` headers for `cx` (in place of any configured ones).
fn put_trace_headers(headers: &mut HeaderMap, cx: &TraceContext) {
    if let Ok(value) = HeaderValue::from_str(&cx.traceparent()) {
        headers.insert(HeaderName::from_static("traceparent"), value);
    }
    if let Some(Ok(value)) = cx.tracestate().map(HeaderValue::from_str) {
        headers.insert(HeaderName::from_static("tracestate"), value);
    }
}

fn request_ids(message: &[u8]) -> Vec<String> {
    let mut ids = Vec::new();
    match parse(message, ParseLimits::default()) {
        Ok(Parsed::Single(Ok(Message::Request(r)))) => ids.push(r.id.raw().to_owned()),
        Ok(Parsed::Batch(batch)) => {
            for element in batch.iter() {
                if let Ok(Message::Request(r)) = element {
                    ids.push(r.id.raw().to_owned());
                }
            }
        }
        _ => {}
    }
    ids
}

impl Shared {
    fn request(&self, method: Method, body: Bytes, accept: &'static str) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = self.uri.clone();
        let h = req.headers_mut();
        h.clone_from(&self.headers);
        h.insert(header::ACCEPT, HeaderValue::from_static(accept));
        req
    }

    /// Hands a message from the server to the connection (and the notification hook).
    async fn receive(&self, message: Bytes) {
        if let Some(hook) = &self.on_notification {
            match parse(&message, ParseLimits::default()) {
                Ok(Parsed::Single(Ok(Message::Notification(n)))) => {
                    hook(&n.method.to_str(), n.params.map(|p| p.as_str()));
                }
                Ok(Parsed::Batch(batch)) => {
                    for element in batch.iter() {
                        if let Ok(Message::Notification(n)) = element {
                            hook(&n.method.to_str(), n.params.map(|p| p.as_str()));
                        }
                    }
                }
                _ => {}
            }
        }
        send_body(&self.inbound, message).await;
    }

    /// Sends one message and hands its answer back; a failed exchange fails the message's
    /// requests with [`HTTP_ERROR_CODE`].
    async fn post(self: Arc<Self>, message: Bytes) {
        let ids = request_ids(&message);
        let mut req = self.request(Method::POST, message, "application/json, text/event-stream");
        req.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if !self.traces.is_empty() {
            // A batch's calls share one POST: the first traced call's context goes with it.
            if let Some(cx) = ids.iter().find_map(|id| self.traces.take(id)) {
                put_trace_headers(req.headers_mut(), &cx);
            }
        }
        let outcome = tokio::time::timeout(self.timeout, self.exchange(req)).await;
        let failure = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(f)) => f,
            Err(_) => (0, "no answer in time".to_owned()),
        };
        for id in ids {
            let reason = serde_json::to_string(&failure.1).unwrap_or_default();
            let error = format!(
                "{{\"jsonrpc\":\"2.0\",\"error\":{{\"code\":{HTTP_ERROR_CODE},\"message\":\"HTTP error\",\"data\":{{\"status\":{},\"reason\":{reason}}}}},\"id\":{id}}}",
                failure.0
            );
            send_body(&self.inbound, Bytes::from(error)).await;
        }
    }

    async fn exchange(&self, req: Request<Full<Bytes>>) -> Result<(), (u16, String)> {
        let response = self
            .http
            .request(req)
            .await
            .map_err(|e| (0, format!("request failed: {}", error_chain(&e))))?;
        let status = response.status();
        let sse = is_event_stream(&response);
        match status {
            StatusCode::ACCEPTED | StatusCode::NO_CONTENT => return Ok(()),
            StatusCode::OK => {}
            other => return Err(failure(other, response).await),
        }
        let mut body = response.into_body();
        if sse {
            let mut decoder = SseDecoder::with_buffer(Vec::new(), self.max_body);
            return self
                .read_events(&mut body, &mut decoder, |_| {})
                .await
                .map_err(|e| (200, format!("stream failed: {e}")));
        }
        let bytes = http_body_util::Limited::new(body, self.max_body)
            .collect()
            .await
            .map_err(|e| (200, format!("body failed: {e}")))?
            .to_bytes();
        if !bytes.is_empty() {
            self.receive(bytes).await;
        }
        Ok(())
    }

    /// Reads an event stream's `body` through `decoder` until it ends, each `message` event's
    /// data handed to the connection and every item shown to `seen` first.
    async fn read_events(
        &self,
        body: &mut hyper::body::Incoming,
        decoder: &mut SseDecoder<Vec<u8>>,
        mut seen: impl FnMut(&SseItem<'_>),
    ) -> Result<(), hyper::Error> {
        while let Some(frame) = body.frame().await {
            let Ok(chunk) = frame?.into_data() else {
                continue;
            };
            let mut input: &[u8] = &chunk;
            while let Some(item) = decoder.next(&mut input) {
                seen(&item);
                if let SseItem::Event(e) = item {
                    if e.event == "message" && !e.data.is_empty() {
                        self.receive(Bytes::copy_from_slice(e.data.as_bytes()))
                            .await;
                    }
                }
            }
        }
        Ok(())
    }

    /// Keeps the GET stream open, reconnecting with `Last-Event-ID`.
    async fn listen(self: Arc<Self>, state: Arc<Mutex<StreamState>>) {
        let mut decoder = SseDecoder::with_buffer(Vec::new(), self.max_body);
        let mut retry = Duration::from_secs(1);
        // After failures (no connection, a refusal) the wait doubles, up to 30 s.
        let mut backoff = Duration::ZERO;
        loop {
            let mut req = self.request(Method::GET, Bytes::new(), "text/event-stream");
            let last = decoder.last_event_id().to_owned();
            if !last.is_empty() {
                if let Ok(v) = HeaderValue::from_str(&last) {
                    req.headers_mut().insert("last-event-id", v);
                }
            }
            decoder.reset();
            match self.http.request(req).await {
                Ok(response) if response.status() == StatusCode::OK => {
                    backoff = Duration::ZERO;
                    if let Ok(mut s) = state.lock() {
                        s.connects += 1;
                    }
                    let seen = |item: &SseItem<'_>| match item {
                        SseItem::Event(e) => {
                            if let Ok(mut s) = state.lock() {
                                s.last_event_id = e.id.to_owned();
                                s.events += 1;
                            }
                        }
                        SseItem::Retry(ms) => retry = Duration::from_millis(*ms),
                        _ => {}
                    };
                    let mut body = response.into_body();
                    let _ended = self.read_events(&mut body, &mut decoder, seen).await;
                }
                Ok(response) => {
                    tracing::debug!(status = %response.status(), "event stream refused");
                    backoff = (backoff * 2).clamp(retry, Duration::from_secs(30));
                }
                Err(e) => {
                    tracing::debug!(error = %error_chain(&e), "event stream failed");
                    backoff = (backoff * 2).clamp(retry, Duration::from_secs(30));
                }
            }
            tokio::time::sleep(retry.max(backoff)).await;
        }
    }
}

/// Whether an answer is a Server-Sent Events stream (`text/event-stream`).
pub fn is_event_stream<B>(response: &http::Response<B>) -> bool {
    response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"))
}

/// An HTTP failure as (status, the first KiB of its body, trimmed), for the error the
/// client's calls then fail with.
pub async fn failure(
    status: StatusCode,
    response: http::Response<hyper::body::Incoming>,
) -> (u16, String) {
    let text = http_body_util::Limited::new(response.into_body(), 1024)
        .collect()
        .await
        .map(|c| String::from_utf8_lossy(&c.to_bytes()).trim().to_owned())
        .unwrap_or_default();
    (status.as_u16(), text)
}
