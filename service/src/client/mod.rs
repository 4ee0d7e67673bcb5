//! The cloneable client handle: calls, notifications, batches, statistics and shutdown.

pub(crate) mod controls;
mod hub;
pub(crate) mod raw;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire::Token;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

pub use hub::{Hub, DEFAULT_HUB_SEND_TIMEOUT};
use tracing::Instrument;

use crate::client::controls::{Control, Controls};
use crate::client::raw::encode_params;
use crate::CallError;
use rpcwire_telemetry::{ClientCall, ClientError};

/// The outcome of one call as the driver delivers it: the result's JSON text or the reason.
pub(crate) type Reply = Result<String, CallError>;

/// A call waiting to be sent.
#[derive(Debug)]
pub(crate) struct CallCmd {
    pub(crate) token: Token,
    pub(crate) method: String,
    pub(crate) params: Option<String>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) reply: oneshot::Sender<Reply>,
    /// The trace context of the call's span, to send beside it (see
    /// [`ClientSettings::outgoing_traces`](crate::ClientSettings::outgoing_traces)); only while a
    /// subscriber listens.
    pub(crate) trace: Option<Box<rpcwire_telemetry::trace_context::TraceContext>>,
}

/// One element of an outgoing batch.
#[derive(Debug)]
pub(crate) enum BatchItem {
    Call(CallCmd),
    Notify {
        method: String,
        params: Option<String>,
    },
}

/// What a [`Client`] asks of the driver (through a bounded channel).
///
/// Each payload is boxed: the channel allocates its slots 32 at a time as soon as it is made,
/// for every connection, including the many whose handlers never call the peer. A command of
/// one pointer keeps that block at about 0.5 KiB (unboxed, the call's 80 bytes made it 2.5 KiB
/// per connection); the box costs one allocation per call, beside the call's own strings.
#[derive(Debug)]
pub(crate) enum Command {
    Call(Box<CallCmd>),
    Notify(Box<NotifyCmd>),
    Batch(Box<BatchCmd>),
    Stats(oneshot::Sender<SessionStats>),
}

// The channel's slots are the command's size (see above): keep it one pointer and a tag.
const _: () = assert!(std::mem::size_of::<Command>() <= 16);

/// A notification to send.
#[derive(Debug)]
pub(crate) struct NotifyCmd {
    pub(crate) method: String,
    pub(crate) params: Option<String>,
    pub(crate) done: oneshot::Sender<Result<(), CallError>>,
}

/// A batch to send.
#[derive(Debug)]
pub(crate) struct BatchCmd {
    pub(crate) items: Vec<BatchItem>,
    pub(crate) done: oneshot::Sender<Result<(), CallError>>,
}

impl Command {
    /// Ends the command with `err` (for every call it carries).
    pub(crate) fn fail(self, err: impl Fn() -> CallError) {
        match self {
            Command::Call(c) => {
                let _ = c.reply.send(Err(err()));
            }
            Command::Notify(n) => {
                let _ = n.done.send(Err(err()));
            }
            Command::Batch(b) => {
                let BatchCmd { items, done } = *b;
                for item in items {
                    if let BatchItem::Call(c) = item {
                        let _ = c.reply.send(Err(err()));
                    }
                }
                let _ = done.send(Err(err()));
            }
            Command::Stats(_) => {}
        }
    }
}

/// A snapshot of a connection's state and counters (see [`Client::stats`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct SessionStats {
    /// The core's counters.
    pub core: rpcwire::Stats,
    /// Our requests waiting for a response.
    pub pending_calls: usize,
    /// Inbound requests not yet answered (queued, running, or waiting for transmit room).
    pub inflight: usize,
    /// Inbound requests and notifications waiting for a handler slot.
    pub queued: usize,
    /// Bytes of params and method names held for queued requests.
    pub queued_bytes: usize,
    /// Handlers running, plus answers waiting for transmit room.
    pub running: usize,
    /// Bytes of storage the connection holds now: its receive, transmit and batch buffers and
    /// its tables (they grow with use and are given back when idle).
    pub buffer_bytes: usize,
}

