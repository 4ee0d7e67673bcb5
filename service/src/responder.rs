//! Answering one whole message body at a time, for request/response transports (an HTTP
//! POST, a broker message): the body runs through a core connection and a [`Dispatcher`]
//! taken from a small pool, in the caller's task, so that every protocol rule (the core's)
//! and every policy (the dispatcher's) holds exactly as on a stream connection, with no task
//! and no connection set up per body.
//!
//! Handlers that wait run in tasks under the concurrency limit, as on a stream. A handler
//! that reads its [`Context`](crate::Context) gets a peer: what it sends the peer before the
//! body's answer comes out of [`Exchange::next`] as a [`Sent::Message`] (an HTTP server
//! answers with an event stream then), and is dropped by [`Responder::respond`].

use std::sync::{Arc, Mutex};

use rpcwire::wire::classify::is_response;
use rpcwire::wire::framing::split_frame;
use rpcwire::wire::{Framing, RxBuffer};
use rpcwire::{Config, Input};
use rpcwire_telemetry::{self as telemetry, Received};
use tokio::sync::mpsc;

use crate::caller::Caller;
use crate::dispatch::{ClientSettings, Dispatcher, Woke};
use crate::service::Service;
use crate::{Client, Conn};

/// Connections kept for reuse: enough for every worker of a busy server to find one, few
/// enough that an idle server holds next to nothing.
const POOL: usize = 32;

/// The framing of a pooled connection: what [`drain`] takes apart. The body itself is handed
/// over as one whole frame, whatever its bytes.
const FRAMING: Framing = Framing::ContentLength;

/// Bytes of buffers a pooled connection may keep; one that grew past this for a large body
/// gives it back before it returns to the pool.
const KEEP: usize = 8 << 10;

/// Answers whole message bodies (a request, a notification, or a batch) with a
/// [`Service`]: see the module docs.
///
/// ```
/// use rpcwire_service::{Responder, Router, RpcError, Service};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let router = Router::new().sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b));
/// let responder = Responder::new(Service::new(router), rpcwire::Config::default());
/// let body = br#"[{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1},{"jsonrpc":"2.0","method":"nope","id":2}]"#;
/// let mut answer = Vec::new();
/// responder.respond(body, &mut answer).await;
/// assert_eq!(
///     String::from_utf8(answer).unwrap(),
///     r#"[{"jsonrpc":"2.0","result":19,"id":1},{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"},"id":2}]"#
/// );
/// # }
/// ```
#[derive(Clone)]
pub struct Responder {
    shared: Arc<Shared>,
}

struct Shared {
    service: Service,
    config: Config,
    settings: ClientSettings,
    /// The caller of bodies answered by [`Responder::respond`].
    caller: Arc<Caller>,
    /// Boxed: a connection task that awaits [`Responder::respond`] holds a pointer, not a
    /// core connection, for its whole life.
    #[allow(clippy::vec_box)]
    pool: Mutex<Vec<Box<Slot>>>,
}

/// A core connection with its receive buffer and its dispatcher.
struct Slot {
    conn: Conn,
    rx: RxBuffer<Vec<u8>>,
    dispatcher: Dispatcher,
    /// The connection's own client: the peer of its handlers, and kept so that its commands
    /// channel stays open.
    client: Client,
    /// Clones of `client` at rest (its own, and the dispatcher's): a slot whose client a
    /// handler kept beyond its body is not reused (its calls would reach another body).
    clones: usize,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("service", &self.shared.service)
            .finish_non_exhaustive()
    }
}

/// What an [`Exchange`] sends out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    /// A message a handler sent its peer (a notification, a request) before the answer.
    Message(Vec<u8>),
    /// The body's answer: a response, or a batch's array of them. The exchange ends with it.
    Answer(Vec<u8>),
}

impl Responder {
    /// A responder answering with `service`, the core's limits from `config` (its framing
    /// does not apply: a body is one JSON text), anonymous callers unless told otherwise
    /// ([`respond_as`](Responder::respond_as)).
    pub fn new(service: Service, config: Config) -> Self {
        Responder::with_settings(service, config, ClientSettings::default())
    }

    /// [`new`](Responder::new) with the settings of the peer handlers get.
    pub fn with_settings(service: Service, config: Config, settings: ClientSettings) -> Self {
        let config = Config {
            framing: FRAMING,
            ..config
        };
        Responder {
            shared: Arc::new(Shared {
                service,
                config,
                settings,
                caller: Arc::new(Caller::anonymous()),
                pool: Mutex::new(Vec::new()),
            }),
        }
    }

