//! The driver: one task per connection that owns the core [`Connection`] and its receive
//! buffer and moves bytes, time and commands between tokio and the core.
//!
//! It `select!`s on: control messages (cancel, shutdown), handler completions, the socket
//! being writable (when the core has bytes to send, or a flush is due), the socket being
//! readable (straight into the core's receive buffer), client commands, and the core's next
//! deadline. After each, it runs [`Driver::step`]: feed buffered input to the core and dispatch
//! what comes out, retry answers and commands that waited for room, start queued handlers, and
//! deliver events. Reading and writing are independent, so two peers that flood each other
//! never deadlock on full socket buffers, and responses are read even when every handler slot
//! is busy.

use std::collections::{HashMap, VecDeque};
use std::io;
use std::mem::size_of;
use std::sync::Arc;
use std::time::Instant as StdInstant;

use rpcwire::wire::RxBuffer;
use rpcwire::{
    Config, Connection, ErrorCode, Event, Failure, Inbound, Instant, RequestHandle, RespondError,
    SendError, Token,
};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinSet;
use tracing::Instrument;

use crate::client::{BatchItem, Command, Control, Reply, SessionStats};
use crate::raw::Raw;
use crate::router::{CatchUnwind, Context};
use crate::{CallError, Client, DriverError, Router, RpcError};

/// Capacity of the core's pending-request table (our calls on the wire at once). More calls
/// wait in line for a free slot (backpressure on the clients, never an error), so this only
/// bounds pipelining depth, which stops paying well before 256 on any link; and the core scans
/// the table at each deadline query (every turn of the driver loop), so a larger table costs
/// throughput (1024 slots: about 30% fewer calls per second over TCP loopback).
pub(crate) const PENDING: usize = 256;
/// Capacity of the core's in-flight table (inbound requests not yet answered). It is larger
/// than any handler concurrency limit, so requests beyond the limit wait in it. Unlike
/// [`PENDING`], a full table is not backpressure: a peer's request beyond it is answered
/// Server busy, so it stays large enough for peers that pipeline deeply.
pub(crate) const INFLIGHT: usize = 1024;

/// Everything the driver needs from the [`Builder`](crate::Builder).
#[derive(Clone)]
pub(crate) struct Settings {
    pub(crate) config: Config,
    pub(crate) max_frame: usize,
    pub(crate) concurrency: usize,
    pub(crate) queue_bytes: usize,
    pub(crate) router: Option<Arc<Router>>,
}

/// The channels between the handles and the driver.
pub(crate) struct Channels {
    pub(crate) cmd: mpsc::Receiver<Command>,
    pub(crate) ctl: mpsc::UnboundedReceiver<Control>,
    /// Handed to handlers (set when there is a router; keeps the channels open).
    pub(crate) peer: Option<Client>,
}

/// The frame-size tiers: buffers are const generics of the core, so the driver is
/// instantiated for a few sizes and the configured maximum frame picks the smallest that fits.
pub(crate) const TIERS: [usize; 4] = [64 << 10, 1 << 20, 4 << 20, 16 << 20];

/// Receive buffer for a tier: the frame plus its delimiter.
const fn rx_cap(tier: usize) -> usize {
    tier + 16
}
/// Transmit buffer for a tier: room for a response as large as a request, plus headers.
const fn tx_cap(tier: usize) -> usize {
    tier + 4096
}
/// Batch-reply buffer for a tier.
const fn batch_cap(tier: usize) -> usize {
    if tier / 4 > 16 << 10 {
        tier / 4
    } else {
        16 << 10
    }
}

/// Bytes of fixed buffers a connection with this maximum frame allocates.
pub(crate) fn buffer_bytes(max_frame: usize) -> usize {
    let tier = TIERS
        .iter()
        .copied()
        .find(|t| max_frame <= *t)
        .unwrap_or(TIERS[3]);
    rx_cap(tier) + tx_cap(tier) + batch_cap(tier)
}

