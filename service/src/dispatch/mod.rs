//! The dispatcher: the one place a request is run, on every transport.
//!
//! A transport feeds its core [`Connection`](rpcwire::Connection) and hands every inbound
//! message it gives out to [`Dispatcher::inbound`], which:
//! - looks the method up once, by the name's bytes;
//! - checks the caller's access ([`Router::require`](crate::Router::require)) and rate limit
//!   ([`Service::rate_limit`]), each once per call: a refused call never reaches its handler;
//! - starts the call's span and metrics (`rpcwire-telemetry`'s [`ServerCall`]);
//! - runs the handler where the request lies when a handler slot is free (params decoded from
//!   the receive buffer; a handler that finishes at once writes its answer straight into the
//!   transmit queue), in a task when it waits, and queues the request (as an owned copy,
//!   bounded in bytes) when every slot is taken;
//! - routes the connection's own calls' responses to their [`Client`] futures, and the
//!   profile's cancel notifications to the handlers they name.
//!
//! What waits ([`wait`](Dispatcher::wait)): handlers finishing, the connection's clients'
//! commands, and their control requests. The transport `select!`s on it beside its I/O and
//! gives what woke it to [`on_wake`](Dispatcher::on_wake); after each input or wake-up it calls
//! [`settle`](Dispatcher::settle), then drains the connection's output.
//!
//! [`ServerCall`]: rpcwire_telemetry::ServerCall

mod batch_trace;
mod commands;
mod handlers;

use std::cell::OnceCell;
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::Instant as StdInstant;

use rpcwire::wire::RawJson;
use rpcwire::{Config, ErrorCode, Event, Failure, Inbound, Instant, RequestHandle, Token};
use rpcwire_telemetry::{self as telemetry, Received, Rejection};
use tokio::sync::{mpsc, oneshot};

use crate::caller::Caller;
use crate::client::controls::{Control, ControlInbox, Controls};
use crate::client::{Command, Reply, SessionStats};
use crate::ratelimit::RateLimiter;
use crate::router::{forbidden, rate_limited, shutting_down, Found, Origin, OriginId};
use crate::service::{CancelProfile, Service};
use crate::{CallError, Client, Conn, RpcError};

use handlers::{id_key, Done, Handlers};

/// The most of a connection's own calls on the wire at once (more wait in line for a free
/// slot: backpressure on the clients, never an error). The table grows only as calls are
/// made, so the limit costs nothing until used.
pub const MAX_PENDING_CALLS: usize = 256;

/// What a transport gives a dispatcher besides the [`Service`]: the settings of the
/// connection's own [`Client`].
#[derive(Debug, Clone)]
pub struct ClientSettings {
    /// The timeout of a call that gives none (`None`: until the connection ends).
    pub request_timeout: Option<std::time::Duration>,
    /// The capacity of the channel from the clients to the connection.
    pub command_capacity: usize,
    /// Calls carry their span's W3C trace context in `params._meta` (MCP's place for it).
    pub meta_traces: bool,
    /// Where outgoing calls' trace contexts go, by request id (HTTP's `traceparent` header).
    pub outgoing_traces: Option<telemetry::trace_context::OutgoingTraces>,
    /// Whether each batch received gets a span of its own (`rpc.batch`), while a subscriber
    /// listens to spans.
    pub batch_spans: bool,
}

impl Default for ClientSettings {
    fn default() -> Self {
        ClientSettings {
            request_timeout: Config::default().request_timeout,
            command_capacity: 256,
            meta_traces: false,
            outgoing_traces: None,
            batch_spans: true,
        }
    }
}

