//! The MCP Streamable HTTP client: an [`McpClient`] whose messages go out as POSTs, with the
//! session's headers (session mode) or the method headers (stateless mode).

use std::prelude::rust_2021::*;

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};
use http::{Method, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use rpcwire::wire::sse::{SseDecoder, SseItem};
use rpcwire::wire::Framing;
use rpcwire_http::profile::{
    error_chain, failure, http_client, is_event_stream, parse_url, send_body, ChannelReader,
    ClientTls, FrameWriter, HyperClient, TlsError,
};
use rpcwire_http::{UrlError, HTTP_ERROR_CODE};
use serde_json::{json, Value};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::posted::name_member;
use super::stateless::encode_value;
use super::wire::{
    Mode, HEADER_METHOD, HEADER_NAME, HEADER_PROTOCOL_VERSION, HEADER_SESSION_ID, STATELESS_VERSION,
};
use crate::methods::CANCELLED;
use crate::tokio::header_params::{self, HeaderParam};
use crate::tokio::{ClientOptions, McpClient, McpError};

/// An MCP HTTP client could not start or end.
#[derive(Debug, thiserror::Error)]
pub enum McpHttpError {
    /// The URL is not one the client takes.
    #[error(transparent)]
    BadUrl(#[from] UrlError),
    /// A header given to the builder is not valid, or is one the transport sets.
    #[error("invalid header, or one the transport sets: {0}")]
    BadHeader(String),
    /// The TLS settings are not usable.
    #[error("TLS settings: {0}")]
    Tls(#[from] TlsError),
    /// The MCP exchange failed (initialize included).
    #[error(transparent)]
    Mcp(#[from] McpError),
    /// The session's DELETE failed.
    #[error("ending the session failed: {0}")]
    Delete(String),
}

/// Settings of an [`McpHttpClient`].
#[derive(Debug, Clone)]
pub struct McpHttpClientBuilder {
    url: String,
    mode: Mode,
    options: ClientOptions,
    timeout: Duration,
    max_body: usize,
    headers: HeaderMap,
    tls: ClientTls,
    listen: bool,
    max_tools: usize,
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<super::oauth::OAuth>>,
}

impl McpHttpClientBuilder {
    /// Sessions (default) or stateless (every POST carries `Mcp-Method` and, where the method
    /// names a target, `Mcp-Name`; `MCP-Protocol-Version: 2026-07-28`).
    pub fn mode(mut self, mode: Mode) -> Self {
        self.mode = mode;
        self
    }

    /// OAuth (feature `oauth`): a 401 or 403 of the server is answered by authorizing (see
    /// [`OAuth`](super::oauth::OAuth)) and the request sent again with the token.
    #[cfg(feature = "oauth")]
    pub fn oauth(mut self, oauth: super::oauth::OAuth) -> Self {
        self.oauth = Some(Arc::new(oauth));
        self
    }

    /// How many tools' `x-mcp-header` parameters the client keeps (stateless mode; default
    /// [`DEFAULT_MAX_TOOLS`]). When a listing goes past it, those kept so far are forgotten:
    /// a forgotten tool's calls go without their `Mcp-Param-*` headers (which a server
    /// refuses) until the tools are listed again.
    pub fn max_tools(mut self, tools: usize) -> Self {
        self.max_tools = tools.max(1);
        self
    }

    /// Whether a session opens the GET event stream after `initialize` (default true), on
    /// which the server sends its requests and notifications that belong to no call (a
    /// server that has none answers 405 and the client goes on without it).
    pub fn listen(mut self, on: bool) -> Self {
        self.listen = on;
        self
    }

    /// The MCP client's options (its name, the revision asked for, the call timeout).
    pub fn options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// The longest one POST exchange may take (default 5 min).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The largest message taken from the server (default 4 MiB).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes.max(1024);
        self
    }

    /// A header sent with every request: an `Authorization` for a server that asks for a
    /// token, say. The transport's own headers are refused ([`McpHttpError::BadHeader`]):
    /// `Accept`, `Content-Type`, `Last-Event-ID`, `Mcp-Session-Id`, `MCP-Protocol-Version`,
    /// `Mcp-Method` and `Mcp-Name` are the client's to set.
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, McpHttpError> {
        let bad = || McpHttpError::BadHeader(name.to_owned());
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| bad())?;
        let value = HeaderValue::from_str(value).map_err(|_| bad())?;
        let transport = [
            header::ACCEPT.as_str(),
            header::CONTENT_TYPE.as_str(),
            "last-event-id",
            HEADER_SESSION_ID,
            HEADER_PROTOCOL_VERSION,
            HEADER_METHOD,
            HEADER_NAME,
        ];
        if transport
            .iter()
            .any(|t| name.as_str().eq_ignore_ascii_case(t))
        {
            return Err(bad());
        }
        self.headers.insert(name, value);
        Ok(self)
    }

    /// The TLS settings for an `https://` URL (feature `tls`; default
    /// [`default_tls`](rpcwire_http::tls::default_tls): Mozilla's root certificates).
    #[cfg(feature = "tls")]
    pub fn tls_config(mut self, config: Arc<rpcwire_http::tls::rustls::ClientConfig>) -> Self {
        self.tls = ClientTls::with_config(config);
        self
    }

    /// Starts the client and initializes the MCP session (stateless mode: asks
    /// `server/discover`).
    pub async fn connect(mut self) -> Result<McpHttpClient, McpHttpError> {
        self.options.stateless = self.mode == Mode::Stateless;
        let uri = parse_url(&self.url)?;
        let http = http_client(self.tls)?;
        let (in_tx, in_rx) = mpsc::channel(16);
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(16);
        let shared = Arc::new(Shared {
            http,
            uri,
            mode: self.mode,
            headers: self.headers,
            timeout: self.timeout,
            max_body: self.max_body,
            inbound: in_tx,
            session: Mutex::new(None),
            version: Mutex::new(None),
            cancelled: Mutex::new(VecDeque::new()),
            tool_headers: Mutex::new(HashMap::new()),
            max_tools: self.max_tools,
            #[cfg(feature = "oauth")]
            oauth: self.oauth,
        });
        let poster = Arc::clone(&shared);
        let posts = tokio::spawn(async move {
            while let Some(message) = out_rx.recv().await {
                tokio::spawn(Arc::clone(&poster).post(message));
            }
        });
        let max_body = self.max_body;
        let mcp = McpClient::connect_with(self.options, move |builder| {
            builder
                .framing(Framing::ContentLength)
                .max_frame(max_body)
                .run(
                    ChannelReader::new(in_rx),
                    FrameWriter::new(out_tx, max_body),
                )
        })
        .await;
        let mcp = match mcp {
            Ok(mcp) => mcp,
            Err(e) => {
                posts.abort();
                return Err(e.into());
            }
        };
        // Session mode: the GET stream, where the server sends what belongs to no request
        // (its requests and notifications outside a call).
        // It is open before `connect` returns: a server drops what it has for a stream that
        // is not there yet.
        let listen = if self.mode == Mode::Sessions && self.listen {
            let (opened, open) = tokio::sync::oneshot::channel();
            let task = AbortOnDrop(tokio::spawn(Arc::clone(&shared).listen(opened)));
            // A server that holds the GET's headers back does not hold `connect` for long.
            let _ = tokio::time::timeout(self.timeout.min(LISTEN_OPEN_WAIT), open).await;
            Some(task)
        } else {
            None
        };
        Ok(McpHttpClient {
            mcp,
            shared,
            _posts: AbortOnDrop(posts),
            _listen: listen,
        })
    }
}

struct Shared {
    http: HyperClient,
    uri: Uri,
    mode: Mode,
    /// The builder's headers, sent with every request.
    headers: HeaderMap,
    timeout: Duration,
    max_body: usize,
    inbound: mpsc::Sender<Bytes>,
    /// The session id the server gave at initialize.
    session: Mutex<Option<String>>,
    /// The revision the server chose.
    version: Mutex<Option<String>>,
    /// The ids of the latest requests this client cancelled (at most [`CANCELLED_KEPT`]):
    /// their streams end with no answer (MCP), and are not resumed.
    cancelled: Mutex<VecDeque<Value>>,
    /// The `x-mcp-header` parameters of each tool of the latest `tools/list` pages (stateless
    /// mode), mirrored into `Mcp-Param-*` headers on `tools/call`; at most `max_tools`.
    tool_headers: Mutex<HashMap<String, Vec<HeaderParam>>>,
    max_tools: usize,
    /// The client's OAuth, which answers the server's 401 and 403.
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<super::oauth::OAuth>>,
}

/// The default of [`McpHttpClientBuilder::max_tools`].
pub const DEFAULT_MAX_TOOLS: usize = 4096;

/// How long `connect` waits for the GET stream's answer before it returns anyway.
const LISTEN_OPEN_WAIT: Duration = Duration::from_secs(5);

/// How many times in a row the GET stream is reopened after it ended with no message.
const LISTEN_REOPENS: usize = 3;

/// How many cancelled request ids [`Shared`] remembers.
const CANCELLED_KEPT: usize = 64;

impl Shared {
    /// Notes that this client cancelled the request with this id.
    fn note_cancelled(&self, id: Value) {
        let mut cancelled = self
            .cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if cancelled.len() == CANCELLED_KEPT {
            cancelled.pop_front();
        }
        cancelled.push_back(id);
    }

    /// True (once) when this client cancelled the request with this id.
    fn take_cancelled(&self, id: &Value) -> bool {
        let mut cancelled = self
            .cancelled
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        match cancelled.iter().position(|c| c == id) {
            Some(at) => {
                cancelled.remove(at);
                true
            }
            None => false,
        }
    }
}

/// An MCP client over Streamable HTTP: an [`McpClient`] ([`mcp`](McpHttpClient::mcp): list
/// and call tools, progress, cancel) whose messages are POSTed, answers coming back as JSON or
/// event streams (the server's requests on them are answered by POST).
pub struct McpHttpClient {
    mcp: McpClient,
    shared: Arc<Shared>,
    _posts: AbortOnDrop,
    _listen: Option<AbortOnDrop>,
}

impl std::fmt::Debug for McpHttpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpHttpClient")
            .field("url", &self.shared.uri)
            .field("mode", &self.shared.mode)
            .field("session", &self.session_id())
            .finish_non_exhaustive()
    }
}

