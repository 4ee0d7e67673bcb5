//! The A2A client: reads an agent's card, then calls its JSON-RPC interface (with the
//! `A2A-Version` header), streams included.

use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use rpcwire::wire::sse::{SseDecoder, SseItem};
use rpcwire_http::profile::{
    error_chain, failure, http_client, is_event_stream, ClientTls, HyperClient,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

use crate::error::{A2aError, ErrorKind};
use crate::types::{
    AgentCard, GetTaskRequest, ListTasksRequest, ListTasksResponse, Message, SendMessageRequest,
    SendMessageResponse, StreamResponse, Task, TaskIdRequest, AGENT_CARD_PATH, PROTOCOL_VERSION,
};

/// What a call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The agent answered with an A2A or JSON-RPC error.
    #[error("the agent answered with an error: {0}")]
    Agent(A2aError),
    /// An error code that is not the protocol's.
    #[error("the agent answered with error {code}: {message}")]
    OtherError {
        /// The code.
        code: i64,
        /// The message.
        message: String,
    },
    /// No HTTP exchange (connection refused, say).
    #[error("HTTP failed: {0}")]
    Http(String),
    /// An HTTP status other than 200.
    #[error("HTTP status {status}: {body}")]
    Status {
        /// The status.
        status: u16,
        /// The start of the body.
        body: String,
    },
    /// An answer that is not what the protocol says.
    #[error("invalid answer: {0}")]
    Invalid(String),
    /// The URL is not an `http://` one (or `https://` without TLS).
    #[error("bad URL: {0}")]
    Url(String),
}

impl ClientError {
    /// The protocol error kind, when the agent answered with one.
    pub fn kind(&self) -> Option<ErrorKind> {
        match self {
            ClientError::Agent(e) => Some(e.kind),
            _ => None,
        }
    }
}

/// A client of one agent's JSON-RPC interface.
#[derive(Debug, Clone)]
pub struct A2aClient {
    http: HyperClient,
    url: String,
    card: Option<AgentCard>,
    max_body: usize,
    next_id: std::sync::Arc<AtomicU64>,
}

/// The card at `base_url` + [`AGENT_CARD_PATH`].
pub async fn fetch_card(
    http: &HyperClient,
    base_url: &str,
    max_body: usize,
) -> Result<AgentCard, ClientError> {
    let url = format!("{}{AGENT_CARD_PATH}", base_url.trim_end_matches('/'));
    let uri =
        rpcwire_http::profile::parse_url(&url).map_err(|e| ClientError::Url(e.to_string()))?;
    let req = Request::builder()
        .method(Method::GET)
        .uri(uri)
        .body(Full::new(Bytes::new()))
        .map_err(|e| ClientError::Url(e.to_string()))?;
    let response = http
        .request(req)
        .await
        .map_err(|e| ClientError::Http(error_chain(&e)))?;
    if response.status() != StatusCode::OK {
        let (status, body) = failure(response.status(), response).await;
        return Err(ClientError::Status { status, body });
    }
    let bytes = read_body(response, max_body).await?;
    serde_json::from_slice(&bytes).map_err(|e| ClientError::Invalid(format!("card: {e}")))
}

impl A2aClient {
    /// Reads the card at `base_url` and connects to its JSON-RPC interface.
    pub async fn discover(base_url: &str) -> Result<Self, ClientError> {
        let http =
            http_client(ClientTls::default()).map_err(|e| ClientError::Http(e.to_string()))?;
        let max_body = 16 << 20;
        let card = fetch_card(&http, base_url, max_body).await?;
        let url = card
            .jsonrpc_url()
            .ok_or_else(|| ClientError::Invalid("the card names no JSONRPC interface".into()))?
            .to_owned();
        rpcwire_http::profile::parse_url(&url).map_err(|e| ClientError::Url(e.to_string()))?;
        Ok(A2aClient {
            http,
            url,
            card: Some(card),
            max_body,
            next_id: std::sync::Arc::default(),
        })
    }

    /// A client of the JSON-RPC endpoint at `url`, with no card read.
    pub fn new(url: &str) -> Result<Self, ClientError> {
        rpcwire_http::profile::parse_url(url).map_err(|e| ClientError::Url(e.to_string()))?;
        Ok(A2aClient {
            http: http_client(ClientTls::default())
                .map_err(|e| ClientError::Http(e.to_string()))?,
            url: url.to_owned(),
            card: None,
            max_body: 16 << 20,
            next_id: std::sync::Arc::default(),
        })
    }