    /// The service it answers with.
    pub fn service(&self) -> &Service {
        &self.shared.service
    }

    /// The caller of bodies answered by [`respond`](Self::respond): anonymous.
    pub fn caller(&self) -> &Arc<Caller> {
        &self.shared.caller
    }

    /// Answers `body`: appends the answer's JSON text to `answer` (a response, or an array of
    /// them for a batch) once every request of it is answered; nothing when it holds no
    /// request (notifications only, or only responses). Notification handlers that wait run
    /// on in a task of their own. What handlers send their peer is dropped.
    ///
    /// Dropping the future (a deadline) drops the handlers that are still waiting.
    pub async fn respond(&self, body: &[u8], answer: &mut Vec<u8>) {
        self.respond_as(&self.shared.caller, body, answer).await;
    }

    /// [`respond`](Self::respond) for a body from `caller` (one HTTP request's identity and
    /// metadata): its handlers see it in their [`Context`](crate::Context), and the access
    /// rules and rate limit are applied to its identity.
    pub async fn respond_as(&self, caller: &Arc<Caller>, body: &[u8], answer: &mut Vec<u8>) {
        let mut exchange = self.exchange(caller, body);
        exchange.run(answer, &mut |_| {}).await;
    }

    /// Starts answering `body` from `caller`: every message of it is dispatched now (the
    /// handlers that finish at once have answered when this returns); the answer, and what
    /// the handlers send before it, come out of [`Exchange::next`].
    pub fn exchange(&self, caller: &Arc<Caller>, body: &[u8]) -> Exchange {
        let shared = &self.shared;
        let mut slot = shared
            .pool
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_else(|| shared.slot());
        if !Arc::ptr_eq(slot.dispatcher.caller(), caller) {
            slot.dispatcher.set_caller(Arc::clone(caller));
        }
        slot.feed(body);
        Exchange {
            shared: Arc::clone(shared),
            slot: Some(slot),
            done: false,
            sent: std::collections::VecDeque::new(),
            answer: Vec::new(),
            input: None,
        }
    }
}

impl Shared {
    fn slot(&self) -> Box<Slot> {
        let conn = self.service.connection(self.config);
        let (dispatcher, client) = Dispatcher::new(
            &self.service,
            Arc::clone(&self.caller),
            self.settings.clone(),
        );
        let clones = client.clones();
        Box::new(Slot {
            rx: RxBuffer::with_max_frame(FRAMING, self.config.max_frame),
            conn,
            dispatcher,
            client,
            clones,
        })
    }

    /// Puts a slot back in the pool if it is clean (nothing open, buffered or running, and
    /// no handler kept its client), after giving back what a large body made it take.
    ///
    /// The next body starts as it would on a new connection: a setting a handler changed
    /// through its peer ([`Client::set_batches`]: MCP's `initialize` does, for the rest of
    /// *its* connection) is put back to the responder's own, and a slot whose handler asked
    /// for its connection to end ([`Client::shutdown`]) is not reused. A body from another
    /// caller must not inherit what one caller's handler set.
    fn recycle(&self, mut slot: Box<Slot>) {
        // Controls a handler queued after the last wake-up are applied now, so that none of
        // them reaches the next body.
        if let Woke::EndOfInput(_) = slot.dispatcher.take_controls(&mut slot.conn) {
            return;
        }
        slot.conn.set_batches(self.config.batches);
        let clean = slot.conn.inflight_len() == 0
            && slot.rx.buffered() == 0
            && slot.dispatcher.is_quiet()
            && slot.client.clones() == slot.clones;
        if !clean {
            return;
        }
        if slot.conn.storage_bytes() > KEEP {
            slot.conn.shrink();
        }
        slot.rx.shrink(KEEP);
        if let Ok(mut pool) = self.pool.lock() {
            if pool.len() < POOL {
                pool.push(slot);
            }
        }
    }
}

impl Slot {
    /// Hands every message of `body` to the dispatcher.
    fn feed(&mut self, body: &[u8]) {
        // The body is one whole frame: handed over as it is, with no framing to find. The
        // buffer of a pooled slot is empty (only clean ones go back to the pool), and an empty
        // buffer takes a whole frame.
        if !self.rx.push_frame(body) {
            // Not seen: emptied, a buffer takes any whole frame.
            self.rx.clear();
            self.rx.push_frame(body);
        }
        self.resume();
    }