/// Runs a connection to its end.
pub(crate) async fn run<R, W>(
    settings: Settings,
    reader: R,
    writer: W,
    channels: Channels,
) -> Result<(), DriverError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    const T0: usize = TIERS[0];
    const T1: usize = TIERS[1];
    const T2: usize = TIERS[2];
    const T3: usize = TIERS[3];
    let m = settings.max_frame;
    if m <= T0 {
        drive::<{ rx_cap(T0) }, { tx_cap(T0) }, { batch_cap(T0) }, R, W>(
            settings, reader, writer, channels,
        )
        .await
    } else if m <= T1 {
        drive::<{ rx_cap(T1) }, { tx_cap(T1) }, { batch_cap(T1) }, R, W>(
            settings, reader, writer, channels,
        )
        .await
    } else if m <= T2 {
        drive::<{ rx_cap(T2) }, { tx_cap(T2) }, { batch_cap(T2) }, R, W>(
            settings, reader, writer, channels,
        )
        .await
    } else {
        drive::<{ rx_cap(T3) }, { tx_cap(T3) }, { batch_cap(T3) }, R, W>(
            settings, reader, writer, channels,
        )
        .await
    }
}

/// The core's state, in one heap allocation.
struct Buffers<const RX: usize, const TX: usize, const BATCH: usize> {
    conn: Connection<TX, BATCH, PENDING, INFLIGHT>,
    rx: RxBuffer<RX>,
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

/// Allocates the core's buffers on the heap.
///
/// The core keeps its buffers inline (const-generic arrays) and offers only by-value
/// constructors, and `unsafe` is forbidden here, so a large value is built on a thread whose
/// stack is large enough and then moved into its box. Small tiers are built in place.
async fn allocate<const RX: usize, const TX: usize, const BATCH: usize>(
    config: Config,
    max_frame: usize,
) -> io::Result<Box<Buffers<RX, TX, BATCH>>> {
    let seed = id_seed();
    let make = move || {
        let mut buffers = Box::new(Buffers {
            conn: Connection::new(config),
            rx: RxBuffer::with_max_frame(config.framing, max_frame),
        });
        buffers.conn.seed_ids(seed);
        buffers
    };
    let size = size_of::<Buffers<RX, TX, BATCH>>();
    if size <= 256 << 10 {
        return Ok(make());
    }
    let (tx, rx) = oneshot::channel();
    std::thread::Builder::new()
        .name("rpcwire-alloc".into())
        .stack_size(size.saturating_mul(6).saturating_add(1 << 20))
        .spawn(move || {
            let _ = tx.send(make());
        })?;
    rx.await
        .map_err(|_| io::Error::other("buffer allocation thread failed"))
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
}

/// A handler's outcome.
struct Done {
    handle: Option<RequestHandle>,
    reply: Result<String, RpcError>,
}

/// Why input stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputState {
    Open,
    /// End of stream or shutdown: answer what was received, then close.
    Draining,
}

/// The steps after input ends, taken once everything buffered has been decoded (the buffer
/// may hold complete frames that wait for transmit room).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ending {
    /// Nothing (input is open, or the steps are done).
    No,
    /// Mark the receive buffer's end ([`RxBuffer::finish`]), then decode again.
    Finish,
    /// Fail our pending calls ([`Connection::fail_pending`]): their responses could only have
    /// been in what was buffered.
    FailPending,
}

struct Driver<const RX: usize, const TX: usize, const BATCH: usize> {
    bufs: Box<Buffers<RX, TX, BATCH>>,
    origin: StdInstant,
    settings: Settings,
    peer: Option<Client>,
    /// Our calls on the wire, by token.
    calls: HashMap<Token, oneshot::Sender<Reply>>,
    /// A command that found no room (pending table or transmit buffer full), retried after
    /// progress; while it waits, no further commands are taken (backpressure on clients).
    stalled: Option<Command>,
    queue: VecDeque<Job>,
    queued_bytes: usize,
    /// Handlers running plus answers waiting for transmit room (bounded by `concurrency`).
    running: usize,
    tasks: JoinSet<Done>,
    /// Answers that found no transmit room yet.
    unwritten: VecDeque<(RequestHandle, Result<String, RpcError>)>,
    input: InputState,
    /// What is left to do once everything buffered is decoded after input ended.
    ending: Ending,
    /// Bytes written since the last flush.
    dirty: bool,
}

async fn write_or_flush<W: AsyncWrite + Unpin>(w: &mut W, buf: &[u8]) -> io::Result<usize> {
    if buf.is_empty() {
        w.flush().await?;
        return Ok(0);
    }
    match w.write(buf).await? {
        0 => Err(io::ErrorKind::WriteZero.into()),
        n => Ok(n),
    }
}