/// A cloneable handle to one connection: call the peer, notify it, send batches.
///
/// Every call resolves exactly once: with the result, the peer's error, a timeout, or
/// [`CallError::Closed`] when the connection ends first. Dropping a call's future cancels it
/// (a late response is then ignored).
///
/// ```
/// # async fn demo(client: rpcwire_service::Client) -> Result<(), rpcwire_service::CallError> {
/// let diff: i64 = client.call("subtract", [42, 23]).await?;
/// assert_eq!(diff, 19);
/// client.notify("update", [1, 2, 3]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    cmd: mpsc::Sender<Command>,
    ctl: Arc<Controls>,
    tokens: Arc<AtomicU64>,
    /// The connection's default call timeout.
    default_timeout: Option<Duration>,
    /// Names the connection within this process (see [`Client::connection_id`]).
    connection: u64,
    /// Calls carry their trace context in `params._meta` ([`ClientSettings::meta_traces`](crate::ClientSettings::meta_traces)).
    meta_traces: bool,
    /// The connection's other end as its transport reported it (the server, for a client's
    /// connection): its calls' spans' `server.address`, `network.*`.
    remote: Arc<crate::Caller>,
}

/// The next connection number ([`Client::connection_id`]).
static CONNECTIONS: AtomicU64 = AtomicU64::new(1);

/// Sends [`Control::Cancel`] for calls whose future is dropped before they end.
struct CancelGuard<'a> {
    ctl: &'a Controls,
    tokens: Vec<Token>,
}

impl Drop for CancelGuard<'_> {
    fn drop(&mut self) {
        for token in self.tokens.drain(..) {
            self.ctl.send(Control::Cancel(token));
        }
    }
}

impl Client {
    pub(crate) fn new(
        cmd: mpsc::Sender<Command>,
        ctl: Arc<Controls>,
        default_timeout: Option<Duration>,
        remote: Arc<crate::Caller>,
    ) -> Self {
        Client {
            cmd,
            ctl,
            tokens: Arc::new(AtomicU64::new(1)),
            default_timeout,
            connection: CONNECTIONS.fetch_add(1, Ordering::Relaxed),
            meta_traces: false,
            remote,
        }
    }

    /// How many clones of this client are alive (a responder reuses a connection only while
    /// no handler kept its peer beyond its body).
    pub(crate) fn clones(&self) -> usize {
        Arc::strong_count(&self.tokens)
    }

    pub(crate) fn with_meta_traces(mut self, on: bool) -> Self {
        self.meta_traces = on;
        self
    }

    /// A number naming this client's connection, unique within the process and the same for
    /// every clone: a profile keeps per-connection state (an MCP session's negotiated
    /// revision and log level, say) under it, reached from a handler through
    /// [`Context::peer`](crate::Context::peer).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use rpcwire_service::{Caller, ClientSettings, Dispatcher, Service};
    ///
    /// let connection = || {
    ///     let caller = Arc::new(Caller::anonymous());
    ///     Dispatcher::new(&Service::client_only(), caller, ClientSettings::default()).1
    /// };
    /// let (a, b) = (connection(), connection());
    /// assert_eq!(a.connection_id(), a.clone().connection_id());
    /// assert_ne!(a.connection_id(), b.connection_id());
    /// ```
    pub fn connection_id(&self) -> u64 {
        self.connection
    }

    fn token(&self) -> Token {
        Token(self.tokens.fetch_add(1, Ordering::Relaxed))
    }

    /// Calls `method` with `params` (any `Serialize` that becomes an array or object; `()` for
    /// none) and deserializes the result, with the connection's default timeout.
    pub async fn call<P, R>(&self, method: &str, params: P) -> Result<R, CallError>
    where
        P: Serialize,
        R: DeserializeOwned,
    {
        let raw = self.call_raw(method, encode_params(&params)?, None).await?;
        serde_json::from_str(&raw).map_err(CallError::Decode)
    }

