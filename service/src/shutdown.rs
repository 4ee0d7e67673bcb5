//! Graceful shutdown: one handle, shared by every server a [`Service`](crate::Service) runs
//! on, that starts a drain and says when it is over.
//!
//! Once [`trigger`](Shutdown::trigger)ed (by the application, or by SIGTERM/SIGINT through
//! [`on_signals`](Shutdown::on_signals)), the accept loops stop accepting, every call already
//! running goes on to its answer, and every call that arrives is refused before it runs: the
//! dispatcher answers it [`SHUTTING_DOWN`], an HTTP server 503 with `Connection: close`. Each
//! connection then ends the way its protocol ends cleanly (a WebSocket close frame 1001, the
//! end of an event stream, TLS `close_notify`). [`drained`](Shutdown::drained) resolves when
//! every connection the servers [`track`](Shutdown::track) has ended, or when the deadline
//! has passed.
//!
//! Built on tokio-util's `CancellationToken` (the trigger) and `TaskTracker` (what is still
//! open), as tower and axum servers are.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use rpcwire::ErrorCode;
use tokio_util::sync::CancellationToken;
use tokio_util::task::task_tracker::{TaskTracker, TaskTrackerToken};

/// The error code of a request refused because the server is shutting down (a server error
/// of the range JSON-RPC leaves to implementations).
pub const SHUTTING_DOWN: ErrorCode = ErrorCode(-32042);

/// The message of [`SHUTTING_DOWN`].
pub const SHUTTING_DOWN_MESSAGE: &str = "Server shutting down";

/// How long a drain may take by default before [`Shutdown::drained`] gives up waiting.
pub const DEFAULT_DRAIN_DEADLINE: Duration = Duration::from_secs(30);

/// The graceful-shutdown handle of a set of servers: cheap to clone, every clone the same
/// handle. Give it to the service ([`Service::shutdown`](crate::Service::shutdown)); the
/// transports' servers watch it.
///
/// ```
/// use std::time::Duration;
/// use rpcwire_service::{Drained, Shutdown};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let shutdown = Shutdown::new(Duration::from_secs(10));
/// let connection = shutdown.track(); // what a server holds while a connection is open
/// assert!(!shutdown.is_draining());
/// shutdown.trigger();
/// assert!(shutdown.is_draining());
/// drop(connection);
/// assert_eq!(shutdown.drained().await, Drained::Complete);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Shutdown(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    /// Set once the drain begins: what every request looks at (`CancellationToken`'s own
    /// state is behind a lock).
    draining: AtomicBool,
    trigger: CancellationToken,
    open: TaskTracker,
    deadline: Duration,
}

/// How a drain ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drained {
    /// Every tracked connection ended within the deadline.
    Complete,
    /// The deadline passed with `open` connections still open (they are left to the runtime:
    /// dropping it ends them).
    DeadlineReached {
        /// Connections still open.
        open: usize,
    },
}

impl Default for Shutdown {
    /// A handle with the [`DEFAULT_DRAIN_DEADLINE`].
    fn default() -> Self {
        Shutdown::new(DEFAULT_DRAIN_DEADLINE)
    }
}

impl Shutdown {
    /// A handle whose drain may last `deadline` after it is triggered.
    pub fn new(deadline: Duration) -> Self {
        Shutdown(Arc::new(Inner {
            draining: AtomicBool::new(false),
            trigger: CancellationToken::new(),
            open: TaskTracker::new(),
            deadline,
        }))
    }

    /// How long a drain may last.
    pub fn deadline(&self) -> Duration {
        self.0.deadline
    }

    /// Starts the drain (again: no effect).
    pub fn trigger(&self) {
        if !self.0.draining.swap(true, Ordering::AcqRel) {
            tracing::info!(deadline = ?self.0.deadline, "shutting down: draining connections");
        }
        self.0.open.close();
        self.0.trigger.cancel();
    }

    /// Whether the drain has begun (one atomic load: checked once per request).
    #[inline]
    pub fn is_draining(&self) -> bool {
        self.0.draining.load(Ordering::Acquire)
    }

    /// Resolves when the drain begins (at once if it has).
    pub fn draining(&self) -> impl Future<Output = ()> + Send + 'static {
        self.0.trigger.clone().cancelled_owned()
    }

    /// Counts an open connection (or stream) until the value is dropped: the drain waits for
    /// it.
    pub fn track(&self) -> Tracked {
        Tracked(self.0.open.token())
    }

    /// Connections tracked and still open.
    pub fn open(&self) -> usize {
        self.0.open.len()
    }

    /// Waits for the drain to begin, then for every tracked connection to end, at most the
    /// deadline.
    pub async fn drained(&self) -> Drained {
        self.draining().await;
        match tokio::time::timeout(self.0.deadline, self.0.open.wait()).await {
            Ok(()) => Drained::Complete,
            Err(_) => Drained::DeadlineReached { open: self.open() },
        }
    }

    /// Triggers the drain at the first SIGTERM or SIGINT (Ctrl-C; SIGINT alone off Unix),
    /// from a task on the current tokio runtime.
    pub fn on_signals(&self) -> tokio::task::JoinHandle<()> {
        let shutdown = self.clone();
        tokio::spawn(async move {
            let which = signal().await;
            // Triggered before anything is logged: a log line that cannot be written (a
            // subscriber that panics on a closed stderr) must not leave the server running.
            shutdown.trigger();
            tracing::info!(signal = which, "draining");
        })
    }
}

/// The first SIGTERM or SIGINT, named. A signal handler that cannot be installed waits for
/// ever (the process still ends on the signal's default action).
async fn signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            return std::future::pending().await;
        };
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    }
    #[cfg(not(unix))]
    {
        if tokio::signal::ctrl_c().await.is_err() {
            std::future::pending::<()>().await;
        }
        "ctrl-c"
    }
}

/// An open connection that a drain waits for ([`Shutdown::track`]).
#[derive(Debug)]
pub struct Tracked(#[allow(dead_code)] TaskTrackerToken);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_drain_waits_for_what_is_open_up_to_its_deadline() {
        let shutdown = Shutdown::new(Duration::from_secs(5));
        let (a, b) = (shutdown.track(), shutdown.track());
        assert_eq!(shutdown.open(), 2);
        let watcher = tokio::spawn({
            let s = shutdown.clone();
            async move { s.drained().await }
        });
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert!(!watcher.is_finished(), "nothing happens before the trigger");
        shutdown.clone().trigger();
        drop(a);
        let started = tokio::time::Instant::now();
        assert_eq!(watcher.await.unwrap(), Drained::DeadlineReached { open: 1 });
        assert_eq!(started.elapsed(), Duration::from_secs(5));
        drop(b);
        assert_eq!(shutdown.drained().await, Drained::Complete);
    }
}