/// Stops the task that POSTs the connection's messages when the client goes.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl McpHttpClient {
    /// Connects to `url` (session mode, default options) and initializes.
    pub async fn connect(url: &str) -> Result<McpHttpClient, McpHttpError> {
        Self::builder(url).connect().await
    }

    /// Settings for a client of `url` (`http://host:port/mcp`, or `https://` with the `tls`
    /// feature).
    pub fn builder(url: &str) -> McpHttpClientBuilder {
        McpHttpClientBuilder {
            url: url.to_owned(),
            mode: Mode::Sessions,
            options: ClientOptions::default(),
            timeout: Duration::from_secs(300),
            max_body: 4 << 20,
            headers: HeaderMap::new(),
            tls: ClientTls::default(),
            listen: true,
            max_tools: DEFAULT_MAX_TOOLS,
            #[cfg(feature = "oauth")]
            oauth: None,
        }
    }

    /// The MCP client.
    pub fn mcp(&self) -> &McpClient {
        &self.mcp
    }

    /// The session id the server gave (session mode).
    pub fn session_id(&self) -> Option<String> {
        self.shared
            .session
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Ends the session (DELETE, session mode) and the client.
    pub async fn close(self) -> Result<(), McpHttpError> {
        let result = match (self.shared.mode, self.session_id()) {
            (Mode::Sessions, Some(id)) => {
                let mut req = self.shared.request(Method::DELETE, Bytes::new());
                if let Ok(v) = HeaderValue::from_str(&id) {
                    req.headers_mut().insert(HEADER_SESSION_ID, v);
                }
                match self.shared.http.request(req).await {
                    Ok(r)
                        if r.status().is_success()
                            || r.status() == StatusCode::METHOD_NOT_ALLOWED =>
                    {
                        Ok(())
                    }
                    Ok(r) => Err(McpHttpError::Delete(format!("status {}", r.status()))),
                    Err(e) => Err(McpHttpError::Delete(error_chain(&e))),
                }
            }
            _ => Ok(()),
        };
        let McpHttpClient {
            mcp,
            _posts,
            _listen,
            ..
        } = self;
        drop(_listen);
        drop(_posts);
        let _ = mcp.close().await;
        result
    }
}