    /// Like [`call`](Client::call) with its own timeout.
    pub async fn call_with_timeout<P, R>(
        &self,
        method: &str,
        params: P,
        timeout: Duration,
    ) -> Result<R, CallError>
    where
        P: Serialize,
        R: DeserializeOwned,
    {
        let raw = self
            .call_raw(method, encode_params(&params)?, Some(timeout))
            .await?;
        serde_json::from_str(&raw).map_err(CallError::Decode)
    }

    /// Calls `method` with params given as JSON text (an array or object, or `None`) and
    /// returns the result's JSON text exactly as received. `timeout: None` uses the
    /// connection's default.
    pub async fn call_json(
        &self,
        method: &str,
        params: Option<&RawValue>,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>, CallError> {
        let params = match params {
            None => None,
            Some(p) => encode_params(p)?,
        };
        let text = self.call_raw(method, params, timeout).await?;
        RawValue::from_string(text).map_err(CallError::Decode)
    }

    async fn call_raw(
        &self,
        method: &str,
        params: Option<String>,
        timeout: Option<Duration>,
    ) -> Result<String, CallError> {
        let token = self.token();
        let call = ClientCall::start_to(method, Some(self.remote.remote()));
        let span = call.span().clone();
        let trace = call.trace_context();
        let params = match &trace {
            Some(cx) if self.meta_traces => cx.put_in_params_meta(params),
            _ => params,
        };
        async move {
            let started = std::time::Instant::now();
            let (reply, rx) = oneshot::channel();
            let mut guard = CancelGuard {
                ctl: &self.ctl,
                tokens: vec![token],
            };
            let cmd = Command::Call(Box::new(CallCmd {
                token,
                method: method.to_owned(),
                params,
                timeout,
                reply,
                trace: trace.map(Box::new),
            }));
            // The deadline runs from now, not from when the connection finds room for the
            // call: waiting for a pending slot or for transmit room counts. When it passes, the
            // guard cancels the call in the driver (wherever it is).
            let deadline = timeout.or(self.default_timeout);
            let exchange = async {
                self.cmd.send(cmd).await.map_err(|_| CallError::Closed)?;
                rx.await.unwrap_or(Err(CallError::Closed))
            };
            let outcome = match deadline {
                Some(limit) => tokio::time::timeout(limit, exchange)
                    .await
                    .unwrap_or(Err(CallError::Timeout)),
                None => exchange.await,
            };
            if !matches!(outcome, Err(CallError::Timeout)) {
                guard.tokens.clear();
            }
            let latency_us = u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
            tracing::debug!(
                latency_us,
                token = token.0,
                ok = outcome.is_ok(),
                "call ended"
            );
            call.end(method, outcome.as_ref().err().map(client_error));
            outcome
        }
        .instrument(span)
        .await
    }

    /// Sends a notification (no response). Resolves once it is queued for writing.
    pub async fn notify<P: Serialize>(&self, method: &str, params: P) -> Result<(), CallError> {
        let params = encode_params(&params)?;
        let (done, rx) = oneshot::channel();
        let cmd = Command::Notify(Box::new(NotifyCmd {
            method: method.to_owned(),
            params,
            done,
        }));
        self.cmd.send(cmd).await.map_err(|_| CallError::Closed)?;
        rx.await.unwrap_or(Err(CallError::Closed))
    }

    /// Starts a batch: add calls and notifications, then [`send`](Batch::send) it as one
    /// JSON array.
    ///
    /// ```
    /// # async fn demo(client: rpcwire_service::Client) -> Result<(), rpcwire_service::CallError> {
    /// let mut batch = client.batch();
    /// batch.call("sum", [1, 2, 4])?;
    /// batch.notify("notify_hello", [7])?;
    /// batch.call("get_data", ())?;
    /// let results = batch.send().await?;
    /// assert_eq!(results.len(), 2); // one per call, in the order added
    /// let sum: i64 = serde_json::from_str(results[0].as_ref().unwrap().get()).unwrap();
    /// assert_eq!(sum, 7);
    /// # Ok(()) }
    /// ```
    pub fn batch(&self) -> Batch<'_> {
        Batch {
            client: self,
            items: Vec::new(),
            timeout: None,
        }
    }