/// What a wake-up asks of the transport, after [`Dispatcher::on_wake`] or
/// [`Dispatcher::take_controls`].
#[derive(Debug)]
#[must_use]
pub enum Woke {
    /// Nothing beyond settling and draining output.
    Nothing,
    /// Stop reading: answer what was received, flush, close (`why`, for the log).
    EndOfInput(&'static str),
}

/// What woke [`Dispatcher::wait`]: give it to [`Dispatcher::on_wake`].
#[derive(Debug)]
pub struct Wake(WakeKind);

#[derive(Debug)]
enum WakeKind {
    Control,
    Done(Result<Done, tokio::task::JoinError>),
    Command(Option<Command>),
}

/// An inbound request or notification waiting for a handler slot.
struct Job {
    /// `None` for a notification.
    handle: Option<RequestHandle>,
    id: Option<String>,
    method: String,
    params: Option<String>,
    /// Bytes it holds (counted against the queue budget).
    cost: usize,
    /// The batch it came in, when batches are traced.
    batch: Option<batch_trace::Member>,
}

/// One connection's dispatcher (see the module docs): its caller, its handlers, its queue
/// of waiting requests, and its own calls to the peer.
pub struct Dispatcher {
    service: Service,
    caller: Arc<Caller>,
    /// The caller's key in the rate limiter, when there is one.
    limiter_key: Option<Box<str>>,
    /// Handed to handlers (set when there is a router; keeps the channels open).
    peer: Option<Client>,
    /// Commands from the connection's clients (`None` once every client is gone).
    commands: Option<mpsc::Receiver<Command>>,
    controls: ControlInbox,
    /// Our calls on the wire, by token.
    calls: HashMap<Token, oneshot::Sender<Reply>>,
    /// A command that found no room (pending table or transmit buffer full), retried after
    /// progress; while it waits, no further commands are taken (backpressure on clients).
    stalled: Option<Command>,
    queue: VecDeque<Job>,
    queued_bytes: usize,
    /// Handlers not finished, and answers waiting for transmit room.
    handlers: Handlers,
    /// Position in the router of the method called last: tried before the lookup by name
    /// (pipelined traffic calls one method again and again).
    last_method: Option<usize>,
    /// The span of the batch being received (while spans are listened to), and the sizes of
    /// the batches received (while metrics are recorded).
    batch_trace: batch_trace::BatchTrace,
    /// Input has ended: our calls can no longer be answered.
    draining: bool,
    /// Input is to end once no handler runs ([`Client::shutdown_when_idle`]).
    end_when_idle: bool,
    /// The zero of the core's clock.
    origin: StdInstant,
    outgoing_traces: Option<telemetry::trace_context::OutgoingTraces>,
}

impl std::fmt::Debug for Dispatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dispatcher")
            .field("caller", &self.caller)
            .field("calls", &self.calls.len())
            .field("queued", &self.queue.len())
            .field("running", &self.handlers.running())
            .finish_non_exhaustive()
    }
}

impl Service {
    /// A core connection for this service over `config`: the connection's own calls are
    /// timed by their clients when the service has a cancel notification (so that a call
    /// given up on reaches the connection as a cancellation while still pending, and the peer
    /// can be told which request to drop), and its first request id differs from every other
    /// connection's of every process.
    pub fn connection(&self, config: Config) -> Conn {
        let config = match self.0.cancel {
            Some(_) => Config {
                request_timeout: None,
                ..config
            },
            None => config,
        };
        let mut conn = Conn::new(config);
        conn.seed_ids(id_seed());
        conn
    }
}

/// A different first request id for every connection of every process (time, process id and
/// a counter), so that a late answer meant for an earlier process or connection on the same
/// line cannot be taken for one of ours.
fn id_seed() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed =
        nanos ^ (u64::from(std::process::id()) << 20) ^ COUNTER.fetch_add(1, Ordering::Relaxed);
    // Keep ids short: 24 bits of variety are plenty to tell connections apart.
    mixed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40
}