    /// Hands the messages of the body in the receive buffer to the dispatcher, until the body
    /// is done or the transmit queue is full (the answers written so far are read out as the
    /// exchange goes on, and the rest of the body waits). True when anything was taken.
    fn resume(&mut self) -> bool {
        let Slot {
            conn,
            rx,
            dispatcher,
            ..
        } = self;
        // One reading of the clock for both: the time the body came, and the core's now.
        let at = telemetry::now();
        let received = Received::at(at);
        let now = rpcwire::Instant::from_std(dispatcher.origin(), at);
        let mut taken = false;
        loop {
            match conn.handle_input(now, rx, &mut &[][..]) {
                Input::Item(item) => {
                    taken = true;
                    dispatcher.inbound(conn, item, &received);
                }
                Input::Blocked => return taken,
                Input::NeedMore | Input::Closed => {
                    dispatcher.input_waits(conn);
                    return taken;
                }
            }
        }
    }
}

/// One body being answered ([`Responder::exchange`]): yields what its handlers send, then its
/// answer. Dropping it before the end drops the handlers still waiting; a body whose requests
/// are all answered leaves its notification handlers running on their own.
pub struct Exchange {
    shared: Arc<Shared>,
    slot: Option<Box<Slot>>,
    /// Every request is answered (the answer may still wait in `sent`).
    done: bool,
    /// What was sent and not yet given out by [`next`](Exchange::next). Messages go here
    /// as they are drained, not into a local of `next`'s future, so that dropping that
    /// future loses none of them.
    sent: std::collections::VecDeque<Sent>,
    /// The answer drained and not yet given out (after `sent`), kept here for the same
    /// reason.
    answer: Vec<u8>,
    /// More bodies for the same connection while the exchange runs ([`Exchange::input`]);
    /// boxed, as few exchanges have one and an HTTP connection's task holds room for an
    /// exchange for its whole life.
    input: Option<Box<InputChannel>>,
}

/// The channel of [`Exchange::input`]: its sender (cloned out), its receiver, and the bodies
/// received and not yet taken (one body is taken at a time, whole).
type InputChannel = (
    mpsc::Sender<Vec<u8>>,
    mpsc::Receiver<Vec<u8>>,
    std::collections::VecDeque<Vec<u8>>,
);

impl std::fmt::Debug for Exchange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Exchange")
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl Exchange {
    /// The next message a handler sends, or the answer (the last), or `None` once the body
    /// is answered (or needs no answer: notifications and responses only).
    ///
    /// Cancel-safe: it may be raced against something else (the client going away, a
    /// deadline) in `tokio::select!` and called again; what was drained before its future
    /// was dropped comes out of the next call.
    pub async fn next(&mut self) -> Option<Sent> {
        loop {
            if let Some(sent) = self.sent.pop_front() {
                return Some(sent);
            }
            if !self.answer.is_empty() {
                return Some(Sent::Answer(std::mem::take(&mut self.answer)));
            }
            if self.done {
                return None;
            }
            let Exchange {
                slot,
                done,
                sent,
                answer,
                input,
                ..
            } = self;
            // Messages wait in `sent` (allocated only when a handler sends one).
            run_until(slot, done, input, answer, &mut |m: &[u8]| {
                sent.push_back(Sent::Message(m.to_vec()));
            })
            .await;
        }
    }

    /// Hands more bodies to this exchange's connection while it runs: the client's answers
    /// to requests its handlers sent, a cancel notification for one of its requests. Each is
    /// dispatched as the first body was; a request in one is answered too (after this
    /// exchange's answer, as a [`Sent::Message`]). Once the exchange has answered, what comes
    /// is dropped.
    pub fn input(&mut self) -> mpsc::Sender<Vec<u8>> {
        let (tx, _, _) = &**self.input.get_or_insert_with(|| {
            let (tx, rx) = mpsc::channel(8);
            Box::new((tx, rx, std::collections::VecDeque::new()))
        });
        tx.clone()
    }

    /// Runs the body to its answer: appends it to `answer`, and gives every message a
    /// handler sends before it to `message`.
    pub async fn run(&mut self, answer: &mut Vec<u8>, message: &mut (dyn FnMut(&[u8]) + Send)) {
        while !self.done {
            run_until(
                &mut self.slot,
                &mut self.done,
                &mut self.input,
                answer,
                message,
            )
            .await;
        }
    }
}

