//! A POST answered as an event stream: the body runs through a core connection of its own
//! (the server's router), and what the connection writes comes out message by message, the
//! answer last, for the caller to send as Server-Sent Events (or as plain JSON).
//!
//! The connection's input stays open until the answer, so that more bodies can reach it on
//! the way: the client's answers to requests its handlers sent, a cancellation. The profile
//! decides what each message means (a request to rewrite, a log line to filter, a signal to
//! close the stream) and where the events go (the POST's own stream, a resumption buffer).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use rpcwire::wire::classify::is_response;
use rpcwire::wire::Framing;
use rpcwire_tokio::Builder;
use tokio::sync::{mpsc, Notify};

use crate::pipe::{send_body, ChannelReader, FrameWriter};

type Driver = Pin<Box<dyn Future<Output = Result<(), rpcwire_tokio::DriverError>> + Send>>;

/// One POST body's connection, driven by [`next`](PostExchange::next) in the caller's task.
pub struct PostExchange {
    driver: Option<Driver>,
    rx: mpsc::Receiver<Bytes>,
    input: Option<mpsc::Sender<Bytes>>,
    cancel: Option<Arc<Notify>>,
    deadline: tokio::time::Instant,
}

impl std::fmt::Debug for PostExchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostExchange")
            .field("driving", &self.driver.is_some())
            .field("input_open", &self.input.is_some())
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// What [`PostExchange::next`] gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExchangeEvent {
    /// A message for the client before the answer: a notification (progress, a log line) or
    /// a request of the server's.
    Message(Bytes),
    /// The answer (a response, or a batch's array of them): the last message. The input is
    /// closed; the exchange ends once the handlers are done.
    Answer(Bytes),
    /// The cancel signal ([`cancel_on`](PostExchange::cancel_on)) fired: the input is closed,
    /// and the exchange ends (with no answer, or an error answer, as the handlers decide)
    /// once they stop. Given once.
    Cancelled,
    /// The connection ended with no (more) answer: a body of notifications, or cancelled.
    End,
    /// The deadline passed: the caller drops the exchange (its handlers stop with it).
    TimedOut,
}

impl PostExchange {
    /// Starts `builder`'s connection on `body` (any JSON-RPC message or batch): its frames
    /// are at most `max_frame` bytes, and it has `timeout` to answer. The builder's framing
    /// is set to the pipes' own (`Content-Length`).
    pub async fn start(builder: Builder, body: Bytes, max_frame: usize, timeout: Duration) -> Self {
        let (in_tx, in_rx) = mpsc::channel(8);
        send_body(&in_tx, body).await;
        let (out_tx, out_rx) = mpsc::channel(8);
        let (_client, driver) = builder.framing(Framing::ContentLength).run_inline(
            ChannelReader::new(in_rx),
            FrameWriter::new(out_tx, max_frame),
        );
        PostExchange {
            driver: Some(Box::pin(driver)),
            rx: out_rx,
            input: Some(in_tx),
            cancel: None,
            deadline: tokio::time::Instant::now() + timeout,
        }
    }

    /// Ends the input when `signal` is notified (a client's cancellation, found by the
    /// request's id): [`ExchangeEvent::Cancelled`], then the end once the handlers stop.
    pub fn cancel_on(&mut self, signal: Arc<Notify>) {
        self.cancel = Some(signal);
    }

    /// The connection's input while it is open (until the answer or the cancellation): hand
    /// more bodies to it with [`send_body`]. Whoever keeps a clone keeps the connection
    /// open: drop clones when the exchange ends.
    pub fn input(&self) -> Option<&mpsc::Sender<Bytes>> {
        self.input.as_ref()
    }

    /// When the exchange times out.
    pub fn deadline(&self) -> tokio::time::Instant {
        self.deadline
    }

    /// The next thing the connection does. Cancel-safe: it may be raced against the client
    /// going away (`tokio::select!`) and called again.
    pub async fn next(&mut self) -> ExchangeEvent {
        loop {
            let driving = async {
                match &mut self.driver {
                    Some(d) => d.await,
                    None => std::future::pending().await,
                }
            };
            let cancelled = async {
                match &self.cancel {
                    Some(c) => c.notified().await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                biased;
                m = self.rx.recv() => return match m {
                    Some(m) if is_response(&m) => {
                        // Answered: the input ends, nothing waits for the client any more.
                        self.input = None;
                        ExchangeEvent::Answer(m)
                    }
                    Some(m) => ExchangeEvent::Message(m),
                    None => ExchangeEvent::End,
                },
                r = driving => {
                    if let Err(e) = r {
                        tracing::debug!(error = %e, "a POST's connection failed");
                    }
                    self.driver = None;
                }
                () = cancelled => {
                    // The input ends here: the connection, and with it this exchange, ends
                    // when the handler has stopped.
                    self.cancel = None;
                    self.input = None;
                    return ExchangeEvent::Cancelled;
                }
                () = tokio::time::sleep_until(self.deadline) => return ExchangeEvent::TimedOut,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rpcwire_tokio::{Router, RpcError};

    use super::*;

    #[tokio::test]
    async fn progress_comes_before_the_answer() {
        let router = Router::new().method_with_context(
            "slow",
            |ctx: rpcwire_tokio::Context, (): ()| async move {
                let _ = ctx.peer().notify("progress", [1]).await;
                Ok::<_, RpcError>(7)
            },
        );
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"slow"}"#);
        let mut x = PostExchange::start(
            Builder::new().router(router),
            body,
            1 << 16,
            Duration::from_secs(5),
        )
        .await;
        assert!(x.input().is_some());
        let ExchangeEvent::Message(m) = x.next().await else {
            panic!("progress first")
        };
        assert!(
            m.starts_with(br#"{"jsonrpc":"2.0","method":"progress""#),
            "{m:?}"
        );
        let ExchangeEvent::Answer(a) = x.next().await else {
            panic!("then the answer")
        };
        assert_eq!(&a[..], br#"{"jsonrpc":"2.0","result":7,"id":1}"#);
        assert!(x.input().is_none(), "the input ends with the answer");
        assert_eq!(x.next().await, ExchangeEvent::End);
    }

    #[tokio::test]
    async fn a_cancel_signal_ends_the_input_and_a_deadline_ends_the_wait() {
        let router = Router::new().method_with_context(
            "never",
            |_: rpcwire_tokio::Context, (): ()| async move {
                std::future::pending::<()>().await;
                Ok::<_, RpcError>(0)
            },
        );
        let body = Bytes::from_static(br#"{"jsonrpc":"2.0","id":1,"method":"never"}"#);
        let mut x = PostExchange::start(
            Builder::new().router(router),
            body,
            1 << 16,
            Duration::from_millis(50),
        )
        .await;
        let signal = Arc::new(Notify::new());
        x.cancel_on(Arc::clone(&signal));
        signal.notify_one();
        assert_eq!(x.next().await, ExchangeEvent::Cancelled);
        assert!(x.input().is_none());
        assert_eq!(x.next().await, ExchangeEvent::TimedOut);
    }
}
