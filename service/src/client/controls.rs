//! Out-of-band requests from a connection's handles to its driver: cancel a call, shut down,
//! accept or refuse batches.
//!
//! A queue behind a lock and a wake-up rather than a channel: a tokio channel allocates, for
//! every connection, cache-padded shared state and a first block of 32 slots (about 1 KiB),
//! and most connections never cancel a call. Unbounded as the channel was (each request is
//! tiny, at most one per dropped call, and the driver takes them before anything else); once
//! the driver has stopped, nothing more is kept.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Poll, Waker};

use rpcwire::Token;

/// One out-of-band request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Control {
    /// A call's future was dropped: forget its pending request.
    Cancel(Token),
    /// Stop reading, answer what was received, flush, close.
    Shutdown,
    /// [`Shutdown`](Control::Shutdown) once no handler runs (reading goes on until then).
    ShutdownWhenIdle,
    /// Accept or refuse inbound batches from now on.
    SetBatches(bool),
}

#[derive(Debug, Default)]
struct Queue {
    waiting: VecDeque<Control>,
    /// The driver's task, while it waits.
    driver: Option<Waker>,
    /// The driver has stopped: requests are dropped.
    closed: bool,
}

/// The sending side, held by every [`Client`](crate::Client) of the connection.
#[derive(Debug, Default)]
pub(crate) struct Controls {
    queue: Mutex<Queue>,
}

impl Controls {
    /// A sending side and the driver's receiving side.
    pub(crate) fn pair() -> (Arc<Controls>, ControlInbox) {
        let shared = Arc::new(Controls::default());
        (Arc::clone(&shared), ControlInbox(shared))
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves the queue whole: each step is one push or pop.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `control` for the driver and wakes it; dropped if the driver has stopped.
    pub(crate) fn send(&self, control: Control) {
        let driver = {
            let mut queue = self.lock();
            if queue.closed {
                return;
            }
            queue.waiting.push_back(control);
            queue.driver.take()
        };
        // Woken outside the lock: the driver takes it at once.
        if let Some(driver) = driver {
            driver.wake();
        }
    }
}

/// The driver's receiving side; dropping it (the driver stopping) makes later requests no-ops
/// and frees what was queued.
#[derive(Debug)]
pub(crate) struct ControlInbox(Arc<Controls>);

impl ControlInbox {
    /// The oldest queued request, if any.
    pub(crate) fn try_recv(&self) -> Option<Control> {
        self.0.lock().waiting.pop_front()
    }

    /// Resolves once a request is queued (at once if one is); take it with
    /// [`try_recv`](Self::try_recv).
    pub(crate) async fn queued(&self) {
        poll_fn(|cx| {
            let mut queue = self.0.lock();
            if !queue.waiting.is_empty() {
                return Poll::Ready(());
            }
            match &queue.driver {
                Some(w) if w.will_wake(cx.waker()) => {}
                _ => queue.driver = Some(cx.waker().clone()),
            }
            Poll::Pending
        })
        .await;
    }
}

impl Drop for ControlInbox {
    fn drop(&mut self) {
        let mut queue = self.0.lock();
        queue.closed = true;
        queue.waiting = VecDeque::new();
        queue.driver = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn requests_arrive_in_order_and_wake_the_driver() {
        let (controls, inbox) = Controls::pair();
        assert_eq!(inbox.try_recv(), None);
        let waiting = tokio::spawn(async move {
            inbox.queued().await;
            let mut got = Vec::new();
            while let Some(c) = inbox.try_recv() {
                got.push(c);
            }
            got
        });
        tokio::task::yield_now().await;
        controls.send(Control::SetBatches(false));
        controls.send(Control::Shutdown);
        let got = tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .expect("no panic");
        // Woken by the first; the second is queued by the time the queue is emptied, or not.
        assert_eq!(got.first(), Some(&Control::SetBatches(false)));
        assert!(got.len() <= 2);
    }

    #[tokio::test]
    async fn a_request_queued_before_the_driver_waits_is_seen() {
        let (controls, inbox) = Controls::pair();
        controls.send(Control::Shutdown);
        tokio::time::timeout(std::time::Duration::from_secs(5), inbox.queued())
            .await
            .expect("seen at once");
        assert_eq!(inbox.try_recv(), Some(Control::Shutdown));
    }

    #[test]
    fn nothing_is_kept_once_the_driver_has_stopped() {
        let (controls, inbox) = Controls::pair();
        controls.send(Control::Shutdown);
        drop(inbox);
        for _ in 0..1000 {
            controls.send(Control::Shutdown);
        }
        let queue = controls.lock();
        assert!(queue.closed);
        assert!(queue.waiting.is_empty());
        assert_eq!(queue.waiting.capacity(), 0);
    }
}