impl Dispatcher {
    /// The dispatcher of a connection from `caller`, and the connection's [`Client`] (its
    /// handlers get a clone as their peer; without a router the connection ends once every
    /// clone is dropped).
    pub fn new(service: &Service, caller: Arc<Caller>, settings: ClientSettings) -> (Self, Client) {
        let (cmd_tx, cmd_rx) = mpsc::channel(settings.command_capacity.max(1));
        let (ctl_tx, ctl_rx) = Controls::pair();
        let client = Client::new(
            cmd_tx,
            ctl_tx,
            settings.request_timeout,
            Arc::clone(&caller),
        )
        .with_meta_traces(settings.meta_traces);
        let peer = service.0.router.as_ref().map(|_| client.clone());
        let answer_cancelled = service.0.cancel.as_ref().is_none_or(|c| c.answer);
        let limiter_key = limiter_key(service, &caller);
        let dispatcher = Dispatcher {
            service: service.clone(),
            caller,
            limiter_key,
            peer,
            commands: Some(cmd_rx),
            controls: ctl_rx,
            calls: HashMap::new(),
            stalled: None,
            queue: VecDeque::new(),
            queued_bytes: 0,
            handlers: Handlers::new(answer_cancelled),
            last_method: None,
            batch_trace: batch_trace::BatchTrace::new(settings.batch_spans),
            draining: false,
            end_when_idle: false,
            origin: telemetry::now(),
            outgoing_traces: settings.outgoing_traces,
        };
        (dispatcher, client)
    }

    /// The caller of the messages dispatched.
    pub fn caller(&self) -> &Arc<Caller> {
        &self.caller
    }

    /// Dispatches the messages after this one as from `caller` (a request/response transport
    /// reusing a dispatcher for another request's body).
    pub fn set_caller(&mut self, caller: Arc<Caller>) {
        self.limiter_key = limiter_key(&self.service, &caller);
        self.caller = caller;
    }

    /// The client handed to handlers as their peer (`None` without a router).
    pub fn peer(&self) -> Option<&Client> {
        self.peer.as_ref()
    }

    /// The core's clock now (the transport's clock: tokio's, so that a paused test clock
    /// drives the connection's deadlines as it drives the timers a transport waits on).
    pub fn now(&self) -> Instant {
        Instant::from_std(self.origin, telemetry::now())
    }

    /// The zero of the core's clock, to turn a core deadline into a time to sleep until.
    pub fn origin(&self) -> StdInstant {
        self.origin
    }

