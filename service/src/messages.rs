//! Answering the messages of a subscription, for broker transports: [`MessageAnswers`].

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use rpcwire::{Config, ErrorCode};
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::caller::Caller;
use crate::deadline::{before, clock};
use crate::error::RpcError;
use crate::identity::Identity;
use crate::responder::{Exchange, Responder, Sent};
use crate::service::Service;
use crate::shutdown::Shutdown;
use crate::undelivered::undelivered;
use crate::Transport;

/// The code of the error each request of a message gets when its answer took longer than the
/// server's timeout ([`MessageAnswers::new`]): one of the specification's server errors.
pub const TIMED_OUT: i32 = -32096;

/// Answering the messages of a subscription, for broker transports (NATS, MQTT): each message
/// one body, answered by a [`Responder`] under two limits every such server needs, so that no
/// broker can grow a server's memory or hold its answers without bound: how many messages are
/// answered at once, and how long one answer may take.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use rpcwire_service::{Caller, MessageAnswers, Responder, Router, RpcError, Service};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let router = Router::new().sync_method("add", |(a, b): (i64, i64)| Ok::<_, RpcError>(a + b));
/// let responder = Responder::new(Service::new(router), rpcwire::Config::default());
/// let answers = MessageAnswers::new(responder, Arc::new(Caller::anonymous()), 16, Duration::from_secs(5));
/// let (tx, mut rx) = tokio::sync::mpsc::channel(1);
/// let slot = answers.slot().await; // at the limit, read no further message
/// let body = br#"{"jsonrpc":"2.0","method":"add","params":[1,2],"id":1}"#.to_vec();
/// answers
///     .answer(slot, body, move |answer| async move { let _ = tx.send(answer).await; })
///     .await;
/// assert_eq!(rx.recv().await.unwrap(), br#"{"jsonrpc":"2.0","result":3,"id":1}"#);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct MessageAnswers {
    responder: Responder,
    caller: Arc<Caller>,
    slots: Arc<Semaphore>,
    /// The number of places, all of which [`idle`](MessageAnswers::idle) waits for.
    places: u32,
    clock: watch::Receiver<()>,
    timeout: Duration,
}

/// A place among the messages answered at once ([`MessageAnswers::slot`]), held until the
/// message it is given to is answered.
#[derive(Debug)]
pub struct AnswerSlot {
    _permit: OwnedSemaphorePermit,
}

impl MessageAnswers {
    /// Answers with `responder` as `caller` (what the transport knows of the messages'
    /// sender), at most `concurrency` messages at once (at least 1), each within `timeout`.
    pub fn new(
        responder: Responder,
        caller: Arc<Caller>,
        concurrency: usize,
        timeout: Duration,
    ) -> Self {
        // At most `u32::MAX` places: what `idle` can wait for at once.
        let places = u32::try_from(concurrency.max(1)).unwrap_or(u32::MAX);
        MessageAnswers {
            responder,
            caller,
            slots: Arc::new(Semaphore::new(places as usize)),
            places,
            clock: clock(timeout),
            timeout,
        }
    }

    /// Answers as a broker server whose messages carry no credentials of their sender: every
    /// caller anonymous over `transport`, with `service` and `config` (a builder's), at most
    /// `concurrency` messages at once, each within `timeout`.
    pub fn anonymous(
        service: &Service,
        config: Config,
        transport: Transport,
        concurrency: usize,
        timeout: Duration,
    ) -> Self {
        let responder = Responder::new(service.clone(), config);
        let caller = Arc::new(Caller::new(Identity::anonymous(), transport));
        MessageAnswers::new(responder, caller, concurrency, timeout)
    }