async fn drive<const RX: usize, const TX: usize, const BATCH: usize, R, W>(
    settings: Settings,
    mut reader: R,
    mut writer: W,
    channels: Channels,
) -> Result<(), DriverError>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let bufs = allocate::<RX, TX, BATCH>(settings.config, settings.max_frame).await?;
    let Channels {
        cmd: mut cmd_rx,
        ctl: mut ctl_rx,
        peer,
    } = channels;
    let mut d = Driver {
        bufs,
        origin: StdInstant::now(),
        settings,
        peer,
        calls: HashMap::new(),
        stalled: None,
        queue: VecDeque::new(),
        queued_bytes: 0,
        running: 0,
        tasks: JoinSet::new(),
        unwritten: VecDeque::new(),
        input: InputState::Open,
        ending: Ending::No,
        dirty: false,
    };
    let mut cmd_open = true;
    let mut ctl_open = true;
    loop {
        d.step();
        if d.finished() {
            break;
        }
        let has_tx = !d.bufs.conn.poll_transmit().is_empty();
        let want_write = has_tx || d.dirty;
        let can_read =
            d.input == InputState::Open && !d.bufs.conn.is_input_blocked() && !d.bufs.rx.is_full();
        let deadline = d
            .bufs
            .conn
            .poll_timeout()
            .map(|at| tokio::time::Instant::from_std(at.to_std(d.origin)));
        let take_cmds = cmd_open && d.stalled.is_none();
        let has_tasks = !d.tasks.is_empty();

        tokio::select! {
            ctl = ctl_rx.recv(), if ctl_open => match ctl {
                Some(ctl) => d.on_control(ctl),
                None => ctl_open = false,
            },
            done = d.tasks.join_next(), if has_tasks => {
                if let Some(done) = done {
                    d.on_done(done);
                }
                while let Some(done) = d.tasks.try_join_next() {
                    d.on_done(done);
                }
            },
            res = write_or_flush(&mut writer, d.bufs.conn.poll_transmit()), if want_write => {
                match res {
                    Ok(0) => d.dirty = false,
                    Ok(n) => {
                        d.bufs.conn.advance_transmit(n);
                        d.dirty = true;
                    }
                    Err(e) => return d.fail(e),
                }
            },
            res = reader.read(d.bufs.rx.spare()), if can_read => match res {
                Ok(0) => d.end_of_input("end of stream"),
                Ok(n) => d.bufs.rx.commit(n),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    tracing::debug!(error = %e, "read failed");
                    d.end_of_input("read error");
                }
            },
            cmd = cmd_rx.recv(), if take_cmds => match cmd {
                Some(cmd) => {
                    d.on_command(cmd);
                    // Take what else is queued, up to a bound, before writing.
                    for _ in 0..64 {
                        if d.stalled.is_some() {
                            break;
                        }
                        match cmd_rx.try_recv() {
                            Ok(cmd) => d.on_command(cmd),
                            Err(_) => break,
                        }
                    }
                }
                None => {
                    cmd_open = false;
                    // Every client is gone and nobody can call us: finish.
                    if d.peer.is_none() {
                        d.end_of_input("all clients dropped");
                    }
                }
            },
            () = sleep_until(deadline), if deadline.is_some() => {
                let now = d.now();
                d.bufs.conn.handle_timeout(now);
            },
            else => {
                // Unreachable by construction (finished() ends the loop first); never spin.
                tracing::warn!("connection has nothing left to wait for");
                break;
            }
        }
    }
    d.bufs.conn.close();
    d.deliver_events();
    if let Err(e) = writer.shutdown().await {
        tracing::debug!(error = %e, "shutdown of the write side failed");
    }
    Ok(())
}