/// True when `data` is the response to the request `id`.
fn is_answer_to(data: &str, id: &Value) -> bool {
    // Only what looks like a response is parsed.
    if !(data.contains("\"result\"") || data.contains("\"error\"")) {
        return false;
    }
    serde_json::from_str::<Value>(data)
        .is_ok_and(|v| v.get("method").is_none() && v.get("id") == Some(id))
}

impl Shared {
    fn request(&self, method: Method, body: Bytes) -> Request<Full<Bytes>> {
        let mut req = Request::new(Full::new(body));
        *req.method_mut() = method;
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        let h = req.headers_mut();
        #[cfg(feature = "oauth")]
        if let Some(token) = self.oauth.as_ref().and_then(|o| o.bearer()) {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {token}")) {
                h.insert(header::AUTHORIZATION, v);
            }
        }
        h.insert(
            header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        match self.mode {
            Mode::Sessions => {
                if let Some(id) = &*self.session.lock().unwrap_or_else(PoisonError::into_inner) {
                    if let Ok(v) = HeaderValue::from_str(id) {
                        h.insert(HEADER_SESSION_ID, v);
                    }
                }
                let version = self.version.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(v) = version
                    .as_deref()
                    .and_then(|v| HeaderValue::from_str(v).ok())
                {
                    h.insert(HEADER_PROTOCOL_VERSION, v);
                }
            }
            Mode::Stateless => {
                h.insert(
                    HEADER_PROTOCOL_VERSION,
                    HeaderValue::from_static(STATELESS_VERSION),
                );
            }
        }
        req
    }