/// Runs an exchange's slot until something is sent (a message, or the answer, which ends the
/// exchange: `done`). What is drained goes to `answer` and `message` at once, so that a
/// future of this dropped at an await loses nothing.
async fn run_until(
    slot: &mut Option<Box<Slot>>,
    done: &mut bool,
    input: &mut Option<Box<InputChannel>>,
    answer: &mut Vec<u8>,
    message: &mut (dyn FnMut(&[u8]) + Send),
) {
    let Some(slot) = slot.as_deref_mut() else {
        *done = true;
        return;
    };
    let first = answer.len();
    // Anything sent since the call began (over several turns of the loop, when the rest of
    // a body is taken in between): then the call returns rather than wait.
    let mut sent = false;
    loop {
        let Slot {
            conn,
            rx,
            dispatcher,
            ..
        } = slot;
        dispatcher.settle(conn);
        sent |= drain(conn, answer, first, message);
        if rx.buffered() > 0 && !conn.is_input_blocked() && slot.resume() {
            // Transmit room again: the rest of the body.
            continue;
        }
        if slot.rx.buffered() == 0 {
            if let Some(body) = input
                .as_deref_mut()
                .and_then(|(_, _, waiting)| waiting.pop_front())
            {
                // A body handed in while the last was still being taken: its turn now.
                slot.feed(&body);
                continue;
            }
        }
        let (conn, dispatcher) = (&mut slot.conn, &mut slot.dispatcher);
        if conn.inflight_len() == 0 {
            *done = true;
            return;
        }
        if sent {
            return;
        }
        let deadline = conn
            .poll_timeout()
            .map(|at| tokio::time::Instant::from_std(at.to_std(dispatcher.origin())));
        let (receiver, waiting) = match input.as_deref_mut() {
            Some((_, rx, waiting)) => (Some(rx), Some(waiting)),
            None => (None, None),
        };
        tokio::select! {
            wake = dispatcher.wait() => {
                let _ = dispatcher.on_wake(conn, wake, 0);
            }
            () = sleep_until(deadline), if deadline.is_some() => {
                let now = dispatcher.now();
                conn.handle_timeout(now);
            }
            Some(body) = recv(receiver) => {
                if let Some(waiting) = waiting {
                    waiting.push_back(body);
                }
            }
        }
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        let Some(mut slot) = self.slot.take() else {
            return;
        };
        if !self.done || slot.conn.inflight_len() > 0 {
            // Given up on (a deadline): its handlers go with it.
            return;
        }
        if slot.dispatcher.is_quiet() {
            self.shared.recycle(slot);
            return;
        }
        // Every request is answered; notification handlers (or calls to a peer that cannot
        // answer) remain: they finish on their own, then the slot goes back to the pool.
        let shared = Arc::clone(&self.shared);
        if tokio::runtime::Handle::try_current().is_ok() {
            tokio::spawn(async move {
                slot.conn.fail_pending();
                while !slot.dispatcher.is_quiet() {
                    slot.dispatcher.settle(&mut slot.conn);
                    drain(&mut slot.conn, &mut Vec::new(), 0, &mut |_| {});
                    if slot.dispatcher.is_quiet() {
                        break;
                    }
                    let wake = slot.dispatcher.wait().await;
                    let _ = slot.dispatcher.on_wake(&mut slot.conn, wake, 0);
                }
                shared.recycle(slot);
            });
        }
    }
}