    /// A snapshot of the connection's counters and queues.
    pub async fn stats(&self) -> Result<SessionStats, CallError> {
        let (tx, rx) = oneshot::channel();
        self.cmd
            .send(Command::Stats(tx))
            .await
            .map_err(|_| CallError::Closed)?;
        rx.await.map_err(|_| CallError::Closed)
    }

    /// Graceful shutdown: the connection stops reading, fails our pending calls with
    /// [`CallError::Closed`], finishes answering the requests it already received, flushes,
    /// and closes its write side. Wait for the end with the transport's session (`rpcwire_tokio::Session::join`).
    pub fn shutdown(&self) {
        self.ctl.send(Control::Shutdown);
    }

    /// A server's drain ([`Shutdown`](crate::Shutdown)) on this connection: it goes on reading
    /// (what arrives is refused while the service drains), and once no handler runs and
    /// nothing waits, it [`shutdown`](Self::shutdown)s.
    pub fn shutdown_when_idle(&self) {
        self.ctl.send(Control::ShutdownWhenIdle);
    }

    /// Accepts inbound batches on this connection from now on, or refuses them (each
    /// answered with one Invalid Request), overriding the transport's setting (`rpcwire_tokio::Builder::batches`)
    /// for this connection: a profile calls it from a handler once the peers have negotiated
    /// (MCP: accepted in revision 2025-03-26, refused from 2025-06-18 on). Takes effect before
    /// the driver reads further input.
    pub fn set_batches(&self, accept: bool) {
        self.ctl.send(Control::SetBatches(accept));
    }

    /// True once the connection's driver has stopped.
    pub fn is_closed(&self) -> bool {
        self.cmd.is_closed()
    }
}

/// The outcomes of a batch's calls, in the order the calls were added: each the result's JSON
/// text or why the call failed. Index it like a slice, or decode one with
/// [`get`](BatchResults::get).
///
/// ```
/// # async fn demo(client: rpcwire_service::Client) -> Result<(), rpcwire_service::CallError> {
/// let mut batch = client.batch();
/// let sum = batch.call("sum", [1, 2, 4])?;
/// let data = batch.call("get_data", ())?;
/// let results = batch.send().await?;
/// let total: i64 = results.get(sum)?;
/// let (word, n): (String, i64) = results.get(data)?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct BatchResults(Vec<Result<Box<RawValue>, CallError>>);

impl BatchResults {
    /// The outcome of call number `index` (as [`Batch::call`] returned it), decoded into `T`:
    /// the peer's error, the call's failure, or a decoding error. An index that names no
    /// call is a `Decode` error that says so.
    pub fn get<T: DeserializeOwned>(&self, index: usize) -> Result<T, CallError> {
        match self.0.get(index) {
            Some(Ok(raw)) => serde_json::from_str(raw.get()).map_err(CallError::Decode),
            Some(Err(e)) => Err(e.duplicate()),
            None => Err(CallError::Decode(serde::de::Error::custom(format!(
                "no call number {index} in a batch of {}",
                self.0.len()
            )))),
        }
    }

    /// The outcomes, to own.
    pub fn into_vec(self) -> Vec<Result<Box<RawValue>, CallError>> {
        self.0
    }
}

impl std::ops::Deref for BatchResults {
    type Target = [Result<Box<RawValue>, CallError>];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl IntoIterator for BatchResults {
    type Item = Result<Box<RawValue>, CallError>;
    type IntoIter = std::vec::IntoIter<Self::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

/// `fut`'s output, or `None` when `deadline` passes first.
async fn within<F: std::future::Future>(
    deadline: Option<tokio::time::Instant>,
    fut: F,
) -> Option<F::Output> {
    match deadline {
        Some(at) => tokio::time::timeout_at(at, fut).await.ok(),
        None => Some(fut.await),
    }
}

/// An outgoing batch under construction (see [`Client::batch`]).
#[derive(Debug)]
pub struct Batch<'c> {
    client: &'c Client,
    items: Vec<BatchItem>,
    timeout: Option<Duration>,
}

/// A batch call's receiver, kept until the batch is sent.
type Pending = oneshot::Receiver<Reply>;

impl Batch<'_> {
    /// Adds a call; returns its index among the batch's results.
    pub fn call<P: Serialize>(&mut self, method: &str, params: P) -> Result<usize, CallError> {
        let params = encode_params(&params)?;
        let index = self.calls();
        let (reply, _) = oneshot::channel();
        self.items.push(BatchItem::Call(CallCmd {
            token: self.client.token(),
            method: method.to_owned(),
            params,
            timeout: None,
            reply,
            trace: None,
        }));
        Ok(index)
    }

