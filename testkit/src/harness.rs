//! The deterministic harness for a tokio service: one connection in memory, on a paused
//! clock, fed a [`Case`] and checked against the reference model.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use rpcwire_tokio::{Builder, Client, Router, SessionStats};
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{timeout, timeout_at, Instant};

use crate::case::Frame;
use crate::check::{exchange, Seen};
use crate::model::{owed, split_frames, Limits, Owed};
use crate::oracle::Oracle;
use crate::report::Reproduce;
use crate::{panics, Case, Model, Violation};

/// A server task, as a [`Target`] starts it.
pub type ServerTask = JoinHandle<Result<(), String>>;

/// Something the harness can serve one connection with.
pub trait Target {
    /// Starts serving one connection over `io` (inside the harness's runtime): the task that
    /// ends when the connection does, and, for an rpcwire driver, its [`Client`], whose
    /// [`stats`](Client::stats) the harness reads to check that memory goes back to idle.
    fn start(&self, io: DuplexStream) -> (ServerTask, Option<Client>);
}

/// An rpcwire-tokio connection: the builder's settings and router.
impl Target for Builder {
    fn start(&self, io: DuplexStream) -> (ServerTask, Option<Client>) {
        let (client, task) = self.clone().run_io(io).into_parts();
        let task = tokio::spawn(async move {
            match task.await {
                Ok(Ok(())) => Ok(()),
                Ok(Err(e)) => Err(e.to_string()),
                Err(e) => Err(e.to_string()),
            }
        });
        (task, Some(client))
    }
}

/// A router built anew for every case ([`Harness::per_case`]): a stateful service starts each
/// case empty, as its [`Model`] does.
pub struct PerCase<F>(F);

impl<F: Fn() -> Router> Target for PerCase<F> {
    fn start(&self, io: DuplexStream) -> (ServerTask, Option<Client>) {
        Builder::new().router((self.0)()).start(io)
    }
}

impl<F> std::fmt::Debug for PerCase<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PerCase")
    }
}

/// A server written directly over the byte stream (no rpcwire driver): the harness checks
/// its answers the same way, without the memory check. This is where defects the `Router`
/// API rules out (two answers to one request, an answer with a wrong id) can be planted.
///
/// ```
/// use rpcwire_testkit::RawServer;
/// use tokio::io::AsyncReadExt;
/// let server = RawServer::new(|mut io| async move {
///     let mut sink = Vec::new();
///     io.read_to_end(&mut sink).await.map_err(|e| e.to_string())?;
///     Ok(()) // reads everything, answers nothing
/// });
/// # let _ = server;
/// ```
pub struct RawServer<F>(F);

impl<F, Fut> RawServer<F>
where
    F: Fn(DuplexStream) -> Fut,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    /// A server that runs `serve` for each connection.
    pub fn new(serve: F) -> Self {
        RawServer(serve)
    }
}

impl<F, Fut> Target for RawServer<F>
where
    F: Fn(DuplexStream) -> Fut,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    fn start(&self, io: DuplexStream) -> (ServerTask, Option<Client>) {
        (tokio::spawn((self.0)(io)), None)
    }
}

impl<F> std::fmt::Debug for RawServer<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RawServer")
    }
}

/// Runs [`Case`]s against a [`Target`] and checks the protocol's invariants:
///
/// - every frame the server writes is valid JSON-RPC 2.0 (requests and notifications the
///   server sends on its own are allowed);
/// - every request is answered exactly once, with its id byte-exact, and no notification is;
/// - a batch gets one array holding exactly its answers, nothing when it holds only
///   notifications, and the errors the specification fixes (parse error, Invalid Request,
///   an empty or refused batch) are the ones sent;
/// - no answer is missing after the stall timeout (virtual time), no handler panics, the
///   server ends once its input is closed, and for an rpcwire driver its tables and queues
///   are empty and its buffers back to their idle size afterwards.
///
/// Each case runs on a fresh current-thread tokio runtime with a paused clock: timers fire
/// as soon as nothing else can run, so a handler that sleeps a minute costs nothing and a run
/// is the same every time.
///
/// With a [`Model`] ([`Harness::model`]) it also checks that every answer to a modelled
/// method is the one the model gives.
#[derive(Debug, Clone)]
pub struct Harness<T = Builder> {
    target: T,
    limits: Limits,
    prelude: Vec<Frame>,
    stall: Duration,
    settle: Duration,
    idle_after: Duration,
    pipe: usize,
    model: Option<Arc<dyn Oracle>>,
    sequential: bool,
    pub(crate) reproduce: Reproduce,
}

impl Harness<Builder> {
    /// A harness for a router served with rpcwire-tokio's default settings. The router's
    /// method names are kept for the [`Coverage`](crate::Coverage) summary (which of them
    /// the traffic never called).
    pub fn new(router: Router) -> Self {
        let methods = names(&router);
        let mut harness = Harness::for_target(Builder::new().router(router));
        harness.reproduce.methods = methods;
        harness
    }
}