/// Writes a whole batch into the core, or nothing (an unfinished batch sends nothing).
fn encode_batch<const TX: usize, const BATCH: usize>(
    conn: &mut Connection<TX, BATCH, PENDING, INFLIGHT>,
    now: Instant,
    items: &[BatchItem],
) -> Result<(), SendError> {
    let mut batch = conn.start_batch(now)?;
    for item in items {
        match item {
            BatchItem::Call(c) => {
                let params = c.params.as_deref().map(Raw);
                batch.request(c.token, &c.method, params.as_ref(), c.timeout)?;
            }
            BatchItem::Notify { method, params } => {
                let params = params.as_deref().map(Raw);
                batch.notification(method, params.as_ref())?;
            }
        }
    }
    batch.finish();
    Ok(())
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

impl<const RX: usize, const TX: usize, const BATCH: usize> Driver<RX, TX, BATCH> {
    fn now(&self) -> Instant {
        Instant::from_std(self.origin, StdInstant::now())
    }

    /// Everything that needs no waiting, until nothing moves.
    fn step(&mut self) {
        self.deliver_events();
        self.write_answers();
        self.retry_stalled();
        self.process_input();
        self.start_jobs();
        self.write_answers();
        self.deliver_events();
        // Responses and events just freed pending slots: a command that waited for one must
        // be retried now, as nothing else may wake the driver (no answer is due any more).
        self.retry_stalled();
    }

    /// Input has ended and everything received is answered and flushed.
    fn finished(&mut self) -> bool {
        self.input == InputState::Draining
            && self.ending == Ending::No
            && self.queue.is_empty()
            && self.running == 0
            && !self.dirty
            && self.bufs.conn.poll_transmit().is_empty()
    }

    /// Feeds buffered input to the core and dispatches every inbound item.
    fn process_input(&mut self) {
        let now = self.now();
        let Driver {
            bufs,
            settings,
            calls,
            queue,
            queued_bytes,
            ending,
            ..
        } = self;
        let Buffers { conn, rx } = &mut **bufs;
        loop {
            // Everything buffered is decoded (or input waits for transmit room).
            let Some(item) = conn.handle_input(now, rx, &mut &[][..]) else {
                if conn.is_input_blocked() {
                    return;
                }
                match *ending {
                    Ending::No => return,
                    Ending::Finish => {
                        // A last line without its newline is still a line: decode it too.
                        rx.finish();
                        *ending = Ending::FailPending;
                        continue;
                    }
                    Ending::FailPending => {
                        // Nothing can answer our calls any more. Inbound requests stay open
                        // so that their answers are still written.
                        conn.fail_pending();
                        *ending = Ending::No;
                        return;
                    }
                }
            };
            match item {
                Inbound::Request(req) => {
                    let method = req.method.to_string_lossy();
                    let known = settings
                        .router
                        .as_ref()
                        .is_some_and(|r| r.get_method(&method).is_some());
                    if !known {
                        tracing::debug!(method, id = %req.id, "method not found");
                        let _ = conn.reject(req.handle, ErrorCode::METHOD_NOT_FOUND);
                        continue;
                    }
                    let params = req.params.map(|p| p.as_str().to_owned());
                    let id = req.id.raw().to_owned();
                    let cost =
                        64 + method.len() + id.len() + params.as_ref().map_or(0, String::len);
                    if !queue.is_empty() && *queued_bytes + cost > settings.queue_bytes {
                        tracing::warn!(method, id, "request queue full: answering Server busy");
                        let _ = conn.reject(req.handle, ErrorCode::SERVER_BUSY);
                        continue;
                    }
                    *queued_bytes += cost;
                    queue.push_back(Job {
                        handle: Some(req.handle),
                        id: Some(id),
                        method,
                        params,
                        cost,
                    });
                }
                Inbound::Notification(n) => {
                    let method = n.method.to_string_lossy();
                    let known = settings
                        .router
                        .as_ref()
                        .is_some_and(|r| r.get_notification(&method).is_some());
                    if !known {
                        tracing::debug!(method, "notification ignored: no handler");
                        continue;
                    }
                    let params = n.params.map(|p| p.as_str().to_owned());
                    let cost = 64 + method.len() + params.as_ref().map_or(0, String::len);
                    if !queue.is_empty() && *queued_bytes + cost > settings.queue_bytes {
                        tracing::warn!(method, "request queue full: notification dropped");
                        continue;
                    }
                    *queued_bytes += cost;
                    queue.push_back(Job {
                        handle: None,
                        id: None,
                        method,
                        params,
                        cost,
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
                Inbound::Problem(p) => {
                    tracing::debug!(problem = ?p, replied = p.replied(), "peer problem");
                }
            }
        }
    }

    /// Starts queued handlers while slots are free.
    fn start_jobs(&mut self) {
        let (Some(router), Some(peer)) = (self.settings.router.clone(), self.peer.clone()) else {
            return;
        };
        while self.running < self.settings.concurrency {
            let Some(job) = self.queue.pop_front() else {
                return;
            };
            self.queued_bytes -= job.cost;
            let ctx = Context {
                peer: peer.clone(),
                id: job.id.clone(),
                method: job.method.clone(),
            };
            let handle = job.handle;
            let id = job.id.as_deref().unwrap_or("");
            let span = tracing::info_span!(
                "rpc.request",
                method = %job.method,
                id,
                latency_us = tracing::field::Empty
            );
            let fut = match handle {
                Some(h) => match router.get_method(&job.method) {
                    Some(f) => f(ctx, job.params),
                    None => {
                        let _ = self.bufs.conn.reject(h, ErrorCode::METHOD_NOT_FOUND);
                        continue;
                    }
                },
                None => match router.get_notification(&job.method) {
                    Some(f) => {
                        let fut = f(ctx, job.params);
                        Box::pin(async move {
                            fut.await;
                            Ok(String::new())
                        })
                    }
                    None => continue,
                },
            };
            self.running += 1;
            self.tasks.spawn(
                async move {
                    let started = StdInstant::now();
                    let reply = CatchUnwind(fut).await.unwrap_or_else(|()| {
                        tracing::error!("handler panicked");
                        Err(RpcError::internal("handler panicked"))
                    });
                    let latency_us =
                        u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX);
                    tracing::Span::current().record("latency_us", latency_us);
                    tracing::debug!(
                        latency_us,
                        error = reply.as_ref().err().map(|e| e.code),
                        "handled"
                    );
                    Done { handle, reply }
                }
                .instrument(span),
            );
        }
    }

    fn on_done(&mut self, done: Result<Done, tokio::task::JoinError>) {
        match done {
            Ok(Done {
                handle: Some(handle),
                reply,
            }) => self.unwritten.push_back((handle, reply)),
            Ok(Done { handle: None, .. }) => self.running = self.running.saturating_sub(1),
            // Handler tasks catch their panics; a join error means the task was aborted.
            Err(e) => {
                tracing::warn!(error = %e, "handler task lost");
                self.running = self.running.saturating_sub(1);
            }
        }
    }

    /// Writes handler answers into the core while it has room.
    fn write_answers(&mut self) {
        let conn = &mut self.bufs.conn;
        while let Some((handle, reply)) = self.unwritten.front() {
            let res = match reply {
                Ok(json) => conn.respond(*handle, &Raw(json)),
                Err(e) => conn.respond_error(
                    *handle,
                    e.error_code(),
                    Some(&e.message),
                    e.data.as_ref().map(|d| Raw(d.get())).as_ref(),
                ),
            };
            match res {
                Ok(()) => {}
                Err(RespondError::WouldBlock { .. }) => return,
                Err(RespondError::TooLarge { required }) => {
                    tracing::warn!(required, "answer too large: sent Internal error instead");
                }
                Err(RespondError::Serialize(e)) => {
                    tracing::warn!(error = %e, "answer not serializable: sending Internal error");
                    let _ = conn.reject(*handle, ErrorCode::INTERNAL_ERROR);
                }
                Err(RespondError::UnknownHandle) => {
                    tracing::debug!("answer for a request no longer open");
                }
            }
            self.unwritten.pop_front();
            self.running = self.running.saturating_sub(1);
        }
    }

    /// Resolves calls that ended without a response.
    fn deliver_events(&mut self) {
        while let Some(event) = self.bufs.conn.poll_event() {
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

    fn on_control(&mut self, ctl: Control) {
        match ctl {
            Control::Cancel(token) => {
                if self.calls.remove(&token).is_some() {
                    let _ = self.bufs.conn.cancel(token);
                }
                if matches!(&self.stalled, Some(Command::Call(c)) if c.token == token) {
                    self.stalled = None;
                }
            }
            Control::Shutdown => self.end_of_input("shutdown"),
        }
    }

    fn on_command(&mut self, cmd: Command) {
        if let Command::Stats(reply) = cmd {
            let _ = reply.send(self.stats());
            return;
        }
        if self.input == InputState::Draining {
            cmd.fail(|| CallError::Closed);
            return;
        }
        if let Err(cmd) = self.try_command(cmd) {
            self.stalled = Some(cmd);
        }
    }

    fn retry_stalled(&mut self) {
        if let Some(cmd) = self.stalled.take() {
            self.on_command(cmd);
        }
    }

    /// Gives a command to the core; `Err` hands it back when there is no room yet.
    fn try_command(&mut self, cmd: Command) -> Result<(), Command> {
        let now = self.now();
        let conn = &mut self.bufs.conn;
        match cmd {
            Command::Call(c) => {
                if c.reply.is_closed() {
                    return Ok(());
                }
                let params = c.params.as_deref().map(Raw);
                match conn.send_request(now, c.token, &c.method, params.as_ref(), c.timeout) {
                    Ok(()) => {
                        self.calls.insert(c.token, c.reply);
                        Ok(())
                    }
                    Err(SendError::PendingFull | SendError::WouldBlock { .. }) => {
                        Err(Command::Call(c))
                    }
                    Err(e) => {
                        let _ = c.reply.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Notify {
                method,
                params,
                done,
            } => {
                let raw = params.as_deref().map(Raw);
                match conn.send_notification(&method, raw.as_ref()) {
                    Ok(()) => {
                        let _ = done.send(Ok(()));
                        Ok(())
                    }
                    Err(SendError::WouldBlock { .. }) => Err(Command::Notify {
                        method,
                        params,
                        done,
                    }),
                    Err(e) => {
                        let _ = done.send(Err(CallError::from_send(e)));
                        Ok(())
                    }
                }
            }
            Command::Batch { items, done } => self.try_batch(now, items, done),
            Command::Stats(reply) => {
                let _ = reply.send(self.stats());
                Ok(())
            }
        }
    }

    fn try_batch(
        &mut self,
        now: Instant,
        items: Vec<BatchItem>,
        done: oneshot::Sender<Result<(), CallError>>,
    ) -> Result<(), Command> {
        let calls = items
            .iter()
            .filter(|i| matches!(i, BatchItem::Call(_)))
            .count();
        if calls > PENDING {
            let err = || CallError::BatchTooLarge {
                calls,
                capacity: PENDING,
            };
            Command::Batch { items, done }.fail(err);
            return Ok(());
        }
        let outcome = encode_batch(&mut self.bufs.conn, now, &items);
        match outcome {
            Ok(()) => {
                for item in items {
                    if let BatchItem::Call(c) = item {
                        self.calls.insert(c.token, c.reply);
                    }
                }
                let _ = done.send(Ok(()));
                Ok(())
            }
            Err(e) => self.batch_error(e, items, done),
        }
    }

    fn batch_error(
        &mut self,
        e: SendError,
        items: Vec<BatchItem>,
        done: oneshot::Sender<Result<(), CallError>>,
    ) -> Result<(), Command> {
        match e {
            SendError::PendingFull | SendError::WouldBlock { .. } => {
                Err(Command::Batch { items, done })
            }
            e => {
                Command::Batch { items, done }.fail(|| CallError::from_send(e));
                Ok(())
            }
        }
    }

    /// Stops reading: our pending calls can no longer be answered and fail now; the requests
    /// already received are still answered before the connection closes.
    fn end_of_input(&mut self, why: &'static str) {
        if self.input == InputState::Draining {
            return;
        }
        tracing::debug!(why, "input ended");
        self.input = InputState::Draining;
        // The next `process_input` decodes what is buffered (and a last line without its
        // newline), then fails the calls still pending: their `RequestFailed` events resolve
        // them as `CallError::Closed`.
        self.ending = Ending::Finish;
        if let Some(cmd) = self.stalled.take() {
            cmd.fail(|| CallError::Closed);
        }
    }

    /// The byte stream failed: everything ends now.
    fn fail(mut self, e: io::Error) -> Result<(), DriverError> {
        tracing::debug!(error = %e, "connection failed");
        self.bufs.conn.close();
        for (_, reply) in self.calls.drain() {
            let _ = reply.send(Err(CallError::Closed));
        }
        self.deliver_events();
        if let Some(cmd) = self.stalled.take() {
            cmd.fail(|| CallError::Closed);
        }
        self.tasks.abort_all();
        Err(DriverError::Io(e))
    }

    fn stats(&self) -> SessionStats {
        SessionStats {
            core: self.bufs.conn.stats(),
            pending_calls: self.calls.len(),
            inflight: self.bufs.conn.inflight_len(),
            queued: self.queue.len(),
            queued_bytes: self.queued_bytes,
            running: self.running,
            buffer_bytes: size_of::<Buffers<RX, TX, BATCH>>(),
        }
    }
}