    /// Nothing queued and no handler running or waiting to write its answer.
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.handlers.running() == 0
    }

    /// [`is_idle`](Self::is_idle), and none of the connection's own calls pending or waiting
    /// for room: nothing would be lost if it were dropped now.
    pub fn is_quiet(&self) -> bool {
        self.queue.is_empty()
            && self.handlers.is_idle()
            && self.calls.is_empty()
            && self.stalled.is_none()
    }

    /// Handlers running, plus answers waiting for transmit room.
    pub fn running(&self) -> usize {
        self.handlers.running()
    }

    /// The connection's state and counters, with `buffer_bytes` the transport holds besides
    /// the core's storage.
    pub fn stats(&self, conn: &Conn, buffer_bytes: usize) -> SessionStats {
        SessionStats {
            core: conn.stats(),
            pending_calls: self.calls.len(),
            inflight: conn.inflight_len(),
            queued: self.queue.len(),
            queued_bytes: self.queued_bytes,
            running: self.handlers.running(),
            buffer_bytes: conn.storage_bytes() + buffer_bytes,
        }
    }

    /// The core said it needs more input: a batch being received ends here.
    #[inline]
    pub fn input_waits(&mut self, conn: &Conn) {
        self.batch_trace
            .observe(conn.counters(), &self.caller, true);
    }

    /// Runs one inbound message the core gave out: the one place every request, on every
    /// transport, is checked and handed to its handler. `received` is when the input that
    /// brought it was read (calls are timed from it).
    ///
    /// Inlined into each transport's input loop: it runs once per message.
    #[inline(always)]
    pub fn inbound(&mut self, conn: &mut Conn, item: Inbound<'_>, received: &Received) {
        self.batch_trace
            .observe(conn.counters(), &self.caller, false);
        let Dispatcher {
            service,
            caller,
            limiter_key,
            peer,
            calls,
            queue,
            queued_bytes,
            handlers,
            last_method,
            batch_trace,
            ..
        } = self;
        // A batch member's spans are children of its batch's span.
        let _in_batch = batch_trace.span().map(tracing::Span::enter);
        let caller = batch_trace.caller().unwrap_or(caller);
        let router = service.0.router.as_deref();
        match item {
            Inbound::Request(req) => {
                let found = router
                    .and_then(|r| r.request_handler(req.method.escaped_bytes(), *last_method));
                let wire_name;
                let found = match found {
                    Some(Found::Named {
                        at,
                        name,
                        run,
                        meter,
                    }) => {
                        *last_method = Some(at);
                        Some((name, run, Some(meter)))
                    }
                    Some(Found::Fallback(run)) => {
                        wire_name = req.method.to_str();
                        Some((&*wire_name, run, None))
                    }
                    None => None,
                };
                let (Some((method, handler, meter)), Some(peer)) = (found, peer.as_ref()) else {
                    let method = req.method.to_str();
                    tracing::debug!(%method, id = %req.id, "method not found");
                    let _ = conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND);
                    telemetry::not_found(&method, req.id.raw(), caller.remote());
                    return;
                };
                let params = req.params;
                let permitted = router.is_none_or(|r| r.permits(caller.identity(), method));
                // Counted only for a call the access rules let through, once.
                let limited = permitted && over_rate_limit(service, limiter_key);
                // Refused before it runs once the drain has begun (one atomic load).
                let draining = service.0.shutdown.is_draining();
                if !permitted
                    || limited
                    || draining
                    || (queue.is_empty() && handlers.running() < service.0.concurrency)
                {
                    let origin = Origin {
                        peer,
                        cancel: OnceCell::new(),
                        state: router.and_then(|r| r.state()),
                        details: router.and_then(|r| r.details()),
                        id: Some(OriginId::Wire(req.id)),
                        method,
                        caller,
                        unsampled: std::cell::Cell::new(0),
                    };
                    // A refused request is answered at once, never queued.
                    let handler = match (permitted, limited) {
                        _ if draining => shutting_down(),
                        (false, _) => {
                            telemetry::reject(Rejection::Authorization);
                            service.log_refusal(
                                "call refused: not authorized",
                                caller.remote(),
                                Some(caller.identity().subject()),
                                Some(method),
                                &"the access rules do not allow this caller the method",
                            );
                            forbidden()
                        }
                        (true, true) => {
                            telemetry::reject(Rejection::Overload);
                            rate_limited()
                        }
                        (true, false) => handler,
                    };
                    let handle = req.handle;
                    let at = Some(received);
                    handlers.start_request(handler, &origin, params, conn, handle, meter, at);
                    return;
                }
                let id = req.id.raw().to_owned();
                let params = params.map(|p| p.as_str().to_owned());
                let cost = 64 + method.len() + id.len() + params.as_ref().map_or(0, String::len);
                if *queued_bytes + cost > service.0.queue_bytes {
                    tracing::warn!(%method, id, "request queue full: answering Server busy");
                    let _ = conn.reject(req.handle, ErrorCode::SERVER_BUSY);
                    telemetry::reject(Rejection::Overload);
                    return;
                }
                *queued_bytes += cost;
                queue.push_back(Job {
                    handle: Some(req.handle),
                    id: Some(id),
                    method: method.to_owned(),
                    params,
                    cost,
                    batch: batch_trace.member(),
                });
            }
            Inbound::Notification(n) => {
                if let Some(profile) = &service.0.cancel {
                    if n.method.eq_str(&profile.method) {
                        let id = n.params.and_then(|p| {
                            p.members()
                                .find(|(k, _)| k.eq_str(&profile.id_member))
                                .map(|(_, v)| v)
                        });
                        cancelled(profile, id, conn, handlers, queue, queued_bytes);
                        return;
                    }
                }
                let method = n.method.to_str();
                let handler = router.and_then(|r| r.get_notification(&method));
                let (Some(handler), Some(peer)) = (handler, peer.as_ref()) else {
                    tracing::debug!(%method, "notification ignored: no handler");
                    return;
                };
                if !router.is_none_or(|r| r.permits(caller.identity(), &method)) {
                    tracing::debug!(
                        %method,
                        subject = caller.identity().subject(),
                        "notification refused by the access rules: dropped"
                    );
                    return;
                }
                if service.0.shutdown.is_draining() {
                    tracing::debug!(%method, "notification while shutting down: dropped");
                    return;
                }
                if over_rate_limit(service, limiter_key) {
                    tracing::debug!(%method, "notification over the rate limit: dropped");
                    return;
                }
                let params = n.params;
                if queue.is_empty() && handlers.running() < service.0.concurrency {
                    let origin = Origin {
                        peer,
                        cancel: OnceCell::new(),
                        state: router.and_then(|r| r.state()),
                        details: router.and_then(|r| r.details()),
                        id: None,
                        method: &method,
                        caller,
                        unsampled: std::cell::Cell::new(0),
                    };
                    handlers.start_notification(handler, &origin, params);
                    return;
                }
                let params = params.map(|p| p.as_str().to_owned());
                let cost = 64 + method.len() + params.as_ref().map_or(0, String::len);
                if *queued_bytes + cost > service.0.queue_bytes {
                    tracing::warn!(%method, "request queue full: notification dropped");
                    return;
                }
                *queued_bytes += cost;
                queue.push_back(Job {
                    handle: None,
                    id: None,
                    method: method.into_owned(),
                    params,
                    cost,
                    batch: batch_trace.member(),
                });
            }
            Inbound::Response(resp) => {
                if let Some(reply) = calls.remove(&resp.token) {
                    let outcome = match resp.outcome {
                        Ok(result) => Ok(result.as_str().to_owned()),
                        Err(e) => Err(CallError::Rpc(RpcError::from_wire(&e))),
                    };
                    let _ = reply.send(outcome);
                }
            }
            Inbound::Problem(rpcwire::Problem::PeerError(e)) => {
                // Not tied to one call (several were waiting): the application sees it
                // here, and the calls end at their deadlines.
                tracing::warn!(
                    code = e.code.0,
                    message = %e.message,
                    "the peer could not read one of our messages"
                );
            }
            Inbound::Problem(p) => {
                telemetry::problem(&p);
                tracing::debug!(problem = ?p, replied = p.replied(), "peer problem");
            }
        }
    }

    /// Everything that needs no waiting: the connection's events (calls that ended without a
    /// response), answers that waited for transmit room, queued requests while handler slots
    /// are free, a command that waited for room. Call it after every input and wake-up, then
    /// drain the connection's output.
    pub fn settle(&mut self, conn: &mut Conn) {
        self.deliver_events(conn);
        self.handlers.write_answers(conn);
        self.start_jobs(conn);
        self.handlers.write_answers(conn);
        self.deliver_events(conn);
        // Responses and events just freed pending slots: a command that waited for one must
        // be retried now, as nothing else may wake the connection (no answer is due any more).
        self.retry_stalled(conn);
    }

    /// Starts queued handlers while slots are free.
    fn start_jobs(&mut self, conn: &mut Conn) {
        if self.queue.is_empty() {
            return;
        }
        let (Some(router), Some(peer)) = (self.service.0.router.clone(), self.peer.clone()) else {
            return;
        };
        while self.handlers.running() < self.service.0.concurrency {
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            self.queued_bytes -= job.cost;
            // A batch member started late is still its batch's child.
            let _in_batch = job.batch.as_ref().map(|b| b.0.enter());
            let caller = job.batch.as_ref().and_then(|b| b.1.as_ref());
            let origin = Origin {
                peer: &peer,
                cancel: OnceCell::new(),
                state: router.state(),
                details: router.details(),
                id: job.id.as_deref().map(OriginId::Text),
                method: &job.method,
                caller: caller.unwrap_or(&self.caller),
                unsampled: std::cell::Cell::new(0),
            };
            // Validated when received; parsed again only to get the view back.
            let params = job
                .params
                .as_deref()
                .and_then(|p| RawJson::parse(p, rpcwire::wire::scan::MAX_DEPTH_LIMIT).ok());
            match job.handle {
                Some(handle) => match router.request_handler(job.method.as_bytes(), None) {
                    Some(found) => {
                        let meter = match &found {
                            Found::Named { meter, .. } => Some(*meter),
                            Found::Fallback(_) => None,
                        };
                        // Timed from now: its wait in the queue is not the handler's time.
                        self.handlers.start_request(
                            found.run(),
                            &origin,
                            params,
                            conn,
                            handle,
                            meter,
                            None,
                        );
                    }
                    None => {
                        let _ = conn.reject(handle, ErrorCode::METHOD_NOT_FOUND);
                    }
                },
                None => {
                    if let Some(handler) = router.get_notification(&job.method) {
                        self.handlers.start_notification(handler, &origin, params);
                    }
                }
            }
        }
    }

    /// Resolves calls that ended without a response.
    fn deliver_events(&mut self, conn: &mut Conn) {
        while let Some(event) = conn.poll_event() {
            match event {
                Event::RequestFailed { token, reason } => {
                    if let Some(reply) = self.calls.remove(&token) {
                        let _ = reply.send(Err(match reason {
                            Failure::TimedOut => CallError::Timeout,
                            Failure::Closed => CallError::Closed,
                        }));
                    }
                }
            }
        }
    }

    /// Waits for what the dispatcher waits on: a handler finishing, a command from a client
    /// (unless one waits for room), a control request. Cancel-safe: a transport `select!`s
    /// on it beside its I/O, and hands what it returns to [`on_wake`](Self::on_wake).
    pub async fn wait(&mut self) -> Wake {
        let has_tasks = !self.handlers.tasks().is_empty();
        let take_cmds = self.stalled.is_none() && self.commands.is_some();
        let Dispatcher {
            controls,
            handlers,
            commands,
            ..
        } = self;
        tokio::select! {
            () = controls.queued() => Wake(WakeKind::Control),
            done = handlers.tasks().join_next(), if has_tasks => match done {
                Some(done) => Wake(WakeKind::Done(done)),
                None => Wake(WakeKind::Control),
            },
            cmd = recv(commands), if take_cmds => Wake(WakeKind::Command(cmd)),
        }
    }

    /// Takes what woke [`wait`](Self::wait). `buffer_bytes`: what the transport holds besides
    /// the core's storage, for a statistics request.
    pub fn on_wake(&mut self, conn: &mut Conn, wake: Wake, buffer_bytes: usize) -> Woke {
        match wake.0 {
            WakeKind::Control => self.take_controls(conn),
            WakeKind::Done(done) => {
                self.handlers.finished(done);
                while let Some(done) = self.handlers.tasks().try_join_next() {
                    self.handlers.finished(done);
                }
                Woke::Nothing
            }
            WakeKind::Command(Some(cmd)) => {
                self.on_command(conn, cmd, buffer_bytes);
                // Take what else is queued, up to a bound, before writing.
                for _ in 0..64 {
                    if self.stalled.is_some() {
                        break;
                    }
                    let Some(commands) = &mut self.commands else {
                        break;
                    };
                    match commands.try_recv() {
                        Ok(cmd) => self.on_command(conn, cmd, buffer_bytes),
                        Err(_) => break,
                    }
                }
                Woke::Nothing
            }
            WakeKind::Command(None) => {
                self.commands = None;
                // Every client is gone and nobody can call us: finish.
                if self.peer.is_none() {
                    Woke::EndOfInput("all clients dropped")
                } else {
                    Woke::Nothing
                }
            }
        }
    }

    /// Takes the queued control requests (a transport does before reading more input, so
    /// that a setting a handler changed applies to all input read after it).
    pub fn take_controls(&mut self, conn: &mut Conn) -> Woke {
        let mut woke = Woke::Nothing;
        while let Some(ctl) = self.controls.try_recv() {
            match ctl {
                Control::Cancel(token) => self.cancel_call(conn, token),
                Control::Shutdown => woke = Woke::EndOfInput("shutdown"),
                Control::ShutdownWhenIdle => self.end_when_idle = true,
                Control::SetBatches(accept) => conn.set_batches(accept),
            }
        }
        if self.end_when_idle && self.is_idle() {
            woke = Woke::EndOfInput("shutdown");
        }
        woke
    }

    /// Our call `token` was given up on: forget it, and tell the peer in its profile's
    /// words, so that its handler can stop.
    fn cancel_call(&mut self, conn: &mut Conn, token: Token) {
        if self.calls.remove(&token).is_some() {
            let id = conn.request_id(token);
            let _ = conn.cancel(token);
            if let (Some(profile), Some(id)) = (&self.service.0.cancel, id) {
                let params = commands::CancelParams {
                    member: &profile.id_member,
                    id,
                };
                if let Err(e) = conn.send_notification(&profile.method, Some(&params)) {
                    tracing::debug!(error = %e, "cancel notification not sent");
                }
            }
        }
        if matches!(&self.stalled, Some(Command::Call(c)) if c.token == token) {
            self.stalled = None;
        }
    }

    /// Input has ended: our pending calls can no longer be answered; the requests already
    /// received are still answered. Call [`Conn::fail_pending`] once everything buffered is
    /// decoded (their `RequestFailed` events then resolve them as [`CallError::Closed`]).
    pub fn end_of_input(&mut self) {
        if self.draining {
            return;
        }
        self.draining = true;
        match self.stalled.take() {
            Some(cmd @ Command::Notify(_)) => self.stalled = Some(cmd),
            Some(cmd) => cmd.fail(|| CallError::Closed),
            None => {}
        }
    }

    /// The connection closed: resolves what it left.
    pub fn close(&mut self, conn: &mut Conn) {
        conn.close();
        self.deliver_events(conn);
    }

    /// The byte stream failed: everything ends now (calls fail, handlers are aborted).
    pub fn fail(&mut self, conn: &mut Conn) {
        conn.close();
        for (_, reply) in self.calls.drain() {
            let _ = reply.send(Err(CallError::Closed));
        }
        self.deliver_events(conn);
        if let Some(cmd) = self.stalled.take() {
            cmd.fail(|| CallError::Closed);
        }
        self.handlers.abort_all();
    }
}