    /// POSTs one message; the answer goes to the connection. A failed exchange fails the
    /// message's request with [`HTTP_ERROR_CODE`] (data: `{"status", "reason"}`).
    async fn post(self: Arc<Self>, message: Bytes) {
        let mut value: Value = serde_json::from_slice(&message).unwrap_or(Value::Null);
        let mut message = message;
        if self.mode == Mode::Stateless {
            match stateless_message(&mut value) {
                Some(rewritten) => message = rewritten,
                // `notifications/initialized`: the revision has no handshake.
                None => return,
            }
        }
        let method = value.get("method").and_then(Value::as_str);
        // Built anew for each attempt: an authorization in between changes its token.
        let build = || {
            let mut req = self.request(Method::POST, message.clone());
            let h = req.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            if self.mode == Mode::Stateless {
                if let Some(m) = method.and_then(|m| HeaderValue::from_str(m).ok()) {
                    h.insert(HEADER_METHOD, m);
                }
                let params = value.get("params").unwrap_or(&Value::Null);
                if let Some(name) = method
                    .and_then(name_member)
                    .and_then(|key| params.get(key))
                    .and_then(Value::as_str)
                    .and_then(|n| HeaderValue::from_str(&encode_value(n)).ok())
                {
                    h.insert(HEADER_NAME, name);
                }
                if method == Some(crate::methods::TOOLS_CALL) {
                    self.mirror_params(params, h);
                }
            }
            req
        };
        if method == Some(CANCELLED) {
            if let Some(id) = value.pointer("/params/requestId") {
                self.note_cancelled(id.clone());
            }
        }
        let initialize = method == Some("initialize");
        let tools_list = self.mode == Mode::Stateless && method == Some(crate::methods::TOOLS_LIST);
        let id = value.get("id").filter(|_| method.is_some()).cloned();
        let read = Read {
            initialize,
            tools_list,
        };
        let mut authorizations = 0;
        let outcome = loop {
            let mut challenge = None;
            let outcome = tokio::time::timeout(
                self.timeout,
                self.exchange(build(), read, id.as_ref(), &mut challenge),
            )
            .await;
            // 401 and 403: the client's OAuth (if any) gets a token and the POST goes again.
            if let Ok(Err((status @ (401 | 403), _))) = &outcome {
                match self
                    .authorize(*status, challenge.as_deref(), &mut authorizations)
                    .await
                {
                    Some(Ok(())) => continue,
                    Some(Err(reason)) => break Ok(Err((*status, reason))),
                    None => {}
                }
            }
            break outcome;
        };
        let (status, reason) = match outcome {
            Ok(Ok(())) => return,
            Ok(Err(f)) => f,
            Err(_) => (0, "no answer in time".to_owned()),
        };
        if let Some(id) = id {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {
                "code": HTTP_ERROR_CODE, "message": "HTTP error",
                "data": {"status": status, "reason": reason}}});
            send_body(&self.inbound, Bytes::from(error.to_string())).await;
        }
    }

    /// After a 401 or 403: `None` when the client has no OAuth (the status is the answer),
    /// else whether it got a token to try again with (at most
    /// [`OAuthConfig::max_authorizations`](super::oauth::OAuthConfig::max_authorizations) per
    /// request).
    #[cfg_attr(not(feature = "oauth"), allow(clippy::unused_async, unused_variables))]
    async fn authorize(
        &self,
        status: u16,
        challenge: Option<&str>,
        authorizations: &mut usize,
    ) -> Option<Result<(), String>> {
        #[cfg(feature = "oauth")]
        if let Some(oauth) = &self.oauth {
            if *authorizations >= oauth.max_authorizations() {
                let e = super::oauth::OAuthError::TooManyAuthorizations(*authorizations);
                return Some(Err(e.to_string()));
            }
            *authorizations += 1;
            let url = self.uri.to_string();
            return Some(
                oauth
                    .on_challenge(&self.http, &url, status, challenge)
                    .await
                    .map_err(|e| e.to_string()),
            );
        }
        None
    }

    /// Reads the session's GET stream until it ends, reopening it (from the last event id,
    /// after the server's `retry` wait) at most [`LISTEN_REOPENS`] times in a row without an
    /// event.
    async fn listen(self: Arc<Self>, opened: tokio::sync::oneshot::Sender<()>) {
        let mut opened = Some(opened);
        let mut decoder = SseDecoder::with_buffer(Vec::new(), self.max_body);
        let mut retry = Duration::from_secs(1);
        let mut idle_reopens = 0;
        let read = Read {
            initialize: false,
            tools_list: false,
        };
        while idle_reopens <= LISTEN_REOPENS {
            let mut req = self.request(Method::GET, Bytes::new());
            req.headers_mut().insert(
                header::ACCEPT,
                HeaderValue::from_static("text/event-stream"),
            );
            let last = decoder.last_event_id().to_owned();
            if let Some(v) = Some(last).filter(|l| !l.is_empty()) {
                if let Ok(v) = HeaderValue::from_str(&v) {
                    req.headers_mut().insert("last-event-id", v);
                }
            }
            let response = self.http.request(req).await;
            if let Some(opened) = opened.take() {
                let _ = opened.send(());
            }
            let Ok(response) = response else {
                return;
            };
            if response.status() != StatusCode::OK || !is_event_stream(&response) {
                // 405: the server offers no GET stream.
                return;
            }
            decoder.reset();
            let mut body = response.into_body();
            idle_reopens += 1;
            while let Some(Ok(frame)) = body.frame().await {
                let Ok(chunk) = frame.into_data() else {
                    continue;
                };
                let mut input: &[u8] = &chunk;
                while let Some(item) = decoder.next(&mut input) {
                    match item {
                        SseItem::Event(e) if e.event == "message" && !e.data.is_empty() => {
                            idle_reopens = 0;
                            let data = Bytes::copy_from_slice(e.data.as_bytes());
                            self.receive(data, read).await;
                        }
                        SseItem::Retry(ms) => retry = Duration::from_millis(ms),
                        _ => {}
                    }
                }
            }
            tokio::time::sleep(retry.min(Duration::from_secs(30))).await;
        }
    }

    async fn receive(&self, message: Bytes, read: Read) {
        let message = if read.tools_list {
            self.checked_tools(message)
        } else {
            message
        };
        if read.initialize {
            if let Ok(v) = serde_json::from_slice::<Value>(&message) {
                if let Some(version) = v.pointer("/result/protocolVersion").and_then(Value::as_str)
                {
                    *self.version.lock().unwrap_or_else(PoisonError::into_inner) =
                        Some(version.to_owned());
                }
            }
        }
        send_body(&self.inbound, message).await;
    }

    async fn exchange(
        &self,
        req: Request<Full<Bytes>>,
        read: Read,
        want: Option<&Value>,
        challenge: &mut Option<String>,
    ) -> Result<(), (u16, String)> {
        let initialize = read.initialize;
        let response = self
            .http
            .request(req)
            .await
            .map_err(|e| (0, format!("request failed: {}", error_chain(&e))))?;
        let status = response.status();
        if initialize && self.mode == Mode::Sessions {
            if let Some(id) = response
                .headers()
                .get(HEADER_SESSION_ID)
                .and_then(|v| v.to_str().ok())
            {
                *self.session.lock().unwrap_or_else(PoisonError::into_inner) = Some(id.to_owned());
            }
        }
        let sse = is_event_stream(&response);
        match status {
            StatusCode::ACCEPTED | StatusCode::NO_CONTENT => return Ok(()),
            StatusCode::OK => {}
            other => {
                *challenge = response
                    .headers()
                    .get(header::WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let (status, text) = failure(other, response).await;
                // An error status whose body answers the request with a JSON-RPC error (the
                // stateless revision's 400 and 404): the error is the answer.
                if want.is_some_and(|id| is_answer_to(&text, id)) {
                    self.receive(Bytes::from(text), read).await;
                    return Ok(());
                }
                return Err((status, text));
            }
        }
        let mut body = response.into_body();
        if sse {
            let mut decoder = SseDecoder::with_buffer(Vec::new(), self.max_body);
            let mut retry = Duration::from_secs(1);
            let mut answered = false;
            let mut attempts = 0;
            loop {
                while let Some(frame) = body.frame().await {
                    let frame = frame.map_err(|e| (200, format!("stream failed: {e}")))?;
                    let Ok(chunk) = frame.into_data() else {
                        continue;
                    };
                    let mut input: &[u8] = &chunk;
                    while let Some(item) = decoder.next(&mut input) {
                        match item {
                            SseItem::Event(e) if e.event == "message" && !e.data.is_empty() => {
                                answered |= want.is_some_and(|id| is_answer_to(e.data, id));
                                let data = Bytes::copy_from_slice(e.data.as_bytes());
                                self.receive(data, read).await;
                            }
                            SseItem::Retry(ms) => retry = Duration::from_millis(ms),
                            _ => {}
                        }
                    }
                }
                // The stream ended before the answer, after events with ids (the server
                // closed it to be polled, or the connection broke): resume with a GET.
                let last = decoder.last_event_id().to_owned();
                if answered || want.is_none() || last.is_empty() || self.mode != Mode::Sessions {
                    return Ok(());
                }
                if want.is_some_and(|id| self.take_cancelled(id)) {
                    // This client cancelled the request: no answer is coming.
                    return Ok(());
                }
                attempts += 1;
                if attempts > 5 {
                    return Err((200, "the event stream ended before the answer".into()));
                }
                tokio::time::sleep(retry.min(Duration::from_secs(30))).await;
                let mut req = self.request(Method::GET, Bytes::new());
                req.headers_mut().insert(
                    header::ACCEPT,
                    HeaderValue::from_static("text/event-stream"),
                );
                if let Ok(v) = HeaderValue::from_str(&last) {
                    req.headers_mut().insert("last-event-id", v);
                }
                decoder.reset();
                let response = self
                    .http
                    .request(req)
                    .await
                    .map_err(|e| (0, format!("resumption failed: {}", error_chain(&e))))?;
                if response.status() != StatusCode::OK {
                    return Err((response.status().as_u16(), "resumption refused".into()));
                }
                body = response.into_body();
            }
        }
        let bytes = http_body_util::Limited::new(body, self.max_body)
            .collect()
            .await
            .map_err(|e| (200, format!("body failed: {e}")))?
            .to_bytes();
        if !bytes.is_empty() {
            self.receive(bytes, read).await;
        }
        Ok(())
    }
}

