//! Request deadlines seen on the ticks of one clock per service, not with a timer per
//! request (each would cost a registration, often a wake-up): how long a request/response
//! transport (an HTTP POST, a broker message) lets one body's answer take.
//!
//! ```
//! use std::time::Duration;
//! use rpcwire_service::deadline::{before, clock};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let clock = clock(Duration::from_millis(80));
//! let deadline = tokio::time::Instant::now() + Duration::from_millis(40);
//! assert_eq!(before(&clock, deadline, async { 7 }).await, Ok(7));
//! assert_eq!(before(&clock, deadline, std::future::pending::<()>()).await, Err(()));
//! # }
//! ```

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::sync::watch;

/// `fut`'s output, or `Err` once `deadline` has passed (seen on a tick of `clock`).
pub fn before<F: Future>(
    clock: &watch::Receiver<()>,
    deadline: tokio::time::Instant,
    fut: F,
) -> Before<'_, F> {
    Before {
        fut,
        clock,
        deadline,
        expiry: None,
    }
}

pin_project_lite::pin_project! {
    /// [`before`]'s future. `fut` is polled first; the deadline's watch is set up only if it
    /// waits, boxed: a call answered at once (a handler that does not wait) clones no watch
    /// and allocates nothing, and an idle connection's task, which holds the
    /// room of its largest request future, keeps a pointer for it.
    pub struct Before<'a, F> {
        #[pin]
        fut: F,
        clock: &'a watch::Receiver<()>,
        deadline: tokio::time::Instant,
        expiry: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    }
}

impl<F: Future> Future for Before<'_, F> {
    type Output = Result<F::Output, ()>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        if let Poll::Ready(out) = this.fut.poll(cx) {
            return Poll::Ready(Ok(out));
        }
        let (clock, deadline) = (*this.clock, *this.deadline);
        this.expiry
            .get_or_insert_with(|| Box::pin(expires(clock.clone(), deadline)))
            .as_mut()
            .poll(cx)
            .map(Err)
    }
}

/// Ends on the first tick of `clock` at or past `deadline` (or when the clock is gone).
async fn expires(mut clock: watch::Receiver<()>, deadline: tokio::time::Instant) {
    while clock.changed().await.is_ok() {
        if tokio::time::Instant::now() >= deadline {
            return;
        }
    }
}

/// A clock that ticks a few times per `timeout` (every eighth of it, within 10 to 250 ms)
/// while its receivers live: the deadlines of one service's requests are seen on its ticks.
pub fn clock(timeout: std::time::Duration) -> watch::Receiver<()> {
    use std::time::Duration;
    let (tick_tx, clock) = watch::channel(());
    let granularity = (timeout / 8).clamp(Duration::from_millis(10), Duration::from_millis(250));
    tokio::spawn(async move {
        let mut every = tokio::time::interval(granularity);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            if tick_tx.send(()).is_err() {
                return; // the service is gone
            }
        }
    });
    clock
}