impl<F: Fn() -> Router> Harness<PerCase<F>> {
    /// A harness that serves every case with a new router from `make` (with rpcwire-tokio's
    /// default settings): for a service with state, which must start each case as its
    /// [`Model`] does.
    pub fn per_case(make: F) -> Self {
        let methods = names(&make());
        let mut harness = Harness::for_target(PerCase(make));
        harness.reproduce.methods = methods;
        harness
    }
}

impl<T: Target> Harness<T> {
    /// A harness for any target: a [`Builder`] with its router (give its limits with
    /// [`limits`](Harness::limits) when they are not the defaults), a [`RawServer`], or
    /// your own.
    pub fn for_target(target: T) -> Self {
        Harness {
            target,
            limits: Limits::default(),
            prelude: Vec::new(),
            stall: Duration::from_secs(60),
            settle: Duration::from_millis(100),
            // Longer than the builder's `idle_release` (2 s): at the same virtual instant the
            // driver's release and this check could come in either order.
            idle_after: Duration::from_secs(3),
            pipe: 64 << 10,
            model: None,
            sequential: false,
            reproduce: Reproduce::new("harness()"),
        }
    }

    /// Checks every answer to the methods `model` names against it (see [`Model`]).
    pub fn model<S: Clone + Send + Sync + 'static>(mut self, model: Model<S>) -> Self {
        self.model = Some(Arc::new(model));
        self
    }

    /// Sends a case one frame at a time, each once the one before is done (its answers in and,
    /// for an rpcwire target, no handler running), instead of all at once (the case's
    /// chunking is then not used). For a stateful service whose handlers may run in another
    /// order than sent when pipelined and still be right: its [`Model`] then sees the calls in
    /// the order they ran. The members of one batch still run as the server runs them
    /// (concurrently, for a router): send single messages to check them one by one.
    pub fn sequential(mut self) -> Self {
        self.sequential = true;
        self
    }

    /// The expression a printed regression test gets its harness from (default
    /// `harness()`: a function of your test file returning this harness, model included).
    pub fn reproduce_with(mut self, expression: &str) -> Self {
        self.reproduce.expression = expression.to_owned();
        self
    }

    /// The seed of `run_proptest` (feature `proptest`) when the environment variable
    /// `RPCWIRE_TESTKIT_SEED` does not give one (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.reproduce.seed = Some(seed);
        self
    }

    /// The limits the server applies (framing, frame, depth, batch), which decide some of
    /// the answers.
    pub fn limits(mut self, limits: Limits) -> Self {
        self.limits = limits;
        self
    }

    /// Frames sent before every case (a handshake, say); their answers are checked too.
    pub fn prelude(mut self, frames: Vec<Frame>) -> Self {
        self.prelude = frames;
        self
    }

    /// How long (virtual time) the harness waits for answers, and for the server to end,
    /// before it reports a stall (default 60 s).
    pub fn stall_timeout(mut self, timeout: Duration) -> Self {
        self.stall = timeout;
        self
    }

    /// How long (virtual time) the connection is left quiet before its memory is checked
    /// (default 3 s): longer than the builder's [`idle_release`](Builder::idle_release)
    /// (default 2 s).
    pub fn idle_after(mut self, after: Duration) -> Self {
        self.idle_after = after;
        self
    }

    /// Runs one case; the first broken invariant, if any.
    pub fn check(&self, case: &Case) -> Result<(), Violation> {
        self.check_seen(case).map(drop)
    }

    /// Runs one case; what it showed, or the first broken invariant.
    pub(crate) fn check_seen(&self, case: &Case) -> Result<Seen, Violation> {
        case.vacuous()?;
        let runtime = match tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
        {
            Ok(rt) => rt,
            Err(e) => {
                return Err(Violation::ServerFailed {
                    error: format!("cannot start a runtime: {e}"),
                })
            }
        };
        let (result, panic) = panics::watch(|| runtime.block_on(self.run(case)));
        drop(runtime);
        let (exchange, after) = result;
        let seen = exchange?;
        if let Some(message) = panic {
            return Err(Violation::Panic { message });
        }
        after.map(|()| seen)
    }

    /// What `input` is owed, with the model's expectations.
    fn owed(&self, input: &[u8]) -> Owed {
        let mut owed = owed(input, &self.limits);
        if let Some(model) = &self.model {
            owed.expect(&mut *model.start());
        }
        owed
    }

    /// The writes of a case, each with the number of frames owed once it is written (all at
    /// once: the case's chunks and everything owed; sequential: frame by frame).
    fn writes(&self, whole: &Case) -> Vec<(Vec<u8>, usize)> {
        let framing = self.limits.framing;
        if !self.sequential {
            let owed = owed(&whole.bytes(framing), &self.limits).frames();
            let mut writes: Vec<(Vec<u8>, usize)> =
                whole.writes(framing).into_iter().map(|w| (w, 0)).collect();
            if let Some(last) = writes.last_mut() {
                last.1 = owed;
            }
            return writes;
        }
        let mut total = 0;
        whole
            .frames
            .iter()
            .map(|frame| {
                let bytes = Case::new(vec![frame.clone()]).bytes(framing);
                total += owed(&bytes, &self.limits).frames();
                (bytes, total)
            })
            .collect()
    }

    /// One case: the exchange's verdict, and what came after it (idle memory, the end).
    async fn run(&self, case: &Case) -> (Result<Seen, Violation>, Result<(), Violation>) {
        let framing = self.limits.framing;
        let mut whole = Case::new(self.prelude.clone());
        whole.frames.extend(case.frames.iter().cloned());
        whole.chunks = case.chunks.clone();
        let input = whole.bytes(framing);

        let (near, far) = tokio::io::duplex(self.pipe);
        let (task, client) = self.target.start(far);
        let idle = match &client {
            Some(c) => c.stats().await.ok(),
            None => None,
        };
        let (mut reader, mut writer) = tokio::io::split(near);
        let (tx, mut rx) = mpsc::unbounded_channel::<Vec<u8>>();
        let read_task = tokio::spawn(async move {
            let mut buf = vec![0u8; 8192];
            while let Ok(n @ 1..) = reader.read(&mut buf).await {
                if tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });

        let deadline = Instant::now() + self.stall;
        let mut output = Vec::new();
        'writes: for (write, owed_frames) in self.writes(&whole) {
            // A server that stops reading must not hang the harness.
            match timeout_at(deadline, writer.write_all(&write)).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => break,
            }
            while split_frames(&output, framing).len() < owed_frames {
                match timeout_at(deadline, rx.recv()).await {
                    Ok(Some(bytes)) => output.extend_from_slice(&bytes),
                    Ok(None) | Err(_) => break 'writes,
                }
            }
            if self.sequential {
                // Notifications owe no answer: the frame is done once no handler runs.
                // The paused clock moves on only once every task waits: the server has read
                // the frame and run its handlers as far as they go without a timer.
                tokio::time::sleep(self.settle).await;
                if let Some(client) = &client {
                    let _ = timeout_at(deadline, settled(client)).await;
                }
            }
        }
        // Late extra answers (a second answer to one request) arrive meanwhile.
        while let Ok(Some(bytes)) = timeout(self.settle, rx.recv()).await {
            output.extend_from_slice(&bytes);
        }
        let exchange = exchange(self.owed(&input), &output, framing);

        let mut after = Ok(());
        if let (Some(client), Some(idle)) = (&client, idle) {
            tokio::time::sleep(self.idle_after).await;
            if let Ok(now) = client.stats().await {
                after = idle_check(&idle, &now);
            }
        }
        drop(client);
        let _ = timeout(self.stall, writer.shutdown()).await;
        let ended = match timeout(self.stall, task).await {
            Err(_) => Err(Violation::NoEnd),
            Ok(Err(join)) => Err(Violation::ServerFailed {
                error: join.to_string(),
            }),
            Ok(Ok(Err(error))) => Err(Violation::ServerFailed { error }),
            Ok(Ok(Ok(()))) => Ok(()),
        };
        read_task.abort();
        (exchange, after.and(ended))
    }
}