    /// Runs `serve`, a server's loop over its messages, to its end, and beside it, once
    /// `shutdown`'s drain begins, the drain every broker server makes: `stop` (take no further
    /// message: unsubscribe), the answers under way awaited (at most the drain's deadline),
    /// then `leave` (say the server is gone and end the connection cleanly, which should end
    /// `serve`). A failed `stop` or `leave` is logged and ends the drain. `serve` is never
    /// cancelled: it is polled to its end in this future.
    pub async fn serve_draining<T, E: std::fmt::Display>(
        &self,
        shutdown: &Shutdown,
        serve: impl Future<Output = T>,
        stop: impl Future<Output = Result<(), E>>,
        leave: impl Future<Output = Result<(), E>>,
    ) -> T {
        let drain = async {
            shutdown.draining().await;
            stop.await?;
            let _ = tokio::time::timeout(shutdown.deadline(), self.idle()).await;
            leave.await
        };
        let (mut serve, mut drain) = (pin!(serve), pin!(drain));
        let mut draining = true;
        loop {
            tokio::select! {
                ended = &mut serve => return ended,
                drained = &mut drain, if draining => {
                    draining = false;
                    if let Err(error) = drained {
                        tracing::warn!(%error, "the drain could not end the connection cleanly");
                    }
                }
            }
        }
    }

    /// Waits for a free place: take one before reading the next message, so that at the limit
    /// the messages wait in the broker's hands, not in the server's memory.
    pub async fn slot(&self) -> AnswerSlot {
        // A free place, the common case, taken without a waiter's future (about 200
        // instructions a message less, callgrind).
        if let Ok(permit) = Arc::clone(&self.slots).try_acquire_owned() {
            return AnswerSlot { _permit: permit };
        }
        match Arc::clone(&self.slots).acquire_owned().await {
            Ok(permit) => AnswerSlot { _permit: permit },
            Err(_) => unreachable!("the semaphore is never closed"),
        }
    }

    /// Waits until no message is being answered (every place free), then frees them again:
    /// what a draining server waits for once it reads no further message.
    pub async fn idle(&self) {
        if let Ok(all) = self.slots.acquire_many(self.places).await {
            drop(all);
        }
    }

    /// Answers `body` (one message: a request, a notification or a batch) and hands its answer
    /// to `reply`: empty when none is due (notifications only, responses). A body whose
    /// handlers finish at once is answered before this returns, with no task; otherwise the
    /// answer is awaited in a task, and past the timeout its handlers are dropped and each of
    /// its requests is answered with [`TIMED_OUT`]. What handlers send their peer is dropped.
    pub async fn answer<B, R, F>(&self, slot: AnswerSlot, body: B, reply: R)
    where
        B: AsRef<[u8]> + Send + 'static,
        R: FnOnce(Vec<u8>) -> F + Send + 'static,
        F: Future<Output = ()> + Send,
    {
        let mut exchange = self.responder.exchange(&self.caller, body.as_ref());
        if let Some(answer) = answered_now(&mut exchange) {
            return reply(answer).await;
        }
        let (clock, deadline) = (
            self.clock.clone(),
            tokio::time::Instant::now() + self.timeout,
        );
        tokio::spawn(async move {
            let mut answer = Vec::new();
            let mut dropped = |_: &[u8]| {};
            let answered = exchange.run(&mut answer, &mut dropped);
            if before(&clock, deadline, answered).await.is_err() {
                let late = RpcError::new(ErrorCode(TIMED_OUT), "answer timed out");
                answer = undelivered(body.as_ref(), &late).unwrap_or_default();
            }
            drop(exchange);
            reply(answer).await;
            drop(slot);
        });
    }
}

/// The exchange's answer if it has one without waiting (empty: none is due), dropping what its
/// handlers send their peer, as `Responder::respond` does; `None` while a handler waits (the
/// exchange is cancel-safe: it goes on where this left it).
fn answered_now(exchange: &mut Exchange) -> Option<Vec<u8>> {
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        match pin!(exchange.next()).poll(&mut cx) {
            Poll::Pending => return None,
            Poll::Ready(Some(Sent::Message(_))) => {}
            Poll::Ready(Some(Sent::Answer(answer))) => return Some(answer),
            Poll::Ready(None) => return Some(Vec::new()),
        }
    }
}