/// A message as the stateless revision (2026-07-28) sends it: the [`McpClient`] puts `_meta`
/// on its requests; its notifications (`notifications/cancelled`) get the revision and the
/// capabilities here. `None` for `notifications/initialized`, which the revision does not
/// have.
fn stateless_message(value: &mut Value) -> Option<Bytes> {
    use crate::methods::{INITIALIZED, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION};
    let method = value
        .get("method")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match method.as_deref() {
        None => return Some(Bytes::from(value.to_string())),
        Some(INITIALIZED) => return None,
        _ => {}
    }
    let params = value
        .as_object_mut()?
        .entry("params")
        .or_insert_with(|| json!({}));
    if let Some(meta) = params
        .as_object_mut()
        .map(|p| p.entry("_meta").or_insert_with(|| json!({})))
        .and_then(Value::as_object_mut)
    {
        meta.entry(META_PROTOCOL_VERSION)
            .or_insert_with(|| json!(STATELESS_VERSION));
        meta.entry(META_CLIENT_CAPABILITIES)
            .or_insert_with(|| json!({}));
    }
    Some(Bytes::from(value.to_string()))
}

/// What [`Shared::receive`] does with the answers to a POST besides passing them on.
#[derive(Debug, Clone, Copy)]
struct Read {
    /// `initialize`: keep the revision the server chose.
    initialize: bool,
    /// `tools/list` (stateless): keep each tool's header parameters, and leave out the tools
    /// whose `x-mcp-header` annotations break the revision's rules.
    tools_list: bool,
}

