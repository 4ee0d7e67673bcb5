//! The response body of the server: empty, one buffer, or a stream of chunks (Server-Sent
//! Events) fed by a task through a bounded channel.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use tokio::sync::mpsc;

/// The body of a response from [`RpcService`](crate::RpcService) (and from the servers
/// profiles build on this crate): `http_body::Body` with
/// `Bytes` chunks and no error, so it fits hyper and axum as it is.
#[derive(Debug)]
pub struct Body {
    kind: Kind,
}

#[derive(Debug)]
enum Kind {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Bytes>),
}

impl Body {
    /// No bytes.
    pub fn empty() -> Self {
        Body {
            kind: Kind::Full(None),
        }
    }

    /// One buffer.
    pub fn full(bytes: impl Into<Bytes>) -> Self {
        let bytes = bytes.into();
        Body {
            kind: Kind::Full((!bytes.is_empty()).then_some(bytes)),
        }
    }

    /// Chunks as they arrive on `rx`; the body ends when every sender is gone (an event
    /// stream fed by a task: [`event_stream`](crate::profile::event_stream)).
    pub fn stream(rx: mpsc::Receiver<Bytes>) -> Self {
        Body {
            kind: Kind::Stream(rx),
        }
    }
}

impl Body {
    /// The whole body, when it is one buffer (empty or not); `None` for a stream.
    #[cfg(feature = "ws")]
    pub(crate) fn into_full(self) -> Option<Bytes> {
        match self.kind {
            Kind::Full(bytes) => Some(bytes.unwrap_or_default()),
            Kind::Stream(_) => None,
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Body::empty()
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match &mut self.kind {
            Kind::Full(bytes) => Poll::Ready(bytes.take().map(|b| Ok(Frame::data(b)))),
            Kind::Stream(rx) => rx.poll_recv(cx).map(|c| c.map(|b| Ok(Frame::data(b)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(&self.kind, Kind::Full(None))
    }

    fn size_hint(&self) -> SizeHint {
        match &self.kind {
            Kind::Full(None) => SizeHint::with_exact(0),
            Kind::Full(Some(b)) => SizeHint::with_exact(b.len() as u64),
            Kind::Stream(_) => SizeHint::default(),
        }
    }
}