    /// The agent's card, when read.
    pub fn card(&self) -> Option<&AgentCard> {
        self.card.as_ref()
    }

    /// The largest answer body or stream event read (16 MiB by default).
    pub fn max_body(mut self, bytes: usize) -> Self {
        self.max_body = bytes;
        self
    }

    fn request(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<(Request<Full<Bytes>>, u64), ClientError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let body =
            serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let uri = rpcwire_http::profile::parse_url(&self.url)
            .map_err(|e| ClientError::Url(e.to_string()))?;
        let req = Request::builder()
            .method(Method::POST)
            .uri(uri)
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::ACCEPT, "application/json, text/event-stream")
            .header("a2a-version", HeaderValue::from_static(PROTOCOL_VERSION))
            .body(Full::new(Bytes::from(body.to_string())))
            .map_err(|e| ClientError::Url(e.to_string()))?;
        Ok((req, id))
    }

    async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<T, ClientError> {
        let (req, _) = self.request(method, params)?;
        let response = self
            .http
            .request(req)
            .await
            .map_err(|e| ClientError::Http(error_chain(&e)))?;
        if response.status() != StatusCode::OK {
            let (status, body) = failure(response.status(), response).await;
            return Err(ClientError::Status { status, body });
        }
        let bytes = read_body(response, self.max_body).await?;
        outcome(&bytes)
    }

    /// `SendMessage`: the task the message started (as it is when its turn ended), or a
    /// direct answer.
    pub async fn send_message(&self, message: Message) -> Result<SendMessageResponse, ClientError> {
        let params = SendMessageRequest {
            message,
            ..SendMessageRequest::default()
        };
        self.call("SendMessage", &params).await
    }

    /// `SendStreamingMessage`: the task's events as they come.
    pub async fn send_streaming(&self, message: Message) -> Result<EventStream, ClientError> {
        let params = SendMessageRequest {
            message,
            ..SendMessageRequest::default()
        };
        self.stream("SendStreamingMessage", &params).await
    }

    /// `SubscribeToTask`: a running task's events from now on.
    pub async fn subscribe(&self, task_id: &str) -> Result<EventStream, ClientError> {
        let params = TaskIdRequest {
            id: task_id.to_owned(),
            ..TaskIdRequest::default()
        };
        self.stream("SubscribeToTask", &params).await
    }

    /// `SubscribeToTask` with `Last-Event-ID`: the rest of a stream this client lost, from
    /// after `last_event_id` ([`EventStream::last_event_id`]).
    pub async fn resubscribe(
        &self,
        task_id: &str,
        last_event_id: &str,
    ) -> Result<EventStream, ClientError> {
        let params = TaskIdRequest {
            id: task_id.to_owned(),
            ..TaskIdRequest::default()
        };
        let (mut req, _) = self.request("SubscribeToTask", &params)?;
        let value = HeaderValue::from_str(last_event_id)
            .map_err(|_| ClientError::Invalid("an event id that is no header value".into()))?;
        req.headers_mut().insert("last-event-id", value);
        self.open_stream(req).await
    }

    /// `GetTask`, with at most `history_length` history messages.
    pub async fn get_task(
        &self,
        id: &str,
        history_length: Option<i32>,
    ) -> Result<Task, ClientError> {
        let params = GetTaskRequest {
            id: id.to_owned(),
            history_length,
            ..GetTaskRequest::default()
        };
        self.call("GetTask", &params).await
    }

    /// `ListTasks`.
    pub async fn list_tasks(
        &self,
        query: &ListTasksRequest,
    ) -> Result<ListTasksResponse, ClientError> {
        self.call("ListTasks", query).await
    }

    /// `CreateTaskPushNotificationConfig`: the config as the server keeps it (its id given
    /// when it had none).
    pub async fn create_push_config(
        &self,
        config: &crate::TaskPushNotificationConfig,
    ) -> Result<crate::TaskPushNotificationConfig, ClientError> {
        self.call("CreateTaskPushNotificationConfig", config).await
    }

    /// `ListTaskPushNotificationConfigs`: task `task_id`'s configs.
    pub async fn list_push_configs(
        &self,
        task_id: &str,
    ) -> Result<crate::ListPushConfigsResponse, ClientError> {
        let params = crate::ListPushConfigsRequest {
            task_id: task_id.to_owned(),
            ..crate::ListPushConfigsRequest::default()
        };
        self.call("ListTaskPushNotificationConfigs", &params).await
    }

    /// `CancelTask`: the task, canceled.
    pub async fn cancel_task(&self, id: &str) -> Result<Task, ClientError> {
        let params = TaskIdRequest {
            id: id.to_owned(),
            ..TaskIdRequest::default()
        };
        self.call("CancelTask", &params).await
    }

    async fn stream(
        &self,
        method: &str,
        params: &impl Serialize,
    ) -> Result<EventStream, ClientError> {
        let (req, _) = self.request(method, params)?;
        self.open_stream(req).await
    }

    async fn open_stream(&self, req: Request<Full<Bytes>>) -> Result<EventStream, ClientError> {
        let response = self
            .http
            .request(req)
            .await
            .map_err(|e| ClientError::Http(error_chain(&e)))?;
        if response.status() != StatusCode::OK {
            let (status, body) = failure(response.status(), response).await;
            return Err(ClientError::Status { status, body });
        }
        if !is_event_stream(&response) {
            // An error answered before any event.
            let bytes = read_body(response, self.max_body).await?;
            return Err(outcome::<Value>(&bytes).err().unwrap_or_else(|| {
                ClientError::Invalid("a JSON answer to a streaming request".into())
            }));
        }
        Ok(EventStream {
            body: response.into_body(),
            decoder: SseDecoder::with_buffer(Vec::new(), self.max_body),
            pending: std::collections::VecDeque::new(),
            ended: false,
        })
    }
}