    /// Adds a notification.
    pub fn notify<P: Serialize>(&mut self, method: &str, params: P) -> Result<(), CallError> {
        let params = encode_params(&params)?;
        self.items.push(BatchItem::Notify {
            method: method.to_owned(),
            params,
        });
        Ok(())
    }

    /// Sets the timeout of every call in the batch (default: the connection's).
    pub fn timeout(&mut self, timeout: Duration) -> &mut Self {
        self.timeout = Some(timeout);
        self
    }

    /// Calls added so far.
    pub fn calls(&self) -> usize {
        self.items
            .iter()
            .filter(|i| matches!(i, BatchItem::Call(_)))
            .count()
    }

    /// Sends the batch and waits for every call's outcome (results in the order the calls
    /// were added; an all-notification batch resolves to no results once queued). Dropping
    /// the future cancels the calls not yet answered.
    pub async fn send(self) -> Result<BatchResults, CallError> {
        let Batch {
            client,
            mut items,
            timeout,
        } = self;
        if items.is_empty() {
            return Ok(BatchResults(Vec::new()));
        }
        let mut receivers: Vec<Pending> = Vec::new();
        let mut guard = CancelGuard {
            ctl: &client.ctl,
            tokens: Vec::new(),
        };
        for item in items.iter_mut() {
            if let BatchItem::Call(c) = item {
                let (reply, rx) = oneshot::channel();
                c.reply = reply;
                c.timeout = timeout;
                receivers.push(rx);
                guard.tokens.push(c.token);
            }
        }
        let (done, done_rx) = oneshot::channel();
        // As for a single call, the deadline runs from now; calls still unanswered when it
        // passes fail with `Timeout` (and are cancelled in the driver).
        let deadline = timeout
            .or(client.default_timeout)
            .map(|t| tokio::time::Instant::now() + t);
        let sent = within(deadline, async {
            client
                .cmd
                .send(Command::Batch(Box::new(BatchCmd { items, done })))
                .await
                .map_err(|_| CallError::Closed)?;
            done_rx.await.unwrap_or(Err(CallError::Closed))
        })
        .await;
        match sent {
            Some(Ok(())) => {}
            Some(Err(e)) => {
                guard.tokens.clear();
                return Err(e);
            }
            None => return Err(CallError::Timeout),
        }
        let mut results = Vec::with_capacity(receivers.len());
        let mut timed_out = false;
        for rx in receivers {
            let outcome = match within(deadline, rx).await {
                Some(received) => received.unwrap_or(Err(CallError::Closed)),
                None => {
                    timed_out = true;
                    Err(CallError::Timeout)
                }
            };
            results.push(
                outcome.and_then(|text| RawValue::from_string(text).map_err(CallError::Decode)),
            );
        }
        if !timed_out {
            guard.tokens.clear();
        }
        Ok(BatchResults(results))
    }
}

/// A failed call as its span and metrics name it.
fn client_error(e: &CallError) -> ClientError {
    match e {
        CallError::Rpc(e) => ClientError::Code(e.code),
        CallError::Timeout => ClientError::Local("timeout"),
        CallError::Closed => ClientError::Local("closed"),
        CallError::Params(_) | CallError::ParamsNotStructured => ClientError::Local("params"),
        CallError::Decode(_) => ClientError::Local("decode"),
        _ => ClientError::Local("_OTHER"),
    }
}
