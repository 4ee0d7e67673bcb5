//! The idle timeout of HTTP/2 connections: one with no stream under way for
//! `idle_connection_timeout` is shut down gracefully (GOAWAY, then closed), as an idle HTTP/1.1
//! connection is closed, so that idle clients cannot hold every connection slot.
//!
//! hyper tells nothing of a connection's streams, so they are counted here: a request counts
//! from the moment the service is called until its response body is dropped (an event stream
//! that stays open keeps its connection busy), and the connection is idle from the moment the
//! last one ended (or it opened). PINGs and SETTINGS alone do not count as activity.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use http_body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::Instant;

use crate::body::Body;

/// What one connection's streams are doing.
#[derive(Debug)]
pub(crate) struct Activity {
    /// Streams under way.
    open: AtomicUsize,
    /// When the last stream ended (or the connection opened).
    since: Mutex<Instant>,
}

impl Activity {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Activity {
            open: AtomicUsize::new(0),
            since: Mutex::new(Instant::now()),
        })
    }

    fn begin(self: &Arc<Self>) -> Busy {
        self.open.fetch_add(1, Ordering::AcqRel);
        Busy(Arc::clone(self))
    }

    /// When the connection, as it is now, will have been idle for `idle` (`None`: a stream
    /// is under way).
    fn idle_at(&self, idle: Duration) -> Option<Instant> {
        if self.open.load(Ordering::Acquire) > 0 {
            return None;
        }
        Some(*self.since.lock().unwrap_or_else(PoisonError::into_inner) + idle)
    }
}

/// A stream under way: held by the request's future, then by its response body.
#[derive(Debug)]
struct Busy(Arc<Activity>);

impl Drop for Busy {
    fn drop(&mut self) {
        // The time first, then the count: a watcher that sees no stream open sees this time.
        *self.0.since.lock().unwrap_or_else(PoisonError::into_inner) = Instant::now();
        self.0.open.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A response body that keeps its stream counted until it is dropped.
#[derive(Debug)]
pub(crate) struct Counted {
    body: Body,
    _busy: Busy,
}

impl HttpBody for Counted {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// `service` with each of its streams counted in `activity`.
#[derive(Clone)]
pub(crate) struct CountStreams<S> {
    pub(crate) service: S,
    pub(crate) activity: Arc<Activity>,
}

impl<S, B> hyper::service::Service<Request<B>> for CountStreams<S>
where
    S: hyper::service::Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Counted>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Counted>, S::Error>> + Send>>;

    fn call(&self, req: Request<B>) -> Self::Future {
        let busy = self.activity.begin();
        let response = self.service.call(req);
        Box::pin(async move {
            let response = response.await?;
            Ok(response.map(|body| Counted { body, _busy: busy }))
        })
    }
}

/// Drives `conn` to its end, shutting it down gracefully once it has had no stream under way
/// for `idle`, or when `draining` resolves (the server's drain).
pub(crate) async fn serve_until_idle<C, T>(
    conn: C,
    activity: Arc<Activity>,
    idle: Duration,
    draining: impl Future<Output = ()>,
    graceful_shutdown: fn(Pin<&mut C>),
) -> T
where
    C: Future<Output = T>,
{
    let mut conn = std::pin::pin!(conn);
    let mut shutting_down = false;
    let mut draining = std::pin::pin!(draining);
    loop {
        // While a stream is under way, look again after `idle`: it is at least that long
        // before the connection can have been idle for `idle`.
        let wake = activity
            .idle_at(idle)
            .unwrap_or_else(|| Instant::now() + idle);
        tokio::select! {
            ended = conn.as_mut() => return ended,
            () = draining.as_mut(), if !shutting_down => {
                graceful_shutdown(conn.as_mut());
                shutting_down = true;
            }
            () = tokio::time::sleep_until(wake), if !shutting_down => {
                if activity.idle_at(idle).is_some_and(|at| at <= Instant::now()) {
                    tracing::debug!(?idle, "idle HTTP/2 connection: shutting down");
                    graceful_shutdown(conn.as_mut());
                    shutting_down = true;
                }
            }
        }
    }
}