/// A response's whole body, at most `max_body` bytes.
async fn read_body(
    response: http::Response<hyper::body::Incoming>,
    max_body: usize,
) -> Result<Bytes, ClientError> {
    Ok(Limited::new(response.into_body(), max_body)
        .collect()
        .await
        .map_err(|e| ClientError::Http(e.to_string()))?
        .to_bytes())
}

/// The result of a JSON-RPC response body, or its error.
fn outcome<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ClientError> {
    let v: Value =
        serde_json::from_slice(bytes).map_err(|e| ClientError::Invalid(e.to_string()))?;
    if let Some(error) = v.get("error") {
        let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
        let message = error
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        return Err(match ErrorKind::from_code(code) {
            Some(kind) => ClientError::Agent(A2aError { kind, message }),
            None => ClientError::OtherError { code, message },
        });
    }
    let result = v
        .get("result")
        .ok_or_else(|| ClientError::Invalid("neither result nor error".into()))?;
    T::deserialize(result).map_err(|e| ClientError::Invalid(e.to_string()))
}

/// The events of a streaming answer; [`next`](EventStream::next) gives `None` at its end.
#[derive(Debug)]
pub struct EventStream {
    body: hyper::body::Incoming,
    decoder: SseDecoder<Vec<u8>>,
    pending: std::collections::VecDeque<Result<StreamResponse, ClientError>>,
    ended: bool,
}

impl EventStream {
    /// The next event, `None` once the stream ended.
    pub async fn next(&mut self) -> Option<Result<StreamResponse, ClientError>> {
        loop {
            if let Some(e) = self.pending.pop_front() {
                return Some(e);
            }
            if self.ended {
                return None;
            }
            let Some(frame) = self.body.frame().await else {
                self.ended = true;
                continue;
            };
            let chunk = match frame {
                Ok(f) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
                Err(e) => {
                    self.ended = true;
                    return Some(Err(ClientError::Http(e.to_string())));
                }
            };
            let mut input: &[u8] = &chunk;
            while let Some(item) = self.decoder.next(&mut input) {
                if let SseItem::Event(e) = item {
                    if !e.data.is_empty() {
                        self.pending.push_back(outcome(e.data.as_bytes()));
                    }
                }
            }
        }
    }

    /// The id of the last event read, for resuming (`Last-Event-ID`).
    pub fn last_event_id(&self) -> &str {
        self.decoder.last_event_id()
    }
}