impl Shared {
    /// A `tools/list` answer without the tools whose `x-mcp-header` annotations are invalid
    /// (the revision: the client MUST exclude them); the others' header parameters noted.
    fn checked_tools(&self, message: Bytes) -> Bytes {
        let Ok(mut v) = serde_json::from_slice::<Value>(&message) else {
            return message;
        };
        let Some(tools) = v.pointer_mut("/result/tools").and_then(Value::as_array_mut) else {
            return message;
        };
        let mut kept = self
            .tool_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        tools.retain(|tool| {
            let name = tool.get("name").and_then(Value::as_str).unwrap_or_default();
            let schema = tool.get("inputSchema").unwrap_or(&Value::Null);
            let (params, problems) = header_params::of_schema(schema);
            if !problems.is_empty() {
                tracing::warn!(
                    tool = name,
                    ?problems,
                    "tool left out: invalid x-mcp-header"
                );
                kept.remove(name);
                return false;
            }
            if kept.len() >= self.max_tools && !kept.contains_key(name) {
                kept.clear();
            }
            kept.insert(name.to_owned(), params);
            true
        });
        drop(kept);
        Bytes::from(v.to_string())
    }

    /// The `Mcp-Param-*` headers of a `tools/call`: each annotated parameter present (not
    /// null) in its arguments, encoded as the revision says.
    fn mirror_params(&self, params: &Value, headers: &mut HeaderMap) {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return;
        };
        let arguments = params.get("arguments").unwrap_or(&Value::Null);
        let kept = self
            .tool_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for p in kept.get(name).into_iter().flatten() {
            let value = p.value(arguments);
            let value = value.as_deref().map(encode_value);
            if let (Ok(name), Some(Ok(value))) = (
                HeaderName::from_bytes(p.header().as_bytes()),
                value.map(|v| HeaderValue::from_str(&v)),
            ) {
                headers.insert(name, value);
            }
        }
    }
}