/// The next body handed to an exchange's input (never, without one).
async fn recv(input: Option<&mut mpsc::Receiver<Vec<u8>>>) -> Option<Vec<u8>> {
    match input {
        Some(rx) => rx.recv().await,
        None => std::future::pending().await,
    }
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Moves what the core has to send out of it, without its framing: responses (the body's
/// answer; the core writes one frame for it, a batch reply whole) appended to `answer` after
/// `answer[..first]`, any other message to `message`. True when anything was sent.
fn drain(
    conn: &mut Conn,
    answer: &mut Vec<u8>,
    first: usize,
    message: &mut (dyn FnMut(&[u8]) + Send),
) -> bool {
    let mut sent = false;
    loop {
        let out = conn.poll_transmit();
        if out.is_empty() {
            return sent;
        }
        let mut rest = out;
        while !rest.is_empty() {
            let Some((frame, len)) = split_frame(FRAMING, rest) else {
                tracing::error!(len = rest.len(), "queued output that is not a whole frame");
                break;
            };
            if !is_response(frame) {
                message(frame);
            } else if answer.len() == first {
                answer.extend_from_slice(frame);
            } else {
                tracing::warn!("a second answer for one body: dropped");
            }
            sent = true;
            rest = rest.get(len..).unwrap_or(&[]);
        }
        let taken = out.len();
        conn.advance_transmit(taken);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Router, RpcError};

    #[tokio::test]
    async fn a_connection_goes_back_to_the_pool_unless_its_answer_was_dropped() {
        let router = Router::new()
            .sync_method("subtract", |(a, b): (i64, i64)| Ok::<_, RpcError>(a - b))
            .method("slow", |(): ()| async {
                tokio::time::sleep(std::time::Duration::from_secs(60)).await;
                Ok::<_, RpcError>(())
            });
        let responder = Responder::new(Service::new(router), Config::default());
        let pooled = || {
            responder
                .shared
                .pool
                .lock()
                .map(|p| p.len())
                .unwrap_or(usize::MAX)
        };
        let mut answer = Vec::new();
        let slow = br#"{"jsonrpc":"2.0","method":"slow","id":1}"#;
        let dropped = tokio::time::timeout(
            std::time::Duration::from_millis(20),
            responder.respond(slow, &mut answer),
        )
        .await;
        assert!(dropped.is_err(), "the slow handler cannot have answered");
        assert_eq!(pooled(), 0, "a connection left mid-body is not reused");
        for _ in 0..3 {
            let mut answer = Vec::new();
            responder
                .respond(
                    br#"{"jsonrpc":"2.0","method":"subtract","params":[42,23],"id":1}"#,
                    &mut answer,
                )
                .await;
            assert_eq!(answer, br#"{"jsonrpc":"2.0","result":19,"id":1}"#);
            assert_eq!(pooled(), 1);
        }
    }

    /// A body whose messages answer more than the transmit queue holds at once is taken in
    /// steps, each message once: a batch of 64 results of 1 KiB, and 300 requests in later
    /// bodies whose handlers each send the peer a notification first.
    #[tokio::test]
    async fn a_body_larger_than_the_transmit_queue_is_answered_whole() {
        let router = Router::new()
            .sync_method("big", |(i,): (u32,)| {
                Ok::<_, RpcError>(format!("{i:0>1024}"))
            })
            .method_with_context("chatty", |ctx, (i,): (u32,)| async move {
                let _ = ctx.peer().notify("note", [i]).await;
                Ok::<_, RpcError>(i)
            });
        let responder = Responder::new(Service::new(router), Config::default());
        let calls: Vec<String> = (0..64)
            .map(|i| format!(r#"{{"jsonrpc":"2.0","method":"big","params":[{i}],"id":{i}}}"#))
            .collect();
        let mut answer = Vec::new();
        responder
            .respond(format!("[{}]", calls.join(",")).as_bytes(), &mut answer)
            .await;
        let answer: Vec<serde_json::Value> = serde_json::from_slice(&answer).expect("an array");
        assert_eq!(answer.len(), 64);
        let caller = Arc::clone(responder.caller());
        let mut exchange = responder.exchange(
            &caller,
            br#"{"jsonrpc":"2.0","method":"chatty","params":[0],"id":0}"#,
        );
        let input = exchange.input();
        // Handed in while the exchange runs (the input holds a few bodies at a time).
        tokio::spawn(async move {
            for i in 1..300 {
                let body =
                    format!(r#"{{"jsonrpc":"2.0","method":"chatty","params":[{i}],"id":{i}}}"#);
                if input.send(body.into_bytes()).await.is_err() {
                    return;
                }
            }
        });
        let (mut notes, mut answers) = (0, 0);
        while let Some(sent) = exchange.next().await {
            match sent {
                Sent::Message(m) if m.starts_with(br#"{"jsonrpc":"2.0","method":"note""#) => {
                    notes += 1
                }
                Sent::Message(m) | Sent::Answer(m) => {
                    assert!(m.starts_with(br#"{"jsonrpc":"2.0","result":"#), "{m:?}");
                    answers += 1;
                }
            }
        }
        // Every body handed in before the first answer is taken; the first answer may come
        // before the last of them, which are then dropped (the exchange has answered).
        assert!(
            answers >= 1 && notes >= answers,
            "{notes} notes, {answers} answers"
        );
    }

    #[tokio::test]
    async fn what_a_handler_sends_before_its_answer_comes_out_first() {
        let router = Router::new().method_with_context("work", |ctx, (): ()| async move {
            let _ = ctx.peer().notify("progress", [50]).await;
            tokio::task::yield_now().await;
            Ok::<_, RpcError>("done")
        });
        let responder = Responder::new(Service::new(router), Config::default());
        let caller = Arc::clone(responder.caller());
        let mut exchange =
            responder.exchange(&caller, br#"{"jsonrpc":"2.0","method":"work","id":7}"#);
        assert_eq!(
            exchange.next().await,
            Some(Sent::Message(
                br#"{"jsonrpc":"2.0","method":"progress","params":[50]}"#.to_vec()
            ))
        );
        assert_eq!(
            exchange.next().await,
            Some(Sent::Answer(
                br#"{"jsonrpc":"2.0","result":"done","id":7}"#.to_vec()
            ))
        );
        assert_eq!(exchange.next().await, None);
    }

    #[tokio::test]
    async fn next_is_cancel_safe() {
        let router = Router::new().method_with_context("steps", |ctx, (): ()| async move {
            let _ = ctx.peer().notify("step", [1]).await;
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            let _ = ctx.peer().notify("step", [2]).await;
            tokio::time::sleep(std::time::Duration::from_millis(30)).await;
            Ok::<_, RpcError>("done")
        });
        let responder = Responder::new(Service::new(router), Config::default());
        let caller = Arc::clone(responder.caller());
        let mut exchange =
            responder.exchange(&caller, br#"{"jsonrpc":"2.0","method":"steps","id":1}"#);
        let mut got = Vec::new();
        // Each `next` raced against a timer that fires long before the handler is done: the
        // futures dropped on the way lose nothing.
        loop {
            tokio::select! {
                sent = exchange.next() => match sent {
                    Some(sent) => got.push(sent),
                    None => break,
                },
                () = tokio::time::sleep(std::time::Duration::from_millis(1)) => {}
            }
        }
        assert_eq!(
            got,
            [
                Sent::Message(br#"{"jsonrpc":"2.0","method":"step","params":[1]}"#.to_vec()),
                Sent::Message(br#"{"jsonrpc":"2.0","method":"step","params":[2]}"#.to_vec()),
                Sent::Answer(br#"{"jsonrpc":"2.0","result":"done","id":1}"#.to_vec()),
            ]
        );
    }

    #[tokio::test]
    async fn a_pooled_connection_forgets_what_a_handler_changed() {
        // `no_batches` turns batches off for the rest of its connection, as MCP's `initialize`
        // does for a revision that refuses them; the next bodies, on the same pooled
        // connection, may be another caller's. `later` waits, so that its exchange takes the
        // connection's queued control requests.
        let router = Router::new()
            .method_with_context("no_batches", |ctx, (): ()| async move {
                ctx.peer().set_batches(false);
                Ok::<_, RpcError>(())
            })
            .method("later", |(): ()| async {
                tokio::task::yield_now().await;
                Ok::<_, RpcError>(2)
            })
            .sync_method("one", |(): ()| Ok::<_, RpcError>(1));
        let responder = Responder::new(Service::new(router), Config::default());
        let pooled = || responder.shared.pool.lock().map_or(0, |p| p.len());
        let answer_to = |body: &'static [u8]| {
            let responder = responder.clone();
            async move {
                let mut answer = Vec::new();
                responder.respond(body, &mut answer).await;
                String::from_utf8(answer).unwrap_or_default()
            }
        };
        let batch =
            br#"[{"jsonrpc":"2.0","method":"one","id":1},{"jsonrpc":"2.0","method":"one","id":2}]"#;
        for _ in 0..2 {
            assert_eq!(
                answer_to(br#"{"jsonrpc":"2.0","method":"no_batches","id":0}"#).await,
                r#"{"jsonrpc":"2.0","result":null,"id":0}"#
            );
            assert_eq!(
                answer_to(br#"{"jsonrpc":"2.0","method":"later","id":9}"#).await,
                r#"{"jsonrpc":"2.0","result":2,"id":9}"#
            );
            assert_eq!(pooled(), 1, "one connection answers every body");
            assert_eq!(
                answer_to(batch).await,
                r#"[{"jsonrpc":"2.0","result":1,"id":1},{"jsonrpc":"2.0","result":1,"id":2}]"#
            );
        }
    }
}