/// The caller's key in the service's rate limiter, when it has one.
fn limiter_key(service: &Service, caller: &Caller) -> Option<Box<str>> {
    service
        .0
        .limiter
        .as_ref()
        .map(|_| RateLimiter::key(caller).into_boxed_str())
}

/// Takes one call from the caller's rate-limit bucket: true when there was none left.
#[inline]
fn over_rate_limit(service: &Service, key: &Option<Box<str>>) -> bool {
    match (&service.0.limiter, key) {
        (Some(limiter), Some(key)) => limiter.check(key, telemetry::now()).is_err(),
        _ => false,
    }
}

/// Receives from the commands channel while it is open (a disabled branch is never polled).
async fn recv(commands: &mut Option<mpsc::Receiver<Command>>) -> Option<Command> {
    match commands {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

/// The peer cancelled the request with this id (`None`: the notification named none).
fn cancelled(
    profile: &CancelProfile,
    id: Option<RawJson<'_>>,
    conn: &mut Conn,
    handlers: &mut Handlers,
    queue: &mut VecDeque<Job>,
    queued_bytes: &mut usize,
) {
    let Some(id) = id.map(|id| id.as_str()) else {
        tracing::debug!("cancel naming no request");
        return;
    };
    if handlers.cancel(id) {
        tracing::debug!("request cancelled by the peer");
        return;
    }
    // Not started yet (waiting for a handler slot): under a rule that leaves cancelled
    // requests unanswered, it is let go of now.
    let key = id_key(id);
    let queued = queue.iter().position(|job| {
        job.handle.is_some() && job.id.as_deref().is_some_and(|j| id_key(j) == key)
    });
    match queued
        .filter(|_| !profile.answer)
        .and_then(|at| queue.remove(at))
    {
        Some(job) => {
            tracing::debug!("queued request cancelled by the peer");
            *queued_bytes -= job.cost;
            if let Some(handle) = job.handle {
                let _ = conn.release(handle);
            }
        }
        None => tracing::debug!("cancel for no running request"),
    }
}