/// Returns once the connection runs, queues and holds no request or notification.
async fn settled(client: &Client) {
    while let Ok(stats) = client.stats().await {
        if stats.running == 0 && stats.queued == 0 && stats.inflight == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A router's method and notification names, and `rpc.discover` (which every rpcwire-tokio
/// connection answers), sorted and each once.
fn names(router: &Router) -> Vec<String> {
    let mut names: Vec<String> = router
        .method_names()
        .into_iter()
        .chain(router.notification_names())
        .chain(["rpc.discover"])
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Compares a connection's stats after a case with those it had fresh.
fn idle_check(idle: &SessionStats, now: &SessionStats) -> Result<(), Violation> {
    let held = [
        ("pending calls", now.pending_calls),
        ("in-flight requests", now.inflight),
        ("queued requests", now.queued),
        ("queued bytes", now.queued_bytes),
        ("running handlers", now.running),
    ];
    if let Some((what, n)) = held.iter().find(|(_, n)| *n > 0) {
        return Err(Violation::NotIdle {
            detail: format!("{n} {what} left"),
        });
    }
    if now.buffer_bytes > idle.buffer_bytes {
        return Err(Violation::NotIdle {
            detail: format!(
                "{} bytes of buffers held, {} when fresh",
                now.buffer_bytes, idle.buffer_bytes
            ),
        });
    }
    Ok(())
}
